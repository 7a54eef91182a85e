// SPDX-License-Identifier: BSD-3-Clause
// srv6gw.v1 messages <-> the agent's values. Configuration objects (convert.cpp): converting
// from the wire checks only what the model cannot hold (text addresses, integer widths, enum
// values, a rule's identity and match); every semantic check is config::validate()'s, shared
// with the YANG loader. Engine parameters, events and statistics: convert_state.cpp.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "agent/event_bus.hpp"
#include "agent/state_sink.hpp"
#include "config/model.hpp"
#include "engine/params.hpp"
#include "srv6gw/v1/srv6gw.pb.h"

namespace srv6gw::agent {

// A refusal while converting: `field` is relative to the converted message
// ("segment_lists[0].sids[1]"), `yang` the configuration node it would have become.
struct FieldError {
  std::string field;
  std::string yang;
  std::string message;
};

bool from_proto(const v1::SrPolicy& in, config::Policy& out, FieldError& error);
bool from_proto(const v1::SteeringRule& in, config::SteeringRule& out, FieldError& error);
bool from_proto(const v1::LocalSid& in, config::LocalSid& out, FieldError& error);
// A rail's settings (lossless stays the gateway-wide ports/lossless: the caller's to set).
bool from_proto(const v1::Rail& in, config::Rail& out, FieldError& error);

void to_proto(const config::Policy& in, v1::SrPolicy& out);
void to_proto(const config::SteeringRule& in, v1::SteeringRule& out);
void to_proto(const config::LocalSid& in, v1::LocalSid& out);
void to_proto(const config::Rail& in, v1::Rail& out);

// "10.1.0.0/16" from a prefix rule's dst and prefix_len.
std::string prefix_text(const config::SteeringRule& rule);

// Maps the part of a YANG path below a policy / rule / local SID node (e.g.
// "/segment-list[name='a']/sid[.='fc00::1']") to the field path inside the message that
// defined it ("segment_lists[0].sids[2]"). Empty `rest` gives "".
std::string policy_field(const v1::SrPolicy& msg, std::string_view rest, bool prefer_last);
std::string rule_field(std::string_view rest);
std::string local_sid_field(std::string_view rest);
std::string rail_field(std::string_view rest);  // a rail's message: "fabric_vlan.id"

void to_proto(const ChangeCounts& in, v1::ChangeCounts& out);
void to_proto(const Event& in, v1::Event& out);
std::optional<EventKind> from_proto(v1::EventKind kind);  // nullopt: not a kind we know

void to_proto(const engine::Params& in, v1::EngineParams& out);
// The fields present in `in` overwrite `p`. Decimals are rounded to the six fraction digits
// of the YANG decimal64 leaves (so what runs is what the state file will hold). Returns the
// first non-finite field ("params.alpha: ..."), "" otherwise.
std::string merge_engine_params(const v1::EngineParams& in, engine::Params& p);

// GetStats' answer; `generation` is the running one.
void to_proto(const StatsSnapshot& in, uint64_t generation, v1::Stats& out);
// One worker's counters; every plain counter of dataplane/counters.hpp by field name.
void worker_to_proto(unsigned index, const dataplane::WorkerCounters& in, v1::WorkerStats& out);

}  // namespace srv6gw::agent
