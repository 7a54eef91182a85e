// SPDX-License-Identifier: BSD-3-Clause
// How fast one Apply of N steering upserts (default 100000) goes through the whole agent:
// client serialisation, unix socket, conversion, config::validate(), the real Gateway's
// publication (EAL --no-huge) and the fsync'ed state file. Also without persistence and
// against a sink that accepts everything (the agent's own share). Prints entries/s.
//
//   bench-agent-apply [N]
#include <rte_eal.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <string>

#include "agent/agent.hpp"
#include "agent_test_util.hpp"

using namespace srv6gw;
using namespace srv6gw::agent;

namespace {

class AcceptingSink final : public StateSink {
 public:
  std::optional<config::ConfigError> apply(const config::GatewayConfig&) override {
    return std::nullopt;
  }
  StatsSnapshot stats() override { return {}; }
};

v1::ApplyRequest upserts(uint32_t n, uint32_t first_id, const char* policy) {
  v1::ApplyRequest req;
  req.mutable_changes()->Reserve(int(n));
  for (uint32_t k = 0; k < n; ++k) {
    const uint32_t id = first_id + k;
    auto* r = req.add_changes()->mutable_upsert_steering();
    r->set_id(id);
    r->mutable_exact()->set_destination(test::ipv4_from(id));
    r->mutable_exact()->set_dest_qp(id & 0xFFFFFF);
    r->set_policy(policy);
  }
  return req;
}

v1::ApplyRequest deletes(uint32_t n, uint32_t first_id) {
  v1::ApplyRequest req;
  for (uint32_t k = 0; k < n; ++k) req.add_changes()->set_delete_steering(first_id + k);
  return req;
}

bool run(const char* label, Agent& agent, const v1::ApplyRequest& req) {
  auto stub = test::unix_stub(agent.address());
  grpc::ClientContext ctx;
  v1::ApplyResponse resp;
  const auto t0 = std::chrono::steady_clock::now();
  auto st = stub->Apply(&ctx, req, &resp);
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (!st.ok()) {
    std::fprintf(stderr, "%s: %s\n", label, st.error_message().c_str());
    return false;
  }
  std::printf("%-58s %7d changes %8.1f ms %10.0f entries/s\n", label, req.changes_size(), s * 1e3,
              req.changes_size() / s);
  std::fflush(stdout);
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  const uint32_t n = argc > 1 ? uint32_t(std::strtoul(argv[1], nullptr, 10)) : 100000;
  std::string prefix = test::cat({"--file-prefix=srv6gw-bench-agent-", std::to_string(getpid())});
  const char* eal[] = {"bench-agent-apply",
                       "--no-huge",
                       "--no-shconf",
                       prefix.c_str(),
                       "-m",
                       "1024",
                       "--no-pci",
                       "--log-level=3",
                       "-l",
                       "0"};
  if (rte_eal_init(int(std::size(eal)), const_cast<char**>(eal)) < 0) {
    std::fprintf(stderr, "rte_eal_init failed\n");
    return 1;
  }
  spdlog::set_level(spdlog::level::info);
  test::TempDir dir;
  config::GatewayConfig cfg = test::base_config();
  cfg.fabric_nexthop_mac = *net::parse_mac("02:00:00:00:03:03");
  cfg.capacities.exact_entries = 4 * n + 1024;
  config::ConfigError cerr;
  auto gateway = dataplane::Gateway::create(cfg, 1, dataplane::PortEnv{}, nullptr, cerr);
  if (!gateway) {
    std::fprintf(stderr, "Gateway::create: %s: %s\n", cerr.path.c_str(), cerr.message.c_str());
    return 1;
  }
  std::mutex control;
  GatewaySink sink(*gateway, &control);
  bool ok = true;
  {
    AgentOptions o;
    o.listen = "unix:" + dir.file("a.sock");
    o.state_path = dir.file("state.json");
    std::string err;
    auto agent = Agent::start(o, sink, cfg, 0, err);
    if (!agent) {
      std::fprintf(stderr, "%s\n", err.c_str());
      return 1;
    }
    ok &= run("real Gateway, persisted: new rules", *agent, upserts(n, 1, "base"));
    ok &= run("real Gateway, persisted: replace the same rules", *agent, upserts(n, 1, "base"));
    ok &= run("real Gateway, persisted: add as many again", *agent, upserts(n, n + 1, "base"));
    ok &= run("real Gateway, persisted: delete the first ones", *agent, deletes(n, 1));
    std::printf("state file: %.1f MB\n",
                double(std::filesystem::file_size(o.state_path)) / (1 << 20));
    agent->stop();
    gateway->reclaim();
  }
  {
    AgentOptions o;
    o.listen = "unix:" + dir.file("b.sock");
    o.state_path.clear();
    std::string err;
    auto agent = Agent::start(o, sink, gateway->running_config(), 4, err);
    ok &= agent &&
          run("real Gateway, not persisted: new rules", *agent, upserts(n, 2 * n + 1, "base"));
    if (agent) agent->stop();
  }
  {
    AcceptingSink accept;
    AgentOptions o;
    o.listen = "unix:" + dir.file("c.sock");
    o.state_path.clear();
    std::string err;
    auto agent = Agent::start(o, accept, cfg, 0, err);
    ok &= agent &&
          run("agent only (sink accepts, not persisted): new rules", *agent, upserts(n, 1, "base"));
    if (agent) agent->stop();
  }
  gateway.reset();
  rte_eal_cleanup();
  return ok ? 0 : 1;
}
