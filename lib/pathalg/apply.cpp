// SPDX-License-Identifier: BSD-3-Clause
#include "pathalg/apply.hpp"

#include <google/protobuf/util/json_util.h>

#include "agent/convert.hpp"

namespace srv6gw::pathalg {

namespace {

// The changes of a diff in application order.
std::vector<v1::Change> changes_of(const PlanDiff& d) {
  std::vector<v1::Change> out;
  out.reserve(d.size());
  for (const auto& l : d.upsert_local_sids) {
    agent::to_proto(l, *out.emplace_back().mutable_upsert_local_sid());
  }
  for (const auto& p : d.upsert_policies) {
    agent::to_proto(p, *out.emplace_back().mutable_upsert_policy());
  }
  for (const auto& r : d.upsert_rules) {
    agent::to_proto(r, *out.emplace_back().mutable_upsert_steering());
  }
  for (uint32_t id : d.delete_rules) out.emplace_back().set_delete_steering(id);
  for (const auto& name : d.delete_policies) out.emplace_back().set_delete_policy(name);
  for (const auto& sid : d.delete_local_sids) {
    out.emplace_back().set_delete_local_sid(net::to_string(sid));
  }
  return out;
}

}  // namespace

v1::ApplyRequest to_apply(const PlanDiff& diff, bool dry_run,
                          std::optional<uint64_t> expected_generation) {
  v1::ApplyRequest req;
  for (auto& c : changes_of(diff)) *req.add_changes() = std::move(c);
  req.set_dry_run(dry_run);
  if (expected_generation) req.set_expected_generation(*expected_generation);
  return req;
}

std::vector<v1::ApplyRequest> to_apply_split(const PlanDiff& diff, size_t max_bytes, bool dry_run) {
  std::vector<v1::ApplyRequest> out;
  size_t bytes = 0;
  for (auto& c : changes_of(diff)) {
    // A repeated message field costs its size plus a tag and a length prefix (<= 6 bytes).
    const size_t size = c.ByteSizeLong() + 6;
    if (out.empty() || (bytes + size > max_bytes && out.back().changes_size() > 0)) {
      out.emplace_back().set_dry_run(dry_run);
      bytes = 4;
    }
    *out.back().add_changes() = std::move(c);
    bytes += size;
  }
  if (out.empty()) out.emplace_back().set_dry_run(dry_run);
  return out;
}

std::string to_json(const v1::ApplyRequest& request, bool pretty) {
  google::protobuf::util::JsonPrintOptions o;
  o.add_whitespace = pretty;
  o.preserve_proto_field_names = true;
  std::string s;
  (void)google::protobuf::util::MessageToJsonString(request, &s, o);
  if (pretty && (s.empty() || s.back() != '\n')) s += '\n';
  return s;
}

}  // namespace srv6gw::pathalg
