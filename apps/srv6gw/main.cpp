// SPDX-License-Identifier: BSD-3-Clause
// srv6gw: the DPDK application around the data plane. The main lcore parses options, loads
// the configuration, brings up ports and pools, launches one worker per queue, then runs the
// control loop (RCU reclamation, periodic stats, stop conditions) until a signal, --duration
// or --until-idle ends it, and prints the final statistics.
#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_ethdev.h>
#include <rte_lcore.h>
#include <rte_pdump.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <thread>

#include "agent/agent.hpp"
#include "agent/options.hpp"
#include "agent/persist.hpp"
#include "agent/state_sink.hpp"
#include "app.hpp"
#include "config/loader.hpp"
#include "engine_runner.hpp"
#include "link_watch.hpp"
#include "metrics.hpp"
#include "options.hpp"
#include "ports.hpp"
#include "service.hpp"
#include "stats.hpp"
#include "telemetry.hpp"
#include "worker.hpp"

namespace srv6gw::app {
namespace {

using Clock = std::chrono::steady_clock;

constexpr auto kControlTick = std::chrono::milliseconds(10);
constexpr auto kReclaimPeriod = std::chrono::milliseconds(100);
constexpr double kDrainSeconds = 100e-6;

void on_signal(int) {
  g_stop.store(true, std::memory_order_relaxed);
}

void setup_logging(const std::string& level) {
  auto logger = spdlog::stderr_color_mt("srv6gw");
  logger->set_pattern("%Y-%m-%d %H:%M:%S.%e srv6gw %^%l%$: %v");
  logger->set_level(spdlog::level::from_str(level == "warning" ? "warn" : level));
  spdlog::set_default_logger(logger);
}

void install_signal_handlers() {
  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
}

std::vector<char*> c_argv(std::vector<std::string>& args) {
  std::vector<char*> v;
  for (auto& a : args) v.push_back(a.data());
  v.push_back(nullptr);
  return v;
}

// Multi-segment TX of one fabric port: what the PMD offers, or what --assume-multiseg-tx says.
void settle_multiseg_tx(const App& app, PortSetup& fabric) {
  if (!fabric.multiseg_tx && app.options.assume_multiseg_tx) {
    spdlog::warn(
        "fabric port {}: multi-segment TX assumed (--assume-multiseg-tx) although the "
        "PMD does not advertise it",
        fabric.name);
    fabric.multiseg_tx = true;
  }
  if (!fabric.multiseg_tx)
    spdlog::warn(
        "fabric port {} has no multi-segment TX: encapsulations longer than the {} B "
        "mbuf headroom (6+ SIDs) will be dropped as no_headroom",
        fabric.name, RTE_PKTMBUF_HEADROOM);
}

// Resolves and probes the two ports of one rail into `rail.host`/`rail.fabric`; `used_ports`
// collects the port ids of the rails before it (a port serves one rail).
bool open_rail_ports(RailSetup& rail, bool named, std::vector<uint16_t>& used_ports) {
  std::string error;
  const std::string where = named ? "rail " + rail.config.name + ": " : std::string();
  auto host_id = resolve_port(rail.config.host_port.device, error);
  if (!host_id) {
    spdlog::error("{}host port: {}", where, error);
    return false;
  }
  auto fabric_id = resolve_port(rail.config.fabric_port.device, error);
  if (!fabric_id) {
    spdlog::error("{}fabric port: {}", where, error);
    return false;
  }
  if (*host_id == *fabric_id) {
    spdlog::error("{}host and fabric port are the same port ({}): a gateway needs two", where,
                  rail.config.host_port.device);
    return false;
  }
  for (uint16_t id : {*host_id, *fabric_id})
    if (std::find(used_ports.begin(), used_ports.end(), id) != used_ports.end()) {
      spdlog::error("{}port {} is already a port of another rail", where, id);
      return false;
    }
  used_ports.insert(used_ports.end(), {*host_id, *fabric_id});
  if (!probe_port(*host_id, "host", *rail.host, error) ||
      !probe_port(*fabric_id, "fabric", *rail.fabric, error)) {
    spdlog::error("{}{}", where, error);
    return false;
  }
  return true;
}

// Brings every part of the gateway up; on failure logs why and returns false (the caller
// tears down whatever was set up).
bool bring_up(App& app) {
  std::string error;
  std::vector<uint16_t> used_ports;
  unsigned workers = 0;
  uint16_t max_queues = 0;
  std::vector<PortSetup*> all_ports;
  for (config::Rail& rc : config::effective_rails(app.config)) {
    RailSetup& rail = app.rails.emplace_back();
    rail.config = std::move(rc);
    const bool first = app.rails.size() == 1;
    rail.host = first ? &app.host : &app.more_ports.emplace_back();
    rail.fabric = first ? &app.fabric : &app.more_ports.emplace_back();
    rail.first_worker = workers;
    if (!open_rail_ports(rail, !app.config.rails.empty(), used_ports)) return false;
    if (rail.config.queues == 0) {
      spdlog::error("queues is 0: at least one worker queue is needed");
      return false;
    }
    workers += rail.config.queues;
    max_queues = std::max(max_queues, rail.config.queues);
    all_ports.insert(all_ports.end(), {rail.host, rail.fabric});
  }
  if (rte_lcore_count() < 1u + workers) {
    spdlog::error(
        "{} worker(s) ({} rail(s), one per queue) need {} lcores (main + one per worker); EAL "
        "has {}: give EAL -l 0-{} (or --lcores to map them onto fewer cores)",
        workers, app.rails.size(), workers + 1, rte_lcore_count(), workers);
    return false;
  }
  unsigned lcore;
  RTE_LCORE_FOREACH_WORKER(lcore) {
    if (app.worker_lcores.size() == workers) break;
    app.worker_lcores.push_back(lcore);
  }
  if (rte_lcore_count() > 1u + workers)
    spdlog::warn("{} lcores given, {} used (main + {} workers)", rte_lcore_count(), workers + 1,
                 workers);

  if (!create_pools(all_ports, max_queues, workers, app.config.mbufs, app.pools, error)) {
    spdlog::error("{}", error);
    return false;
  }
  std::vector<dataplane::RailEnv> rail_envs;
  for (RailSetup& rail : app.rails) {
    const uint16_t queues = rail.config.queues;
    rail.host->ip_mtu = rail.config.host_port.mtu;
    rail.fabric->ip_mtu = rail.config.fabric_port.mtu;
    if (!configure_and_start(*rail.host, queues, app.pools.packets_for(rail.host->socket), true,
                             error) ||
        !configure_and_start(*rail.fabric, queues, app.pools.packets_for(rail.fabric->socket), true,
                             error)) {
      spdlog::error("{}", error);
      return false;
    }
    configure_pause(*rail.host, rail.config.host_port.lossless.enabled,
                    rail.config.host_port.lossless.pfc_priorities);
    configure_pause(*rail.fabric, rail.config.fabric_port.lossless.enabled,
                    rail.config.fabric_port.lossless.pfc_priorities);
    settle_multiseg_tx(app, *rail.fabric);
    dataplane::RailEnv& env = rail_envs.emplace_back();
    env.ports.host_port_mac = rail.host->mac;
    env.ports.fabric_port_mac = rail.fabric->mac;
    env.ports.fabric_multiseg_tx = rail.fabric->multiseg_tx;
    env.workers = queues;
  }

  config::ConfigError cerr;
  app.gateway = dataplane::Gateway::create(app.config, rail_envs,
                                           app.pools.headers_for(app.fabric.socket), cerr);
  if (!app.gateway) {
    spdlog::error("gateway refused the configuration: {}{}{}", cerr.path,
                  cerr.path.empty() ? "" : ": ", cerr.message);
    return false;
  }
  if (app.gateway->worker_count() != workers) {
    spdlog::error("gateway created {} worker contexts for {} queues", app.gateway->worker_count(),
                  workers);
    return false;
  }
  return true;
}

LosslessParams lossless_params(const config::LosslessConfig& c) {
  LosslessParams p;
  p.enabled = c.enabled;
  p.capacity = c.backlog_frames;
  p.ecn_threshold = c.ecn_threshold_frames;
  p.storm_tsc = rte_get_tsc_hz() / 1000 * c.storm_bound_ms;
  return p;
}

void launch_workers(App& app) {
  const uint64_t drain_tsc = uint64_t(double(rte_get_tsc_hz()) * kDrainSeconds);
  app.worker_args.resize(app.worker_lcores.size());
  for (const RailSetup& rail : app.rails) {
    for (uint16_t q = 0; q < rail.config.queues; ++q) {
      const size_t i = rail.first_worker + q;
      WorkerArgs& a = app.worker_args[i];
      a.gateway = app.gateway.get();
      a.context = app.gateway->worker(unsigned(i));
      a.host_port = rail.host->port_id;
      a.fabric_port = rail.fabric->port_id;
      a.queue = q;
      a.drain_tsc = drain_tsc;
      a.to_fabric = lossless_params(rail.config.fabric_port.lossless);
      a.to_host = lossless_params(rail.config.host_port.lossless);
      rte_eal_remote_launch(worker_main, &a, app.worker_lcores[i]);
      if (app.config.rails.empty())
        spdlog::info("worker {} on lcore {} serves queue {} of {} and {}", i, app.worker_lcores[i],
                     q, rail.host->name, rail.fabric->name);
      else
        spdlog::info("worker {} on lcore {} serves rail {} queue {} of {} and {}", i,
                     app.worker_lcores[i], rail.config.name, q, rail.host->name, rail.fabric->name);
    }
  }
  const config::LosslessConfig& ll = app.config.fabric_port.lossless;
  if (ll.enabled)
    spdlog::info(
        "lossless: on, backlog {} frames per direction and worker, ECN threshold {}, "
        "pause-storm bound {} ms",
        ll.backlog_frames, ll.ecn_threshold_frames, ll.storm_bound_ms);
  else
    spdlog::info("lossless: off (frames the TX queue refuses are dropped as tx_full)");
}

// The main lcore's loop until a stop condition. Never touches packets.
void control_loop(App& app, ServiceNotifier& service) {
  const auto start = Clock::now();
  const uint32_t interval_ms = app.options.stats_interval_ms.value_or(app.config.stats_interval_ms);
  auto next_stats = start + std::chrono::milliseconds(interval_ms);
  auto next_reclaim = start + kReclaimPeriod;
  uint64_t last_rx = 0;
  auto last_rx_change = start;
  Snapshot prev;
  {
    std::lock_guard lock(app.control_mutex);
    prev = take_snapshot(app);
    if (!app.engine)
      app.engine =
          std::make_unique<EngineRunner>(*app.gateway, app.gateway->running_config().engine);
    app.engine->set_event_bus(app.event_bus);
    std::vector<ProbeRunner::RailPort> probe_ports;
    for (const RailSetup& rail : app.rails)
      probe_ports.push_back({app.pools.packets_for(rail.fabric->socket), rail.fabric->mac});
    app.prober = std::make_unique<ProbeRunner>(*app.gateway, *app.engine, std::move(probe_ports));
  }
  LinkWatch link_watch(app, app.options.link_propagation);
  while (!g_stop.load(std::memory_order_relaxed)) {
    // The local SR engine wants the ring drained about every interval (100 us by default);
    // everything else here is coarse.
    const auto tick = std::min<std::chrono::microseconds>(
        {kControlTick, std::chrono::microseconds(app.engine->tick_interval_us()),
         std::chrono::microseconds(app.prober->tick_interval_us())});
    std::this_thread::sleep_for(tick);
    const auto now = Clock::now();
    service.tick(now);  // the watchdog sees this loop alive
    {
      std::lock_guard lock(app.control_mutex);
      const uint64_t now_ns = uint64_t(
          std::chrono::duration_cast<std::chrono::nanoseconds>(now.time_since_epoch()).count());
      app.engine->poll(now_ns);
      app.prober->poll(now_ns);
    }
    link_watch.poll();
    if (now >= next_reclaim) {
      std::lock_guard lock(app.control_mutex);
      app.gateway->reclaim();
      next_reclaim = now + kReclaimPeriod;
    }
    if (interval_ms != 0 && now >= next_stats) {
      Snapshot cur;
      {
        std::lock_guard lock(app.control_mutex);
        cur = take_snapshot(app);
      }
      for (const std::string& line : interval_lines(prev, cur)) spdlog::info("{}", line);
      prev = std::move(cur);
      next_stats = now + std::chrono::milliseconds(interval_ms);
    }
    if (app.options.duration_s &&
        now - start >= std::chrono::duration<double>(*app.options.duration_s)) {
      spdlog::info("duration of {} s reached", *app.options.duration_s);
      break;
    }
    if (app.options.until_idle_ms) {
      uint64_t rx = 0;
      for (const RailSetup& rail : app.rails)
        for (const PortSetup* p : {rail.host, rail.fabric}) {
          rte_eth_stats st{};
          rte_eth_stats_get(p->port_id, &st);
          rx += st.ipackets;
        }
      if (rx != last_rx) {
        last_rx = rx;
        last_rx_change = now;
      } else if (rx != 0 &&
                 now - last_rx_change >= std::chrono::milliseconds(*app.options.until_idle_ms)) {
        spdlog::info("every RX port idle for {} ms after {} packets", *app.options.until_idle_ms,
                     rx);
        break;
      }
    }
  }
  if (g_stop.load(std::memory_order_relaxed)) spdlog::info("stop requested by signal");
  g_stop.store(true, std::memory_order_relaxed);
}

uint64_t steady_now_ns() {
  return uint64_t(
      std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch())
          .count());
}

// gRPC SetPathState (an agent thread): resolves the path in the engine's view of the running
// policies and marks it down or up; the new factors are published before this returns.
agent::PathStateOutcome set_path_state(App& app, const agent::PathStateCommand& cmd) {
  using Status = agent::PathStateOutcome::Status;
  agent::PathStateOutcome out;
  std::lock_guard lock(app.control_mutex);
  if (!app.running || !app.engine) {
    out.status = Status::unavailable;
    out.message = "the gateway is not running";
    return out;
  }
  if (!app.engine->engine().params().enabled) {
    out.status = Status::engine_disabled;
    out.message = "the local SR engine is disabled (engine/enabled is false)";
    return out;
  }
  bool policy_known = false;
  std::optional<engine::PathView> hit;
  for (const engine::PathView& v : app.engine->engine().paths()) {
    if (v.policy != cmd.policy) continue;
    policy_known = true;
    if (cmd.segment_list ? v.segment_list == *cmd.segment_list : v.path_id == *cmd.path_id) {
      hit = v;
      break;
    }
  }
  if (!hit) {
    out.status = Status::not_found;
    out.message = policy_known ? "the policy has no such segment list" : "no such policy";
    return out;
  }
  bool changed = false;
  if (!app.engine->set_admin(hit->path_id, cmd.up, steady_now_ns(), &changed)) {
    out.status = Status::not_found;
    out.message = "the local SR engine does not know this path id";
    return out;
  }
  out.status = Status::ok;
  out.segment_list = hit->segment_list;
  out.path_id = hit->path_id;
  out.changed = changed;
  for (const engine::PathView& v : app.engine->engine().paths())
    if (v.path_id == hit->path_id) out.factor = v.factor;
  return out;
}

void print_final(App& app) {
  Snapshot s;
  std::vector<dataplane::Gateway::PathStats> paths;
  {
    std::lock_guard lock(app.control_mutex);
    s = take_snapshot(app);
    paths = app.gateway->path_stats();
  }
  std::string engine_text, engine_json;
  if (app.engine) {
    std::lock_guard lock(app.control_mutex);
    engine_text = app.engine->report();
    engine_json = app.engine->json();
    if (app.prober) {
      engine_text += app.prober->report();
      // The engine's JSON object gains the prober's figures under "probe".
      engine_json.insert(engine_json.size() - 1, ",\"probe\":" + app.prober->json());
    }
  }
  std::fputs(final_report(app, s, paths).c_str(), stdout);
  std::fputs(engine_text.c_str(), stdout);
  std::fflush(stdout);
  if (app.options.stats_json_path) {
    std::ofstream f(*app.options.stats_json_path);
    f << final_json(app, s, paths, engine_json);
    if (!f) spdlog::error("cannot write {}", *app.options.stats_json_path);
  }
}

void tear_down(App& app) {
  {
    std::lock_guard lock(app.control_mutex);
    app.running = false;
  }
  for (const RailSetup& rail : app.rails)
    for (PortSetup* p : {rail.host, rail.fabric})
      if (!p->name.empty()) stop_and_close(*p);
  app.prober.reset();   // holds the engine
  app.engine.reset();   // holds the Gateway
  app.gateway.reset();  // after the ports: no mbuf from its header pool is left in a ring
  app.pools.free_all();
}

int run(int argc, char** argv) {
  SplitArgs split = split_args(argc, argv);
  const std::string prog = argc > 0 ? argv[0] : "srv6gw";
  bool eal_help = false, eal_version = false;
  if (!split.had_separator)
    for (const auto& a : split.eal) {
      eal_help |= a == "--help" || a == "-h";
      eal_version |= a == "--version";  // `srv6gw --version` (help2man, operators)
    }
  agent::AgentOptions agent_opts;
  auto parsed = parse_options(split.app, agent_opts);
  if (eal_version ||
      (std::holds_alternative<Options>(parsed) && std::get<Options>(parsed).version)) {
    std::cout << "srv6gw " SRV6GW_VERSION "\n";
    return 0;
  }
  if (auto* e = std::get_if<OptionsError>(&parsed)) {
    if (!eal_help) {
      std::cerr << "srv6gw: " << e->message << " (" << prog << " -- --help)\n";
      return 2;
    }
  }
  if (eal_help || std::get<Options>(parsed).help) {
    std::cout << usage(prog);
    return 0;
  }

  // Static storage on purpose: the EAL telemetry thread may still run a command while the
  // process exits; it must find a live App whose `running` is false.
  static App& app = *new App;
  app.options = std::get<Options>(parsed);
  setup_logging(app.options.log_level);

  auto loaded = config::load_config_file(app.options.config_path);
  if (auto* e = std::get_if<config::ConfigError>(&loaded)) {
    std::cerr << "srv6gw: bad configuration " << app.options.config_path << ": "
              << (e->path.empty() ? "" : e->path + ": ") << e->message << "\n";
    return 1;
  }
  app.config = std::move(std::get<config::GatewayConfig>(loaded));
  if ((app.options.host_port || app.options.fabric_port) && !app.config.rails.empty()) {
    std::cerr << "srv6gw: --host-port/--fabric-port name the ports of a single pair; "
              << app.options.config_path << " has rails (set their ports there)\n";
    return 1;
  }
  if (app.options.host_port) app.config.host_port.device = *app.options.host_port;
  if (app.options.fabric_port) app.config.fabric_port.device = *app.options.fabric_port;
  if (app.options.stats_interval_ms) app.config.stats_interval_ms = *app.options.stats_interval_ms;
  if (app.config.rails.empty() &&
      (app.config.host_port.device.empty() || app.config.fabric_port.device.empty())) {
    std::cerr << "srv6gw: no " << (app.config.host_port.device.empty() ? "host" : "fabric")
              << " port: set it in the configuration or with --"
              << (app.config.host_port.device.empty() ? "host" : "fabric") << "-port\n";
    return 1;
  }

  // State applied over gRPC before a restart wins over the file for policies, steering and
  // local SIDs; it is restored before any port starts, so traffic never sees the file's rules
  // first. An unusable state file is set aside (never silently discarded) and logged.
  uint64_t generation = 0;
  agent::StateExtras restored_extras;
  if (agent_opts.enabled) {
    agent::StartupState st = agent::restore_startup_state(agent_opts.state_path, app.config);
    if (st.restored)
      spdlog::info("agent: restored generation {} from {}", st.generation, agent_opts.state_path);
    if (!st.set_aside.empty())
      spdlog::error("agent: state file {} unusable, kept as {}; starting from {}",
                    agent_opts.state_path, st.set_aside, app.options.config_path);
    app.config = std::move(st.config);
    generation = st.generation;
    restored_extras = st.extras;
  }

  std::vector<std::string> eal_args = split.eal;
  auto eal_argv = c_argv(eal_args);
  int eal_rc = rte_eal_init(int(eal_args.size()), eal_argv.data());
  if (eal_rc < 0) {
    spdlog::error("EAL init failed: {}", rte_strerror(rte_errno));
    return 1;
  }
  // EAL leaves what it did not parse behind argv[eal_rc] (its getopt permuted eal_argv).
  if (size_t(eal_rc) + 1 < eal_args.size()) {
    spdlog::error("unexpected argument '{}' before '--' (srv6gw options go after '--')",
                  eal_argv[size_t(eal_rc) + 1]);
    rte_eal_cleanup();
    return 2;
  }
  install_signal_handlers();
  if (int rc = rte_pdump_init(); rc != 0)
    spdlog::warn("pdump init failed ({}): dpdk-dumpcap will not attach", rte_strerror(rte_errno));

  size_t local_sids = app.config.local_sids.size();
  for (const config::Rail& r : app.config.rails) local_sids += r.local_sids.size();
  spdlog::info(
      "srv6gw starting: config {}, {} rail(s), {} policies, {} steering rules, {} local SIDs",
      app.options.config_path, config::effective_rails(app.config).size(),
      app.config.policies.size(), app.config.steering.size(), local_sids);
  int rc = 0;
  if (bring_up(app)) {
    register_telemetry(app);
    // The local SR engine exists before the first packet, so that paths the controller took
    // down before a restart are down from the start.
    {
      std::lock_guard lock(app.control_mutex);
      app.engine =
          std::make_unique<EngineRunner>(*app.gateway, app.gateway->running_config().engine);
      for (const agent::PathDown& d : restored_extras.paths_down) {
        if (app.engine->set_admin(d.path_id, false, steady_now_ns()))
          spdlog::info("engine: policy {} segment-list {} (path {}) restored down", d.policy,
                       d.segment_list, d.path_id);
        else
          spdlog::warn("engine: path {} ({}/{}) was down before the restart but is unknown now",
                       d.path_id, d.policy, d.segment_list);
      }
    }
    // The agent starts before the workers: a gateway whose control path cannot listen (socket
    // in use, bad certificates) stops here instead of forwarding unmanaged.
    agent::GatewaySink sink(*app.gateway, &app.control_mutex, [] {
      std::vector<agent::PortCounters> ports;
      for (const RailSetup& rail : app.rails)
        for (const PortSetup* p : {rail.host, rail.fabric}) {
          ports.push_back(agent::ethdev_port_counters(p->port_id, p->role, p->name));
          ports.back().rail = rail.config.name;
        }
      return ports;
    });
    sink.set_probe_source([] {  // under control_mutex (GatewaySink::stats)
      return app.running && app.prober ? app.prober->paths() : std::vector<engine::ProbePathView>{};
    });
    std::unique_ptr<agent::Agent> grpc_agent;
    std::string agent_error;
    if (agent_opts.enabled) {
      grpc_agent = agent::Agent::start(agent_opts, sink, app.config, generation, agent_error,
                                       restored_extras);
      if (grpc_agent) {
        spdlog::info("agent: listening on {}", grpc_agent->address());
        app.event_bus = &grpc_agent->events();
        grpc_agent->set_path_state_handler(
            [](const agent::PathStateCommand& cmd) { return set_path_state(app, cmd); });
      } else
        spdlog::error("agent: {} (run with --no-agent to go without the gRPC agent)", agent_error);
    }
    // The Prometheus endpoint (--metrics-address) serves while the workers run; a gateway
    // that was asked for one and cannot listen stops here, like the agent.
    std::unique_ptr<MetricsServer> metrics;
    if (app.options.metrics_address && (grpc_agent || !agent_opts.enabled)) {
      std::string error;
      metrics = MetricsServer::start(
          app, *metrics_bind_address(*app.options.metrics_address, error),
          [&grpc_agent]() -> std::optional<uint64_t> {
            if (!grpc_agent) return std::nullopt;
            return grpc_agent->generation();
          },
          error);
      if (metrics)
        spdlog::info("metrics: listening on http://{}/metrics", metrics->address());
      else
        spdlog::error("metrics: {}", error);
    }
    if ((grpc_agent || !agent_opts.enabled) && (metrics || !app.options.metrics_address)) {
      app.start_tsc = rte_rdtsc();
      {
        std::lock_guard lock(app.control_mutex);
        app.pools_at_start = app.pools.usage();
        app.running = true;
      }
      launch_workers(app);
      ServiceNotifier service;
      std::string pairs;
      for (const RailSetup& rail : app.rails)
        pairs += (pairs.empty() ? "" : ", ") + rail.host->name + " <-> " + rail.fabric->name;
      service.ready("forwarding " + pairs);
      control_loop(app, service);
      service.stopping();
      metrics.reset();  // no scrape reads the agent or the gateway past this point
      if (grpc_agent) {
        grpc_agent->set_path_state_handler({});
        std::lock_guard lock(app.control_mutex);
        if (app.engine) app.engine->set_event_bus(nullptr);
        app.event_bus = nullptr;
      }
      if (grpc_agent) grpc_agent->stop();  // no Apply may reach a Gateway being torn down
      rte_eal_mp_wait_lcore();
      print_final(app);
    } else {
      rc = 1;
    }
  } else {
    rc = 1;
  }
  tear_down(app);
  rte_pdump_uninit();
  rte_eal_cleanup();
  spdlog::info("srv6gw stopped");
  return rc;
}

}  // namespace
}  // namespace srv6gw::app

int main(int argc, char** argv) {
  return srv6gw::app::run(argc, argv);
}
