// SPDX-License-Identifier: BSD-3-Clause
// Fuzzes the startup-configuration loader (libyang + semantic validation) on arbitrary text.
// Bad input must be refused with a message, never crash or leak (LSan); whatever is accepted
// must pass validate() (the gRPC agent's check) and survive to_json -> load_config_json
// unchanged, with to_json a fixed point, because the agent persists applied state that way.
#include <cstdio>
#include <string>
#include <string_view>
#include <variant>

#include "config/json_output.hpp"
#include "config/loader.hpp"
#include "config/model.hpp"
#include "config/validate.hpp"
#include "fuzz_util.hpp"

namespace config = srv6gw::config;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const config::LoadResult loaded = config::load_config_json(text);
  if (const auto* error = std::get_if<config::ConfigError>(&loaded)) {
    FUZZ_CHECK(!error->message.empty());
    return 0;
  }
  const config::GatewayConfig& cfg = std::get<config::GatewayConfig>(loaded);
  FUZZ_CHECK(!config::validate(cfg).has_value());

  const std::string json = config::to_json(cfg);
  const config::LoadResult reloaded = config::load_config_json(json);
  const auto* again = std::get_if<config::GatewayConfig>(&reloaded);
  if (again == nullptr) {
    const auto& e = std::get<config::ConfigError>(reloaded);
    std::fprintf(stderr, "to_json output refused: %s: %s\n%s\n", e.path.c_str(), e.message.c_str(),
                 json.c_str());
  }
  FUZZ_CHECK(again != nullptr);
  FUZZ_CHECK(*again == cfg);
  FUZZ_CHECK(config::to_json(*again) == json);
  return 0;
}
