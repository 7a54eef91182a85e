// SPDX-License-Identifier: BSD-3-Clause
// Per-path health from probes (docs/design/probing.md): sequence numbers out, replies back, RTT
// samples, losses, and the up/down state machine that drives the engine's probe down/up.
//
// Pure and single-threaded: no DPDK, no clock of its own (every call takes the time), no
// logging. The daemon's main lcore owns one ProbeMonitor: it asks next_seq() before sending a
// probe on a path, feeds the replies the workers hand back (on_reply), calls tick() each loop
// and applies the returned transitions to the engine.
//
// State machine per path (starts up: a configured path is presumed to work):
//   up   -> down  when `loss_threshold` consecutive probes (in sequence order, newer than the
//                 newest answered one) are lost: not answered within `timeout_us`.
//   down -> up    when probes have been answered, with none lost, for `hold_down_us`.
// A reply that arrives after its probe was declared lost is counted late and changes nothing.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "engine/probe_params.hpp"

namespace srv6gw::engine {

enum class ProbeState : uint8_t { up, down };
const char* to_string(ProbeState s);

struct ProbePathSpec {
  std::string policy;
  std::string segment_list;
  uint16_t path_id = 0;
  // Outer traffic class the probes go out with (DSCP << 2 | ECN) and where it came from
  // ("configured", "steering", "none"; config::ProbeClassSource), for the statistics.
  uint8_t traffic_class = 0;
  std::string traffic_class_source = "none";
};

struct ProbeTransition {
  std::string policy, segment_list;
  uint16_t path_id = 0;
  ProbeState from = ProbeState::up, to = ProbeState::up;
  uint32_t consecutive_lost = 0;  // at the transition
  uint64_t at_ns = 0;
};

// RTT over the last kRttWindow answered probes; loss over the last kLossWindow resolved ones.
inline constexpr unsigned kRttWindow = 256;
inline constexpr unsigned kLossWindow = 256;

struct ProbePathView {
  std::string policy, segment_list;
  uint16_t path_id = 0;
  ProbeState state = ProbeState::up;
  uint64_t last_change_ns = 0;  // 0 = never changed
  uint64_t sent = 0, answered = 0, lost = 0, late = 0;
  uint32_t consecutive_lost = 0;
  double loss_ratio = 0.0;   // over the last kLossWindow resolved probes
  uint32_t rtt_samples = 0;  // in the window
  uint64_t rtt_min_ns = 0, rtt_avg_ns = 0, rtt_p99_ns = 0, rtt_last_ns = 0;
  uint8_t traffic_class = 0;  // ProbePathSpec's
  std::string traffic_class_source = "none";
  // The rail that probes the path, set by the daemon's prober when the configuration names
  // rails (a path probed by two rails is two views); "" for a single pair.
  std::string rail;
};

struct ProbeMonitorCounters {
  uint64_t replies = 0;       // accepted
  uint64_t unknown_path = 0;  // reply for a path id we do not probe
  uint64_t unknown_seq = 0;   // reply for a sequence not in flight (duplicate, too old)
  uint64_t transitions_down = 0, transitions_up = 0;
};

class ProbeMonitor {
 public:
  explicit ProbeMonitor(const ProbeParams& p = {});

  const ProbeParams& params() const { return params_; }
  void set_params(const ProbeParams& p) { params_ = p; }

  // Installs the probed paths. State follows the path id; new paths start up with no history;
  // paths no longer listed are forgotten.
  void set_paths(const std::vector<ProbePathSpec>& paths);

  // Sequence number for the probe about to be sent on `path_id` at `now_ns` (recorded as in
  // flight). False when the path is not probed.
  bool next_seq(uint16_t path_id, uint64_t now_ns, uint32_t& seq);

  // A reply for (path_id, seq) with the measured round trip. False when not accepted (unknown
  // path, sequence not in flight, already answered); a reply to a probe already declared lost
  // is counted late and returns false.
  bool on_reply(uint16_t path_id, uint32_t seq, uint64_t rtt_ns, uint64_t now_ns);

  // Declares the probes whose timeout passed by `now_ns` lost and appends state transitions.
  void tick(uint64_t now_ns, std::vector<ProbeTransition>& out);

  std::vector<ProbePathView> paths() const;
  const ProbeMonitorCounters& counters() const { return counters_; }

 private:
  struct InFlight {
    uint32_t seq = 0;
    uint64_t sent_ns = 0;
    bool pending = false;
  };
  struct PathState {
    ProbePathSpec spec;
    ProbeState state = ProbeState::up;
    uint64_t last_change_ns = 0;
    uint32_t next_seq = 1;
    bool any_answered = false;
    uint32_t newest_answered = 0;
    uint32_t consecutive_lost = 0;
    uint64_t healthy_since_ns = 0;  // first answer after the last loss; 0 = none yet
    uint64_t sent = 0, answered = 0, lost = 0, late = 0;
    std::vector<InFlight> in_flight;  // kProbeOutstanding slots, by seq
    uint32_t oldest_pending = 1;      // no pending probe has a lower seq
    std::vector<uint64_t> rtt;        // ring of kRttWindow samples
    uint32_t rtt_count = 0;           // samples ever (ring index = count % window)
    uint64_t rtt_last_ns = 0;
    std::vector<uint8_t> outcome;  // ring of kLossWindow resolved probes: 1 = lost
    uint32_t outcome_count = 0;
  };

  void lose(PathState& p, uint32_t seq, uint64_t now_ns, std::vector<ProbeTransition>* out);
  void resolve(PathState& p, bool lost);
  void transition(PathState& p, ProbeState to, uint64_t now_ns, std::vector<ProbeTransition>* out);

  ProbeParams params_;
  std::vector<PathState> paths_;
  std::unordered_map<uint16_t, size_t> by_id_;
  std::vector<ProbeTransition> evicted_;  // transitions caused inside next_seq(), for tick()
  ProbeMonitorCounters counters_;
};

}  // namespace srv6gw::engine
