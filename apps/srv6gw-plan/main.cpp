// SPDX-License-Identifier: BSD-3-Clause
// srv6gw-plan: the path algorithm module on the command line (lib/pathalg, docs/design/pathalg.md).
//
//   srv6gw-plan TOPOLOGY --check                      validate, name what is wrong
//   srv6gw-plan TOPOLOGY [--flows FILE] --out DIR      one Apply JSON per gateway (+ summary)
//   srv6gw-plan TOPOLOGY --gateway h3                  that gateway's Apply JSON on stdout
//   srv6gw-plan TOPOLOGY --change leaf0--spine1=down --out DIR   minimal Apply per changed
//                                                      gateway after link changes
//   srv6gw-plan generate leaf-spine|fat-tree [...] -o FILE       example topologies
#include <CLI/CLI.hpp>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "pathalg/apply.hpp"
#include "pathalg/loader.hpp"
#include "pathalg/placement.hpp"
#include "pathalg/plan.hpp"
#include "pathalg/segments.hpp"

namespace {

using namespace srv6gw;
using namespace srv6gw::pathalg;

// Exit codes: 0 done, 1 invalid input (topology, flows, change), 2 bad command line.
constexpr int kExitInvalid = 1;
constexpr int kExitUsage = 2;

struct Failure {
  std::string message;
};

std::vector<Flow> read_flows(const Topology& t, const std::string& file) {
  std::ifstream in(file);
  if (!in) throw Failure{"cannot open flows file " + file};
  std::vector<Flow> flows;
  std::string line;
  size_t lineno = 0;
  while (std::getline(in, line)) {
    ++lineno;
    if (auto hash = line.find('#'); hash != std::string::npos) line.resize(hash);
    std::istringstream words(line);
    std::string src, dst;
    uint64_t qp = 0, bytes = 0;
    if (!(words >> src)) continue;
    auto where = [&] { return file + ":" + std::to_string(lineno) + ": "; };
    if (!(words >> dst >> qp >> bytes)) {
      throw Failure{where() + "expected 'SRC-HOST DST-HOST DEST-QP BYTES'"};
    }
    const auto s = t.find_node(src), d = t.find_node(dst);
    if (!s || !t.node(*s).is_host()) throw Failure{where() + "unknown host '" + src + "'"};
    if (!d || !t.node(*d).is_host()) throw Failure{where() + "unknown host '" + dst + "'"};
    if (*s == *d) throw Failure{where() + "a flow from '" + src + "' to itself"};
    if (qp > config::kMaxQp) throw Failure{where() + "DestQP does not fit in 24 bits"};
    flows.push_back(Flow{*s, *d, uint32_t(qp), bytes});
  }
  return flows;
}

LinkChange parse_change(const Topology& t, const std::string& text) {
  // a--b=down | a--b=up | a--b=N (members up) | a--b=NNNg (capacity in Gbit/s)
  const auto eq = text.find('=');
  const auto dash = text.find("--");
  if (eq == std::string::npos || dash == std::string::npos || dash > eq) {
    throw Failure{"--change " + text + ": expected A--B=down|up|MEMBERS|GBPSg"};
  }
  const auto a = t.find_node(text.substr(0, dash));
  const auto b = t.find_node(text.substr(dash + 2, eq - dash - 2));
  if (!a || !b) throw Failure{"--change " + text + ": unknown switch or host"};
  const auto l = t.find_link(*a, *b);
  if (!l) throw Failure{"--change " + text + ": no such link"};
  const Link& k = t.link(*l);
  LinkChange c{*l, LinkState::up, k.members, std::nullopt};
  const std::string v = text.substr(eq + 1);
  try {
    if (v == "down") {
      c.state = LinkState::down;
    } else if (v == "up") {
    } else if (!v.empty() && v.back() == 'g') {
      c.capacity_override_mbps = uint64_t(std::stod(v.substr(0, v.size() - 1)) * 1000);
    } else {
      c.members_up = uint16_t(std::stoul(v));
    }
  } catch (const std::exception&) {
    throw Failure{"--change " + text + ": bad value '" + v + "'"};
  }
  return c;
}

void write_file(const std::filesystem::path& p, const std::string& text) {
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out << text;
  if (!out) throw Failure{"cannot write " + p.string()};
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "srv6gw-plan: SR policies, weights and flow placement for every gateway of a "
      "fabric (lib/pathalg)"};
  app.require_subcommand(0, 1);
  std::string topo_file, flows_file, out_dir, gateway, encap = "encaps", sids = "minimal",
                                                       selection = "flow";
  bool check_only = false, no_probe = false, quiet = false, drop_down = false, headers = false;
  unsigned backups = 1, max_paths = 64;
  double max_request_mb = 0;
  std::vector<std::string> changes;
  app.add_option("topology", topo_file, "topology JSON (YANG module srv6gw-topology)");
  app.add_flag("--check", check_only, "validate the topology (and flows) only");
  app.add_option("--flows", flows_file,
                 "flows to place: lines 'SRC-HOST DST-HOST DEST-QP BYTES' ('#' comments)");
  app.add_option("-o,--out", out_dir, "write <host>.json (Apply request) per gateway here");
  app.add_option("--gateway", gateway, "print this gateway's Apply request on stdout");
  app.add_option("--encap", encap, "encaps | encaps-red | usid")
      ->check(CLI::IsMember(net::all_names(config::kEncapModeNames)));
  app.add_option("--sids", sids, "minimal | every-switch")
      ->check(CLI::IsMember({"minimal", "every-switch"}));
  // Not selective (it needs the opcodes to spray) nor balanced (flows placed by load).
  std::vector<std::string> selections;
  for (auto m : {config::SelectionMode::flow, config::SelectionMode::packet,
                 config::SelectionMode::flowlet, config::SelectionMode::adaptive})
    selections.emplace_back(config::to_string(m));
  app.add_option("--selection", selection, "flow | packet | flowlet | adaptive")
      ->check(CLI::IsMember(selections));
  app.add_option("--backups", backups, "backup segment lists per policy");
  app.add_option("--max-paths", max_paths, "shortest paths per policy (1..64)")
      ->check(CLI::Range(1, 64));
  app.add_flag("--no-probe", no_probe, "do not set probe-sid on policies");
  app.add_flag("--drop-down", drop_down, "leave paths that are down out (default: weight 0)");
  app.add_option("--max-request-mb", max_request_mb,
                 "split a gateway's Apply into files <host>.N.json of at most this size");
  app.add_option("--change", changes,
                 "link change A--B=down|up|MEMBERS-UP|GBPSg (repeatable): write the minimal "
                 "Apply of each gateway that changes, as <host>.delta.json");
  app.add_flag("-q,--quiet", quiet, "no summary");
  app.add_flag("--headers", headers,
               "with --gateway: one line per segment list instead of JSON: policy, list, "
               "path id, SIDs, and the outer IPv6+SRH header the gateway prepends (hex)");

  auto* gen = app.add_subcommand("generate", "write an example topology");
  std::string kind = "leaf-spine", gen_out;
  LeafSpineSpec ls;
  FatTreeSpec ft;
  unsigned gbps = 400, host_gbps = 400;
  std::string agent_pattern;
  gen->add_option("kind", kind, "leaf-spine | fat-tree")
      ->check(CLI::IsMember({"leaf-spine", "fat-tree"}));
  gen->add_option("--leaves", ls.leaves, "leaves (per plane)");
  gen->add_option("--spines", ls.spines, "spines (per plane)");
  gen->add_option("--hosts-per-leaf", ls.hosts_per_leaf, "hosts per leaf");
  gen->add_option("--planes", ls.planes, "planes (every host on one leaf of each)");
  gen->add_option("--lag", ls.lag_members, "members per leaf-spine (fat-tree: every) link");
  gen->add_option("--gbps", gbps, "speed of each LAG member");
  gen->add_option("--host-gbps", host_gbps, "host access link speed");
  gen->add_option("-k", ft.k, "fat-tree arity (even)");
  gen->add_option("--agent", agent_pattern,
                  "agent endpoint of each gateway, %s = host name (unix:/run/srv6gw-%s.sock)");
  gen->add_option("-o,--out", gen_out, "output file (default stdout)");

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp&) {
    std::cout << app.help();
    return 0;
  } catch (const CLI::ParseError& e) {
    // CLI11's own exit codes (105, 109...) differ from the other tools' 2; its message names
    // the option.
    std::cerr << "srv6gw-plan: " << e.what() << " (srv6gw-plan --help)\n";
    return kExitUsage;
  }

  try {
    if (gen->parsed()) {
      Topology t;
      if (kind == "fat-tree") {
        if (ft.k < 2 || ft.k % 2) throw Failure{"-k must be even and >= 2"};
        ft.lag_members = ls.lag_members;
        ft.member_mbps = uint64_t(gbps) * 1000;
        ft.host_mbps = uint64_t(host_gbps) * 1000;
        t = make_fat_tree(ft);
      } else {
        ls.member_mbps = uint64_t(gbps) * 1000;
        ls.host_mbps = uint64_t(host_gbps) * 1000;
        t = make_leaf_spine(ls);
      }
      if (!agent_pattern.empty()) {
        Topology with;
        with.name = t.name;
        with.usid_format = t.usid_format;
        for (Node n : t.nodes()) {
          if (n.is_host()) {
            std::string a = agent_pattern;
            if (auto at = a.find("%s"); at != std::string::npos) a.replace(at, 2, n.name);
            n.gateway.agent = a;
          }
          with.add_node(std::move(n));
        }
        for (const Link& l : t.links()) with.add_link(l);
        t = std::move(with);
      }
      const std::string json = to_json(t);
      if (gen_out.empty()) {
        std::cout << json;
      } else {
        write_file(gen_out, json);
      }
      return 0;
    }
    if (topo_file.empty()) throw Failure{"a topology file is needed (see --help)"};

    const auto t0 = std::chrono::steady_clock::now();
    auto loaded = load_topology_file(topo_file);
    if (auto* e = std::get_if<TopologyError>(&loaded)) {
      std::cerr << "srv6gw-plan: " << topo_file << ": " << (e->path.empty() ? "" : e->path + ": ")
                << e->message << "\n";
      return kExitInvalid;
    }
    Topology topo = std::move(std::get<Topology>(loaded));
    const double load_s = seconds_since(t0);
    std::vector<Flow> flows;
    if (!flows_file.empty()) flows = read_flows(topo, flows_file);
    std::vector<LinkChange> link_changes;
    for (const auto& c : changes) link_changes.push_back(parse_change(topo, c));

    size_t switches = topo.node_count() - topo.hosts().size();
    if (check_only) {
      std::cout << topo_file << ": valid: " << switches << " switches, " << topo.hosts().size()
                << " hosts, " << topo.link_count() << " links";
      if (!flows.empty()) std::cout << ", " << flows.size() << " flows";
      std::cout << "\n";
      return 0;
    }

    PlanOptions opt;
    opt.segments.encap = *config::parse_encap_mode(encap);
    opt.segments.usid = topo.usid_format;
    opt.segments.style = *parse_sid_style(sids);
    opt.selection = *config::parse_selection_mode(selection);
    opt.backups = backups;
    opt.max_paths = max_paths;
    opt.probe = !no_probe;
    opt.keep_down_paths = !drop_down;
    Planner planner(std::move(topo), opt);
    const Topology& t = planner.topology();

    std::ostringstream summary;
    summary << "topology " << (t.name.empty() ? topo_file : t.name) << ": " << switches
            << " switches, " << t.hosts().size() << " hosts, " << t.link_count()
            << " links (loaded in " << load_s << " s)\n";

    if (!flows.empty()) {
      const auto tp = std::chrono::steady_clock::now();
      const Placement pl = place(planner.paths(), flows);
      const double place_s = seconds_since(tp);
      planner.set_pins(pins_from(planner.paths(), flows, pl));
      summary << "placement of " << flows.size() << " flows in " << place_s << " s: max link load "
              << pl.max_load_s * 1e3 << " ms on " << t.dir_link_name(pl.hottest) << ", lower bound "
              << pl.lower_bound_s * 1e3 << " ms (ratio "
              << (pl.lower_bound_s > 0 ? pl.max_load_s / pl.lower_bound_s : 1)
              << (pl.optimal ? ", optimal" : "") << ")";
      if (pl.unplaced) summary << ", " << pl.unplaced << " flows without a usable path";
      summary << "\n";
    }

    if (!out_dir.empty()) std::filesystem::create_directories(out_dir);
    const size_t max_bytes = max_request_mb > 0 ? size_t(max_request_mb * 1048576) : SIZE_MAX;
    std::vector<NodeId> targets;
    if (!gateway.empty()) {
      auto g = t.find_node(gateway);
      if (!g || !t.node(*g).is_host()) throw Failure{"--gateway: unknown host '" + gateway + "'"};
      targets.push_back(*g);
    } else {
      targets = t.hosts();
    }

    const auto tplan = std::chrono::steady_clock::now();
    size_t total_policies = 0, total_lists = 0, total_rules = 0, largest = 0, max_policies = 0,
           max_exact = 0, unreachable = 0;
    std::string largest_gw;
    for (NodeId g : targets) {
      const GatewayPlan plan = planner.plan(g);
      size_t lists = 0, exact = 0;
      for (const auto& p : plan.policies) lists += p.segment_lists.size();
      exact = plan.steering.size();
      total_policies += plan.policies.size();
      total_lists += lists;
      total_rules += plan.steering.size();
      max_policies = std::max(max_policies, plan.policies.size());
      max_exact = std::max(max_exact, exact);
      unreachable += plan.unreachable.size();
      for (const auto& u : plan.unreachable) {
        summary << "  " << t.node(g).name << ": " << u << "\n";
      }
      if (headers && !gateway.empty()) {
        for (const auto& p : plan.policies) {
          for (const auto& sl : p.segment_lists) {
            std::string sid_text, hex;
            for (const auto& sid : sl.sids) {
              if (!sid_text.empty()) sid_text += ',';
              sid_text += net::to_string(sid);
            }
            const auto bytes =
                encap_bytes(t.node(g).gateway.source, sl.sids, p.encap, p.usid, sl.path_id);
            for (uint8_t byte : bytes.value_or(std::vector<uint8_t>{})) {
              char two[3];
              std::snprintf(two, sizeof two, "%02x", byte);
              hex += two;
            }
            std::cout << p.name << ' ' << sl.name << ' ' << sl.path_id << ' ' << sid_text << ' '
                      << (hex.empty() ? "-" : hex) << '\n';
          }
        }
        continue;
      }
      if (out_dir.empty() && gateway.empty()) continue;
      const PlanDiff d = full(plan);
      const auto reqs = to_apply_split(d, max_bytes);
      for (size_t i = 0; i < reqs.size(); ++i) {
        const std::string json = to_json(reqs[i]);
        if (json.size() > largest) {
          largest = json.size();
          largest_gw = t.node(g).name;
        }
        if (!gateway.empty() && out_dir.empty()) {
          std::cout << json;
          continue;
        }
        const std::string name = reqs.size() == 1
                                     ? t.node(g).name + ".json"
                                     : t.node(g).name + "." + std::to_string(i + 1) + ".json";
        write_file(std::filesystem::path(out_dir) / name, json);
      }
    }
    const double plan_s = seconds_since(tplan);
    summary << "plans of " << targets.size() << " gateways in " << plan_s
            << " s: " << total_policies << " policies, " << total_lists << " segment lists, "
            << total_rules << " steering rules";
    if (unreachable) summary << ", " << unreachable << " destinations unreachable";
    summary << "\n  per gateway at most " << max_policies
            << " policies (capacities/policies must hold them), " << max_exact << " steering rules";
    if (largest)
      summary << "; largest Apply " << largest << " bytes of JSON (" << largest_gw << ")";
    summary << "\n";

    if (!link_changes.empty()) {
      std::vector<GatewayChange> delta;
      std::string error;
      const auto tc = std::chrono::steady_clock::now();
      if (!planner.update_links(link_changes, delta, &error)) throw Failure{error};
      const double change_s = seconds_since(tc);
      size_t policies = 0;
      for (const auto& c : delta) policies += c.diff.upsert_policies.size();
      summary << "after " << link_changes.size() << " link change(s): " << delta.size()
              << " gateways change, " << policies << " policies re-pushed (" << change_s << " s)\n";
      for (const auto& c : delta) {
        if (out_dir.empty()) continue;
        write_file(std::filesystem::path(out_dir) / (t.node(c.gateway).name + ".delta.json"),
                   to_json(to_apply(c.diff)));
      }
    }
    if (!quiet) (gateway.empty() || !out_dir.empty() ? std::cout : std::cerr) << summary.str();
  } catch (const Failure& f) {
    std::cerr << "srv6gw-plan: " << f.message << "\n";
    return kExitInvalid;
  }
  return 0;
}
