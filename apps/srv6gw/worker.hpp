// SPDX-License-Identifier: BSD-3-Clause
// The worker lcore loop: RX a burst on each port, hand it to the pipeline, buffer what it
// returns for the other port, drain the buffers on a timer, report quiescent state.
#pragma once

#include <atomic>
#include <cstdint>

namespace srv6gw::dataplane {
class Gateway;
struct WorkerContext;
}  // namespace srv6gw::dataplane

namespace srv6gw::app {

// Stop request. Written by the signal handler and the main lcore (store relaxed is enough:
// workers only need to see it eventually); read by every worker once per loop iteration.
extern std::atomic<bool> g_stop;
static_assert(std::atomic<bool>::is_always_lock_free, "the signal handler stores g_stop");

// Lossless forwarding of one worker (config ports/lossless; tx_queue.hpp).
struct LosslessParams {
  bool enabled = true;
  uint32_t capacity = 512;     // frames held per direction before its ingress is paused
  uint32_t ecn_threshold = 0;  // mark CE on ECT frames queued above this depth; 0 = never
  uint64_t storm_tsc = 0;      // pause-storm watchdog bound in TSC cycles
};

struct WorkerArgs {
  dataplane::Gateway* gateway = nullptr;
  dataplane::WorkerContext* context = nullptr;
  uint16_t host_port = 0, fabric_port = 0;
  uint16_t queue = 0;
  uint64_t drain_tsc = 0;             // flush a partly filled TX buffer after this many TSC cycles
  LosslessParams to_fabric, to_host;  // ports/lossless of the configuration, per direction
};

// rte_eal_remote_launch entry point; `arg` is a WorkerArgs*.
int worker_main(void* arg);

}  // namespace srv6gw::app
