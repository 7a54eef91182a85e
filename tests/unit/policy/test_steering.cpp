// SPDX-License-Identifier: BSD-3-Clause
// Steering levels and precedence, DSCP rules, IPv4 and IPv6, deletes, all-or-nothing apply,
// object reuse across applies, and a million exact entries (time and memory reported).
#include <gtest/gtest.h>
#include <rte_malloc.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <map>
#include <vector>

#include "config_builder.hpp"
#include "policy/runtime.hpp"
#include "policy/steering.hpp"

namespace srv6gw::policy {
namespace {

using config::SelectionMode;
using testing::segment_list;

config::GatewayConfig four_policies() {
  config::GatewayConfig c = testing::base_config();
  uint16_t id = 1;
  for (const char* name : {"exact", "dstany", "range", "prefix", "dscp", "other"}) {
    const std::string sid = "fc00:" + std::to_string(id) + "::1";
    config::SegmentList sl;
    sl.name = "main";
    sl.path_id = id++;
    sl.sids.push_back(testing::v6(sid.c_str()));
    c.policies.push_back(testing::policy(name, SelectionMode::flow, {sl}));
  }
  return c;
}

net::PacketInfo packet(const char* dst, uint32_t qp, uint8_t dscp = 0) {
  net::PacketInfo info;
  info.dst = testing::ip(dst);
  info.family = info.dst.family;
  info.src = testing::ip(info.family == net::Family::ipv4 ? "10.9.9.9" : "fd00:9::9");
  info.bth.dest_qp = qp;
  info.dscp = dscp;
  return info;
}

class SteeringTest : public ::testing::Test {
 protected:
  void SetUp() override {
    size_t size = rte_rcu_qsbr_get_memsize(1);
    qsbr_ = static_cast<rte_rcu_qsbr*>(rte_zmalloc(nullptr, size, RTE_CACHE_LINE_SIZE));
    ASSERT_NE(qsbr_, nullptr);
    rte_rcu_qsbr_init(qsbr_, 1);
  }
  void TearDown() override {
    rt_.reset();
    rte_free(qsbr_);
  }
  void create(const config::GatewayConfig& cfg) {
    config::ConfigError err;
    rt_ = Runtime::create(cfg, qsbr_, 0, SOCKET_ID_ANY, err);
    ASSERT_NE(rt_, nullptr) << err.path << ": " << err.message;
  }
  // Name of the policy a packet is steered to ("" on a miss).
  std::string steer_name(const net::PacketInfo& info) {
    const uint32_t slot = steer(rt_->view()->steering, info);
    if (slot == kNoSlot) return "";
    const CompiledPolicy* p = rt_->policy(slot);
    return p ? p->name : "<empty slot>";
  }
  rte_rcu_qsbr* qsbr_ = nullptr;
  std::unique_ptr<Runtime> rt_;
};

TEST_F(SteeringTest, LevelsInOrder) {
  auto cfg = four_policies();
  cfg.steering = {
      testing::prefix_rule("10.1.0.0", 16, "prefix"),
      testing::range_rule(1000, 1999, "range"),
      testing::dst_rule("10.1.2.3", "dstany"),
      testing::exact_rule("10.1.2.3", 1500, "exact"),
  };
  create(cfg);
  EXPECT_EQ(steer_name(packet("10.1.2.3", 1500)), "exact");
  EXPECT_EQ(steer_name(packet("10.1.2.3", 1501)), "dstany");  // dst beats the QP range
  EXPECT_EQ(steer_name(packet("10.1.2.4", 1501)), "range");   // range beats the prefix
  EXPECT_EQ(steer_name(packet("10.1.2.4", 2000)), "prefix");
  EXPECT_EQ(steer_name(packet("10.2.0.1", 2000)), "");       // miss
  EXPECT_EQ(steer_name(packet("10.2.0.1", 1000)), "range");  // range without dst: any dst
  EXPECT_EQ(steer_name(packet("fd00::1", 1999)), "range");   // ... of either family
}

TEST_F(SteeringTest, Ipv6LevelsAndLongestPrefix) {
  auto cfg = four_policies();
  cfg.steering = {
      testing::prefix_rule("fd00::", 16, "other"),
      testing::prefix_rule("fd00:1::", 32, "prefix"),
      testing::prefix_rule("fd00:1:2:3::", 64, "range"),
      testing::prefix_rule("fd00:1:2:3::7", 128, "dscp"),
      testing::dst_rule("fd00:1:2:3::8", "dstany"),
      testing::exact_rule("fd00:1:2:3::8", 77, "exact"),
  };
  create(cfg);
  EXPECT_EQ(steer_name(packet("fd00:1:2:3::8", 77)), "exact");
  EXPECT_EQ(steer_name(packet("fd00:1:2:3::8", 78)), "dstany");
  EXPECT_EQ(steer_name(packet("fd00:1:2:3::7", 78)), "dscp");
  EXPECT_EQ(steer_name(packet("fd00:1:2:3::9", 78)), "range");
  EXPECT_EQ(steer_name(packet("fd00:1:2:4::9", 78)), "prefix");
  EXPECT_EQ(steer_name(packet("fd00:2::1", 78)), "other");
  EXPECT_EQ(steer_name(packet("fd01::1", 78)), "");
  // An IPv4 packet whose address bytes look like an IPv6 prefix start does not match.
  EXPECT_EQ(steer_name(packet("253.0.0.1", 78)), "");
}

TEST_F(SteeringTest, Ipv4LongestPrefixAndDefault) {
  auto cfg = four_policies();
  cfg.steering = {
      testing::prefix_rule("0.0.0.0", 0, "other"),
      testing::prefix_rule("10.0.0.0", 8, "prefix"),
      testing::prefix_rule("10.1.2.0", 24, "range"),
      testing::prefix_rule("10.1.2.128", 25, "dscp"),
      testing::prefix_rule("10.1.2.200", 32, "exact"),
  };
  create(cfg);
  EXPECT_EQ(steer_name(packet("10.1.2.200", 1)), "exact");
  EXPECT_EQ(steer_name(packet("10.1.2.201", 1)), "dscp");
  EXPECT_EQ(steer_name(packet("10.1.2.1", 1)), "range");
  EXPECT_EQ(steer_name(packet("10.200.0.1", 1)), "prefix");
  EXPECT_EQ(steer_name(packet("192.168.0.1", 1)), "other");
  EXPECT_EQ(steer_name(packet("fd00::1", 1)), "");  // /0 of IPv4 does not cover IPv6
}

TEST_F(SteeringTest, DscpRulesBeatPlainRulesAtEachLevel) {
  auto cfg = four_policies();
  cfg.steering = {
      testing::exact_rule("10.1.2.3", 5, "exact"),
      testing::exact_rule("10.1.2.3", 5, "dscp", 26),
      testing::dst_rule("10.1.2.4", "dstany"),
      testing::dst_rule("10.1.2.4", "dscp", 26),
      testing::range_rule(100, 200, "range"),
      testing::range_rule(100, 200, "dscp", nullptr, 26),
      testing::range_rule(300, 400, "range", "10.5.5.5"),  // dst-restricted range
      testing::range_rule(300, 400, "other"),
      testing::prefix_rule("10.9.9.0", 24, "prefix"),
      testing::prefix_rule("10.9.0.0", 16, "dscp", 26),  // shorter, but with DSCP
      testing::prefix_rule("fd00:9::", 64, "prefix"),
      testing::prefix_rule("fd00::", 16, "dscp", 46),
  };
  create(cfg);
  EXPECT_EQ(steer_name(packet("10.1.2.3", 5, 26)), "dscp");
  EXPECT_EQ(steer_name(packet("10.1.2.3", 5, 0)), "exact");
  EXPECT_EQ(steer_name(packet("10.1.2.3", 5, 46)), "exact");
  EXPECT_EQ(steer_name(packet("10.1.2.4", 9, 26)), "dscp");
  EXPECT_EQ(steer_name(packet("10.1.2.4", 9, 10)), "dstany");
  EXPECT_EQ(steer_name(packet("10.7.7.7", 155, 26)), "dscp");
  EXPECT_EQ(steer_name(packet("10.7.7.7", 155, 0)), "range");
  EXPECT_EQ(steer_name(packet("10.7.7.7", 120, 0)), "range");
  EXPECT_EQ(steer_name(packet("10.5.5.5", 350, 0)), "range");
  EXPECT_EQ(steer_name(packet("10.5.5.6", 350, 0)), "other");
  EXPECT_EQ(steer_name(packet("10.9.9.9", 1000, 26)), "dscp");
  EXPECT_EQ(steer_name(packet("10.9.9.9", 1000, 0)), "prefix");
  EXPECT_EQ(steer_name(packet("10.9.1.1", 1000, 0)), "");
  EXPECT_EQ(steer_name(packet("fd00:9::1", 1000, 46)), "dscp");
  EXPECT_EQ(steer_name(packet("fd00:9::1", 1000, 0)), "prefix");
  const View* v = rt_->view();
  EXPECT_TRUE(v->steering.exact_dscp);
  EXPECT_TRUE(v->steering.dst_any_dscp);
}

// steer_bulk() (the data plane's per-burst steering) against steer() and the expected
// policy, on one batch mixing every level, DSCP variants, both families and misses, so that
// hits of one level and misses going on to the next are interleaved within the batch.
TEST_F(SteeringTest, BulkSteeringMatchesPerPacketSteering) {
  auto cfg = four_policies();
  cfg.steering = {
      testing::exact_rule("10.1.2.3", 5, "exact"),
      testing::exact_rule("10.1.2.3", 5, "dscp", 26),
      testing::exact_rule("fd00:9::1", 77, "exact"),
      testing::dst_rule("10.1.2.4", "dstany"),
      testing::dst_rule("10.1.2.4", "dscp", 26),
      testing::range_rule(100, 200, "range"),
      testing::range_rule(100, 200, "dscp", nullptr, 26),
      testing::prefix_rule("10.9.9.0", 24, "prefix"),
      testing::prefix_rule("10.9.0.0", 16, "dscp", 26),
      testing::prefix_rule("fd00:9::", 64, "prefix"),
  };
  create(cfg);
  const struct {
    const char* dst;
    uint32_t qp;
    uint8_t dscp;
    const char* want;
  } cases[] = {
      {"10.1.2.3", 5, 26, "dscp"},    {"10.9.1.1", 1000, 0, ""},
      {"10.1.2.3", 5, 0, "exact"},    {"10.1.2.4", 9, 26, "dscp"},
      {"fd00:9::1", 77, 0, "exact"},  {"10.1.2.4", 9, 10, "dstany"},
      {"10.7.7.7", 155, 26, "dscp"},  {"10.1.2.3", 6, 0, ""},
      {"10.7.7.7", 155, 0, "range"},  {"fd00:9::1", 78, 0, "prefix"},
      {"10.9.9.9", 1000, 26, "dscp"}, {"10.9.9.9", 1000, 0, "prefix"},
      {"10.1.2.3", 150, 0, "range"},  {"10.1.2.4", 150, 0, "dstany"},
      {"fd00:8::1", 1, 0, ""},        {"10.1.2.3", 5, 46, "exact"},
  };
  constexpr size_t kCases = sizeof cases / sizeof cases[0];
  // Repeat the cases up to the largest batch steer_bulk takes.
  std::vector<net::PacketInfo> infos;
  for (unsigned i = 0; i < kSteerBulkMax; ++i) {
    const auto& c = cases[i % kCases];
    infos.push_back(packet(c.dst, c.qp, c.dscp));
  }
  const SteeringView& v = rt_->view()->steering;
  for (unsigned n : {1u, 3u, unsigned(kCases), kSteerBulkMax}) {
    std::vector<const net::PacketInfo*> ptrs;
    for (unsigned i = 0; i < n; ++i) ptrs.push_back(&infos[i]);
    std::vector<uint32_t> slots(n, 12345);
    steer_bulk(v, ptrs.data(), n, slots.data());
    for (unsigned i = 0; i < n; ++i) {
      const auto& c = cases[i % kCases];
      EXPECT_EQ(slots[i], steer(v, infos[i])) << "batch " << n << " packet " << i;
      const CompiledPolicy* p = slots[i] == kNoSlot ? nullptr : rt_->policy(slots[i]);
      EXPECT_EQ(p ? p->name : "", c.want) << c.dst << " qp " << c.qp << " dscp " << int(c.dscp);
    }
  }
}

TEST(ExactKeyTest, EveryByteIsDefinedAndKeysOfEqualFieldsAreEqual) {
  // The control side compares keys with memcmp over all 32 bytes: the padding must be zero
  // however the key storage was filled before.
  alignas(ExactKey) unsigned char raw[sizeof(ExactKey)];
  std::memset(raw, 0xA5, sizeof raw);
  ExactKey* k = reinterpret_cast<ExactKey*>(raw);
  set_exact_key(*k, testing::ip("10.1.2.3"), 5, 26);
  const ExactKey made = make_exact_key(testing::ip("10.1.2.3"), 5, 26);
  EXPECT_EQ(std::memcmp(raw, &made, sizeof made), 0);
  EXPECT_EQ(made.family, uint8_t(net::Family::ipv4));
  EXPECT_EQ(made.dscp, 26);
  EXPECT_EQ(made.qp, 5u);
  EXPECT_EQ(made.zero[0] | made.zero[1], 0);
  for (uint8_t b : made.pad) EXPECT_EQ(b, 0);
  set_exact_key_head(*k, net::Family::ipv4, kAnyQp, kAnyDscp);
  EXPECT_EQ(k->qp, kAnyQp);
  EXPECT_EQ(k->dscp, kAnyDscp);
  EXPECT_EQ(std::memcmp(k->addr, made.addr, sizeof made.addr), 0);
}

TEST_F(SteeringTest, NoDscpRulesMeansNoDscpLookups) {
  auto cfg = four_policies();
  cfg.steering = {testing::exact_rule("10.1.2.3", 5, "exact"),
                  testing::dst_rule("10.1.2.4", "dstany")};
  create(cfg);
  const View* v = rt_->view();
  EXPECT_TRUE(v->steering.has_exact);
  EXPECT_FALSE(v->steering.exact_dscp);
  EXPECT_FALSE(v->steering.dst_any_dscp);
  EXPECT_EQ(v->steering.qp_ranges, nullptr);
  EXPECT_EQ(v->steering.dscp_prefix4, nullptr);
  EXPECT_EQ(v->steering.prefix6, nullptr);
  EXPECT_FALSE(v->steering.has_prefix4);
  EXPECT_EQ(steer_name(packet("10.1.2.3", 5, 26)), "exact");
}

TEST_F(SteeringTest, DeletesAndUpdates) {
  auto cfg = four_policies();
  cfg.steering = {
      testing::exact_rule("10.1.2.3", 5, "exact"), testing::dst_rule("10.1.2.3", "dstany"),
      testing::prefix_rule("10.1.0.0", 16, "prefix"), testing::prefix_rule("fd00::", 16, "prefix")};
  create(cfg);
  EXPECT_EQ(steer_name(packet("10.1.2.3", 5)), "exact");
  // Change the policy of the exact rule (in-place hash update), delete the dst rule.
  cfg.steering = {testing::exact_rule("10.1.2.3", 5, "other"),
                  testing::prefix_rule("10.1.0.0", 16, "range")};
  ASSERT_FALSE(rt_->apply(cfg));
  EXPECT_EQ(steer_name(packet("10.1.2.3", 5)), "other");
  EXPECT_EQ(steer_name(packet("10.1.2.3", 6)), "range");
  EXPECT_EQ(steer_name(packet("fd00::1", 6)), "");
  auto st = rt_->table_stats();
  EXPECT_EQ(st.exact_entries, 1u);
  EXPECT_EQ(st.dst_any_entries, 0u);
  EXPECT_EQ(st.lpm4_rules, 1u);
  EXPECT_EQ(st.prefix6_rules, 0u);
  cfg.steering.clear();
  ASSERT_FALSE(rt_->apply(cfg));
  EXPECT_EQ(steer_name(packet("10.1.2.3", 5)), "");
  EXPECT_EQ(steer_name(packet("10.1.2.3", 6)), "");
  EXPECT_FALSE(rt_->view()->steering.has_exact);
  EXPECT_FALSE(rt_->view()->steering.has_prefix4);
  rt_->reclaim();
  EXPECT_EQ(rt_->retired_pending(), 0u);  // no worker online: grace periods are immediate
}

TEST_F(SteeringTest, FailedApplyChangesNothing) {
  auto cfg = four_policies();
  cfg.steering = {testing::exact_rule("10.1.2.3", 5, "exact")};
  create(cfg);
  const CompiledPolicy* before = rt_->policy(*rt_->slot_of("exact"));
  const View* view_before = rt_->view();

  auto bad = cfg;
  bad.policies[0].segment_lists[0].sids[0] = testing::v6("fc00:99::1");       // a change...
  bad.steering.push_back(testing::exact_rule("10.1.2.4", 5, "nonexistent"));  // ...and an error
  auto err = rt_->apply(bad);
  ASSERT_TRUE(err);
  EXPECT_NE(err->path.find("/steering/rule[2]/policy"), std::string::npos) << err->path;
  EXPECT_EQ(rt_->policy(*rt_->slot_of("exact")), before);
  EXPECT_EQ(rt_->view(), view_before);
  auto running = cfg;
  running.steering.clear();  // running_config() holds no steering rules (they are in tables)
  EXPECT_EQ(rt_->running_config(), running);
  EXPECT_EQ(rt_->steering_rule_count(), 1u);

  auto too_many = cfg;
  too_many.capacities.exact_entries = 4;  // capacities cannot change at run time
  EXPECT_TRUE(rt_->apply(too_many));
  EXPECT_EQ(rt_->view(), view_before);
  EXPECT_EQ(steer_name(packet("10.1.2.3", 5)), "exact");
}

TEST_F(SteeringTest, UnchangedPoliciesKeepTheirObjects) {
  auto cfg = four_policies();
  create(cfg);
  const uint32_t exact_slot = *rt_->slot_of("exact");
  const uint32_t other_slot = *rt_->slot_of("other");
  const CompiledPolicy* exact_before = rt_->policy(exact_slot);
  const CompiledPolicy* other_before = rt_->policy(other_slot);
  ASSERT_FALSE(rt_->set_path_factors("other", std::vector<double>{0.5}));
  const CompiledPolicy* other_scaled = rt_->policy(other_slot);
  EXPECT_NE(other_scaled, other_before);
  EXPECT_EQ(other_scaled->paths[0].factor_q16, kFactorOne / 2);

  auto next = cfg;
  next.policies[5].segment_lists[0].sids.push_back(testing::v6("fc00:77::1"));  // change "other"
  next.policies.erase(next.policies.begin() + 1);                               // drop "dstany"
  next.policies.push_back(next.policies[0]);
  next.policies.back().name = "fresh";
  next.policies.back().segment_lists[0].path_id = 99;
  next.policies.back().segment_lists[0].sids = {testing::v6("fc00:99::1")};
  ASSERT_FALSE(rt_->apply(next));
  EXPECT_EQ(rt_->policy(exact_slot), exact_before);  // same object: worker state stays valid
  const CompiledPolicy* other_after = rt_->policy(other_slot);
  EXPECT_NE(other_after, other_scaled);
  EXPECT_EQ(other_after->paths[0].factor_q16, kFactorOne / 2);  // factor carried over by name
  EXPECT_EQ(other_after->paths[0].encap.segment_count, 2);
  EXPECT_FALSE(rt_->slot_of("dstany"));
  ASSERT_TRUE(rt_->slot_of("fresh"));
  // Hop limit is a compile input: every policy is rebuilt.
  next.hop_limit = 9;
  ASSERT_FALSE(rt_->apply(next));
  EXPECT_NE(rt_->policy(exact_slot), exact_before);
  EXPECT_EQ(rt_->policy(exact_slot)->paths[0].encap.bytes[7], 9);
}

TEST_F(SteeringTest, RemovedSlotsReturnAfterGracePeriod) {
  auto cfg = four_policies();
  cfg.capacities.policies = 6;
  create(cfg);
  // A worker is online and has not reported: the slot of a removed policy stays retired.
  rte_rcu_qsbr_thread_register(qsbr_, 0);
  rte_rcu_qsbr_thread_online(qsbr_, 0);
  auto next = cfg;
  next.policies.pop_back();
  ASSERT_FALSE(rt_->apply(next));
  next.policies.push_back(cfg.policies.back());
  next.policies.back().name = "replacement";
  auto err = rt_->apply(next);
  ASSERT_TRUE(err);  // all six slots busy until the grace period ends
  EXPECT_NE(err->message.find("no free policy slot"), std::string::npos) << err->message;
  rt_->reclaim();
  EXPECT_GT(rt_->retired_pending(), 0u);
  rte_rcu_qsbr_quiescent(qsbr_, 0);
  rt_->reclaim();
  EXPECT_EQ(rt_->retired_pending(), 0u);
  EXPECT_FALSE(rt_->apply(next));
  rte_rcu_qsbr_thread_offline(qsbr_, 0);
  rte_rcu_qsbr_thread_unregister(qsbr_, 0);
}

TEST_F(SteeringTest, LocalSidsAndSettingsArePublished) {
  auto cfg = four_policies();
  cfg.local_sids = {{testing::v6("fc00:aa::d4"), srv6::LocalSidBehavior::end_dx4},
                    {testing::v6("fc00:aa::d6"), srv6::LocalSidBehavior::end_dx6}};
  cfg.non_roce = config::MissAction::drop;
  cfg.host_mac = testing::mac("02:00:00:00:00:01");
  create(cfg);
  const View* v = rt_->view();
  EXPECT_EQ(v->settings.non_roce, config::MissAction::drop);
  EXPECT_TRUE(v->settings.has_host_mac);
  const auto* e = v->local_sids->find(testing::v6("fc00:aa::d6").bytes.data());
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(e->behavior, srv6::LocalSidBehavior::end_dx6);
  EXPECT_EQ(v->local_sids->find(testing::v6("fc00:aa::d5").bytes.data()), nullptr);
}

// ---------------- the delta path (apply_delta) against the full path ----------------

// The delta an agent would hand over: per rule id, the rule before and after.
SteeringDelta delta_by_id(const config::GatewayConfig& from, const config::GatewayConfig& to) {
  std::map<uint32_t, const config::SteeringRule*> before;
  std::map<uint32_t, std::pair<const config::SteeringRule*, size_t>> after;
  for (const config::SteeringRule& r : from.steering) before[r.id] = &r;
  for (size_t i = 0; i < to.steering.size(); ++i) after[to.steering[i].id] = {&to.steering[i], i};
  SteeringDelta d;
  for (const auto& [id, r] : before) {
    auto it = after.find(id);
    if (it == after.end())
      d.rules.push_back({r, nullptr, 0});
    else if (!(*r == *it->second.first))
      d.rules.push_back({r, it->second.first, it->second.second});
  }
  for (const auto& [id, a] : after)
    if (!before.count(id)) d.rules.push_back({nullptr, a.first, a.second});
  return d;
}

ExactKey key_of(const config::SteeringRule& r) {
  return make_exact_key(r.dst, r.kind == config::SteeringKind::exact ? r.dest_qp : kAnyQp,
                        r.dscp ? *r.dscp : kAnyDscp);
}

// Name of the policy the exact table maps `k` to ("" when absent).
std::string table_name(const Runtime& rt, const ExactKey& k) {
  const uint32_t slot = hash_lookup_slot(rt.view()->steering.exact, k);
  if (slot == kNoSlot) return "";
  const CompiledPolicy* p = rt.policy(slot);
  return p ? p->name : "<empty slot>";
}

bool stats_equal(const Runtime::TableStats& a, const Runtime::TableStats& b) {
  return a.exact_entries == b.exact_entries && a.dst_any_entries == b.dst_any_entries &&
         a.lpm4_rules == b.lpm4_rules && a.prefix6_rules == b.prefix6_rules &&
         a.dscp_prefix_rules == b.dscp_prefix_rules && a.qp_ranges == b.qp_ranges &&
         a.local_sids == b.local_sids;
}

// Random batches of exact / dst-any upserts, deletes, re-points and match changes (and now
// and then a policy added or removed, a prefix rule changed, a batch that must be refused),
// applied through apply_delta() on one Runtime and the full apply() on another: after each
// step both tables map every key of the universe as the configuration says, with equal
// stats, flags and steering decisions.
TEST_F(SteeringTest, DeltaPathMatchesFullPath) {
  auto cfg = four_policies();
  cfg.capacities.exact_entries = 256;
  cfg.steering = {testing::prefix_rule("10.7.0.0", 16, "prefix"),
                  testing::range_rule(5, 6, "range"),
                  testing::prefix_rule("fd00:7::", 32, "range")};
  cfg.steering[0].id = 100001;
  cfg.steering[1].id = 100002;
  cfg.steering[2].id = 100003;
  create(cfg);
  config::ConfigError err;
  std::unique_ptr<Runtime> full = Runtime::create(cfg, qsbr_, 0, SOCKET_ID_ANY, err);
  ASSERT_NE(full, nullptr) << err.message;

  std::vector<net::IpAddr> dsts;
  for (int i = 0; i < 24; ++i) dsts.push_back(testing::ip(("10.7.0." + std::to_string(i)).c_str()));
  for (int i = 0; i < 8; ++i) dsts.push_back(testing::ip(("fd00:7::" + std::to_string(i)).c_str()));
  const std::vector<uint32_t> qps = {1, 2, 3, 4, 5, 6, 7, 8};
  const std::vector<std::optional<uint8_t>> dscps = {std::nullopt, uint8_t(10), uint8_t(46)};
  const std::vector<std::string> names = {"exact", "dstany", "other", "dscp"};
  config::Policy extra = cfg.policies[0];
  extra.name = "extra";
  extra.segment_lists[0].path_id = 77;

  uint64_t seed = 12345;
  auto rnd = [&](uint64_t n) {
    seed = seed * 6364136223846793005ull + 1442695040888963407ull;
    return (seed >> 33) % n;
  };
  auto random_rule = [&](uint32_t id) {
    config::SteeringRule r;
    r.id = id;
    r.kind = rnd(3) ? config::SteeringKind::exact : config::SteeringKind::dst_any_qp;
    r.dst = dsts[rnd(dsts.size())];
    if (r.kind == config::SteeringKind::exact) r.dest_qp = qps[rnd(qps.size())];
    r.dscp = dscps[rnd(dscps.size())];
    const bool has_extra = std::any_of(cfg.policies.begin(), cfg.policies.end(),
                                       [](const config::Policy& p) { return p.name == "extra"; });
    r.policy = has_extra && rnd(4) == 0 ? "extra" : names[rnd(names.size())];
    return r;
  };

  uint32_t next_id = 1;
  int applied = 0, refused = 0, fallbacks = 0;
  for (int step = 0; step < 300; ++step) {
    config::GatewayConfig next = cfg;
    const int changes = 1 + int(rnd(12));
    for (int c = 0; c < changes; ++c) {
      std::vector<size_t> exacts;  // positions of exact / dst-any rules
      for (size_t i = 0; i < next.steering.size(); ++i)
        if (next.steering[i].id < 100000) exacts.push_back(i);
      const uint64_t op = exacts.empty() ? 0 : rnd(10);
      if (op < 3) {  // new rule
        next.steering.push_back(random_rule(next_id++));
      } else if (op < 6) {  // delete (the last rule takes its place, as the agent does)
        const size_t i = exacts[rnd(exacts.size())];
        next.steering[i] = next.steering.back();
        next.steering.pop_back();
      } else if (op < 8) {  // re-point
        next.steering[exacts[rnd(exacts.size())]].policy = names[rnd(names.size())];
      } else {  // another match for the same id
        const size_t i = exacts[rnd(exacts.size())];
        next.steering[i] = random_rule(next.steering[i].id);
      }
    }
    if (rnd(15) == 0) {  // a policy comes or goes (refused while rules still use it)
      auto it = std::find_if(next.policies.begin(), next.policies.end(),
                             [](const config::Policy& p) { return p.name == "extra"; });
      if (it == next.policies.end())
        next.policies.push_back(extra);
      else
        next.policies.erase(it);
    }
    if (rnd(20) == 0) {  // a prefix rule changes: the delta path hands over to the full path
      next.steering[0].prefix_len = next.steering[0].prefix_len == 16 ? 24 : 16;
      ++fallbacks;
    }
    const SteeringDelta delta = delta_by_id(cfg, next);
    const auto e_delta = rt_->apply_delta(next, delta);
    const auto e_full = full->apply(next);
    ASSERT_EQ(bool(e_delta), bool(e_full))
        << "step " << step << ": delta " << (e_delta ? e_delta->message : "ok") << ", full "
        << (e_full ? e_full->message : "ok");
    if (e_delta) {
      ++refused;
    } else {
      ++applied;
      cfg = std::move(next);
    }

    // Every key of the universe, as the configuration in force says.
    std::map<std::string, std::string> want;  // key bytes -> policy
    bool has_exact = false, exact_dscp = false, has_dst_any = false, dst_any_dscp = false;
    for (const config::SteeringRule& r : cfg.steering) {
      if (r.id >= 100000) continue;
      const ExactKey k = key_of(r);
      const auto* b = reinterpret_cast<const char*>(&k);
      want[std::string(b, sizeof k)] = r.policy;
      const bool exact = r.kind == config::SteeringKind::exact;
      (exact ? has_exact : has_dst_any) = true;
      if (r.dscp) (exact ? exact_dscp : dst_any_dscp) = true;
    }
    for (const net::IpAddr& dst : dsts) {
      for (uint32_t qp : {1u, 2u, 3u, 4u, 5u, 6u, 7u, 8u, kAnyQp}) {
        for (uint8_t dscp : {kAnyDscp, uint8_t(10), uint8_t(46)}) {
          const ExactKey k = make_exact_key(dst, qp, dscp);
          const auto* b = reinterpret_cast<const char*>(&k);
          auto it = want.find(std::string(b, sizeof k));
          const std::string expected = it == want.end() ? "" : it->second;
          ASSERT_EQ(table_name(*rt_, k), expected) << "step " << step;
          ASSERT_EQ(table_name(*full, k), expected) << "step " << step;
        }
        if (qp == kAnyQp) continue;
        for (uint8_t dscp : {uint8_t(0), uint8_t(10), uint8_t(46)}) {
          net::PacketInfo info;
          info.dst = dst;
          info.family = dst.family;
          info.bth.dest_qp = qp;
          info.dscp = dscp;
          const uint32_t a = steer(rt_->view()->steering, info);
          const uint32_t f = steer(full->view()->steering, info);
          ASSERT_EQ(a == kNoSlot ? "" : rt_->policy(a)->name,
                    f == kNoSlot ? "" : full->policy(f)->name)
              << "step " << step;
        }
      }
    }
    ASSERT_TRUE(stats_equal(rt_->table_stats(), full->table_stats())) << "step " << step;
    const SteeringView& sv = rt_->view()->steering;
    ASSERT_EQ(sv.has_exact, has_exact) << "step " << step;
    ASSERT_EQ(sv.exact_dscp, exact_dscp) << "step " << step;
    ASSERT_EQ(sv.has_dst_any, has_dst_any) << "step " << step;
    ASSERT_EQ(sv.dst_any_dscp, dst_any_dscp) << "step " << step;
    ASSERT_EQ(sv.has_prefix4, full->view()->steering.has_prefix4);
    ASSERT_EQ(rt_->running_config(), full->running_config());
    ASSERT_EQ(rt_->steering_rule_count(), cfg.steering.size());
    rt_->reclaim();
    full->reclaim();
  }
  std::printf(
      "[ metrics  ] delta vs full: %d batches applied, %d refused by both, %d prefix "
      "changes through the fallback\n",
      applied, refused, fallbacks);
  EXPECT_GT(applied, 100);
  EXPECT_GT(refused, 0);
}

// A delta that does not start from what is installed (a caller out of step) is applied by
// the full path from the configuration itself.
TEST_F(SteeringTest, DeltaOutOfStepFallsBackToTheFullPath) {
  auto cfg = four_policies();
  cfg.steering = {testing::exact_rule("10.1.2.3", 5, "exact")};
  cfg.steering[0].id = 1;
  create(cfg);
  auto next = cfg;
  next.steering.push_back(testing::exact_rule("10.1.2.4", 5, "other"));
  next.steering.back().id = 2;
  config::SteeringRule ghost = testing::exact_rule("10.9.9.9", 9, "exact");  // not installed
  SteeringDelta delta;
  delta.rules.push_back({nullptr, &next.steering[1], 1});
  delta.rules.push_back({&ghost, nullptr, 0});
  delta.rules.push_back({nullptr, &ghost, 0});
  ASSERT_FALSE(rt_->apply_delta(next, delta));
  EXPECT_EQ(steer_name(packet("10.1.2.3", 5)), "exact");
  EXPECT_EQ(steer_name(packet("10.1.2.4", 5)), "other");
  EXPECT_EQ(steer_name(packet("10.9.9.9", 9)), "");
  EXPECT_EQ(rt_->table_stats().exact_entries, 2u);
  EXPECT_EQ(rt_->steering_rule_count(), 2u);
}

// An exact table insert that fails (entries of deleted keys held by a worker that has not
// reported a quiescent state) undoes exactly what the apply did: table entries, updated
// entries, policy objects and the view are as before; the same batch goes through once the
// worker reports. Through apply_delta() and through the full apply().
TEST_F(SteeringTest, FailedInsertUndoesEverything) {
  for (const bool use_delta : {true, false}) {
    SCOPED_TRACE(use_delta ? "delta path" : "full path");
    auto cfg = four_policies();
    cfg.capacities.exact_entries = 64;  // the table holds 80 keys (a quarter of headroom)
    create(cfg);
    auto apply = [&](const config::GatewayConfig& from, const config::GatewayConfig& to) {
      return use_delta ? rt_->apply_delta(to, delta_by_id(from, to)) : rt_->apply(to);
    };
    auto rule = [](uint32_t id, const char* policy) {
      config::SteeringRule r;
      r.id = id;
      r.dst = testing::ip("10.5.0.1");
      r.dest_qp = id;
      r.policy = policy;
      return r;
    };
    auto full64 = cfg;
    for (uint32_t id = 1; id <= 64; ++id) full64.steering.push_back(rule(id, "exact"));
    ASSERT_FALSE(apply(cfg, full64));
    rte_rcu_qsbr_thread_register(qsbr_, 0);
    rte_rcu_qsbr_thread_online(qsbr_, 0);
    // 40 deletes: their key slots wait for the worker.
    auto kept = cfg;
    for (uint32_t id = 41; id <= 64; ++id) kept.steering.push_back(rule(id, "exact"));
    ASSERT_FALSE(apply(full64, kept));
    const CompiledPolicy* exact_before = rt_->policy(*rt_->slot_of("exact"));
    const View* view_before = rt_->view();
    const auto stats_before = rt_->table_stats();

    // 5 re-points, a changed policy, a new policy and 30 new keys: 16 fit, the 17th fails.
    auto next = kept;
    for (size_t i = 0; i < 5; ++i) next.steering[i].policy = "other";
    next.policies[0].segment_lists[0].sids[0] = testing::v6("fc00:99::1");
    next.policies.push_back(next.policies[5]);
    next.policies.back().name = "fresh";
    next.policies.back().segment_lists[0].path_id = 99;
    for (uint32_t id = 101; id <= 130; ++id) next.steering.push_back(rule(id, "fresh"));
    auto e = apply(kept, next);
    ASSERT_TRUE(e);
    EXPECT_NE(e->message.find("exact steering table insert failed"), std::string::npos)
        << e->message;
    EXPECT_EQ(rt_->view(), view_before);
    EXPECT_EQ(rt_->policy(*rt_->slot_of("exact")), exact_before);
    EXPECT_FALSE(rt_->slot_of("fresh"));
    EXPECT_TRUE(stats_equal(rt_->table_stats(), stats_before));
    EXPECT_EQ(rt_->steering_rule_count(), kept.steering.size());
    auto running = kept;
    running.steering.clear();
    EXPECT_EQ(rt_->running_config(), running);
    for (uint32_t id = 1; id <= 130; ++id) {
      const ExactKey k = key_of(rule(id, ""));
      EXPECT_EQ(table_name(*rt_, k), id >= 41 && id <= 64 ? "exact" : "") << "id " << id;
    }

    // The worker reports: the deleted keys' slots come back and the same batch applies.
    rte_rcu_qsbr_quiescent(qsbr_, 0);
    rt_->reclaim();
    ASSERT_FALSE(apply(kept, next));
    for (uint32_t id = 1; id <= 130; ++id) {
      const ExactKey k = key_of(rule(id, ""));
      const char* want = id >= 46 && id <= 64   ? "exact"
                         : id >= 41 && id <= 45 ? "other"
                         : id >= 101            ? "fresh"
                                                : "";
      EXPECT_EQ(table_name(*rt_, k), want) << "id " << id;
    }
    EXPECT_EQ(rt_->table_stats().exact_entries, 54u);
    rte_rcu_qsbr_thread_offline(qsbr_, 0);
    rte_rcu_qsbr_thread_unregister(qsbr_, 0);
    rt_.reset();
  }
}

// What the delta path is for: a few changes, or 100k, on a million installed entries cost
// the changes, not the table (the full path walks every rule). Times are printed, not
// asserted (shared machine); the entries are checked.
TEST_F(SteeringTest, DeltaOnAMillionEntriesCostsTheChanges) {
  constexpr uint32_t kEntries = 1'000'000, kBatch = 100'000;
  auto cfg = four_policies();
  cfg.capacities.exact_entries = kEntries + kBatch;
  create(cfg);
  auto rule = [](uint32_t id, const char* policy) {
    config::SteeringRule r;
    r.id = id;
    r.dst.family = net::Family::ipv4;
    r.dst.bytes[0] = 10;
    r.dst.bytes[1] = uint8_t(id >> 16);
    r.dst.bytes[2] = uint8_t(id >> 8);
    r.dst.bytes[3] = uint8_t(id);
    r.dest_qp = 1 + (id >> 24);
    r.policy = policy;
    return r;
  };
  cfg.steering.reserve(kEntries + kBatch);
  for (uint32_t id = 1; id <= kEntries; ++id) cfg.steering.push_back(rule(id, "exact"));
  ASSERT_FALSE(rt_->apply(cfg));
  auto ms_since = [](auto t) {
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t).count();
  };

  // 3 changes: a re-point, a new rule, a delete (the last rule takes the deleted one's place).
  auto next = cfg;
  next.steering[0].policy = "other";
  next.steering.push_back(rule(kEntries + 1, "other"));
  const size_t del = kEntries / 2;
  next.steering[del] = next.steering.back();
  next.steering.pop_back();
  SteeringDelta three;
  three.rules = {{&cfg.steering[0], &next.steering[0], 0},
                 {nullptr, &next.steering[del], del},
                 {&cfg.steering[del], nullptr, 0}};
  auto t = std::chrono::steady_clock::now();
  ASSERT_FALSE(rt_->apply_delta(next, three));
  const double three_delta_ms = ms_since(t);
  EXPECT_EQ(table_name(*rt_, key_of(rule(1, ""))), "other");
  EXPECT_EQ(table_name(*rt_, key_of(rule(kEntries + 1, ""))), "other");
  EXPECT_EQ(table_name(*rt_, key_of(rule(uint32_t(del + 1), ""))), "");
  EXPECT_EQ(table_name(*rt_, key_of(rule(2, ""))), "exact");
  EXPECT_EQ(rt_->table_stats().exact_entries, kEntries);
  // The same 3 changes back through the full path.
  t = std::chrono::steady_clock::now();
  ASSERT_FALSE(rt_->apply_validated(cfg));
  const double three_full_ms = ms_since(t);
  EXPECT_EQ(table_name(*rt_, key_of(rule(1, ""))), "exact");
  EXPECT_EQ(table_name(*rt_, key_of(rule(uint32_t(del + 1), ""))), "exact");
  EXPECT_EQ(table_name(*rt_, key_of(rule(kEntries + 1, ""))), "");
  rt_->reclaim();

  // 100k: half re-points, half new rules.
  next = cfg;
  SteeringDelta big;
  big.rules.reserve(kBatch);
  for (uint32_t k = 0; k < kBatch / 2; ++k) next.steering[k].policy = "other";
  for (uint32_t k = 0; k < kBatch / 2; ++k) next.steering.push_back(rule(kEntries + 1 + k, "dscp"));
  for (uint32_t k = 0; k < kBatch / 2; ++k)
    big.rules.push_back({&cfg.steering[k], &next.steering[k], k});
  for (uint32_t k = 0; k < kBatch / 2; ++k)
    big.rules.push_back({nullptr, &next.steering[kEntries + k], kEntries + k});
  t = std::chrono::steady_clock::now();
  ASSERT_FALSE(rt_->apply_delta(next, big));
  const double big_delta_ms = ms_since(t);
  uint64_t mismatches = 0;
  for (uint32_t id = 1; id <= kEntries + kBatch / 2; id += 97)
    mismatches += table_name(*rt_, key_of(rule(id, ""))) != (id <= kBatch / 2 ? "other"
                                                             : id <= kEntries ? "exact"
                                                                              : "dscp");
  EXPECT_EQ(mismatches, 0u);
  EXPECT_EQ(rt_->table_stats().exact_entries, kEntries + kBatch / 2);
  EXPECT_EQ(rt_->steering_rule_count(), kEntries + kBatch / 2);
  std::printf(
      "[ metrics  ] on 1M exact entries: 3 changes %.2f ms by apply_delta, %.0f ms by the "
      "full path; 50k re-points + 50k new rules by apply_delta %.0f ms\n",
      three_delta_ms, three_full_ms, big_delta_ms);
  RecordProperty("three_changes_delta_us", int(three_delta_ms * 1000));
  RecordProperty("three_changes_full_ms", int(three_full_ms));
  RecordProperty("batch_100k_delta_ms", int(big_delta_ms));
}

TEST_F(SteeringTest, MillionExactEntries) {
  constexpr uint32_t kEntries = 1'000'000;
  auto cfg = four_policies();
  cfg.capacities.exact_entries = kEntries;
  rte_malloc_socket_stats before{};
  rte_malloc_get_socket_stats(0, &before);
  create(cfg);
  rte_malloc_socket_stats created{};
  rte_malloc_get_socket_stats(0, &created);

  // 1000 destinations x 1000 QPs.
  auto dst_of = [](uint32_t i) {
    net::IpAddr a;
    a.family = net::Family::ipv4;
    a.bytes[0] = 10;
    a.bytes[1] = 100;
    a.bytes[2] = uint8_t(i >> 8);
    a.bytes[3] = uint8_t(i);
    return a;
  };
  cfg.steering.reserve(kEntries);
  for (uint32_t d = 0; d < 1000; ++d) {
    for (uint32_t q = 0; q < 1000; ++q) {
      config::SteeringRule r;
      r.kind = config::SteeringKind::exact;
      r.dst = dst_of(d);
      r.dest_qp = q * 17;
      r.policy = (d + q) % 2 ? "exact" : "other";
      cfg.steering.push_back(std::move(r));
    }
  }
  auto t0 = std::chrono::steady_clock::now();
  auto err = rt_->apply(cfg);
  auto t1 = std::chrono::steady_clock::now();
  ASSERT_FALSE(err) << err->path << ": " << err->message;
  rte_malloc_socket_stats filled{};
  rte_malloc_get_socket_stats(0, &filled);

  const uint32_t exact_slot = *rt_->slot_of("exact"), other_slot = *rt_->slot_of("other");
  const View* v = rt_->view();
  uint64_t mismatches = 0;
  auto t2 = std::chrono::steady_clock::now();
  for (uint32_t d = 0; d < 1000; ++d) {
    for (uint32_t q = 0; q < 1000; ++q) {
      net::PacketInfo info;
      info.family = net::Family::ipv4;
      info.dst = dst_of(d);
      info.bth.dest_qp = q * 17;
      const uint32_t want = (d + q) % 2 ? exact_slot : other_slot;
      mismatches += steer(v->steering, info) != want;
    }
  }
  auto t3 = std::chrono::steady_clock::now();
  EXPECT_EQ(mismatches, 0u);
  net::PacketInfo miss;
  miss.family = net::Family::ipv4;
  miss.dst = dst_of(5);
  miss.bth.dest_qp = 18;  // not a multiple of 17
  EXPECT_EQ(steer(v->steering, miss), kNoSlot);

  // Delete every other destination (half a million deletes) and update the rest.
  auto half = cfg;
  half.steering.clear();
  for (const config::SteeringRule& r : cfg.steering) {
    if (r.dst.bytes[3] % 2) continue;
    half.steering.push_back(r);
    half.steering.back().policy = "range";
  }
  auto t4 = std::chrono::steady_clock::now();
  err = rt_->apply(half);
  auto t5 = std::chrono::steady_clock::now();
  ASSERT_FALSE(err) << err->message;
  const uint32_t range_slot = *rt_->slot_of("range");
  v = rt_->view();
  mismatches = 0;
  for (uint32_t d = 0; d < 1000; ++d) {
    for (uint32_t q = 0; q < 1000; q += 7) {
      net::PacketInfo info;
      info.family = net::Family::ipv4;
      info.dst = dst_of(d);
      info.bth.dest_qp = q * 17;
      mismatches += steer(v->steering, info) != (d % 2 ? kNoSlot : range_slot);
    }
  }
  EXPECT_EQ(mismatches, 0u);
  EXPECT_EQ(rt_->table_stats().exact_entries, kEntries / 2);

  const double ms = [](auto a, auto b) {
    return std::chrono::duration<double, std::milli>(b - a).count();
  }(t0, t1);
  const double lookup_ns = std::chrono::duration<double, std::nano>(t3 - t2).count() / kEntries;
  const double delete_ms = std::chrono::duration<double, std::milli>(t5 - t4).count();
  const double table_mb = double(created.heap_allocsz_bytes - before.heap_allocsz_bytes) / 1e6;
  const double filled_mb = double(filled.heap_allocsz_bytes - before.heap_allocsz_bytes) / 1e6;
  std::printf(
      "[ metrics  ] 1M exact entries: apply (validate+insert) %.0f ms, lookup %.1f ns/packet, "
      "apply with 500k deletes + 500k updates %.0f ms; DPDK memory: tables %.1f MB at "
      "create, %.1f MB filled\n",
      ms, lookup_ns, delete_ms, table_mb, filled_mb);
  RecordProperty("apply_1m_ms", int(ms));
  RecordProperty("lookup_ns", int(lookup_ns));
  RecordProperty("dpdk_table_mb", int(filled_mb));
}

}  // namespace
}  // namespace srv6gw::policy
