// SPDX-License-Identifier: BSD-3-Clause
// Fuzzes the gRPC agent's request validation: the bytes of an ApplyRequest as they arrive on
// the wire -> protobuf parse -> agent::Batch (wire-to-model conversion, the batch's net
// changeset, its validation), the code path of the Apply RPC before anything reaches the data
// plane. The base is the running state of config/examples/gateway.json (and its ConfigIndex),
// so deletes and references can hit existing policies, rules and local SIDs.
//
// Invariants (besides ASan/UBSan/LSan):
//  - the Apply RPC's incremental validation (against the indexes) and the file loader's full
//    config::validate() of the result accept and refuse the same batches;
//  - a refusal names where: "changes[i]..." with i inside the batch, or "configuration
//    refused: <message> (/srv6gw:gateway/...)" with a YANG path; its message is not empty;
//  - an accepted batch counts exactly one edit per change; its changeset applied to a copy of
//    the base gives a configuration config::validate() accepts, the same with either
//    validation, which survives the persistence round trip (to_json -> load_config_json) and
//    whose policies, rules and local SIDs convert to the wire and back unchanged (what
//    List*/Get* serve); the state's steering index points every rule id at that rule;
//  - the same request on the same base gives the same answer (no hidden state).
#include <google/protobuf/stubs/logging.h>

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <variant>

#include "agent/batch.hpp"
#include "agent/convert.hpp"
#include "config/json_output.hpp"
#include "config/loader.hpp"
#include "config/model.hpp"
#include "config/validate.hpp"
#include "fuzz_util.hpp"
#include "srv6gw/v1/srv6gw.pb.h"

namespace agent = srv6gw::agent;
namespace config = srv6gw::config;
namespace v1 = srv6gw::v1;

#ifndef SRV6GW_FUZZ_BASE_CONFIG
#error "SRV6GW_FUZZ_BASE_CONFIG (the base configuration file) must be defined by the build"
#endif

namespace {

struct Base {
  std::shared_ptr<agent::AgentState> state;
  config::ConfigIndex index;
};

const Base& base_state() {
  static const Base base = [] {
    // Invalid UTF-8 in a string field makes protobuf log an error per input: noise only.
    google::protobuf::SetLogHandler(nullptr);
    auto loaded = config::load_config_file(SRV6GW_FUZZ_BASE_CONFIG);
    if (auto* e = std::get_if<config::ConfigError>(&loaded)) {
      std::fprintf(stderr, "fuzz_apply_request: base %s refused: %s: %s\n", SRV6GW_FUZZ_BASE_CONFIG,
                   e->path.c_str(), e->message.c_str());
      std::abort();
    }
    Base b;
    b.state = agent::make_state(std::move(std::get<config::GatewayConfig>(loaded)), 7);
    b.index = config::ConfigIndex(b.state->config);
    return b;
  }();
  return base;
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
  const Base& b = base_state();
  const agent::AgentState& base = *b.state;
  v1::ApplyRequest req;
  if (!req.ParseFromArray(data, int(size))) return 0;  // gRPC refuses it before Apply runs
  // The Apply RPC refuses an empty batch before building one.
  if (req.changes_size() == 0) return 0;

  agent::Batch batch(base, b.index, req.changes());
  const auto error = batch.run(agent::Validation::incremental);
  agent::Batch again(base, b.index, req.changes());
  const auto error_again = again.run(agent::Validation::incremental);
  agent::Batch full(base, b.index, req.changes());
  const auto error_full = full.run(agent::Validation::full);
  FUZZ_CHECK(error.has_value() == error_again.has_value());
  if (error.has_value() != error_full.has_value()) {
    std::fprintf(stderr, "incremental validation %s, full validation %s\n",
                 error ? error->message.c_str() : "accepts",
                 error_full ? error_full->message.c_str() : "accepts");
  }
  FUZZ_CHECK(error.has_value() == error_full.has_value());

  if (error) {
    FUZZ_CHECK(error->message == error_again->message);
    FUZZ_CHECK(error->code == error_again->code);
    for (const std::string* m : {&error->message, &error_full->message}) {
      const bool named = names_a_change(*m, req.changes_size()) ||
                         (starts_with(*m, "configuration refused: ") &&
                          m->find(" (/srv6gw:gateway") != std::string::npos);
      if (!named) std::fprintf(stderr, "refusal names no field: %s\n", m->c_str());
      FUZZ_CHECK(named);
      FUZZ_CHECK(m->find(": ") != std::string::npos && m->size() > m->find(": ") + 2);
    }
    return 0;
  }

  const agent::ChangeCounts& c = batch.counts();
  FUZZ_CHECK(c.policies_upserted + c.policies_deleted + c.steering_upserted + c.steering_deleted +
                 c.local_sids_upserted + c.local_sids_deleted ==
             uint32_t(req.changes_size()));

  const std::shared_ptr<agent::AgentState> next = agent::copy_state(base);
  agent::apply_changeset(batch.changeset(), *next);
  const std::shared_ptr<agent::AgentState> next_full = agent::copy_state(base);
  agent::apply_changeset(full.changeset(), *next_full);
  const config::GatewayConfig& cfg = next->config;
  FUZZ_CHECK(cfg == next_full->config);
  if (auto e = config::validate(cfg)) {
    std::fprintf(stderr, "accepted batch gives a configuration validate() refuses: %s: %s\n",
                 e->path.c_str(), e->message.c_str());
    FUZZ_CHECK(false);
  }

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

  FUZZ_CHECK(next->steering_index->position.size() == cfg.steering.size());
  for (size_t k = 0; k < cfg.steering.size(); ++k) {
    const uint32_t* at = config::find_value(next->steering_index->position, cfg.steering[k].id);
    FUZZ_CHECK(at && *at == k);
  }
  return 0;
}
