// SPDX-License-Identifier: BSD-3-Clause
// The local SR engine's algorithm: per-path congestion scores from feedback events and the
// per-path factors (multiplied into the configured weights by the data plane) they lead to.
//
// Pure and single-threaded: no DPDK, no clock of its own (every call takes the time), no
// logging. The daemon's main lcore owns one Engine, feeds it the evidence it drained from the
// feedback ring, calls tick() about every interval and publishes the factors of the policies
// named in the returned decisions (Gateway::set_path_factors). Tests drive it with synthetic
// event sequences and synthetic time.
//
// Algorithm (docs/design/engine.md has the reasoning):
//   score   EWMA over intervals of the congestion evidence per interval:
//           score = (1 - alpha) * score + alpha * evidence_in_interval.
//   decrease an interval with evidence multiplies the factor by `decrease` (not below
//           `min_factor`), at most once per `decrease_gap_us`; evidence below one unit
//           since the last decrease (a fallback blame's share of a CNP) scales the step:
//           factor * decrease^evidence.
//   exclude a path whose score reaches `exclude_threshold` gets factor 0 (its traffic fails
//           over to the remaining lists, or to the backups), unless that would leave the
//           policy with no usable list: congestion never empties a policy, only an explicit
//           down does.
//   readmit an excluded path returns (at `readmit_factor`) once its score fell to
//           `readmit_threshold` (hysteresis: below the exclusion threshold) and it has been out
//           for at least `hold_down_us`.
//   recover after `hold_down_us` without evidence the factor grows by `recovery_step` every
//           `recovery_period_us` up to 1.
//   damping the exclusion/readmission hysteresis, the hold-down before any increase, the
//           decrease gap and the `min_factor` floor bound the number of changes; a path
//           congested again within its hold-down of an increase (the increase was a mistake:
//           load came back and so did congestion) doubles its own hold-down, up to
//           `max_hold_down_us`, and gets the base back once it recovered to 1. Two paths
//           trading one hot spot thus settle instead of swapping every hold-down.
//   explicit a controller's down (factor 0) or up (factor 1, score cleared) applies at once
//           and is never overridden by the algorithm.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "engine/params.hpp"
#include "net/enum_names.hpp"

namespace srv6gw::engine {

#define SRV6GW_ENGINE_REASONS(X)                                                                  \
  X(congestion, "congestion") /* multiplicative decrease */                                       \
  X(last_path_kept,                                                                               \
    "last-path-kept")     /* would have been excluded, but it is the policy's last usable list */ \
  X(excluded, "excluded") /* score past the exclusion threshold */                                \
  X(readmitted, "readmitted")       /* excluded path back after hold-down with a low score */     \
  X(recovery, "recovery")           /* additive increase after hold-down */                       \
  X(explicit_down, "explicit-down") /* controller */                                              \
  X(explicit_up, "explicit-up")     /* controller */                                              \
  X(probe_down, "probe-down")       /* path health probes lost (docs/design/probing.md) */        \
  X(probe_up, "probe-up")           /* probes answered again for the probe hold-down */

enum class Reason : uint8_t { SRV6GW_ENUM_MEMBERS(SRV6GW_ENGINE_REASONS) count_ };
inline constexpr auto kReasonNames = SRV6GW_ENUM_NAMES(SRV6GW_ENGINE_REASONS);
static_assert(kReasonNames.size() == size_t(Reason::count_));
const char* to_string(Reason r);

// One factor change, as a value: the daemon logs it, counts it and publishes the policy.
struct Decision {
  std::string policy;
  std::string segment_list;
  uint16_t path_id = 0;
  double old_factor = 1.0;
  double new_factor = 1.0;
  Reason reason = Reason::congestion;
  double score = 0.0;  // congestion score when decided
  uint64_t at_ns = 0;  // engine time of the decision
};

// The shape of the policies the engine manages (from the running configuration).
struct PathSpec {
  std::string name;  // segment-list name
  uint16_t path_id = 0;
  uint32_t weight = 1;  // configured; 0 = never usable
  bool backup = false;
};
struct PolicySpec {
  std::string name;
  std::vector<PathSpec> paths;  // configuration order (= factor order)
};

struct PathView {
  std::string policy, segment_list;
  uint16_t path_id = 0;
  double factor = 1.0, score = 0.0;
  bool excluded = false, admin_down = false;
  bool probe_down = false;      // path health probes say it is broken
  uint64_t evidence_total = 0;  // events attributed (rounded), for stats
};

struct EngineCounters {
  uint64_t reports = 0;       // evidence reports accepted
  uint64_t unknown_path = 0;  // evidence for a path id no policy has
  uint64_t ticks = 0;         // intervals closed
  uint64_t decisions[size_t(Reason::count_)] = {};
  uint64_t probe_last_path_kept = 0;  // probe downs that left the policy's last list in service
  // While the fabric port was unusable (set_fabric_usable): evidence reports discarded and
  // probe verdicts held until it was usable again; periods it was unusable.
  uint64_t evidence_fabric_unusable = 0;
  uint64_t probe_held_fabric_unusable = 0;
  uint64_t fabric_unusable_periods = 0;
};

class Engine {
 public:
  explicit Engine(const Params& p = {});

  const Params& params() const { return params_; }
  // New parameters apply from the next interval; path state is kept.
  void set_params(const Params& p) { params_ = p; }

  // Installs the managed policies (on start and after every configuration change). Path
  // state (factor, score, exclusion, admin state) follows the path id; new paths start at
  // factor 1. Returns nothing: reshaping alone changes no factor.
  void set_policies(const std::vector<PolicySpec>& policies);

  // Congestion evidence for our path `path_id` (1 for a reflected CNP, a share for a
  // fallback blame). Accumulated into the current interval. False when the id is unknown.
  bool report(uint16_t path_id, double amount);

  // Closes the intervals that ended by `now_ns` and appends the resulting decisions.
  void tick(uint64_t now_ns, std::vector<Decision>& out);

  // Controller: marks a path down (factor 0, at once) or up (factor 1, score cleared).
  // Appends the decision (none when nothing changed); false when the id is unknown.
  bool set_admin(uint16_t path_id, bool up, uint64_t now_ns, std::vector<Decision>& out);

  // Path health probes (docs/design/probing.md): down takes the path out at once (factor 0, like an
  // explicit down), except the policy's last usable list (no other primary or backup), which
  // stays in service until another list is back; up returns it at factor 1 with its
  // congestion state cleared, unless the controller holds it down. Appends the decisions
  // (none when nothing changed); false when the id is unknown.
  bool set_probe(uint16_t path_id, bool up, uint64_t now_ns, std::vector<Decision>& out);

  // The fabric port is unusable (a pause storm holds its egress, docs/design/lossless.md) or
  // usable again. Every path leaves by that port, so what is seen while it lasts blames no
  // path: congestion evidence is discarded, intervals close without decisions (factors stay
  // as they are) and probe verdicts are held, the latest per path, and applied when the port
  // is usable again (those decisions are appended then). Without this, a storm of a few
  // hundred ms would take every path out for lost probes and collapse each policy onto its
  // last list, for a problem no path change can fix.
  void set_fabric_usable(bool usable, uint64_t now_ns, std::vector<Decision>& out);
  bool fabric_usable() const { return fabric_usable_; }

  // Factors of one policy in configuration order (for Gateway::set_path_factors); empty when
  // the policy is unknown.
  std::vector<double> factors(const std::string& policy) const;
  // The lists of one policy that are out because they are down (the controller's down, or
  // probes lost), not de-weighted or excluded for congestion: bit i = list i in configuration
  // order (policies have at most 64). Balanced placement moves their flows at once.
  uint64_t down_mask(const std::string& policy) const;

  std::vector<PathView> paths() const;
  const EngineCounters& counters() const { return counters_; }

 private:
  struct PathState {
    uint16_t path_id = 0;
    std::string name;
    uint32_t weight = 1;
    bool backup = false;
    double factor = 1.0;
    double score = 0.0;
    double evidence = 0.0;          // current interval
    double pending_evidence = 0.0;  // since the last decrease (sizes the next one)
    double evidence_total = 0.0;
    bool excluded = false;
    bool admin_down = false;
    bool probe_down = false;
    bool ever_congested = false;
    uint64_t last_congestion_ns = 0;
    uint64_t last_decrease_ns = 0;
    uint64_t last_increase_ns = 0;
    uint64_t excluded_since_ns = 0;
    uint64_t hold_down_ns = 0;  // current (backed-off) hold-down; 0 = the base
  };
  struct PolicyState {
    std::string name;
    std::vector<PathState> paths;
  };

  void close_interval(uint64_t at_ns, uint64_t quiet_intervals, std::vector<Decision>& out);
  void change(PolicyState& pol, PathState& path, double factor, Reason r, uint64_t now,
              std::vector<Decision>& out);
  static bool usable(const PathState& p) {
    return p.weight > 0 && p.factor > 0 && !p.admin_down && !p.probe_down;
  }

  Params params_;
  std::vector<PolicyState> policies_;
  struct Where {
    uint32_t policy, path;
  };
  std::unordered_map<uint16_t, Where> by_id_;
  bool started_ = false;
  uint64_t interval_start_ns_ = 0;
  bool fabric_usable_ = true;
  std::vector<std::pair<uint16_t, bool>> held_probes_;  // (path id, up) while unusable
  EngineCounters counters_;
};

}  // namespace srv6gw::engine
