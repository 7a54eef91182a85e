// SPDX-License-Identifier: BSD-3-Clause
// Per-worker state of the data plane. Opaque to the worker loop (pipeline.hpp only declares
// it); the pipeline and its tests include this header. One object per worker lcore, written
// only by that lcore; cache-line aligned so no line is shared between workers.
#pragma once

#include <rte_mempool.h>
#include <rte_rcu_qsbr.h>

#include <cstdint>
#include <memory>

#include "dataplane/counters.hpp"
#include "net/addr.hpp"
#include "policy/runtime.hpp"
#include "policy/selection.hpp"

namespace srv6gw::dataplane {

struct PathCounter {
  uint64_t packets = 0;
  uint64_t bytes = 0;  // encapsulated frame bytes sent toward the fabric
};

struct alignas(64) WorkerContext {
  // Written by the worker (plain increments), read racily by the control thread.
  WorkerCounters counters;

  // Read-only after Gateway::create.
  const policy::Runtime* runtime = nullptr;
  rte_rcu_qsbr* qsbr = nullptr;
  unsigned index = 0;
  rte_mempool* header_pool = nullptr;  // chained encap headers; null = none
  bool multiseg_tx = false;
  net::MacAddr host_port_mac;
  net::MacAddr fabric_port_mac;

  // Worker-private.
  policy::SelectorState selector;
  // [slot * policy::kMaxPaths + path]: written by the worker, summed by Gateway::path_stats.
  std::unique_ptr<PathCounter[]> path_counters;
  // Test hook: when non-zero, the TSC the pipeline uses instead of rte_rdtsc() (flowlet gaps).
  uint64_t fixed_tsc = 0;

  explicit WorkerContext(uint32_t slot_capacity)
      : selector(slot_capacity),
        path_counters(new PathCounter[size_t(slot_capacity) * policy::kMaxPaths]()) {}
};

}  // namespace srv6gw::dataplane
