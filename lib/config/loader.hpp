// SPDX-License-Identifier: BSD-3-Clause
// Startup configuration: JSON instance data of the YANG module srv6gw (config/yang), checked
// by libyang (types, structure, references) and then by validate() (semantics). Control
// plane only: never linked into the data path.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <variant>

#include "config/model.hpp"

namespace srv6gw::config {

using LoadResult = std::variant<GatewayConfig, ConfigError>;

// Reads and loads a JSON file. An unreadable file gives a ConfigError with an empty path.
LoadResult load_config_file(const std::string& path);

// Loads JSON text ({"srv6gw:gateway": {...}}). libyang errors keep libyang's data path
// ("/srv6gw:gateway/policies/policy[name='p1']/segment-list[name='a']/path-id") and message.
LoadResult load_config_json(std::string_view json);

// The configuration as JSON of the YANG module, every field explicit (defaults included), so
// that load_config_json(to_json(cfg)) gives back cfg for any valid cfg. The agent persists
// applied state with it.
std::string to_json(const GatewayConfig& cfg);
// The same text (compact: without indentation and line breaks), handed to `sink` in pieces
// of about 1 MB as it is made. Returns false as soon as the sink does.
bool write_json(const GatewayConfig& cfg, const std::function<bool(std::string_view)>& sink,
                bool compact);

// Directory holding srv6gw.yang, the first that has it of: $SRV6GW_YANG_DIR,
// <executable dir>/../share/srv6gw/yang (installed layout), the source tree's config/yang
// (compile-time SRV6GW_YANG_DIR). Empty when none has it.
std::string find_yang_dir();

}  // namespace srv6gw::config
