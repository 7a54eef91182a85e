// SPDX-License-Identifier: BSD-3-Clause
// How fast one Apply of N steering upserts (default 100000) goes through the whole agent:
// client serialisation, unix socket, conversion, incremental validation, the real Gateway's
// publication (EAL --no-huge) and the fsync'ed state file. Also without persistence and
// against a sink that accepts everything (the agent's own share). Then a 3-change batch on
// a running state of M rules (default 1000000): what an Apply costs when the state is large,
// persisted as a journal record (the first change writes the snapshot), 3- and 10-change
// batches, beside the whole state file written the way every Apply persisted before the
// journal (same run); then the restore of M rules from snapshot + journal and from the
// snapshot alone, and the compaction at stop.
// Prints entries/s; the agent logs validate / data plane / persist ms of every Apply.
//
// With C: then 8 Applies of C upserts that move rules of the M to another destination
// (steering churn, as updates_under_load.py makes it), persisted; min/median and changes/s.
//
//   bench-agent-apply [N [M [C]]]
#include <fcntl.h>
#include <rte_eal.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

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

double g_last_ms = 0;  // client-side time of the last run()

double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
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
  g_last_ms = s * 1e3;
  std::printf("%-58s %7d changes %8.1f ms %10.0f entries/s\n", label, req.changes_size(), s * 1e3,
              req.changes_size() / s);
  std::fflush(stdout);
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  const uint32_t n = argc > 1 ? uint32_t(std::strtoul(argv[1], nullptr, 10)) : 100000;
  const uint32_t m = argc > 2 ? uint32_t(std::strtoul(argv[2], nullptr, 10)) : 1000000;
  const uint32_t churn = argc > 3 ? uint32_t(std::strtoul(argv[3], nullptr, 10)) : 0;
  std::string prefix = test::cat({"--file-prefix=srv6gw-bench-agent-", std::to_string(getpid())});
  const char* eal[] = {"bench-agent-apply",
                       "--no-huge",
                       "--no-shconf",
                       prefix.c_str(),
                       "-m",
                       "2048",
                       "--no-pci",
                       "--log-level=3",
                       "-l",
                       "0"};
  if (rte_eal_init(int(std::size(eal)), const_cast<char**>(eal)) < 0) {
    std::fprintf(stderr, "rte_eal_init failed\n");
    return 1;
  }
  spdlog::set_level(spdlog::level::info);
  {
    // What the server's gRPC layer does with the request before and after the handler:
    // parse the wire bytes into a message, and free it after the response.
    const std::string wire = upserts(n, 1, "base").SerializeAsString();
    auto t0 = std::chrono::steady_clock::now();
    auto parsed = std::make_unique<v1::ApplyRequest>();
    const bool parsed_ok = parsed->ParseFromString(wire);
    auto t1 = std::chrono::steady_clock::now();
    parsed.reset();
    auto t2 = std::chrono::steady_clock::now();
    auto ms = [](auto a, auto b) {
      return std::chrono::duration<double, std::milli>(b - a).count();
    };
    std::printf("protobuf alone, %u upserts (%.1f MB): parse %.1f ms%s, free %.1f ms\n", n,
                double(wire.size()) / 1e6, ms(t0, t1), parsed_ok ? "" : " (FAILED)", ms(t1, t2));
  }
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
  config::GatewayConfig running = cfg;  // what the Gateway runs, steering included
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
    running = agent->state()->config;
    agent->stop();
    gateway->reclaim();
  }
  {
    AgentOptions o;
    o.listen = "unix:" + dir.file("b.sock");
    o.state_path.clear();
    std::string err;
    auto agent = Agent::start(o, sink, running, 4, err);
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

  // A small batch on a large running state: 3 changes (an upsert that moves a rule, a new
  // rule, a delete) on m rules.
  if (m > 0) {
    config::GatewayConfig big = cfg;
    big.capacities.exact_entries = m + 1024;
    big.steering.reserve(m);
    for (uint32_t k = 0; k < m; ++k) {
      config::SteeringRule r;
      r.id = 1 + k;
      r.dst = *net::parse_ip(test::ipv4_from(r.id));
      r.dest_qp = r.id & 0xFFFFFF;
      r.policy = "base";
      big.steering.push_back(std::move(r));
    }
    auto small_batch = [&](uint32_t round) {
      v1::ApplyRequest req;
      *req.add_changes()->mutable_upsert_steering() =
          test::exact_rule(1 + round, "10.255.0.1", 100 + round, "base");
      *req.add_changes()->mutable_upsert_steering() =
          test::exact_rule(m + 1 + round, "10.255.0.2", 100 + round, "base");
      req.add_changes()->set_delete_steering(m / 2 + round);
      return req;
    };
    const std::string label = "3 changes on " + std::to_string(m) + " rules";
    {
      AcceptingSink accept;
      AgentOptions o;
      o.listen = "unix:" + dir.file("d.sock");
      o.state_path.clear();
      std::string err;
      auto agent = Agent::start(o, accept, big, 0, err);
      for (uint32_t round = 0; agent && round < 3; ++round)
        ok &= run(("agent only, not persisted: " + label).c_str(), *agent, small_batch(round));
      if (agent) agent->stop();
    }
    auto big_gateway = dataplane::Gateway::create(big, 1, dataplane::PortEnv{}, nullptr, cerr);
    if (!big_gateway) {
      std::fprintf(stderr, "Gateway::create (%u rules): %s: %s\n", m, cerr.path.c_str(),
                   cerr.message.c_str());
      return 1;
    }
    GatewaySink big_sink(*big_gateway, &control);
    for (bool persisted : {false, true}) {
      AgentOptions o;
      o.listen = "unix:" + dir.file(persisted ? "f.sock" : "e.sock");
      if (persisted)
        o.state_path = dir.file("big-state.json");
      else
        o.state_path.clear();
      std::string err;
      auto agent = Agent::start(o, big_sink, big, 0, err);
      if (!persisted) {
        for (uint32_t round = 6; agent && round < 9u; ++round) {
          ok &= run(("real Gateway, not persisted: " + label).c_str(), *agent, small_batch(round));
          big_gateway->reclaim();
        }
      } else if (agent) {
        ok &= run(("real Gateway, persisted, first change (writes the snapshot): " + label).c_str(),
                  *agent, small_batch(10));
        big_gateway->reclaim();
        std::vector<double> three, ten;
        // Rounds of their own (the unpersisted agent above used 6..8).
        for (uint32_t round = 11; round < 21; ++round) {
          ok &= run(("real Gateway, persisted (journal): " + label).c_str(), *agent,
                    small_batch(round));
          three.push_back(g_last_ms);
          big_gateway->reclaim();
        }
        for (uint32_t round = 0; round < 10; ++round) {
          v1::ApplyRequest req;
          for (uint32_t j = 0; j < 8; ++j) {
            const uint32_t id = m + 1000 + round * 8 + j;
            *req.add_changes()->mutable_upsert_steering() =
                test::exact_rule(id, test::ipv4_from(id), id & 0xFFFFFF, "base");
          }
          req.add_changes()->set_delete_steering(1000 + round * 2);
          req.add_changes()->set_delete_steering(1001 + round * 2);
          ok &= run(
              ("real Gateway, persisted (journal): 10 changes on " + std::to_string(m) + " rules")
                  .c_str(),
              *agent, req);
          ten.push_back(g_last_ms);
          big_gateway->reclaim();
        }
        // Steering churn: `churn` upserts per Apply that move rules to another destination
        // (a delete and an insert in the data plane's hash each), as updates_under_load's
        // churn does, without its daemon, traffic and Python client.
        std::vector<double> churn_ms;
        for (uint32_t round = 0; churn > 0 && round < 8; ++round) {
          v1::ApplyRequest req;
          req.mutable_changes()->Reserve(int(churn));
          for (uint32_t k = 0; k < churn; ++k) {
            const uint32_t id = 100000 + k;  // clear of the ids the batches above touch
            const std::string dst = (round & 1 ? "10." : "11.") + test::ipv4_from(id).substr(3);
            *req.add_changes()->mutable_upsert_steering() =
                test::exact_rule(id, dst, id & 0xFFFFFF, "base");
          }
          ok &= run(("real Gateway, persisted (journal): churn on " + std::to_string(m) + " rules")
                        .c_str(),
                    *agent, req);
          churn_ms.push_back(g_last_ms);
          big_gateway->reclaim();
        }
        if (!churn_ms.empty())
          std::printf(
              "churn on %u rules, %u moves per Apply, client time: min %.1f / median %.1f "
              "ms = %.0f changes/s at the median\n",
              m, churn, *std::min_element(churn_ms.begin(), churn_ms.end()), median(churn_ms),
              churn / (median(churn_ms) / 1e3));
        // What the persist phase cannot go below on this disk, now: a record-sized write() +
        // fdatasync() in the same directory, 10 times.
        std::vector<double> raw;
        {
          const std::string raw_path = dir.file("raw-sync");
          const int fd = ::open(raw_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0640);
          const std::string record(300, 'r');
          for (int k = 0; fd >= 0 && k < 10; ++k) {
            const auto t0 = std::chrono::steady_clock::now();
            if (::write(fd, record.data(), record.size()) != ssize_t(record.size()) ||
                ::fdatasync(fd) != 0)
              std::fprintf(stderr, "raw write + fdatasync failed\n");
            raw.push_back(ms_since(t0));
          }
          if (fd >= 0) ::close(fd);
        }
        auto range = [](const std::vector<double>& v) {
          char buf[128];
          std::vector<double> sorted = v;
          std::sort(sorted.begin(), sorted.end());
          std::snprintf(buf, sizeof buf, "min %.2f / median %.2f / p90 %.2f / max %.2f ms",
                        sorted.front(), median(v), sorted[(sorted.size() * 9 + 9) / 10 - 1],
                        sorted.back());
          return std::string(buf);
        };
        std::printf(
            "persisted Apply on %u rules, client time: 3 changes %s; 10 changes %s; raw 300-byte "
            "write + fdatasync beside them: %s\n",
            m, range(three).c_str(), range(ten).c_str(), range(raw).c_str());
        // The persistence before the journal: the whole state file per Apply.
        std::vector<double> whole;
        const auto state = agent->state();
        for (int k = 0; k < 3; ++k) {
          const auto t0 = std::chrono::steady_clock::now();
          if (auto why = write_state_file(dir.file("whole.json"), state->config, state->generation);
              !why.empty())
            std::fprintf(stderr, "write_state_file: %s\n", why.c_str());
          whole.push_back(ms_since(t0));
        }
        std::printf(
            "persisted Apply on %u rules, client time, median: 3 changes %.2f ms, 10 changes "
            "%.2f ms (journal); the whole state file (%.1f MB) as written per Apply before the "
            "journal: %.1f ms median of 3 (x%.0f)\n",
            m, median(three), median(ten),
            double(std::filesystem::file_size(dir.file("whole.json"))) / 1e6, median(whole),
            median(whole) / std::max(median(three), 1e-3));
        // Restore: snapshot + 21 journal records, then the snapshot alone (after stop).
        config::GatewayConfig file_cfg = big;
        file_cfg.steering.clear();
        auto t0 = std::chrono::steady_clock::now();
        auto st = restore_startup_state(o.state_path, file_cfg);
        const double with_journal = ms_since(t0);
        t0 = std::chrono::steady_clock::now();
        big = agent->state()->config;  // what the Gateway runs now, for the next agent
        agent->stop();
        const double stop_ms = ms_since(t0);
        t0 = std::chrono::steady_clock::now();
        auto st2 = restore_startup_state(o.state_path, file_cfg);
        const double snapshot_only = ms_since(t0);
        std::printf(
            "restore of %zu rules: snapshot + journal %.0f ms (generation %lu), snapshot alone "
            "%.0f ms (generation %lu); stop with compaction %.0f ms\n",
            st.config.steering.size(), with_journal, (unsigned long)st.generation, snapshot_only,
            (unsigned long)st2.generation, stop_ms);
        ok &= st.restored && st2.restored && st.generation == st2.generation &&
              st.config.steering.size() == st2.config.steering.size();
        agent.reset();
        continue;
      }
      if (agent) {
        big = agent->state()->config;  // what the Gateway runs now, for the next agent
        agent->stop();
      }
    }
    big_gateway.reset();
  }
  rte_eal_cleanup();
  return ok ? 0 : 1;
}
