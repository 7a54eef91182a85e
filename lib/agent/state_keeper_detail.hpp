// SPDX-License-Identifier: BSD-3-Clause
// What the files of StateKeeper share (state_keeper*.cpp only; not part of the interface).
#pragma once

#include <chrono>
#include <string>

#include "agent/state_keeper.hpp"

namespace srv6gw::agent::keeper_detail {

using Clock = std::chrono::steady_clock;

inline double ms_since(Clock::time_point t) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t).count();
}

inline Refusal refused(Refusal::Code code, std::string message) {
  return Refusal{code, std::move(message)};
}

}  // namespace srv6gw::agent::keeper_detail
