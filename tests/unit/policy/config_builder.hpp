// SPDX-License-Identifier: BSD-3-Clause
// Small helpers to write test configurations in a few lines.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "config/model.hpp"
#include "net/addr.hpp"

namespace srv6gw::testing {

inline net::Ipv6Addr v6(const char* text) {
  auto a = net::parse_ipv6(text);
  if (!a) throw std::invalid_argument(std::string("bad IPv6 literal ") + text);
  return *a;
}
inline net::IpAddr ip(const char* text) {
  auto a = net::parse_ip(text);
  if (!a) throw std::invalid_argument(std::string("bad IP literal ") + text);
  return *a;
}
inline net::MacAddr mac(const char* text) {
  auto a = net::parse_mac(text);
  if (!a) throw std::invalid_argument(std::string("bad MAC literal ") + text);
  return *a;
}

inline config::GatewayConfig base_config() {
  config::GatewayConfig c;
  c.host_port.device = "0";
  c.fabric_port.device = "1";
  c.source = v6("fc00:ffff::1");
  c.hop_limit = 64;
  return c;
}

inline config::SegmentList segment_list(std::string name, uint16_t path_id, uint32_t weight,
                                        std::initializer_list<const char*> sids,
                                        bool backup = false) {
  config::SegmentList sl;
  sl.name = std::move(name);
  sl.path_id = path_id;
  sl.weight = weight;
  sl.backup = backup;
  for (const char* s : sids) sl.sids.push_back(v6(s));
  return sl;
}

inline config::Policy policy(std::string name, config::SelectionMode mode,
                             std::vector<config::SegmentList> lists) {
  config::Policy p;
  p.name = std::move(name);
  p.selection = mode;
  p.segment_lists = std::move(lists);
  return p;
}

inline config::SteeringRule exact_rule(const char* dst, uint32_t qp, std::string policy,
                                       std::optional<uint8_t> dscp = std::nullopt) {
  config::SteeringRule r;
  r.kind = config::SteeringKind::exact;
  r.dst = ip(dst);
  r.dest_qp = qp;
  r.dscp = dscp;
  r.policy = std::move(policy);
  return r;
}
inline config::SteeringRule dst_rule(const char* dst, std::string policy,
                                     std::optional<uint8_t> dscp = std::nullopt) {
  config::SteeringRule r;
  r.kind = config::SteeringKind::dst_any_qp;
  r.dst = ip(dst);
  r.dscp = dscp;
  r.policy = std::move(policy);
  return r;
}
inline config::SteeringRule range_rule(uint32_t lo, uint32_t hi, std::string policy,
                                       const char* dst = nullptr,
                                       std::optional<uint8_t> dscp = std::nullopt) {
  config::SteeringRule r;
  r.kind = config::SteeringKind::qp_range;
  r.qp_low = lo;
  r.qp_high = hi;
  if (dst) {
    r.has_dst = true;
    r.dst = ip(dst);
  }
  r.dscp = dscp;
  r.policy = std::move(policy);
  return r;
}
inline config::SteeringRule prefix_rule(const char* dst, uint8_t len, std::string policy,
                                        std::optional<uint8_t> dscp = std::nullopt) {
  config::SteeringRule r;
  r.kind = config::SteeringKind::prefix;
  r.dst = ip(dst);
  r.prefix_len = len;
  r.dscp = dscp;
  r.policy = std::move(policy);
  return r;
}

}  // namespace srv6gw::testing
