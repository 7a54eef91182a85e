// SPDX-License-Identifier: BSD-3-Clause
// A gateway's managed state (policies, steering rules, local SIDs) as srv6gw.v1 objects, and
// the difference between two of them as the Apply changes that turn one into the other. Pure:
// no gRPC calls, unit-tested on its own.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "srv6gw/v1/srv6gw.pb.h"

namespace srv6gw::sr_controller {

// Keyed as the gateway keys them (docs/design/agent.md): policy name, rule id, local SID address.
// Objects are stored normalised (normalize() below) so that equal meaning is equal bytes.
struct GatewayState {
  std::map<std::string, v1::SrPolicy> policies;
  std::map<uint32_t, v1::SteeringRule> steering;
  std::map<std::string, v1::LocalSid> local_sids;

  void add(v1::SrPolicy p);
  void add(v1::SteeringRule r);
  void add(v1::LocalSid s);
  size_t size() const { return policies.size() + steering.size() + local_sids.size(); }
  bool operator==(const GatewayState& o) const;
};

// Every default made explicit and every address in canonical text, the way the gateway
// returns objects from ListPolicies/ListSteering/ListLocalSids (weight 1, flowlet gap 50 us,
// uSID format 32/16, encap ENCAPS, selection FLOW, behavior END_DT46; "fc00:0:1::e" for
// "fc00:0000:1::E", "10.1.0.0/16" for "10.1.2.3/16"). Text that is not an address is left
// as it is (the gateway then refuses it with the field's name).
void normalize(v1::SrPolicy& p);
void normalize(v1::SteeringRule& r);
void normalize(v1::LocalSid& s);

// The changes that make `running` equal to `desired`, smallest first-order set: an upsert
// per object that is new or differs, a delete per object that `desired` does not have.
// Ordered so that a reader sees a sensible batch (local SIDs, policies, rules upserted; then
// rules, policies, local SIDs deleted); the gateway applies a batch atomically anyway.
std::vector<v1::Change> diff(const GatewayState& desired, const GatewayState& running);

// Counts of a change list, for logs.
struct DiffCounts {
  unsigned upserts = 0, deletes = 0;
};
DiffCounts count(const std::vector<v1::Change>& changes);

}  // namespace srv6gw::sr_controller
