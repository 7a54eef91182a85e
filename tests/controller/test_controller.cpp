// SPDX-License-Identifier: BSD-3-Clause
// srv6gw-controller end to end in one process: a lib/pathalg topology (2 leaves x 2 spines x
// 2 hosts per leaf), four real gateway agents (lib/agent over a fake data plane that
// validates like the Gateway) on unix sockets, and the controller: every gateway installed
// from the topology alone; a job's flows pinned and withdrawn; a probe-down on one gateway
// taking the link out on all gateways and a probe-up bringing it back; an operator capacity
// change reweighting; a refusing gateway reported while the others proceed; a restart of the
// controller that keeps its jobs and pushes nothing.
#include <gtest/gtest.h>

#include <thread>

#include "../agent/agent_test_util.hpp"
#include "controller.hpp"
#include "pathalg/topology.hpp"
#include "planner_pathalg.hpp"

namespace srv6gw::sr_controller {
namespace {

using namespace std::chrono_literals;
namespace pa = ::srv6gw::pathalg;

struct TestGateway {
  explicit TestGateway(std::string s) : socket(std::move(s)) {}
  bool start() {
    auto cfg = agent::test::base_config();
    cfg.policies.clear();
    cfg.fabric_nexthop_mac = net::MacAddr{{2, 0, 0, 0, 0, 1}};  // probes need a next hop
    sink.running = cfg;
    agent::AgentOptions o;
    o.listen = "unix:" + socket;
    o.state_path.clear();
    std::string err;
    server = agent::Agent::start(o, sink, cfg, 0, err);
    EXPECT_TRUE(server) << err;
    return bool(server);
  }
  GatewayState running() {
    GatewayClient c("t", grpc::CreateChannel("unix:" + socket, grpc::InsecureChannelCredentials()),
                    5000ms);
    RunningState st;
    EXPECT_TRUE(c.read(st).ok());
    return st.objects;
  }
  uint64_t generation() {
    GatewayClient c("t", grpc::CreateChannel("unix:" + socket, grpc::InsecureChannelCredentials()),
                    5000ms);
    uint64_t g = 0;
    EXPECT_TRUE(c.get_generation(g).ok());
    return g;
  }
  std::string socket;
  agent::test::FakeSink sink;
  std::unique_ptr<agent::Agent> server;
};

pa::Topology small_fabric() {
  pa::LeafSpineSpec spec;
  spec.leaves = 2;
  spec.spines = 2;
  spec.hosts_per_leaf = 2;
  spec.lag_members = 2;
  spec.member_mbps = 100000;
  spec.host_mbps = 100000;
  return pa::make_leaf_spine(spec);
}

class ControllerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (int h = 0; h < 4; ++h) {
      gws.push_back(std::make_unique<TestGateway>(dir.file("h" + std::to_string(h) + ".sock")));
      ASSERT_TRUE(gws.back()->start());
    }
  }

  std::unique_ptr<Controller> make(const std::string& state = "", bool watch = false) {
    ControllerOptions o;
    o.state_path = state;
    o.watch = watch;
    o.reconcile.concurrency = 4;
    o.reconcile.backoff_initial = 50ms;
    o.reconcile.backoff_max = 400ms;
    o.reconcile.resync = 0ms;
    o.reconcile.call_timeout = 3000ms;
    cv1::ControllerConfig cfg;
    for (int h = 0; h < 4; ++h) {
      auto* e = cfg.add_gateways();
      e->set_name("h" + std::to_string(h));
      e->set_target("unix:" + gws[size_t(h)]->socket);
      e->set_probe(h == 0);  // only h0 probes its paths
    }
    std::string err;
    auto c =
        Controller::create(o, make_topology_planner(small_fabric(), "test-topology"), cfg, err);
    EXPECT_TRUE(c) << err;
    return c;
  }

  void synced(Controller& c) {
    ASSERT_TRUE(c.reconciler().wait_synced(c.plan_version(), 10s)) << "not in sync";
  }

  static cv1::Plan plan(Controller& c, bool objects = true) {
    cv1::GetPlanRequest req;
    req.set_include_objects(objects);
    cv1::Plan p;
    c.get_plan(req, p);
    return p;
  }

  static v1::Event path_event(const std::string& policy, uint32_t path_id, bool down) {
    v1::Event ev;
    ev.set_kind(v1::EVENT_KIND_PATH_STATE);
    auto* p = ev.mutable_path();
    p->set_policy(policy);
    p->set_path_id(path_id);
    p->set_reason(down ? "probe-down" : "probe-up");
    p->set_new_state(down ? v1::PATH_STATE_DOWN : v1::PATH_STATE_UP);
    return ev;
  }

  // The multipath policy of `gw` toward host `dst` (the one with probe SID / most lists).
  static const v1::SrPolicy* policy_to(const GatewayState& s, const std::string& dst) {
    const v1::SrPolicy* best = nullptr;
    for (const auto& [name, p] : s.policies) {
      if (name.find(dst) == std::string::npos || name.find(':') != std::string::npos) continue;
      if (!best || p.segment_lists_size() > best->segment_lists_size()) best = &p;
    }
    return best;
  }

  agent::test::TempDir dir;
  std::vector<std::unique_ptr<TestGateway>> gws;
};

TEST_F(ControllerTest, InstallsEveryGatewayFromTheTopologyAlone) {
  auto c = make();
  ASSERT_TRUE(c);
  std::string err;
  ASSERT_TRUE(c->start(err)) << err;
  synced(*c);
  auto p = plan(*c);
  ASSERT_EQ(p.gateways_size(), 4);
  for (int h = 0; h < 4; ++h) {
    const auto& g = p.gateways(h);
    EXPECT_TRUE(g.in_sync()) << g.name();
    EXPECT_EQ(g.counters().pushes(), 1u) << g.name();
    EXPECT_EQ(g.policies(), 3u) << g.name();  // one per other host
    auto running = gws[size_t(h)]->running();
    EXPECT_EQ(running.policies.size(), 3u);
    EXPECT_EQ(running.steering.size(), 3u);
    EXPECT_GE(running.local_sids.size(), 2u);  // decap and probe SIDs at least
    GatewayState desired;
    for (const auto& x : g.desired_policies()) desired.add(x);
    for (const auto& x : g.desired_steering()) desired.add(x);
    for (const auto& x : g.desired_local_sids()) desired.add(x);
    EXPECT_TRUE(running == desired) << g.name();
    // Only h0 probes: its policies name probe SIDs, the others' do not.
    for (const auto& [_, pol] : running.policies) EXPECT_EQ(pol.probe_sid().empty(), h != 0);
  }
}

TEST_F(ControllerTest, JobFlowsArePinnedAndCancelledJobsWithdrawn) {
  auto c = make();
  std::string err;
  ASSERT_TRUE(c->start(err)) << err;
  synced(*c);
  cv1::SubmitJobRequest job;
  job.set_job_id("allreduce-1");
  for (uint32_t q = 0; q < 8; ++q) {
    auto* f = job.add_flows();
    f->set_src_host("h0");
    f->set_dst_host("h2");
    f->set_dest_qp(0x100 + q);
    f->set_bytes(1000000);
  }
  cv1::SubmitJobResponse resp;
  auto st = c->submit_job(job, resp);
  ASSERT_TRUE(st.ok()) << st.error_message();
  ASSERT_EQ(resp.placements_size(), 8);
  std::map<uint32_t, int> per_path;
  for (const auto& pl : resp.placements()) {
    EXPECT_EQ(pl.gateway(), "h0");
    EXPECT_NE(pl.rule_id(), 0u);
    EXPECT_NE(pl.path_id(), 0u);
    EXPECT_FALSE(pl.links().empty());
    ++per_path[pl.path_id()];
  }
  // 8 equal flows over 2 spines: 4 and 4, the best possible.
  ASSERT_EQ(per_path.size(), 2u);
  for (auto [_, n] : per_path) EXPECT_EQ(n, 4);
  EXPECT_NEAR(resp.max_link_load(), resp.lower_bound(), 1e-9);
  synced(*c);
  auto running = gws[0]->running();
  int exact = 0;
  for (const auto& [_, r] : running.steering) exact += r.has_exact() ? 1 : 0;
  EXPECT_EQ(exact, 8);
  // Other gateways are untouched by h0's job.
  EXPECT_EQ(plan(*c).gateways(1).counters().pushes(), 1u);
  // Same id again: refused. Unknown host: refused, naming the field.
  cv1::SubmitJobResponse again;
  EXPECT_EQ(c->submit_job(job, again).error_code(), grpc::StatusCode::ALREADY_EXISTS);
  cv1::SubmitJobRequest bad;
  auto* f = bad.add_flows();
  f->set_src_host("h0");
  f->set_dst_host("nowhere");
  auto bst = c->submit_job(bad, again);
  EXPECT_EQ(bst.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(bst.error_message().find("flows[0].dst_host"), std::string::npos)
      << bst.error_message();

  cv1::CancelJobRequest cancel;
  cancel.set_job_id("allreduce-1");
  cv1::CancelJobResponse cresp;
  ASSERT_TRUE(c->cancel_job(cancel, cresp).ok());
  synced(*c);
  running = gws[0]->running();
  exact = 0;
  for (const auto& [_, r] : running.steering) exact += r.has_exact() ? 1 : 0;
  EXPECT_EQ(exact, 0);
  EXPECT_EQ(running.policies.size(), 3u);  // the pinned policies are gone too
  EXPECT_EQ(c->cancel_job(cancel, cresp).error_code(), grpc::StatusCode::NOT_FOUND);
}

TEST_F(ControllerTest, ProbeDownOnOneGatewayIsPushedToAllAndProbeUpRestores) {
  auto c = make();
  std::string err;
  ASSERT_TRUE(c->start(err)) << err;
  synced(*c);
  const uint64_t gen_h1 = gws[1]->generation();
  // h0's path to h2 over its first spine stops answering.
  auto h0 = gws[0]->running();
  const auto* to_h2 = policy_to(h0, "h2");
  ASSERT_TRUE(to_h2);
  ASSERT_GE(to_h2->segment_lists_size(), 2);
  const auto& victim = to_h2->segment_lists(0);
  const std::string spine_sid = victim.sids(0);
  // A cut leaf0--spine link: every probed path of h0 over that spine goes down (toward h2
  // and h3), while those over the other spine still answer.
  auto probe_all = [&](bool down) {
    for (const auto& [name, pol] : h0.policies) {
      for (const auto& sl : pol.segment_lists()) {
        if (sl.sids_size() > 1 && sl.sids(0) == spine_sid) {
          c->on_gateway_event("h0", path_event(name, sl.path_id(), down));
        }
      }
    }
  };
  probe_all(true);
  auto down = c->inferred_down();
  ASSERT_EQ(down.size(), 2u);  // leaf0--spineX and spineX--leaf1: the probes cannot tell
  synced(*c);
  // h1 never probed anything: its list over that spine toward h3 is out (weight 0), kept
  // configured; its other list carries everything.
  auto h1 = gws[1]->running();
  EXPECT_GT(gws[1]->generation(), gen_h1);
  const auto* to_h3 = policy_to(h1, "h3");
  ASSERT_TRUE(to_h3);
  bool seen = false;
  for (const auto& sl : to_h3->segment_lists()) {
    if (sl.backup()) continue;
    if (sl.sids(0) == spine_sid) {
      EXPECT_EQ(sl.weight(), 0u);
      seen = true;
    } else {
      EXPECT_GT(sl.weight(), 0u);
    }
  }
  EXPECT_TRUE(seen);
  auto p = plan(*c, false);
  ASSERT_EQ(p.links_size(), 2);
  EXPECT_EQ(p.links(0).origin(), cv1::LINK_ORIGIN_PROBES);
  EXPECT_FALSE(p.links(0).up());
  // The probes answer again: every gateway back to the full plan.
  probe_all(false);
  EXPECT_TRUE(c->inferred_down().empty());
  synced(*c);
  const auto h1_after = gws[1]->running();
  for (const auto& sl : policy_to(h1_after, "h3")->segment_lists()) {
    if (!sl.backup()) {
      EXPECT_GT(sl.weight(), 0u);
    }
  }
  // Every path toward h2 silent (h2's gateway stalled, or its access link): its access
  // link is not blamed, nothing is taken down (there would be no other way to h2 anyway).
  for (const auto& sl : to_h2->segment_lists()) {
    c->on_gateway_event("h0", path_event(to_h2->name(), sl.path_id(), true));
  }
  EXPECT_TRUE(c->inferred_down().empty());
  for (const auto& sl : to_h2->segment_lists()) {
    c->on_gateway_event("h0", path_event(to_h2->name(), sl.path_id(), false));
  }
  // Congestion decisions of the local engine are not link failures.
  auto congestion = path_event(to_h2->name(), victim.path_id(), true);
  congestion.mutable_path()->set_reason("excluded");
  c->on_gateway_event("h0", congestion);
  EXPECT_TRUE(c->inferred_down().empty());
}

TEST_F(ControllerTest, OperatorCapacityChangeReweights) {
  auto c = make();
  std::string err;
  ASSERT_TRUE(c->start(err)) << err;
  synced(*c);
  auto p = plan(*c, true);
  std::string fabric_link;
  for (const auto& l : p.links()) {
    if (l.link().find("leaf0--spine") == 0) {
      fabric_link = l.link();
      break;
    }
  }
  ASSERT_FALSE(fabric_link.empty());
  cv1::SetLinkStateRequest req;
  req.set_link(fabric_link);
  req.set_capacity_gbps(100);  // a LAG of 2 x 100G with one member down
  cv1::SetLinkStateResponse resp;
  ASSERT_TRUE(c->set_link_state(req, resp).ok());
  EXPECT_FALSE(resp.gateways_changed().empty());
  synced(*c);
  // h0 -> h2: the list over that leaf0 uplink now has half the weight of the other.
  const auto h0 = gws[0]->running();
  const auto* to_h2 = policy_to(h0, "h2");
  ASSERT_TRUE(to_h2);
  std::vector<uint32_t> w;
  for (const auto& sl : to_h2->segment_lists()) {
    if (!sl.backup()) w.push_back(sl.weight());
  }
  ASSERT_EQ(w.size(), 2u);
  EXPECT_EQ(std::max(w[0], w[1]), 2 * std::min(w[0], w[1]));
  cv1::SetLinkStateRequest unknown;
  unknown.set_link("leaf0--nowhere");
  unknown.set_up(false);
  EXPECT_EQ(c->set_link_state(unknown, resp).error_code(), grpc::StatusCode::NOT_FOUND);
}

TEST_F(ControllerTest, RefusingGatewayIsReportedAndTheOthersProceed) {
  // h3's data plane refuses the next configuration it is given.
  gws[3]->sink.refuse_next = config::ConfigError{"/srv6gw:gateway/policies", "no room"};
  auto c = make();
  std::string err;
  ASSERT_TRUE(c->start(err)) << err;
  const auto t0 = std::chrono::steady_clock::now();
  for (;;) {
    auto p = plan(*c, false);
    int synced_n = 0;
    bool refused = false;
    for (const auto& g : p.gateways()) {
      synced_n += g.in_sync() ? 1 : 0;
      if (g.name() == "h3" && g.counters().push_failures() == 1) refused = true;
    }
    if (synced_n == 3 && refused) {
      EXPECT_NE(p.gateways(3).last_error().find("INVALID_ARGUMENT"), std::string::npos)
          << p.gateways(3).last_error();
      EXPECT_FALSE(p.gateways(3).in_sync());
      break;
    }
    ASSERT_LT(std::chrono::steady_clock::now() - t0, 10s);
    std::this_thread::sleep_for(20ms);
  }
  bool event = false;
  for (const auto& ev : c->events().recent()) {
    event |= ev.kind() == cv1::CONTROLLER_EVENT_KIND_PUSH_FAILED && ev.gateway() == "h3";
  }
  EXPECT_TRUE(event);
  // The next plan lands there too (the refusal was for that one configuration).
  cv1::SetLinkStateRequest req;
  req.set_link(plan(*c, true).links(0).link());
  req.set_capacity_gbps(50);
  cv1::SetLinkStateResponse resp;
  ASSERT_TRUE(c->set_link_state(req, resp).ok());
  synced(*c);
}

TEST_F(ControllerTest, RestartKeepsJobsAndLinkStateAndPushesNothing) {
  const std::string state = dir.file("controller-state.json");
  uint64_t version = 0;
  std::map<std::string, uint64_t> generations;
  {
    auto c = make(state);
    std::string err;
    ASSERT_TRUE(c->start(err)) << err;
    cv1::SubmitJobRequest job;
    job.set_job_id("j1");
    for (uint32_t q = 0; q < 4; ++q) {
      auto* f = job.add_flows();
      f->set_src_host("h1");
      f->set_dst_host("h3");
      f->set_dest_qp(0x200 + q);
      f->set_bytes(1000);
    }
    cv1::SubmitJobResponse resp;
    ASSERT_TRUE(c->submit_job(job, resp).ok());
    cv1::SetLinkStateRequest req;
    req.set_link(plan(*c, true).links(0).link());
    req.set_capacity_gbps(50);
    cv1::SetLinkStateResponse lresp;
    ASSERT_TRUE(c->set_link_state(req, lresp).ok());
    synced(*c);
    version = c->plan_version();
    for (int h = 0; h < 4; ++h) generations["h" + std::to_string(h)] = gws[size_t(h)]->generation();
    c->stop();
  }
  auto c = make(state);
  std::string err;
  ASSERT_TRUE(c->start(err)) << err;
  synced(*c);
  EXPECT_GT(c->plan_version(), version);  // versions continue
  auto p = plan(*c, false);
  ASSERT_EQ(p.jobs_size(), 1);
  EXPECT_EQ(p.jobs(0).job_id(), "j1");
  ASSERT_EQ(p.links_size(), 1);  // the operator's override survived
  EXPECT_EQ(p.links(0).origin(), cv1::LINK_ORIGIN_OPERATOR);
  for (const auto& g : p.gateways()) {
    EXPECT_TRUE(g.in_sync()) << g.name();
    EXPECT_EQ(g.counters().pushes(), 0u) << g.name() << ": the gateways already ran the plan";
  }
  for (int h = 0; h < 4; ++h) {
    EXPECT_EQ(gws[size_t(h)]->generation(), generations["h" + std::to_string(h)]);
  }
  // A state file that is not one is refused, naming it.
  {
    std::ofstream(dir.file("bad.json")) << "{\"format\": \"something-else\"}";
    ControllerOptions o;
    o.state_path = dir.file("bad.json");
    cv1::ControllerConfig cfg;
    std::string e;
    EXPECT_FALSE(Controller::create(o, make_topology_planner(small_fabric(), "t"), cfg, e));
    EXPECT_NE(e.find("bad.json"), std::string::npos) << e;
    // ... and left as it was.
    EXPECT_EQ(agent::test::slurp(dir.file("bad.json")), "{\"format\": \"something-else\"}");
  }
}

TEST_F(ControllerTest, WatchStreamsAreFollowedAndARestartedGatewayIsBroughtBack) {
  auto c = make("", /*watch=*/true);
  std::string err;
  ASSERT_TRUE(c->start(err)) << err;
  synced(*c);
  // The gateway restarts empty (no state file): its new event stream triggers a read.
  gws[2]->server.reset();
  ASSERT_TRUE(gws[2]->start());
  const auto t0 = std::chrono::steady_clock::now();
  while (gws[2]->running().policies.size() != 3) {
    ASSERT_LT(std::chrono::steady_clock::now() - t0, 10s) << "not brought back";
    std::this_thread::sleep_for(50ms);
  }
  auto p = plan(*c, false);
  EXPECT_EQ(p.gateways(2).counters().pushes(), 2u);
  // The reconciler's retry can bring the gateway back before its event stream is open again
  // (the watch waits watch_retry between attempts): wait for the stream, don't race it.
  const auto all_watching = [&] {
    p = plan(*c, false);
    for (const auto& g : p.gateways()) {
      if (!g.watching()) return false;
    }
    return true;
  };
  while (!all_watching()) {
    ASSERT_LT(std::chrono::steady_clock::now() - t0, 10s) << "an event stream was not reopened";
    std::this_thread::sleep_for(20ms);
  }
}

TEST_F(ControllerTest, ServiceOverGrpc) {
  auto c = make();
  std::string err;
  ASSERT_TRUE(c->start(err)) << err;
  ControllerService service(*c);
  grpc::ServerBuilder b;
  const std::string address = "unix:" + dir.file("controller.sock");
  b.AddListeningPort(address, grpc::InsecureServerCredentials());
  b.RegisterService(&service);
  auto server = b.BuildAndStart();
  ASSERT_TRUE(server);
  auto stub =
      cv1::Controller::NewStub(grpc::CreateChannel(address, grpc::InsecureChannelCredentials()));
  // Watch first: SUBSCRIBED, then the job's events.
  grpc::ClientContext wctx;
  auto reader = stub->Watch(&wctx, cv1::WatchRequest{});
  cv1::ControllerEvent ev;
  ASSERT_TRUE(reader->Read(&ev));
  EXPECT_EQ(ev.kind(), cv1::CONTROLLER_EVENT_KIND_SUBSCRIBED);

  cv1::SubmitJobRequest job;  // no id: the controller names it
  auto* f = job.add_flows();
  f->set_src_host("h2");
  f->set_dst_host("h0");
  f->set_dest_qp(77);
  f->set_bytes(10);
  cv1::SubmitJobResponse resp;
  {
    grpc::ClientContext ctx;
    auto st = stub->SubmitJob(&ctx, job, &resp);
    ASSERT_TRUE(st.ok()) << st.error_message();
  }
  EXPECT_EQ(resp.job_id(), "job-1");
  ASSERT_EQ(resp.placements_size(), 1);
  EXPECT_EQ(resp.placements(0).gateway(), "h2");
  bool job_event = false;
  while (!job_event && reader->Read(&ev)) job_event = ev.kind() == cv1::CONTROLLER_EVENT_KIND_JOB;
  EXPECT_TRUE(job_event);
  {
    grpc::ClientContext ctx;
    cv1::SetLinkStateRequest req;
    req.set_link("nope");
    req.set_up(false);
    cv1::SetLinkStateResponse lresp;
    EXPECT_EQ(stub->SetLinkState(&ctx, req, &lresp).error_code(), grpc::StatusCode::NOT_FOUND);
  }
  synced(*c);
  cv1::Plan plan;
  {
    grpc::ClientContext ctx;
    cv1::GetPlanRequest req;
    req.set_gateway("h2");
    req.set_include_objects(true);
    ASSERT_TRUE(stub->GetPlan(&ctx, req, &plan).ok());
  }
  ASSERT_EQ(plan.gateways_size(), 1);
  EXPECT_TRUE(plan.gateways(0).in_sync());
  EXPECT_EQ(plan.jobs_size(), 1);
  bool pinned = false;
  for (const auto& r : plan.gateways(0).desired_steering()) {
    pinned |= r.has_exact() && r.exact().dest_qp() == 77u;
  }
  EXPECT_TRUE(pinned);
  wctx.TryCancel();
  server->Shutdown();
}

}  // namespace
}  // namespace srv6gw::sr_controller
