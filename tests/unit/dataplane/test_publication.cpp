// SPDX-License-Identifier: BSD-3-Clause
// Zero-loss publication: a worker thread (registered with the gateway's QSBR variable)
// processes bursts continuously while the control thread applies thousands of alternating
// configurations (segment lists change, steering entries are added, deleted and re-pointed,
// a policy's engine factors change). Every packet must come out exactly once, in order, and
// every output's outer header must be entirely one valid version (SID list and Tag of the
// same segment list), never a mix. Retired objects must be reclaimed while the worker runs.
#include <gtest/gtest.h>
#include <rte_mbuf.h>
#include <rte_mempool.h>
#include <rte_rcu_qsbr.h>

#include <atomic>
#include <chrono>
#include <map>
#include <thread>

#include "../policy/config_builder.hpp"
#include "dataplane/control/gateway.hpp"
#include "dataplane/datapath/burst.hpp"
#include "dataplane/datapath/mbuf_span.hpp"
#include "packet_builder.hpp"
#include "policy/runtime.hpp"

namespace srv6gw::dataplane {
namespace {

using test::Bytes;

constexpr size_t kSeqOffset = 14 + 20 + 8 + 12;  // first payload byte of an IPv4 RoCE frame

config::SegmentList list(const char* name, uint16_t id, std::vector<const char*> sids) {
  config::SegmentList sl;
  sl.name = name;
  sl.path_id = id;
  for (const char* s : sids) sl.sids.push_back(testing::v6(s));
  return sl;
}

config::GatewayConfig version(bool b) {
  config::GatewayConfig c = testing::base_config();
  c.fabric_nexthop_mac = testing::mac("02:00:00:00:03:03");
  c.capacities.exact_entries = 4096;
  if (!b) {
    c.policies.push_back(testing::policy("p", config::SelectionMode::packet,
                                         {list("a", 1, {"fc00:a1::1", "fc00:a2::1", "fc00:a3::1"}),
                                          list("a2", 11, {"fc00:a9::1"})}));
    c.policies.push_back(
        testing::policy("q", config::SelectionMode::flow, {list("c", 3, {"fc00:c1::1"})}));
  } else {
    c.policies.push_back(
        testing::policy("p", config::SelectionMode::packet,
                        {list("b", 2, {"fc00:b1::1", "fc00:b2::1", "fc00:b3::1", "fc00:b4::1"}),
                         list("b2", 12, {"fc00:b9::1", "fc00:b8::1"})}));
    c.policies.push_back(testing::policy("q", config::SelectionMode::flow,
                                         {list("d", 4, {"fc00:d1::1", "fc00:d2::1"})}));
  }
  c.steering.push_back(testing::prefix_rule("10.0.0.0", 8, "p"));
  c.steering.push_back(testing::dst_rule("10.0.1.1", "p"));
  if (!b) c.steering.push_back(testing::exact_rule("10.0.1.2", 7, "q"));
  c.steering.push_back(testing::exact_rule("10.0.1.3", 9, b ? "q" : "p"));  // re-pointed
  // 500 exact entries that exist only in one version: added and deleted on every apply.
  for (uint32_t i = 0; i < 500; ++i) {
    config::SteeringRule r;
    r.kind = config::SteeringKind::exact;
    r.dst.family = net::Family::ipv4;
    r.dst.bytes[0] = 10;
    r.dst.bytes[1] = 50;
    r.dst.bytes[2] = uint8_t(i >> 8);
    r.dst.bytes[3] = uint8_t(i);
    r.dest_qp = b ? 2000 + i : 1000 + i;
    r.policy = "q";
    c.steering.push_back(r);
  }
  return c;
}

// (tag, SID list in path order) read off an encapsulated frame.
struct Version {
  uint16_t tag = 0;
  std::vector<net::Ipv6Addr> sids;
  friend bool operator<(const Version& a, const Version& b) {
    return std::tie(a.tag, a.sids) < std::tie(b.tag, b.sids);
  }
};

bool read_version(const Bytes& f, Version& v) {
  if (f.size() < 14 + 40 + 8 || f[12] != 0x86 || f[13] != 0xDD || f[14 + 6] != 43) return false;
  const uint8_t* srh = f.data() + 54;
  const unsigned n = srh[4] + 1u;
  if (srh[2] != 4 || srh[3] != n - 1 || srh[1] != 2 * n || f.size() < 62 + 16 * n) return false;
  v.tag = uint16_t(srh[6] << 8 | srh[7]);
  v.sids.clear();
  for (unsigned i = n; i-- > 0;) {
    net::Ipv6Addr a;
    std::memcpy(a.bytes.data(), srh + 8 + 16 * i, 16);
    v.sids.push_back(a);
  }
  // The destination address is the first segment.
  return std::equal(f.begin() + 38, f.begin() + 54, v.sids.front().bytes.begin());
}

TEST(Publication, ZeroLossUnderThousandsOfApplies) {
  rte_mempool* pool =
      rte_pktmbuf_pool_create("pub_pool", 1023, 0, 0, RTE_MBUF_DEFAULT_BUF_SIZE, SOCKET_ID_ANY);
  ASSERT_NE(pool, nullptr);
  const unsigned in_use_before = rte_mempool_in_use_count(pool);
  const config::GatewayConfig a = version(false), b = version(true);
  PortEnv env;
  config::ConfigError err;
  std::unique_ptr<Gateway> gw = Gateway::create(a, 1, env, nullptr, err);
  ASSERT_NE(gw, nullptr) << err.path << ": " << err.message;

  // Valid versions of each segment list, as (tag, SIDs).
  std::map<Version, int> valid;
  for (const config::GatewayConfig* c : {&a, &b})
    for (const config::Policy& p : c->policies)
      for (const config::SegmentList& sl : p.segment_lists) valid[{sl.path_id, sl.sids}] = 0;

  // Flows: dst-any, exact present only in A, exact re-pointed, exact churned, prefix only.
  std::vector<Bytes> flows;
  for (auto [dst, qp] : std::vector<std::pair<const char*, uint32_t>>{{"10.0.1.1", 1},
                                                                      {"10.0.1.2", 7},
                                                                      {"10.0.1.3", 9},
                                                                      {"10.50.0.5", 1005},
                                                                      {"10.50.1.200", 2456},
                                                                      {"10.9.9.9", 3}}) {
    test::RoceSpec s;
    s.dst = dst;
    s.dest_qp = qp;
    s.payload = 64;
    flows.push_back(test::roce_frame(s));
  }

  std::atomic<bool> stop{false};
  std::atomic<uint64_t> processed{0}, lost{0}, reordered{0}, invalid{0};
  std::map<Version, int> seen;  // written by the worker only, read after join
  WorkerContext* ctx = gw->worker(0);
  std::thread worker([&] {
    rte_rcu_qsbr* q = gw->qsbr();
    rte_rcu_qsbr_thread_register(q, 0);
    worker_online(*ctx);
    uint32_t seq = 0;
    rte_mbuf* in[kBurstSize];
    rte_mbuf* out[kBurstSize];
    Bytes frame;
    while (!stop.load(std::memory_order_relaxed)) {
      if (rte_pktmbuf_alloc_bulk(pool, in, kBurstSize) != 0) {
        ++lost;  // would mean mbufs leaked
        break;
      }
      uint32_t first_seq = seq;
      for (unsigned i = 0; i < kBurstSize; ++i, ++seq) {
        const Bytes& f = flows[seq % flows.size()];
        uint8_t* p = reinterpret_cast<uint8_t*>(rte_pktmbuf_append(in[i], uint16_t(f.size())));
        std::memcpy(p, f.data(), f.size());
        p[kSeqOffset] = uint8_t(seq >> 24);
        p[kSeqOffset + 1] = uint8_t(seq >> 16);
        p[kSeqOffset + 2] = uint8_t(seq >> 8);
        p[kSeqOffset + 3] = uint8_t(seq);
      }
      const uint16_t n = process_host_burst(*ctx, in, kBurstSize, out);
      if (n != kBurstSize) lost += kBurstSize - n;
      for (uint16_t i = 0; i < n; ++i) {
        frame.resize(out[i]->pkt_len);
        copy_packet(out[i], frame);
        rte_pktmbuf_free(out[i]);
        Version v;
        if (!read_version(frame, v)) {
          ++invalid;
          continue;
        }
        auto it = valid.find(v);
        if (it == valid.end()) {
          ++invalid;
          continue;
        }
        ++seen[v];
        const size_t at = frame.size() - (flows[0].size() - kSeqOffset);
        const uint32_t got =
            uint32_t(frame[at]) << 24 | frame[at + 1] << 16 | frame[at + 2] << 8 | frame[at + 3];
        if (got != first_seq + i) ++reordered;
      }
      processed += n;
      worker_quiescent(*ctx);
    }
    worker_offline(*ctx);
  });

  constexpr int kApplies = 2000;
  size_t max_pending = 0;
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < kApplies; ++i) {
    auto e = gw->apply(i % 2 ? b : a);
    ASSERT_FALSE(e) << e->path << ": " << e->message;
    if (i % 7 == 0) {
      const double f = (i / 7) % 2 ? 0.25 : 1.0;
      ASSERT_FALSE(gw->set_path_factors("p", {f, 1.0}));
    }
    gw->reclaim();
    max_pending = std::max(max_pending, gw->runtime().retired_pending());
  }
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  // Let the worker run a little on the final state, then stop it.
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  stop = true;
  worker.join();
  gw->reclaim();
  EXPECT_EQ(gw->runtime().retired_pending(), 0u);

  std::printf(
      "[ metrics  ] %d applies in %.2f s (%.2f ms each) while the worker processed "
      "%llu packets; max retired objects pending %zu\n",
      kApplies, secs, secs * 1000 / kApplies, (unsigned long long)processed.load(), max_pending);
  EXPECT_EQ(lost.load(), 0u);
  EXPECT_EQ(invalid.load(), 0u);
  EXPECT_EQ(reordered.load(), 0u);
  EXPECT_GT(processed.load(), 10000u);
  // Grace periods completed while the worker ran (retirements did not pile up).
  EXPECT_LT(max_pending, 64u);
  // Both versions of the churned policies were really seen by the worker.
  unsigned versions_seen = 0;
  for (const auto& [v, count] : seen) versions_seen += count > 0;
  EXPECT_GE(versions_seen, 4u);
  const WorkerCounters& c = gw->worker_counters(0);
  for (size_t r = 0; r < size_t(DropReason::count_); ++r)
    EXPECT_EQ(c.drops[r], 0u) << to_string(DropReason(r));
  gw.reset();
  EXPECT_EQ(rte_mempool_in_use_count(pool), in_use_before);
  rte_mempool_free(pool);
}

}  // namespace
}  // namespace srv6gw::dataplane
