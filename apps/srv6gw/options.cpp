// SPDX-License-Identifier: BSD-3-Clause
#include "options.hpp"

#include <CLI/CLI.hpp>
#include <cmath>

#include "metrics.hpp"

namespace srv6gw::app {

namespace {

constexpr const char* kFooter =
    "Ports are named as DPDK knows them (rte_eth_dev_get_port_by_name: a PCI address\n"
    "0000:3b:00.0 or a vdev name such as net_pcap0) or by numeric port id. One worker lcore\n"
    "serves each queue on both ports: give EAL at least queues + 1 lcores (-l 0-N).\n"
    "SIGINT/SIGTERM stop the gateway and print the final statistics.\n"
    "Telemetry: dpdk-telemetry.py -f PREFIX, commands /srv6gw/stats, /srv6gw/workers,\n"
    "/srv6gw/paths, /srv6gw/config. Capture: dpdk-dumpcap --file-prefix PREFIX -i PORT.";

std::string not_empty(const std::string& v) {
  return v.empty() ? "needs a value" : "";
}

// The whole command line after '--'; parsing fills `o` and `agent`.
void describe(CLI::App& app, Options& o, agent::AgentOptions& agent) {
  app.description("srv6gw: SRv6 encapsulation gateway for RoCEv2 (DPDK).");
  app.footer(kFooter);
  app.get_formatter()->column_width(30);
  // An option given twice takes the last value (as before CLI11).
  app.option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  app.add_option("--config", o.config_path,
                 "gateway configuration (JSON instance of srv6gw.yang), required")
      ->type_name("FILE")
      ->check(not_empty);
  app.add_option("--host-port", o.host_port, "host-side port (overrides host-port in the config)")
      ->type_name("NAME|ID")
      ->check(not_empty);
  app.add_option("--fabric-port", o.fabric_port,
                 "fabric-side port (overrides fabric-port in the config)")
      ->type_name("NAME|ID")
      ->check(not_empty);
  app.add_option("--stats-interval", o.stats_interval_ms,
                 "periodic stats line every MS ms (0 = off; default: the config's)")
      ->type_name("MS");
  app.add_option("--duration", o.duration_s, "stop after S seconds (fractions allowed)")
      ->type_name("S")
      ->check([](const std::string& v) {
        const double s = std::strtod(v.c_str(), nullptr);
        return std::isfinite(s) && s >= 0 ? "" : "wants seconds (>= 0), got '" + v + "'";
      });
  app.add_option("--until-idle", o.until_idle_ms,
                 "stop once both RX ports went idle for MS ms after traffic (replays)")
      ->type_name("MS")
      ->check(CLI::Range(uint32_t(1), UINT32_MAX).description(""));
  app.add_option("--log-level", o.log_level,
                 "trace, debug, info (default), warn, error, critical, off")
      ->type_name("LEVEL")
      ->check(CLI::IsMember(
          {"trace", "debug", "info", "warn", "warning", "err", "error", "critical", "off"}));
  app.add_option("--stats-json", o.stats_json_path,
                 "also write the final statistics as JSON to FILE")
      ->type_name("FILE")
      ->check(not_empty);
  app.add_flag("--assume-multiseg-tx", o.assume_multiseg_tx,
               "chain encap headers on a fabric PMD that handles chains without "
               "advertising multi-segment TX (net_null; benchmarks)");
  app.add_option("--metrics-address", o.metrics_address,
                 "serve Prometheus metrics on http://ADDR/metrics (PORT alone: 127.0.0.1; "
                 "default: no listener)")
      ->type_name("[HOST:]PORT")
      ->check(not_empty);
  app.add_flag("--version", o.version, "print the version and exit");
  app.add_flag("--link-propagation", o.link_propagation,
               "set the host port down while the fabric port's link is down (bump in the "
               "wire: the host fails over)");
  agent::add_agent_options(app, agent);
}

}  // namespace

std::variant<Options, OptionsError> parse_options(const std::vector<std::string>& args,
                                                  agent::AgentOptions& agent) {
  Options o;
  CLI::App app;
  describe(app, o, agent);
  std::vector<std::string> reversed(args.rbegin(), args.rend());  // CLI11 takes them reversed
  try {
    app.parse(reversed);
  } catch (const CLI::CallForHelp&) {
    o.help = true;
    return o;
  } catch (const CLI::ParseError& e) {
    return OptionsError{e.what()};
  }
  if (o.version) return o;
  if (o.config_path.empty()) return OptionsError{"--config FILE is required"};
  if (o.metrics_address) {
    std::string error;
    if (!metrics_bind_address(*o.metrics_address, error)) return OptionsError{error};
  }
  return o;
}

SplitArgs split_args(int argc, char** argv) {
  SplitArgs s;
  int i = 0;
  for (; i < argc; ++i) {
    if (i > 0 && std::string(argv[i]) == "--") {
      s.had_separator = true;
      ++i;
      break;
    }
    s.eal.emplace_back(argv[i]);
  }
  for (; i < argc; ++i) s.app.emplace_back(argv[i]);
  return s;
}

std::string usage(const std::string& prog) {
  Options o;
  agent::AgentOptions agent;
  CLI::App app;
  describe(app, o, agent);
  app.name(prog + " [EAL options] --");
  return app.help();
}

}  // namespace srv6gw::app
