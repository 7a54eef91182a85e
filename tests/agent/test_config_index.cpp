// SPDX-License-Identifier: BSD-3-Clause
// Incremental validation (ConfigIndex: only the changed objects, against indexes of the
// running configuration) must accept and refuse exactly the batches that config::validate()
// over the whole result does (the file loader's check). Random batches drawn from small
// pools of names, ids, addresses, QPs, path ids and SIDs, so that they collide often: every
// cross-object rule (duplicate matches, path ids, SIDs vs local SIDs, unknown and deleted
// policies, overlapping QP ranges, capacities) is hit many times. Accepted batches are
// committed and the next batch starts from the result, so the indexes are also checked after
// thousands of incremental commits.
#include <gtest/gtest.h>

#include <cstdio>
#include <random>

#include "agent/batch.hpp"
#include "agent_test_util.hpp"
#include "config/config_index.hpp"

using namespace srv6gw;
using namespace srv6gw::agent;

namespace {

class BatchGen {
 public:
  explicit BatchGen(uint32_t seed) : rng_(seed) {}

  int pick(int n) { return std::uniform_int_distribution<int>(0, n - 1)(rng_); }
  bool chance(int percent) { return pick(100) < percent; }

  std::string policy_name() { return "p" + std::to_string(pick(6)); }
  std::string sid() {
    // A few SIDs shared by policies and local SIDs; rarely an invalid one.
    if (chance(2)) return "ff02::1";
    return "fc00:0:" + std::to_string(pick(8) + 1) + "::e";
  }
  std::string dst4() { return "10.0.0." + std::to_string(pick(6)); }
  std::string dst6() { return "fd00::" + std::to_string(pick(4) + 1); }

  v1::SrPolicy policy() {
    v1::SrPolicy p;
    p.set_name(policy_name());
    p.set_color(uint32_t(pick(3)));
    const int lists = 1 + pick(3);
    for (int i = 0; i < lists; ++i) {
      auto* sl = p.add_segment_lists();
      sl->set_name("sl" + std::to_string(chance(5) ? 0 : i));
      sl->set_path_id(uint32_t(pick(12)) + (chance(2) ? 40000u : 0u));
      sl->set_weight(chance(10) ? 0 : uint32_t(1 + pick(3)));
      sl->set_backup(chance(10));
      const int sids = 1 + pick(3);
      for (int k = 0; k < sids; ++k) sl->add_sids(sid());
    }
    return p;
  }

  v1::SteeringRule rule() {
    v1::SteeringRule r;
    r.set_id(uint32_t(1 + pick(20)));
    switch (pick(6)) {
      case 0:
      case 1:
        r.mutable_exact()->set_destination(chance(20) ? dst6() : dst4());
        r.mutable_exact()->set_dest_qp(uint32_t(pick(4)) + (chance(2) ? 0x1000000u : 0u));
        break;
      case 2:
        r.set_destination(dst4());
        break;
      case 3: {
        const uint32_t low = uint32_t(pick(40));
        r.mutable_qp_range()->set_qp_low(low);
        r.mutable_qp_range()->set_qp_high(low + uint32_t(pick(8)) - (chance(5) ? 9u : 0u));
        if (chance(50)) r.mutable_qp_range()->set_destination(dst4());
        break;
      }
      case 4:
        r.set_prefix("10." + std::to_string(pick(3)) + ".0.0/" + (chance(5) ? "8" : "16"));
        break;
      default:
        r.set_prefix(chance(50) ? "fd00:" + std::to_string(pick(3)) + "::/32" : "0.0.0.0/0");
        break;
    }
    if (chance(30)) r.set_dscp(uint32_t(pick(3)) + (chance(3) ? 64u : 0u));
    r.set_policy(chance(3) ? "nope" : policy_name());
    return r;
  }

  v1::ApplyRequest batch(const config::GatewayConfig& running) {
    v1::ApplyRequest req;
    const int n = 1 + pick(6);
    for (int i = 0; i < n; ++i) {
      v1::Change* c = req.add_changes();
      const int kind = pick(100);
      if (kind < 20) {
        *c->mutable_upsert_policy() = policy();
      } else if (kind < 28) {
        // Mostly policies that exist, so that deletes get through to the validation.
        if (!running.policies.empty() && chance(80))
          c->set_delete_policy(running.policies[size_t(pick(int(running.policies.size())))].name);
        else
          c->set_delete_policy(policy_name());
      } else if (kind < 75) {
        *c->mutable_upsert_steering() = rule();
      } else if (kind < 85) {
        if (!running.steering.empty() && chance(80))
          c->set_delete_steering(running.steering[size_t(pick(int(running.steering.size())))].id);
        else
          c->set_delete_steering(uint32_t(1 + pick(20)));
      } else if (kind < 95) {
        auto* ls = c->mutable_upsert_local_sid();
        ls->set_sid(sid());
        ls->set_behavior(chance(50) ? v1::LOCAL_SID_BEHAVIOR_END_DX4
                                    : v1::LOCAL_SID_BEHAVIOR_END_DT46);
      } else {
        c->set_delete_local_sid(running.local_sids.empty() || chance(20)
                                    ? sid()
                                    : net::to_string(running.local_sids[0].sid));
      }
    }
    return req;
  }

 private:
  std::mt19937 rng_;
};

config::GatewayConfig small_capacities() {
  config::GatewayConfig cfg = test::base_config();
  cfg.capacities.exact_entries = 12;
  cfg.capacities.lpm4_rules = 4;
  cfg.capacities.lpm6_rules = 2;
  cfg.capacities.qp_ranges = 5;
  cfg.capacities.policies = 5;
  cfg.capacities.local_sids = 3;
  cfg.capacities.max_sids = 2;
  return cfg;
}

}  // namespace

TEST(ConfigIndex, RandomBatchesAreJudgedLikeFullValidation) {
  unsigned accepted = 0, refused = 0, not_found = 0;
  for (uint32_t seed = 1; seed <= 8; ++seed) {
    BatchGen gen(seed);
    auto state = make_state(small_capacities(), 0);
    config::ConfigIndex index(state->config);
    // As the agent does: the previous state and the changes it is behind by.
    std::shared_ptr<AgentState> spare;
    Changeset behind;
    for (int round = 0; round < 1500; ++round) {
      const v1::ApplyRequest req = gen.batch(state->config);
      Batch incremental(*state, index, req.changes());
      Batch full(*state, index, req.changes());
      const auto inc_error = incremental.run(Validation::incremental);
      const auto full_error = full.run(Validation::full);
      ASSERT_EQ(inc_error.has_value(), full_error.has_value())
          << "seed " << seed << " round " << round << "\nbatch: " << req.DebugString()
          << "\nincremental: " << (inc_error ? inc_error->message : "accepted")
          << "\nfull: " << (full_error ? full_error->message : "accepted");
      if (inc_error) {
        ASSERT_EQ(inc_error->code, full_error->code) << inc_error->message;
        // Both name a change or the configuration: never an empty refusal.
        EXPECT_FALSE(inc_error->message.empty());
        (inc_error->code == BatchCode::not_found ? not_found : refused) += 1;
        continue;
      }
      ++accepted;
      std::shared_ptr<AgentState> next;
      if (spare) {
        // Brought up to date, the spare equals the running state, rule order included.
        apply_changeset(behind, *spare);
        ASSERT_TRUE(spare->config == state->config) << "seed " << seed << " round " << round;
        ASSERT_EQ(spare->steering_index->position, state->steering_index->position);
        next = std::move(spare);
      } else {
        next = copy_state(*state);
      }
      apply_changeset(incremental.changeset(), *next);
      ASSERT_EQ(config::validate(next->config), std::nullopt);
      for (size_t k = 0; k < next->config.steering.size(); ++k)
        ASSERT_EQ(next->steering_index->position.at(next->config.steering[k].id), k);
      next->generation = state->generation + 1;
      index.commit(incremental.delta());
      behind = incremental.take_changeset();
      spare = std::move(state);
      state = std::move(next);
    }
    // The index after all those commits describes the same configuration as one built
    // from scratch: both judge a probe batch alike (checked above every round), and the
    // rule count matches.
    EXPECT_EQ(index.rule_count(), state->config.steering.size());
  }
  std::printf("accepted %u, refused %u, not found %u\n", accepted, refused, not_found);
  // The pools are tuned so that both outcomes are frequent; a generator that only produces
  // refusals (or only acceptances) would prove nothing.
  EXPECT_GT(accepted, 1000u);
  EXPECT_GT(refused, 1000u);
}

// Single faults on a valid configuration: the incremental refusal names the same node as
// config::validate() for each cross-object class.
TEST(ConfigIndex, CrossObjectRefusalsNameTheSameNode) {
  config::GatewayConfig cfg = test::base_config();
  cfg.capacities.qp_ranges = 8;
  auto state = make_state(cfg, 0);
  config::ConfigIndex index(state->config);
  {
    v1::ApplyRequest setup;
    *setup.add_changes()->mutable_upsert_steering() = test::exact_rule(5, "10.0.0.1", 7, "base");
    auto* r = setup.add_changes()->mutable_upsert_steering();
    r->set_id(6);
    r->mutable_qp_range()->set_qp_low(100);
    r->mutable_qp_range()->set_qp_high(199);
    r->set_policy("base");
    setup.add_changes()->mutable_upsert_local_sid()->set_sid("fc00:0:1::d4");
    Batch b(*state, index, setup.changes());
    ASSERT_EQ(b.run(), std::nullopt);
    auto next = copy_state(*state);
    apply_changeset(b.changeset(), *next);
    index.commit(b.delta());
    state = std::move(next);
  }
  auto both = [&](const v1::ApplyRequest& req) {
    Batch inc(*state, index, req.changes());
    Batch full(*state, index, req.changes());
    auto a = inc.run(Validation::incremental);
    auto b = full.run(Validation::full);
    EXPECT_TRUE(a && b);
    if (a && b) {
      EXPECT_EQ(a->message, b->message);
    }
  };
  v1::ApplyRequest dup_match;
  *dup_match.add_changes()->mutable_upsert_steering() = test::exact_rule(9, "10.0.0.1", 7, "base");
  both(dup_match);
  v1::ApplyRequest overlap;
  auto* r = overlap.add_changes()->mutable_upsert_steering();
  r->set_id(10);
  r->mutable_qp_range()->set_qp_low(150);
  r->mutable_qp_range()->set_qp_high(300);
  r->set_policy("base");
  both(overlap);
  v1::ApplyRequest path_id;
  *path_id.add_changes()->mutable_upsert_policy() = test::make_policy("p2", 1, 1);
  both(path_id);
  v1::ApplyRequest unknown;
  *unknown.add_changes()->mutable_upsert_steering() = test::exact_rule(11, "10.0.0.2", 7, "zz");
  both(unknown);
  v1::ApplyRequest in_use;
  in_use.add_changes()->set_delete_policy("base");
  both(in_use);
  v1::ApplyRequest sid_clash;
  auto* ls = sid_clash.add_changes()->mutable_upsert_local_sid();
  ls->set_sid("fc00:0:101::e");
  both(sid_clash);
}

// The incremental check knows each rail's local SIDs (read from the running configuration)
// and a policy's rail scope, and judges like full validation: an end-probe SID of a rail
// serves a probed policy, a rail's SID may not be added to the shared list or be a SID of a
// policy, and a policy naming an unknown rail is refused at its `rails` leaf.
TEST(ConfigIndex, KnowsRailSidsAndPolicyRailScope) {
  config::GatewayConfig cfg = test::two_rails_config();
  cfg.rails[1].local_sids.push_back({test::v6("fc00:0:9::e0"), srv6::LocalSidBehavior::end_probe});
  cfg.fabric_nexthop_mac = net::MacAddr{{0x02, 0, 0, 0, 0, 0x99}};
  ASSERT_EQ(config::validate(cfg), std::nullopt);
  auto state = make_state(cfg, 0);
  config::ConfigIndex index(state->config);
  auto judge = [&](const v1::ApplyRequest& req, const char* what) {
    Batch inc(*state, index, req.changes());
    Batch full(*state, index, req.changes());
    auto a = inc.run(Validation::incremental);
    auto b = full.run(Validation::full);
    EXPECT_EQ(a.has_value(), b.has_value()) << what << ": " << (a ? a->message : b->message);
    if (a && b) {
      EXPECT_EQ(a->message, b->message) << what;
    }
    return a ? a->message : std::string();
  };
  v1::ApplyRequest probed;
  v1::SrPolicy p = test::make_policy("probed", 20, 1);
  p.set_probe_sid("fc00:0:2::e0");
  p.add_rails("r1");
  *probed.add_changes()->mutable_upsert_policy() = p;
  EXPECT_EQ(judge(probed, "probed policy, end-probe SID on rail r1"), "");
  v1::ApplyRequest unknown_rail;
  p.add_rails("r7");
  *unknown_rail.add_changes()->mutable_upsert_policy() = p;
  const std::string msg = judge(unknown_rail, "unknown rail");
  EXPECT_NE(msg.find("policy[name='probed']/rails"), std::string::npos) << msg;
  EXPECT_NE(msg.find("unknown rail 'r7'"), std::string::npos) << msg;
  v1::ApplyRequest shared_dup;
  shared_dup.add_changes()->mutable_upsert_local_sid()->set_sid("fc00:0:9::d46");
  EXPECT_NE(judge(shared_dup, "a rail's SID added to the shared list"), "");
  v1::ApplyRequest policy_sid;
  v1::SrPolicy q = test::make_policy("q", 30, 1);
  q.mutable_segment_lists(0)->set_sids(1, "fc00:0:9::d46");
  *policy_sid.add_changes()->mutable_upsert_policy() = q;
  EXPECT_NE(judge(policy_sid, "a rail's SID in a policy"), "");
}
