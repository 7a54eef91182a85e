// SPDX-License-Identifier: BSD-3-Clause
// The configuration as JSON of the YANG module srv6gw (config/yang), the form the loader
// (config/loader.hpp) reads. Control plane only; no libyang.
#pragma once

#include <functional>
#include <string>
#include <string_view>

#include "config/model.hpp"

namespace srv6gw::config {

// Every field explicit (defaults included), so that load_config_json(to_json(cfg)) gives back
// cfg for any valid cfg. The agent persists applied state with it.
std::string to_json(const GatewayConfig& cfg);
// The same text (compact: without indentation and line breaks), handed to `sink` in pieces
// of about 1 MB as it is made. Returns false as soon as the sink does.
bool write_json(const GatewayConfig& cfg, const std::function<bool(std::string_view)>& sink,
                bool compact);

}  // namespace srv6gw::config
