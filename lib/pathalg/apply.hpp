// SPDX-License-Identifier: BSD-3-Clause
// Plans as srv6gw.v1 Apply requests (protobuf), and as the JSON that `srv6gw-ctl apply -f`
// reads (protobuf's JSON mapping of ApplyRequest).
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "pathalg/plan.hpp"
#include "srv6gw/v1/srv6gw.pb.h"

namespace srv6gw::pathalg {

// The changes of `diff` in a safe order: local SID and policy upserts, then rule upserts,
// rule deletes, policy deletes, local SID deletes.
v1::ApplyRequest to_apply(const PlanDiff& diff, bool dry_run = false,
                          std::optional<uint64_t> expected_generation = std::nullopt);

// Splits `diff` into requests of at most `max_bytes` serialized bytes each (gRPC's default
// receive limit is 4 MiB), keeping every request valid on its own when applied in order:
// first the local SIDs and policies, then the rules that refer to them, then deletes. Each
// request is atomic, the sequence is not. One request when it fits.
std::vector<v1::ApplyRequest> to_apply_split(const PlanDiff& diff, size_t max_bytes,
                                             bool dry_run = false);

// Protobuf JSON of a request (field names as in srv6gw.proto, as srv6gw-ctl prints them).
std::string to_json(const v1::ApplyRequest& request, bool pretty = true);

}  // namespace srv6gw::pathalg
