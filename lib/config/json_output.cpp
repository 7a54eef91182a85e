// SPDX-License-Identifier: BSD-3-Clause
// GatewayConfig -> JSON instance data of the YANG module srv6gw (RFC 7951), the inverse of
// the loader (loader.cpp). No libyang: the agent's state file is written with it.
//
// Why a writer of our own and not nlohmann-json (which the stats JSON uses): a configuration
// of a million rules is ~100 MB of text, and write_json hands it to its sink in 1 MB pieces
// as it is made, where a JSON library builds the whole document in memory first (several
// times the text's size) before the first byte goes out.
#include "config/json_output.hpp"

#include <algorithm>
#include <cstdio>
#include <vector>

namespace srv6gw::config {
namespace {

class JsonWriter {
 public:
  // With a sink, the text is handed over in pieces of about kChunk bytes as it is made
  // (large configurations are never held whole); a sink returning false stops the output.
  // Compact: no indentation or line breaks.
  static constexpr size_t kChunk = 1 << 20;
  JsonWriter() = default;
  JsonWriter(const std::function<bool(std::string_view)>* sink, bool compact)
      : sink_(sink), compact_(compact) {
    out_.reserve(kChunk + 4096);
  }
  std::string take() { return std::move(out_); }
  // Hands what is left to the sink; false when the sink failed (now or before).
  bool finish() {
    if (sink_ && ok_ && !out_.empty()) ok_ = (*sink_)(out_);
    out_.clear();
    return ok_;
  }

  void open_object(std::string_view key = {}) { open(key, '{'); }
  void open_array(std::string_view key) { open(key, '['); }
  void close_object() { close('}'); }
  void close_array() { close(']'); }

  void string(std::string_view key, std::string_view value) {
    member(key);
    quote(value);
  }
  void number(std::string_view key, uint64_t value) {
    member(key);
    out_ += std::to_string(value);
  }
  void boolean(std::string_view key, bool value) {
    member(key);
    out_ += value ? "true" : "false";
  }
  // Array elements.
  void string_element(std::string_view value) {
    member({});
    quote(value);
  }
  void number_element(uint64_t value) {
    member({});
    out_ += std::to_string(value);
  }

 private:
  void maybe_flush() {
    if (sink_ && out_.size() >= kChunk) {
      if (ok_) ok_ = (*sink_)(out_);
      out_.clear();
    }
  }
  void open(std::string_view key, char bracket) {
    maybe_flush();
    member(key);
    out_ += bracket;
    first_.push_back(true);
  }
  void close(char bracket) {
    const bool empty = first_.back();
    first_.pop_back();
    if (!empty) newline();
    out_ += bracket;
    if (first_.empty()) out_ += '\n';
  }
  void member(std::string_view key) {
    if (!first_.empty()) {
      if (!first_.back()) out_ += ',';
      first_.back() = false;
      newline();
    }
    if (!key.empty()) {
      quote(key);
      out_ += compact_ ? ":" : ": ";
    }
  }
  void newline() {
    if (compact_) return;
    out_ += '\n';
    out_.append(2 * first_.size(), ' ');
  }
  void quote(std::string_view s) {
    out_ += '"';
    for (unsigned char c : s) {
      switch (c) {
        case '"':
          out_ += "\\\"";
          break;
        case '\\':
          out_ += "\\\\";
          break;
        case '\n':
          out_ += "\\n";
          break;
        case '\t':
          out_ += "\\t";
          break;
        case '\r':
          out_ += "\\r";
          break;
        default:
          if (c < 0x20) {
            char buf[8];
            std::snprintf(buf, sizeof(buf), "\\u%04x", c);
            out_ += buf;
          } else {
            out_ += char(c);
          }
      }
    }
    out_ += '"';
  }

  std::string out_;
  std::vector<bool> first_;  // per open bracket: nothing written inside yet
  const std::function<bool(std::string_view)>* sink_ = nullptr;
  bool compact_ = false;
  bool ok_ = true;
};

void write_local_sids(const std::vector<LocalSid>& sids, JsonWriter& w) {
  w.open_object("local-sids");
  w.open_array("local-sid");
  for (const LocalSid& ls : sids) {
    w.open_object();
    w.string("sid", net::to_string(ls.sid));
    w.string("behavior", yang_name(ls.behavior));
    w.close_object();
  }
  w.close_array();
  w.close_object();
}

void write_fabric_vlan(const FabricVlan& v, JsonWriter& w) {
  w.open_object("fabric-vlan");
  w.number("id", v.id);
  if (!v.dscp_pcp.empty()) {
    w.open_array("dscp-pcp");
    for (const DscpPcp& e : v.dscp_pcp) {
      w.open_object();
      w.number("dscp", e.dscp);
      w.number("pcp", e.pcp);
      w.close_object();
    }
    w.close_array();
  }
  w.string("host", to_string(v.host));
  w.close_object();
}

// A rail's MTUs and VLAN are written where they differ from ports/ (the loader gives a rail
// without them the gateway-wide ones; validate() refuses a rail that unsets one).
void write_rails(const GatewaySettings& cfg, JsonWriter& w) {
  w.open_object("rails");
  w.open_array("rail");
  for (const Rail& r : cfg.rails) {
    w.open_object();
    w.string("name", r.name);
    w.string("host", r.host_port.device);
    w.string("fabric", r.fabric_port.device);
    w.number("queues", r.queues);
    if (r.source) w.string("source-address", net::to_string(*r.source));
    if (r.fabric_nexthop_mac) w.string("fabric-nexthop-mac", net::to_string(*r.fabric_nexthop_mac));
    if (r.host_mac) w.string("host-mac", net::to_string(*r.host_mac));
    const PortRole &host = r.host_port, &fabric = r.fabric_port;
    if (host.mtu != 0 && host.mtu != cfg.host_port.mtu) w.number("host-mtu", host.mtu);
    if (fabric.mtu != 0 && fabric.mtu != cfg.fabric_port.mtu) w.number("fabric-mtu", fabric.mtu);
    if (fabric.vlan.enabled && fabric.vlan != cfg.fabric_port.vlan)
      write_fabric_vlan(fabric.vlan, w);
    if (!r.local_sids.empty()) write_local_sids(r.local_sids, w);
    w.close_object();
  }
  w.close_array();
  w.close_object();
}

void write_config(const GatewayConfig& cfg, JsonWriter& w) {
  w.open_object();
  w.open_object("srv6gw:gateway");

  w.open_object("ports");
  if (cfg.rails.empty()) {  // with rails, each rail names its ports (config/validate_ports.cpp)
    w.string("host", cfg.host_port.device);
    w.string("fabric", cfg.fabric_port.device);
    w.number("queues", cfg.queues);
  }
  w.number("mbufs", cfg.mbufs);
  w.boolean("transparent-mac", cfg.transparent_mac);
  if (cfg.fabric_nexthop_mac)
    w.string("fabric-nexthop-mac", net::to_string(*cfg.fabric_nexthop_mac));
  if (cfg.host_mac) w.string("host-mac", net::to_string(*cfg.host_mac));
  w.open_object("lossless");
  w.boolean("enabled", cfg.host_port.lossless.enabled);
  w.number("backlog-frames", cfg.host_port.lossless.backlog_frames);
  w.number("ecn-threshold-frames", cfg.host_port.lossless.ecn_threshold_frames);
  w.number("storm-bound-ms", cfg.host_port.lossless.storm_bound_ms);
  w.open_array("pfc-priorities");
  for (uint8_t prio : cfg.host_port.lossless.pfc_priorities) w.number_element(prio);
  w.close_array();
  w.close_object();
  if (cfg.host_port.mtu != 0) w.number("host-mtu", cfg.host_port.mtu);
  if (cfg.fabric_port.mtu != 0) w.number("fabric-mtu", cfg.fabric_port.mtu);
  if (cfg.fabric_port.vlan.enabled) write_fabric_vlan(cfg.fabric_port.vlan, w);
  w.close_object();

  w.string("source-address", net::to_string(cfg.source));
  w.number("hop-limit", cfg.hop_limit);

  w.open_object("actions");
  w.string("steering-miss", to_string(cfg.steering_miss));
  w.string("non-roce", to_string(cfg.non_roce));
  w.string("fabric-non-sid", to_string(cfg.fabric_non_sid));
  w.close_object();

  w.number("stats-interval-ms", cfg.stats_interval_ms);

  const Capacities& c = cfg.capacities;
  w.open_object("capacities");
  w.number("exact-entries", c.exact_entries);
  w.number("lpm4-rules", c.lpm4_rules);
  w.number("lpm6-rules", c.lpm6_rules);
  w.number("qp-ranges", c.qp_ranges);
  w.number("policies", c.policies);
  w.number("local-sids", c.local_sids);
  w.number("max-sids", c.max_sids);
  w.close_object();

  // decimal64 leaves are JSON strings (RFC 7951), six fraction digits as in the module.
  const engine::Params& e = cfg.engine;
  auto dec = [](double v) {
    char b[64];
    std::snprintf(b, sizeof b, "%.6f", v);
    return std::string(b);
  };
  w.open_object("engine");
  w.boolean("enabled", e.enabled);
  w.number("interval-us", e.interval_us);
  w.string("alpha", dec(e.alpha));
  w.string("decrease", dec(e.decrease));
  w.string("min-factor", dec(e.min_factor));
  w.number("decrease-gap-us", e.decrease_gap_us);
  w.string("exclude-threshold", dec(e.exclude_threshold));
  w.string("readmit-threshold", dec(e.readmit_threshold));
  w.string("readmit-factor", dec(e.readmit_factor));
  w.number("hold-down-us", e.hold_down_us);
  w.number("max-hold-down-us", e.max_hold_down_us);
  w.string("recovery-step", dec(e.recovery_step));
  w.number("recovery-period-us", e.recovery_period_us);
  w.boolean("reflect", e.reflect);
  w.boolean("path-id-in-source", e.path_id_in_source);
  w.number("source-entropy-bits", e.source_entropy_bits);
  w.close_object();

  const engine::ProbeParams& pr = cfg.probe;
  w.open_object("probe");
  w.boolean("enabled", pr.enabled);
  w.number("interval-us", pr.interval_us);
  w.number("timeout-us", pr.timeout_us);
  w.number("loss-threshold", pr.loss_threshold);
  w.number("hold-down-us", pr.hold_down_us);
  w.close_object();

  if (!cfg.policies.empty()) {
    w.open_object("policies");
    w.open_array("policy");
    for (const Policy& p : cfg.policies) {
      w.open_object();
      w.string("name", p.name);
      w.number("color", p.color);
      if (p.endpoint) w.string("endpoint", net::to_string(*p.endpoint));
      if (p.source) w.string("source-address", net::to_string(*p.source));
      if (p.probe_sid) w.string("probe-sid", net::to_string(*p.probe_sid));
      if (p.probe_dscp) w.number("probe-dscp", *p.probe_dscp);
      if (!p.rails.empty()) {
        w.open_array("rails");
        for (const std::string& r : p.rails) w.string_element(r);
        w.close_array();
      }
      w.string("encap", yang_name(p.encap));
      w.open_object("usid-format");
      w.number("block-bits", p.usid.block_bits);
      w.number("usid-bits", p.usid.usid_bits);
      w.close_object();
      w.open_object("selection");
      w.string("mode", to_string(p.selection));
      w.number("flowlet-gap-us", p.flowlet_gap_us);
      w.number("idle-gap-us", p.idle_gap_us);
      if (!p.spray_opcodes.empty()) {
        w.open_array("spray-opcodes");
        for (uint8_t op : p.spray_opcodes) w.number_element(op);
        w.close_array();
      }
      w.close_object();
      w.open_array("segment-list");
      for (const SegmentList& sl : p.segment_lists) {
        w.open_object();
        w.string("name", sl.name);
        w.number("path-id", sl.path_id);
        w.number("weight", sl.weight);
        w.boolean("backup", sl.backup);
        if (!sl.load_group.empty()) w.string("load-group", sl.load_group);
        w.open_array("sid");
        for (const auto& sid : sl.sids) w.string_element(net::to_string(sid));
        w.close_array();
        w.close_object();
      }
      w.close_array();
      w.close_object();
    }
    w.close_array();
    w.close_object();
  }

  if (!cfg.steering.empty()) {
    // YANG needs a key; rules built without one (id 0) get the lowest ids not in use, so
    // the output loads back.
    std::vector<uint32_t> used;
    for (const auto& r : cfg.steering) {
      if (r.id) used.push_back(r.id);
    }
    std::sort(used.begin(), used.end());
    uint32_t next_free = 1;
    auto assign = [&]() {
      while (std::binary_search(used.begin(), used.end(), next_free)) ++next_free;
      return next_free++;
    };
    w.open_object("steering");
    w.open_array("rule");
    for (const SteeringRule& r : cfg.steering) {
      w.open_object();
      w.number("id", r.id ? r.id : assign());
      switch (r.kind) {
        case SteeringKind::exact:
          w.open_object("exact");
          w.string("destination", net::to_string(r.dst));
          w.number("dest-qp", r.dest_qp);
          w.close_object();
          break;
        case SteeringKind::dst_any_qp:
          w.string("destination", net::to_string(r.dst));
          break;
        case SteeringKind::qp_range:
          w.open_object("qp-range");
          w.number("qp-low", r.qp_low);
          w.number("qp-high", r.qp_high);
          if (r.has_dst) w.string("destination", net::to_string(r.dst));
          w.close_object();
          break;
        case SteeringKind::prefix:
          w.string("prefix", net::to_string(r.dst) + "/" + std::to_string(r.prefix_len));
          break;
      }
      if (r.dscp) w.number("dscp", *r.dscp);
      w.string("policy", r.policy);
      w.close_object();
    }
    w.close_array();
    w.close_object();
  }

  if (!cfg.local_sids.empty()) write_local_sids(cfg.local_sids, w);
  if (!cfg.rails.empty()) write_rails(cfg, w);

  w.close_object();
  w.close_object();
}

}  // namespace

std::string to_json(const GatewayConfig& cfg) {
  JsonWriter w;
  write_config(cfg, w);
  return w.take();
}

bool write_json(const GatewayConfig& cfg, const std::function<bool(std::string_view)>& sink,
                bool compact) {
  JsonWriter w(&sink, compact);
  write_config(cfg, w);
  return w.finish();
}

}  // namespace srv6gw::config
