// SPDX-License-Identifier: BSD-3-Clause
// validate()'s part for ports/ and rails/: the host/fabric port pair (one, or one per rail),
// queues, MTUs, the fabric VLAN and its DSCP->PCP map, PFC priorities, each device used once;
// and check_rails_change(), what may change about rails in a running gateway. Kept apart
// from the policy and steering checks (validate.cpp), which change with the data plane's
// features while these change with the ports' set-up (apps/srv6gw/ports.cpp).
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <utility>

#include "config/validate.hpp"
#include "config/validate_detail.hpp"

namespace srv6gw::config {

using namespace detail;

namespace {

// Host and fabric device names of one pair (ports/ or a rail) under `base`.
std::optional<ConfigError> check_port_pair(const PortRole& host, const PortRole& fabric,
                                           const std::string& base) {
  if (host.device.empty()) return err(base + "/host", "host port device is empty");
  if (fabric.device.empty()) return err(base + "/fabric", "fabric port device is empty");
  if (host.device.size() > 128)
    return err(base + "/host", "host port device is longer than 128 characters");
  if (fabric.device.size() > 128)
    return err(base + "/fabric", "fabric port device is longer than 128 characters");
  if (fabric.device == host.device)
    return err(base + "/fabric", "the fabric port must differ from the host port");
  return std::nullopt;
}

std::optional<ConfigError> check_queues(uint16_t queues, const std::string& path) {
  if (queues < 1 || queues > kMaxQueues)
    return err(path, "queues must be 1.." + std::to_string(kMaxQueues) + ", not " +
                         std::to_string(queues));
  return std::nullopt;
}

std::optional<ConfigError> validate_fabric_vlan(const FabricVlan& v, const std::string& path) {
  if (!v.enabled) return std::nullopt;
  if (v.id < 1 || v.id > 4094) {
    return err(path + "/id", "VLAN id must be 1..4094, not " + std::to_string(v.id));
  }
  uint64_t seen = 0;  // bit per DSCP
  for (const DscpPcp& e : v.dscp_pcp) {
    const std::string entry = path + "/dscp-pcp[dscp='" + std::to_string(e.dscp) + "']";
    if (e.dscp > 63) {
      return err(path + "/dscp-pcp/dscp", "DSCP must be 0..63, not " + std::to_string(e.dscp));
    }
    if (e.pcp > 7) return err(entry + "/pcp", "PCP must be 0..7, not " + std::to_string(e.pcp));
    if (seen >> e.dscp & 1) return err(entry, "DSCP " + std::to_string(e.dscp) + " mapped twice");
    seen |= uint64_t(1) << e.dscp;
  }
  return std::nullopt;
}

std::optional<ConfigError> check_mtu(uint16_t mtu, const std::string& path) {
  if (mtu != 0 && (mtu < kMinPortMtu || mtu > kMaxPortMtu)) {
    return err(path, "mtu must be " + std::to_string(kMinPortMtu) + ".." +
                         std::to_string(kMaxPortMtu) + ", not " + std::to_string(mtu));
  }
  return std::nullopt;
}

// A rail's MTUs and fabric VLAN: its own or the gateway-wide ones (ports/), which it cannot
// unset (the file has no way to say "none" for one rail, so such a rail would not print).
std::optional<ConfigError> check_rail_port_settings(const GatewayConfig& cfg, const Rail& r,
                                                    const std::string& rp) {
  for (const auto& [role, wide, leaf] :
       {std::tuple{&r.host_port, &cfg.host_port, "host-mtu"},
        std::tuple{&r.fabric_port, &cfg.fabric_port, "fabric-mtu"}}) {
    if (auto e = check_mtu(role->mtu, rp + "/" + leaf)) return e;
    if (role->mtu == 0 && wide->mtu != 0)
      return err(rp + "/" + leaf, std::string("ports/") + leaf +
                                      " is set: a rail has its own or that one, not none");
  }
  if (r.host_port.vlan.enabled)
    return err(rp + "/fabric-vlan", "a VLAN tag is only configured on the fabric side");
  if (!r.fabric_port.vlan.enabled && cfg.fabric_port.vlan.enabled)
    return err(rp + "/fabric-vlan",
               "ports/fabric-vlan is set: a rail has its own tag or that one; to tag only some "
               "rails, give fabric-vlan on those rails instead of ports/");
  return validate_fabric_vlan(r.fabric_port.vlan, rp + "/fabric-vlan");
}

// A configuration with rails names its ports per rail: the single pair's leaves must be
// absent (a port in both places would be opened twice). Every device is used once.
std::optional<ConfigError> validate_rails(const GatewayConfig& cfg) {
  const std::string ports = std::string(kRootPath) + "/ports";
  if (!cfg.host_port.device.empty())
    return err(ports + "/host",
               "ports/host is set and the gateway has rails: with rails, each rail names its "
               "ports (rails/rail/host), remove ports/host");
  if (!cfg.fabric_port.device.empty())
    return err(ports + "/fabric",
               "ports/fabric is set and the gateway has rails: with rails, each rail names its "
               "ports (rails/rail/fabric), remove ports/fabric");
  if (cfg.queues != 1)
    return err(ports + "/queues",
               "ports/queues is set and the gateway has rails: with rails, each rail has its "
               "queues (rails/rail/queues)");
  if (cfg.rails.size() > kMaxRails)
    return err(std::string(kRootPath) + "/rails",
               std::to_string(cfg.rails.size()) + " rails, at most " + std::to_string(kMaxRails));
  std::map<std::string, std::string> device_owner;  // device -> rail path
  std::set<std::string> names;
  for (const Rail& r : cfg.rails) {
    const std::string rp = rail_path(r.name);
    if (r.name.empty()) return err(std::string(kRootPath) + "/rails/rail", "rail name is empty");
    if (!names.insert(r.name).second) return err(rp, "duplicate rail name '" + r.name + "'");
    if (auto e = check_port_pair(r.host_port, r.fabric_port, rp)) return e;
    if (auto e = check_queues(r.queues, rp + "/queues")) return e;
    for (const auto& [leaf, port] :
         {std::pair{"/host", &r.host_port}, {"/fabric", &r.fabric_port}}) {
      auto [it, fresh] = device_owner.emplace(port->device, rp);
      if (!fresh)
        return err(rp + leaf, "port " + port->device + " is already a port of " + it->second);
    }
    if (r.source) {
      if (auto why = bad_unicast(*r.source))
        return err(rp + "/source-address", "source-address " + *why);
      if (auto e = check_path_id_room(cfg, *r.source, rp + "/source-address")) return e;
    }
    if (auto e = check_rail_port_settings(cfg, r, rp)) return e;
  }
  return std::nullopt;
}

}  // namespace

namespace detail {

std::optional<ConfigError> validate_ports(const GatewayConfig& cfg) {
  const std::string ports = std::string(kRootPath) + "/ports";
  // The gateway-wide MTUs and tag first: rails inherit them, the error names where they are.
  if (auto e = check_mtu(cfg.host_port.mtu, ports + "/host-mtu")) return e;
  if (auto e = check_mtu(cfg.fabric_port.mtu, ports + "/fabric-mtu")) return e;
  if (cfg.host_port.vlan.enabled) {
    return err(ports + "/fabric-vlan", "a VLAN tag is only configured on the fabric side");
  }
  if (auto e = validate_fabric_vlan(cfg.fabric_port.vlan, ports + "/fabric-vlan")) return e;
  if (!cfg.rails.empty()) {
    if (auto e = validate_rails(cfg)) return e;
  } else {
    if (auto e = check_port_pair(cfg.host_port, cfg.fabric_port, ports)) return e;
    if (auto e = check_queues(cfg.queues, ports + "/queues")) return e;
  }
  if (cfg.mbufs == 0) return err(ports + "/mbufs", "mbufs must be at least 1");
  // Configurations built in code (tests, tools) bypass the YANG range and uniqueness rules.
  const std::vector<uint8_t>& pfc = cfg.host_port.lossless.pfc_priorities;
  if (pfc.empty() || pfc.size() > 8)
    return err(ports + "/lossless/pfc-priorities", "give 1 to 8 priorities (0..7)");
  for (size_t i = 0; i < pfc.size(); ++i) {
    if (pfc[i] > 7)
      return err(ports + "/lossless/pfc-priorities",
                 "priority " + std::to_string(pfc[i]) + " is not an 802.1Qbb priority (0..7)");
    for (size_t j = 0; j < i; ++j)
      if (pfc[j] == pfc[i])
        return err(ports + "/lossless/pfc-priorities",
                   "priority " + std::to_string(pfc[i]) + " is given twice");
  }
  return std::nullopt;
}

}  // namespace detail

std::optional<ConfigError> check_rails_change(const GatewaySettings& running,
                                              const GatewaySettings& next) {
  const std::string rails = std::string(kRootPath) + "/rails";
  const std::string restart = ": rails are set up at start (ports, queues, workers); ";
  for (size_t i = 0; i < std::max(running.rails.size(), next.rails.size()); ++i) {
    if (i >= running.rails.size())
      return err(rail_path(next.rails[i].name), "rail '" + next.rails[i].name + "' is not running" +
                                                    restart + "adding a rail needs a restart");
    const Rail& was = running.rails[i];
    if (i >= next.rails.size())
      return err(rail_path(was.name), "rail '" + was.name + "' is missing" + restart +
                                          "removing a rail needs a restart");
    const Rail& now = next.rails[i];
    if (now.name != was.name)
      return err(rails + "/rail", "rail " + std::to_string(i + 1) + " is '" + now.name +
                                      "', running '" + was.name + "'" + restart +
                                      "renaming or reordering rails needs a restart");
    const std::string rp = rail_path(was.name);
    auto source_text = [&](const Rail& r) {
      return r.source ? net::to_string(*r.source) : std::string("the gateway's");
    };
    const std::tuple<bool, const char*, std::string, std::string> fixed[] = {
        {now.host_port.device == was.host_port.device, "host", was.host_port.device,
         now.host_port.device},
        {now.fabric_port.device == was.fabric_port.device, "fabric", was.fabric_port.device,
         now.fabric_port.device},
        {now.queues == was.queues, "queues", std::to_string(was.queues),
         std::to_string(now.queues)},
        {now.source == was.source, "source-address", source_text(was), source_text(now)},
        {now.host_port.mtu == was.host_port.mtu, "host-mtu", std::to_string(was.host_port.mtu),
         std::to_string(now.host_port.mtu)},
        {now.fabric_port.mtu == was.fabric_port.mtu, "fabric-mtu",
         std::to_string(was.fabric_port.mtu), std::to_string(now.fabric_port.mtu)},
    };
    for (const auto& [same, leaf, before, after] : fixed) {
      if (same) continue;
      return err(rp + "/" + leaf, std::string(leaf) + " is " + before + " in the running rail, " +
                                      after +
                                      " here: it is set up at start, changing it needs "
                                      "a restart (MACs, fabric-vlan and local-sids may change)");
    }
  }
  return std::nullopt;
}

}  // namespace srv6gw::config
