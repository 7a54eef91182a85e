// SPDX-License-Identifier: BSD-3-Clause
// What the files of StateKeeper share (state_keeper*.cpp only; not part of the interface).
#pragma once

#include <time.h>

#include <chrono>
#include <string>

#include "agent/state_keeper.hpp"

namespace srv6gw::agent::keeper_detail {

using Clock = std::chrono::steady_clock;

inline double ms_since(Clock::time_point t) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t).count();
}

// CPU time this thread has used, in ms. Beside the wall-clock phases of an Apply it tells
// work from waiting: on a loaded machine the wall clock of a phase is mostly the time the
// thread waited for a CPU (or for the control mutex, or the disk).
inline double thread_cpu_ms() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return double(ts.tv_sec) * 1e3 + double(ts.tv_nsec) / 1e6;
}

inline Refusal refused(Refusal::Code code, std::string message) {
  return Refusal{code, std::move(message)};
}

}  // namespace srv6gw::agent::keeper_detail
