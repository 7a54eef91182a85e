// SPDX-License-Identifier: BSD-3-Clause
// The gateway's published forwarding state and the control-side code that changes it.
//
// Readers (worker lcores, hot path), per burst: view() once (load-acquire of an immutable
// View: settings, steering flags and immutable tables, local SIDs), then per packet
// steer() -> policy(slot) (load-acquire of an immutable CompiledPolicy). They never write.
//
// Writer (one control thread at a time; the public control methods take an internal mutex):
// builds new immutable objects, publishes them with release-stores, updates the ExactTable
// (lock-free readers) and rte_lpm in place, and retires what it replaced. Retired objects
// are freed by reclaim() once every worker has reported a quiescent state (RCU QSBR) after
// the retirement; the ExactTable and rte_lpm reclaim their own entries through RCU defer
// queues on the same QSBR variable.
//
// Two ways in: apply() takes a whole configuration and diffs every table against it
// (O(configuration)); apply_delta() takes what changed in the steering rules (the agent's
// batch) and touches only those ExactTable entries (O(changes)), same publication order. The
// ExactTable is the record of what is installed in it; no copy of the steering rules is kept.
//
// The implementation is one file per concern, listed at the top of runtime.cpp.
#pragma once

#include <rte_lpm.h>
#include <rte_rcu_qsbr.h>

#include <array>
#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "config/model.hpp"
#include "policy/compiled_policy.hpp"
#include "policy/steering.hpp"
#include "policy/steering_delta.hpp"
#include "srv6/decap.hpp"

namespace srv6gw::policy {

// Configuration values the data plane reads per packet, published as one immutable object.
struct Settings {
  bool transparent_mac = false;
  bool has_fabric_nexthop_mac = false;
  net::MacAddr fabric_nexthop_mac;
  bool has_host_mac = false;
  net::MacAddr host_mac;
  config::MissAction steering_miss = config::MissAction::pass;
  config::MissAction non_roce = config::MissAction::pass;
  config::MissAction fabric_non_sid = config::MissAction::pass;
  // Fabric VLAN (config::FabricVlan, docs/design/vlan-jumbo.md): the tag is built here once
  // per configuration (TCI with PCP 0, PCP per DSCP already in TCI position); per packet the
  // encap step writes it with one OR.
  bool fabric_vlan = false;
  bool host_keep_vlan = false;  // decap: the outer frame's tag goes on to the host
  uint16_t fabric_vlan_tci = 0;
  std::array<uint16_t, 64> pcp_tci_of_dscp{};
  // Port IP MTUs (config::PortRole::mtu). Configured (non-zero): chained frames are handled
  // and IP packets above the limit dropped as too_big. 0: chained frames are refused as
  // oversize and the limit stays at its maximum. mtu_checks: either one is configured (the
  // one flag the per-packet path tests when none is).
  uint16_t host_mtu = 0, fabric_mtu = 0;
  uint32_t host_mtu_limit = UINT32_MAX, fabric_mtu_limit = UINT32_MAX;
  bool mtu_checks = false;
};

// Our local SIDs: a sorted array of 16-byte keys, binary searched (a handful of entries).
class LocalSidTable {
 public:
  // A SID of the shared list matches on every rail; a rail's own only on that rail.
  static constexpr uint16_t kAnyRail = 0xFFFF;
  struct Entry {
    net::Ipv6Addr sid;
    srv6::LocalSidBehavior behavior;
    uint16_t rail = kAnyRail;  // index into config::effective_rails()
    bool matches_rail(uint16_t r) const { return rail == kAnyRail || rail == r; }
  };
  explicit LocalSidTable(std::vector<Entry> entries);
  bool empty() const { return entries_.empty(); }
  size_t size() const { return entries_.size(); }
  const Entry* find(const uint8_t* addr16) const {
    // The address as two big-endian words: comparing those is memcmp's byte order, without
    // a call per step (the lookup runs on every fabric packet).
    const uint64_t key_hi = load_be64(addr16), key_lo = load_be64(addr16 + 8);
    size_t lo = 0, hi = entries_.size();
    while (lo < hi) {
      const size_t mid = (lo + hi) / 2;
      const uint8_t* sid = entries_[mid].sid.bytes.data();
      const uint64_t sid_hi = load_be64(sid), sid_lo = load_be64(sid + 8);
      if (sid_hi == key_hi && sid_lo == key_lo) return &entries_[mid];
      if (sid_hi < key_hi || (sid_hi == key_hi && sid_lo < key_lo))
        lo = mid + 1;
      else
        hi = mid;
    }
    return nullptr;
  }
  // find() restricted to the SIDs that match on `rail`: a SID of another rail is not ours here.
  const Entry* find_on_rail(const uint8_t* addr16, uint16_t rail) const {
    const Entry* e = find(addr16);
    return e && e->matches_rail(rail) ? e : nullptr;
  }

 private:
  static uint64_t load_be64(const uint8_t* p) {
    uint64_t v;
    std::memcpy(&v, p, sizeof v);
    return __builtin_bswap64(v);
  }
  std::vector<Entry> entries_;
};

// Immutable snapshot read by workers once per burst.
struct View {
  uint64_t generation = 0;
  Settings settings;
  SteeringView steering;
  const LocalSidTable* local_sids = nullptr;  // never null
  // Per rail (index into config::effective_rails(); one entry for a single pair): `settings`
  // with that rail's next-hop and host MACs. Never empty.
  std::vector<Settings> rail_settings;
  // Owners of the immutable parts (shared between consecutive views when unchanged).
  std::shared_ptr<const QpRangeTable> qp_ranges_owner;
  std::shared_ptr<const PrefixTable> prefix6_owner, dscp_prefix4_owner, dscp_prefix6_owner;
  std::shared_ptr<const LocalSidTable> local_sids_owner;
};

// The settings a worker of rail `rail` applies (its MACs, the shared actions).
inline const Settings& settings_of_rail(const View& v, uint16_t rail) {
  return v.rail_settings[rail];
}

class Runtime {
 public:
  // Creates the tables sized by cfg.capacities on `socket_id`, attaches the ExactTable and
  // rte_lpm to `qsbr` (which must outlive the Runtime) and applies cfg. `tsc_hz` converts
  // flowlet gaps (0 = one tick per microsecond, for tests). Null + error on failure.
  static std::unique_ptr<Runtime> create(const config::GatewayConfig& cfg, rte_rcu_qsbr* qsbr,
                                         uint64_t tsc_hz, int socket_id,
                                         config::ConfigError& error);
  ~Runtime();
  Runtime(const Runtime&) = delete;
  Runtime& operator=(const Runtime&) = delete;

  // ---- control side ----

  // Validates (config::validate plus the compiler's own checks) and publishes cfg; all or
  // nothing. Unchanged policies keep their compiled objects (and so their per-worker
  // selection state); changed ones are rebuilt, carrying engine factors over by
  // segment-list name. Capacities are fixed at create() and cannot change here.
  std::optional<config::ConfigError> apply(const config::GatewayConfig& cfg);
  // The same for a configuration the caller has already checked as config::validate() does
  // (the gRPC agent validates each batch incrementally): skips that O(size) re-check, keeps
  // every check of the data plane's own.
  std::optional<config::ConfigError> apply_validated(const config::GatewayConfig& cfg);
  // apply_validated() of `cfg` given what changed in its steering rules since the
  // configuration in force: O(policies + local SIDs + |delta|) when the delta touches only
  // exact and dst-any rules (the ExactTable is edited for just those keys, the immutable
  // tables are shared with the running view), with the same publication order, data-plane
  // checks and all-or-nothing guarantee as apply(). A delta that touches QP-range or prefix
  // rules, or that does not match what is installed, takes the full path on cfg (so cfg must
  // hold the whole resulting configuration, steering included).
  std::optional<config::ConfigError> apply_delta(const config::GatewayConfig& cfg,
                                                 const SteeringDelta& delta);

  // Local SR engine: publishes a copy of `policy` with new per-segment-list factors (config
  // order) and the lists that are down (with_factors). Never patches the running object.
  std::optional<config::ConfigError> set_path_factors(std::string_view policy,
                                                      std::span<const double> factors,
                                                      uint64_t down_mask = 0);

  // Frees retired objects whose grace period has passed. Never waits.
  void reclaim();
  // Retired objects not yet freed (tests, stats).
  size_t retired_pending() const;

  // The configuration in force WITHOUT its steering rules (settings, capacities, engine,
  // probe, policies, local SIDs): those live in the tables only, so that an Apply never
  // copies a million rules. Control thread only; valid until the next apply().
  const config::GatewayConfig& running_config() const { return running_; }
  // How many steering rules are in force (all kinds). Control thread.
  size_t steering_rule_count() const;

  struct PolicyInfo {
    uint32_t slot;
    const CompiledPolicy* policy;  // valid until the next apply/set_path_factors + reclaim
  };
  // Control thread: every installed policy in configuration order.
  std::vector<PolicyInfo> policies() const;
  std::optional<uint32_t> slot_of(std::string_view policy) const;

  struct TableStats {
    uint32_t exact_entries = 0, dst_any_entries = 0, lpm4_rules = 0, prefix6_rules = 0,
             dscp_prefix_rules = 0, qp_ranges = 0, local_sids = 0;
  };
  TableStats table_stats() const;

  // ---- worker side (hot path) ----
  const View* view() const { return view_.load(std::memory_order_acquire); }
  const CompiledPolicy* policy(uint32_t slot) const {
    return slots_[slot].load(std::memory_order_acquire);
  }
  uint32_t slot_capacity() const { return slot_capacity_; }
  rte_rcu_qsbr* qsbr() const { return qsbr_; }

 private:
  Runtime() = default;

  struct Lpm4Entry {
    uint32_t ip;  // host order, masked
    uint8_t depth;
    uint32_t slot;
  };

  // Entries of the exact table by kind, for the view's flags and table_stats().
  struct ExactCounts {
    uint32_t exact = 0, exact_dscp = 0, dst_any = 0, dst_any_dscp = 0;
    void add(const config::SteeringRule& r, int sign);
    uint32_t entries() const { return exact + dst_any; }
  };
  // One change of the exact table: old_slot kNoSlot = the key was absent, new_slot
  // kNoSlot = delete it.
  struct ExactOp {
    ExactKey key;
    uint32_t old_slot, new_slot;
  };
  // The policies of a new configuration: slots, freshly compiled objects (null = keep).
  struct PolicyPlan {
    struct Planned {
      uint32_t slot;
      std::unique_ptr<const CompiledPolicy> fresh;  // null = keep the running object
    };
    std::vector<Planned> planned;
    std::map<std::string, uint32_t, std::less<>> slot_by_name;
    std::vector<uint32_t> free_after;
    // slot, previous object: filled by publish_policies().
    std::vector<std::pair<uint32_t, const CompiledPolicy*>> replaced;
  };

  std::optional<config::ConfigError> apply_locked(const config::GatewayConfig& cfg,
                                                  bool validated = false);
  std::optional<config::ConfigError> apply_delta_locked(const config::GatewayConfig& cfg,
                                                        const SteeringDelta& delta);
  // Shared steps of both paths.
  std::optional<config::ConfigError> check_common(const config::GatewayConfig& cfg) const;
  std::optional<config::ConfigError> plan_policies(const config::GatewayConfig& cfg,
                                                   const CompileEnv& env, PolicyPlan& plan) const;
  std::optional<config::ConfigError> build_local_sids(
      const config::GatewayConfig& cfg, std::shared_ptr<const LocalSidTable>& out) const;
  std::unique_ptr<View> make_view(const config::GatewayConfig& cfg);
  // The transitional view: `final_view` with the flags OR-ed with the running view's.
  std::unique_ptr<View> make_transitional(const View& final_view, const View& old_view);
  // Sets a view's table pointers from its owners and its exact-level flags from `counts`.
  static void bind_tables(View& v, const ExactCounts& counts);
  void publish_policies(PolicyPlan& plan);
  // Deletes then upserts; returns the error of the first insert that failed, with
  // `deleted`/`upserted` saying how far it went (for undo_exact()).
  std::optional<config::ConfigError> update_exact(const std::vector<ExactOp>& deletes,
                                                  const std::vector<ExactOp>& upserts,
                                                  size_t& deleted, size_t& upserted);
  void undo_exact(const std::vector<ExactOp>& deletes, const std::vector<ExactOp>& upserts,
                  size_t deleted, size_t upserted);
  // Puts the old view and policy objects back after a failed table update.
  void abort_publish(PolicyPlan& plan, const View* old_view, const View* trans_ptr);
  // Final view, removed policies out of their slots, retirement, control-side commit.
  void finish_publish(PolicyPlan& plan, std::unique_ptr<View> final_view, const View* old_view,
                      const View* trans_ptr, const config::GatewayConfig& cfg,
                      const CompileEnv& env);
  void retire(std::function<void()> free_fn);

  // Writer: control thread under mutex_. Readers: workers (view_, slots_, exact_, lpm4_).
  mutable std::mutex mutex_;
  rte_rcu_qsbr* qsbr_ = nullptr;
  uint64_t tsc_hz_ = 0;
  int socket_id_ = 0;
  uint32_t slot_capacity_ = 0;
  std::unique_ptr<std::atomic<const CompiledPolicy*>[]> slots_;
  std::atomic<const View*> view_{nullptr};
  std::unique_ptr<ExactTable> exact_;
  rte_lpm* lpm4_ = nullptr;

  // Control-thread-only state below.
  bool has_config_ = false;
  config::GatewayConfig running_;
  CompileEnv env_;
  uint64_t next_generation_ = 1;
  std::map<std::string, uint32_t, std::less<>> slot_by_name_;
  std::vector<uint32_t> free_slots_;  // usable now
  // The exact table itself is the record of what is installed there (looked up and
  // iterated by the control thread); these are its counts by kind.
  ExactCounts exact_counts_;
  size_t steering_rules_ = 0;              // rules in force, all kinds
  std::vector<uint32_t> slot_users_;       // steering rules per policy slot, all kinds
  std::vector<Lpm4Entry> installed_lpm4_;  // sorted by (ip, depth)
  struct Retired {
    uint64_t token;
    std::function<void()> free_fn;
  };
  std::deque<Retired> retired_;
};

}  // namespace srv6gw::policy
