// SPDX-License-Identifier: BSD-3-Clause
#include "schemes.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <tuple>

#include "policy/compiled_policy.hpp"
#include "policy/selection.hpp"

namespace srv6gw::fabricsim {

const char* to_string(Scheme s) {
  switch (s) {
    case Scheme::hash:
      return "hash";
    case Scheme::spray:
      return "spray";
    case Scheme::wspray:
      return "wspray";
    case Scheme::balanced:
      return "balanced";
    case Scheme::placement:
      return "placement";
  }
  return "?";
}

std::optional<Scheme> parse_scheme(std::string_view name) {
  for (Scheme s : kAllSchemes)
    if (name == to_string(s)) return s;
  return std::nullopt;
}

namespace {

// The gateway stores weights as integers; the path algorithm's weights are relative
// capacities. Scaled so that the smallest usable weight is 1000 (bucket shares exact to
// 0.1%), as a controller writing them into a policy would.
std::vector<uint32_t> integer_weights(std::span<const SimPath> paths) {
  double lo = std::numeric_limits<double>::infinity();
  for (const SimPath& p : paths)
    if (p.weight > 0) lo = std::min(lo, p.weight);
  std::vector<uint32_t> w;
  for (const SimPath& p : paths)
    w.push_back(p.weight > 0 ? uint32_t(std::llround(p.weight / lo * 1000.0)) : 0u);
  return w;
}

// One (source, destination) pair's SR policy in the gateway's configuration model, as
// lib/pathalg's plan writes it (segment lists in path order, SIDs from pathalg::build_sids,
// capacity-proportional weights, no load-group: the first SID is the group), compiled by the
// gateway's own compile_policy.
std::unique_ptr<const policy::CompiledPolicy> compile(std::span<const SimPath> paths,
                                                      config::SelectionMode mode) {
  const std::vector<uint32_t> w = integer_weights(paths);
  config::Policy p;
  p.name = "fabricsim";
  p.selection = mode;
  for (size_t i = 0; i < paths.size(); ++i) {
    config::SegmentList sl;
    sl.name = std::string(1, 'p');
    sl.name += std::to_string(i);
    sl.path_id = uint16_t(i + 1);
    sl.weight = w[i];
    sl.sids = paths[i].sids;
    if (sl.sids.empty()) {  // a path with no SID (test fabrics): the template needs one
      net::Ipv6Addr a{};
      a.bytes[0] = 0xfc;
      a.bytes[15] = uint8_t(i + 1);
      sl.sids.push_back(a);
    }
    p.segment_lists.push_back(std::move(sl));
  }
  policy::CompileEnv env;
  env.default_source.bytes[0] = 0xfc;
  env.default_source.bytes[15] = 1;
  config::ConfigError err;
  auto cp = policy::compile_policy(p, env, {}, err);
  if (!cp) throw std::runtime_error("compile_policy: " + err.path + ": " + err.message);
  return cp;
}

// `flow` mode's bucket table depends only on the weights (in segment-list order), so one
// compile serves every pair with the same weights.
class BucketTables {
 public:
  const policy::CompiledPolicy& get(std::span<const SimPath> paths) {
    const std::vector<uint32_t> w = integer_weights(paths);
    auto it = cache_.find(w);
    if (it != cache_.end()) return *it->second;
    return *cache_.emplace(w, compile(paths, config::SelectionMode::flow)).first->second;
  }

 private:
  std::map<std::vector<uint32_t>, std::unique_ptr<const policy::CompiledPolicy>> cache_;
};

// The inner L3 length of a flow's first packet, which balanced mode adds to its group's
// recent bytes (the pipeline passes the packet's l3_len): a full 4096-byte RoCEv2 payload
// with UDP (8), BTH (12) and ICRC (4) behind the inner IP header.
uint32_t first_packet_inner_bytes(const net::IpAddr& inner) {
  return (inner.family == net::Family::ipv4 ? 20u : 40u) + 8u + 12u + 4096u + 4u;
}

// `balanced` mode: the gateway's own selection (policy::select_path on a policy compiled in
// `balanced` mode). Each source gateway is one worker with its own SelectorState; each
// flow's first packet is one select call with the pipeline's flow hash (inner src, inner
// dst, DestQP), in the collective's start order. Every flow starts at the same instant
// (the collective's start), so one TSC value is passed to all: no flow is idle past the
// gap, every placed flow keeps counting as load, as it does while it sends. Sources do not
// share state, so they are processed one after the other (one 1.3 MB SelectorState alive).
std::vector<uint32_t> balanced_choices(const SimFabric& fab, std::span<const Demand> demands) {
  const auto& hosts = fab.hosts();
  const uint32_t n = uint32_t(demands.size());
  std::vector<std::vector<uint32_t>> by_source(hosts.size());
  for (uint32_t i = 0; i < n; ++i) by_source.at(demands[i].src).push_back(i);
  constexpr uint64_t kCollectiveStartTsc = 1;
  std::vector<uint32_t> choice(n, UINT32_MAX);
  for (uint32_t src = 0; src < hosts.size(); ++src) {
    if (by_source[src].empty()) continue;
    policy::SelectorState worker(1);  // one policy slot: SWRR cursors are not used here
    std::map<uint32_t, std::unique_ptr<const policy::CompiledPolicy>> policy_to;  // by dst
    for (uint32_t i : by_source[src]) {
      const Demand& d = demands[i];
      auto it = policy_to.find(d.dst);
      if (it == policy_to.end()) {
        const auto paths = fab.paths(d.src, d.dst);
        if (paths.empty())
          throw std::runtime_error("no path from " + hosts[d.src].name + " to " +
                                   hosts[d.dst].name);
        it = policy_to.emplace(d.dst, compile(paths, config::SelectionMode::balanced)).first;
      }
      const uint32_t h = policy::flow_hash(hosts[d.src].inner, hosts[d.dst].inner, d.qp);
      const uint8_t path = policy::select_path(*it->second, 0, h, /*opcode: RDMA WRITE First*/ 0x06,
                                               kCollectiveStartTsc, worker,
                                               first_packet_inner_bytes(hosts[d.src].inner));
      if (path == policy::kNoPath) throw std::runtime_error("no usable path for balanced");
      choice[i] = path;
    }
  }
  return choice;
}

uint64_t splitmix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

double path_latency(const SimLinks& links, const SimPath& p) {
  double s = 0;
  for (uint32_t l : p.links) s += links.latency_s[l];
  return s;
}

void add_path_uses(std::vector<LinkUse>& uses, const SimPath& p, double share) {
  for (uint32_t l : p.links) {
    auto it = std::find_if(uses.begin(), uses.end(), [l](const LinkUse& u) { return u.link == l; });
    if (it == uses.end())
      uses.push_back({l, share});
    else
      it->share += share;
  }
}

}  // namespace

Routed route(const SimFabric& fab, std::span<const Demand> demands, Scheme scheme,
             const SchemeParams& params) {
  const SimLinks& links = fab.links();
  const auto& hosts = fab.hosts();
  Routed out;
  out.capacity_bps = links.capacity_bps;
  const uint32_t n = uint32_t(demands.size());
  out.path_of_demand.assign(n, UINT32_MAX);
  out.flow_of_demand.assign(n, UINT32_MAX);

  // Single-path schemes: one path index per demand.
  std::vector<uint32_t> choice(n, UINT32_MAX);
  if (scheme == Scheme::hash) {
    BucketTables tables;
    for (uint32_t i = 0; i < n; ++i) {
      const Demand& d = demands[i];
      const auto paths = fab.paths(d.src, d.dst);
      if (paths.empty())
        throw std::runtime_error("no path from " + hosts[d.src].name + " to " + hosts[d.dst].name);
      const policy::CompiledPolicy& cp = tables.get(paths);
      uint32_t qp = d.qp;
      if (params.hash_seed != 0)
        qp = uint32_t(splitmix64(params.hash_seed ^ (uint64_t(d.src) << 40) ^
                                 (uint64_t(d.dst) << 16) ^ d.qp)) &
             0xFFFFFFu;
      const uint32_t h = policy::flow_hash(hosts[d.src].inner, hosts[d.dst].inner, qp);
      const uint8_t path = policy::select_by_flow(cp, h);
      if (path == policy::kNoPath) throw std::runtime_error("no usable path (all weights 0)");
      choice[i] = path;
    }
  } else if (scheme == Scheme::balanced) {
    choice = balanced_choices(fab, demands);
  } else if (scheme == Scheme::placement) {
    choice = fab.place(demands);
    if (choice.size() != n) throw std::runtime_error("placement returned a wrong count");
  }

  bool any_deps = false;
  for (const Demand& d : demands) any_deps |= !d.after.empty();
  // Identical flows (same pair, same choice, same size, nobody waiting) become one entry.
  std::map<std::tuple<uint32_t, uint32_t, uint32_t, double>, uint32_t> merged;
  std::vector<LinkUse> uses;
  std::vector<std::vector<uint32_t>> deps(n);
  for (uint32_t i = 0; i < n; ++i) {
    const Demand& d = demands[i];
    const auto paths = fab.paths(d.src, d.dst);
    if (paths.empty())
      throw std::runtime_error("no path from " + hosts[d.src].name + " to " + hosts[d.dst].name);
    const auto key = std::make_tuple(d.src, d.dst, choice[i], d.bytes);
    if (!any_deps && d.max_rate_bps == 0) {
      auto it = merged.find(key);
      if (it != merged.end()) {
        out.workload.flows.count[it->second] += 1.0;
        out.flow_of_demand[i] = it->second;
        out.path_of_demand[i] = choice[i];
        continue;
      }
    }
    uses.clear();
    double latency = 0;
    if (choice[i] != UINT32_MAX) {
      if (choice[i] >= paths.size()) throw std::runtime_error("path index out of range");
      add_path_uses(uses, paths[choice[i]], 1.0);
      latency = path_latency(links, paths[choice[i]]);
      out.path_of_demand[i] = choice[i];
    } else {
      double total = 0;
      uint32_t usable = 0;
      for (const SimPath& p : paths)
        if (p.weight > 0) {
          total += p.weight;
          ++usable;
        }
      if (usable == 0) throw std::runtime_error("no usable path to spray over");
      for (const SimPath& p : paths) {
        if (!(p.weight > 0)) continue;
        add_path_uses(uses, p, scheme == Scheme::spray ? 1.0 / usable : p.weight / total);
        latency = std::max(latency, path_latency(links, p));
      }
    }
    if (d.max_rate_bps > 0) {
      uses.push_back({uint32_t(out.capacity_bps.size()), 1.0});
      out.capacity_bps.push_back(d.max_rate_bps);
    }
    std::vector<uint32_t> after;
    for (uint32_t a : d.after) after.push_back(a);  // demand ids; remapped below
    const uint32_t f = out.workload.add(uses, d.bytes, latency, 1.0, std::move(after));
    out.flow_of_demand[i] = f;
    if (!any_deps && d.max_rate_bps == 0) merged.emplace(key, f);
  }
  // Dependencies name demands: flows are 1:1 with demands whenever there are any.
  return out;
}

std::vector<double> link_bytes(const Routed& r, std::span<const Demand> demands, uint32_t n_links) {
  std::vector<double> b(n_links, 0.0);
  for (size_t i = 0; i < demands.size(); ++i) {
    const uint32_t f = r.flow_of_demand[i];
    for (const LinkUse& u : r.workload.flows.links_of(f)) b[u.link] += demands[i].bytes * u.share;
  }
  return b;
}

}  // namespace srv6gw::fabricsim
