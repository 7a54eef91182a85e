// SPDX-License-Identifier: BSD-3-Clause
// Per-worker state of the data plane: the Gateway (control/) creates it, the burst functions
// (datapath/) use it; the worker loop only sees the declaration in datapath/burst.hpp. One
// object per worker lcore, written only by that lcore; cache-line aligned so no line is
// shared between workers.
#pragma once

#include <rte_mempool.h>
#include <rte_rcu_qsbr.h>
#include <rte_ring.h>

#include <atomic>
#include <cstdint>
#include <memory>

#include "dataplane/counters.hpp"
#include "dataplane/datapath/flow_cache.hpp"
#include "dataplane/feedback.hpp"
#include "net/addr.hpp"
#include "policy/runtime.hpp"
#include "policy/selection.hpp"

namespace srv6gw::dataplane {

struct PathCounter {
  uint64_t packets = 0;
  uint64_t bytes = 0;  // encapsulated frame bytes sent toward the fabric
};

// The host RNIC's MAC as learned from frames the host sends (used when the configuration
// has no host-mac). Packed into the low 48 bits; 0 = nothing learned yet. Written by any
// worker, at most once per burst and only when it changed (relaxed store); read by every
// worker once per fabric burst (relaxed load). Its own cache line: it is shared.
struct alignas(64) LearnedMac {
  std::atomic<uint64_t> packed{0};
};

inline uint64_t pack_mac(const uint8_t* mac) {
  uint64_t v = 0;
  for (int i = 0; i < 6; ++i) v = v << 8 | mac[i];
  return v;
}
inline void unpack_mac(uint64_t v, uint8_t* mac) {
  for (int i = 5; i >= 0; --i, v >>= 8) mac[i] = uint8_t(v);
}

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
  LearnedMac* learned_host_mac = nullptr;  // shared by all workers of one rail
  // The rail this worker serves (index into config::effective_rails()) and, when that rail's
  // outer source differs from the gateway's source-address, the source written over the
  // templates of policies that set none (docs/design/rails.md).
  uint16_t rail = 0;
  // 1 << rail: tested against CompiledPolicy::rail_mask per encapsulated packet (a policy
  // scoped to other rails is a steering miss here). Set with `rail`.
  uint64_t rail_bit = 1;
  bool rail_source_override = false;
  net::Ipv6Addr rail_source;
  // Local SR engine feedback: the MP/SC event ring (workers enqueue, the main lcore drains)
  // and the reflection table (workers write on CE, read on CNP), both owned by the Gateway.
  rte_ring* feedback_ring = nullptr;
  ReflectTable* reflect = nullptr;
  unsigned recent_epoch_shift = 24;  // recent-path epoch = 2^shift TSC cycles (~5 ms)
  // Path health probes (dataplane/probe.hpp), owned by the Gateway: the mbuf ring toward the
  // fabric (the prober and every worker enqueue, the worker with probe_tx_drain dequeues)
  // and the reply ring (workers enqueue, the prober dequeues).
  rte_ring* probe_tx = nullptr;
  bool probe_tx_drain = false;  // the first worker of each rail (its rail's ring)
  rte_ring* probe_replies = nullptr;
  // Outer hop limit of reflected probes (configuration hop-limit): written by the control
  // thread on apply, read by the workers on a probe.
  std::atomic<uint8_t> probe_hop_limit{64};
  // engine/path-id-in-source (docs/design/engine.md): without an SRH our path id (or a reflected
  // one) goes into the low 16 bits of the outer source, and the remote's is read from there.
  // Written by the control thread on apply, read by the worker per encapsulation.
  std::atomic<bool> path_id_in_source{false};
  // engine/source-entropy-bits (docs/design/engine.md): the entropy field's mask in the outer
  // source's last 32 bits (srv6::source_entropy_mask; 0 = off). Written by the control
  // thread on apply, read by the worker per encapsulation.
  std::atomic<uint32_t> source_entropy_mask{0};

  // Worker-private.
  uint64_t last_learned_host_mac = 0;  // what this worker last stored (avoids shared writes)
  policy::SelectorState selector;
  // [slot * policy::kMaxPaths + path]: written by the worker, summed by Gateway::path_stats.
  std::unique_ptr<PathCounter[]> path_counters;
  // Recent path use per remote host (fallback blame): written by the worker, read by the
  // main lcore through Gateway::recent_paths (relaxed atomics).
  std::unique_ptr<RecentPathEntry[]> recent{new RecentPathEntry[kRecentEntries]};
  // Events collected during one burst, enqueued once at its end (at most two per packet).
  uint16_t n_pending = 0;
  static constexpr uint16_t kPendingCapacity = 64;
  FeedbackEvent pending[kPendingCapacity];
  // The last RoCEv2 flow's classification (datapath/flow_cache.hpp), carried across bursts.
  LastFlow last_flow;
  // Test hook: false = classify every packet on its own (the uncached path the cache must
  // match); the data plane never changes it.
  bool flow_cache = true;
  // Test hook: when non-zero, the TSC the pipeline uses instead of rte_rdtsc() (flowlet gaps).
  uint64_t fixed_tsc = 0;

  explicit WorkerContext(uint32_t slot_capacity)
      : selector(slot_capacity),
        path_counters(new PathCounter[size_t(slot_capacity) * policy::kMaxPaths]()) {}
};

}  // namespace srv6gw::dataplane
