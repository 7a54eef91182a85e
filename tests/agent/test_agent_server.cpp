// SPDX-License-Identifier: BSD-3-Clause
// The agent served in-process over a unix socket, against a fake sink that runs
// config::validate() like the Gateway: apply, dry run, generations, every class of invalid
// input, deletes, paging, events, health, the socket itself and the option parser.
#include <google/protobuf/util/message_differencer.h>
#include <grpcpp/grpcpp.h>
#include <grpcpp/impl/client_unary_call.h>
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include <fstream>
#include <functional>
#include <set>
#include <thread>

#include "agent/agent.hpp"
#include "agent/convert.hpp"
#include "agent_test_util.hpp"
#include "grpc/health/v1/health.grpc.pb.h"

namespace srv6gw::agent::test {
namespace {

using google::protobuf::util::MessageDifferencer;

class AgentServer : public ::testing::Test {
 protected:
  void SetUp() override { start(base_config(), 0); }
  void TearDown() override {
    if (agent) agent->stop();
  }

  void start(const config::GatewayConfig& cfg, uint64_t generation) {
    sink.running = cfg;
    options.listen = "unix:" + dir.file("agent.sock");
    options.state_path = dir.file("state.json");
    std::string err;
    agent = Agent::start(options, sink, cfg, generation, err);
    ASSERT_TRUE(agent) << err;
    stub = unix_stub(agent->address());
  }

  grpc::Status apply(const v1::ApplyRequest& req, v1::ApplyResponse* resp = nullptr) {
    grpc::ClientContext ctx;
    v1::ApplyResponse local;
    return stub->Apply(&ctx, req, resp ? resp : &local);
  }

  uint64_t generation() {
    grpc::ClientContext ctx;
    v1::GetStateResponse st;
    EXPECT_TRUE(stub->GetState(&ctx, {}, &st).ok());
    return st.generation();
  }

  std::vector<v1::SteeringRule> all_rules(uint32_t page = 10000, const std::string& policy = "") {
    std::vector<v1::SteeringRule> out;
    v1::ListSteeringRequest req;
    req.set_page_size(page);
    req.set_policy(policy);
    for (;;) {
      grpc::ClientContext ctx;
      v1::ListSteeringResponse resp;
      auto st = stub->ListSteering(&ctx, req, &resp);
      EXPECT_TRUE(st.ok()) << st.error_message();
      if (!st.ok()) break;
      for (auto& r : resp.rules()) out.push_back(r);
      if (resp.next_page_token().empty()) break;
      req.set_page_token(resp.next_page_token());
    }
    return out;
  }

  TempDir dir;
  FakeSink sink;
  AgentOptions options;
  std::unique_ptr<Agent> agent;
  std::unique_ptr<v1::Gateway::Stub> stub;
};

v1::ApplyRequest batch_with_everything() {
  v1::ApplyRequest req;
  *req.add_changes()->mutable_upsert_policy() = make_policy("p1", 100);
  auto* ls = req.add_changes()->mutable_upsert_local_sid();
  ls->set_sid("fc00:0:1::d6");
  ls->set_behavior(v1::LOCAL_SID_BEHAVIOR_END_DX6);
  *req.add_changes()->mutable_upsert_steering() = exact_rule(30, "10.0.0.2", 17, "p1");
  auto* dst = req.add_changes()->mutable_upsert_steering();
  dst->set_id(10);
  dst->set_destination("fd00::2");
  dst->set_policy("base");
  auto* range = req.add_changes()->mutable_upsert_steering();
  range->set_id(20);
  range->mutable_qp_range()->set_qp_low(100);
  range->mutable_qp_range()->set_qp_high(200);
  range->mutable_qp_range()->set_destination("10.0.0.3");
  range->set_policy("p1");
  auto* pfx = req.add_changes()->mutable_upsert_steering();
  pfx->set_id(40);
  pfx->set_prefix("fd00:1::/48");
  pfx->set_dscp(26);
  pfx->set_policy("p1");
  return req;
}

TEST_F(AgentServer, AppliesABatchAndReadsItBack) {
  const v1::ApplyRequest req = batch_with_everything();
  v1::ApplyResponse resp;
  auto st = apply(req, &resp);
  ASSERT_TRUE(st.ok()) << st.error_message();
  EXPECT_EQ(resp.generation(), 1u);
  EXPECT_FALSE(resp.dry_run());
  EXPECT_EQ(resp.counts().policies_upserted(), 1u);
  EXPECT_EQ(resp.counts().steering_upserted(), 4u);
  EXPECT_EQ(resp.counts().local_sids_upserted(), 1u);
  EXPECT_EQ(agent->generation(), 1u);

  // The sink runs exactly the agent's state.
  EXPECT_EQ(sink.apply_calls, 1u);
  EXPECT_EQ(sink.running, agent->state()->config);
  ASSERT_EQ(sink.running.policies.size(), 2u);
  EXPECT_EQ(sink.running.policies[1].name, "p1");
  EXPECT_EQ(sink.running.policies[1].segment_lists[1].weight, 2u);
  EXPECT_EQ(sink.running.steering.size(), 4u);

  // GetPolicy gives back the request with every default made explicit.
  v1::SrPolicy expected = req.changes(0).upsert_policy();
  expected.set_encap(v1::ENCAP_MODE_ENCAPS);
  expected.mutable_usid_format()->set_block_bits(32);
  expected.mutable_usid_format()->set_usid_bits(16);
  expected.mutable_selection()->set_flowlet_gap_us(50);
  expected.mutable_selection()->set_idle_gap_us(1000);
  for (auto& sl : *expected.mutable_segment_lists()) sl.set_backup(false);
  {
    grpc::ClientContext ctx;
    v1::GetPolicyRequest get;
    get.set_name("p1");
    v1::SrPolicy got;
    ASSERT_TRUE(stub->GetPolicy(&ctx, get, &got).ok());
    std::string diff;
    MessageDifferencer d;
    d.ReportDifferencesToString(&diff);
    EXPECT_TRUE(d.Compare(expected, got)) << diff;
  }
  {
    grpc::ClientContext ctx;
    v1::GetPolicyRequest get;
    get.set_name("nope");
    v1::SrPolicy got;
    auto s = stub->GetPolicy(&ctx, get, &got);
    EXPECT_EQ(s.error_code(), grpc::StatusCode::NOT_FOUND);
    EXPECT_NE(s.error_message().find("policy[name='nope']"), std::string::npos);
  }
  {
    grpc::ClientContext ctx;
    v1::ListPoliciesResponse list;
    ASSERT_TRUE(stub->ListPolicies(&ctx, {}, &list).ok());
    ASSERT_EQ(list.policies_size(), 2);
    EXPECT_EQ(list.policies(0).name(), "base");  // by name
    EXPECT_EQ(list.policies(1).name(), "p1");
    EXPECT_EQ(list.generation(), 1u);
    EXPECT_TRUE(list.next_page_token().empty());
  }
  // Rules come back by id, each equal to what was sent.
  const auto rules = all_rules();
  ASSERT_EQ(rules.size(), 4u);
  const int sent_at[] = {3, 4, 2, 5};  // ids 10, 20, 30, 40
  for (size_t i = 0; i < 4; ++i) {
    EXPECT_TRUE(MessageDifferencer::Equals(rules[i], req.changes(sent_at[i]).upsert_steering()))
        << rules[i].DebugString() << " vs " << req.changes(sent_at[i]).DebugString();
  }
  {
    grpc::ClientContext ctx;
    v1::ListLocalSidsResponse list;
    ASSERT_TRUE(stub->ListLocalSids(&ctx, {}, &list).ok());
    ASSERT_EQ(list.local_sids_size(), 1);
    EXPECT_EQ(list.local_sids(0).sid(), "fc00:0:1::d6");
    EXPECT_EQ(list.local_sids(0).behavior(), v1::LOCAL_SID_BEHAVIOR_END_DX6);
  }
  {
    grpc::ClientContext ctx;
    v1::GetStateResponse state;
    ASSERT_TRUE(stub->GetState(&ctx, {}, &state).ok());
    EXPECT_EQ(state.generation(), 1u);
    EXPECT_EQ(state.policies(), 2u);
    EXPECT_EQ(state.steering_rules(), 4u);
    EXPECT_EQ(state.local_sids(), 1u);
    EXPECT_EQ(state.state_file(), options.state_path);
  }
  EXPECT_TRUE(std::filesystem::exists(options.state_path));
}

TEST_F(AgentServer, DryRunValidatesAndChangesNothing) {
  v1::ApplyRequest req = batch_with_everything();
  req.set_dry_run(true);
  v1::ApplyResponse resp;
  auto st = apply(req, &resp);
  ASSERT_TRUE(st.ok()) << st.error_message();
  EXPECT_TRUE(resp.dry_run());
  EXPECT_EQ(resp.generation(), 0u);
  EXPECT_EQ(resp.counts().steering_upserted(), 4u);
  EXPECT_EQ(sink.apply_calls, 0u);
  EXPECT_EQ(generation(), 0u);
  EXPECT_EQ(agent->state()->config, base_config());
  EXPECT_FALSE(std::filesystem::exists(options.state_path));

  // A dry run of a bad batch is refused like the real thing.
  req.mutable_changes(2)->mutable_upsert_steering()->set_policy("missing");
  st = apply(req);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(st.error_message().find("changes[2].upsert_steering.policy: unknown policy"),
            std::string::npos)
      << st.error_message();
}

// Apply parses its own request (into an arena): bytes that are not an ApplyRequest are
// refused as the generated handler refuses them (INTERNAL), nothing changes, and a large
// batch (an arena of several blocks) applies afterwards and reads back.
TEST_F(AgentServer, UndecodableApplyBytesAreRefusedAndChangeNothing) {
  auto channel = grpc::CreateChannel(agent->address(), grpc::InsecureChannelCredentials());
  const grpc::internal::RpcMethod method("/srv6gw.v1.Gateway/Apply",
                                         grpc::internal::RpcMethod::NORMAL_RPC);
  // Field 1 (changes), length-delimited, with a length varint that never ends.
  const std::string junk = "\x0a\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff";
  grpc::Slice slice(junk);
  grpc::ByteBuffer request(&slice, 1);
  grpc::ByteBuffer response;
  grpc::ClientContext ctx;
  const grpc::Status st = grpc::internal::BlockingUnaryCall<grpc::ByteBuffer, grpc::ByteBuffer>(
      channel.get(), method, &ctx, request, &response);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::INTERNAL) << st.error_message();
  EXPECT_EQ(generation(), 0u);
  EXPECT_EQ(agent->state()->config, base_config());
  EXPECT_FALSE(std::filesystem::exists(options.state_path));

  v1::ApplyRequest big;
  for (uint32_t id = 1; id <= 5000; ++id) {
    *big.add_changes()->mutable_upsert_steering() = exact_rule(id, ipv4_from(id), id, "base");
  }
  v1::ApplyResponse resp;
  const grpc::Status applied = apply(big, &resp);
  ASSERT_TRUE(applied.ok()) << applied.error_message();
  EXPECT_EQ(resp.generation(), 1u);
  EXPECT_EQ(resp.counts().steering_upserted(), 5000u);
  const auto rules = all_rules();
  ASSERT_EQ(rules.size(), 5000u + base_config().steering.size());
}

TEST_F(AgentServer, StaleGenerationIsRefused) {
  v1::ApplyRequest req;
  *req.add_changes()->mutable_upsert_steering() = exact_rule(1, "10.0.0.1", 1, "base");
  req.set_expected_generation(0);
  ASSERT_TRUE(apply(req).ok());
  EXPECT_EQ(generation(), 1u);

  *req.mutable_changes(0)->mutable_upsert_steering() = exact_rule(1, "10.0.0.9", 1, "base");
  auto st = apply(req);  // still expects 0
  EXPECT_EQ(st.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_NE(st.error_message().find("running generation is 1"), std::string::npos)
      << st.error_message();
  EXPECT_EQ(generation(), 1u);
  EXPECT_EQ(net::to_string(agent->state()->config.steering.at(0).dst), "10.0.0.1");

  req.set_expected_generation(1);
  v1::ApplyResponse resp;
  ASSERT_TRUE(apply(req, &resp).ok());
  EXPECT_EQ(resp.generation(), 2u);
  // Without expected_generation there is no check.
  req.clear_expected_generation();
  ASSERT_TRUE(apply(req, &resp).ok());
  EXPECT_EQ(resp.generation(), 3u);
}

struct BadCase {
  const char* what;
  std::function<void(v1::ApplyRequest&)> build;
  grpc::StatusCode code;
  std::vector<std::string> expect;  // substrings of the error message
};

TEST_F(AgentServer, EveryClassOfInvalidInputIsRefusedNamingTheField) {
  const std::vector<BadCase> cases = {
      {"SID that is not an address",
       [](auto& r) {
         *r.add_changes()->mutable_upsert_steering() = exact_rule(1, "10.0.0.1", 1, "base");
         auto p = make_policy("p1", 100);
         p.mutable_segment_lists(0)->set_sids(1, "fc00::zz");
         *r.add_changes()->mutable_upsert_policy() = p;
       },
       grpc::StatusCode::INVALID_ARGUMENT,
       {"changes[1].upsert_policy.segment_lists[0].sids[1]: 'fc00::zz' is not an IPv6 address",
        "(/srv6gw:gateway/policies/policy[name='p1']/segment-list[name='sl0']/sid)"}},
      {"path id wider than the SRH tag",
       [](auto& r) {
         auto p = make_policy("p1", 100);
         p.mutable_segment_lists(1)->set_path_id(70000);
         *r.add_changes()->mutable_upsert_policy() = p;
       },
       grpc::StatusCode::INVALID_ARGUMENT,
       {"changes[0].upsert_policy.segment_lists[1].path_id: path-id must be 0..65535",
        "segment-list[name='sl1']/path-id"}},
      {"path id already used by another policy",
       [](auto& r) { *r.add_changes()->mutable_upsert_policy() = make_policy("p1", 1); },
       grpc::StatusCode::INVALID_ARGUMENT,
       {"changes[0].upsert_policy.segment_lists[0].path_id: path-id 1 is already used by "
        "policy 'base'",
        "(/srv6gw:gateway/policies/policy[name='p1']/segment-list[name='sl0']/path-id)"}},
      {"17 SIDs",
       [](auto& r) {
         auto p = make_policy("p1", 100);
         auto* sl = p.mutable_segment_lists(0);
         sl->clear_sids();
         for (int i = 1; i <= 17; ++i) sl->add_sids(cat({"fc00:0:", std::to_string(i), "::e"}));
         *r.add_changes()->mutable_upsert_policy() = p;
       },
       grpc::StatusCode::INVALID_ARGUMENT,
       {"changes[0].upsert_policy.segment_lists[0].sids: 17 SIDs exceed the maximum of 16"}},
      {"no SID",
       [](auto& r) {
         auto p = make_policy("p1", 100);
         p.mutable_segment_lists(1)->clear_sids();
         *r.add_changes()->mutable_upsert_policy() = p;
       },
       grpc::StatusCode::INVALID_ARGUMENT,
       {"changes[0].upsert_policy.segment_lists[1].sids: a segment list needs at least one SID"}},
      {"SID twice in a list",
       [](auto& r) {
         auto p = make_policy("p1", 100);
         p.mutable_segment_lists(0)->add_sids("fc00:0:10::e");
         *r.add_changes()->mutable_upsert_policy() = p;
       },
       grpc::StatusCode::INVALID_ARGUMENT,
       {"changes[0].upsert_policy.segment_lists[0].sids[2]: SID fc00:0:10::e appears twice"}},
      {"multicast SID",
       [](auto& r) {
         auto p = make_policy("p1", 100);
         p.mutable_segment_lists(0)->set_sids(0, "ff02::1");
         *r.add_changes()->mutable_upsert_policy() = p;
       },
       grpc::StatusCode::INVALID_ARGUMENT,
       {"changes[0].upsert_policy.segment_lists[0].sids[0]: SID must not be a multicast"}},
      {"weight too large",
       [](auto& r) {
         auto p = make_policy("p1", 100);
         p.mutable_segment_lists(1)->set_weight(2000000);
         *r.add_changes()->mutable_upsert_policy() = p;
       },
       grpc::StatusCode::INVALID_ARGUMENT,
       {"changes[0].upsert_policy.segment_lists[1].weight: weight must be 0..1000000"}},
      {"only backups",
       [](auto& r) {
         auto p = make_policy("p1", 100);
         for (auto& sl : *p.mutable_segment_lists()) sl.set_backup(true);
         *r.add_changes()->mutable_upsert_policy() = p;
       },
       grpc::StatusCode::INVALID_ARGUMENT,
       {"changes[0].upsert_policy: a policy needs a non-backup segment list with weight > 0",
        "(/srv6gw:gateway/policies/policy[name='p1'])"}},
      {"duplicate segment list name",
       [](auto& r) {
         auto p = make_policy("p1", 100);
         p.mutable_segment_lists(1)->set_name("sl0");
         *r.add_changes()->mutable_upsert_policy() = p;
       },
       grpc::StatusCode::INVALID_ARGUMENT,
       {"changes[0].upsert_policy.segment_lists[1]: duplicate segment list name 'sl0'"}},
      {"bad policy name",
       [](auto& r) { *r.add_changes()->mutable_upsert_policy() = make_policy("bad name!", 100); },
       grpc::StatusCode::INVALID_ARGUMENT,
       {"changes[0].upsert_policy.name: policy name may only hold"}},
      {"selective without spray opcodes",
       [](auto& r) {
         auto p = make_policy("p1", 100);
         p.mutable_selection()->set_mode(v1::SELECTION_MODE_SELECTIVE);
         *r.add_changes()->mutable_upsert_policy() = p;
       },
       grpc::StatusCode::INVALID_ARGUMENT,
       {"changes[0].upsert_policy.selection.mode: selective mode needs at least one"}},
      {"duplicate spray opcode",
       [](auto& r) {
         auto p = make_policy("p1", 100);
         p.mutable_selection()->set_mode(v1::SELECTION_MODE_SELECTIVE);
         for (int op : {7, 8, 7}) p.mutable_selection()->add_spray_opcodes(op);
         *r.add_changes()->mutable_upsert_policy() = p;
       },
       grpc::StatusCode::INVALID_ARGUMENT,
       {"changes[0].upsert_policy.selection.spray_opcodes[2]: duplicate spray opcode 7"}},
      {"flowlet gap 0",
       [](auto& r) {
         auto p = make_policy("p1", 100);
         p.mutable_selection()->set_flowlet_gap_us(0);
         *r.add_changes()->mutable_upsert_policy() = p;
       },
       grpc::StatusCode::INVALID_ARGUMENT,
       {"changes[0].upsert_policy.selection.flowlet_gap_us: flowlet-gap-us must be"}},
      {"uSID outside the first SID's block",
       [](auto& r) {
         auto p = make_policy("p1", 100, 1);
         p.set_encap(v1::ENCAP_MODE_USID);
         auto* sl = p.mutable_segment_lists(0);
         sl->clear_sids();
         sl->add_sids("fc00:0:100::");
         sl->add_sids("fc01:0:200::");
         *r.add_changes()->mutable_upsert_policy() = p;
       },
       grpc::StatusCode::INVALID_ARGUMENT,
       {"changes[0].upsert_policy.segment_lists[0].sids[1]: SID fc01:0:200:: is outside the "
        "32-bit locator block"}},
      {"unknown encap value",
       [](auto& r) {
         auto p = make_policy("p1", 100);
         p.set_encap(static_cast<v1::EncapMode>(9));
         *r.add_changes()->mutable_upsert_policy() = p;
       },
       grpc::StatusCode::INVALID_ARGUMENT,
       {"changes[0].upsert_policy.encap: unknown encap mode 9"}},
      {"bad usid format",
       [](auto& r) {
         auto p = make_policy("p1", 100);
         p.mutable_usid_format()->set_block_bits(12);
         p.mutable_usid_format()->set_usid_bits(16);
         *r.add_changes()->mutable_upsert_policy() = p;
       },
       grpc::StatusCode::INVALID_ARGUMENT,
       {"changes[0].upsert_policy.usid_format.block_bits: block-bits must be a multiple of 8"}},
      {"endpoint that is not an address",
       [](auto& r) {
         auto p = make_policy("p1", 100);
         p.set_endpoint("gateway-2");
         *r.add_changes()->mutable_upsert_policy() = p;
       },
       grpc::StatusCode::INVALID_ARGUMENT,
       {"changes[0].upsert_policy.endpoint: 'gateway-2' is not an IPv4 or IPv6 address"}},
      {"rule without id",
       [](auto& r) {
         *r.add_changes()->mutable_upsert_steering() = exact_rule(0, "10.0.0.1", 1, "base");
       },
       grpc::StatusCode::INVALID_ARGUMENT,
       {"changes[0].upsert_steering.id: a rule needs an id"}},
      {"rule naming an unknown policy",
       [](auto& r) {
         *r.add_changes()->mutable_upsert_steering() = exact_rule(5, "10.0.0.1", 1, "nope");
       },
       grpc::StatusCode::INVALID_ARGUMENT,
       {"changes[0].upsert_steering.policy: unknown policy 'nope'",
        "(/srv6gw:gateway/steering/rule[id='5']/policy)"}},
      {"rule without a match",
       [](auto& r) {
         auto* rule = r.add_changes()->mutable_upsert_steering();
         rule->set_id(5);
         rule->set_policy("base");
       },
       grpc::StatusCode::INVALID_ARGUMENT,
       {"changes[0].upsert_steering: a rule needs a match"}},
      {"exact rule with a bad destination",
       [](auto& r) {
         *r.add_changes()->mutable_upsert_steering() = exact_rule(5, "10.0.0.300", 1, "base");
       },
       grpc::StatusCode::INVALID_ARGUMENT,
       {"changes[0].upsert_steering.exact.destination: '10.0.0.300' is not an IPv4 or IPv6"}},
      {"dest_qp wider than 24 bits",
       [](auto& r) {
         *r.add_changes()->mutable_upsert_steering() = exact_rule(5, "10.0.0.1", 1u << 24, "base");
       },
       grpc::StatusCode::INVALID_ARGUMENT,
       {"changes[0].upsert_steering.exact.dest_qp: dest-qp 16777216 does not fit in 24 bits"}},
      {"prefix that is not a prefix",
       [](auto& r) {
         auto* rule = r.add_changes()->mutable_upsert_steering();
         rule->set_id(5);
         rule->set_prefix("10.0.0.0");
         rule->set_policy("base");
       },
       grpc::StatusCode::INVALID_ARGUMENT,
       {"changes[0].upsert_steering.prefix: '10.0.0.0' is not a prefix"}},
      {"prefix longer than the family",
       [](auto& r) {
         auto* rule = r.add_changes()->mutable_upsert_steering();
         rule->set_id(5);
         rule->set_prefix("10.0.0.0/33");
         rule->set_policy("base");
       },
       grpc::StatusCode::INVALID_ARGUMENT,
       {"changes[0].upsert_steering.prefix: prefix length 33 exceeds 32"}},
      {"prefix with host bits",
       [](auto& r) {
         auto* rule = r.add_changes()->mutable_upsert_steering();
         rule->set_id(5);
         rule->set_prefix("10.0.0.1/8");
         rule->set_policy("base");
       },
       grpc::StatusCode::INVALID_ARGUMENT,
       {"changes[0].upsert_steering.prefix: prefix 10.0.0.1/8 has bits set beyond its length"}},
      {"QP range upside down",
       [](auto& r) {
         auto* rule = r.add_changes()->mutable_upsert_steering();
         rule->set_id(5);
         rule->mutable_qp_range()->set_qp_low(10);
         rule->mutable_qp_range()->set_qp_high(9);
         rule->set_policy("base");
       },
       grpc::StatusCode::INVALID_ARGUMENT,
       {"changes[0].upsert_steering.qp_range.qp_high: qp-high must not be lower than qp-low"}},
      {"overlapping QP ranges",
       [](auto& r) {
         for (uint32_t id : {5u, 6u}) {
           auto* rule = r.add_changes()->mutable_upsert_steering();
           rule->set_id(id);
           rule->mutable_qp_range()->set_qp_low(id * 10);
           rule->mutable_qp_range()->set_qp_high(id * 10 + 15);
           rule->set_policy("base");
         }
       },
       grpc::StatusCode::INVALID_ARGUMENT,
       {"changes[1].upsert_steering.qp_range: QP range 60..75 overlaps "
        "/srv6gw:gateway/steering/rule[id='5']"}},
      {"dscp out of range",
       [](auto& r) {
         auto rule = exact_rule(5, "10.0.0.1", 1, "base");
         rule.set_dscp(64);
         *r.add_changes()->mutable_upsert_steering() = rule;
       },
       grpc::StatusCode::INVALID_ARGUMENT,
       {"changes[0].upsert_steering.dscp: dscp must be 0..63, not 64"}},
      {"two rules with the same match",
       [](auto& r) {
         *r.add_changes()->mutable_upsert_steering() = exact_rule(5, "10.0.0.1", 1, "base");
         *r.add_changes()->mutable_upsert_steering() = exact_rule(6, "10.0.0.1", 1, "base");
       },
       grpc::StatusCode::INVALID_ARGUMENT,
       {"changes[1].upsert_steering: same match as /srv6gw:gateway/steering/rule[id='5']"}},
      {"local SID that is not an address",
       [](auto& r) { r.add_changes()->mutable_upsert_local_sid()->set_sid("fc00::/64"); },
       grpc::StatusCode::INVALID_ARGUMENT,
       {"changes[0].upsert_local_sid.sid: 'fc00::/64' is not an IPv6 address"}},
      {"local SID that is also a policy SID",
       [](auto& r) { r.add_changes()->mutable_upsert_local_sid()->set_sid("fc00:0:2::d4"); },
       grpc::StatusCode::INVALID_ARGUMENT,
       {"changes[0].upsert_local_sid: local SID fc00:0:2::d4 is also a SID of policy 'base'"}},
      {"local SID with an unknown behavior",
       [](auto& r) {
         auto* ls = r.add_changes()->mutable_upsert_local_sid();
         ls->set_sid("fc00:0:1::d4");
         ls->set_behavior(static_cast<v1::LocalSidBehavior>(7));
       },
       grpc::StatusCode::INVALID_ARGUMENT,
       {"changes[0].upsert_local_sid.behavior: unknown behavior 7"}},
      {"delete of a missing policy",
       [](auto& r) { r.add_changes()->set_delete_policy("ghost"); },
       grpc::StatusCode::NOT_FOUND,
       {"changes[0].delete_policy: no policy 'ghost' (/srv6gw:gateway/policies/policy[name="
        "'ghost'])"}},
      {"delete of a missing rule",
       [](auto& r) { r.add_changes()->set_delete_steering(77); },
       grpc::StatusCode::NOT_FOUND,
       {"changes[0].delete_steering: no steering rule 77"}},
      {"delete of a missing local SID",
       [](auto& r) { r.add_changes()->set_delete_local_sid("fc00::99"); },
       grpc::StatusCode::NOT_FOUND,
       {"changes[0].delete_local_sid: no local SID fc00::99"}},
      {"delete of a policy still in use",
       [](auto& r) {
         *r.add_changes()->mutable_upsert_steering() = exact_rule(9, "10.0.0.1", 1, "base");
         r.add_changes()->set_delete_policy("base");
       },
       grpc::StatusCode::INVALID_ARGUMENT,
       {"changes[1].delete_policy: policy 'base' is still used by steering rule 9"}},
      {"empty change",
       [](auto& r) { r.add_changes(); },
       grpc::StatusCode::INVALID_ARGUMENT,
       {"changes[0]: empty change"}},
      {"empty batch",
       [](auto&) {},
       grpc::StatusCode::INVALID_ARGUMENT,
       {"changes: the batch is empty"}},
      {"valid changes followed by a bad one",
       [](auto& r) {
         *r.add_changes()->mutable_upsert_policy() = make_policy("p1", 100);
         *r.add_changes()->mutable_upsert_steering() = exact_rule(1, "10.0.0.1", 1, "p1");
         r.add_changes()->mutable_upsert_local_sid()->set_sid("::");
       },
       grpc::StatusCode::INVALID_ARGUMENT,
       {"changes[2].upsert_local_sid.sid: local SID must not be the unspecified address"}},
  };
  const auto before = agent->state();
  for (const auto& c : cases) {
    SCOPED_TRACE(c.what);
    v1::ApplyRequest req;
    c.build(req);
    for (bool dry : {true, false}) {
      req.set_dry_run(dry);
      auto st = apply(req);
      EXPECT_EQ(st.error_code(), c.code) << st.error_message();
      for (const auto& s : c.expect) {
        EXPECT_NE(st.error_message().find(s), std::string::npos)
            << "message: " << st.error_message() << "\nexpected: " << s;
      }
    }
    // Nothing happened.
    EXPECT_EQ(agent->state(), before);
    EXPECT_EQ(sink.apply_calls, 0u);
    EXPECT_EQ(generation(), 0u);
  }
  EXPECT_FALSE(std::filesystem::exists(options.state_path));
}

TEST_F(AgentServer, CapacityOverflowNamesTheChange) {
  agent->stop();
  auto cfg = base_config();
  cfg.capacities.exact_entries = 4;
  start(cfg, 0);
  v1::ApplyRequest req;
  for (uint32_t i = 1; i <= 5; ++i) {
    *req.add_changes()->mutable_upsert_steering() = exact_rule(i, "10.0.0.1", i, "base");
  }
  auto st = apply(req);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(st.error_message().find("changes[4].upsert_steering: exact and destination rules "
                                    "exceed capacities/exact-entries (4)"),
            std::string::npos)
      << st.error_message();
  req.mutable_changes()->RemoveLast();
  EXPECT_TRUE(apply(req).ok());
}

TEST_F(AgentServer, DataPlaneRefusalChangesNothing) {
  config::SteeringRule key;
  key.id = 3;
  sink.refuse_next = config::ConfigError{config::rule_path(key, 0), "exact table is full"};
  v1::ApplyRequest req;
  *req.add_changes()->mutable_upsert_steering() = exact_rule(3, "10.0.0.1", 1, "base");
  auto st = apply(req);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(st.error_message(),
            "data plane refused: changes[0].upsert_steering: exact table is full "
            "(/srv6gw:gateway/steering/rule[id='3'])");
  EXPECT_EQ(generation(), 0u);
  EXPECT_TRUE(agent->state()->config.steering.empty());
  EXPECT_FALSE(std::filesystem::exists(options.state_path));
  // The next try goes through.
  EXPECT_TRUE(apply(req).ok());
  EXPECT_EQ(agent->state()->config.steering.size(), 1u);
}

TEST_F(AgentServer, UpsertReplacesAndDeletesRemove) {
  v1::ApplyRequest req = batch_with_everything();
  ASSERT_TRUE(apply(req).ok());

  // Replace rule 30 (new destination), delete rule 20 and the local SID.
  v1::ApplyRequest second;
  *second.add_changes()->mutable_upsert_steering() = exact_rule(30, "10.9.9.9", 5, "base");
  second.add_changes()->set_delete_steering(20);
  second.add_changes()->set_delete_local_sid("fc00:0:1:0::d6");  // same address, other text
  v1::ApplyResponse resp;
  auto st = apply(second, &resp);
  ASSERT_TRUE(st.ok()) << st.error_message();
  EXPECT_EQ(resp.counts().steering_upserted(), 1u);
  EXPECT_EQ(resp.counts().steering_deleted(), 1u);
  EXPECT_EQ(resp.counts().local_sids_deleted(), 1u);
  auto rules = all_rules();
  ASSERT_EQ(rules.size(), 3u);
  EXPECT_EQ(rules[0].id(), 10u);
  EXPECT_EQ(rules[1].id(), 30u);
  EXPECT_EQ(rules[1].exact().destination(), "10.9.9.9");
  EXPECT_EQ(rules[1].policy(), "base");
  EXPECT_EQ(rules[2].id(), 40u);
  EXPECT_TRUE(agent->state()->config.local_sids.empty());

  // Deleting the policy together with the rules that use it works; order within the batch is
  // the order of the changes (an upsert after a delete of the same id brings it back).
  v1::ApplyRequest third;
  third.add_changes()->set_delete_steering(40);
  third.add_changes()->set_delete_policy("p1");
  third.add_changes()->set_delete_steering(10);
  *third.add_changes()->mutable_upsert_steering() = exact_rule(10, "10.1.1.1", 1, "base");
  st = apply(third, &resp);
  ASSERT_TRUE(st.ok()) << st.error_message();
  EXPECT_EQ(resp.generation(), 3u);
  rules = all_rules();
  ASSERT_EQ(rules.size(), 2u);
  EXPECT_EQ(rules[0].exact().destination(), "10.1.1.1");
  EXPECT_EQ(agent->state()->config.policies.size(), 1u);
  EXPECT_EQ(sink.running, agent->state()->config);
  // And a delete after an upsert of the same id in one batch removes it.
  v1::ApplyRequest fourth;
  *fourth.add_changes()->mutable_upsert_steering() = exact_rule(50, "10.5.5.5", 1, "base");
  fourth.add_changes()->set_delete_steering(50);
  ASSERT_TRUE(apply(fourth).ok());
  EXPECT_EQ(all_rules().size(), 2u);
}

// Paging must walk a million steering entries exactly once each, and stay correct when the
// table changes between pages.
TEST_F(AgentServer, PagesThroughAMillionSteeringRules) {
  constexpr uint32_t kRules = 1000000;
  agent->stop();
  auto cfg = base_config();
  cfg.capacities.exact_entries = 1u << 21;
  options.state_path.clear();
  sink.running = cfg;
  sink.validate = false;  // the agent validated already; paging is what is tested here
  options.listen = "unix:" + dir.file("agent.sock");
  {
    std::string err;
    AgentOptions o = options;
    o.state_path.clear();
    agent = Agent::start(o, sink, cfg, 0, err);
    ASSERT_TRUE(agent) << err;
    stub = unix_stub(agent->address());
  }
  {
    v1::ApplyRequest req;
    *req.add_changes()->mutable_upsert_policy() = make_policy("p1", 100);
    req.mutable_changes()->Reserve(kRules + 1);
    // Ids sent in a scrambled order: the listing must sort them.
    for (uint32_t k = 0; k < kRules; ++k) {
      const uint32_t id = uint32_t(uint64_t(k) * 7919u % kRules) + 1;
      auto* r = req.add_changes()->mutable_upsert_steering();
      r->set_id(id);
      r->mutable_exact()->set_destination(ipv4_from(id));
      r->mutable_exact()->set_dest_qp(id & 0xFFFF);
      r->set_policy(id % 2 ? "p1" : "base");
    }
    const auto t0 = std::chrono::steady_clock::now();
    v1::ApplyResponse resp;
    auto st = apply(req, &resp);
    ASSERT_TRUE(st.ok()) << st.error_message();
    std::printf(
        "applied %u steering rules in one batch: %.0f ms\n", kRules,
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  const auto t0 = std::chrono::steady_clock::now();
  uint32_t expect_id = 1;
  unsigned pages = 0;
  v1::ListSteeringRequest req;
  req.set_page_size(10000);
  for (;;) {
    grpc::ClientContext ctx;
    v1::ListSteeringResponse resp;
    ASSERT_TRUE(stub->ListSteering(&ctx, req, &resp).ok());
    ++pages;
    EXPECT_EQ(resp.total(), kRules);
    for (const auto& r : resp.rules()) {
      ASSERT_EQ(r.id(), expect_id);
      ASSERT_EQ(r.exact().dest_qp(), expect_id & 0xFFFF);
      ++expect_id;
    }
    if (resp.next_page_token().empty()) break;
    ASSERT_EQ(resp.rules_size(), 10000);
    req.set_page_token(resp.next_page_token());
  }
  EXPECT_EQ(expect_id, kRules + 1);
  EXPECT_EQ(pages, 100u);
  std::printf(
      "listed %u rules in %u pages: %.0f ms\n", kRules, pages,
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());

  // Filter by policy: every odd id, in order.
  {
    const auto odd = all_rules(10000, "p1");
    ASSERT_EQ(odd.size(), kRules / 2);
    for (size_t i = 0; i < odd.size(); ++i) ASSERT_EQ(odd[i].id(), 2 * i + 1);
  }
  // Page size 0 means 1000; above the maximum means the maximum.
  {
    grpc::ClientContext ctx;
    v1::ListSteeringResponse resp;
    ASSERT_TRUE(stub->ListSteering(&ctx, {}, &resp).ok());
    EXPECT_EQ(resp.rules_size(), 1000);
    v1::ListSteeringRequest big;
    big.set_page_size(1u << 30);
    grpc::ClientContext ctx2;
    ASSERT_TRUE(stub->ListSteering(&ctx2, big, &resp).ok());
    EXPECT_EQ(resp.rules_size(), 10000);
  }
  // Changes between pages: rules already listed, deleted ahead, or added ahead.
  {
    v1::ListSteeringRequest lr;
    lr.set_page_size(10000);
    grpc::ClientContext ctx;
    v1::ListSteeringResponse first;
    ASSERT_TRUE(stub->ListSteering(&ctx, lr, &first).ok());
    v1::ApplyRequest change;
    change.add_changes()->set_delete_steering(5);      // already listed
    change.add_changes()->set_delete_steering(20000);  // not yet listed
    *change.add_changes()->mutable_upsert_steering() =
        exact_rule(kRules + 1, "11.0.0.1", 1, "base");  // new, ahead
    ASSERT_TRUE(apply(change).ok());
    std::set<uint32_t> seen;
    for (const auto& r : first.rules()) seen.insert(r.id());
    lr.set_page_token(first.next_page_token());
    for (;;) {
      grpc::ClientContext c2;
      v1::ListSteeringResponse resp;
      ASSERT_TRUE(stub->ListSteering(&c2, lr, &resp).ok());
      for (const auto& r : resp.rules()) ASSERT_TRUE(seen.insert(r.id()).second) << r.id();
      if (resp.next_page_token().empty()) break;
      lr.set_page_token(resp.next_page_token());
    }
    EXPECT_EQ(seen.size(), size_t(kRules));  // -1 ahead, +1 new; #5 was listed before
    EXPECT_FALSE(seen.count(20000));
    EXPECT_TRUE(seen.count(kRules + 1));
  }
}

TEST_F(AgentServer, BadPageTokensAreRefused) {
  for (const char* token : {"x", "s:", "s:12x", "p:abc"}) {
    grpc::ClientContext ctx;
    v1::ListSteeringRequest req;
    req.set_page_token(token);
    v1::ListSteeringResponse resp;
    EXPECT_EQ(stub->ListSteering(&ctx, req, &resp).error_code(), grpc::StatusCode::INVALID_ARGUMENT)
        << token;
  }
  grpc::ClientContext ctx;
  v1::ListLocalSidsRequest req;
  req.set_page_token("l:not-an-address");
  v1::ListLocalSidsResponse resp;
  EXPECT_EQ(stub->ListLocalSids(&ctx, req, &resp).error_code(), grpc::StatusCode::INVALID_ARGUMENT);
}

TEST_F(AgentServer, PoliciesAndLocalSidsPage) {
  v1::ApplyRequest req;
  for (int i = 0; i < 25; ++i) {
    *req.add_changes()->mutable_upsert_policy() =
        make_policy(cat({"p", std::to_string(100 + i)}), 100 + 2 * uint32_t(i));
    req.add_changes()->mutable_upsert_local_sid()->set_sid(
        cat({"fc00:0:9::", std::to_string(i + 1)}));
  }
  ASSERT_TRUE(apply(req).ok());
  std::vector<std::string> names;
  v1::ListPoliciesRequest lp;
  lp.set_page_size(7);
  for (;;) {
    grpc::ClientContext ctx;
    v1::ListPoliciesResponse resp;
    ASSERT_TRUE(stub->ListPolicies(&ctx, lp, &resp).ok());
    for (const auto& p : resp.policies()) names.push_back(p.name());
    if (resp.next_page_token().empty()) break;
    lp.set_page_token(resp.next_page_token());
  }
  ASSERT_EQ(names.size(), 26u);
  EXPECT_TRUE(std::is_sorted(names.begin(), names.end()));
  std::vector<std::string> sids;
  v1::ListLocalSidsRequest ll;
  ll.set_page_size(4);
  for (;;) {
    grpc::ClientContext ctx;
    v1::ListLocalSidsResponse resp;
    ASSERT_TRUE(stub->ListLocalSids(&ctx, ll, &resp).ok());
    for (const auto& s : resp.local_sids()) sids.push_back(s.sid());
    if (resp.next_page_token().empty()) break;
    ll.set_page_token(resp.next_page_token());
  }
  ASSERT_EQ(sids.size(), 25u);
  EXPECT_EQ(std::set<std::string>(sids.begin(), sids.end()).size(), 25u);
}

TEST_F(AgentServer, StatsSumWorkersAndGroupPaths) {
  {
    std::lock_guard lock(sink.mutex);
    dataplane::WorkerCounters w0, w1;
    w0.rx_host = 10;
    w0.encap = 9;
    w0.drops[size_t(dataplane::DropReason::steering_miss)] = 1;
    w1.rx_host = 5;
    w1.drops[size_t(dataplane::DropReason::steering_miss)] = 2;
    w1.drops[size_t(dataplane::DropReason::tx_full)] = 3;
    sink.stats_value.workers = {w0, w1};
    sink.stats_value.ports = {{"host", "net_null0", 15, 1500, 0, 0, 1, 0, 0, 0}};
    sink.stats_value.paths = {{"base", "only", 1, 1, 1.0, 7, 700, 0, ""},
                              {"p1", "a", 100, 2, 0.5, 1, 100, 0, ""},
                              {"p1", "b", 101, 1, 1.0, 2, 200, 0, ""}};
  }
  grpc::ClientContext ctx;
  v1::Stats stats;
  ASSERT_TRUE(stub->GetStats(&ctx, {}, &stats).ok());
  ASSERT_EQ(stats.workers_size(), 2);
  EXPECT_EQ(stats.workers(0).rx_host(), 10u);
  EXPECT_EQ(stats.workers(0).encap(), 9u);
  ASSERT_EQ(stats.workers(1).drops_size(), 2);  // non-zero reasons only
  std::map<std::string, uint64_t> drops;
  for (const auto& d : stats.drops()) drops[d.name()] = d.value();
  EXPECT_EQ(drops.at("steering_miss"), 3u);
  EXPECT_EQ(drops.at("tx_full"), 3u);
  EXPECT_EQ(drops.at("no_headroom"), 0u);                          // every reason is listed
  EXPECT_GT(drops.size(), size_t(dataplane::DropReason::count_));  // + parse./decap. reasons
  ASSERT_EQ(stats.ports_size(), 1);
  EXPECT_EQ(stats.ports(0).rx_missed(), 1u);
  ASSERT_EQ(stats.policies_size(), 2);
  EXPECT_EQ(stats.policies(1).name(), "p1");
  EXPECT_EQ(stats.policies(1).packets(), 3u);
  EXPECT_EQ(stats.policies(1).bytes(), 300u);
  EXPECT_EQ(stats.policies(1).paths(0).factor(), 0.5);
}

TEST_F(AgentServer, WatchStreamsAppliedChangesAndOtherProducers) {
  grpc::ClientContext ctx;
  auto reader = stub->WatchEvents(&ctx, {});
  v1::Event ev;
  ASSERT_TRUE(reader->Read(&ev));
  EXPECT_EQ(ev.kind(), v1::EVENT_KIND_SUBSCRIBED);
  EXPECT_EQ(ev.generation(), 0u);

  v1::ApplyRequest req;
  *req.add_changes()->mutable_upsert_steering() = exact_rule(1, "10.0.0.1", 1, "base");
  ASSERT_TRUE(apply(req).ok());
  ASSERT_TRUE(reader->Read(&ev));
  EXPECT_EQ(ev.kind(), v1::EVENT_KIND_CONFIG_APPLIED);
  EXPECT_EQ(ev.generation(), 1u);
  EXPECT_EQ(ev.config_applied().counts().steering_upserted(), 1u);
  EXPECT_NE(ev.config_applied().origin().find("unix:"), std::string::npos);
  const uint64_t seq = ev.sequence();

  // Another producer (the local SR engine) publishes on the agent's bus.
  Event path;
  path.kind = EventKind::path_weight;
  path.detail =
      PathEvent{"base", "only", 1, 1.0, 0.25, PathState::up, PathState::degraded, 0.8, "CE marks"};
  agent->events().publish(path);
  ASSERT_TRUE(reader->Read(&ev));
  EXPECT_EQ(ev.kind(), v1::EVENT_KIND_PATH_WEIGHT);
  EXPECT_GT(ev.sequence(), seq);
  EXPECT_EQ(ev.generation(), 1u);  // stamped by the bus
  EXPECT_EQ(ev.path().policy(), "base");
  EXPECT_EQ(ev.path().new_factor(), 0.25);
  EXPECT_EQ(ev.path().new_state(), v1::PATH_STATE_DEGRADED);
  EXPECT_EQ(ev.path().reason(), "CE marks");

  // The daemon's link watch publishes pause storms (issue 27): start and end, per port.
  Event storm;
  storm.kind = EventKind::pause_storm;
  storm.detail = PauseStormEvent{"fabric", "net_memif1", true, 2, 417};
  agent->events().publish(storm);
  ASSERT_TRUE(reader->Read(&ev));
  EXPECT_EQ(ev.kind(), v1::EVENT_KIND_PAUSE_STORM);
  ASSERT_TRUE(ev.has_pause_storm());
  EXPECT_EQ(ev.pause_storm().port(), "fabric");
  EXPECT_EQ(ev.pause_storm().device(), "net_memif1");
  EXPECT_TRUE(ev.pause_storm().active());
  EXPECT_EQ(ev.pause_storm().storms(), 2u);
  EXPECT_EQ(ev.pause_storm().dropped(), 417u);

  // A filtered watcher sees only what it asked for.
  grpc::ClientContext ctx2;
  v1::WatchEventsRequest only_state;
  only_state.add_kinds(v1::EVENT_KIND_PATH_STATE);
  auto filtered = stub->WatchEvents(&ctx2, only_state);
  ASSERT_TRUE(filtered->Read(&ev));
  EXPECT_EQ(ev.kind(), v1::EVENT_KIND_SUBSCRIBED);
  ASSERT_TRUE(apply(req).ok());  // config_applied: not for this watcher
  path.kind = EventKind::path_state;
  agent->events().publish(path);
  ASSERT_TRUE(filtered->Read(&ev));
  EXPECT_EQ(ev.kind(), v1::EVENT_KIND_PATH_STATE);

  // Stopping the agent ends the streams.
  agent->stop();
  while (reader->Read(&ev)) {
  }
  EXPECT_EQ(reader->Finish().error_code(), grpc::StatusCode::UNAVAILABLE);
  while (filtered->Read(&ev)) {
  }
  filtered->Finish();
}

TEST(EventBus, SlowSubscriberLosesEventsAndIsTold) {
  EventBus bus(4);
  auto sub = bus.subscribe();
  // The subscribed event takes one of the four slots.
  for (int i = 0; i < 10; ++i) {
    Event e;
    e.kind = EventKind::path_weight;
    bus.publish(e);
  }
  std::vector<EventKind> kinds;
  std::vector<uint64_t> seqs;
  uint64_t lost = 0;
  while (auto e = sub->next(std::chrono::milliseconds(0))) {
    kinds.push_back(e->kind);
    if (e->kind == EventKind::events_lost) {
      lost = std::get<uint64_t>(e->detail);
      EXPECT_EQ(e->sequence, 0u);
    } else {
      seqs.push_back(e->sequence);
    }
  }
  ASSERT_EQ(kinds.size(), 5u);
  EXPECT_EQ(kinds[0], EventKind::subscribed);
  EXPECT_EQ(kinds[4], EventKind::events_lost);
  EXPECT_EQ(lost, 7u);
  EXPECT_TRUE(std::is_sorted(seqs.begin(), seqs.end()));
  // The marker sits where the gap is: before the next event that fits.
  Event e;
  e.kind = EventKind::path_state;
  bus.publish(e);
  bus.publish(e);
  for (int i = 0; i < 4; ++i) bus.publish(e);  // 2 of these do not fit (limit 4 incl. marker)
  auto a = sub->next(std::chrono::milliseconds(0));
  ASSERT_TRUE(a);
  EXPECT_EQ(a->kind, EventKind::path_state);
  EXPECT_EQ(bus.subscriber_count(), 1u);
  sub.reset();
  EXPECT_EQ(bus.subscriber_count(), 0u);
}

TEST(EventBus, CloseWakesWaitingSubscribers) {
  EventBus bus;
  auto sub = bus.subscribe();
  ASSERT_TRUE(sub->next(std::chrono::milliseconds(0)));  // subscribed
  std::thread closer([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    bus.close();
  });
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_FALSE(sub->next(std::chrono::seconds(10)));
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(5));
  EXPECT_TRUE(sub->closed());
  closer.join();
  EXPECT_EQ(bus.publish(Event{}), 0u);  // no-op after close
}

TEST_F(AgentServer, HealthAndSocket) {
  auto channel = grpc::CreateChannel(agent->address(), grpc::InsecureChannelCredentials());
  auto health = grpc::health::v1::Health::NewStub(channel);
  for (const char* service : {"", "srv6gw.v1.Gateway"}) {
    grpc::ClientContext ctx;
    grpc::health::v1::HealthCheckRequest req;
    req.set_service(service);
    grpc::health::v1::HealthCheckResponse resp;
    auto st = health->Check(&ctx, req, &resp);
    ASSERT_TRUE(st.ok()) << st.error_message();
    EXPECT_EQ(resp.status(), grpc::health::v1::HealthCheckResponse::SERVING) << service;
  }
  {
    grpc::ClientContext ctx;
    grpc::health::v1::HealthCheckRequest req;
    req.set_service("no.such.Service");
    grpc::health::v1::HealthCheckResponse resp;
    EXPECT_EQ(health->Check(&ctx, req, &resp).error_code(), grpc::StatusCode::NOT_FOUND);
  }
  // Only owner and group may talk to the gateway.
  struct stat st {};
  const std::string path = dir.file("agent.sock");
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_TRUE(S_ISSOCK(st.st_mode));
  EXPECT_EQ(st.st_mode & 0777, 0660u);

  // A second agent on the same socket is refused while the first serves it.
  FakeSink other;
  std::string err;
  AgentOptions o = options;
  o.state_path = dir.file("other.json");
  EXPECT_FALSE(Agent::start(o, other, base_config(), 0, err));
  EXPECT_NE(err.find("another process is serving"), std::string::npos) << err;

  // After stop, the socket is gone; a stale socket file is replaced; a regular file is not.
  agent->stop();
  EXPECT_FALSE(std::filesystem::exists(path));
  {
    const int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
    sockaddr_un sa{};
    sa.sun_family = AF_UNIX;
    std::strcpy(sa.sun_path, path.c_str());
    ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa), 0);
    ::close(fd);  // bound, never listened: what a crashed process leaves
  }
  auto again = Agent::start(o, other, base_config(), 0, err);
  ASSERT_TRUE(again) << err;
  again->stop();
  { std::ofstream(path) << "not a socket"; }
  EXPECT_FALSE(Agent::start(o, other, base_config(), 0, err));
  EXPECT_NE(err.find("is not a socket"), std::string::npos) << err;
}

TEST_F(AgentServer, InProcessChannelServesTheSameApi) {
  auto s = v1::Gateway::NewStub(agent->in_process_channel());
  grpc::ClientContext ctx;
  v1::GetStateResponse st;
  ASSERT_TRUE(s->GetState(&ctx, {}, &st).ok());
  EXPECT_EQ(st.policies(), 1u);
}

v1::GetStateResponse get_state(v1::Gateway::Stub& stub) {
  grpc::ClientContext ctx;
  v1::GetStateResponse st;
  EXPECT_TRUE(stub.GetState(&ctx, {}, &st).ok());
  return st;
}

TEST_F(AgentServer, RailsAreReadAndTheirPublishedSettingsChange) {
  agent->stop();
  agent.reset();
  start(two_rails_config(), 0);
  // GetState names the rails with their settings.
  v1::GetStateResponse st = get_state(*stub);
  ASSERT_EQ(st.rails_size(), 2);
  EXPECT_EQ(st.rails(0).name(), "r0");
  EXPECT_EQ(st.rails(1).name(), "r1");
  EXPECT_EQ(st.rails(1).host(), "net_null2");
  EXPECT_EQ(st.rails(1).fabric(), "net_null3");
  EXPECT_EQ(st.rails(1).queues(), 1u);
  EXPECT_EQ(st.rails(1).source_address(), "fc00:0:9::1");
  EXPECT_FALSE(st.rails(1).has_fabric_vlan());
  ASSERT_EQ(st.rails(1).local_sids_size(), 1);
  EXPECT_EQ(st.rails(1).local_sids(0).sid(), "fc00:0:9::d46");

  // MACs, fabric VLAN and local SIDs of a running rail change with Apply.
  v1::Rail r1 = st.rails(1);
  r1.set_host_mac("02:00:00:00:09:09");
  r1.set_fabric_nexthop_mac("02:00:00:00:09:0a");
  r1.mutable_fabric_vlan()->set_id(300);
  auto* pcp = r1.mutable_fabric_vlan()->add_dscp_pcp();
  pcp->set_dscp(26);
  pcp->set_pcp(5);
  r1.mutable_fabric_vlan()->set_host(v1::HOST_VLAN_MODE_KEEP);
  r1.mutable_local_sids(0)->set_sid("fc00:0:9::d47");
  v1::ApplyRequest req;
  *req.add_changes()->mutable_upsert_rail() = r1;
  v1::ApplyResponse resp;
  auto status = apply(req, &resp);
  ASSERT_TRUE(status.ok()) << status.error_message();
  EXPECT_EQ(resp.generation(), 1u);
  EXPECT_EQ(resp.counts().rails_upserted(), 1u);
  {
    std::lock_guard lock(sink.mutex);
    ASSERT_EQ(sink.running.rails.size(), 2u);
    const config::Rail& ran = sink.running.rails[1];
    EXPECT_EQ(ran.host_mac, net::parse_mac("02:00:00:00:09:09"));
    EXPECT_EQ(ran.fabric_nexthop_mac, net::parse_mac("02:00:00:00:09:0a"));
    EXPECT_TRUE(ran.fabric_port.vlan.enabled);
    EXPECT_EQ(ran.fabric_port.vlan.id, 300);
    EXPECT_EQ(config::pcp_for_dscp(ran.fabric_port.vlan, 26), 5);
    EXPECT_EQ(ran.fabric_port.vlan.host, config::HostVlanMode::keep);
    EXPECT_EQ(ran.local_sids.at(0).sid, v6("fc00:0:9::d47"));
    EXPECT_TRUE(ran.host_port.lossless.enabled);  // not in the message: kept
    EXPECT_EQ(sink.running.rails[0], two_rails_config().rails[0]);
  }
  st = get_state(*stub);
  EXPECT_TRUE(MessageDifferencer::Equals(st.rails(1), r1)) << st.rails(1).DebugString();

  // Refused, naming the field, nothing changed: what needs a restart, a rail not running,
  // and what validation refuses on a rail.
  struct RailCase {
    const char* what;
    std::function<void(v1::Rail&)> edit;
    grpc::StatusCode code;
    std::vector<std::string> parts;
  };
  const std::vector<RailCase> cases = {
      {"another fabric port",
       [](v1::Rail& r) { r.set_fabric("net_null9"); },
       grpc::StatusCode::INVALID_ARGUMENT,
       {"changes[0].upsert_rail.fabric: fabric is net_null3 in the running rail, net_null9 here",
        "needs a restart", "(/srv6gw:gateway/rails/rail[name='r1']/fabric)"}},
      {"more queues",
       [](v1::Rail& r) { r.set_queues(2); },
       grpc::StatusCode::INVALID_ARGUMENT,
       {"changes[0].upsert_rail.queues:", "rail[name='r1']/queues"}},
      {"another source",
       [](v1::Rail& r) { r.clear_source_address(); },
       grpc::StatusCode::INVALID_ARGUMENT,
       {"changes[0].upsert_rail.source_address: source-address is fc00:0:9::1 in the running "
        "rail, the gateway's here"}},
      {"an MTU",
       [](v1::Rail& r) { r.set_fabric_mtu(9000); },
       grpc::StatusCode::INVALID_ARGUMENT,
       {"changes[0].upsert_rail.fabric_mtu:", "rail[name='r1']/fabric-mtu"}},
      {"a rail that is not running",
       [](v1::Rail& r) { r.set_name("r9"); },
       grpc::StatusCode::NOT_FOUND,
       {"changes[0].upsert_rail.name: no rail 'r9'", "adding one needs a restart"}},
      {"a VLAN id out of range",
       [](v1::Rail& r) { r.mutable_fabric_vlan()->set_id(4095); },
       grpc::StatusCode::INVALID_ARGUMENT,
       {"changes[0].upsert_rail.fabric_vlan.id: VLAN id must be 1..4094, not 4095",
        "(/srv6gw:gateway/rails/rail[name='r1']/fabric-vlan/id)"}},
      {"a MAC that is not one",
       [](v1::Rail& r) { r.set_host_mac("02:00"); },
       grpc::StatusCode::INVALID_ARGUMENT,
       {"changes[0].upsert_rail.host_mac: '02:00' is not a MAC address"}},
      {"a rail SID that is the policy's SID",
       [](v1::Rail& r) { r.mutable_local_sids(0)->set_sid("fc00:0:101::e"); },
       grpc::StatusCode::INVALID_ARGUMENT,
       {"changes[0].upsert_rail", "fc00:0:101::e"}},
  };
  const uint64_t before = generation();
  for (const RailCase& c : cases) {
    v1::Rail bad = r1;
    c.edit(bad);
    v1::ApplyRequest b;
    *b.add_changes()->mutable_upsert_rail() = bad;
    auto got = apply(b);
    EXPECT_EQ(got.error_code(), c.code) << c.what << ": " << got.error_message();
    for (const std::string& part : c.parts)
      EXPECT_NE(got.error_message().find(part), std::string::npos)
          << c.what << ": '" << got.error_message() << "' lacks '" << part << "'";
  }
  EXPECT_EQ(generation(), before);
  st = get_state(*stub);
  EXPECT_TRUE(MessageDifferencer::Equals(st.rails(1), r1));
}

TEST(AgentOptions, ParsesAndLeavesOtherArguments) {
  std::vector<std::string> args = {"--config",
                                   "x.json",
                                   "--agent-listen",
                                   "127.0.0.1:9999",
                                   "--agent-tls-cert=c.pem",
                                   "--agent-tls-key",
                                   "k.pem",
                                   "--agent-tls-client-ca",
                                   "ca.pem",
                                   "--agent-state",
                                   "none",
                                   "--agent-max-message-mb",
                                   "64",
                                   "--duration",
                                   "1"};
  AgentOptions o;
  std::string err;
  ASSERT_TRUE(take_agent_options(args, o, err)) << err;
  EXPECT_EQ(args, (std::vector<std::string>{"--config", "x.json", "--duration", "1"}));
  EXPECT_EQ(o.listen, "127.0.0.1:9999");
  EXPECT_EQ(o.tls_cert, "c.pem");
  EXPECT_EQ(o.tls_key, "k.pem");
  EXPECT_EQ(o.tls_client_ca, "ca.pem");
  EXPECT_EQ(o.state_path, "");
  EXPECT_EQ(o.max_message_bytes, size_t(64) << 20);
  EXPECT_TRUE(o.enabled);
  EXPECT_FALSE(o.insecure_tcp);

  AgentOptions d;
  std::vector<std::string> none;
  ASSERT_TRUE(take_agent_options(none, d, err));
  EXPECT_EQ(d.listen, "unix:/run/srv6gw/agent.sock");
  EXPECT_EQ(d.state_path, "/var/lib/srv6gw/state.json");

  for (std::vector<std::string> bad :
       std::vector<std::vector<std::string>>{{"--agent-listen"},
                                             {"--agent-bogus"},
                                             {"--agent-insecure-tcp=yes"},
                                             {"--agent-max-message-mb", "1"},
                                             {"--agent-listen", ""}}) {
    AgentOptions x;
    EXPECT_FALSE(take_agent_options(bad, x, err)) << bad[0];
    EXPECT_FALSE(err.empty());
  }
  std::vector<std::string> flags = {"--no-agent", "--agent-insecure-tcp"};
  AgentOptions f;
  ASSERT_TRUE(take_agent_options(flags, f, err));
  EXPECT_FALSE(f.enabled);
  EXPECT_TRUE(f.insecure_tcp);
  EXPECT_TRUE(flags.empty());
  EXPECT_EQ(unix_socket_path("unix:/a/b.sock"), "/a/b.sock");
  EXPECT_EQ(unix_socket_path("/a/b.sock"), "/a/b.sock");
  EXPECT_EQ(unix_socket_path("unix:///a/b.sock"), "/a/b.sock");
  EXPECT_EQ(unix_socket_path("localhost:50051"), "");
}

}  // namespace
}  // namespace srv6gw::agent::test
