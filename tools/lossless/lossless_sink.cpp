// SPDX-License-Identifier: BSD-3-Clause
// lossless-sink: the slow receiver of the lossless acceptance test (docs/design/lossless.md). It
// reads one DPDK port (e.g. a net_memif client facing the gateway's fabric port) at a paced
// rate, optionally stops reading for a while (a paused receiver), writes every frame it gets
// to a classic pcap for the checker (lib/pcap), and can at the same time send the frames of a pcap
// into the port (the other direction) at a paced rate. It never drops what it read: a frame
// lost on the way is the gateway's or the link's.
//
//   lossless-sink EAL... -- --port net_memif1 --rate-pps 300000 --pcap out.pcap
//       --idle-ms 2000 [--expect N] --timeout-s 60 [--pause-after N --pause-ms 1000]
//       [--tx-pcap frames.pcap --tx-rate-pps 20000] [--report-json r.json] [--linger-s S]
#include <rte_cycles.h>
#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_ethdev.h>
#include <rte_mbuf.h>

#include <algorithm>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "pcap/pcap.hpp"

namespace {

volatile std::sig_atomic_t g_stop = 0;

struct Options {
  std::string port;
  double rate_pps = 0;  // 0 = as fast as it can
  std::string pcap;
  uint64_t idle_ms = 2000;  // stop after this long without a frame (once one came)
  // Stop once this many frames came (0: only idle/timeout end the run). Lets a test that
  // knows its count use a long idle bound, which a stall on a loaded machine does not reach.
  uint64_t expect = 0;
  double timeout_s = 60;
  uint64_t pause_after = 0;  // frames; 0 = never pause
  uint64_t pause_ms = 0;
  std::string tx_pcap;
  double tx_rate_pps = 10000;
  std::string report_json;
  // Seconds to keep the port open after the report (until SIGINT/SIGTERM): the gateway, a
  // memif server, is stopped before its client goes away.
  double linger_s = 0;
  // Seconds to wait for the port's link after start (0: do not wait); exit 3 if it stays
  // down, so a harness can tell a memif handshake that never completed from a slow gateway.
  double wait_link_s = 0;
};

[[noreturn]] void usage(const char* why) {
  std::fprintf(
      stderr,
      "lossless-sink: %s\nusage: lossless-sink EAL... -- --port NAME [--rate-pps N] "
      "[--pcap FILE] [--idle-ms MS] [--expect N] [--timeout-s S] [--pause-after N --pause-ms MS] "
      "[--tx-pcap FILE --tx-rate-pps N] [--report-json FILE] [--linger-s S] [--wait-link-s S]\n",
      why);
  std::exit(2);
}

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 0; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) usage(("missing value after " + a).c_str());
      return argv[++i];
    };
    if (a == "--port")
      o.port = value();
    else if (a == "--rate-pps")
      o.rate_pps = std::stod(value());
    else if (a == "--pcap")
      o.pcap = value();
    else if (a == "--idle-ms")
      o.idle_ms = std::stoull(value());
    else if (a == "--expect")
      o.expect = std::stoull(value());
    else if (a == "--timeout-s")
      o.timeout_s = std::stod(value());
    else if (a == "--pause-after")
      o.pause_after = std::stoull(value());
    else if (a == "--pause-ms")
      o.pause_ms = std::stoull(value());
    else if (a == "--tx-pcap")
      o.tx_pcap = value();
    else if (a == "--tx-rate-pps")
      o.tx_rate_pps = std::stod(value());
    else if (a == "--report-json")
      o.report_json = value();
    else if (a == "--linger-s")
      o.linger_s = std::stod(value());
    else if (a == "--wait-link-s")
      o.wait_link_s = std::stod(value());
    else
      usage(("unknown option " + a).c_str());
  }
  if (o.port.empty()) usage("--port is required");
  if (o.rate_pps < 0 || o.tx_rate_pps <= 0) usage("rates must be positive");
  return o;
}

// The capture of what was read, through lib/pcap (libpcap). A chained mbuf is copied into
// one buffer first: libpcap writes a record from contiguous bytes.
class CaptureWriter {
 public:
  explicit CaptureWriter(const std::string& path) {
    if (path.empty()) return;
    std::string error;
    writer_ = srv6gw::pcap::Writer::create(path, error);
    if (!writer_) usage(error.c_str());
  }
  void write(const rte_mbuf* m, uint64_t ns) {
    if (!writer_) return;
    const uint8_t* data = rte_pktmbuf_mtod(m, const uint8_t*);
    if (m->next != nullptr) {
      linear_.resize(m->pkt_len);
      data = static_cast<const uint8_t*>(rte_pktmbuf_read(m, 0, m->pkt_len, linear_.data()));
    }
    if (!writer_->write(data, m->pkt_len, ns)) failed_ = true;
  }
  // False when a record or the final flush did not reach the file.
  bool close() { return !writer_ || (writer_->close() && !failed_); }

 private:
  std::optional<srv6gw::pcap::Writer> writer_;
  std::vector<uint8_t> linear_;
  bool failed_ = false;
};

std::vector<std::vector<uint8_t>> read_frames(const std::string& path) {
  std::string error;
  auto packets = srv6gw::pcap::read_all(path, error);
  if (!packets) usage(error.c_str());
  std::vector<std::vector<uint8_t>> frames;
  frames.reserve(packets->size());
  for (auto& p : *packets) frames.push_back(std::move(p.data));
  return frames;
}

}  // namespace

int main(int argc, char** argv) {
  const int eal = rte_eal_init(argc, argv);
  if (eal < 0) {
    std::fprintf(stderr, "lossless-sink: EAL init failed: %s\n", rte_strerror(rte_errno));
    return 1;
  }
  // Skip the "--" EAL leaves in front of the application arguments.
  int skip = eal + 1;
  if (skip < argc && std::strcmp(argv[skip], "--") == 0) ++skip;
  const Options o = parse(argc - skip, argv + skip);
  std::signal(SIGINT, [](int) { g_stop = 1; });
  std::signal(SIGTERM, [](int) { g_stop = 1; });

  uint16_t port = 0;
  if (rte_eth_dev_get_port_by_name(o.port.c_str(), &port) != 0) usage("no such --port");
  rte_mempool* pool =
      rte_pktmbuf_pool_create("sink", 8191, 256, 0, RTE_MBUF_DEFAULT_BUF_SIZE, SOCKET_ID_ANY);
  if (pool == nullptr) usage("mbuf pool (raise -m)");
  rte_eth_conf conf{};
  if (rte_eth_dev_configure(port, 1, 1, &conf) != 0 ||
      rte_eth_rx_queue_setup(port, 0, 1024, SOCKET_ID_ANY, nullptr, pool) != 0 ||
      rte_eth_tx_queue_setup(port, 0, 1024, SOCKET_ID_ANY, nullptr) != 0 ||
      rte_eth_dev_start(port) != 0)
    usage("port setup failed");
  if (o.wait_link_s > 0) {
    const uint64_t until =
        rte_get_timer_cycles() + uint64_t(o.wait_link_s * double(rte_get_timer_hz()));
    rte_eth_link link{};
    while ((rte_eth_link_get_nowait(port, &link) != 0 || link.link_status != RTE_ETH_LINK_UP) &&
           g_stop == 0) {
      if (rte_get_timer_cycles() > until) {
        std::fprintf(stderr, "lossless-sink: link of %s not up within %.1f s\n", o.port.c_str(),
                     o.wait_link_s);
        return 3;
      }
      rte_delay_us_sleep(10000);
    }
  }

  const std::vector<std::vector<uint8_t>> tx_frames =
      o.tx_pcap.empty() ? std::vector<std::vector<uint8_t>>{} : read_frames(o.tx_pcap);
  CaptureWriter out(o.pcap);
  const uint64_t hz = rte_get_timer_hz();
  const uint64_t start = rte_get_timer_cycles();
  const uint64_t deadline = start + uint64_t(o.timeout_s * double(hz));
  const uint64_t idle = o.idle_ms * hz / 1000;
  const double rx_cycles = o.rate_pps > 0 ? double(hz) / o.rate_pps : 0;
  const double tx_cycles = double(hz) / o.tx_rate_pps;
  double rx_due = double(start), tx_due = double(start);
  uint64_t received = 0, bytes = 0, last_rx = 0, paused_at = 0, tx_sent = 0, tx_refused = 0;
  size_t tx_next = 0;
  bool paused = false, pause_done = false;
  rte_mbuf* burst[32];

  while (!g_stop) {
    const uint64_t now = rte_get_timer_cycles();
    if (now > deadline) break;
    if (last_rx != 0 && now - last_rx > idle && !paused) break;
    if (o.expect != 0 && received >= o.expect) break;
    // The other direction: one frame of the pcap when due, round robin; a refused frame is
    // counted (the gateway's host side refusing means that direction is not flowing).
    if (!tx_frames.empty() && double(now) >= tx_due) {
      tx_due += tx_cycles;
      if (double(now) - tx_due > double(hz) / 10) tx_due = double(now);  // no catch-up burst
      const std::vector<uint8_t>& f = tx_frames[tx_next++ % tx_frames.size()];
      rte_mbuf* m = rte_pktmbuf_alloc(pool);
      if (m != nullptr) {
        std::memcpy(rte_pktmbuf_append(m, uint16_t(f.size())), f.data(), f.size());
        if (rte_eth_tx_burst(port, 0, &m, 1) == 1) {
          ++tx_sent;
        } else {
          ++tx_refused;
          rte_pktmbuf_free(m);
        }
      }
    }
    if (paused) {
      if (now - paused_at >= o.pause_ms * hz / 1000) {
        paused = false;
        pause_done = true;
        last_rx = now;
        rx_due = double(now);
      }
      continue;
    }
    if (o.pause_after != 0 && !pause_done && received >= o.pause_after) {
      paused = true;
      paused_at = now;
      continue;
    }
    uint16_t want = 32;
    if (rx_cycles > 0) {
      if (double(now) < rx_due) continue;
      // Paced: as many frames as are due (at most a burst), no catch-up after a stall.
      const double due = (double(now) - rx_due) / rx_cycles + 1;
      want = uint16_t(std::min(32.0, due));
      if (double(now) - rx_due > double(hz) / 100) rx_due = double(now);
    }
    const uint16_t n = rte_eth_rx_burst(port, 0, burst, want);
    if (n == 0) continue;
    rx_due += rx_cycles * n;
    last_rx = now;
    const uint64_t ns = uint64_t(double(now - start) * 1e9 / double(hz));
    for (uint16_t i = 0; i < n; ++i) {
      bytes += burst[i]->pkt_len;
      out.write(burst[i], ns);
      rte_pktmbuf_free(burst[i]);
    }
    received += n;
  }
  const double secs = double(rte_get_timer_cycles() - start) / double(hz);
  const bool written = out.close();
  char report[512];
  std::snprintf(report, sizeof report,
                "{\"received\": %llu, \"bytes\": %llu, \"seconds\": %.3f, \"tx_sent\": %llu, "
                "\"tx_refused\": %llu}\n",
                (unsigned long long)received, (unsigned long long)bytes, secs,
                (unsigned long long)tx_sent, (unsigned long long)tx_refused);
  std::printf("lossless-sink: %s", report);
  if (!o.report_json.empty()) {
    if (std::FILE* f = std::fopen(o.report_json.c_str(), "w")) {
      std::fputs(report, f);
      std::fclose(f);
    }
  }
  for (const uint64_t until = rte_get_timer_cycles() + uint64_t(o.linger_s * double(hz));
       !g_stop && rte_get_timer_cycles() < until;)
    rte_delay_us_sleep(10000);
  rte_eth_dev_stop(port);
  rte_eth_dev_close(port);
  rte_eal_cleanup();
  if (!written) {
    std::fprintf(stderr, "lossless-sink: the capture %s is incomplete (write failed)\n",
                 o.pcap.c_str());
    return 1;
  }
  return 0;
}
