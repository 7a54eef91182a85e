// SPDX-License-Identifier: BSD-3-Clause
// The closed-loop sender without sockets: its frames go to a responder written here from
// the RC rules (accept the expected PSN, ACK on AckReq, ACK duplicates again, one NAK per
// gap, drop out of order),
// whose ACKs, NAKs and CNPs go back. Loss, go-back-N, timeouts and DCQCN cuts are checked.
#include <gtest/gtest.h>

#include <array>
#include <cstring>
#include <functional>
#include <map>
#include <vector>

#include "roce-gen/closed_loop.hpp"

namespace srv6gw::rocegen {
namespace {

net::Ipv4Addr v4(uint8_t a, uint8_t b, uint8_t c, uint8_t d) {
  return net::Ipv4Addr{{a, b, c, d}};
}

ClosedLoopSpec two_ranks(uint64_t bytes) {
  ClosedLoopSpec s;
  s.ranks = {v4(10, 0, 0, 1), v4(10, 0, 1, 1)};
  s.rank = 0;
  s.bytes = bytes;
  s.iterations = 1;
  s.frame_len = 1024;
  s.window_packets = 8;
  s.ack_every = 4;
  s.rto_ns = 5'000'000;
  s.dcqcn_params = DcqcnParams::paper_scaled(40e6, 1e-3);
  return s;
}

struct Parsed {
  uint8_t opcode;
  uint32_t dest_qp, psn;
  bool ack_req;
  uint32_t src_ip_last;
};

Parsed parse(std::span<const uint8_t> f) {
  const size_t udp = 14 + size_t(f[14] & 0xf) * 4;
  const uint8_t* bth = f.data() + udp + 8;
  return {bth[0], uint32_t(bth[5]) << 16 | uint32_t(bth[6]) << 8 | bth[7],
          uint32_t(bth[9]) << 16 | uint32_t(bth[10]) << 8 | bth[11], (bth[8] & 0x80) != 0,
          f[14 + 15]};
}

std::vector<uint8_t> answer(const ClosedLoopSpec& s, uint8_t opcode, uint32_t dest_qp, uint32_t psn,
                            uint8_t syndrome) {
  FlowAddress flow;
  flow.src = net::IpAddr::v4(s.ranks[1]);
  flow.dst = net::IpAddr::v4(s.ranks[0]);
  flow.ecn = 0;
  RoceFields r;
  r.opcode = Opcode(opcode);
  r.dest_qp = dest_qp;
  r.psn = psn;
  r.aeth.syndrome = syndrome;
  r.becn = opcode == 0x81;
  std::vector<uint8_t> out(256);
  out.resize(build_roce_frame(flow, r, out));
  return out;
}

// Runs sender and responder until the sender finishes (or `limit_ns`); `drop(psn, n)` says
// whether the n-th arrival of that PSN is lost on the way.
struct Loop {
  ClosedLoopSpec spec;
  ClosedLoopSender sender;
  std::function<bool(uint32_t, int)> drop = [](uint32_t, int) { return false; };
  std::function<bool(uint32_t)> drop_ack = [](uint32_t) { return false; };
  std::map<uint32_t, uint32_t> epsn;  // per DestQP
  std::map<uint32_t, bool> nak_sent;
  std::map<uint32_t, int> arrivals;
  uint64_t naks_sent = 0, accepted = 0, now = 0;

  explicit Loop(const ClosedLoopSpec& s) : spec(s), sender(*ClosedLoopSender::create(s, err())) {}
  static std::string& err() {
    static std::string e;
    return e;
  }

  void run(uint64_t limit_ns) {
    std::array<uint8_t, kMaxFrameLen> buf;
    while (now < limit_ns && !sender.finished()) {
      if (!sender.started()) sender.start_phase(now);
      sender.poll(now);
      while (size_t len = sender.next_frame(now, buf)) {
        const Parsed p = parse({buf.data(), len});
        if (drop(p.psn, arrivals[p.psn]++)) continue;
        uint32_t& e = epsn[p.dest_qp];
        if (p.psn == e) {
          ++e;
          ++accepted;
          nak_sent[p.dest_qp] = false;
          if (p.ack_req && !drop_ack(p.psn)) {
            auto a = answer(spec, 0x11, p.dest_qp, p.psn, 0x1f);
            sender.on_frame(a, now);
          }
        } else if (p.psn < e) {
          // A duplicate (resent after a timeout): RC responders acknowledge it again.
          if (p.ack_req) {
            auto a = answer(spec, 0x11, p.dest_qp, e - 1, 0x1f);
            sender.on_frame(a, now);
          }
        } else if (!nak_sent[p.dest_qp]) {
          nak_sent[p.dest_qp] = true;
          ++naks_sent;
          auto a = answer(spec, 0x11, p.dest_qp, e, 0x60);
          sender.on_frame(a, now);
        }
      }
      if (sender.phase_done(now)) sender.next_phase();
      now += 10'000;  // 10 us steps
    }
  }
};

TEST(ClosedLoop, LosslessTransferCompletes) {
  Loop l(two_ranks(2 * 20000));
  l.run(10'000'000'000ull);
  ASSERT_TRUE(l.sender.finished());
  const auto& c = l.sender.counters();
  EXPECT_EQ(c.messages_done, 1u);
  EXPECT_EQ(c.bytes_done, 20000u);
  EXPECT_EQ(c.retransmitted, 0u);
  EXPECT_EQ(c.naks, 0u);
  EXPECT_EQ(l.accepted, c.data_packets);
  // 20000 bytes at 40 Mbit/s (plus headers): at least 4 ms of pacing.
  ASSERT_EQ(l.sender.timings().size(), 1u);
  EXPECT_GE(l.sender.timings()[0].done_ns - l.sender.timings()[0].start_ns, 4'000'000u);
}

TEST(ClosedLoop, LossIsNakedAndResentGoBackN) {
  Loop l(two_ranks(2 * 20000));
  l.drop = [](uint32_t psn, int n) { return psn == 5 && n == 0; };
  l.run(10'000'000'000ull);
  ASSERT_TRUE(l.sender.finished());
  const auto& c = l.sender.counters();
  EXPECT_EQ(l.naks_sent, 1u);
  EXPECT_EQ(c.naks, 1u);
  EXPECT_EQ(c.nak_go_backs, 1u);
  // Go-back-N resends PSN 5 and whatever followed it before the NAK (window 8: up to 7).
  EXPECT_GE(c.retransmitted, 1u);
  EXPECT_LE(c.retransmitted, 8u);
  EXPECT_EQ(c.timeouts, 0u);
  EXPECT_EQ(c.bytes_done, 20000u);
}

TEST(ClosedLoop, LostAcksTimeOutAndResend) {
  ClosedLoopSpec s = two_ranks(2 * 4000);  // 5 packets, AckReq on PSN 3 and the last
  Loop l(s);
  int dropped = 0;
  l.drop_ack = [&dropped](uint32_t) { return dropped++ < 2; };  // the first two ACKs
  l.run(10'000'000'000ull);
  ASSERT_TRUE(l.sender.finished());
  const auto& c = l.sender.counters();
  EXPECT_GE(c.timeouts, 1u);
  EXPECT_GE(c.retransmitted, 1u);
  // The retransmission timer: the phase took at least one rto.
  EXPECT_GE(l.sender.timings()[0].done_ns - l.sender.timings()[0].start_ns, s.rto_ns);
}

TEST(ClosedLoop, CnpCutsThatQpsRate) {
  ClosedLoopSpec s = two_ranks(2 * 100000);
  s.qps_per_peer = 2;
  Loop l(s);
  l.sender.start_phase(0);
  auto views = l.sender.qp_views();
  ASSERT_EQ(views.size(), 2u);
  EXPECT_DOUBLE_EQ(views[0].rate_bps, 40e6);
  auto cnp = answer(s, 0x81, views[1].dest_qp, 0, 0);
  EXPECT_TRUE(l.sender.on_frame(cnp, 1000));
  views = l.sender.qp_views();
  EXPECT_DOUBLE_EQ(views[0].rate_bps, 40e6);
  EXPECT_DOUBLE_EQ(views[1].rate_bps, 20e6);  // alpha 1: halved
  EXPECT_EQ(l.sender.counters().rate_cuts, 1u);
  // A CNP from an address that is not the QP's peer is not ours.
  ClosedLoopSpec other = s;
  other.ranks[1] = v4(10, 9, 9, 9);
  auto foreign = answer(other, 0x81, views[0].dest_qp, 0, 0);
  EXPECT_FALSE(l.sender.on_frame(foreign, 2000));
  EXPECT_DOUBLE_EQ(l.sender.qp_views()[0].rate_bps, 40e6);
}

TEST(ClosedLoop, RingAllReducePhases) {
  ClosedLoopSpec s = two_ranks(4 * 8000);
  s.ranks.push_back(v4(10, 0, 0, 2));
  s.ranks.push_back(v4(10, 0, 1, 2));
  s.collective = Collective::allreduce;
  s.iterations = 2;
  std::string error;
  auto sender = ClosedLoopSender::create(s, error);
  ASSERT_TRUE(sender) << error;
  EXPECT_EQ(sender->phases_per_iteration(), 6u);  // 2 (N - 1)
  EXPECT_EQ(sender->total_phases(), 12u);
  s.rank = 4;
  EXPECT_FALSE(ClosedLoopSender::create(s, error));
  EXPECT_NE(error.find("rank"), std::string::npos);
}

}  // namespace
}  // namespace srv6gw::rocegen
