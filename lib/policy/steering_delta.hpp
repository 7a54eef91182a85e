// SPDX-License-Identifier: BSD-3-Clause
// What an Apply changed in the steering rules, for policy::Runtime::apply_delta(): the
// controller's common case (a few or 100k exact / dst-any rules changed on a gateway holding
// a million) then costs O(changes) in the data plane instead of O(configuration).
#pragma once

#include <cstddef>
#include <vector>

#include "config/model.hpp"

namespace srv6gw::policy {

struct SteeringDelta {
  // One rule's net change: `before` is the rule in force it replaces or deletes (null: new
  // rule), `after` the rule it becomes (null: deleted). The pointers only need to stay valid
  // during the apply_delta() call.
  struct Change {
    const config::SteeringRule* before = nullptr;
    const config::SteeringRule* after = nullptr;
    size_t after_index = 0;  // position of `after` in the new configuration (error paths)
  };
  std::vector<Change> rules;

  // The delta that undoes this one (a rollback to the configuration before).
  SteeringDelta inverse() const {
    SteeringDelta out;
    out.rules.reserve(rules.size());
    for (const Change& c : rules) out.rules.push_back({c.after, c.before, 0});
    return out;
  }
};

}  // namespace srv6gw::policy
