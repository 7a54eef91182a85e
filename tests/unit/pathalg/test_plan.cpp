// SPDX-License-Identifier: BSD-3-Clause
// Plans: accepted by the gateway's own validate(), capacity weights, stable path ids, pins,
// link-change recomputation against full recomputation, the Apply adapter.
#include <google/protobuf/util/json_util.h>
#include <google/protobuf/util/message_differencer.h>
#include <gtest/gtest.h>

#include <map>

#include "brute.hpp"
#include "config/model.hpp"
#include "config/validate.hpp"
#include "pathalg/apply.hpp"
#include "pathalg/plan.hpp"

using namespace srv6gw;
using namespace srv6gw::pathalg;
using pathalg_test::fat;
using pathalg_test::named;
using pathalg_test::spec;

namespace {

// The gateway configuration a plan makes, as srv6gw would hold it after the Apply.
config::GatewayConfig gateway_config(const Topology& t, const GatewayPlan& plan) {
  config::GatewayConfig cfg;
  cfg.host_port.device = "0";
  cfg.fabric_port.device = "1";
  cfg.source = t.node(plan.gateway).gateway.source;
  cfg.fabric_nexthop_mac = net::MacAddr{{2, 0, 0, 0, 0, 1}};
  cfg.capacities.policies = 4096;
  cfg.policies = plan.policies;
  cfg.steering = plan.steering;
  cfg.local_sids = plan.local_sids;
  return cfg;
}

std::map<std::string, uint16_t> ids_of(const GatewayPlan& p) {
  std::map<std::string, uint16_t> m;
  for (const auto& pol : p.policies) {
    for (const auto& sl : pol.segment_lists) m[pol.name + "/" + sl.name] = sl.path_id;
  }
  return m;
}

const config::Policy* find_policy(const GatewayPlan& p, std::string_view name) {
  for (const auto& pol : p.policies) {
    if (pol.name == name) return &pol;
  }
  return nullptr;
}

LinkId link(const Topology& t, const char* a, const char* b) {
  return *t.find_link(*t.find_node(a), *t.find_node(b));
}

}  // namespace

TEST(Plan, EveryModeIsAcceptedByTheGatewayValidation) {
  const Topology t = make_leaf_spine({});
  for (auto mode : {srv6::EncapMode::encaps, srv6::EncapMode::encaps_red, srv6::EncapMode::usid}) {
    for (auto style : {SidStyle::minimal, SidStyle::every_switch}) {
      PlanOptions opt;
      opt.segments.encap = mode;
      opt.segments.style = style;
      Planner planner(t, opt);
      // Pin a few flows of h0 so pinned policies and exact rules are validated too.
      std::vector<Flow> flows;
      for (uint32_t qp = 1; qp <= 40; ++qp) {
        flows.push_back({t.hosts()[0], t.hosts()[16 + qp % 100], qp, 1000u * qp});
      }
      const Placement pl = place(planner.paths(), flows);
      planner.set_pins(pins_from(planner.paths(), flows, pl));
      const GatewayPlan plan = planner.plan(t.hosts()[0]);
      EXPECT_TRUE(plan.unreachable.empty());
      EXPECT_EQ(plan.steering.size(), 127u + 40u);
      const auto err = config::validate(gateway_config(t, plan));
      EXPECT_FALSE(err) << srv6::to_string(mode) << ": " << err->path << ": " << err->message;
    }
  }
}

TEST(Plan, WeightsFollowBottleneckCapacity) {
  Topology t = make_leaf_spine(spec(2, 4, 1, 2));
  t.apply({link(t, "leaf1", "spine2"), LinkState::up, 1, std::nullopt});  // half of its LAG
  t.apply({link(t, "leaf0", "spine3"), LinkState::down, 2, std::nullopt});
  GatewayBooks books;
  PathCache cache(t);
  const GatewayPlan plan = plan_gateway(cache, t.hosts()[0], {}, books);
  const config::Policy* p = find_policy(plan, "to-h1");
  ASSERT_TRUE(p);
  std::map<std::string, uint32_t> w;
  for (const auto& sl : p->segment_lists) {
    if (!sl.backup) w[sl.name] = sl.weight;
  }
  EXPECT_EQ(w, (std::map<std::string, uint32_t>{
                   {"spine0", 2}, {"spine1", 2}, {"spine2", 1}, {"spine3", 0}}));
  PlanOptions drop;
  drop.keep_down_paths = false;
  GatewayBooks books2;
  const GatewayPlan without = plan_gateway(cache, t.hosts()[0], drop, books2);
  for (const auto& sl : find_policy(without, "to-h1")->segment_lists) {
    EXPECT_NE(sl.name, "spine3");
  }
}

TEST(Plan, CapacityWeightsReduceByCommonDivisor) {
  Topology t = make_leaf_spine(spec(2, 3, 1, 4, 100000, 400000));
  t.apply({link(t, "leaf0", "spine1"), LinkState::up, 2, std::nullopt});
  t.apply({link(t, "leaf1", "spine2"), LinkState::up, 4, 300000});
  PathCache cache(t);
  EXPECT_EQ(capacity_weights(t, cache.between(t.hosts()[0], t.hosts()[1])),
            (std::vector<uint32_t>{4, 2, 3}));
}

TEST(Plan, IdBookKeepsIdsAndReusesTheLowestFree) {
  IdBook b(1, 5);
  EXPECT_EQ(b.id("a"), 1u);
  EXPECT_EQ(b.id("b"), 2u);
  EXPECT_EQ(b.id("c"), 3u);
  EXPECT_EQ(b.id("a"), 1u);
  b.release("b");
  EXPECT_EQ(b.id("d"), 2u);
  EXPECT_EQ(b.id("e"), 4u);
  EXPECT_EQ(b.id("f"), 5u);
  EXPECT_FALSE(b.id("g"));
  EXPECT_EQ(b.find("c"), 3u);
}

// update_links must report exactly what recomputing every gateway in full would change, and
// every path must keep its id.
TEST(Plan, LinkChangesEqualFullRecomputationAndKeepIds) {
  const Topology base = make_leaf_spine(spec(4, 3, 2, 2));
  PlanOptions opt;
  Planner planner(base, opt);
  std::vector<Flow> flows;
  for (uint32_t i = 0; i < 30; ++i) {
    flows.push_back({base.hosts()[i % 8], base.hosts()[(i * 3 + 1) % 8], 100 + i, 1000u + i});
  }
  flows.erase(
      std::remove_if(flows.begin(), flows.end(), [](const Flow& f) { return f.src == f.dst; }),
      flows.end());
  planner.set_pins(pins_from(planner.paths(), flows, place(planner.paths(), flows)));
  const std::vector<std::vector<LinkChange>> steps = {
      {{link(base, "leaf0", "spine1"), LinkState::up, 1, std::nullopt}},
      {{link(base, "leaf2", "spine0"), LinkState::down, 2, std::nullopt}},
      {{link(base, "h3", "leaf1"), LinkState::down, 1, std::nullopt}},
      {{link(base, "leaf0", "spine1"), LinkState::up, 2, std::nullopt},
       {link(base, "leaf2", "spine0"), LinkState::up, 2, std::nullopt}},
      {{link(base, "leaf3", "spine2"), LinkState::up, 2, std::nullopt}},  // no change
  };
  std::map<NodeId, GatewayPlan> before;
  for (NodeId g : base.hosts()) before[g] = planner.plan(g);
  for (size_t s = 0; s < steps.size(); ++s) {
    SCOPED_TRACE("step " + std::to_string(s));
    std::vector<GatewayChange> changes;
    ASSERT_TRUE(planner.update_links(steps[s], changes));
    std::map<NodeId, PlanDiff> reported;
    for (auto& c : changes) reported[c.gateway] = c.diff;
    for (NodeId g : base.hosts()) {
      const GatewayPlan after = planner.plan(g);
      const PlanDiff expected = diff(before[g], after);
      auto it = reported.find(g);
      if (expected.empty()) {
        EXPECT_TRUE(it == reported.end()) << base.node(g).name << " reported without change";
      } else {
        ASSERT_TRUE(it != reported.end()) << base.node(g).name << " change not reported";
        const auto& r = it->second;
        EXPECT_EQ(r.upsert_policies, expected.upsert_policies);
        EXPECT_EQ(r.delete_policies, expected.delete_policies);
        EXPECT_EQ(r.upsert_rules, expected.upsert_rules);
        EXPECT_EQ(r.delete_rules, expected.delete_rules);
      }
      // Ids: every segment list present before and after has the same id.
      const auto old_ids = ids_of(before[g]), new_ids = ids_of(after);
      for (const auto& [k, id] : new_ids) {
        auto o = old_ids.find(k);
        if (o != old_ids.end()) {
          EXPECT_EQ(o->second, id) << k;
        }
      }
      before[g] = after;
    }
    if (s == 4) {
      EXPECT_TRUE(changes.empty());
    }
    if (s == 0) {
      EXPECT_FALSE(changes.empty());
    }
  }
}

TEST(Plan, PinnedFlowFallsBackWhenItsPathGoesDown) {
  const Topology base = make_leaf_spine(spec(2, 2, 1));
  Planner planner(base, {});
  const NodeId h0 = base.hosts()[0], h1 = base.hosts()[1];
  const PathList paths = planner.paths().between(h0, h1);
  Pin pin{h0, h1, 4660, {paths.nodes(1).begin(), paths.nodes(1).end()}};  // via spine1
  planner.set_pins({pin});
  const GatewayPlan plan = planner.plan(h0);
  const config::Policy* pinned = find_policy(plan, "to-h1:spine1");
  ASSERT_TRUE(pinned);
  ASSERT_EQ(pinned->segment_lists.size(), 2u);
  EXPECT_FALSE(pinned->segment_lists[0].backup);
  EXPECT_EQ(pinned->segment_lists[0].name, "spine1");
  EXPECT_TRUE(pinned->segment_lists[1].backup);
  const config::SteeringRule* exact = nullptr;
  for (const auto& r : plan.steering) {
    if (r.kind == config::SteeringKind::exact) exact = &r;
  }
  ASSERT_TRUE(exact);
  EXPECT_EQ(exact->dest_qp, 4660u);
  EXPECT_EQ(exact->policy, "to-h1:spine1");
  EXPECT_GE(exact->id, kPinnedRuleBase);

  std::vector<GatewayChange> changes;
  ASSERT_TRUE(planner.update_links(
      std::vector<LinkChange>{{link(base, "leaf1", "spine1"), LinkState::down, 1, std::nullopt}},
      changes));
  const PlanDiff* d = nullptr;
  for (const auto& c : changes) {
    if (c.gateway == h0) d = &c.diff;
  }
  ASSERT_TRUE(d);
  EXPECT_EQ(d->delete_policies, std::vector<std::string>{"to-h1:spine1"});
  ASSERT_EQ(d->upsert_rules.size(), 1u);
  EXPECT_EQ(d->upsert_rules[0].policy, "to-h1");
  EXPECT_EQ(d->upsert_rules[0].id, exact->id);
}

TEST(Plan, GatewaysUsingALink) {
  const Topology t = make_leaf_spine(spec(3, 2, 2));
  Planner planner(t, {});
  // leaf0--spine0 carries paths from leaf0's hosts and toward them: every gateway.
  EXPECT_EQ(planner.gateways_using(link(t, "leaf0", "spine0")).size(), 6u);
  EXPECT_EQ(planner.gateways_using(link(t, "h0", "leaf0")).size(), 6u);
}

TEST(Apply, RequestsCarryEveryChangeInOrderAndSplit) {
  const Topology t = make_leaf_spine({});
  GatewayBooks books;
  PathCache cache(t);
  const GatewayPlan plan = plan_gateway(cache, t.hosts()[5], {}, books);
  const PlanDiff d = full(plan);
  const v1::ApplyRequest one = to_apply(d);
  ASSERT_EQ(size_t(one.changes_size()), d.size());
  EXPECT_TRUE(one.changes(0).has_upsert_local_sid());
  EXPECT_TRUE(one.changes(one.changes_size() - 1).has_upsert_steering());

  const auto parts = to_apply_split(d, 20000);
  ASSERT_GT(parts.size(), 3u);
  v1::ApplyRequest joined;
  for (const auto& p : parts) {
    EXPECT_LE(p.ByteSizeLong(), 20000u);
    for (const auto& c : p.changes()) *joined.add_changes() = c;
  }
  EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals(joined, one));

  // The JSON is what srv6gw-ctl apply -f parses.
  v1::ApplyRequest back;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(to_json(one), &back).ok());
  EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals(back, one));
}
