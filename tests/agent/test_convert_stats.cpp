// SPDX-License-Identifier: BSD-3-Clause
// The worker counter list (lib/dataplane/counters.hpp) drives GetStats' conversion: every
// counter of the list reaches its srv6gw.v1.WorkerStats field, and every count by reason
// reaches the flat drop list. A counter added to the list without a proto field fails here.
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>

#include "agent/convert.hpp"
#include "dataplane/counters.hpp"

namespace srv6gw::agent {
namespace {

TEST(ConvertStats, EveryWorkerCounterHasItsProtoField) {
  dataplane::WorkerCounters w;
  // A distinct value per counter, set through the list itself.
  uint64_t next = 1000;
  dataplane::for_each_counter(
      w, [&](const char*, uint64_t& value) { value = next++; },
      [](const dataplane::CounterGroup&) {});
  std::map<std::string, uint64_t> set_values;
  dataplane::for_each_counter(
      w, [&](const char* name, uint64_t value) { set_values[name] = value; },
      [](const dataplane::CounterGroup&) {});
  ASSERT_EQ(set_values.size(), size_t(next - 1000));
  EXPECT_EQ(w.rx_host, 1000u);  // the first of the list

  v1::WorkerStats out;
  worker_to_proto(3, w, out);
  EXPECT_EQ(out.index(), 3u);
  const auto* desc = out.GetDescriptor();
  const auto* refl = out.GetReflection();
  for (const auto& [name, value] : set_values) {
    const auto* field = desc->FindFieldByName(name);
    ASSERT_NE(field, nullptr) << "srv6gw.v1.WorkerStats has no field " << name
                              << " (proto/srv6gw/v1/srv6gw.proto)";
    EXPECT_EQ(refl->GetUInt64(out, field), value) << name;
  }
  EXPECT_EQ(out.rx_host(), set_values.at("rx_host"));
  EXPECT_EQ(out.probe_tx(), set_values.at("probe_tx"));
}

TEST(ConvertStats, EveryReasonOfEveryGroupIsInTheDropList) {
  dataplane::WorkerCounters w;
  w.drops[size_t(dataplane::DropReason::probe_refused)] = 4;
  w.probe_status[size_t(srv6::probe::Status::bad_magic)] = 4;
  w.probe_status[size_t(srv6::probe::Status::ok)] = 9;  // answered probes: not a drop
  w.parse_status[size_t(net::ParseStatus::fragment)] = 2;
  StatsSnapshot snap;
  snap.workers = {w, w};
  v1::Stats stats;
  to_proto(snap, 7, stats);
  std::map<std::string, uint64_t> drops;
  for (const auto& d : stats.drops()) drops[d.name()] = d.value();
  size_t reasons = 0;
  dataplane::for_each_counter(
      w, [](const char*, uint64_t) {},
      [&](const dataplane::CounterGroup& g) {
        reasons += g.values.size() - (g.prefix[0] ? 1 : 0);
      });
  EXPECT_EQ(drops.size(), reasons);
  EXPECT_EQ(drops.at("probe_refused"), 8u);
  EXPECT_EQ(drops.at("probe.bad_magic"), 8u);
  EXPECT_EQ(drops.at("parse.fragment"), 4u);
  EXPECT_EQ(drops.count("probe.ok"), 0u);
  EXPECT_EQ(drops.count("parse.ok"), 0u);
  ASSERT_EQ(stats.workers_size(), 2);
  EXPECT_EQ(stats.workers(0).drops_size(), 3);  // non-zero reasons only
}

// A path probed by two rails: GetStats names each rail's probes (PathStats.rail_probes, in
// rail order) and `probe` is the first; a single pair (no rail named) keeps `probe` alone.
TEST(ConvertStats, ProbesOfAPathNameTheirRail) {
  StatsSnapshot snap;
  dataplane::Gateway::PathStats path;
  path.policy = "far";
  path.segment_list = "l";
  path.path_id = 5;
  snap.paths = {path};
  engine::ProbePathView a, b;
  a.path_id = b.path_id = 5;
  a.rail = "a";
  a.sent = 10;
  b.rail = "b";
  b.sent = 20;
  b.state = engine::ProbeState::down;
  snap.probes = {a, b};
  v1::Stats stats;
  to_proto(snap, 1, stats);
  ASSERT_EQ(stats.policies_size(), 1);
  ASSERT_EQ(stats.policies(0).paths_size(), 1);
  const v1::PathStats& ps = stats.policies(0).paths(0);
  ASSERT_EQ(ps.rail_probes_size(), 2);
  EXPECT_EQ(ps.rail_probes(0).rail(), "a");
  EXPECT_EQ(ps.rail_probes(0).sent(), 10u);
  EXPECT_EQ(ps.rail_probes(1).rail(), "b");
  EXPECT_EQ(ps.rail_probes(1).state(), v1::PATH_STATE_DOWN);
  EXPECT_EQ(ps.probe().rail(), "a");
  EXPECT_EQ(ps.probe().sent(), 10u);

  a.rail.clear();
  snap.probes = {a};
  v1::Stats single_pair;
  to_proto(snap, 2, single_pair);
  const v1::PathStats& single = single_pair.policies(0).paths(0);
  EXPECT_EQ(single.rail_probes_size(), 0);
  EXPECT_TRUE(single.has_probe());
  EXPECT_EQ(single.probe().rail(), "");
}

}  // namespace
}  // namespace srv6gw::agent

// A policy's rail scope survives the proto in both directions (Apply, GetPolicy, the journal):
// SrPolicy.rails <-> config::Policy::rails, in order; none = every rail.
TEST(ConvertPolicy, RailScopeRoundTrips) {
  srv6gw::v1::SrPolicy in;
  in.set_name("p");
  in.add_rails("gpu1");
  in.add_rails("gpu0");
  auto* sl = in.add_segment_lists();
  sl->set_name("l");
  sl->set_path_id(1);
  sl->add_sids("fc00:1::1");
  srv6gw::config::Policy p;
  srv6gw::agent::FieldError fe;
  ASSERT_TRUE(srv6gw::agent::from_proto(in, p, fe)) << fe.field << ": " << fe.message;
  EXPECT_EQ(p.rails, (std::vector<std::string>{"gpu1", "gpu0"}));
  srv6gw::v1::SrPolicy out;
  srv6gw::agent::to_proto(p, out);
  ASSERT_EQ(out.rails_size(), 2);
  EXPECT_EQ(out.rails(0), "gpu1");
  EXPECT_EQ(out.rails(1), "gpu0");
  srv6gw::config::Policy again;
  ASSERT_TRUE(srv6gw::agent::from_proto(out, again, fe));
  EXPECT_EQ(again, p);
  p.rails.clear();
  srv6gw::agent::to_proto(p, out);
  EXPECT_EQ(out.rails_size(), 0);
}
