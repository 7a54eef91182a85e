// SPDX-License-Identifier: BSD-3-Clause
// Startup configuration: JSON instance data of the YANG module srv6gw (config/yang), checked
// by libyang (types, structure, references) and then by validate() (semantics). The way
// back, GatewayConfig -> JSON, is config/json_output.hpp. Control plane only: never linked
// into the data path.
#pragma once

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

// Directory holding srv6gw.yang, the first that has it of: $SRV6GW_YANG_DIR,
// <executable dir>/../share/srv6gw/yang (installed layout), the source tree's config/yang
// (compile-time SRV6GW_YANG_DIR). Empty when none has it.
std::string find_yang_dir();

}  // namespace srv6gw::config
