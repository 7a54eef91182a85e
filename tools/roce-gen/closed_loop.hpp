// SPDX-License-Identifier: BSD-3-Clause
// Closed-loop RoCEv2 sender for collectives: one rank of an AlltoAll or a ring AllReduce,
// as an RNIC would run it, without sockets (the caller moves frames and passes the time):
// - per peer `qps_per_peer` RC-like queue pairs; a transfer to a peer is one message per QP,
//   N packets with consecutive PSNs (WRITE first / middle / last, or only), the AckReq bit on
//   the last packet and every `ack_every` packets;
// - each QP paced by its own DCQCN reaction point (dcqcn.hpp), cut by the CNPs that name it,
//   and the sum of all QPs by the NIC's line rate;
// - at most `window_packets` unacknowledged packets per QP; go-back-N from the PSN a NAK
//   (PSN sequence error) names, or from the oldest unacknowledged PSN after `rto_ns` without
//   progress, so loss costs time as it does on an RNIC;
// - a collective is a list of phases (AlltoAll: one, every peer at once; ring AllReduce:
//   2 (N-1) steps to the next rank); the caller runs a barrier between phases.
#pragma once

#include <cstdint>
#include <deque>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "net/addr.hpp"
#include "roce-gen/dcqcn.hpp"
#include "roce-gen/roce_gen.hpp"

namespace srv6gw::rocegen {

enum class Collective : uint8_t { alltoall, allreduce };

struct ClosedLoopSpec {
  Collective collective = Collective::alltoall;
  std::vector<net::Ipv4Addr> ranks;  // every rank's address, this one included
  uint32_t rank = 0;                 // index of this sender in `ranks`
  uint64_t bytes = 1 << 20;          // collective size per rank (AlltoAll: bytes/N to each peer;
                                     // AllReduce: chunks of bytes/N per ring step)
  uint32_t iterations = 1;
  uint32_t qps_per_peer = 1;
  uint32_t frame_len = 1024;  // data frame length (headers + payload), as --size
  net::MacAddr src_mac;
  net::MacAddr dst_mac;  // the gateway's host port
  uint8_t dscp = 26;
  uint8_t ecn = 0b10;
  uint32_t dest_qp_base = 0x100;  // QP i toward a peer: base + peer * qps_per_peer + i
  uint32_t window_packets = 64;
  uint32_t ack_every = 16;
  uint64_t rto_ns = 100'000'000;
  // How far pacing may fall behind and catch up in a burst: a sender woken late (a loaded
  // machine's scheduler) sends what was due since, up to this much, instead of losing it.
  uint64_t pacing_slack_ns = 5'000'000;
  bool dcqcn = true;  // false: every QP at line rate / (active QPs), no reaction
  DcqcnParams dcqcn_params;
  uint64_t seed = 1;
};

struct ClosedLoopCounters {
  uint64_t data_packets = 0;  // data frames sent, retransmissions included
  uint64_t data_bytes = 0;
  uint64_t retransmitted = 0;  // data frames sent again (PSN below the highest sent)
  uint64_t acks = 0;           // ACK frames received for our QPs
  uint64_t naks = 0;           // NAK (PSN sequence error) frames received
  uint64_t nak_go_backs = 0;   // NAKs that moved the send point back
  uint64_t timeouts = 0;       // go-back-N after rto without progress
  uint64_t cnps = 0;           // CNPs received for our QPs
  uint64_t rate_cuts = 0;
  uint64_t messages_done = 0;   // messages acknowledged in full
  uint64_t bytes_done = 0;      // their payload bytes
  uint64_t ignored_frames = 0;  // received frames not for us (other ranks' data, ...)
};

struct PhaseTiming {
  uint64_t start_ns = 0;
  uint64_t done_ns = 0;
};

class ClosedLoopSender {
 public:
  // nullopt with `error` naming the offending field.
  static std::optional<ClosedLoopSender> create(const ClosedLoopSpec& spec, std::string& error);

  uint32_t phases_per_iteration() const { return uint32_t(phase_plan_.size()); }
  uint32_t total_phases() const { return phases_per_iteration() * spec_.iterations; }
  // Index of the current phase (== total_phases() when all are done).
  uint32_t phase() const { return phase_; }
  bool started() const { return started_; }
  // Starts phase phase() at `now_ns`: queues its messages.
  void start_phase(uint64_t now_ns);
  // Every message of the started phase acknowledged (records the phase's done time once).
  bool phase_done(uint64_t now_ns);
  // Moves to the next phase after phase_done (the caller's barrier in between).
  void next_phase() {
    ++phase_;
    started_ = false;
  }
  bool finished() const { return phase_ >= total_phases(); }

  // Builds the next data frame that may leave at `now_ns` into `out`; 0 when none may.
  size_t next_frame(uint64_t now_ns, std::span<uint8_t> out);
  // A received frame: ACK, NAK and CNP for our QPs are acted on; returns whether it was.
  bool on_frame(std::span<const uint8_t> frame, uint64_t now_ns);
  // Timeouts and DCQCN timers due by `now_ns`.
  void poll(uint64_t now_ns);
  // When next_frame or poll may have something to do (for sleeping).
  uint64_t next_event_ns(uint64_t now_ns) const;

  const ClosedLoopCounters& counters() const { return counters_; }
  const std::vector<PhaseTiming>& timings() const { return timings_; }
  const ClosedLoopSpec& spec() const { return spec_; }
  // Per QP: current DCQCN rate and counters (reports).
  struct QpView {
    uint32_t peer;
    uint32_t dest_qp;
    double rate_bps;
    double alpha;
    uint64_t cnps;
  };
  std::vector<QpView> qp_views() const;

 private:
  struct Message {
    uint64_t first_psn = 0;  // virtual (64-bit) PSNs; the wire carries the low 24 bits
    uint32_t packets = 0;
    uint64_t bytes = 0;
    uint64_t va = 0;
  };
  struct Qp {
    FlowAddress flow;
    uint32_t peer = 0;
    uint32_t dest_qp = 0;
    std::optional<DcqcnReactionPoint> rp;
    uint64_t next_send_ns = 0;
    uint64_t una = 0;  // oldest unacknowledged
    uint64_t nxt = 0;  // next to send
    uint64_t end = 0;  // one past the last queued
    uint64_t max_sent = 0;
    uint64_t last_progress_ns = 0;
    uint64_t next_va = 0;
    std::deque<Message> messages;
  };
  ClosedLoopSender() = default;
  uint64_t virtual_psn(const Qp& q, uint32_t wire) const;
  void acknowledge(Qp& q, uint64_t up_to_excl);
  double qp_rate(const Qp& q) const;

  ClosedLoopSpec spec_;
  std::vector<Qp> qps_;
  // Per phase of an iteration: (peer rank, bytes) transfers.
  std::vector<std::vector<std::pair<uint32_t, uint64_t>>> phase_plan_;
  uint32_t phase_ = 0;
  bool started_ = false;
  uint32_t payload_per_packet_ = 0;
  uint64_t nic_next_ns_ = 0;
  size_t rr_ = 0;
  uint32_t active_qps_ = 0;
  ClosedLoopCounters counters_;
  std::vector<PhaseTiming> timings_;
};

}  // namespace srv6gw::rocegen
