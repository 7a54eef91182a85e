// SPDX-License-Identifier: BSD-3-Clause
#include "probe_runner.hpp"

#include <rte_cycles.h>
#include <rte_mbuf.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "dataplane/datapath/probe.hpp"
#include "net/bytes.hpp"
#include "policy/runtime.hpp"
#include "srv6/probe.hpp"

namespace srv6gw::app {

namespace {

constexpr unsigned kReplyBatch = 256;

uint64_t steady_ns() {
  return uint64_t(std::chrono::duration_cast<std::chrono::nanoseconds>(
                      std::chrono::steady_clock::now().time_since_epoch())
                      .count());
}

}  // namespace

ProbeRunner::ProbeRunner(dataplane::Gateway& gw, EngineRunner& engine, std::vector<RailPort> rails)
    : gw_(gw), engine_(engine), ns_per_tsc_(1e9 / double(rte_get_tsc_hz())), replies_(kReplyBatch) {
  for (const RailPort& port : rails) {
    rails_.emplace_back();
    rails_.back().port = port;
  }
  sync();
}

std::set<uint16_t> ProbeRunner::down_everywhere() const {
  std::map<uint16_t, std::pair<unsigned, unsigned>> down_of_probing;  // path id -> (down, rails)
  for (const Rail& rail : rails_)
    for (const engine::ProbePathView& v : rail.monitor.paths()) {
      auto& [down, probing] = down_of_probing[v.path_id];
      down += v.state == engine::ProbeState::down;
      ++probing;
    }
  std::set<uint16_t> out;
  for (const auto& [id, dp] : down_of_probing)
    if (dp.first == dp.second) out.insert(id);
  return out;
}

void ProbeRunner::sync() {
  const policy::View& view = *gw_.runtime().view();
  synced_generation_ = view.generation;
  const config::GatewayConfig& cfg = gw_.running_config();
  const std::vector<config::Rail> cfg_rails = config::effective_rails(cfg);
  hop_limit_ = cfg.hop_limit;
  named_rails_ = !cfg.rails.empty();
  std::optional<net::Ipv6Addr> shared_probe_sid;
  for (const config::LocalSid& ls : cfg.local_sids)
    if (ls.behavior == srv6::LocalSidBehavior::end_probe) {
      shared_probe_sid = ls.sid;
      break;
    }
  probed_.clear();
  const std::vector<config::ProbeClass>& classes = gw_.probe_classes();
  for (size_t r = 0; r < rails_.size() && r < cfg_rails.size(); ++r) {
    const config::Rail& cr = cfg_rails[r];
    Rail& rail = rails_[r];
    rail.name = cr.name;
    rail.settings = policy::settings_of_rail(view, uint16_t(r));
    rail.monitor.set_params(cfg.probe);
    const std::optional<net::MacAddr> nexthop =
        cr.fabric_nexthop_mac ? cr.fabric_nexthop_mac : cfg.fabric_nexthop_mac;
    rail.nexthop_mac = nexthop.value_or(net::MacAddr{});
    // The replies come back to a probe SID that decapsulates on this rail: its own, else a
    // shared one.
    std::optional<net::Ipv6Addr> probe_sid = shared_probe_sid;
    for (const config::LocalSid& ls : cr.local_sids)
      if (ls.behavior == srv6::LocalSidBehavior::end_probe) {
        probe_sid = ls.sid;
        break;
      }
    std::vector<engine::ProbePathSpec> specs;
    if (cfg.probe.enabled && probe_sid && nexthop) {
      const net::Ipv6Addr rail_source = config::rail_source(cfg, cr);
      for (size_t pi = 0; pi < cfg.policies.size(); ++pi) {
        const config::Policy& p = cfg.policies[pi];
        const config::ProbeClass cls = pi < classes.size() ? classes[pi] : config::ProbeClass{};
        // A rail probes only the policies on it (policy/rails): its plane is the one their
        // SIDs are reached through.
        if (!p.probe_sid || !config::policy_on_rail(p, cr.name)) continue;
        for (const config::SegmentList& sl : p.segment_lists) {
          // The segment list ends at the remote's decapsulation SID: the probe goes over the
          // same transit SIDs to the remote's probe SID instead, and back over them reversed.
          Probed pr;
          pr.rail = uint16_t(r);
          pr.path_id = sl.path_id;
          pr.traffic_class = cls.traffic_class;
          pr.source = p.source.value_or(rail_source);
          pr.segments.assign(sl.sids.begin(), sl.sids.end() - 1);
          pr.segments.push_back(*p.probe_sid);
          pr.returns.assign(sl.sids.rbegin() + 1, sl.sids.rend());
          pr.returns.push_back(*probe_sid);
          probed_.push_back(std::move(pr));
          specs.push_back({p.name, sl.name, sl.path_id, cls.traffic_class, to_string(cls.source)});
        }
      }
    }
    rail.monitor.set_paths(specs);
  }
  // Paths no longer down everywhere (probing turned off, probe-sid removed, a rail answering)
  // must not stay down on the word of probes nobody sends any more; a path now down on every
  // rail that still probes it goes down.
  tell_engine(steady_ns());
}

void ProbeRunner::tell_engine(uint64_t now_ns) {
  const std::set<uint16_t> now_down = down_everywhere();
  for (uint16_t id : engine_down_)
    if (!now_down.count(id)) engine_.set_probe_state(id, true, now_ns);
  for (uint16_t id : now_down)
    if (!engine_down_.count(id)) engine_.set_probe_state(id, false, now_ns);
  engine_down_ = now_down;
}

uint32_t ProbeRunner::tick_interval_us() const {
  if (probed_.empty() || rails_.empty()) return 10000;
  const engine::ProbeParams& p = rails_[0].monitor.params();
  return std::clamp<uint32_t>(std::min(p.interval_us, p.timeout_us) / 2, 100, 10000);
}

void ProbeRunner::send_all(uint64_t now_ns) {
  rte_mbuf* batch[64];
  unsigned n = 0;
  uint16_t batch_rail = 0;
  auto flush = [&] {
    const unsigned taken = gw_.send_probes(batch_rail, batch, n);
    stats_.sent += taken;
    for (unsigned i = taken; i < n; ++i) rte_pktmbuf_free(batch[i]);
    stats_.ring_full += n - taken;
    n = 0;
  };
  for (const Probed& pr : probed_) {  // rail by rail
    if (n && (pr.rail != batch_rail || n == std::size(batch))) flush();
    batch_rail = pr.rail;
    Rail& rail = rails_[pr.rail];
    uint32_t seq = 0;
    if (!rail.monitor.next_seq(pr.path_id, now_ns, seq)) continue;
    rte_mbuf* m = rte_pktmbuf_alloc(rail.port.pool);
    if (!m) {
      ++stats_.alloc_failed;
      continue;
    }
    const size_t len = srv6::probe::request_len(pr.segments.size(), pr.returns.size());
    const unsigned l2 = dataplane::probe_l2_len(rail.settings);
    auto* frame = reinterpret_cast<uint8_t*>(rte_pktmbuf_append(m, uint16_t(l2 + len)));
    if (!frame) {
      rte_pktmbuf_free(m);
      ++stats_.alloc_failed;
      continue;
    }
    dataplane::write_probe_l2(frame, rail.nexthop_mac.bytes.data(),
                              rail.port.fabric_port_mac.bytes.data(), rail.settings,
                              pr.traffic_class);
    srv6::probe::RequestSpec spec;
    spec.source = pr.source;
    spec.segments = pr.segments;
    spec.return_segments = pr.returns;
    spec.hop_limit = hop_limit_;
    spec.traffic_class = pr.traffic_class;
    srv6::probe::Fields f;
    f.path_id = pr.path_id;
    f.seq = seq;
    f.tx_time = rte_rdtsc();
    size_t built = 0;
    if (srv6::probe::build_request(spec, f, std::span<uint8_t>(frame + l2, len), built) !=
        srv6::probe::Status::ok) {
      // Cannot happen for a validated configuration (1..16 SIDs each way).
      rte_pktmbuf_free(m);
      ++stats_.alloc_failed;
      continue;
    }
    batch[n++] = m;
  }
  if (n) flush();
}

void ProbeRunner::drain_replies(uint64_t now_ns) {
  for (;;) {
    const unsigned n = gw_.drain_probe_replies(replies_.data(), kReplyBatch);
    stats_.replies += n;
    for (unsigned i = 0; i < n; ++i) {
      const dataplane::ProbeReply& r = replies_[i];
      if (r.rx_tsc < r.tx_time) {
        ++stats_.clock_skew;
        continue;
      }
      const uint64_t rtt_ns = uint64_t(double(r.rx_tsc - r.tx_time) * ns_per_tsc_);
      // The rail that received it: its monitor sent it (replies return on the probing rail).
      if (r.rail < rails_.size()) rails_[r.rail].monitor.on_reply(r.path_id, r.seq, rtt_ns, now_ns);
    }
    if (n < kReplyBatch) break;
  }
}

void ProbeRunner::poll(uint64_t now_ns) {
  const uint64_t t0 = steady_ns();
  ++stats_.polls;
  if (gw_.runtime().view()->generation != synced_generation_) sync();
  drain_replies(now_ns);
  if (!probed_.empty()) {
    const uint64_t interval = uint64_t(rails_[0].monitor.params().interval_us) * 1000;
    if (now_ns >= next_send_ns_) {
      send_all(now_ns);
      // Keep the cadence; after a stall, restart it instead of sending a burst of catch-ups.
      next_send_ns_ =
          next_send_ns_ + interval > now_ns ? next_send_ns_ + interval : now_ns + interval;
    }
  }
  bool changed = false;
  for (Rail& rail : rails_) {
    rail.monitor.tick(now_ns, transitions_);
    // A single pair logs as before (no rail named).
    const std::string where = rails_.size() > 1 ? "rail " + rail.name + " " : std::string();
    for (const engine::ProbeTransition& t : transitions_) {
      if (t.to == engine::ProbeState::down) {
        spdlog::warn(
            "probe: {}policy {} segment-list {} (path {}) down: {} consecutive probes lost "
            "(timeout {} us)",
            where, t.policy, t.segment_list, t.path_id, t.consecutive_lost,
            rail.monitor.params().timeout_us);
      } else {
        spdlog::info("probe: {}policy {} segment-list {} (path {}) up: probes answered for {} us",
                     where, t.policy, t.segment_list, t.path_id,
                     rail.monitor.params().hold_down_us);
      }
      changed = true;
    }
    transitions_.clear();
  }
  if (changed) tell_engine(now_ns);
  stats_.busy_ns += steady_ns() - t0;
}

std::vector<engine::ProbePathView> ProbeRunner::paths() const {
  std::vector<engine::ProbePathView> out;
  for (const Rail& rail : rails_) {
    std::vector<engine::ProbePathView> v = rail.monitor.paths();
    if (named_rails_)
      for (engine::ProbePathView& pv : v) pv.rail = rail.name;
    out.insert(out.end(), v.begin(), v.end());
  }
  return out;
}

engine::ProbeMonitorCounters ProbeRunner::counters() const {
  engine::ProbeMonitorCounters sum;
  for (const Rail& rail : rails_) {
    const engine::ProbeMonitorCounters& c = rail.monitor.counters();
    sum.replies += c.replies;
    sum.unknown_path += c.unknown_path;
    sum.unknown_seq += c.unknown_seq;
    sum.transitions_down += c.transitions_down;
    sum.transitions_up += c.transitions_up;
  }
  return sum;
}

std::string ProbeRunner::report() const {
  const engine::ProbeMonitorCounters c = counters();
  std::string s = fmt::format(
      "probe: {} paths, {} probes sent ({} not sent: {} no mbuf, {} ring full), {} replies "
      "({} unknown path, {} unknown sequence), {} down / {} up transitions\n",
      probed_.size(), stats_.sent, stats_.alloc_failed + stats_.ring_full, stats_.alloc_failed,
      stats_.ring_full, stats_.replies, c.unknown_path, c.unknown_seq, c.transitions_down,
      c.transitions_up);
  for (const Rail& rail : rails_)
    for (const engine::ProbePathView& v : rail.monitor.paths())
      s += fmt::format(
          "probe:   {}{}/{} (path {}): {} sent {} answered {} lost {} late {} loss {:.3f} "
          "rtt min/avg/p99 {:.1f}/{:.1f}/{:.1f} us, traffic class 0x{:02x} ({})\n",
          rails_.size() > 1 ? "rail " + rail.name + " " : std::string(), v.policy, v.segment_list,
          v.path_id, engine::to_string(v.state), v.sent, v.answered, v.lost, v.late, v.loss_ratio,
          double(v.rtt_min_ns) / 1e3, double(v.rtt_avg_ns) / 1e3, double(v.rtt_p99_ns) / 1e3,
          v.traffic_class, v.traffic_class_source);
  return s;
}

std::string ProbeRunner::json() const {
  using nlohmann::json;
  const engine::ProbeMonitorCounters c = counters();
  json j = {{"polls", stats_.polls},
            {"sent", stats_.sent},
            {"alloc_failed", stats_.alloc_failed},
            {"ring_full", stats_.ring_full},
            {"replies", stats_.replies},
            {"clock_skew", stats_.clock_skew},
            {"unknown_path", c.unknown_path},
            {"unknown_seq", c.unknown_seq},
            {"transitions_down", c.transitions_down},
            {"transitions_up", c.transitions_up},
            {"busy_ns", stats_.busy_ns}};
  json& paths = j["paths"] = json::array();
  for (const Rail& rail : rails_)
    for (const engine::ProbePathView& v : rail.monitor.paths())
      paths.push_back({{"rail", rail.name},
                       {"policy", v.policy},
                       {"segment_list", v.segment_list},
                       {"path_id", v.path_id},
                       {"state", engine::to_string(v.state)},
                       {"last_change_ns", v.last_change_ns},
                       {"sent", v.sent},
                       {"answered", v.answered},
                       {"lost", v.lost},
                       {"late", v.late},
                       {"consecutive_lost", v.consecutive_lost},
                       {"loss_ratio", v.loss_ratio},
                       {"rtt_samples", v.rtt_samples},
                       {"rtt_min_ns", v.rtt_min_ns},
                       {"rtt_avg_ns", v.rtt_avg_ns},
                       {"rtt_p99_ns", v.rtt_p99_ns},
                       {"rtt_last_ns", v.rtt_last_ns},
                       {"traffic_class", v.traffic_class},
                       {"traffic_class_source", v.traffic_class_source}});
  return j.dump();
}

}  // namespace srv6gw::app
