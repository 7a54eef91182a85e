// SPDX-License-Identifier: BSD-3-Clause
// Pacing: every frame costs 1/pps seconds, or len*8/rate bits-per-second; `next_due` is the
// TSC time the next frame may leave. Frames already due are sent in bursts of up to `burst`;
// when the next one is more than ~100 us away the thread sleeps instead of spinning, so a
// modest-rate generator does not take a whole core from the emulated fabric it feeds (the
// machines this runs on share two cores among gateways, kernel forwarding and receivers).
// A burst the port takes only partly is retried first, before new frames are built, so the
// generator never silently drops what it built; what is still unsent when time is up is
// freed and reported.
#include "dpdk_tx.hpp"

#include <rte_cycles.h>
#include <rte_errno.h>
#include <rte_ethdev.h>
#include <rte_lcore.h>
#include <rte_mbuf.h>
#include <rte_mempool.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <span>
#include <string>
#include <vector>

namespace srv6gw::rocegen {

namespace {

std::atomic<bool> g_stop{false};

constexpr uint16_t kMaxBurst = 256;
// Room for the longest frame Generator::next may build (it needs kMaxFrameLen).
constexpr uint32_t kDataRoom = RTE_PKTMBUF_HEADROOM + kMaxFrameLen;

std::string errstr(int rc) {
  return rte_strerror(rc < 0 ? -rc : rc);
}

bool resolve(const std::string& name, uint16_t& port, std::string& error) {
  if (rte_eth_dev_get_port_by_name(name.c_str(), &port) == 0) return true;
  if (!name.empty() && name.size() <= 5 &&
      std::all_of(name.begin(), name.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    const unsigned long id = std::stoul(name);
    if (id < RTE_MAX_ETHPORTS && rte_eth_dev_is_valid_port(uint16_t(id))) {
      port = uint16_t(id);
      return true;
    }
  }
  error = "--tx-port: no DPDK port '" + name + "' (" + std::to_string(rte_eth_dev_count_avail()) +
          " ports: check the --vdev/PCI arguments before '--')";
  return false;
}

bool setup_port(uint16_t port, const TxOptions& o, rte_mempool* pool, std::string& error) {
  rte_eth_dev_info info{};
  int rc = rte_eth_dev_info_get(port, &info);
  if (rc != 0) {
    error = "port info: " + errstr(rc);
    return false;
  }
  // Default MTU: transmission does not depend on it for the PMDs we use (net_af_packet sends
  // up to its frame size, the interface's MTU decides what the kernel takes).
  rte_eth_conf conf{};
  rc = rte_eth_dev_configure(port, 1, 1, &conf);
  if (rc != 0) {
    error = "rte_eth_dev_configure: " + errstr(rc);
    return false;
  }
  uint16_t rxd = 512, txd = o.tx_descriptors;
  rc = rte_eth_dev_adjust_nb_rx_tx_desc(port, &rxd, &txd);
  if (rc != 0) {
    error = "descriptor counts: " + errstr(rc);
    return false;
  }
  const int socket = std::max(0, rte_eth_dev_socket_id(port));
  rc = rte_eth_rx_queue_setup(port, 0, rxd, unsigned(socket), nullptr, pool);
  if (rc != 0) {
    error = "RX queue: " + errstr(rc);
    return false;
  }
  rc = rte_eth_tx_queue_setup(port, 0, txd, unsigned(socket), nullptr);
  if (rc != 0) {
    error = "TX queue: " + errstr(rc);
    return false;
  }
  rc = rte_eth_dev_start(port);
  if (rc != 0) {
    error = "rte_eth_dev_start: " + errstr(rc);
    return false;
  }
  rte_eth_promiscuous_enable(port);  // RX is drained and counted, whatever the destination
  return true;
}

void sleep_ns(uint64_t ns) {
  timespec ts{time_t(ns / 1000000000ull), long(ns % 1000000000ull)};
  nanosleep(&ts, nullptr);
}

bool wait_link_up(uint16_t port, double seconds) {
  const uint64_t hz = rte_get_timer_hz();
  const uint64_t until = rte_get_timer_cycles() + uint64_t(seconds * double(hz));
  for (;;) {
    rte_eth_link link{};
    if (rte_eth_link_get_nowait(port, &link) == 0 && link.link_status == RTE_ETH_LINK_UP)
      return true;
    if (rte_get_timer_cycles() > until) return false;
    sleep_ns(10'000'000);
  }
}

}  // namespace

void request_tx_stop() {
  g_stop.store(true, std::memory_order_relaxed);
}

bool run_dpdk_tx(Generator& gen, const TxOptions& o, TxReport& report, std::string& error) {
  report = TxReport{};
  if (o.burst == 0 || o.burst > kMaxBurst) {
    error = "--burst: must be 1.." + std::to_string(kMaxBurst);
    return false;
  }
  if (o.rate_pps < 0 || o.rate_mbps < 0 || (o.rate_pps > 0 && o.rate_mbps > 0)) {
    error = "give at most one of --rate-pps and --rate-mbps, positive";
    return false;
  }
  uint16_t port = 0;
  if (!resolve(o.port, port, error)) return false;
  const int socket = std::max(0, rte_eth_dev_socket_id(port));
  const uint32_t pool_size = std::max<uint32_t>(o.mbufs, 2u * o.burst + 1024u);
  rte_mempool* pool = rte_pktmbuf_pool_create("rocegen_tx", pool_size, 256, 0, kDataRoom, socket);
  if (pool == nullptr) {
    error = "mbuf pool of " + std::to_string(pool_size) + " x " + std::to_string(kDataRoom) +
            " B: " + errstr(rte_errno) + " (raise -m or lower --mbufs)";
    return false;
  }
  if (!setup_port(port, o, pool, error)) {
    rte_mempool_free(pool);
    return false;
  }

  if (o.wait_link_s > 0 && !wait_link_up(port, o.wait_link_s)) {
    char within[32];
    std::snprintf(within, sizeof within, "%.1f", o.wait_link_s);
    error = "link of " + o.port + " not up within " + within +
            " s (a net_memif peer that never completed its handshake?)";
    rte_eth_dev_stop(port);
    rte_mempool_free(pool);
    return false;
  }

  const double hz = double(rte_get_timer_hz());
  const double cycles_per_packet = o.rate_pps > 0 ? hz / o.rate_pps : 0;
  const double cycles_per_bit = o.rate_mbps > 0 ? hz / (o.rate_mbps * 1e6) : 0;
  const uint64_t start = rte_get_timer_cycles();
  const uint64_t end = o.duration_s > 0 ? start + uint64_t(o.duration_s * hz) : UINT64_MAX;
  double next_due = double(start);

  rte_mbuf* pending[kMaxBurst];
  uint32_t pending_len[kMaxBurst];
  uint16_t pending_count = 0;
  uint16_t pending_first = 0;
  rte_mbuf* rx[32];
  bool exhausted = false;
  FrameInfo info;

  while (!g_stop.load(std::memory_order_relaxed)) {
    const uint64_t now = rte_get_timer_cycles();
    if (now >= end) break;
    if (pending_count == pending_first) {
      if (exhausted) break;
      pending_count = pending_first = 0;
      // Build every frame already due, up to a burst.
      while (pending_count < o.burst && double(now) >= next_due) {
        rte_mbuf* m = rte_pktmbuf_alloc(pool);
        if (m == nullptr) break;  // all in the PMD's ring: send what we have, retry later
        const std::span<uint8_t> room(rte_pktmbuf_mtod(m, uint8_t*),
                                      rte_pktmbuf_tailroom(m) + m->data_len);
        const size_t len = gen.next(room, info);
        if (len == 0) {
          rte_pktmbuf_free(m);
          exhausted = true;
          break;
        }
        m->data_len = uint16_t(len);
        m->pkt_len = uint32_t(len);
        pending_len[pending_count] = uint32_t(len);
        pending[pending_count++] = m;
        next_due += cycles_per_packet + cycles_per_bit * double(len * 8);
      }
      // Behind by more than a second (the machine stalled us): do not burst to catch up.
      if (double(now) - next_due > hz) next_due = double(now);
    }
    if (pending_count > pending_first) {
      const uint16_t want = uint16_t(pending_count - pending_first);
      const uint16_t sent = rte_eth_tx_burst(port, 0, pending + pending_first, want);
      // The PMD owns sent mbufs (and may have freed them): lengths were kept when built.
      for (uint16_t i = 0; i < sent; ++i) report.sent_bytes += pending_len[pending_first + i];
      if (sent < want) ++report.tx_retries;
      report.sent_packets += sent;
      pending_first = uint16_t(pending_first + sent);
    }
    const uint16_t got = rte_eth_rx_burst(port, 0, rx, 32);
    if (got > 0) {
      report.rx_packets += got;
      rte_pktmbuf_free_bulk(rx, got);
    }
    if (pending_count == pending_first && !exhausted) {
      const double wait = next_due - double(rte_get_timer_cycles());
      if (wait > hz * 100e-6) sleep_ns(uint64_t((wait - hz * 50e-6) / hz * 1e9));
    }
  }
  const uint64_t stop = rte_get_timer_cycles();
  for (uint16_t i = pending_first; i < pending_count; ++i) {
    rte_pktmbuf_free(pending[i]);
    ++report.unsent_at_stop;
  }
  for (const uint64_t until = stop + uint64_t(o.linger_s * hz);
       rte_get_timer_cycles() < until && !g_stop.load(std::memory_order_relaxed);) {
    rte_mbuf* late[32];
    const uint16_t got = rte_eth_rx_burst(port, 0, late, 32);
    report.rx_packets += got;
    rte_pktmbuf_free_bulk(late, got);
    if (got == 0) sleep_ns(1000000);
  }
  rte_eth_dev_stop(port);
  rte_eth_dev_close(port);
  rte_mempool_free(pool);

  report.elapsed_s = double(stop - start) / hz;
  if (report.elapsed_s > 0) {
    report.achieved_pps = double(report.sent_packets) / report.elapsed_s;
    report.achieved_mbps = double(report.sent_bytes) * 8 / report.elapsed_s / 1e6;
  }
  return true;
}

namespace {

uint64_t monotonic_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return uint64_t(ts.tv_sec) * 1000000000ull + uint64_t(ts.tv_nsec);
}

// DIR/rank<r>: the number of phases rank r finished, written whole (rename) so that a
// reader never sees half a number.
bool write_barrier(const std::string& dir, uint32_t rank, uint32_t phases) {
  const std::string path = dir + "/rank" + std::to_string(rank);
  const std::string tmp = path + ".tmp";
  std::FILE* f = std::fopen(tmp.c_str(), "w");
  if (f == nullptr) return false;
  std::fprintf(f, "%u\n", phases);
  if (std::fclose(f) != 0) return false;
  return std::rename(tmp.c_str(), path.c_str()) == 0;
}

bool all_reached(const std::string& dir, uint32_t ranks, uint32_t phases) {
  for (uint32_t r = 0; r < ranks; ++r) {
    std::FILE* f = std::fopen((dir + "/rank" + std::to_string(r)).c_str(), "r");
    if (f == nullptr) return false;
    unsigned v = 0;
    const bool ok = std::fscanf(f, "%u", &v) == 1;
    std::fclose(f);
    if (!ok || v < phases) return false;
  }
  return true;
}

}  // namespace

bool run_closed_loop(ClosedLoopSender& sender, const ClosedLoopOptions& o, ClosedLoopReport& report,
                     std::string& error) {
  report = ClosedLoopReport{};
  if (o.burst == 0 || o.burst > kMaxBurst) {
    error = "--burst: must be 1.." + std::to_string(kMaxBurst);
    return false;
  }
  if (o.barrier_dir.empty()) {
    error = "--barrier-dir is required for a collective";
    return false;
  }
  uint16_t port = 0;
  if (!resolve(o.port, port, error)) return false;
  const int socket = std::max(0, rte_eth_dev_socket_id(port));
  const uint32_t pool_size = std::max<uint32_t>(o.mbufs, 2u * o.burst + 1024u);
  rte_mempool* pool = rte_pktmbuf_pool_create("rocegen_cl", pool_size, 256, 0, kDataRoom, socket);
  if (pool == nullptr) {
    error = "mbuf pool: " + errstr(rte_errno) + " (raise -m or lower --mbufs)";
    return false;
  }
  TxOptions tx;
  tx.port = o.port;
  if (!setup_port(port, tx, pool, error)) {
    rte_mempool_free(pool);
    return false;
  }
  const uint32_t ranks = uint32_t(sender.spec().ranks.size());
  const uint32_t rank = sender.spec().rank;
  const uint64_t start = monotonic_ns();
  const uint64_t deadline = start + uint64_t(o.timeout_s * 1e9);
  rte_mbuf* pending[kMaxBurst];
  uint16_t pending_count = 0, pending_first = 0;
  rte_mbuf* rx[32];
  bool waiting = true;
  uint64_t next_check = 0;
  if (!write_barrier(o.barrier_dir, rank, 0)) {
    error = "cannot write the barrier file in " + o.barrier_dir;
    rte_eth_dev_stop(port);
    rte_eth_dev_close(port);
    rte_mempool_free(pool);
    return false;
  }
  while (!g_stop.load(std::memory_order_relaxed)) {
    uint64_t now = monotonic_ns();
    if (now >= deadline) break;
    const uint16_t got = rte_eth_rx_burst(port, 0, rx, 32);
    for (uint16_t i = 0; i < got; ++i) {
      sender.on_frame({rte_pktmbuf_mtod(rx[i], const uint8_t*), rx[i]->data_len}, now);
    }
    if (got > 0) {
      report.rx_packets += got;
      rte_pktmbuf_free_bulk(rx, got);
    }
    if (waiting) {
      if (now >= next_check) {
        next_check = now + 200'000;
        if (all_reached(o.barrier_dir, ranks, sender.phase())) {
          waiting = false;
          if (sender.finished()) {
            report.completed = true;
            break;
          }
          sender.start_phase(now);
        }
      }
    } else {
      sender.poll(now);
      if (pending_count == pending_first) {
        pending_count = pending_first = 0;
        while (pending_count < o.burst) {
          rte_mbuf* m = rte_pktmbuf_alloc(pool);
          if (m == nullptr) break;
          const std::span<uint8_t> room(rte_pktmbuf_mtod(m, uint8_t*),
                                        rte_pktmbuf_tailroom(m) + m->data_len);
          const size_t len = sender.next_frame(now, room);
          if (len == 0) {
            rte_pktmbuf_free(m);
            break;
          }
          m->data_len = uint16_t(len);
          m->pkt_len = uint32_t(len);
          pending[pending_count++] = m;
        }
      }
      if (pending_count > pending_first) {
        const uint16_t sent = rte_eth_tx_burst(port, 0, pending + pending_first,
                                               uint16_t(pending_count - pending_first));
        pending_first = uint16_t(pending_first + sent);
      }
      if (sender.phase_done(now)) {
        sender.next_phase();
        if (!write_barrier(o.barrier_dir, rank, sender.phase())) {
          error = "cannot write the barrier file in " + o.barrier_dir;
          break;
        }
        waiting = true;
        next_check = 0;
        if (sender.finished()) {
          report.completed = true;
          break;
        }
      }
    }
    if (pending_count == pending_first) {
      now = monotonic_ns();
      // ACKs, NAKs and CNPs wait in the RX ring while we sleep: never more than 200 us.
      uint64_t wake = now + 200'000;
      if (!waiting) wake = std::min(wake, sender.next_event_ns(now));
      if (wake > now + 50'000) sleep_ns(wake - now - 20'000);
    }
  }
  for (uint16_t i = pending_first; i < pending_count; ++i) rte_pktmbuf_free(pending[i]);
  rte_eth_dev_stop(port);
  rte_eth_dev_close(port);
  rte_mempool_free(pool);
  report.elapsed_s = double(monotonic_ns() - start) / 1e9;
  return error.empty();
}

}  // namespace srv6gw::rocegen
