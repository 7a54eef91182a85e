// SPDX-License-Identifier: BSD-3-Clause
#include "options.hpp"

#include <charconv>
#include <cmath>
#include <cstdlib>

namespace srv6gw::app {

namespace {

std::optional<uint32_t> to_u32(const std::string& s) {
  uint32_t v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size() || s.empty()) return std::nullopt;
  return v;
}

std::optional<double> to_seconds(const std::string& s) {
  if (s.empty()) return std::nullopt;
  char* end = nullptr;
  double v = std::strtod(s.c_str(), &end);
  if (end != s.c_str() + s.size() || !std::isfinite(v) || v < 0) return std::nullopt;
  return v;
}

bool known_level(const std::string& l) {
  for (const char* k :
       {"trace", "debug", "info", "warn", "warning", "err", "error", "critical", "off"})
    if (l == k) return true;
  return false;
}

}  // namespace

std::variant<Options, OptionsError> parse_options(const std::vector<std::string>& args) {
  Options o;
  for (size_t i = 0; i < args.size(); ++i) {
    std::string name = args[i];
    std::optional<std::string> inline_value;
    if (auto eq = name.find('='); name.rfind("--", 0) == 0 && eq != std::string::npos) {
      inline_value = name.substr(eq + 1);
      name = name.substr(0, eq);
    }
    if (name == "--help" || name == "-h") {
      o.help = true;
      continue;
    }
    auto value = [&]() -> std::optional<std::string> {
      if (inline_value) return inline_value;
      if (i + 1 < args.size()) return args[++i];
      return std::nullopt;
    };
    auto missing = [&] { return OptionsError{"option " + name + " needs a value"}; };

    if (name == "--config") {
      auto v = value();
      if (!v || v->empty()) return missing();
      o.config_path = *v;
    } else if (name == "--host-port") {
      auto v = value();
      if (!v || v->empty()) return missing();
      o.host_port = *v;
    } else if (name == "--fabric-port") {
      auto v = value();
      if (!v || v->empty()) return missing();
      o.fabric_port = *v;
    } else if (name == "--stats-interval") {
      auto v = value();
      if (!v) return missing();
      auto n = to_u32(*v);
      if (!n) return OptionsError{"--stats-interval wants milliseconds, got '" + *v + "'"};
      o.stats_interval_ms = *n;
    } else if (name == "--duration") {
      auto v = value();
      if (!v) return missing();
      auto s = to_seconds(*v);
      if (!s) return OptionsError{"--duration wants seconds (>= 0), got '" + *v + "'"};
      o.duration_s = *s;
    } else if (name == "--until-idle") {
      auto v = value();
      if (!v) return missing();
      auto n = to_u32(*v);
      if (!n || *n == 0)
        return OptionsError{"--until-idle wants milliseconds (> 0), got '" + *v + "'"};
      o.until_idle_ms = *n;
    } else if (name == "--log-level") {
      auto v = value();
      if (!v) return missing();
      if (!known_level(*v))
        return OptionsError{"--log-level: unknown level '" + *v +
                            "' (trace, debug, info, warn, error, critical, off)"};
      o.log_level = *v;
    } else if (name == "--stats-json") {
      auto v = value();
      if (!v || v->empty()) return missing();
      o.stats_json_path = *v;
    } else if (name == "--assume-multiseg-tx") {
      o.assume_multiseg_tx = true;
    } else {
      return OptionsError{"unknown option '" + args[i] + "'"};
    }
  }
  if (!o.help && o.config_path.empty()) return OptionsError{"--config FILE is required"};
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
  return "Usage: " + prog +
         " [EAL options] -- --config FILE [options]\n"
         "\n"
         "srv6gw: SRv6 encapsulation gateway for RoCEv2 (DPDK).\n"
         "\n"
         "Options after '--':\n"
         "  --config FILE          gateway configuration (JSON instance of srv6gw.yang), required\n"
         "  --host-port NAME|ID    host-side port (overrides host-port in the config)\n"
         "  --fabric-port NAME|ID  fabric-side port (overrides fabric-port in the config)\n"
         "  --stats-interval MS    periodic stats line every MS milliseconds (0 = off;\n"
         "                         default: stats-interval-ms of the config)\n"
         "  --duration S           stop after S seconds (fractions allowed)\n"
         "  --until-idle MS        stop once both RX ports have been idle for MS milliseconds\n"
         "                         after having received traffic (pcap replays)\n"
         "  --log-level LEVEL      trace, debug, info (default), warn, error, critical, off\n"
         "  --stats-json FILE      also write the final statistics as JSON to FILE\n"
         "  --assume-multiseg-tx   chain encap headers on a fabric PMD that does not advertise\n"
         "                         multi-segment TX but handles chains (net_null; benchmarks)\n"
         "  --help                 this text\n"
         "\n"
         "Ports are named as DPDK knows them (rte_eth_dev_get_port_by_name: a PCI address\n"
         "0000:3b:00.0 or a vdev name such as net_pcap0) or by numeric port id. One worker lcore\n"
         "serves each queue on both ports: give EAL at least queues + 1 lcores (-l 0-N).\n"
         "SIGINT/SIGTERM stop the gateway and print the final statistics.\n"
         "Telemetry: dpdk-telemetry.py -f PREFIX, commands /srv6gw/stats, /srv6gw/workers,\n"
         "/srv6gw/paths, /srv6gw/config. Capture: dpdk-dumpcap --file-prefix PREFIX -i PORT.\n";
}

}  // namespace srv6gw::app
