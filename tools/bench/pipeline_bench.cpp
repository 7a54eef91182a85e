// SPDX-License-Identifier: BSD-3-Clause
// The gateway's burst pipeline on real mbufs without ports: what the worker lcore does per
// burst in the daemon, minus the PMDs. Each burst takes 32 mbufs from a pool and copies the
// next 32 frames of a pcap into them (as net_pcap infinite_rx does), runs
// process_host_burst (or process_fabric_burst) of a Gateway built from a daemon
// configuration file, and frees what comes out (as net_null TX does).
//
//   pipeline-bench --config CFG.json --pcap FRAMES.pcap [--bursts N] [--rounds R]
//                  [--direction host|fabric] [--multiseg] [--mem MB] [--modes M1,M2,...]
//
// --modes compares selection modes in one run: one gateway per mode (every policy of CFG
// switched to that mode), rounds interleaved across them (A B C A B C ...) so that the
// neighbours' load falls on all alike; prints min and median ns/packet of the pipeline per
// mode and the median ratio to the first mode.
//
// Prints TSC cycles and nanoseconds per packet inside the pipeline (the daemon's
// pipeline_tsc) and for the whole loop, fastest of R rounds (preemption by the neighbours
// only ever adds time), and the pipeline's median round. Under
// callgrind, instruction counts per packet are deterministic and independent of the load:
//   valgrind --tool=callgrind --toggle-collect='*run_bursts*' pipeline-bench ... --rounds 1
// (build with -march=x86-64-v3: valgrind does not decode AVX-512). Exits non-zero when the
// pipeline lost track of a packet or handled (encapsulated/decapsulated) none: the smoke test
// in the bench suite checks that, never a speed.
#include <rte_cycles.h>
#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_lcore.h>
#include <rte_mbuf.h>
#include <rte_mempool.h>
#include <unistd.h>

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <string>
#include <variant>
#include <vector>

#include "config/loader.hpp"
#include "dataplane/control/gateway.hpp"
#include "dataplane/datapath/burst.hpp"
#include "pcap/pcap.hpp"

namespace {

using namespace srv6gw;

constexpr uint16_t kBurst = dataplane::kBurstSize;
// The daemon's packet data room (apps/srv6gw/ports.hpp kPacketDataRoom): 128 B headroom +
// 4 KB frames in one segment.
constexpr uint16_t kDataRoom = 128 + 4736;

[[noreturn]] void fail(const std::string& what) {
  std::fprintf(stderr, "pipeline-bench: %s\n", what.c_str());
  std::exit(1);
}

struct Options {
  std::string config, pcap, direction = "host";
  uint64_t bursts = 200000;
  unsigned rounds = 5;
  bool multiseg = false;
  unsigned mem_mb = 1024;
  std::vector<config::SelectionMode> modes;  // --modes: compare these
};

Options parse_options(int argc, char** argv) {
  Options o;
  auto number = [&](int& i) -> uint64_t {
    if (i + 1 >= argc) fail(std::string(argv[i]) + " needs a value");
    char* end = nullptr;
    const uint64_t v = std::strtoull(argv[++i], &end, 10);
    if (end == nullptr || *end != '\0' || v == 0)
      fail(std::string(argv[i - 1]) + " wants a positive integer, got '" + argv[i] + "'");
    return v;
  };
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--config" && i + 1 < argc) {
      o.config = argv[++i];
    } else if (a == "--pcap" && i + 1 < argc) {
      o.pcap = argv[++i];
    } else if (a == "--direction" && i + 1 < argc) {
      o.direction = argv[++i];
      if (o.direction != "host" && o.direction != "fabric")
        fail("--direction is host or fabric, got '" + o.direction + "'");
    } else if (a == "--bursts") {
      o.bursts = number(i);
    } else if (a == "--rounds") {
      o.rounds = unsigned(number(i));
    } else if (a == "--mem") {
      o.mem_mb = unsigned(number(i));
    } else if (a == "--multiseg") {
      o.multiseg = true;
    } else if (a == "--modes" && i + 1 < argc) {
      std::string list = argv[++i];
      for (size_t start = 0; start <= list.size();) {
        const size_t comma = std::min(list.find(',', start), list.size());
        const std::string name = list.substr(start, comma - start);
        auto m = config::parse_selection_mode(name);
        if (!m) fail("--modes: unknown selection mode '" + name + "'");
        o.modes.push_back(*m);
        start = comma + 1;
      }
    } else {
      fail(
          "usage: pipeline-bench --config CFG.json --pcap FRAMES.pcap [--bursts N] "
          "[--rounds R] [--direction host|fabric] [--multiseg] [--mem MB] "
          "[--modes M1,M2,...]");
    }
  }
  if (o.config.empty() || o.pcap.empty()) fail("--config and --pcap are required");
  return o;
}

struct Frames {
  std::vector<std::vector<uint8_t>> data;
};

Frames read_frames(const std::string& path) {
  std::string error;
  auto reader = pcap::Reader::open(path, error);
  if (!reader) fail(path + ": " + error);
  Frames f;
  while (auto p = reader->next()) {
    if (p->data.size() + 128 > kDataRoom) fail(path + ": frame larger than the mbuf data room");
    f.data.push_back(std::move(p->data));
  }
  if (!reader->error().empty()) fail(path + ": " + reader->error());
  if (f.data.empty()) fail(path + ": no frames");
  return f;
}

struct RoundResult {
  uint64_t packets = 0;
  uint64_t loop_tsc = 0;
  uint64_t pipeline_tsc = 0;
};

// The measured loop (callgrind's --toggle-collect target): RX copy, pipeline, TX free.
[[gnu::noinline]] RoundResult run_bursts(dataplane::WorkerContext& w, rte_mempool* pool,
                                         const Frames& frames, uint64_t bursts, bool host,
                                         size_t& cursor) {
  dataplane::WorkerCounters& c = dataplane::counters(w);
  const uint64_t pipeline0 = c.pipeline_tsc;
  rte_mbuf* rx[kBurst];
  rte_mbuf* out[kBurst];
  RoundResult r;
  const size_t n_frames = frames.data.size();
  const uint64_t t0 = rte_rdtsc();
  for (uint64_t b = 0; b < bursts; ++b) {
    if (rte_pktmbuf_alloc_bulk(pool, rx, kBurst) != 0) fail("packet pool exhausted (mbuf leak?)");
    for (uint16_t i = 0; i < kBurst; ++i) {
      const std::vector<uint8_t>& f = frames.data[cursor];
      cursor = cursor + 1 == n_frames ? 0 : cursor + 1;
      std::memcpy(rte_pktmbuf_mtod(rx[i], uint8_t*), f.data(), f.size());
      rx[i]->data_len = uint16_t(f.size());
      rx[i]->pkt_len = uint32_t(f.size());
    }
    const uint16_t n = host ? dataplane::process_host_burst(w, rx, kBurst, out)
                            : dataplane::process_fabric_burst(w, rx, kBurst, out);
    rte_pktmbuf_free_bulk(out, n);
    dataplane::worker_quiescent(w);
  }
  r.loop_tsc = rte_rdtsc() - t0;
  r.packets = bursts * kBurst;
  r.pipeline_tsc = c.pipeline_tsc - pipeline0;
  return r;
}

// --modes: one gateway per selection mode, rounds interleaved, min/median ns per packet.
int compare_modes(const Options& o, const config::GatewayConfig& cfg, const Frames& frames,
                  rte_mempool* pool, rte_mempool* hdr_pool, const dataplane::PortEnv& env) {
  const bool host = o.direction == "host";
  struct Run {
    config::SelectionMode mode;
    std::unique_ptr<dataplane::Gateway> gw;
    std::vector<double> pipeline_ns;
    size_t cursor = 0;
  };
  std::vector<Run> runs;
  for (config::SelectionMode mode : o.modes) {
    config::GatewayConfig c = cfg;
    for (config::Policy& p : c.policies) {
      p.selection = mode;
      if (mode == config::SelectionMode::selective && p.spray_opcodes.empty())
        p.spray_opcodes = {7, 8};
    }
    config::ConfigError cerr;
    auto gw = dataplane::Gateway::create(c, 1, env, hdr_pool, cerr);
    if (!gw)
      fail(std::string(config::to_string(mode)) +
           ": gateway refused the configuration: " + cerr.path + ": " + cerr.message);
    runs.push_back(Run{mode, std::move(gw), {}, 0});
  }
  const double ns_per_tsc = 1e9 / double(rte_get_tsc_hz());
  for (Run& r : runs) {
    dataplane::WorkerContext& w = *r.gw->worker(0);
    dataplane::worker_online(w);
    run_bursts(w, pool, frames, std::min<uint64_t>(o.bursts, 1000), host, r.cursor);
  }
  for (unsigned round = 0; round < o.rounds; ++round) {
    for (Run& r : runs) {
      const RoundResult res = run_bursts(*r.gw->worker(0), pool, frames, o.bursts, host, r.cursor);
      r.pipeline_ns.push_back(double(res.pipeline_tsc) * ns_per_tsc / double(res.packets));
    }
  }
  std::printf("pipeline-bench: %zu frames, %" PRIu64
              " bursts x %u per round, %u rounds per mode (interleaved), %s direction\n",
              frames.data.size(), o.bursts, kBurst, o.rounds, o.direction.c_str());
  std::printf("%-10s %12s %12s %10s %12s %10s\n", "mode", "min ns/pkt", "median ns/pkt", "vs first",
              "handled", "overflow");
  double first_median = 0;
  bool ok = true;
  for (Run& r : runs) {
    dataplane::WorkerContext& w = *r.gw->worker(0);
    dataplane::worker_offline(w);
    std::vector<double> v = r.pipeline_ns;
    std::sort(v.begin(), v.end());
    const double median = v[v.size() / 2];
    if (first_median == 0) first_median = median;
    const dataplane::WorkerCounters& c = dataplane::counters(w);
    const uint64_t handled = host ? c.encap : c.decap;
    std::printf("%-10s %12.2f %12.2f %9.3fx %12" PRIu64 " %10" PRIu64 "\n",
                config::to_string(r.mode), v.front(), median, median / first_median, handled,
                c.balanced_overflow);
    if (handled == 0) ok = false;
    r.gw.reset();
  }
  if (!ok) fail("a mode handled no packet");
  if (rte_mempool_in_use_count(pool) != 0) fail("mbufs leaked");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const Options o = parse_options(argc, argv);
  const Frames frames = read_frames(o.pcap);
  auto loaded = config::load_config_file(o.config);
  if (auto* e = std::get_if<config::ConfigError>(&loaded))
    fail(o.config + ": " + e->path + ": " + e->message);
  const config::GatewayConfig cfg = std::get<config::GatewayConfig>(std::move(loaded));

  const std::string prefix = "pipeline-bench-" + std::to_string(getpid());
  std::vector<std::string> eal = {"pipeline-bench",
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

  rte_mempool* pool =
      rte_pktmbuf_pool_create("bench_pkt", 4095, 256, 0, kDataRoom, int(rte_socket_id()));
  rte_mempool* hdr_pool = rte_pktmbuf_pool_create("bench_hdr", 1023, 256, 0,
                                                  RTE_PKTMBUF_HEADROOM + 320, int(rte_socket_id()));
  if (!pool || !hdr_pool) fail(std::string("mempool: ") + rte_strerror(rte_errno));

  dataplane::PortEnv env;
  env.host_port_mac = *net::parse_mac("02:00:00:00:00:a1");
  env.fabric_port_mac = *net::parse_mac("02:00:00:00:00:a2");
  env.fabric_multiseg_tx = o.multiseg;
  if (!o.modes.empty()) {
    const std::string runtime_dir_copy = runtime_dir;
    const int rc = compare_modes(o, cfg, frames, pool, hdr_pool, env);
    rte_mempool_free(pool);
    rte_mempool_free(hdr_pool);
    rte_eal_cleanup();
    std::error_code ec;
    std::filesystem::remove_all(runtime_dir_copy, ec);
    return rc;
  }
  config::ConfigError cerr;
  const uint64_t t_create = rte_rdtsc();
  auto gw = dataplane::Gateway::create(cfg, 1, env, hdr_pool, cerr);
  if (!gw) fail("gateway refused the configuration: " + cerr.path + ": " + cerr.message);
  const double create_s = double(rte_rdtsc() - t_create) / double(rte_get_tsc_hz());
  dataplane::WorkerContext& w = *gw->worker(0);
  dataplane::worker_online(w);

  const bool host = o.direction == "host";
  size_t cursor = 0;
  // Warm-up: tables, branch predictors, the pool's per-lcore cache.
  run_bursts(w, pool, frames, std::min<uint64_t>(o.bursts, 1000), host, cursor);
  std::vector<double> pipe_rounds, loop_rounds;  // cycles/packet of each round
  for (unsigned round = 0; round < o.rounds; ++round) {
    const RoundResult r = run_bursts(w, pool, frames, o.bursts, host, cursor);
    pipe_rounds.push_back(double(r.pipeline_tsc) / double(r.packets));
    loop_rounds.push_back(double(r.loop_tsc) / double(r.packets));
  }
  dataplane::worker_offline(w);
  std::sort(pipe_rounds.begin(), pipe_rounds.end());
  std::sort(loop_rounds.begin(), loop_rounds.end());
  const double best_pipe = pipe_rounds.front(), median_pipe = pipe_rounds[pipe_rounds.size() / 2];
  const double best_loop = loop_rounds.front();

  const dataplane::WorkerCounters& c = dataplane::counters(w);
  const uint64_t rx = host ? c.rx_host : c.rx_fabric;
  const uint64_t handled = host ? c.encap : c.decap;
  const uint64_t passed = host ? c.passed_host_to_fabric : c.passed_fabric_to_host;
  uint64_t dropped = 0;
  std::string drops;
  for (size_t i = 0; i < c.drops.size(); ++i) {
    dropped += c.drops[i];
    if (c.drops[i] != 0)
      drops += std::string(drops.empty() ? "" : ", ") +
               dataplane::to_string(dataplane::DropReason(i)) + " " + std::to_string(c.drops[i]);
  }
  const double tsc_mhz = double(rte_get_tsc_hz()) / 1e6;
  std::printf("pipeline-bench: %zu frames, %" PRIu64
              " bursts x %u per round, %u rounds, %s "
              "direction, TSC %.0f MHz, gateway created in %.2f s\n",
              frames.data.size(), o.bursts, kBurst, o.rounds, o.direction.c_str(), tsc_mhz,
              create_s);
  // Other tools read the two lines' leading figures (cycles/packet): nanoseconds come after.
  const double ns_per_cycle = 1e3 / tsc_mhz;
  std::printf(
      "pipeline (process_%s_burst): %.1f cycles/packet = %.2f ns/packet (fastest round; "
      "median round %.1f cycles = %.2f ns)\n",
      o.direction.c_str(), best_pipe, best_pipe * ns_per_cycle, median_pipe,
      median_pipe * ns_per_cycle);
  std::printf(
      "whole loop (RX copy + pipeline + TX free): %.1f cycles/packet = %.2f Mpps at "
      "this TSC (fastest round) = %.2f ns/packet\n",
      best_loop, tsc_mhz / best_loop, best_loop * ns_per_cycle);
  std::printf("packets %" PRIu64 ": %s %" PRIu64 ", passed %" PRIu64 ", dropped %" PRIu64
              "%s%s%s\n",
              rx, host ? "encapsulated" : "decapsulated", handled, passed, dropped,
              drops.empty() ? "" : " (", drops.c_str(), drops.empty() ? "" : ")");

  gw.reset();
  const unsigned in_use = rte_mempool_in_use_count(pool);
  rte_mempool_free(pool);
  rte_mempool_free(hdr_pool);
  rte_eal_cleanup();
  std::error_code ec;
  std::filesystem::remove_all(runtime_dir, ec);

  if (handled + passed + dropped != rx) fail("packets unaccounted for");
  if (in_use != 0) fail(std::to_string(in_use) + " mbufs leaked");
  if (handled == 0) fail("the pipeline handled no packet");
  return 0;
}
