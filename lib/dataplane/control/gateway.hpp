// SPDX-License-Identifier: BSD-3-Clause
// Control side of the data plane (grout's control/): the Gateway owns the state the workers
// read (policies, steering, local SIDs, published lock-free under RCU QSBR), the per-worker
// contexts and the rings between the workers and the main lcore. The worker side, what runs
// per burst, is dataplane/datapath/burst.hpp.
//
// Gateway::create(), apply(), reclaim(), counters: main lcore and other control threads.
// The control methods of one Gateway may be called from several control threads (the
// Runtime underneath serialises them with a mutex); never from a worker.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "config/model.hpp"
#include "dataplane/counters.hpp"
#include "dataplane/feedback.hpp"
#include "dataplane/probe.hpp"
#include "policy/steering_delta.hpp"

struct rte_mbuf;
struct rte_mempool;
struct rte_rcu_qsbr;

namespace srv6gw::policy {
class Runtime;
}

namespace srv6gw::dataplane {

// Per-lcore worker state (counters, selection cursors, flowlet table, header pool). Owned by
// the Gateway, used by exactly one worker lcore.
struct WorkerContext;

struct PortEnv {
  net::MacAddr host_port_mac;       // our own MAC on the host port (source of frames to the host)
  net::MacAddr fabric_port_mac;     // our own MAC on the fabric port
  bool fabric_multiseg_tx = false;  // fabric port accepts chained mbufs (header segment)
};

// One rail (config::effective_rails(), same order): its ports and how many workers serve it.
// Workers are numbered rail by rail: rail 0's first, then rail 1's, ...
struct RailEnv {
  PortEnv ports;
  unsigned workers = 1;
};

// Encapsulation needs 14 + 40 + 8 + 16 * max_sids bytes in front of the inner IP packet.
// When an mbuf's headroom is smaller (128 B + the 14 B of the stripped L2 header hold up to
// 5 full SIDs with an SRH), the pipeline chains a header mbuf from `header_pool` (data room
// >= kHeaderSegmentRoom) if the fabric port supports multi-segment TX; otherwise the packet
// is dropped (no_headroom).
inline constexpr unsigned kHeaderSegmentRoom = 14 + 40 + 8 + 16 * 16;  // 318

class Gateway {
 public:
  virtual ~Gateway() = default;  // control-side object only; never called per packet

  // Allocates tables sized by cfg.capacities, an RCU QSBR variable for `n_workers` readers,
  // per-worker contexts (with `header_pool` for chained encap headers, may be null) and
  // publishes cfg. On error returns null and fills `error`.
  static std::unique_ptr<Gateway> create(const config::GatewayConfig& cfg, unsigned n_workers,
                                         const PortEnv& env, rte_mempool* header_pool,
                                         config::ConfigError& error);
  // The same for several rails (config::effective_rails(cfg), one RailEnv each).
  static std::unique_ptr<Gateway> create(const config::GatewayConfig& cfg,
                                         std::span<const RailEnv> rails, rte_mempool* header_pool,
                                         config::ConfigError& error);

  // Validates and publishes a whole new configuration (policies, steering, local SIDs,
  // actions). All or nothing: on error the running state is untouched.
  virtual std::optional<config::ConfigError> apply(const config::GatewayConfig& cfg) = 0;
  // apply() of a configuration the caller already checked as config::validate() does (the
  // gRPC agent): skips that O(size) re-check; the data plane's own checks remain.
  virtual std::optional<config::ConfigError> apply_validated(const config::GatewayConfig& cfg) {
    return apply(cfg);
  }
  // apply_validated() given what changed in the steering rules since the configuration in
  // force (policy::Runtime::apply_delta): O(changes) for exact and dst-any rules. cfg is
  // still the whole resulting configuration (the fallback for other rule kinds).
  virtual std::optional<config::ConfigError> apply_delta(const config::GatewayConfig& cfg,
                                                         const policy::SteeringDelta& delta) {
    (void)delta;
    return apply_validated(cfg);
  }

  // Reclaims objects retired by earlier applies whose grace period has passed. Called by the
  // control loop; never blocks on workers.
  virtual void reclaim() = 0;

  virtual rte_rcu_qsbr* qsbr() = 0;
  virtual unsigned worker_count() const = 0;
  virtual WorkerContext* worker(unsigned index) = 0;
  virtual const WorkerCounters& worker_counters(unsigned index) const = 0;
  // The rail worker `index` serves (index into config::effective_rails(running_config())).
  virtual unsigned worker_rail(unsigned index) const {
    (void)index;
    return 0;
  }
  // The configuration in force without its steering rules (policy::Runtime::running_config).
  virtual const config::GatewayConfig& running_config() const = 0;
  // The probes' traffic class per policy of running_config().policies (same order), from the
  // last configuration applied WITH its steering rules (config::probe_classes: the running
  // configuration keeps none). Control thread.
  virtual const std::vector<config::ProbeClass>& probe_classes() const = 0;

  // Per-policy and per-path totals summed over workers (control thread).
  struct PathStats {
    std::string policy;
    std::string segment_list;
    uint16_t path_id = 0;
    uint32_t weight_configured = 0;
    double factor = 1.0;  // local SR engine factor in force
    uint64_t packets = 0, bytes = 0;
    // balanced mode (0 otherwise): flows placed on the path and active within idle-gap-us,
    // summed over workers, and the load group the path counts in.
    uint64_t active_flows = 0;
    std::string load_group;
  };
  virtual std::vector<PathStats> path_stats() const = 0;

  // Local SR engine: publishes a copy of `policy` whose segment lists (configuration order)
  // carry the given factors (each in [0, 64]; effective weight = weight x factor, 0 takes
  // the list out, backups take over when no primary is left). Never patches in place.
  // Factors survive apply() for segment lists that keep their name. `down_mask`: the lists
  // that are down, not de-weighted (policy::with_factors).
  virtual std::optional<config::ConfigError> set_path_factors(const std::string& policy,
                                                              const std::vector<double>& factors,
                                                              uint64_t down_mask = 0) = 0;

  // The published state (tests, the engine): policies by slot, table sizes.
  virtual const policy::Runtime& runtime() const = 0;

  // ---- Local SR engine feedback (dataplane/feedback.hpp) ----
  // The workers' taps put events on one multi-producer/single-consumer ring owned here.
  // Moves up to `max` of them into `out` and returns how many. Single consumer: one control
  // thread (the engine on the main lcore) at a time.
  virtual unsigned drain_feedback(FeedbackEvent* out, unsigned max) = 0;
  // Appends our paths that carried traffic from inner host `local` toward `remote` in the
  // last one to two recent-path epochs (~5-10 ms), with their packet counts, on any worker
  // (fallback blame of a CNP that carries no reflected path id, in proportion to use).
  // Control thread; reads the workers' tables racily by design.
  virtual void recent_paths(const net::IpAddr& local, const net::IpAddr& remote,
                            std::vector<RecentUse>& uses) const = 0;

  // ---- Path health probes (dataplane/probe.hpp) ----
  // Hands probe frames (Ethernet onward, one segment each) to the first worker of `rail`
  // (index into config::effective_rails()) for that rail's fabric port. Returns how many were
  // taken; the caller still owns (and frees) the rest. Control thread.
  virtual unsigned send_probes(uint16_t rail, rte_mbuf* const* pkts, unsigned n) = 0;
  // Moves up to `max` probe replies the workers received into `out`. Single consumer (the
  // prober on the main lcore).
  virtual unsigned drain_probe_replies(ProbeReply* out, unsigned max) = 0;
};

}  // namespace srv6gw::dataplane
