// SPDX-License-Identifier: BSD-3-Clause
// The data-plane step of a steering Apply on its own: policy::Runtime::apply_delta() of
// batches that move exact rules to another destination (one exact table delete and one insert
// each, what updates_under_load's churn does) on a table of --rules installed rules, while a
// reader thread steers lookups and reports quiescent states as a worker does (--no-reader:
// no registered reader, every grace period is over at once). No gRPC, validation or
// persistence: what the agent logs as "data plane" minus the gateway's layout refresh.
// Prints each round's ms and ns per change, then min and median. A/B: run the before and
// after binaries alternately in the same session; rounds vary with the machine's load.
//
//   policy-delta-bench --config config/examples/demo.json [--rules 1000000] [--batch 10000]
//                      [--rounds 20] [--mem 2048] [--no-reader]
#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_rcu_qsbr.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "config/loader.hpp"
#include "policy/runtime.hpp"

using namespace srv6gw;

namespace {

[[noreturn]] void fail(const std::string& what) {
  std::fprintf(stderr, "policy-delta-bench: %s\n", what.c_str());
  std::exit(1);
}

struct Options {
  std::string config;
  uint32_t rules = 1000000, batch = 10000, rounds = 20, mem_mb = 2048;
  bool reader = true;
};

Options parse_options(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) fail(a + " needs a value");
      return argv[++i];
    };
    if (a == "--config")
      o.config = value();
    else if (a == "--rules")
      o.rules = uint32_t(std::stoul(value()));
    else if (a == "--batch")
      o.batch = uint32_t(std::stoul(value()));
    else if (a == "--rounds")
      o.rounds = uint32_t(std::stoul(value()));
    else if (a == "--mem")
      o.mem_mb = uint32_t(std::stoul(value()));
    else if (a == "--no-reader")
      o.reader = false;
    else
      fail("unknown option " + a + " (see the head of tools/bench/policy_delta_bench.cpp)");
  }
  if (o.config.empty()) fail("--config FILE is required");
  if (o.batch == 0 || o.batch > o.rules) fail("--batch must be within 1..--rules");
  return o;
}

// Destination n of the rule pool: 10.0.0.0/8 then 11.0.0.0/8 (moves add 1 << 23).
net::IpAddr destination(uint32_t n) {
  net::Ipv4Addr a;
  a.bytes = {uint8_t(10 + (n >> 24)), uint8_t(n >> 16), uint8_t(n >> 8), uint8_t(n)};
  return net::IpAddr::v4(a);
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  const Options o = parse_options(argc, argv);
  auto loaded = config::load_config_file(o.config);
  if (auto* e = std::get_if<config::ConfigError>(&loaded))
    fail(o.config + ": " + e->path + ": " + e->message);
  config::GatewayConfig cfg = std::get<config::GatewayConfig>(std::move(loaded));
  if (cfg.policies.empty()) fail(o.config + ": needs a policy");

  const std::string prefix = "policy-delta-bench-" + std::to_string(getpid());
  std::vector<std::string> eal = {"policy-delta-bench",
                                  "--no-huge",
                                  "--no-shconf",
                                  "--file-prefix=" + prefix,
                                  "-m",
                                  std::to_string(o.mem_mb),
                                  "--no-pci",
                                  "--log-level=3",
                                  "-l",
                                  "0"};
  std::vector<char*> eal_argv;
  for (auto& a : eal) eal_argv.push_back(a.data());
  if (rte_eal_init(int(eal_argv.size()), eal_argv.data()) < 0)
    fail(std::string("rte_eal_init: ") + rte_strerror(rte_errno));
  const std::string runtime_dir = rte_eal_get_runtime_dir();

  const size_t qsbr_size = rte_rcu_qsbr_get_memsize(1);
  auto* qsbr = static_cast<rte_rcu_qsbr*>(std::aligned_alloc(RTE_CACHE_LINE_SIZE, qsbr_size));
  if (!qsbr || rte_rcu_qsbr_init(qsbr, 1) != 0) fail("rte_rcu_qsbr_init failed");

  // The installed rules: ids 1..rules, exact (destination n, DestQP n), all on policy 0.
  const std::string policy = cfg.policies[0].name;
  cfg.capacities.exact_entries = std::max(cfg.capacities.exact_entries, o.rules + o.batch);
  cfg.steering.clear();
  cfg.steering.reserve(o.rules);
  for (uint32_t n = 0; n < o.rules; ++n) {
    config::SteeringRule r;
    r.id = n + 1;
    r.kind = config::SteeringKind::exact;
    r.dst = destination(n);
    r.dest_qp = n & config::kMaxQp;
    r.policy = policy;
    cfg.steering.push_back(std::move(r));
  }
  config::ConfigError err;
  const auto t_create = std::chrono::steady_clock::now();
  std::unique_ptr<policy::Runtime> rt = policy::Runtime::create(cfg, qsbr, 0, SOCKET_ID_ANY, err);
  if (!rt) fail("create: " + err.path + ": " + err.message);
  std::printf("installed %u rules in %.0f ms (full path)\n", o.rules,
              std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t_create)
                  .count());

  // A worker's share: lookups of installed keys against the published view, a quiescent
  // state after each burst of them.
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> hits{0};
  std::thread reader;
  if (o.reader) {
    rte_rcu_qsbr_thread_register(qsbr, 0);
    rte_rcu_qsbr_thread_online(qsbr, 0);
    reader = std::thread([&] {
      uint32_t n = 0;
      uint64_t found = 0;
      while (!stop.load(std::memory_order_relaxed)) {
        const policy::View* v = rt->view();
        for (int k = 0; k < 32; ++k, n = (n + 7919) % o.rules) {
          const policy::ExactKey key =
              policy::make_exact_key(destination(n), n & config::kMaxQp, policy::kAnyDscp);
          found += policy::hash_lookup_slot(v->steering.exact, key) != policy::kNoSlot;
        }
        rte_rcu_qsbr_quiescent(qsbr, 0);
      }
      hits.store(found);
      rte_rcu_qsbr_thread_offline(qsbr, 0);
    });
  }

  // Each round moves the next `batch` rules of the pool to a destination of the other half
  // and back again on the following pass: a delete and an insert per change.
  std::vector<double> ms;
  std::vector<config::SteeringRule> before;
  before.reserve(o.batch);
  uint32_t next = 0;
  for (uint32_t round = 0; round < o.rounds; ++round) {
    before.clear();
    policy::SteeringDelta delta;
    delta.rules.reserve(o.batch);
    for (uint32_t k = 0; k < o.batch; ++k, next = (next + 1) % o.rules) {
      config::SteeringRule& r = cfg.steering[next];
      before.push_back(r);
      r.dst.bytes[0] ^= 1;  // 10.x <-> 11.x (distinct from every installed key)
    }
    for (uint32_t k = 0; k < o.batch; ++k) {
      const size_t i = (next + o.rules - o.batch + k) % o.rules;
      delta.rules.push_back({&before[k], &cfg.steering[i], i});
    }
    const auto t0 = std::chrono::steady_clock::now();
    if (auto e = rt->apply_delta(cfg, delta)) fail("apply_delta: " + e->path + ": " + e->message);
    const double t =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    rt->reclaim();
    ms.push_back(t);
    std::printf("round %2u: %8.2f ms  %7.0f ns/change\n", round, t, t * 1e6 / o.batch);
  }
  stop.store(true);
  if (reader.joinable()) reader.join();
  if (rt->steering_rule_count() != o.rules) fail("rule count changed");
  if (o.reader) std::printf("reader: %llu lookups hit\n", (unsigned long long)hits.load());
  std::printf(
      "apply_delta of %u changes on %u rules: min %.2f ms, median %.2f ms (%.0f ns/change, "
      "%.0f changes/s)%s\n",
      o.batch, o.rules, *std::min_element(ms.begin(), ms.end()), median(ms),
      median(ms) * 1e6 / o.batch, o.batch / (median(ms) / 1e3), o.reader ? "" : " [no reader]");
  rt.reset();
  std::free(qsbr);
  rte_eal_cleanup();
  std::error_code ec;
  std::filesystem::remove_all(runtime_dir, ec);
  return 0;
}
