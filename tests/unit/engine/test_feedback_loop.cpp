// SPDX-License-Identifier: BSD-3-Clause
// The congestion loop end to end inside one process: two Gateways back to back on real mbufs
// (no ports), a "fabric" in between that performs End on the transit SIDs and marks CE on one
// of A's paths, B reflecting that path into the CNP its host sends back, and A's engine
// (attribution + algorithm) republishing A's policy so that exactly that path loses share.
// Also: the fallback blame without reflection, and the feedback ring overflowing (counted,
// never blocking).
#include <gtest/gtest.h>

#include <rte_cycles.h>
#include <rte_mbuf.h>
#include <rte_mempool.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>

#include "../policy/config_builder.hpp"
#include "config/validate.hpp"
#include "dataplane/control/gateway.hpp"
#include "dataplane/datapath/burst.hpp"
#include "dataplane/datapath/mbuf_span.hpp"
#include "dataplane/worker_context.hpp"
#include "engine/attribution.hpp"
#include "engine/engine.hpp"
#include "packet_builder.hpp"

namespace srv6gw {
namespace {

using dataplane::FeedbackEvent;
using dataplane::FeedbackKind;
using dataplane::Gateway;
using test::Bytes;
using test::RoceSpec;

rte_mempool* g_pool = nullptr;

constexpr const char* kHostA = "10.0.0.1";
constexpr const char* kHostB = "10.0.1.1";

config::GatewayConfig config_a(config::SelectionMode mode) {
  config::GatewayConfig c = testing::base_config();
  c.source = testing::v6("fc00:a::1");
  c.fabric_nexthop_mac = testing::mac("02:00:00:00:0a:01");
  c.host_mac = testing::mac("02:00:00:00:0a:02");
  c.policies.push_back(
      testing::policy("toB", mode,
                      {testing::segment_list("a", 1, 1, {"fc00:1::1", "fc00:b::d4"}),
                       testing::segment_list("b", 2, 1, {"fc00:2::1", "fc00:b::d4"})}));
  c.steering.push_back(testing::prefix_rule("10.0.1.0", 24, "toB"));
  c.local_sids = {{testing::v6("fc00:a::d4"), srv6::LocalSidBehavior::end_dx4}};
  return c;
}

config::GatewayConfig config_b() {
  config::GatewayConfig c = testing::base_config();
  c.source = testing::v6("fc00:b::1");
  c.fabric_nexthop_mac = testing::mac("02:00:00:00:0b:01");
  c.host_mac = testing::mac("02:00:00:00:0b:02");
  c.policies.push_back(testing::policy("toA", config::SelectionMode::flow,
                                       {testing::segment_list("r", 100, 1, {"fc00:a::d4"})}));
  c.steering.push_back(testing::prefix_rule("10.0.0.0", 24, "toA"));
  c.local_sids = {{testing::v6("fc00:b::d4"), srv6::LocalSidBehavior::end_dx4}};
  return c;
}

std::unique_ptr<Gateway> make(const config::GatewayConfig& cfg) {
  dataplane::PortEnv env;
  env.host_port_mac = testing::mac("02:00:00:00:01:01");
  env.fabric_port_mac = testing::mac("02:00:00:00:02:02");
  config::ConfigError err;
  auto gw = Gateway::create(cfg, 1, env, nullptr, err);
  EXPECT_NE(gw, nullptr) << err.path << ": " << err.message;
  return gw;
}

rte_mbuf* mbuf(const Bytes& frame) {
  rte_mbuf* m = rte_pktmbuf_alloc(g_pool);
  EXPECT_NE(m, nullptr);
  std::memcpy(rte_pktmbuf_append(m, uint16_t(frame.size())), frame.data(), frame.size());
  return m;
}

// Runs frames through one side of a gateway; returns what it sent (mbufs freed).
std::vector<Bytes> run(Gateway& gw, const std::vector<Bytes>& frames, bool host_side) {
  std::vector<Bytes> sent;
  for (size_t at = 0; at < frames.size(); at += dataplane::kBurstSize) {
    rte_mbuf* in[dataplane::kBurstSize];
    rte_mbuf* out[dataplane::kBurstSize];
    const uint16_t n = uint16_t(std::min<size_t>(dataplane::kBurstSize, frames.size() - at));
    for (uint16_t i = 0; i < n; ++i) in[i] = mbuf(frames[at + i]);
    dataplane::WorkerContext& w = *gw.worker(0);
    const uint16_t n_out = host_side ? dataplane::process_host_burst(w, in, n, out)
                                     : dataplane::process_fabric_burst(w, in, n, out);
    for (uint16_t i = 0; i < n_out; ++i) {
      Bytes b(out[i]->pkt_len);
      dataplane::copy_packet(out[i], b);
      sent.push_back(std::move(b));
      rte_pktmbuf_free(out[i]);
    }
  }
  return sent;
}

uint16_t srh_tag(const Bytes& f) {
  return uint16_t(f[14 + 40 + 6] << 8 | f[14 + 40 + 7]);
}

// The fabric between the two: End on every transit SID (segments left -> 0, destination =
// the last SID) and CE on the outer header of packets whose SRH Tag is in `congested`.
Bytes fabric(Bytes f, std::initializer_list<uint16_t> congested = {}) {
  uint8_t* ip6 = f.data() + 14;
  uint8_t* srh = ip6 + 40;
  EXPECT_EQ(ip6[6], 43);
  while (srh[3] > 0) {
    --srh[3];
    std::memcpy(ip6 + 24, srh + 8 + 16 * srh[3], 16);
  }
  for (uint16_t t : congested)
    if (srh_tag(f) == t) ip6[1] |= 0x30;  // ECN = CE
  return f;
}

std::vector<Bytes> data_frames(size_t n, uint8_t ecn = 2) {
  std::vector<Bytes> v;
  for (size_t i = 0; i < n; ++i) {
    RoceSpec s;
    s.src = kHostA;
    s.dst = kHostB;
    s.ecn = ecn;  // ECT(0): RFC 6040 carries the CE to the inner header
    s.dest_qp = 0x4242;
    s.psn = uint32_t(i);
    v.push_back(test::roce_frame(s));
  }
  return v;
}

Bytes cnp_from_b() {
  RoceSpec s;
  s.src = kHostB;
  s.dst = kHostA;
  s.opcode = 0x81;
  s.dest_qp = 0x17;  // A's QP
  s.payload = 16;
  return test::roce_frame(s);
}

std::map<std::string, uint64_t> packets_by_path(const Gateway& gw) {
  std::map<std::string, uint64_t> m;
  for (const auto& p : gw.path_stats()) m[p.segment_list] = p.packets;
  return m;
}

std::vector<engine::PolicySpec> specs(const config::GatewayConfig& cfg) {
  std::vector<engine::PolicySpec> v;
  for (const config::Policy& p : cfg.policies) {
    engine::PolicySpec s{p.name, {}};
    for (const config::SegmentList& sl : p.segment_lists)
      s.paths.push_back({sl.name, sl.path_id, sl.weight, sl.backup});
    v.push_back(s);
  }
  return v;
}

// A's engine as the daemon runs it: drain, attribute, tick, publish.
struct EngineLoop {
  Gateway& gw;
  engine::Engine eng;
  engine::Attributor attr;
  uint64_t now_ns = 1000000;
  std::vector<engine::Decision> decisions;
  explicit EngineLoop(Gateway& g, const config::GatewayConfig& cfg)
      : gw(g),
        attr([&g](const net::IpAddr& local, const net::IpAddr& remote,
                  std::vector<dataplane::RecentUse>& uses) {
          g.recent_paths(local, remote, uses);
        }) {
    eng.set_policies(specs(cfg));
    eng.tick(now_ns, decisions);
  }
  size_t drain_and_decide() {
    FeedbackEvent ev[64];
    size_t total = 0;
    for (unsigned n; (n = gw.drain_feedback(ev, 64)) != 0; total += n)
      for (unsigned i = 0; i < n; ++i) attr.feed(ev[i], eng);
    now_ns += eng.params().interval_us * 1000;
    const size_t before = decisions.size();
    eng.tick(now_ns, decisions);
    std::map<std::string, bool> touched;
    for (size_t i = before; i < decisions.size(); ++i) touched[decisions[i].policy] = true;
    for (const auto& [policy, unused] : touched) {
      auto err = gw.set_path_factors(policy, eng.factors(policy));
      EXPECT_FALSE(err) << err->message;
    }
    gw.reclaim();
    return total;
  }
};

class FeedbackLoop : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    g_pool =
        rte_pktmbuf_pool_create("fb_pool", 8191, 0, 0, RTE_MBUF_DEFAULT_BUF_SIZE, SOCKET_ID_ANY);
    ASSERT_NE(g_pool, nullptr);
  }
  static void TearDownTestSuite() { rte_mempool_free(g_pool); }
  void TearDown() override { EXPECT_EQ(rte_mempool_in_use_count(g_pool), 0u) << "mbuf leak"; }
};

TEST_F(FeedbackLoop, ReflectedCnpMovesShareOffExactlyTheCongestedPath) {
  const config::GatewayConfig ca = config_a(config::SelectionMode::packet);
  auto a = make(ca);
  auto b = make(config_b());
  ASSERT_TRUE(a && b);
  EngineLoop loop(*a, ca);

  // A sprays its host's traffic over a (Tag 1) and b (Tag 2); the fabric marks CE on b.
  std::vector<Bytes> to_b;
  for (Bytes& f : run(*a, data_frames(64), true)) to_b.push_back(fabric(f, {2}));
  EXPECT_EQ(packets_by_path(*a)["a"], 32u);
  EXPECT_EQ(packets_by_path(*a)["b"], 32u);
  EXPECT_EQ(run(*b, to_b, false).size(), 64u);
  const dataplane::WorkerCounters& cb = b->worker_counters(0);
  EXPECT_EQ(cb.outer_ce_seen, 32u);
  EXPECT_EQ(cb.inner_ce_marked, 32u);
  EXPECT_EQ(cb.feedback_events, 32u);  // one ce_decap each

  // B's host answers with a CNP: B writes A's congested path id, reflected, into the Tag.
  const std::vector<Bytes> cnp = run(*b, {cnp_from_b()}, true);
  ASSERT_EQ(cnp.size(), 1u);
  EXPECT_EQ(srh_tag(cnp[0]), dataplane::kTagReflected | 2);
  EXPECT_EQ(cb.cnp_reflected, 1u);
  FeedbackEvent ev[64];
  ASSERT_EQ(b->drain_feedback(ev, 64), 33u);
  EXPECT_EQ(ev[0].kind, FeedbackKind::ce_decap);
  EXPECT_EQ(ev[0].tag, 2);
  EXPECT_EQ(ev[0].src(), testing::ip(kHostA));
  EXPECT_EQ(ev[32].kind, FeedbackKind::cnp_encap);
  EXPECT_EQ(ev[32].tag, dataplane::kTagReflected | 2);

  // The CNP reaches A; A's engine blames b, and only b.
  EXPECT_EQ(run(*a, {fabric(cnp[0])}, false).size(), 1u);
  EXPECT_EQ(a->worker_counters(0).cnp_seen, 1u);
  const uint64_t t0 = rte_rdtsc();
  EXPECT_EQ(loop.drain_and_decide(), 1u);
  const uint64_t t1 = rte_rdtsc();
  ASSERT_EQ(loop.decisions.size(), 1u);
  EXPECT_EQ(loop.decisions[0].segment_list, "b");
  EXPECT_EQ(loop.decisions[0].reason, engine::Reason::congestion);
  EXPECT_EQ(loop.attr.counters().cnp_reflected, 1u);
  EXPECT_EQ(loop.eng.factors("toB"), (std::vector<double>{1.0, 0.5}));

  // The new weights are in force for the next packets: b's share halves, a's grows.
  const auto before = packets_by_path(*a);
  run(*a, data_frames(300), true);
  const auto after = packets_by_path(*a);
  const uint64_t da = after.at("a") - before.at("a"), db = after.at("b") - before.at("b");
  EXPECT_EQ(da, 200u);
  EXPECT_EQ(db, 100u);
  std::printf(
      "reflected CNP -> new weights in force: %.1f us of engine time "
      "(drain + attribute + decide + publish); share of b %.2f -> %.2f\n",
      double(t1 - t0) * 1e6 / double(rte_get_tsc_hz()), 0.5, double(db) / double(da + db));
}

// ---- Without an SRH: the path id in the outer source (engine/path-id-in-source) ----

// A: uSID paths (no SRH: two micro-SIDs fit the destination) a = path 1 via spine 1, b =
// path 2 via spine 2, toward B's End.DX4 micro-SID 0xbd4; `a_srh`: H.Encaps with an SRH.
// B answers over one list: no SRH (Encaps.Red, one SID) or, with `b_srh`, an SRH.
config::GatewayConfig usid_config_a(bool a_srh) {
  config::GatewayConfig c = config_a(config::SelectionMode::packet);
  c.source = testing::v6("fc00:a::");
  c.engine.path_id_in_source = true;
  config::Policy& p = c.policies[0];
  if (!a_srh) {
    p.encap = srv6::EncapMode::usid;
    p.segment_lists[0].sids = {testing::v6("fc00:0:1::"), testing::v6("fc00:0:bd4::")};
    p.segment_lists[1].sids = {testing::v6("fc00:0:2::"), testing::v6("fc00:0:bd4::")};
  } else {
    p.segment_lists[0].sids = {testing::v6("fc00:1::1"), testing::v6("fc00:0:bd4::")};
    p.segment_lists[1].sids = {testing::v6("fc00:2::1"), testing::v6("fc00:0:bd4::")};
  }
  c.local_sids = {{testing::v6("fc00:0:ad4::"), srv6::LocalSidBehavior::end_dx4}};
  return c;
}

config::GatewayConfig usid_config_b(bool b_srh) {
  config::GatewayConfig c = config_b();
  c.source = testing::v6("fc00:b::");
  c.engine.path_id_in_source = true;
  config::Policy& p = c.policies[0];
  if (b_srh) {
    p.segment_lists[0].sids = {testing::v6("fc00:3::1"), testing::v6("fc00:0:ad4::")};
  } else {
    p.encap = srv6::EncapMode::encaps_red;
    p.segment_lists[0].sids = {testing::v6("fc00:0:ad4::")};
  }
  c.local_sids = {{testing::v6("fc00:0:bd4::"), srv6::LocalSidBehavior::end_dx4}};
  return c;
}

uint16_t source_path_id(const Bytes& f) {
  return srv6::read_source_path_id(f.data() + 14);
}

// The fabric for either kind of packet: with an SRH, End on the transit SIDs; without,
// NEXT-C-SID on the transit micro-SIDs (the 16 bits after the 32-bit block shift out until
// a gateway's micro-SID, 0x?d4, leads). CE on the packets whose path id (Tag, else source
// bits) is in `congested`. The source is never touched, as a transit node leaves it.
Bytes any_fabric(Bytes f, std::initializer_list<uint16_t> congested = {}) {
  uint8_t* ip6 = f.data() + 14;
  if (ip6[6] == 43) return fabric(std::move(f), congested);
  for (int hop = 0; hop < 6 && ip6[24 + 5] != 0xd4; ++hop) {
    std::memmove(ip6 + 24 + 4, ip6 + 24 + 6, 10);
    ip6[24 + 14] = ip6[24 + 15] = 0;
  }
  for (uint16_t t : congested)
    if (source_path_id(f) == t) ip6[1] |= 0x30;
  return f;
}

// A sprays over a and b, the fabric marks CE on b (path 2); B's CNP must come back to A
// naming A's path 2 (reflected), whichever side has an SRH; A's engine blames b only.
void expect_reflected_without_srh(bool a_srh, bool b_srh) {
  SCOPED_TRACE(std::string("A ") + (a_srh ? "SRH" : "uSID") + ", B " + (b_srh ? "SRH" : "no SRH"));
  const config::GatewayConfig ca = usid_config_a(a_srh);
  auto a = make(ca);
  auto b = make(usid_config_b(b_srh));
  ASSERT_TRUE(a && b);
  EngineLoop loop(*a, ca);

  std::vector<Bytes> to_b;
  std::map<uint16_t, unsigned> sources;
  for (Bytes& f : run(*a, data_frames(64), true)) {
    EXPECT_EQ(f[14 + 6] == 43, a_srh);
    if (!a_srh) ++sources[source_path_id(f)];
    to_b.push_back(any_fabric(f, {2}));
  }
  if (!a_srh) {
    EXPECT_EQ(sources, (std::map<uint16_t, unsigned>{{1, 32}, {2, 32}}));
  }
  EXPECT_EQ(run(*b, to_b, false).size(), 64u);
  const dataplane::WorkerCounters& cb = b->worker_counters(0);
  EXPECT_EQ(cb.outer_ce_seen, 32u);
  FeedbackEvent ev[64];
  ASSERT_EQ(b->drain_feedback(ev, 64), 32u);
  EXPECT_EQ(ev[0].kind, FeedbackKind::ce_decap);
  EXPECT_EQ(ev[0].tag, 2);  // B attributes the CE to A's path 2

  const std::vector<Bytes> cnp = run(*b, {cnp_from_b()}, true);
  ASSERT_EQ(cnp.size(), 1u);
  EXPECT_EQ(cnp[0][14 + 6] == 43, b_srh);
  const uint16_t carried = b_srh ? srh_tag(cnp[0]) : source_path_id(cnp[0]);
  EXPECT_EQ(carried, dataplane::kTagReflected | 2);
  EXPECT_EQ(cb.cnp_reflected, 1u);

  EXPECT_EQ(run(*a, {any_fabric(cnp[0])}, false).size(), 1u);
  EXPECT_EQ(loop.drain_and_decide(), 1u);
  ASSERT_EQ(loop.decisions.size(), 1u);
  EXPECT_EQ(loop.decisions[0].segment_list, "b");
  EXPECT_EQ(loop.attr.counters().cnp_reflected, 1u);
  EXPECT_EQ(loop.attr.counters().cnp_fallback, 0u);
  EXPECT_EQ(loop.eng.factors("toB"), (std::vector<double>{1.0, 0.5}));
}

TEST_F(FeedbackLoop, UsidBothWaysReflectsInTheSource) {
  expect_reflected_without_srh(false, false);
}
TEST_F(FeedbackLoop, UsidThereSrhBack) {
  expect_reflected_without_srh(false, true);
}
TEST_F(FeedbackLoop, SrhThereNoSrhBack) {
  expect_reflected_without_srh(true, false);
}

// Off (the default): the source stays the configured one and a CE without an SRH is not
// attributed to any path of the remote (no reflection; A falls back to blame by use).
TEST_F(FeedbackLoop, PathIdInSourceOffLeavesTheSourceAlone) {
  config::GatewayConfig ca = usid_config_a(false);
  config::GatewayConfig cb_cfg = usid_config_b(false);
  ca.engine.path_id_in_source = cb_cfg.engine.path_id_in_source = false;
  auto a = make(ca);
  auto b = make(cb_cfg);
  ASSERT_TRUE(a && b);
  std::vector<Bytes> to_b;
  for (Bytes& f : run(*a, data_frames(8), true)) {
    EXPECT_EQ(source_path_id(f), 0);
    to_b.push_back(any_fabric(f, {0}));  // every packet CE
  }
  EXPECT_EQ(run(*b, to_b, false).size(), 8u);
  const std::vector<Bytes> cnp = run(*b, {cnp_from_b()}, true);
  ASSERT_EQ(cnp.size(), 1u);
  EXPECT_EQ(source_path_id(cnp[0]), 0);
  EXPECT_EQ(b->worker_counters(0).cnp_reflected, 0u);
  FeedbackEvent ev[64];
  ASSERT_EQ(b->drain_feedback(ev, 64), 9u);
  EXPECT_EQ(ev[0].flags & dataplane::kFeedbackHasTag, 0);
}

// Distinct flows keep distinct flow labels with the path id in the source: the label is the
// full 20-bit hash (the source adds the path id on top, it takes nothing from the label).
TEST_F(FeedbackLoop, PathIdInSourceKeepsFlowLabelEntropy) {
  config::GatewayConfig on = usid_config_a(false), off = usid_config_a(false);
  off.engine.path_id_in_source = false;
  auto a_on = make(on);
  auto a_off = make(off);
  ASSERT_TRUE(a_on && a_off);
  std::vector<Bytes> frames;
  for (uint32_t qp = 0; qp < 1024; ++qp) {
    RoceSpec s;
    s.src = kHostA;
    s.dst = kHostB;
    s.dest_qp = 0x1000 + qp;
    s.sport = uint16_t(49152 + qp);
    frames.push_back(test::roce_frame(s));
  }
  const std::vector<Bytes> with = run(*a_on, frames, true), without = run(*a_off, frames, true);
  ASSERT_EQ(with.size(), frames.size());
  ASSERT_EQ(without.size(), frames.size());
  std::map<uint32_t, unsigned> labels;
  for (size_t i = 0; i < with.size(); ++i) {
    const uint32_t label = net::load_be32(with[i].data() + 14) & 0xFFFFF;
    EXPECT_EQ(label, net::load_be32(without[i].data() + 14) & 0xFFFFF);
    ++labels[label];
  }
  // 1024 flows in 2^20 labels: a handful of birthday collisions at most.
  EXPECT_GE(labels.size(), 1014u);
}

// Fabric receive spreading (engine/source-entropy-bits, issue 18) together with the path id
// in the source: 64 flows leave A from many source addresses (8 flow-label bits in source
// bits 16..23), each still carrying its path id in bits 0..15; B accepts (decapsulates) every
// one of them and still attributes the CE to A's path 2 from the source's path-id bits.
TEST_F(FeedbackLoop, PathIdInSourceWithSourceEntropy) {
  config::GatewayConfig ca = usid_config_a(false);
  ca.engine.source_entropy_bits = 8;
  ASSERT_FALSE(config::validate(ca));
  auto a = make(ca);
  auto b = make(usid_config_b(false));
  ASSERT_TRUE(a && b);
  std::vector<Bytes> frames;
  for (uint32_t qp = 0; qp < 64; ++qp) {
    RoceSpec s;
    s.src = kHostA;
    s.dst = kHostB;
    s.ecn = 2;  // ECT(0): the CE reaches the inner header (RFC 6040)
    s.dest_qp = 0x1000 + qp;
    s.sport = uint16_t(49152 + qp);
    frames.push_back(test::roce_frame(s));
  }
  std::set<uint32_t> sources;  // the source's last 32 bits (the bits above are the locator's)
  std::map<uint16_t, unsigned> path_ids;
  std::vector<Bytes> to_b;
  for (Bytes& f : run(*a, frames, true)) {
    const uint8_t* ip6 = f.data() + 14;
    const uint32_t label = net::load_be32(ip6) & 0xFFFFF;
    EXPECT_EQ(net::load_be32(ip6 + 20) >> 16, label & 0xFF);  // entropy = the label's low bits
    EXPECT_EQ(ip6[8 + 10] | ip6[8 + 11], 0);                  // above them: the locator's zeros
    ++path_ids[source_path_id(f)];
    sources.insert(net::load_be32(ip6 + 20));
    to_b.push_back(any_fabric(f, {2}));
  }
  EXPECT_EQ(path_ids, (std::map<uint16_t, unsigned>{{1, 32}, {2, 32}}));
  EXPECT_GE(sources.size(), 48u);  // 64 flows over 256 entropy values x 2 path ids
  EXPECT_EQ(run(*b, to_b, false).size(), 64u);
  FeedbackEvent ev[64];
  ASSERT_EQ(b->drain_feedback(ev, 64), 32u);
  for (unsigned i = 0; i < 32; ++i) EXPECT_EQ(ev[i].tag, 2);
}

TEST_F(FeedbackLoop, WithoutReflectionTheFlowsListIsBlamed) {
  const config::GatewayConfig ca = config_a(config::SelectionMode::flow);
  auto a = make(ca);
  ASSERT_TRUE(a);
  EngineLoop loop(*a, ca);
  // One flow: it sits on one list.
  const std::vector<Bytes> sent = run(*a, data_frames(10), true);
  ASSERT_EQ(sent.size(), 10u);
  const uint16_t used = srh_tag(sent[0]);
  const std::string used_name = used == 1 ? "a" : "b";
  EXPECT_EQ(packets_by_path(*a)[used_name], 10u);
  FeedbackEvent drained[16];
  a->drain_feedback(drained, 16);  // nothing relevant (no CNP yet)

  // A peer that does not reflect: its CNP carries its own path id (100) in the Tag.
  const Bytes inner = test::roce_ip_packet([] {
    RoceSpec s;
    s.src = kHostB;
    s.dst = kHostA;
    s.opcode = 0x81;
    s.payload = 16;
    return s;
  }());
  test::L2Spec l2;
  const Bytes frame = test::ethernet(
      l2, 0x86DD, test::srv6_packet("fc00:b::1", "fc00:a::d4", 0, {"fc00:a::d4"}, 100, 4, inner));
  EXPECT_EQ(run(*a, {frame}, false).size(), 1u);
  loop.drain_and_decide();
  EXPECT_EQ(loop.attr.counters().cnp_fallback, 1u);
  ASSERT_EQ(loop.decisions.size(), 1u);
  EXPECT_EQ(loop.decisions[0].path_id, used);
  const std::vector<double> f = loop.eng.factors("toB");
  EXPECT_EQ(f[used - 1], 0.5);
  EXPECT_EQ(f[2 - used], 1.0);
}

// A flow that just moved off a list (its weight went to 0) and then gets a late CNP without
// a reflected id: the blame follows the packets of the last epochs, mostly the list it left,
// not the list it moved to. Two epochs later the same CNP finds nothing.
TEST_F(FeedbackLoop, LateUnreflectedCnpBlamesTheListTheFlowLeftByUse) {
  const config::GatewayConfig ca = config_a(config::SelectionMode::flow);
  auto a = make(ca);
  ASSERT_TRUE(a);
  dataplane::WorkerContext& w = *a->worker(0);
  const uint64_t epoch = uint64_t(1) << w.recent_epoch_shift;
  w.fixed_tsc = 1000 * epoch + 1;
  const std::vector<Bytes> first = run(*a, data_frames(10), true);
  ASSERT_EQ(first.size(), 10u);
  const uint16_t left = srh_tag(first[0]);
  const uint16_t other = left == 1 ? 2 : 1;
  std::vector<double> f(2, 1.0);
  f[left - 1] = 0.0;  // the engine took that list out: the flow moves
  ASSERT_FALSE(a->set_path_factors("toB", f));
  w.fixed_tsc += epoch;  // the next epoch
  const std::vector<Bytes> second = run(*a, data_frames(2), true);
  ASSERT_EQ(second.size(), 2u);
  EXPECT_EQ(srh_tag(second[0]), other);

  std::vector<dataplane::RecentUse> uses;
  a->recent_paths(testing::ip(kHostA), testing::ip(kHostB), uses);
  std::map<uint16_t, uint32_t> got;
  for (const auto& u : uses) got[u.path_id] += u.packets;
  EXPECT_EQ(got, (std::map<uint16_t, uint32_t>{{left, 10}, {other, 2}}));

  EngineLoop loop(*a, ca);
  FeedbackEvent drained[64];
  a->drain_feedback(drained, 64);
  const Bytes inner = test::roce_ip_packet([] {
    RoceSpec s;
    s.src = kHostB;
    s.dst = kHostA;
    s.opcode = 0x81;
    s.payload = 16;
    return s;
  }());
  test::L2Spec l2;
  const Bytes frame = test::ethernet(
      l2, 0x86DD, test::srv6_packet("fc00:b::1", "fc00:a::d4", 0, {"fc00:a::d4"}, 100, 4, inner));
  EXPECT_EQ(run(*a, {frame}, false).size(), 1u);
  loop.drain_and_decide();
  EXPECT_EQ(loop.attr.counters().cnp_fallback, 1u);
  const std::vector<double> ef = loop.eng.factors("toB");
  EXPECT_NEAR(ef[left - 1], std::pow(0.5, 10.0 / 12.0), 1e-9);
  EXPECT_NEAR(ef[other - 1], std::pow(0.5, 2.0 / 12.0), 1e-9);

  // Two epochs later: nothing recent, the CNP is not attributed.
  w.fixed_tsc += 2 * epoch;
  uses.clear();
  a->recent_paths(testing::ip(kHostA), testing::ip(kHostB), uses);
  EXPECT_TRUE(uses.empty());
  EXPECT_EQ(run(*a, {frame}, false).size(), 1u);
  loop.drain_and_decide();
  EXPECT_EQ(loop.attr.counters().cnp_unattributed, 1u);
}

TEST_F(FeedbackLoop, SprayedWithoutReflectionBlamesEveryUsedListByUse) {
  const config::GatewayConfig ca = config_a(config::SelectionMode::packet);
  auto a = make(ca);
  ASSERT_TRUE(a);
  std::vector<dataplane::RecentUse> uses;
  run(*a, data_frames(4), true);
  const auto by_path = packets_by_path(*a);
  a->recent_paths(testing::ip(kHostA), testing::ip(kHostB), uses);
  std::map<uint16_t, uint32_t> got;
  for (const auto& u : uses) got[u.path_id] += u.packets;
  EXPECT_EQ(got, (std::map<uint16_t, uint32_t>{{1, uint32_t(by_path.at("a"))},
                                               {2, uint32_t(by_path.at("b"))}}));
  EXPECT_EQ(got[1] + got[2], 4u);
  uses.clear();
  a->recent_paths(testing::ip(kHostB), testing::ip(kHostA), uses);  // the other direction
  EXPECT_TRUE(uses.empty());
}

TEST_F(FeedbackLoop, FullRingDropsAndCountsWithoutBlocking) {
  auto b = make(config_b());
  ASSERT_TRUE(b);
  // CE-marked traffic toward B, never drained: the ring fills, then events are dropped.
  std::vector<Bytes> frames;
  auto a = make(config_a(config::SelectionMode::packet));
  for (Bytes& f : run(*a, data_frames(512), true)) frames.push_back(fabric(f, {1, 2}));
  const size_t rounds = dataplane::kFeedbackRingSize / frames.size() + 2;
  for (size_t r = 0; r < rounds; ++r) EXPECT_EQ(run(*b, frames, false).size(), frames.size());
  const dataplane::WorkerCounters& c = b->worker_counters(0);
  const uint64_t total = rounds * frames.size();
  EXPECT_EQ(c.outer_ce_seen, total);
  EXPECT_EQ(c.feedback_events + c.feedback_dropped, total);
  EXPECT_EQ(c.feedback_events, dataplane::kFeedbackRingSize - 1);  // usable ring capacity
  EXPECT_GT(c.feedback_dropped, 0u);
  // Draining makes room again.
  std::vector<FeedbackEvent> ev(1024);
  size_t drained = 0;
  for (unsigned n; (n = b->drain_feedback(ev.data(), 1024)) != 0;) drained += n;
  EXPECT_EQ(drained, dataplane::kFeedbackRingSize - 1);
  run(*b, {frames[0]}, false);
  EXPECT_EQ(c.feedback_events, dataplane::kFeedbackRingSize);
}

}  // namespace
}  // namespace srv6gw
