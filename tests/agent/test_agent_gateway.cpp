// SPDX-License-Identifier: BSD-3-Clause
// The agent in front of the real data plane (dataplane::Gateway through GatewaySink, EAL
// without hugepages): what a controller applies over gRPC is what the Gateway runs, and
// packets are steered by it from the next burst on.
#include <gtest/gtest.h>
#include <rte_mbuf.h>
#include <rte_mempool.h>

#include <cstring>
#include <mutex>

#include "agent/agent.hpp"
#include "agent_test_util.hpp"
#include "dataplane/control/gateway.hpp"
#include "dataplane/datapath/burst.hpp"
#include "packet_builder.hpp"
#include "policy/runtime.hpp"

namespace srv6gw::agent::test {
namespace {

config::GatewayConfig gateway_config() {
  config::GatewayConfig cfg = base_config();
  cfg.fabric_nexthop_mac = *net::parse_mac("02:00:00:00:03:03");
  cfg.host_mac = *net::parse_mac("02:00:00:00:04:04");
  return cfg;
}

class AgentGateway : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    pool = rte_pktmbuf_pool_create("agent_test_pool", 1023, 0, 0, RTE_MBUF_DEFAULT_BUF_SIZE,
                                   SOCKET_ID_ANY);
    ASSERT_NE(pool, nullptr);
  }
  static void TearDownTestSuite() { rte_mempool_free(pool); }

  void SetUp() override {
    config::ConfigError err;
    gateway = dataplane::Gateway::create(gateway_config(), 1, dataplane::PortEnv{}, nullptr, err);
    ASSERT_TRUE(gateway) << err.path << ": " << err.message;
    sink = std::make_unique<GatewaySink>(*gateway, &control_mutex, [] {
      return std::vector<PortCounters>{{"host", "net_null0", 1, 2, 3, 4, 0, 0, 0, 0}};
    });
    AgentOptions o;
    o.listen = "unix:" + dir.file("agent.sock");
    o.state_path = dir.file("state.json");
    std::string e;
    agent = Agent::start(o, *sink, gateway_config(), 0, e);
    ASSERT_TRUE(agent) << e;
    stub = unix_stub(agent->address());
  }
  void TearDown() override {
    if (agent) agent->stop();
    agent.reset();
    sink.reset();
    gateway.reset();
  }

  // One RoCEv2 frame to 10.0.0.2 / QP 17 through the host side; the frame sent to the fabric
  // (empty if dropped).
  std::vector<uint8_t> send(uint32_t qp = 17) {
    srv6gw::test::BthFields bth;
    bth.opcode = 0x0a;  // RC RDMA WRITE only
    bth.dest_qp = qp;
    srv6gw::test::Ipv4Fields ip;
    ip.src = {10, 9, 9, 9};
    ip.dst = {10, 0, 0, 2};
    const auto frame = srv6gw::test::ethernet(
        0x0800, srv6gw::test::ipv4(ip, srv6gw::test::udp_roce(49152, 4791, bth, 64)));
    rte_mbuf* m = rte_pktmbuf_alloc(pool);
    EXPECT_NE(m, nullptr);
    std::memcpy(rte_pktmbuf_append(m, uint16_t(frame.size())), frame.data(), frame.size());
    rte_mbuf* in[1] = {m};
    rte_mbuf* out[1] = {nullptr};
    const uint16_t n = dataplane::process_host_burst(*gateway->worker(0), in, 1, out);
    dataplane::worker_quiescent(*gateway->worker(0));
    if (n == 0) return {};
    std::vector<uint8_t> b(out[0]->pkt_len);
    // Points into the mbuf when the data is contiguous, else into b (chained encap header).
    const void* data = rte_pktmbuf_read(out[0], 0, out[0]->pkt_len, b.data());
    if (data != b.data()) std::memcpy(b.data(), data, b.size());
    rte_pktmbuf_free(out[0]);
    return b;
  }

  grpc::Status apply(const v1::ApplyRequest& req) {
    grpc::ClientContext ctx;
    v1::ApplyResponse resp;
    return stub->Apply(&ctx, req, &resp);
  }

  // The Gateway runs `cfg`: its settings and policies (running_config() holds no steering
  // rules), as many steering rules, and each exact / dst-any rule in the table to its policy.
  void expect_runs(const config::GatewayConfig& cfg) {
    config::GatewayConfig without = cfg;
    without.steering.clear();
    EXPECT_EQ(gateway->running_config(), without);
    const policy::Runtime& rt = gateway->runtime();
    EXPECT_EQ(rt.steering_rule_count(), cfg.steering.size());
    for (const config::SteeringRule& r : cfg.steering) {
      if (r.kind != config::SteeringKind::exact && r.kind != config::SteeringKind::dst_any_qp)
        continue;
      const policy::ExactKey k = policy::make_exact_key(
          r.dst, r.kind == config::SteeringKind::exact ? r.dest_qp : policy::kAnyQp,
          r.dscp ? *r.dscp : policy::kAnyDscp);
      EXPECT_EQ(policy::hash_lookup_slot(rt.view()->steering.exact, k), rt.slot_of(r.policy))
          << "rule " << r.id;
    }
  }

  static inline rte_mempool* pool = nullptr;
  TempDir dir;
  std::mutex control_mutex;
  std::unique_ptr<dataplane::Gateway> gateway;
  std::unique_ptr<GatewaySink> sink;
  std::unique_ptr<Agent> agent;
  std::unique_ptr<v1::Gateway::Stub> stub;
};

TEST_F(AgentGateway, AppliedPolicySteersTheNextPacket) {
  dataplane::worker_online(*gateway->worker(0));
  const auto before = send();
  ASSERT_FALSE(before.empty());  // steering miss: passed unchanged (default action)
  EXPECT_EQ(before[12], 0x08);   // still IPv4

  v1::ApplyRequest req;
  v1::SrPolicy p = make_policy("p2", 200, 1);
  p.mutable_segment_lists(0)->set_sids(0, "fc00:0:77::e");
  *req.add_changes()->mutable_upsert_policy() = p;
  *req.add_changes()->mutable_upsert_steering() = exact_rule(1, "10.0.0.2", 17, "p2");
  auto st = apply(req);
  ASSERT_TRUE(st.ok()) << st.error_message();
  expect_runs(agent->state()->config);

  const auto after = send();
  ASSERT_GE(after.size(), 14u + 40 + 8 + 32);
  EXPECT_EQ(after[12], 0x86);  // IPv6 outer
  EXPECT_EQ(after[13], 0xDD);
  const uint8_t* outer = after.data() + 14;
  EXPECT_EQ(outer[6], 43);  // routing header follows
  EXPECT_EQ(std::memcmp(outer + 24, v6("fc00:0:77::e").bytes.data(), 16), 0);  // first SID
  const uint8_t* srh = outer + 40;
  EXPECT_EQ(srh[2], 4);                            // routing type 4 (SRH)
  EXPECT_EQ(uint16_t(srh[6] << 8 | srh[7]), 200);  // Tag = path id
  // Another QP of the same destination is not steered.
  EXPECT_EQ(send(18)[12], 0x08);

  // Delete the rule: the next packet passes unchanged again.
  v1::ApplyRequest del;
  del.add_changes()->set_delete_steering(1);
  ASSERT_TRUE(apply(del).ok());
  EXPECT_EQ(send()[12], 0x08);
  expect_runs(agent->state()->config);

  // Stats through gRPC come from the Gateway's counters.
  grpc::ClientContext ctx;
  v1::Stats stats;
  ASSERT_TRUE(stub->GetStats(&ctx, {}, &stats).ok());
  ASSERT_EQ(stats.workers_size(), 1);
  EXPECT_EQ(stats.workers(0).rx_host(), 4u);
  EXPECT_EQ(stats.workers(0).encap(), 1u);
  EXPECT_EQ(stats.generation(), 2u);
  ASSERT_EQ(stats.ports_size(), 1);
  bool found = false;
  for (const auto& pol : stats.policies()) {
    if (pol.name() != "p2") continue;
    found = true;
    ASSERT_EQ(pol.paths_size(), 1);
    EXPECT_EQ(pol.paths(0).path_id(), 200u);
    EXPECT_EQ(pol.paths(0).packets(), 1u);
  }
  EXPECT_TRUE(found);
  dataplane::worker_offline(*gateway->worker(0));
  gateway->reclaim();
}

TEST_F(AgentGateway, RefusedBatchLeavesTheGatewayUntouched) {
  const config::GatewayConfig before = gateway->running_config();
  v1::ApplyRequest req;
  *req.add_changes()->mutable_upsert_policy() = make_policy("p2", 200);
  *req.add_changes()->mutable_upsert_steering() = exact_rule(1, "10.0.0.2", 17, "nope");
  EXPECT_EQ(apply(req).error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(gateway->running_config(), before);
  EXPECT_EQ(agent->generation(), 0u);
}

}  // namespace
}  // namespace srv6gw::agent::test
