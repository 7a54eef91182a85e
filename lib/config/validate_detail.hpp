// SPDX-License-Identifier: BSD-3-Clause
// Inside validate(): what its two files share (validate.cpp: the whole configuration,
// policies, steering, local SIDs; validate_ports.cpp: ports/ and rails/). Other code calls
// validate.hpp.
#pragma once

#include <optional>
#include <string>
#include <utility>

#include "config/model.hpp"

namespace srv6gw::config::detail {

inline ConfigError err(std::string path, std::string message) {
  return ConfigError{std::move(path), std::move(message)};
}

// Why `a` is no usable source address or SID (::, ::1, multicast), or nullopt.
std::optional<std::string> bad_unicast(const net::Ipv6Addr& a);

// A source address (the gateway's, a rail's or a policy's) leaves room for what the engine
// writes into it: the path id (engine/path-id-in-source) and the flow entropy
// (engine/source-entropy-bits). `path` names the leaf in the refusal.
std::optional<ConfigError> check_path_id_room(const GatewayConfig& cfg, const net::Ipv6Addr& source,
                                              const std::string& path);

// ports/ and, in a configuration with rails, rails/ (validate_ports.cpp).
std::optional<ConfigError> validate_ports(const GatewayConfig& cfg);

}  // namespace srv6gw::config::detail
