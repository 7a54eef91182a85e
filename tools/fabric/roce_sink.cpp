// SPDX-License-Identifier: BSD-3-Clause
// roce-sink: the receiving host of the emulated fabric. On a raw AF_PACKET socket it counts the
// RoCEv2 (IPv4) frames that arrive, per time bin: frames, bytes, CE-marked, late (PSN below
// the QP's highest so far: reordered), and the PSN advance (frames the senders sent, so loss =
// 1 - frames / advance). Like a receiving RNIC's notification point, it answers a CE-marked
// frame with a CNP (BTH opcode 0x81, valid ICRC, built by the roce-gen library) toward the
// sender, at most one per QP per --cnp-gap-us.
//
// A Python receiver could not keep up with a few thousand frames per second on a loaded
// 2-core machine: it fell seconds behind, and CNPs arriving seconds late break the very
// loop the fabric is built to show. This one reads 64 frames per recvmmsg.
//
// Output: one line per bin to --out (flushed per bin), "t_end frames bytes ce late advance
// cnps" with t_end in CLOCK_MONOTONIC seconds (Python's time.monotonic()), so a controller
// can cut phases at its own timestamps. Runs until SIGINT/SIGTERM.
//
// With --rc it is also the responder of roce-gen's closed-loop mode, by the RC rules an RNIC
// applies per QP (keyed by the sender's address and DestQP; PSNs start at 0): the expected
// PSN is accepted, and acknowledged when the packet asks (AckReq) or ends a message; a PSN
// beyond it is dropped and answered by one NAK (PSN sequence error, naming the expected
// PSN) until the expected one arrives; a duplicate is acknowledged again. Bins then have
// three more columns: acks naks duplicates. --summary writes the totals as JSON at exit.
#include <arpa/inet.h>
#include <getopt.h>
#include <linux/if_packet.h>
#include <net/ethernet.h>
#include <net/if.h>
#include <poll.h>
#include <sys/socket.h>

#include <array>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <string>
#include <unordered_map>

#include "net/addr.hpp"
#include "roce-gen/roce_gen.hpp"

namespace {

using namespace srv6gw;

volatile std::sig_atomic_t g_stop = 0;
void on_signal(int) {
  g_stop = 1;
}

double monotonic_s() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return double(ts.tv_sec) + double(ts.tv_nsec) * 1e-9;
}

[[noreturn]] void fail(const std::string& message) {
  std::fprintf(stderr, "roce-sink: %s\n", message.c_str());
  std::exit(2);
}

struct QpState {
  uint32_t max_psn = 0;
  double last_cnp = -1;
  uint32_t epsn = 0;  // --rc: the next PSN in order
  uint32_t msn = 0;   // --rc: messages completed
  bool nak_sent = false;
};

struct Bin {
  uint64_t frames = 0, bytes = 0, ce = 0, late = 0, advance = 0, cnps = 0;
  uint64_t acks = 0, naks = 0, duplicates = 0;
};

struct Totals {
  uint64_t frames = 0, ce = 0, late = 0, cnps = 0, acks = 0, naks = 0, duplicates = 0;
  uint64_t accepted = 0, out_of_order_dropped = 0, messages = 0;
};

bool ends_message(uint8_t opcode) {
  // SEND/WRITE last and only (with or without immediate).
  switch (opcode) {
    case 0x02:
    case 0x03:
    case 0x04:
    case 0x05:
    case 0x08:
    case 0x09:
    case 0x0a:
    case 0x0b:
      return true;
    default:
      return false;
  }
}

constexpr const char* kUsage =
    "usage: roce-sink --iface DEV --out FILE [--gw-mac MAC] [--no-cnp] [--cnp-gap-us N]\n"
    "                 [--bin-ms N] [--rc] [--summary FILE]\n"
    "Counts RoCEv2 frames on DEV per bin (frames bytes ce late psn-advance cnps) and answers\n"
    "CE-marked frames with CNPs sent to --gw-mac (default: the frame's source MAC).\n";

}  // namespace

int main(int argc, char** argv) {
  std::string iface, out_path;
  std::optional<net::MacAddr> gw_mac;
  bool answer_ce = true;
  double cnp_gap_s = 50e-6;
  double bin_s = 0.1;
  bool rc = false;
  std::string summary_path;
  static const option kOptions[] = {{"iface", required_argument, nullptr, 'i'},
                                    {"out", required_argument, nullptr, 'o'},
                                    {"gw-mac", required_argument, nullptr, 'g'},
                                    {"no-cnp", no_argument, nullptr, 'n'},
                                    {"cnp-gap-us", required_argument, nullptr, 'c'},
                                    {"bin-ms", required_argument, nullptr, 'b'},
                                    {"rc", no_argument, nullptr, 'r'},
                                    {"summary", required_argument, nullptr, 's'},
                                    {"help", no_argument, nullptr, 'h'},
                                    {nullptr, 0, nullptr, 0}};
  int c;
  while ((c = getopt_long(argc, argv, "i:o:h", kOptions, nullptr)) != -1) {
    switch (c) {
      case 'i':
        iface = optarg;
        break;
      case 'o':
        out_path = optarg;
        break;
      case 'g':
        gw_mac = net::parse_mac(optarg);
        if (!gw_mac) fail(std::string("--gw-mac: '") + optarg + "' is not a MAC address");
        break;
      case 'n':
        answer_ce = false;
        break;
      case 'c':
        cnp_gap_s = std::atof(optarg) * 1e-6;
        break;
      case 'b':
        bin_s = std::atof(optarg) * 1e-3;
        if (bin_s <= 0) fail("--bin-ms must be positive");
        break;
      case 'r':
        rc = true;
        break;
      case 's':
        summary_path = optarg;
        break;
      case 'h':
        std::fputs(kUsage, stdout);
        return 0;
      default:
        std::fputs(kUsage, stderr);
        return 2;
    }
  }
  if (iface.empty() || out_path.empty()) fail("--iface and --out are required");
  const unsigned ifindex = if_nametoindex(iface.c_str());
  if (ifindex == 0) fail("no interface '" + iface + "'");
  const int fd = socket(AF_PACKET, SOCK_RAW, htons(ETH_P_ALL));
  if (fd < 0) fail(std::string("AF_PACKET socket: ") + std::strerror(errno));
  sockaddr_ll sll{};
  sll.sll_family = AF_PACKET;
  sll.sll_protocol = htons(ETH_P_ALL);
  sll.sll_ifindex = int(ifindex);
  if (bind(fd, reinterpret_cast<sockaddr*>(&sll), sizeof sll) != 0) {
    fail(std::string("bind: ") + std::strerror(errno));
  }
  const int rcvbuf = 8 << 20;
  setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof rcvbuf);
  std::FILE* out = std::fopen(out_path.c_str(), "w");
  if (out == nullptr) fail("cannot create " + out_path);
  std::fprintf(out, rc ? "# t_end frames bytes ce late psn_advance cnps acks naks duplicates\n"
                       : "# t_end frames bytes ce late psn_advance cnps\n");
  std::fflush(out);
  std::signal(SIGINT, on_signal);
  std::signal(SIGTERM, on_signal);

  constexpr unsigned kBatch = 64;
  static std::array<std::array<uint8_t, 9216>, kBatch> frames;
  std::array<mmsghdr, kBatch> msgs{};
  std::array<iovec, kBatch> iovs{};
  std::array<sockaddr_ll, kBatch> addrs{};
  std::unordered_map<uint64_t, QpState> qps;  // key: sender's IPv4 << 24 | DestQP
  std::array<uint8_t, 256> cnp{};
  std::array<uint8_t, 256> ack{};
  Bin bin;
  Totals totals;
  double bin_end = monotonic_s() + bin_s;

  while (!g_stop) {
    for (unsigned i = 0; i < kBatch; ++i) {
      iovs[i] = {frames[i].data(), frames[i].size()};
      msgs[i].msg_hdr = {};
      msgs[i].msg_hdr.msg_iov = &iovs[i];
      msgs[i].msg_hdr.msg_iovlen = 1;
      msgs[i].msg_hdr.msg_name = &addrs[i];
      msgs[i].msg_hdr.msg_namelen = sizeof(sockaddr_ll);
    }
    pollfd pfd{fd, POLLIN, 0};
    const int ready = poll(&pfd, 1, 20);
    const int n = ready > 0 ? recvmmsg(fd, msgs.data(), kBatch, MSG_DONTWAIT, nullptr) : 0;
    const double now = monotonic_s();
    for (int k = 0; k < n; ++k) {
      if (addrs[k].sll_pkttype == PACKET_OUTGOING) continue;
      const uint8_t* f = frames[k].data();
      const size_t len = msgs[k].msg_len;
      if (len < 14 + 20 + 8 + 12 || f[12] != 0x08 || f[13] != 0x00 || (f[14] >> 4) != 4) continue;
      const size_t ihl = size_t(f[14] & 0xf) * 4;
      const size_t udp = 14 + ihl;
      if (f[14 + 9] != 17 || len < udp + 8 + 12 || f[udp + 2] != 0x12 || f[udp + 3] != 0xb7) {
        continue;  // not UDP 4791
      }
      const uint8_t* bth = f + udp + 8;
      if (bth[0] == 0x81) continue;        // a CNP (ours would be outgoing anyway)
      if (rc && bth[0] == 0x11) continue;  // an ACK/NAK for this host's own sender
      const uint32_t qp = uint32_t(bth[5]) << 16 | uint32_t(bth[6]) << 8 | bth[7];
      const uint32_t psn = uint32_t(bth[9]) << 16 | uint32_t(bth[10]) << 8 | bth[11];
      const bool ce = (f[15] & 3) == 3;
      ++bin.frames;
      bin.bytes += len;
      bin.ce += ce;
      ++totals.frames;
      totals.ce += ce;
      uint32_t src_ip = 0;
      std::memcpy(&src_ip, f + 14 + 12, 4);
      auto [it, fresh] = qps.try_emplace(uint64_t(ntohl(src_ip)) << 24 | qp);
      QpState& q = it->second;
      if (fresh) {
        q.max_psn = psn;
        bin.advance += 1;
      } else {
        const uint32_t ahead = (psn - q.max_psn) & 0xffffff;
        if (ahead != 0 && ahead < 0x800000) {
          bin.advance += ahead;
          q.max_psn = psn;
        } else {
          ++bin.late;
          ++totals.late;
        }
      }
      // The reverse flow (our address to the sender's), for CNPs and ACKs.
      const auto reverse = [&]() {
        rocegen::FlowAddress flow;
        std::memcpy(flow.src_mac.bytes.data(), f, 6);  // we answer from the address hit
        if (gw_mac) {
          flow.dst_mac = *gw_mac;
        } else {
          std::memcpy(flow.dst_mac.bytes.data(), f + 6, 6);
        }
        net::Ipv4Addr src{}, dst{};
        std::memcpy(src.bytes.data(), f + 14 + 16, 4);
        std::memcpy(dst.bytes.data(), f + 14 + 12, 4);
        flow.src = net::IpAddr::v4(src);
        flow.dst = net::IpAddr::v4(dst);
        flow.ecn = 0;
        flow.udp_sport = uint16_t(f[udp] << 8 | f[udp + 1]);
        return flow;
      };
      if (rc) {
        const uint32_t psn = uint32_t(bth[9]) << 16 | uint32_t(bth[10]) << 8 | bth[11];
        const uint32_t ahead = (psn - q.epsn) & 0xffffff;
        const bool ack_req = (bth[8] & 0x80) != 0;
        bool send_ack = false, send_nak = false;
        uint32_t ack_psn = 0;
        if (ahead == 0) {
          q.epsn = (q.epsn + 1) & 0xffffff;
          q.nak_sent = false;
          ++totals.accepted;
          if (ends_message(bth[0])) {
            q.msn = (q.msn + 1) & 0xffffff;
            ++totals.messages;
          }
          send_ack = ack_req || ends_message(bth[0]);
          ack_psn = psn;
        } else if (ahead < 0x800000) {
          ++totals.out_of_order_dropped;
          if (!q.nak_sent) {
            q.nak_sent = true;
            send_nak = true;
          }
        } else {
          ++bin.duplicates;
          ++totals.duplicates;
          send_ack = ack_req || ends_message(bth[0]);
          ack_psn = (q.epsn - 1) & 0xffffff;
        }
        if (send_ack || send_nak) {
          rocegen::FlowAddress flow = reverse();
          flow.dscp = uint8_t(f[15] >> 2);  // the data's class
          rocegen::RoceFields fields;
          fields.opcode = rocegen::Opcode::ack;
          fields.dest_qp = qp;
          fields.psn = send_nak ? q.epsn : ack_psn;
          fields.aeth.syndrome = send_nak ? 0x60 : 0x1f;
          fields.aeth.msn = q.msn;
          const size_t alen = rocegen::build_roce_frame(flow, fields, ack);
          if (alen > 0 && send(fd, ack.data(), alen, MSG_DONTWAIT) == ssize_t(alen)) {
            if (send_nak) {
              ++bin.naks;
              ++totals.naks;
            } else {
              ++bin.acks;
              ++totals.acks;
            }
          }
        }
      }
      if (ce && answer_ce && now - q.last_cnp >= cnp_gap_s) {
        q.last_cnp = now;
        rocegen::FlowAddress flow = reverse();
        flow.dscp = 48;
        rocegen::RoceFields fields;
        fields.opcode = rocegen::Opcode::cnp;
        fields.becn = true;
        fields.dest_qp = qp;
        const size_t clen = rocegen::build_roce_frame(flow, fields, cnp);
        if (clen > 0 && send(fd, cnp.data(), clen, MSG_DONTWAIT) == ssize_t(clen)) {
          ++bin.cnps;
          ++totals.cnps;
        }
      }
    }
    if (now >= bin_end) {
      std::fprintf(
          out, "%.6f %llu %llu %llu %llu %llu %llu", bin_end,
          static_cast<unsigned long long>(bin.frames), static_cast<unsigned long long>(bin.bytes),
          static_cast<unsigned long long>(bin.ce), static_cast<unsigned long long>(bin.late),
          static_cast<unsigned long long>(bin.advance), static_cast<unsigned long long>(bin.cnps));
      if (rc) {
        std::fprintf(out, " %llu %llu %llu", static_cast<unsigned long long>(bin.acks),
                     static_cast<unsigned long long>(bin.naks),
                     static_cast<unsigned long long>(bin.duplicates));
      }
      std::fputc('\n', out);
      std::fflush(out);
      bin = Bin{};
      bin_end += bin_s;
      if (now > bin_end + 10 * bin_s) bin_end = now + bin_s;  // stalled: skip empty bins
    }
  }
  std::fclose(out);
  if (!summary_path.empty()) {
    std::FILE* sf = std::fopen(summary_path.c_str(), "w");
    if (sf == nullptr) fail("cannot create " + summary_path);
    const auto u = [](uint64_t v) { return static_cast<unsigned long long>(v); };
    std::fprintf(sf,
                 "{\"frames\": %llu, \"ce\": %llu, \"late\": %llu, \"cnps\": %llu, "
                 "\"acks\": %llu, \"naks\": %llu, \"duplicates\": %llu, \"accepted\": %llu, "
                 "\"out_of_order_dropped\": %llu, \"messages\": %llu, \"qps\": %zu}\n",
                 u(totals.frames), u(totals.ce), u(totals.late), u(totals.cnps), u(totals.acks),
                 u(totals.naks), u(totals.duplicates), u(totals.accepted),
                 u(totals.out_of_order_dropped), u(totals.messages), qps.size());
    std::fclose(sf);
  }
  return 0;
}
