// SPDX-License-Identifier: BSD-3-Clause
// Fuzzes the gRPC agent's request validation: the bytes of an ApplyRequest as they arrive on
// the wire -> protobuf parse -> agent::Batch (wire-to-model conversion, the batch's edits,
// config::validate()), the code path of the Apply RPC before anything reaches the data plane.
// The base is the running state of config/examples/gateway.json, so deletes and references
// can hit existing policies, rules and local SIDs.
//
// Invariants (besides ASan/UBSan/LSan):
//  - a refusal names where: "changes[i]..." with i inside the batch, or "configuration
//    refused: <message> (/srv6gw:gateway/...)" with a YANG path; its message is not empty;
//  - an accepted batch counts exactly one edit per change, passes config::validate(), survives
//    the persistence round trip (to_json -> load_config_json gives it back) and every policy,
//    rule and local SID converts to the wire and back unchanged (what List*/Get* serve);
//  - the candidate state's steering index points every rule id at that rule;
//  - the same request on the same base gives the same answer (no hidden state).
#include <google/protobuf/stubs/logging.h>

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <variant>

#include "agent/batch.hpp"
#include "agent/convert.hpp"
#include "config/loader.hpp"
#include "config/model.hpp"
#include "fuzz_util.hpp"
#include "srv6gw/v1/srv6gw.pb.h"

namespace agent = srv6gw::agent;
namespace config = srv6gw::config;
namespace v1 = srv6gw::v1;

#ifndef SRV6GW_FUZZ_BASE_CONFIG
#error "SRV6GW_FUZZ_BASE_CONFIG (the base configuration file) must be defined by the build"
#endif

namespace {

const agent::AgentState& base_state() {
  static const std::shared_ptr<agent::AgentState> state = [] {
    // Invalid UTF-8 in a string field makes protobuf log an error per input: noise only.
    google::protobuf::SetLogHandler(nullptr);
    auto loaded = config::load_config_file(SRV6GW_FUZZ_BASE_CONFIG);
    if (auto* e = std::get_if<config::ConfigError>(&loaded)) {
      std::fprintf(stderr, "fuzz_apply_request: base %s refused: %s: %s\n", SRV6GW_FUZZ_BASE_CONFIG,
                   e->path.c_str(), e->message.c_str());
      std::abort();
    }
    return agent::make_state(std::move(std::get<config::GatewayConfig>(loaded)), 7);
  }();
  return *state;
}

bool starts_with(const std::string& s, const std::string& prefix) {
  return s.compare(0, prefix.size(), prefix) == 0;
}

// "changes[<i>]" at the front with i < n.
bool names_a_change(const std::string& message, int n) {
  if (!starts_with(message, "changes[")) return false;
  const size_t close = message.find(']');
  if (close == std::string::npos || close == 8) return false;
  const std::string digits = message.substr(8, close - 8);
  if (digits.find_first_not_of("0123456789") != std::string::npos || digits.size() > 9)
    return false;
  return std::stol(digits) < n;
}

template <class Model, class Wire>
void check_wire_roundtrip(const Model& item) {
  Wire wire;
  agent::to_proto(item, wire);
  Model back;
  agent::FieldError fe;
  const bool ok = agent::from_proto(wire, back, fe);
  if (!ok)
    std::fprintf(stderr, "to_proto output refused: %s: %s\n", fe.field.c_str(), fe.message.c_str());
  FUZZ_CHECK(ok);
  FUZZ_CHECK(back == item);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const agent::AgentState& base = base_state();
  v1::ApplyRequest req;
  if (!req.ParseFromArray(data, int(size))) return 0;  // gRPC refuses it before Apply runs
  // The Apply RPC refuses an empty batch before building one.
  if (req.changes_size() == 0) return 0;

  agent::Batch batch(base, req.changes());
  const auto error = batch.run();
  agent::Batch again(base, req.changes());
  const auto error_again = again.run();
  FUZZ_CHECK(error.has_value() == error_again.has_value());

  if (error) {
    FUZZ_CHECK(error->message == error_again->message);
    FUZZ_CHECK(error->code == error_again->code);
    const std::string& m = error->message;
    const bool named =
        names_a_change(m, req.changes_size()) || (starts_with(m, "configuration refused: ") &&
                                                  m.find(" (/srv6gw:gateway") != std::string::npos);
    if (!named) std::fprintf(stderr, "refusal names no field: %s\n", m.c_str());
    FUZZ_CHECK(named);
    FUZZ_CHECK(m.find(": ") != std::string::npos && m.size() > m.find(": ") + 2);
    return 0;
  }

  const agent::ChangeCounts& c = batch.counts();
  FUZZ_CHECK(c.policies_upserted + c.policies_deleted + c.steering_upserted + c.steering_deleted +
                 c.local_sids_upserted + c.local_sids_deleted ==
             uint32_t(req.changes_size()));

  const config::GatewayConfig& cfg = batch.candidate();
  FUZZ_CHECK(cfg == again.candidate());
  FUZZ_CHECK(!config::validate(cfg).has_value());

  const std::string json = config::to_json(cfg);
  const config::LoadResult reloaded = config::load_config_json(json);
  const auto* back = std::get_if<config::GatewayConfig>(&reloaded);
  if (back == nullptr) {
    const auto& e = std::get<config::ConfigError>(reloaded);
    std::fprintf(stderr, "persisted state refused on reload: %s: %s\n", e.path.c_str(),
                 e.message.c_str());
  }
  FUZZ_CHECK(back != nullptr);
  FUZZ_CHECK(*back == cfg);

  for (const auto& p : cfg.policies) check_wire_roundtrip<config::Policy, v1::SrPolicy>(p);
  for (const auto& r : cfg.steering)
    check_wire_roundtrip<config::SteeringRule, v1::SteeringRule>(r);
  for (const auto& l : cfg.local_sids) check_wire_roundtrip<config::LocalSid, v1::LocalSid>(l);

  const std::shared_ptr<agent::AgentState> next = batch.next(base.generation + 1);
  FUZZ_CHECK(next->generation == base.generation + 1);
  FUZZ_CHECK(next->steering_index->position.size() == next->config.steering.size());
  for (size_t k = 0; k < next->config.steering.size(); ++k) {
    const auto it = next->steering_index->position.find(next->config.steering[k].id);
    FUZZ_CHECK(it != next->steering_index->position.end() && it->second == k);
  }
  return 0;
}
