// SPDX-License-Identifier: BSD-3-Clause
// pktgen-style transmission of a roce-gen workload on a DPDK port (and, run_closed_loop, one
// rank of a closed-loop collective): frames are built straight
// into mbufs (no copy, no per-frame allocation beyond the mbuf itself) and sent in bursts at
// a target rate in packets or Mbit/s, for a duration or a frame count. The EAL must already
// be initialised (roce-gen does it when its arguments contain "--").
#pragma once

#include <cstdint>
#include <string>

#include "roce-gen/closed_loop.hpp"
#include "roce-gen/roce_gen.hpp"

namespace srv6gw::rocegen {

struct TxOptions {
  std::string port;       // DPDK port name (e.g. net_af_packet0) or numeric id
  double rate_pps = 0;    // 0 with rate_mbps 0: as fast as the port takes them
  double rate_mbps = 0;   // Ethernet frame bits (no FCS, preamble or gap), Mbit/s
  double duration_s = 0;  // 0: until the workload's count is sent
  // Seconds to keep the port open (RX drained and counted) after the last frame: a memif
  // peer loses the frames still in rings this process owns when it exits.
  double linger_s = 0;
  // Seconds to wait for the port's link before the first frame (0: do not wait). A net_memif
  // client whose handshake never completes sends nothing: say so instead of retrying forever.
  double wait_link_s = 0;
  uint16_t burst = 32;    // frames per rte_eth_tx_burst
  uint32_t mbufs = 4095;  // pool size
  uint16_t tx_descriptors = 1024;
};

struct TxReport {
  uint64_t sent_packets = 0;
  uint64_t sent_bytes = 0;
  uint64_t tx_retries = 0;      // bursts the port took only partly (the rest was retried)
  uint64_t unsent_at_stop = 0;  // built but not taken when time was up (freed)
  uint64_t rx_packets = 0;      // drained from the port's RX queue (e.g. CNPs coming back)
  double elapsed_s = 0;
  double achieved_pps = 0;
  double achieved_mbps = 0;
};

// Configures the port (1 RX, 1 TX queue), sends, stops the port. Returns false with `error`
// on a setup failure (unknown port, pool, queue setup); a stop request (SIGINT/SIGTERM via
// request_tx_stop) ends the run early with a normal report.
bool run_dpdk_tx(Generator& generator, const TxOptions& options, TxReport& report,
                 std::string& error);

// Async-signal-safe: makes run_dpdk_tx finish after the current burst.
void request_tx_stop();

struct ClosedLoopOptions {
  std::string port;
  std::string barrier_dir;  // shared by all ranks: DIR/rank<r> holds the phases r finished
  uint16_t burst = 32;
  uint32_t mbufs = 4095;
  double timeout_s = 600;  // give up (report, exit non-zero) after this long
};

struct ClosedLoopReport {
  uint64_t rx_packets = 0;
  double elapsed_s = 0;
  bool completed = false;  // every phase done (false: stopped or timed out)
};

// Runs the sender's collective on a DPDK port: paces data frames, feeds received frames
// (ACK, NAK, CNP) back, and between phases waits at a barrier of files in `barrier_dir`
// (every rank runs on the same machine: the barrier stands for the collective's own
// synchronisation, out of band). Times are CLOCK_MONOTONIC ns.
bool run_closed_loop(ClosedLoopSender& sender, const ClosedLoopOptions& options,
                     ClosedLoopReport& report, std::string& error);

}  // namespace srv6gw::rocegen
