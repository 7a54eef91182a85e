// SPDX-License-Identifier: BSD-3-Clause
// fabricsim: collectives on a lib/pathalg topology under every path scheme of the gateway,
// simulated at flow level (docs/design/fabricsim.md).
//
//   fabricsim run    --topology FILE [--degrade LINK[:FACTOR]]... [--collective C]
//                    [--sizes 1M,64M,1G] [--schemes hash,spray,...] [--hash-seeds 1,2,3]
//                    [--qps N] [--hot-fraction F --hot-share S] [--label L] [--out FILE]
//   fabricsim steady --topology FILE --src HOST --dst HOST --qps N --rate-mbit R
//                    [--degrade LINK[:FACTOR]]... [--payload-fraction X] [--out FILE]
//   fabricsim links  --topology FILE
#include <getopt.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "collectives.hpp"
#include "engine.hpp"
#include "pathalg_fabric.hpp"
#include "schemes.hpp"

namespace fs = srv6gw::fabricsim;

namespace {

[[noreturn]] void usage(const char* why) {
  if (why) std::fprintf(stderr, "fabricsim: %s\n", why);
  std::fputs(
      "usage:\n"
      "  fabricsim run    --topology FILE [--degrade LINK[:FACTOR]]... [--collective "
      "alltoall|moe|allreduce]\n"
      "                   [--sizes 1M,64M,1G] [--schemes hash,spray,wspray,balanced,placement]\n"
      "                   [--hash-seeds 1,2,3] [--qps N] [--hot-fraction F] [--hot-share S]\n"
      "                   [--hop-latency-us U] [--arrival-seed N] [--label L] [--out FILE]\n"
      "  fabricsim steady --topology FILE --src HOST --dst HOST --qps N --rate-mbit R\n"
      "                   [--degrade LINK[:FACTOR]]... [--payload-fraction X] [--out FILE]\n"
      "  fabricsim links  --topology FILE\n"
      "Sizes take K/M/G suffixes (binary: 1M = 2^20 bytes). --degrade without a factor halves\n"
      "the link (one of two LAG members down); factor 0 takes it down.\n",
      stderr);
  std::exit(2);
}

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, sep))
    if (!item.empty()) out.push_back(item);
  return out;
}

double parse_size(const std::string& s) {
  char* end = nullptr;
  double v = std::strtod(s.c_str(), &end);
  if (end == s.c_str()) usage(("bad size: " + s).c_str());
  switch (*end) {
    case 'K':
      v *= 1024.0;
      break;
    case 'M':
      v *= 1024.0 * 1024;
      break;
    case 'G':
      v *= 1024.0 * 1024 * 1024;
      break;
    case '\0':
      break;
    default:
      usage(("bad size suffix: " + s).c_str());
  }
  return v;
}

double parse_number(const char* what, const std::string& s) {
  char* end = nullptr;
  const double v = std::strtod(s.c_str(), &end);
  if (end == s.c_str() || *end != '\0' || !std::isfinite(v))
    usage((std::string("bad ") + what + ": " + s).c_str());
  return v;
}

std::string json_number(double v) {
  if (!std::isfinite(v)) return "null";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.12g", v);
  return buf;
}

std::string json_string(const std::string& s) {
  std::string o = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') o += '\\';
    o += c;
  }
  return o + "\"";
}

struct Options {
  std::string command;
  std::string topology;
  std::vector<fs::LinkChange> changes;
  std::string collective = "alltoall";
  std::vector<double> sizes{1 << 20};
  std::vector<fs::Scheme> schemes{std::begin(fs::kAllSchemes), std::end(fs::kAllSchemes)};
  std::vector<uint64_t> hash_seeds{1};
  uint64_t arrival_seed = 0;
  uint32_t qps = 1;
  fs::MoeParams moe;
  std::string label;
  std::string out;
  std::string src, dst;
  double rate_mbit = 0;
  fs::FabricOptions fabric;
};

Options parse(int argc, char** argv) {
  if (argc < 2) usage(nullptr);
  Options o;
  o.command = argv[1];
  enum {
    kTopology = 1000,
    kDegrade,
    kCollective,
    kSizes,
    kSchemes,
    kSeeds,
    kQps,
    kHotFraction,
    kHotShare,
    kLabel,
    kOut,
    kSrc,
    kDst,
    kRate,
    kPayload,
    kHopLatency,
    kArrival,
    kHelp
  };
  static const option longopts[] = {{"topology", required_argument, nullptr, kTopology},
                                    {"degrade", required_argument, nullptr, kDegrade},
                                    {"collective", required_argument, nullptr, kCollective},
                                    {"sizes", required_argument, nullptr, kSizes},
                                    {"schemes", required_argument, nullptr, kSchemes},
                                    {"hash-seeds", required_argument, nullptr, kSeeds},
                                    {"qps", required_argument, nullptr, kQps},
                                    {"hot-fraction", required_argument, nullptr, kHotFraction},
                                    {"hot-share", required_argument, nullptr, kHotShare},
                                    {"label", required_argument, nullptr, kLabel},
                                    {"out", required_argument, nullptr, kOut},
                                    {"src", required_argument, nullptr, kSrc},
                                    {"dst", required_argument, nullptr, kDst},
                                    {"rate-mbit", required_argument, nullptr, kRate},
                                    {"payload-fraction", required_argument, nullptr, kPayload},
                                    {"hop-latency-us", required_argument, nullptr, kHopLatency},
                                    {"arrival-seed", required_argument, nullptr, kArrival},
                                    {"help", no_argument, nullptr, kHelp},
                                    {nullptr, 0, nullptr, 0}};
  optind = 2;
  int c;
  while ((c = getopt_long(argc, argv, "", longopts, nullptr)) != -1) {
    const std::string arg = optarg ? optarg : "";
    switch (c) {
      case kTopology:
        o.topology = arg;
        break;
      case kDegrade: {
        fs::LinkChange ch;
        const auto colon = arg.rfind(':');
        ch.link = arg.substr(0, colon);
        if (colon != std::string::npos) ch.factor = parse_number("factor", arg.substr(colon + 1));
        if (ch.factor < 0 || ch.factor > 1) usage("--degrade factor must be within [0, 1]");
        o.changes.push_back(ch);
        break;
      }
      case kCollective:
        o.collective = arg;
        break;
      case kSizes:
        o.sizes.clear();
        for (const auto& s : split(arg, ',')) o.sizes.push_back(parse_size(s));
        break;
      case kSchemes:
        o.schemes.clear();
        for (const auto& s : split(arg, ',')) {
          const auto sc = fs::parse_scheme(s);
          if (!sc) usage(("unknown scheme: " + s).c_str());
          o.schemes.push_back(*sc);
        }
        break;
      case kSeeds:
        o.hash_seeds.clear();
        for (const auto& s : split(arg, ','))
          o.hash_seeds.push_back(uint64_t(parse_number("seed", s)));
        break;
      case kQps:
        o.qps = uint32_t(parse_number("qps", arg));
        break;
      case kHotFraction:
        o.moe.hot_fraction = parse_number("hot fraction", arg);
        break;
      case kHotShare:
        o.moe.hot_share = parse_number("hot share", arg);
        break;
      case kLabel:
        o.label = arg;
        break;
      case kOut:
        o.out = arg;
        break;
      case kSrc:
        o.src = arg;
        break;
      case kDst:
        o.dst = arg;
        break;
      case kRate:
        o.rate_mbit = parse_number("rate", arg);
        break;
      case kPayload:
        o.fabric.fabric_payload_fraction = parse_number("payload fraction", arg);
        break;
      case kHopLatency:
        o.fabric.hop_latency_s = parse_number("hop latency", arg) * 1e-6;
        break;
      case kArrival:
        o.arrival_seed = uint64_t(parse_number("arrival seed", arg));
        break;
      case kHelp:
        usage(nullptr);
      default:
        usage("unknown option");
    }
  }
  if (o.topology.empty()) usage("--topology is required");
  return o;
}

void write_out(const Options& o, const std::string& text) {
  if (o.out.empty()) {
    std::cout << text;
    return;
  }
  std::ofstream f(o.out);
  f << text;
  if (!f) {
    std::fprintf(stderr, "fabricsim: cannot write %s\n", o.out.c_str());
    std::exit(1);
  }
}

std::vector<fs::Demand> make_demands(const Options& o, uint32_t hosts, double size) {
  std::vector<fs::Demand> d;
  if (o.collective == "alltoall")
    d = fs::alltoall(hosts, size, o.qps);
  else if (o.collective == "moe")
    d = fs::moe_alltoall(hosts, size, o.moe, o.qps);
  else if (o.collective == "allreduce")
    d = fs::ring_allreduce(hosts, size);
  else
    usage(("unknown collective: " + o.collective).c_str());
  // Arrival order is what `balanced` decides by. The collectives list each source's flows in
  // NCCL's order (peer src+1, src+2, ...); --arrival-seed shuffles each source's flows
  // instead, as if its QPs started in a random order.
  if (o.arrival_seed != 0 && o.collective != "allreduce") {
    size_t begin = 0;
    while (begin < d.size()) {
      size_t end = begin;
      while (end < d.size() && d[end].src == d[begin].src) ++end;
      std::mt19937_64 rng(o.arrival_seed * 0x9E3779B97F4A7C15ull + d[begin].src);
      std::shuffle(d.begin() + long(begin), d.begin() + long(end), rng);
      begin = end;
    }
  }
  return d;
}

int run(const Options& o) {
  const std::vector<fs::LinkChange> none;
  // Plans: computed on the topology as it was (stale after a change), and recomputed on the
  // changed one (rerouting). Without changes the two are the same: one plan.
  struct Plan {
    const char* name;
    std::unique_ptr<fs::SimFabric> fabric;
  };
  std::vector<Plan> plans;
  plans.push_back({o.changes.empty() ? "healthy" : "stale",
                   fs::make_pathalg_fabric(o.topology, none, o.changes, o.fabric)});
  if (!o.changes.empty())
    plans.push_back(
        {"recomputed", fs::make_pathalg_fabric(o.topology, o.changes, o.changes, o.fabric)});
  const uint32_t hosts = uint32_t(plans[0].fabric->hosts().size());
  const double nic = plans[0].fabric->nic_bps();

  std::ostringstream js;
  js << "{\n  \"label\": " << json_string(o.label)
     << ",\n  \"topology\": " << json_string(o.topology)
     << ",\n  \"collective\": " << json_string(o.collective) << ",\n  \"hosts\": " << hosts
     << ",\n  \"nic_bps\": " << json_number(nic) << ",\n  \"qps_per_pair\": " << o.qps
     << ",\n  \"hop_latency_s\": " << json_number(o.fabric.hop_latency_s) << ",\n  \"changes\": [";
  for (size_t i = 0; i < o.changes.size(); ++i)
    js << (i ? ", " : "") << "{\"link\": " << json_string(o.changes[i].link)
       << ", \"factor\": " << json_number(o.changes[i].factor) << "}";
  js << "],\n";
  if (o.collective == "moe") {
    js << "  \"moe\": {\"hot_fraction\": " << json_number(o.moe.hot_fraction)
       << ", \"hot_share\": " << json_number(o.moe.hot_share) << ", \"hot_experts\": [";
    const auto hot = fs::moe_hot_experts(hosts, o.moe);
    for (size_t i = 0; i < hot.size(); ++i) js << (i ? ", " : "") << hot[i];
    js << "]},\n";
  }
  js << "  \"runs\": [";
  bool first = true;
  for (double size : o.sizes) {
    const auto demands = make_demands(o, hosts, size);
    const double bound = fs::nic_bound_s(demands, hosts, nic);
    for (const Plan& plan : plans) {
      for (fs::Scheme scheme : o.schemes) {
        const std::vector<uint64_t> seeds =
            scheme == fs::Scheme::hash ? o.hash_seeds : std::vector<uint64_t>{0};
        for (uint64_t seed : seeds) {
          const auto t0 = std::chrono::steady_clock::now();
          const fs::Routed r = fs::route(*plan.fabric, demands, scheme, {.hash_seed = seed});
          const fs::SimResult res = fs::simulate({r.capacity_bps}, r.workload);
          const double wall =
              std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
          // The most loaded link relative to its capacity, in bytes routed over it: what the
          // placement minimises, reported beside the completion time.
          const auto bytes = fs::link_bytes(r, demands, plan.fabric->links().size());
          double worst = 0;
          for (uint32_t l = 0; l < bytes.size(); ++l) {
            const double cap = plan.fabric->links().capacity_bps[l];
            if (bytes[l] > 0) worst = std::max(worst, cap > 0 ? bytes[l] * 8 / cap : INFINITY);
          }
          js << (first ? "\n" : ",\n") << "    {\"scheme\": \"" << fs::to_string(scheme)
             << "\", \"plan\": \"" << plan.name << "\", \"size_bytes\": " << json_number(size)
             << ", \"hash_seed\": " << seed << ", \"cct_s\": " << json_number(res.completion_s)
             << ", \"nic_bound_s\": " << json_number(bound)
             << ", \"norm_throughput\": " << json_number(bound / res.completion_s)
             << ", \"max_link_busy_s\": " << json_number(worst)
             << ", \"stuck_flows\": " << res.stuck << ", \"flows\": " << demands.size()
             << ", \"solver_entries\": " << r.workload.flows.size()
             << ", \"events\": " << res.events << ", \"wall_s\": " << json_number(wall) << "}";
          first = false;
          std::fprintf(
              stderr,
              "%-10s %-10s %8.0f MiB seed %-3llu CCT %10.4f ms  norm %.3f  (%llu events, %.2f s)\n",
              fs::to_string(scheme), plan.name, size / (1 << 20), (unsigned long long)seed,
              res.completion_s * 1e3, bound / res.completion_s, (unsigned long long)res.events,
              wall);
        }
      }
    }
  }
  js << "\n  ]\n}\n";
  write_out(o, js.str());
  return 0;
}

// Open-loop steady state (the emulated fabric's roce-gen does not react to congestion): QPs
// of a fixed rate from one host to another; rates are the max-min shares of that load.
int steady(const Options& o) {
  if (o.src.empty() || o.dst.empty() || !(o.rate_mbit > 0))
    usage("steady needs --src, --dst, --rate-mbit");
  const std::vector<fs::LinkChange> none;
  std::ostringstream js;
  js << "{\n  \"topology\": " << json_string(o.topology) << ",\n  \"qps\": " << o.qps
     << ",\n  \"rate_mbit\": " << json_number(o.rate_mbit)
     << ",\n  \"payload_fraction\": " << json_number(o.fabric.fabric_payload_fraction)
     << ",\n  \"runs\": [";
  bool first = true;
  for (int recomputed = 0; recomputed < (o.changes.empty() ? 1 : 2); ++recomputed) {
    auto fab =
        fs::make_pathalg_fabric(o.topology, recomputed ? o.changes : none, o.changes, o.fabric);
    uint32_t src = UINT32_MAX, dst = UINT32_MAX;
    for (uint32_t h = 0; h < fab->hosts().size(); ++h) {
      if (fab->hosts()[h].name == o.src) src = h;
      if (fab->hosts()[h].name == o.dst) dst = h;
    }
    if (src == UINT32_MAX || dst == UINT32_MAX) usage("--src/--dst: unknown host");
    std::vector<fs::Demand> demands;
    for (uint32_t q = 0; q < o.qps; ++q)
      demands.push_back({src, dst, 0x100 + q, 1.0, {}, o.rate_mbit * 1e6 / o.qps});
    const auto paths = fab->paths(src, dst);
    for (fs::Scheme scheme : o.schemes) {
      const fs::Routed r = fs::route(*fab, demands, scheme, {});
      fs::MaxMinSolver solver(r.capacity_bps, r.workload.flows);
      std::vector<uint8_t> active(r.workload.flows.size(), 1);
      std::vector<double> rate;
      solver.solve(active, rate);
      double goodput = 0;
      std::vector<double> per_path(paths.size(), 0.0);
      for (uint32_t f = 0; f < r.workload.flows.size(); ++f) goodput += rate[f];
      // Per-path carried rate: a flow's share of each path's first fabric link.
      for (uint32_t k = 0; k < paths.size(); ++k) {
        const uint32_t probe = paths[k].links.size() > 1 ? paths[k].links[1] : paths[k].links[0];
        for (uint32_t f = 0; f < r.workload.flows.size(); ++f)
          for (const fs::LinkUse& u : r.workload.flows.links_of(f))
            if (u.link == probe) per_path[k] += rate[f] * u.share;
      }
      // What the gateway sends on each path (before any loss in the fabric): the offered
      // rate of each QP times its share of the path.
      std::vector<double> offered(paths.size(), 0.0);
      for (uint32_t k = 0; k < paths.size(); ++k) {
        const uint32_t probe = paths[k].links.size() > 1 ? paths[k].links[1] : paths[k].links[0];
        for (uint32_t i = 0; i < demands.size(); ++i)
          for (const fs::LinkUse& u : r.workload.flows.links_of(r.flow_of_demand[i]))
            if (u.link == probe) offered[k] += demands[i].max_rate_bps * u.share;
      }
      js << (first ? "\n" : ",\n") << "    {\"scheme\": \"" << fs::to_string(scheme)
         << "\", \"plan\": \""
         << (o.changes.empty() ? "healthy"
             : recomputed      ? "recomputed"
                               : "stale")
         << "\", \"goodput_mbit\": " << json_number(goodput / 1e6) << ", \"carried_shares\": [";
      double total = 0;
      for (double v : per_path) total += v;
      for (size_t k = 0; k < per_path.size(); ++k)
        js << (k ? ", " : "") << json_number(total > 0 ? per_path[k] / total : 0);
      js << "], \"offered_shares\": [";
      for (size_t k = 0; k < offered.size(); ++k)
        js << (k ? ", " : "") << json_number(offered[k] / (o.rate_mbit * 1e6));
      js << "], \"path_mbit\": [";
      for (size_t k = 0; k < per_path.size(); ++k)
        js << (k ? ", " : "") << json_number(per_path[k] / 1e6);
      js << "]}";
      first = false;
    }
  }
  js << "\n  ]\n}\n";
  write_out(o, js.str());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    const Options o = parse(argc, argv);
    if (o.command == "run") return run(o);
    if (o.command == "steady") return steady(o);
    if (o.command == "links") {
      for (const auto& n : fs::pathalg_link_names(o.topology)) std::cout << n << "\n";
      return 0;
    }
    usage(("unknown command: " + o.command).c_str());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "fabricsim: %s\n", e.what());
    return 1;
  }
}
