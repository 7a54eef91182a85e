// SPDX-License-Identifier: BSD-3-Clause
// Gateway: owns the RCU QSBR variable, the published state (policy::Runtime) and the
// per-worker contexts. Control side only.
#include "dataplane/control/gateway.hpp"

#include <rte_cycles.h>
#include <rte_errno.h>
#include <rte_malloc.h>
#include <rte_mbuf.h>
#include <rte_rcu_qsbr.h>
#include <rte_ring.h>
#include <rte_ring_elem.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cmath>
#include <mutex>
#include <span>
#include <string>

#include "dataplane/worker_context.hpp"
#include "policy/runtime.hpp"
#include "srv6/encap.hpp"

namespace srv6gw::dataplane {

namespace {

// A CE seen toward our host is reflected into the CNPs it sends back within this time. An
// RNIC answers within microseconds, but it rate-limits CNPs per QP, and the CNP's encap may
// run long after the CE's decap when the worker shares its core (measured: with 10 ms, half
// the CNPs went unreflected on a machine at load ~20). Every newer CE on the pair replaces
// the entry, so a long window only keeps the most recent congested path named, it never
// names an old one over a newer one; a CNP is only ever sent in answer to some CE.
constexpr double kReflectWindowSeconds = 50e-3;
// A recent-path epoch lasts about this long (rounded to a power of two of TSC cycles); the
// fallback blame looks at one to two epochs of history. Long enough for a host that answers
// CE a few milliseconds late, short enough that a flow's lists of a second ago do not count.
constexpr double kRecentEpochSeconds = 5e-3;

class GatewayImpl final : public Gateway {
 public:
  ~GatewayImpl() override {
    // The Runtime's tables hold RCU defer queues on qsbr_: free them first.
    runtime_.reset();
    workers_.clear();
    rte_ring_free(feedback_ring_);
    // Probes nobody sent: their mbufs go back to the pool before the pool is freed.
    for (rte_ring* ring : probe_tx_rings_) {
      void* m = nullptr;
      while (rte_ring_dequeue(ring, &m) == 0) rte_pktmbuf_free(static_cast<rte_mbuf*>(m));
      rte_ring_free(ring);
    }
    rte_ring_free(probe_reply_ring_);
    rte_free(qsbr_);
  }

  bool init(const config::GatewayConfig& cfg, std::span<const RailEnv> rails,
            rte_mempool* header_pool, config::ConfigError& error) {
    unsigned n_workers = 0;
    for (const RailEnv& r : rails) n_workers += r.workers;
    const size_t size = rte_rcu_qsbr_get_memsize(n_workers);
    qsbr_ = static_cast<rte_rcu_qsbr*>(rte_zmalloc("srv6gw_qsbr", size, RTE_CACHE_LINE_SIZE));
    if (!qsbr_ || rte_rcu_qsbr_init(qsbr_, n_workers) != 0) {
      error = {"/srv6gw:gateway/ports/queues", "cannot allocate the RCU QSBR variable"};
      return false;
    }
    for (unsigned i = 0; i < n_workers; ++i) rte_rcu_qsbr_thread_register(qsbr_, i);
    runtime_ = policy::Runtime::create(cfg, qsbr_, rte_get_tsc_hz(), SOCKET_ID_ANY, error);
    if (!runtime_) return false;
    probe_classes_ = config::probe_classes(cfg);
    static std::atomic<unsigned> ring_serial{0};
    const std::string ring_name = "srv6gw_fb" + std::to_string(ring_serial.fetch_add(1));
    feedback_ring_ = rte_ring_create_elem(ring_name.c_str(), sizeof(FeedbackEvent),
                                          kFeedbackRingSize, SOCKET_ID_ANY, RING_F_SC_DEQ);
    if (!feedback_ring_) {
      error = {"/srv6gw:gateway",
               std::string("cannot create the engine feedback ring: ") + rte_strerror(rte_errno)};
      return false;
    }
    const std::string serial = std::to_string(ring_serial.fetch_add(1));
    // One probe TX ring per rail: a rail's probes and reflected replies leave by its own
    // fabric port (its first worker drains the ring).
    bool rings_made = true;
    for (size_t r = 0; r < rails.size() && rings_made; ++r) {
      rte_ring* ring = rte_ring_create(("srv6gw_ptx" + serial + "_" + std::to_string(r)).c_str(),
                                       kProbeTxRingSize, SOCKET_ID_ANY, RING_F_SC_DEQ);
      if (ring) probe_tx_rings_.push_back(ring);
      rings_made = ring != nullptr;
    }
    probe_reply_ring_ = rte_ring_create_elem(("srv6gw_prx" + serial).c_str(), sizeof(ProbeReply),
                                             kProbeReplyRingSize, SOCKET_ID_ANY, RING_F_SC_DEQ);
    if (!rings_made || !probe_reply_ring_) {
      error = {"/srv6gw:gateway",
               std::string("cannot create the probe rings: ") + rte_strerror(rte_errno)};
      return false;
    }
    const double hz = double(rte_get_tsc_hz());
    reflect_ = std::make_unique<ReflectTable>();
    reflect_->max_age = uint16_t(
        std::clamp(hz * kReflectWindowSeconds / double(1u << kReflectTimeShift), 1.0, 65535.0));
    reflect_->enabled.store(cfg.engine.reflect, std::memory_order_relaxed);
    recent_epoch_shift_ =
        unsigned(std::clamp(std::lround(std::log2(hz * kRecentEpochSeconds)), 10L, 40L));
    const std::vector<config::Rail> cfg_rails = config::effective_rails(cfg);
    learned_host_macs_ = std::make_unique<LearnedMac[]>(rails.size());
    for (unsigned i = 0, rail = 0, first_of_rail = 0; i < n_workers; ++i) {
      while (i >= first_of_rail + rails[rail].workers) first_of_rail += rails[rail++].workers;
      const PortEnv& env = rails[rail].ports;
      const net::Ipv6Addr source = config::rail_source(cfg, cfg_rails[rail]);
      auto w = std::make_unique<WorkerContext>(runtime_->slot_capacity());
      w->rail = uint16_t(rail);
      w->rail_bit = uint64_t(1) << rail;  // rails < config::kMaxRails = 64
      w->rail_source_override = !(source == cfg.source);
      w->rail_source = source;
      w->runtime = runtime_.get();
      w->qsbr = qsbr_;
      w->index = i;
      w->header_pool = header_pool;
      w->multiseg_tx = env.fabric_multiseg_tx;
      w->host_port_mac = env.host_port_mac;
      w->fabric_port_mac = env.fabric_port_mac;
      w->learned_host_mac = &learned_host_macs_[rail];
      w->feedback_ring = feedback_ring_;
      w->reflect = reflect_.get();
      w->recent_epoch_shift = recent_epoch_shift_;
      w->probe_tx = probe_tx_rings_[rail];
      w->probe_tx_drain = i == first_of_rail;
      w->probe_replies = probe_reply_ring_;
      w->probe_hop_limit.store(cfg.hop_limit, std::memory_order_relaxed);
      w->path_id_in_source.store(cfg.engine.path_id_in_source, std::memory_order_relaxed);
      w->source_entropy_mask.store(srv6::source_entropy_mask(cfg.engine.source_entropy_bits),
                                   std::memory_order_relaxed);
      workers_.push_back(std::move(w));
    }
    layouts_.resize(runtime_->slot_capacity());
    baselines_.resize(runtime_->slot_capacity());
    refresh_layouts();
    return true;
  }

  std::optional<config::ConfigError> apply(const config::GatewayConfig& cfg) override {
    return publish(cfg, runtime_->apply(cfg));
  }

  std::optional<config::ConfigError> apply_validated(const config::GatewayConfig& cfg) override {
    return publish(cfg, runtime_->apply_validated(cfg));
  }

  std::optional<config::ConfigError> apply_delta(const config::GatewayConfig& cfg,
                                                 const policy::SteeringDelta& delta) override {
    return publish(cfg, runtime_->apply_delta(cfg, delta));
  }

  // What follows a Runtime apply: engine reflection flags and per-path stats layouts.
  std::optional<config::ConfigError> publish(const config::GatewayConfig& cfg,
                                             std::optional<config::ConfigError> e) {
    if (!e) {
      // O(steering rules) only when a probed policy has no probe-dscp (docs/design/probing.md).
      probe_classes_ = config::probe_classes(cfg);
      reflect_->enabled.store(cfg.engine.reflect, std::memory_order_relaxed);
      for (auto& w : workers_) {
        w->probe_hop_limit.store(cfg.hop_limit, std::memory_order_relaxed);
        w->path_id_in_source.store(cfg.engine.path_id_in_source, std::memory_order_relaxed);
        w->source_entropy_mask.store(srv6::source_entropy_mask(cfg.engine.source_entropy_bits),
                                     std::memory_order_relaxed);
      }
      std::lock_guard lock(stats_mutex_);
      refresh_layouts();
    }
    return e;
  }

  std::optional<config::ConfigError> set_path_factors(const std::string& policy,
                                                      const std::vector<double>& factors,
                                                      uint64_t down_mask = 0) override {
    return runtime_->set_path_factors(policy, factors, down_mask);
  }

  void reclaim() override { runtime_->reclaim(); }
  rte_rcu_qsbr* qsbr() override { return qsbr_; }
  unsigned worker_count() const override { return unsigned(workers_.size()); }
  WorkerContext* worker(unsigned index) override {
    return index < workers_.size() ? workers_[index].get() : nullptr;
  }
  const WorkerCounters& worker_counters(unsigned index) const override {
    return workers_.at(index)->counters;
  }
  unsigned worker_rail(unsigned index) const override { return workers_[index]->rail; }
  const config::GatewayConfig& running_config() const override {
    return runtime_->running_config();
  }
  const std::vector<config::ProbeClass>& probe_classes() const override { return probe_classes_; }
  const policy::Runtime& runtime() const override { return *runtime_; }

  unsigned drain_feedback(FeedbackEvent* out, unsigned max) override {
    return rte_ring_sc_dequeue_burst_elem(feedback_ring_, out, sizeof(FeedbackEvent), max, nullptr);
  }

  unsigned send_probes(uint16_t rail, rte_mbuf* const* pkts, unsigned n) override {
    if (rail >= probe_tx_rings_.size()) return 0;
    return rte_ring_mp_enqueue_burst(probe_tx_rings_[rail], reinterpret_cast<void* const*>(pkts), n,
                                     nullptr);
  }

  unsigned drain_probe_replies(ProbeReply* out, unsigned max) override {
    return rte_ring_sc_dequeue_burst_elem(probe_reply_ring_, out, sizeof(ProbeReply), max, nullptr);
  }

  void recent_paths(const net::IpAddr& local, const net::IpAddr& remote,
                    std::vector<RecentUse>& uses) const override {
    const uint32_t key = pair_hash(local, remote);
    const uint64_t tsc = rte_rdtsc();
    for (const auto& w : workers_) {
      const RecentPathEntry& e = w->recent[key & (kRecentEntries - 1)];
      const uint32_t slot = e.slot.load(std::memory_order_relaxed);
      if (slot >= runtime_->slot_capacity()) continue;
      const policy::CompiledPolicy* p = runtime_->policy(slot);
      if (!p) continue;
      // A test's fixed clock stands for the worker's time.
      const uint64_t now = w->fixed_tsc ? w->fixed_tsc : tsc;
      recent_read(e, key, uint32_t(now >> recent_epoch_shift_), [&](uint8_t idx, uint32_t n) {
        if (idx < p->paths.size()) uses.push_back(RecentUse{p->paths[idx].path_id, n});
      });
    }
  }

  std::vector<PathStats> path_stats() const override {
    std::lock_guard lock(stats_mutex_);
    std::vector<PathStats> out;
    const uint64_t tsc = rte_rdtsc();
    for (const policy::Runtime::PolicyInfo& pi : runtime_->policies()) {
      const policy::CompiledPolicy& p = *pi.policy;
      std::array<uint64_t, policy::kMaxPaths> active{};
      if (p.mode == config::SelectionMode::balanced) count_active_flows(p, tsc, active);
      for (size_t i = 0; i < p.paths.size(); ++i) {
        const policy::CompiledPath& path = p.paths[i];
        PathStats st;
        st.policy = p.name;
        st.segment_list = path.name;
        st.path_id = path.path_id;
        st.weight_configured = path.weight;
        st.factor = path.factor();
        const PathCounter sum = summed(pi.slot, i);
        const PathCounter& base = baselines_[pi.slot][i];
        st.packets = sum.packets - base.packets;
        st.bytes = sum.bytes - base.bytes;
        if (p.mode == config::SelectionMode::balanced) {
          st.active_flows = active[i];
          st.load_group = path.load_group;
        }
        out.push_back(std::move(st));
      }
    }
    return out;
  }

 private:
  // Flows of balanced policy `p` active on each of its paths, over the workers' flow tables
  // (read racily: a count may be off by the flows placed or released meanwhile).
  void count_active_flows(const policy::CompiledPolicy& p, uint64_t tsc,
                          std::array<uint64_t, policy::kMaxPaths>& active) const {
    const uint32_t lineage_tag = (p.lineage & 0xFFFFFFu) << 8;
    for (const auto& w : workers_) {
      const policy::SelectorState& st = w->selector;
      const uint64_t now = w->fixed_tsc ? w->fixed_tsc : tsc;
      const uint32_t n = std::min<uint32_t>(st.n_occupied, policy::kBalancedEntries);
      for (uint32_t k = 0; k < n; ++k) {
        const uint32_t index = st.occupied[k];
        const policy::BalancedEntry& e =
            st.balanced[index / policy::kBalancedWays].way[index % policy::kBalancedWays];
        if ((e.tag & ~0xFFu) != lineage_tag || (e.tag & 0xFF) >= policy::kMaxPaths) continue;
        if (((now - e.stamp) & policy::kStampTscMask) > p.idle_gap_tsc) continue;
        ++active[e.tag & 0xFF];
      }
    }
  }

  PathCounter summed(uint32_t slot, size_t path) const {
    PathCounter sum;
    for (const auto& w : workers_) {
      const PathCounter& c = w->path_counters[size_t(slot) * policy::kMaxPaths + path];
      sum.packets += c.packets;
      sum.bytes += c.bytes;
    }
    return sum;
  }

  // Path counters are indexed by (slot, path index). When a slot's policy name or its
  // segment-list names change (slot reused, lists reordered), the counts so far belong to
  // the old layout: remember them as the baseline so the new layout starts from zero.
  void refresh_layouts() {
    for (const policy::Runtime::PolicyInfo& pi : runtime_->policies()) {
      SlotLayout layout;
      layout.policy = pi.policy->name;
      for (const policy::CompiledPath& path : pi.policy->paths)
        layout.paths.push_back({path.name, path.path_id});
      if (layout == layouts_[pi.slot]) continue;
      for (size_t i = 0; i < policy::kMaxPaths; ++i) baselines_[pi.slot][i] = summed(pi.slot, i);
      layouts_[pi.slot] = std::move(layout);
    }
  }

  // What the per-slot path counters mean. A new name or path id for a slot's path restarts
  // its counters from zero (a list renumbered by a push is another path on the wire).
  struct PathIdentity {
    std::string name;
    uint16_t path_id = 0;
    friend bool operator==(const PathIdentity&, const PathIdentity&) = default;
  };
  struct SlotLayout {
    std::string policy;
    std::vector<PathIdentity> paths;
    friend bool operator==(const SlotLayout&, const SlotLayout&) = default;
  };

  rte_rcu_qsbr* qsbr_ = nullptr;
  std::unique_ptr<policy::Runtime> runtime_;
  std::vector<std::unique_ptr<WorkerContext>> workers_;
  std::unique_ptr<LearnedMac[]> learned_host_macs_;  // one per rail
  rte_ring* feedback_ring_ = nullptr;  // workers enqueue (MP), the engine dequeues (SC)
  // Per rail: the prober and the rail's workers enqueue (MP), its first worker dequeues.
  std::vector<rte_ring*> probe_tx_rings_;
  rte_ring* probe_reply_ring_ = nullptr;   // workers enqueue (MP), the prober dequeues (SC)
  std::unique_ptr<ReflectTable> reflect_;  // shared by the workers (see feedback.hpp)
  unsigned recent_epoch_shift_ = 24;
  mutable std::mutex stats_mutex_;  // layouts_ and baselines_ (control threads)
  std::vector<SlotLayout> layouts_;
  std::vector<std::array<PathCounter, policy::kMaxPaths>> baselines_;
  std::vector<config::ProbeClass> probe_classes_;  // control thread (apply, the prober)
};

}  // namespace

std::unique_ptr<Gateway> Gateway::create(const config::GatewayConfig& cfg, unsigned n_workers,
                                         const PortEnv& env, rte_mempool* header_pool,
                                         config::ConfigError& error) {
  const RailEnv rail{env, n_workers};
  return create(cfg, std::span<const RailEnv>(&rail, 1), header_pool, error);
}

std::unique_ptr<Gateway> Gateway::create(const config::GatewayConfig& cfg,
                                         std::span<const RailEnv> rails, rte_mempool* header_pool,
                                         config::ConfigError& error) {
  unsigned n_workers = 0;
  for (const RailEnv& r : rails) {
    if (r.workers == 0) {
      error = {"/srv6gw:gateway/ports/queues", "every rail needs at least one worker"};
      return nullptr;
    }
    n_workers += r.workers;
  }
  if (n_workers == 0 || n_workers > RTE_MAX_LCORE) {
    error = {"/srv6gw:gateway/ports/queues", "need between 1 and RTE_MAX_LCORE workers"};
    return nullptr;
  }
  if (rails.size() != config::effective_rails(cfg).size()) {
    error = {"/srv6gw:gateway/rails", "the configuration has " +
                                          std::to_string(config::effective_rails(cfg).size()) +
                                          " rail(s), the ports " + std::to_string(rails.size())};
    return nullptr;
  }
  auto gw = std::make_unique<GatewayImpl>();
  if (!gw->init(cfg, rails, header_pool, error)) return nullptr;
  return gw;
}

}  // namespace srv6gw::dataplane
