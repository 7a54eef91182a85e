// SPDX-License-Identifier: BSD-3-Clause
// The controller's reconcile engine against real gateway agents (lib/agent over a fake data
// plane, in-process, on unix sockets): the diff, pushes of only the difference, a stale
// generation re-read and retried, an unreachable gateway backed off while the others proceed
// and brought back when it appears, a refused push reported while the others proceed, a
// restarted gateway brought back. And the diff and link inference alone.
#include <gtest/gtest.h>

#include <thread>

#include "../agent/agent_test_util.hpp"
#include "desired.hpp"
#include "inference.hpp"
#include "reconciler.hpp"

namespace srv6gw::sr_controller {
namespace {

using namespace std::chrono_literals;
using agent::test::FakeSink;
using agent::test::TempDir;

v1::SrPolicy policy(const std::string& name, uint32_t first_path_id, int lists = 2,
                    uint32_t weight = 1) {
  v1::SrPolicy p;
  p.set_name(name);
  p.set_color(1);
  for (int i = 0; i < lists; ++i) {
    auto* sl = p.add_segment_lists();
    sl->set_name("s" + std::to_string(i + 1));
    sl->set_path_id(first_path_id + uint32_t(i));
    if (weight != 1) sl->set_weight(weight);
    sl->add_sids("fc00:5:" + std::to_string(i + 1) + "::e");
    sl->add_sids("fc00:b::d4");
  }
  return p;
}

v1::SteeringRule rule(uint32_t id, const std::string& dst, uint32_t qp, const std::string& pol) {
  v1::SteeringRule r;
  r.set_id(id);
  r.mutable_exact()->set_destination(dst);
  r.mutable_exact()->set_dest_qp(qp);
  r.set_policy(pol);
  return r;
}

v1::LocalSid dx4(const std::string& sid) {
  v1::LocalSid s;
  s.set_sid(sid);
  s.set_behavior(v1::LOCAL_SID_BEHAVIOR_END_DX4);
  return s;
}

GatewayState sample_state(int rules = 3) {
  GatewayState s;
  s.add(policy("toB", 1));
  s.add(dx4("fc00:a::d4"));
  for (int i = 0; i < rules; ++i)
    s.add(rule(uint32_t(10 + i), "10.0.1.1", uint32_t(100 + i), "toB"));
  return s;
}

// ---- diff -----------------------------------------------------------------------------------

TEST(Diff, NormalisedObjectsOfEqualMeaningAreEqual) {
  v1::SrPolicy a = policy("p", 1);
  v1::SrPolicy b = a;
  b.mutable_segment_lists(0)->set_sids(0, "fc00:0005:1:0::E");   // same address, other text
  for (auto& sl : *b.mutable_segment_lists()) sl.set_weight(1);  // default made explicit
  b.mutable_selection()->set_mode(v1::SELECTION_MODE_FLOW);
  b.mutable_selection()->set_flowlet_gap_us(50);
  b.set_encap(v1::ENCAP_MODE_ENCAPS);
  GatewayState x, y;
  x.add(a);
  y.add(b);
  EXPECT_TRUE(x == y);
  EXPECT_TRUE(diff(x, y).empty());
  v1::SteeringRule r1 = rule(1, "10.0.1.1", 5, "p");
  r1.clear_exact();
  r1.set_prefix("10.0.1.7/24");
  v1::SteeringRule r2 = r1;
  r2.set_prefix("10.0.1.0/24");
  x.add(r1);
  y.add(r2);
  EXPECT_TRUE(diff(x, y).empty());
}

TEST(Diff, OnlyTheDifferenceInAReadableOrder) {
  GatewayState running = sample_state(3);
  GatewayState desired = sample_state(3);
  EXPECT_TRUE(diff(desired, running).empty());
  desired.steering.erase(11);                     // delete rule 11
  desired.add(rule(12, "10.0.1.1", 999, "toB"));  // change rule 12
  desired.add(rule(20, "10.0.1.2", 7, "toB"));    // new rule 20
  desired.add(policy("toB", 1, 3));               // policy gains a list
  desired.add(dx4("fc00:a::d6"));                 // new local SID
  auto changes = diff(desired, running);
  ASSERT_EQ(changes.size(), 5u);
  EXPECT_EQ(changes[0].upsert_local_sid().sid(), "fc00:a::d6");
  EXPECT_EQ(changes[1].upsert_policy().segment_lists_size(), 3);
  EXPECT_EQ(changes[2].upsert_steering().id(), 12u);
  EXPECT_EQ(changes[3].upsert_steering().id(), 20u);
  EXPECT_EQ(changes[4].delete_steering(), 11u);
  auto n = count(changes);
  EXPECT_EQ(n.upserts, 4u);
  EXPECT_EQ(n.deletes, 1u);
  // Everything the gateway has beyond the desired state is removed, dependants first.
  auto clear = diff(GatewayState{}, running);
  ASSERT_EQ(clear.size(), 5u);
  EXPECT_TRUE(clear[0].has_delete_steering());
  EXPECT_EQ(clear[3].delete_policy(), "toB");
  EXPECT_EQ(clear[4].delete_local_sid(), "fc00:a::d4");
}

// ---- link inference --------------------------------------------------------------------------

TEST(Inference, TheOnlyLinkNoLivePathCrosses) {
  // gA probes three paths over spines 1..3; the one over spine 1 is down.
  std::vector<ProbedPath> paths = {
      {"gA", 1, {"gA-L1", "L1-S1", "S1-L2", "L2-gB"}, true},
      {"gA", 2, {"gA-L1", "L1-S2", "S2-L2", "L2-gB"}, false},
      {"gA", 3, {"gA-L1", "L1-S3", "S3-L2", "L2-gB"}, false},
  };
  auto inf = infer_failed_links(paths);
  // L1-S1 and S1-L2 cannot be told apart by these probes: both are taken down.
  EXPECT_EQ(inf.down, (std::set<std::string>{"L1-S1", "S1-L2"}));
  EXPECT_TRUE(inf.ambiguous);
  // A path over L1-S1 from a third leaf that still answers clears L1-S1.
  paths.push_back({"gC", 7, {"gC-L3", "L3-S1", "L1-S1", "gA2-L1"}, false});
  inf = infer_failed_links(paths);
  EXPECT_EQ(inf.down, (std::set<std::string>{"S1-L2"}));
  EXPECT_FALSE(inf.ambiguous);
  // Two down paths sharing one link: the shared link explains both.
  std::vector<ProbedPath> two = {
      {"g1", 1, {"a", "x", "b"}, true},
      {"g2", 1, {"c", "x", "d"}, true},
      {"g1", 2, {"a", "y", "b"}, false},
      {"g2", 2, {"c", "y", "d"}, false},
  };
  inf = infer_failed_links(two);
  EXPECT_EQ(inf.down, (std::set<std::string>{"x"}));
  // A down path all of whose links are proven alive is reported, not blamed on a link.
  two.push_back({"g3", 9, {"a", "y"}, true});
  inf = infer_failed_links(two);
  EXPECT_EQ(inf.unexplained, (std::vector<std::string>{"g3/9"}));
  // Nothing down, nothing inferred.
  EXPECT_TRUE(infer_failed_links({{"g", 1, {"a"}, false}}).down.empty());
}

// ---- reconcile against real agents ----------------------------------------------------------

// One gateway agent (srv6gw.v1 over a fake data plane that validates like the Gateway) on a
// unix socket.
struct TestGateway {
  explicit TestGateway(std::string socket) : socket(std::move(socket)) {}
  bool start() {
    sink.running = agent::test::base_config();
    sink.running.policies.clear();
    agent::AgentOptions o;
    o.listen = "unix:" + socket;
    o.state_path.clear();
    std::string err;
    server = agent::Agent::start(o, sink, sink.running, 0, err);
    EXPECT_TRUE(server) << err;
    return bool(server);
  }
  void stop() { server.reset(); }
  GatewayState running() {
    auto ch = grpc::CreateChannel("unix:" + socket, grpc::InsecureChannelCredentials());
    GatewayClient c("t", ch, 5000ms);
    RunningState st;
    EXPECT_TRUE(c.read(st).ok());
    return st.objects;
  }
  std::string socket;
  FakeSink sink;
  std::unique_ptr<agent::Agent> server;
};

std::shared_ptr<grpc::Channel> channel_to(const std::string& name, const std::string& socket) {
  cv1::GatewayEndpoint ep;
  ep.set_name(name);
  ep.set_target("unix:" + socket);
  std::string err;
  auto ch = make_channel(ep, err);
  EXPECT_TRUE(ch) << err;
  return ch;
}

class Reconcile : public ::testing::Test {
 protected:
  ReconcilerOptions fast() {
    ReconcilerOptions o;
    o.concurrency = 2;
    o.call_timeout = 2000ms;
    o.backoff_initial = 50ms;
    o.backoff_max = 400ms;
    o.resync = 0ms;
    return o;
  }
  void observe(const PassOutcome& o) {
    std::lock_guard lock(mutex);
    outcomes.push_back(o);
  }
  std::vector<PassOutcome> seen(const std::string& gw, PassOutcome::Kind k) {
    std::lock_guard lock(mutex);
    std::vector<PassOutcome> out;
    for (auto& o : outcomes) {
      if (o.gateway == gw && o.kind == k) out.push_back(o);
    }
    return out;
  }
  TempDir dir;
  std::mutex mutex;
  std::vector<PassOutcome> outcomes;
};

TEST_F(Reconcile, PushesOnlyTheDifferenceAndIsIdempotent) {
  TestGateway g(dir.file("g1.sock"));
  ASSERT_TRUE(g.start());
  Reconciler r(fast(), [this](const PassOutcome& o) { observe(o); });
  r.add_gateway("g1", channel_to("g1", g.socket));
  auto desired = std::make_shared<GatewayState>(sample_state(3));
  r.set_desired("g1", desired, 1);
  ASSERT_TRUE(r.wait_synced(1, 10s));
  EXPECT_TRUE(g.running() == *desired);  // what the agent lists equals the normalised plan
  auto rep = *r.report("g1");
  EXPECT_EQ(rep.pushes, 1u);
  EXPECT_EQ(rep.changes_pushed, 5u);  // 1 policy, 1 local SID, 3 rules
  EXPECT_EQ(rep.generation, 1u);
  // The same plan again: nothing pushed, the generation stays.
  r.set_desired("g1", desired, 2);
  ASSERT_TRUE(r.wait_synced(2, 10s));
  r.poke("g1");  // read back from the gateway instead of trusting the cache: still nothing
  std::this_thread::sleep_for(200ms);
  ASSERT_TRUE(r.wait_synced(2, 10s));
  rep = *r.report("g1");
  EXPECT_EQ(rep.pushes, 1u);
  EXPECT_EQ(rep.generation, 1u);
  // One rule changes: one change pushed.
  auto next = std::make_shared<GatewayState>(*desired);
  next->add(rule(11, "10.0.1.1", 4242, "toB"));
  r.set_desired("g1", next, 3);
  ASSERT_TRUE(r.wait_synced(3, 10s));
  rep = *r.report("g1");
  EXPECT_EQ(rep.pushes, 2u);
  EXPECT_EQ(rep.changes_pushed, 6u);
  EXPECT_EQ(rep.lag_ms, 0.0);
  EXPECT_TRUE(g.running() == *next);
}

TEST_F(Reconcile, StaleGenerationIsReadAgainAndRetried) {
  TestGateway g(dir.file("g1.sock"));
  ASSERT_TRUE(g.start());
  Reconciler r(fast(), [this](const PassOutcome& o) { observe(o); });
  r.add_gateway("g1", channel_to("g1", g.socket));
  auto desired = std::make_shared<GatewayState>(sample_state(2));
  r.set_desired("g1", desired, 1);
  ASSERT_TRUE(r.wait_synced(1, 10s));
  // Someone else changes the gateway behind the controller's back (generation 1 -> 2).
  {
    auto stub = agent::test::unix_stub("unix:" + g.socket);
    grpc::ClientContext ctx;
    v1::ApplyRequest req;
    *req.add_changes()->mutable_upsert_steering() = rule(77, "10.0.1.9", 1, "toB");
    v1::ApplyResponse resp;
    ASSERT_TRUE(stub->Apply(&ctx, req, &resp).ok());
    ASSERT_EQ(resp.generation(), 2u);
  }
  // The next plan is pushed with expected_generation 1 (what the controller last left):
  // refused, re-read, the foreign rule removed with the new one added.
  auto next = std::make_shared<GatewayState>(*desired);
  next->add(rule(12, "10.0.1.1", 555, "toB"));
  r.set_desired("g1", next, 2);
  ASSERT_TRUE(r.wait_synced(2, 10s));
  auto rep = *r.report("g1");
  EXPECT_GE(rep.stale_retries, 1u);
  EXPECT_EQ(rep.generation, 3u);
  EXPECT_TRUE(g.running() == *next);
  EXPECT_EQ(g.running().steering.count(77), 0u);
}

TEST_F(Reconcile, UnreachableGatewayIsBackedOffAndNeverBlocksTheOthers) {
  TestGateway up(dir.file("up.sock"));
  ASSERT_TRUE(up.start());
  TestGateway late(dir.file("late.sock"));  // not started yet
  Reconciler r(fast(), [this](const PassOutcome& o) { observe(o); });
  r.add_gateway("up", channel_to("up", up.socket));
  r.add_gateway("late", channel_to("late", late.socket));
  auto desired = std::make_shared<GatewayState>(sample_state(2));
  r.set_desired("late", desired, 1);
  r.set_desired("up", desired, 1);
  // The reachable gateway is synced at once.
  const auto t0 = Clock::now();
  for (;;) {
    auto rep = *r.report("up");
    if (rep.in_sync) break;
    ASSERT_LT(Clock::now() - t0, 5s);
    std::this_thread::sleep_for(10ms);
  }
  std::this_thread::sleep_for(1500ms);
  auto failures = seen("late", PassOutcome::Kind::unreachable);
  // 50, 100, 200, 400, 400 ms ...: a handful of attempts in 1.5 s, not hundreds.
  ASSERT_GE(failures.size(), 3u);
  EXPECT_LE(failures.size(), 12u);
  auto rep = *r.report("late");
  EXPECT_FALSE(rep.in_sync);
  EXPECT_FALSE(rep.reachable);
  EXPECT_GT(rep.lag_ms, 1000.0);
  EXPECT_NE(rep.last_error.find("UNAVAILABLE"), std::string::npos) << rep.last_error;
  // It appears: brought to the desired state by the next attempt.
  ASSERT_TRUE(late.start());
  ASSERT_TRUE(r.wait_synced(1, 10s));
  EXPECT_TRUE(late.running() == *desired);
  EXPECT_TRUE(r.report("late")->reachable);
}

TEST_F(Reconcile, RefusedPushIsReportedAndTheOthersProceed) {
  TestGateway good(dir.file("good.sock")), bad(dir.file("bad.sock"));
  ASSERT_TRUE(good.start());
  ASSERT_TRUE(bad.start());
  Reconciler r(fast(), [this](const PassOutcome& o) { observe(o); });
  r.add_gateway("good", channel_to("good", good.socket));
  r.add_gateway("bad", channel_to("bad", bad.socket));
  auto fine = std::make_shared<GatewayState>(sample_state(2));
  auto broken = std::make_shared<GatewayState>(sample_state(2));
  broken->add(rule(50, "10.0.1.1", 1, "no-such-policy"));  // the gateway refuses this
  r.set_desired("bad", broken, 1);
  r.set_desired("good", fine, 1);
  const auto t0 = Clock::now();
  while (seen("bad", PassOutcome::Kind::refused).empty() || !r.report("good")->in_sync) {
    ASSERT_LT(Clock::now() - t0, 10s);
    std::this_thread::sleep_for(10ms);
  }
  auto refused = seen("bad", PassOutcome::Kind::refused);
  EXPECT_EQ(refused[0].code, grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(refused[0].message.find("no-such-policy"), std::string::npos) << refused[0].message;
  auto rep = *r.report("bad");
  EXPECT_FALSE(rep.in_sync);
  EXPECT_EQ(rep.push_failures, 1u);
  EXPECT_TRUE(rep.reachable);
  EXPECT_TRUE(bad.running().policies.empty());  // all or nothing: nothing changed there
  EXPECT_TRUE(good.running() == *fine);
  // Not retried in a loop: the same plan stays refused until a new one comes.
  std::this_thread::sleep_for(500ms);
  EXPECT_EQ(seen("bad", PassOutcome::Kind::refused).size(), 1u);
  // A corrected plan lands.
  r.set_desired("bad", fine, 2);
  r.set_desired("good", fine, 2);
  ASSERT_TRUE(r.wait_synced(2, 10s));
  EXPECT_TRUE(bad.running() == *fine);
}

TEST_F(Reconcile, RestartedGatewayIsBroughtBack) {
  TestGateway g(dir.file("g.sock"));
  ASSERT_TRUE(g.start());
  auto o = fast();
  o.resync = 300ms;  // no event stream here: the periodic read finds the empty gateway
  Reconciler r(o, [this](const PassOutcome& x) { observe(x); });
  r.add_gateway("g", channel_to("g", g.socket));
  auto desired = std::make_shared<GatewayState>(sample_state(4));
  r.set_desired("g", desired, 1);
  ASSERT_TRUE(r.wait_synced(1, 10s));
  // The gateway restarts without its state (no state file): empty, generation 0.
  g.stop();
  ASSERT_TRUE(g.start());
  EXPECT_TRUE(g.running().policies.empty());
  const auto t0 = Clock::now();
  while (!(g.running() == *desired)) {
    ASSERT_LT(Clock::now() - t0, 10s) << "not brought back";
    std::this_thread::sleep_for(50ms);
  }
  EXPECT_EQ(r.report("g")->pushes, 2u);
}

}  // namespace
}  // namespace srv6gw::sr_controller
