// SPDX-License-Identifier: BSD-3-Clause
// The frames one worker has for one TX queue, in order, and what happens when the queue
// refuses some (docs/design/lossless.md).
//
// Lossless (the default): refused frames stay, in order, at the head of the backlog and are
// offered again on the next flush. While the backlog holds `capacity` frames or more the
// worker does not poll the ingress of this direction: that RX ring fills and the ingress
// NIC's own PFC/802.3x pause pushes back on the sender. The other direction has its own
// TxQueue and keeps flowing. Frames queued while the backlog is above `ecn_threshold` leave
// with CE set when they are ECT (ECN before pause, as a switch queue marks on enqueue).
// Pause-storm watchdog: egress that takes nothing for `storm_tsc` while frames wait drops
// the backlog (reason pause_storm) and keeps dropping what it refuses until it takes a
// frame again; then lossless operation resumes. Nothing is held without bound.
//
// Lossy (lossless disabled): what the queue refuses is freed and counted tx_full.
//
// Worker-private: one object per direction per worker, touched only by that worker.
#pragma once

#include <rte_branch_prediction.h>
#include <rte_ethdev.h>
#include <rte_mbuf.h>

#include <cstdint>
#include <cstring>
#include <vector>

#include "dataplane/counters.hpp"
#include "dataplane/datapath/burst.hpp"
#include "net/ecn.hpp"
#include "worker.hpp"

namespace srv6gw::app {

class TxQueue {
 public:
  using Counters = dataplane::WorkerCounters;

  // The worker's counters of this direction.
  struct DirectionCounters {
    uint64_t* tx_packets;
    uint64_t* tx_bytes;
    uint64_t* backlog;
    uint64_t* storms;      // pause storms started on this egress
    uint64_t* storm_ends;  // ... and ended
  };

  // Allocates (before the loop, never on the hot path).
  TxQueue(uint16_t port, uint16_t queue, const LosslessParams& p, const DirectionCounters& dc)
      : port_(port),
        queue_(queue),
        lossless_(p.enabled),
        capacity_(p.enabled ? p.capacity : uint32_t(dataplane::kBurstSize)),
        ecn_threshold_(p.enabled ? p.ecn_threshold : 0),
        storm_tsc_(p.storm_tsc),
        tx_packets_(dc.tx_packets),
        tx_bytes_(dc.tx_bytes),
        backlog_(dc.backlog),
        storms_(dc.storms),
        storm_ends_(dc.storm_ends),
        // Room for the backlog bound plus the two bursts (pipeline output, then probes) that
        // may be appended after the last check of full().
        pkts_(capacity_ + 2 * dataplane::kBurstSize) {}

  uint32_t pending() const { return tail_ - head_; }
  // The ingress of this direction is not to be polled.
  bool full() const { return pending() >= capacity_; }

  // Where up to kBurstSize more frames may be written; commit(n) appends them.
  rte_mbuf** reserve() {
    if (unlikely(tail_ + dataplane::kBurstSize > pkts_.size())) {
      // Move what waits to the front: rare (once per capacity/kBurstSize bursts while held).
      const uint32_t n = pending();
      std::memmove(pkts_.data(), pkts_.data() + head_, n * sizeof(rte_mbuf*));
      head_ = 0;
      tail_ = n;
    }
    return pkts_.data() + tail_;
  }
  void commit(uint16_t n, Counters& c) {
    if (unlikely(ecn_threshold_ != 0 && pending() > ecn_threshold_)) mark_ce(tail_, n, c);
    tail_ += n;
    *backlog_ = pending();
  }

  // A full burst waits (send it now rather than coalesce more).
  bool burst_ready() const { return pending() >= dataplane::kBurstSize; }

  // Offers everything waiting to the PMD (see the top of this file for what is refused).
  // `now` is a recent TSC, for the watchdog.
  void flush(Counters& c, uint64_t now) {
    const uint32_t n = pending();
    if (n == 0) return;
    rte_mbuf** p = pkts_.data() + head_;
    uint64_t bytes = 0;
    // Read lengths before TX: after rte_eth_tx_burst the mbufs belong to the driver (net_pcap
    // frees them inside the call).
    for (uint32_t i = 0; i < n; ++i) bytes += p[i]->pkt_len;
    const uint16_t sent = rte_eth_tx_burst(port_, queue_, p, uint16_t(n));
    if (likely(sent == n)) {
      *tx_packets_ += sent;
      *tx_bytes_ += bytes;
      head_ = tail_ = 0;
      *backlog_ = 0;
      blocked_since_ = 0;
      if (unlikely(storm_)) end_storm();
      return;
    }
    for (uint32_t i = sent; i < n; ++i) bytes -= p[i]->pkt_len;
    *tx_packets_ += sent;
    *tx_bytes_ += bytes;
    head_ += sent;
    if (sent != 0) {
      // Egress moves (slower than we feed it): congestion, not a storm.
      blocked_since_ = now;
      if (unlikely(storm_)) end_storm();
    } else if (blocked_since_ == 0) {
      blocked_since_ = now;
    }
    if (!lossless_) {
      drop_pending(c, dataplane::DropReason::tx_full);
    } else if (storm_) {
      drop_pending(c, dataplane::DropReason::pause_storm);
    } else if (now - blocked_since_ > storm_tsc_) {
      storm_ = true;
      ++c.pause_storms;
      ++*storms_;
      drop_pending(c, dataplane::DropReason::pause_storm);
    }
    *backlog_ = pending();
  }

  // The worker is stopping: frees what the egress still refuses after the last offer,
  // counted held_at_stop (lossless frames lost by the stop, not by a data-plane decision).
  void discard(Counters& c) {
    drop_pending(c, dataplane::DropReason::held_at_stop);
    *backlog_ = 0;
  }

 private:
  void end_storm() {
    storm_ = false;
    ++*storm_ends_;
  }

  void drop_pending(Counters& c, dataplane::DropReason why) {
    c.drops[size_t(why)] += pending();
    for (uint32_t i = head_; i < tail_; ++i) rte_pktmbuf_free(pkts_[i]);
    head_ = tail_ = 0;
  }

  void mark_ce(uint32_t from, uint16_t n, Counters& c) {
    for (uint32_t i = from; i < from + n; ++i) {
      rte_mbuf* m = pkts_[i];
      c.ecn_ce_marked += net::mark_ce_if_ect(rte_pktmbuf_mtod(m, uint8_t*), m->data_len);
    }
  }

  const uint16_t port_;
  const uint16_t queue_;
  const bool lossless_;
  const uint32_t capacity_;
  const uint32_t ecn_threshold_;
  const uint64_t storm_tsc_;
  uint64_t* const tx_packets_;
  uint64_t* const tx_bytes_;
  uint64_t* const backlog_;
  uint64_t* const storms_;
  uint64_t* const storm_ends_;
  uint32_t head_ = 0, tail_ = 0;  // pkts_[head_, tail_) wait, oldest first
  uint64_t blocked_since_ = 0;    // TSC since which egress took nothing; 0 = not blocked
  bool storm_ = false;            // the watchdog fired and egress has not moved since
  std::vector<rte_mbuf*> pkts_;
};

}  // namespace srv6gw::app
