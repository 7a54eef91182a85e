// SPDX-License-Identifier: BSD-3-Clause
// The packet pipeline on real mbufs from an rte_pktmbuf pool (no ports): encapsulation of
// RoCEv2 over IPv4/IPv6 with VLANs, 1..16 SIDs in every encap mode (in place, and with a
// chained header segment when the headroom is short), pass-through, drops by reason,
// decapsulation for End.DX4/DX6/DT46 with RFC 6040, path counters, and no mbuf leaks.
#include <gtest/gtest.h>
#include <rte_mbuf.h>
#include <rte_mempool.h>

#include <cstdio>
#include <string>

#include "../policy/config_builder.hpp"
#include "dataplane/control/gateway.hpp"
#include "dataplane/datapath/burst.hpp"
#include "dataplane/datapath/chain.hpp"
#include "dataplane/datapath/mbuf_span.hpp"
#include "dataplane/datapath/probe.hpp"
#include "dataplane/worker_context.hpp"
#include "net/parse.hpp"
#include "packet_builder.hpp"
#include "policy/runtime.hpp"
#include "srv6/encap.hpp"
#include "srv6/probe.hpp"

namespace srv6gw::dataplane {
namespace {

using test::Bytes;
using test::RoceSpec;

const net::MacAddr kHostPortMac = testing::mac("02:00:00:00:01:01");
const net::MacAddr kFabricPortMac = testing::mac("02:00:00:00:02:02");
const net::MacAddr kNexthopMac = testing::mac("02:00:00:00:03:03");
const net::MacAddr kHostMac = testing::mac("02:00:00:00:04:04");

rte_mempool* g_pool = nullptr;      // data mbufs: default 128 B headroom, 2 KB data room
rte_mempool* g_hdr_pool = nullptr;  // chained header segments

config::GatewayConfig gateway_config(std::vector<const char*> sids,
                                     srv6::EncapMode mode = srv6::EncapMode::encaps) {
  config::GatewayConfig c = testing::base_config();
  c.fabric_nexthop_mac = kNexthopMac;
  c.host_mac = kHostMac;
  config::SegmentList sl;
  sl.name = "main";
  sl.path_id = 7;
  for (const char* s : sids) sl.sids.push_back(testing::v6(s));
  config::Policy p = testing::policy("p", config::SelectionMode::flow, {sl});
  p.encap = mode;
  c.policies.push_back(p);
  c.steering.push_back(testing::prefix_rule("10.0.0.0", 8, "p"));
  c.steering.push_back(testing::prefix_rule("fd00::", 16, "p"));
  c.local_sids = {{testing::v6("fc00:aa::d4"), srv6::LocalSidBehavior::end_dx4},
                  {testing::v6("fc00:aa::d6"), srv6::LocalSidBehavior::end_dx6},
                  {testing::v6("fc00:aa::46"), srv6::LocalSidBehavior::end_dt46}};
  return c;
}

// gateway_config() split into two rails: "a" on ports 0/1 and "b" on ports 2/3, nothing else
// per rail (tests add what they check to cfg.rails[0] / cfg.rails[1]).
config::GatewayConfig two_rail_config(std::vector<const char*> sids) {
  config::GatewayConfig c = gateway_config(std::move(sids));
  c.host_port.device.clear();
  c.fabric_port.device.clear();
  c.rails.resize(2);
  c.rails[0].name = "a";
  c.rails[0].host_port.device = "0";
  c.rails[0].fabric_port.device = "1";
  c.rails[1].name = "b";
  c.rails[1].host_port.device = "2";
  c.rails[1].fabric_port.device = "3";
  return c;
}

// The frame the gateway must send, built with the packet core directly: Ethernet to the
// next hop + the template of the policy's path with the per-packet fields + inner packet.
Bytes expected_encap(const Bytes& in_frame, const config::GatewayConfig& cfg,
                     const config::SegmentList& sl, srv6::EncapMode mode,
                     const net::MacAddr& dst_mac, const net::MacAddr& src_mac) {
  net::PacketInfo info;
  EXPECT_EQ(net::parse_frame(in_frame, info), net::ParseStatus::ok);
  srv6::TemplateSpec spec;
  spec.source = cfg.source;
  spec.sids = sl.sids;
  spec.mode = mode;
  spec.tag = sl.path_id;
  spec.hop_limit = cfg.hop_limit;
  srv6::EncapTemplate t;
  EXPECT_EQ(srv6::build_template(spec, t), srv6::BuildStatus::ok);
  Bytes out(14 + t.size);
  std::memcpy(out.data(), dst_mac.bytes.data(), 6);
  std::memcpy(out.data() + 6, src_mac.bytes.data(), 6);
  out[12] = 0x86;
  out[13] = 0xDD;
  srv6::EncapFields f;
  f.inner_len = info.l3_len;
  f.inner_proto = info.family == net::Family::ipv4 ? 4 : 41;
  f.traffic_class = uint8_t(info.dscp << 2 | info.ecn);
  f.flow_label = net::outer_flow_label(info);
  f.tag = sl.path_id;
  srv6::write_encap(t, out.data() + 14, f);
  out.insert(out.end(), in_frame.begin() + info.l3_offset,
             in_frame.begin() + info.l3_offset + info.l3_len);
  return out;
}

class PipelineTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    g_pool = rte_pktmbuf_pool_create("test_pool", 4095, 0, 0, RTE_MBUF_DEFAULT_BUF_SIZE + 512,
                                     SOCKET_ID_ANY);
    g_hdr_pool = rte_pktmbuf_pool_create("test_hdr_pool", 1023, 0, 0, RTE_PKTMBUF_HEADROOM + 512,
                                         SOCKET_ID_ANY);
    ASSERT_NE(g_pool, nullptr);
    ASSERT_NE(g_hdr_pool, nullptr);
  }
  static void TearDownTestSuite() {
    rte_mempool_free(g_pool);
    rte_mempool_free(g_hdr_pool);
  }
  void SetUp() override {
    pool_in_use_ = rte_mempool_in_use_count(g_pool);
    hdr_in_use_ = rte_mempool_in_use_count(g_hdr_pool);
  }
  void TearDown() override {
    gw_.reset();
    EXPECT_EQ(rte_mempool_in_use_count(g_pool), pool_in_use_) << "mbuf leak";
    EXPECT_EQ(rte_mempool_in_use_count(g_hdr_pool), hdr_in_use_) << "header mbuf leak";
  }

  void create(const config::GatewayConfig& cfg, bool multiseg = true) {
    PortEnv env;
    env.host_port_mac = kHostPortMac;
    env.fabric_port_mac = kFabricPortMac;
    env.fabric_multiseg_tx = multiseg;
    config::ConfigError err;
    gw_ = Gateway::create(cfg, 1, env, g_hdr_pool, err);
    ASSERT_NE(gw_, nullptr) << err.path << ": " << err.message;
    w_ = gw_->worker(0);
  }

  rte_mbuf* mbuf(const Bytes& frame, uint16_t headroom = RTE_PKTMBUF_HEADROOM) {
    rte_mbuf* m = rte_pktmbuf_alloc(g_pool);
    EXPECT_NE(m, nullptr);
    m->data_off = headroom;
    char* p = rte_pktmbuf_append(m, uint16_t(frame.size()));
    EXPECT_NE(p, nullptr);
    std::memcpy(p, frame.data(), frame.size());
    return m;
  }

  static Bytes bytes(const rte_mbuf* m) {
    Bytes b(m->pkt_len);
    copy_packet(m, b);
    return b;
  }

  // Runs one frame through a direction; returns the output frame (empty when dropped) and
  // frees the output mbuf.
  Bytes run(const Bytes& frame, bool host_side, uint16_t headroom = RTE_PKTMBUF_HEADROOM,
            uint16_t* segs = nullptr) {
    rte_mbuf* in[1] = {mbuf(frame, headroom)};
    rte_mbuf* out[1] = {nullptr};
    const uint16_t n =
        host_side ? process_host_burst(*w_, in, 1, out) : process_fabric_burst(*w_, in, 1, out);
    if (n == 0) return {};
    Bytes b = bytes(out[0]);
    if (segs) *segs = out[0]->nb_segs;
    rte_pktmbuf_free(out[0]);
    return b;
  }

  const WorkerCounters& c() const { return gw_->worker_counters(0); }

  std::unique_ptr<Gateway> gw_;
  WorkerContext* w_ = nullptr;
  unsigned pool_in_use_ = 0, hdr_in_use_ = 0;
};

TEST_F(PipelineTest, EncapIpv4RoceMatchesPacketCoreAndRfcFields) {
  auto cfg = gateway_config({"fc00:1::1", "fc00:2::1", "fc00:3::1"});
  create(cfg);
  RoceSpec s;
  s.dscp = 26;
  s.ecn = 2;
  const Bytes in = test::roce_frame(s);
  const Bytes out = run(in, true);
  ASSERT_FALSE(out.empty());
  EXPECT_EQ(out, expected_encap(in, cfg, cfg.policies[0].segment_lists[0], srv6::EncapMode::encaps,
                                kNexthopMac, kFabricPortMac));
  // Independent of the packet core: RFC 8200/8754/6040 fields read straight off the wire.
  ASSERT_EQ(out.size(), 14 + 40 + 8 + 48 + (in.size() - 14));
  EXPECT_EQ(out[14] >> 4, 6);
  EXPECT_EQ(((out[14] & 0x0F) << 4 | out[15] >> 4), 26 << 2 | 2);           // traffic class copied
  EXPECT_EQ(out[14 + 4] << 8 | out[14 + 5], 8 + 48 + int(in.size() - 14));  // payload length
  EXPECT_EQ(out[14 + 6], 43);
  EXPECT_EQ(out[14 + 7], 64);
  EXPECT_TRUE(std::equal(out.begin() + 14 + 8, out.begin() + 14 + 24,
                         testing::v6("fc00:ffff::1").bytes.begin()));
  EXPECT_TRUE(std::equal(out.begin() + 14 + 24, out.begin() + 14 + 40,
                         testing::v6("fc00:1::1").bytes.begin()));  // DA = first SID
  const uint8_t* srh = out.data() + 54;
  EXPECT_EQ(srh[0], 4);                // next header: IPv4
  EXPECT_EQ(srh[1], 6);                // hdr ext len = 2 * 3
  EXPECT_EQ(srh[2], 4);                // routing type
  EXPECT_EQ(srh[3], 2);                // segments left
  EXPECT_EQ(srh[4], 2);                // last entry
  EXPECT_EQ(srh[6] << 8 | srh[7], 7);  // tag = path id
  EXPECT_TRUE(std::equal(srh + 8, srh + 24, testing::v6("fc00:3::1").bytes.begin()));  // [0]=last
  EXPECT_TRUE(std::equal(srh + 40, srh + 56, testing::v6("fc00:1::1").bytes.begin()));
  EXPECT_TRUE(std::equal(out.begin() + 110, out.end(), in.begin() + 14));  // inner untouched
  EXPECT_EQ(c().encap, 1u);
  EXPECT_EQ(c().parse_status[size_t(net::ParseStatus::ok)], 1u);
}

TEST_F(PipelineTest, EncapIpv6RoceWithVlanTags) {
  auto cfg = gateway_config({"fc00:1::1", "fc00:2::1"});
  create(cfg);
  RoceSpec s;
  s.src = "fd00:1::1";
  s.dst = "fd00:2::2";
  s.dscp = 10;
  s.ecn = 1;
  for (const auto& [tpids, tcis] :
       std::vector<std::pair<std::vector<uint16_t>, std::vector<uint16_t>>>{
           {{}, {}}, {{0x8100}, {100}}, {{0x88A8, 0x8100}, {10, 20}}}) {
    test::L2Spec l2;
    for (size_t i = 0; i < tpids.size(); ++i) l2.tags.emplace_back(tpids[i], tcis[i]);
    const Bytes in = test::roce_frame(s, l2);
    const Bytes out = run(in, true);
    ASSERT_FALSE(out.empty()) << tpids.size() << " tags";
    EXPECT_EQ(out, expected_encap(in, cfg, cfg.policies[0].segment_lists[0],
                                  srv6::EncapMode::encaps, kNexthopMac, kFabricPortMac))
        << tpids.size() << " tags";
    EXPECT_EQ(out[12], 0x86);  // no tag left on the fabric side
    EXPECT_EQ(out[54], 41);    // SRH next header: IPv6
  }
  EXPECT_EQ(c().encap, 3u);
}

// 1/3/6/16 SIDs x encaps/encaps-red/usid: in place when the headroom allows, chained header
// segment otherwise, and always in place with a larger headroom.
TEST_F(PipelineTest, SidCountsAndModesInPlaceAndChained) {
  const char* full[16] = {"fc00:1::1", "fc00:2::1", "fc00:3::1", "fc00:4::1",
                          "fc00:5::1", "fc00:6::1", "fc00:7::1", "fc00:8::1",
                          "fc00:9::1", "fc00:a::1", "fc00:b::1", "fc00:c::1",
                          "fc00:d::1", "fc00:e::1", "fc00:f::1", "fc00:10::1"};
  const char* micro[16] = {
      "fcbb:0:1::", "fcbb:0:2::", "fcbb:0:3::", "fcbb:0:4::", "fcbb:0:5::", "fcbb:0:6::",
      "fcbb:0:7::", "fcbb:0:8::", "fcbb:0:9::", "fcbb:0:a::", "fcbb:0:b::", "fcbb:0:c::",
      "fcbb:0:d::", "fcbb:0:e::", "fcbb:0:f::", "fcbb:0:10::"};
  uint64_t chained_total = 0;
  for (srv6::EncapMode mode :
       {srv6::EncapMode::encaps, srv6::EncapMode::encaps_red, srv6::EncapMode::usid}) {
    for (unsigned n : {1u, 3u, 6u, 16u}) {
      std::vector<const char*> sids(mode == srv6::EncapMode::usid ? micro : full,
                                    (mode == srv6::EncapMode::usid ? micro : full) + n);
      auto cfg = gateway_config(sids, mode);
      create(cfg);
      uint64_t chained = 0;
      const unsigned hdr = 14 + srv6::encap_header_len(n, mode);
      for (bool v6 : {false, true}) {
        RoceSpec s;
        if (v6) {
          s.src = "fd00:1::1";
          s.dst = "fd00:2::2";
        }
        s.payload = 1024;
        const Bytes in = test::roce_frame(s);
        const Bytes want = expected_encap(in, cfg, cfg.policies[0].segment_lists[0], mode,
                                          kNexthopMac, kFabricPortMac);
        const std::string what = std::string(srv6::to_string(mode)) + " " + std::to_string(n) +
                                 " SIDs " + (v6 ? "IPv6" : "IPv4");
        uint16_t segs = 0;
        // Default headroom: the IP packet starts 14 bytes after it, so 128 + 14 are free.
        const Bytes out = run(in, true, RTE_PKTMBUF_HEADROOM, &segs);
        EXPECT_EQ(out, want) << what;
        const bool fits = hdr <= RTE_PKTMBUF_HEADROOM + 14;
        EXPECT_EQ(segs, fits ? 1 : 2) << what;
        chained += !fits;
        chained_total += !fits;
        EXPECT_EQ(gw_->worker_counters(0).chained_header, chained) << what;
        // A pool with 512 B of headroom: always in place.
        const Bytes big = run(in, true, 512, &segs);
        EXPECT_EQ(big, want) << what;
        EXPECT_EQ(segs, 1) << what;
      }
    }
  }
  EXPECT_GT(chained_total, 0u);  // 16 full SIDs need 318 B: the chained path really ran
}

TEST_F(PipelineTest, NoHeadroomWithoutMultisegAndHeaderAllocFailure) {
  std::vector<const char*> sids;
  const char* many[16] = {"fc00:1::1", "fc00:2::1", "fc00:3::1", "fc00:4::1",
                          "fc00:5::1", "fc00:6::1", "fc00:7::1", "fc00:8::1",
                          "fc00:9::1", "fc00:a::1", "fc00:b::1", "fc00:c::1",
                          "fc00:d::1", "fc00:e::1", "fc00:f::1", "fc00:10::1"};
  sids.assign(many, many + 16);
  create(gateway_config(sids), /*multiseg=*/false);
  EXPECT_TRUE(run(test::roce_frame({}), true).empty());
  EXPECT_EQ(c().drops[size_t(DropReason::no_headroom)], 1u);

  // With multi-segment TX but the header pool exhausted.
  create(gateway_config(sids), /*multiseg=*/true);
  std::vector<rte_mbuf*> hoard;
  while (rte_mbuf* h = rte_pktmbuf_alloc(g_hdr_pool)) hoard.push_back(h);
  EXPECT_TRUE(run(test::roce_frame({}), true).empty());
  EXPECT_EQ(c().drops[size_t(DropReason::header_alloc_failed)], 1u);
  for (rte_mbuf* h : hoard) rte_pktmbuf_free(h);
}

TEST_F(PipelineTest, PassThroughAndDropsByReason) {
  auto cfg = gateway_config({"fc00:1::1"});
  create(cfg);
  // ARP.
  const Bytes arp = test::ethernet({}, 0x0806, Bytes(28, 0x11));
  EXPECT_EQ(run(arp, true), arp);
  // TCP over IPv4 (protocol 6): change the protocol byte of a RoCE packet.
  Bytes tcp_ip = test::roce_ip_packet({});
  tcp_ip[9] = 6;
  tcp_ip[10] = tcp_ip[11] = 0;
  const uint16_t csum = test::inet_checksum(std::span(tcp_ip.data(), 20));
  tcp_ip[10] = uint8_t(csum >> 8);
  tcp_ip[11] = uint8_t(csum);
  const Bytes tcp = test::ethernet({}, 0x0800, tcp_ip);
  EXPECT_EQ(run(tcp, true), tcp);
  // RoCE to a destination no rule covers: miss action pass.
  RoceSpec far;
  far.dst = "192.168.1.1";
  const Bytes miss = test::roce_frame(far);
  EXPECT_EQ(run(miss, true), miss);
  EXPECT_EQ(c().passed_host_to_fabric, 3u);
  EXPECT_EQ(c().parse_status[size_t(net::ParseStatus::not_ip)], 1u);
  EXPECT_EQ(c().parse_status[size_t(net::ParseStatus::not_udp)], 1u);
  // Malformed: IPv4 total length beyond the frame.
  Bytes broken = test::roce_frame({});
  broken[14 + 2] = 0x40;
  EXPECT_TRUE(run(broken, true).empty());
  EXPECT_EQ(c().drops[size_t(DropReason::malformed)], 1u);

  // Same traffic with drop actions.
  cfg.non_roce = config::MissAction::drop;
  cfg.steering_miss = config::MissAction::drop;
  ASSERT_FALSE(gw_->apply(cfg));
  EXPECT_TRUE(run(arp, true).empty());
  EXPECT_TRUE(run(tcp, true).empty());
  EXPECT_TRUE(run(miss, true).empty());
  EXPECT_EQ(c().drops[size_t(DropReason::non_roce_dropped)], 2u);
  EXPECT_EQ(c().drops[size_t(DropReason::steering_miss)], 1u);

  // No usable path: the engine took the only list out.
  ASSERT_FALSE(gw_->set_path_factors("p", {0.0}));
  EXPECT_TRUE(run(test::roce_frame({}), true).empty());
  EXPECT_EQ(c().drops[size_t(DropReason::no_usable_path)], 1u);
  EXPECT_EQ(c().rx_host, 8u);
}

TEST_F(PipelineTest, TransparentMacAndEthernetPadding) {
  auto cfg = gateway_config({"fc00:1::1", "fc00:2::1"});
  cfg.transparent_mac = true;
  create(cfg);
  RoceSpec s;
  s.payload = 0;  // 20 + 8 + 12 + 4 = 44 byte IP packet: padded to a 60-byte frame
  test::L2Spec l2;
  const Bytes unpadded = test::roce_frame(s, l2);
  const Bytes padded = test::ethernet(l2, 0x0800, test::roce_ip_packet(s), 60);
  ASSERT_EQ(padded.size(), 60u);
  const Bytes out = run(padded, true);
  EXPECT_EQ(out,
            expected_encap(unpadded, cfg, cfg.policies[0].segment_lists[0], srv6::EncapMode::encaps,
                           net::MacAddr{l2.dst}, net::MacAddr{l2.src}));
}

TEST_F(PipelineTest, CnpFromHostIsCounted) {
  create(gateway_config({"fc00:1::1"}));
  RoceSpec s;
  s.opcode = 0x81;
  s.payload = 16;
  ASSERT_FALSE(run(test::roce_frame(s), true).empty());
  EXPECT_EQ(c().cnp_seen, 1u);
}

TEST_F(PipelineTest, PathStatsCountPerSegmentList) {
  auto cfg = gateway_config({"fc00:1::1"});
  cfg.policies[0].selection = config::SelectionMode::packet;
  cfg.policies[0].segment_lists.push_back(testing::segment_list("second", 8, 3, {"fc00:2::1"}));
  create(cfg);
  for (int i = 0; i < 40; ++i) ASSERT_FALSE(run(test::roce_frame({}), true).empty());
  auto stats = gw_->path_stats();
  ASSERT_EQ(stats.size(), 2u);
  EXPECT_EQ(stats[0].segment_list, "main");
  EXPECT_EQ(stats[0].packets, 10u);
  EXPECT_EQ(stats[1].packets, 30u);
  EXPECT_EQ(stats[1].path_id, 8);
  EXPECT_EQ(stats[1].weight_configured, 3u);
  EXPECT_GT(stats[1].bytes, 30u * 100);
  // A reordered layout starts from zero; the engine factor is reported.
  std::swap(cfg.policies[0].segment_lists[0], cfg.policies[0].segment_lists[1]);
  ASSERT_FALSE(gw_->apply(cfg));
  ASSERT_FALSE(gw_->set_path_factors("p", {0.5, 1.0}));
  stats = gw_->path_stats();
  EXPECT_EQ(stats[0].segment_list, "second");
  EXPECT_EQ(stats[0].packets, 0u);
  EXPECT_DOUBLE_EQ(stats[0].factor, 0.5);
}

// ---------------- decapsulation ----------------

Bytes fabric_frame(const Bytes& ip6) {
  test::L2Spec l2;
  l2.dst = kFabricPortMac.bytes;
  l2.src = kNexthopMac.bytes;
  return test::ethernet(l2, 0x86DD, ip6);
}

TEST_F(PipelineTest, DecapDx4Dx6Dt46) {
  create(gateway_config({"fc00:1::1"}));
  RoceSpec v4;
  v4.ecn = 2;
  RoceSpec v6;
  v6.src = "fd00:1::1";
  v6.dst = "fd00:2::2";
  v6.ecn = 1;
  const Bytes inner4 = test::roce_ip_packet(v4), inner6 = test::roce_ip_packet(v6);
  struct Case {
    const char* sid;
    uint8_t proto;
    const Bytes* inner;
  } cases[] = {{"fc00:aa::d4", 4, &inner4},
               {"fc00:aa::d6", 41, &inner6},
               {"fc00:aa::46", 4, &inner4},
               {"fc00:aa::46", 41, &inner6}};
  for (const Case& k : cases) {
    for (bool with_srh : {true, false}) {
      std::vector<const char*> srh;
      if (with_srh) srh = {"fc00:1::1", k.sid};
      const Bytes in =
          fabric_frame(test::srv6_packet("fc00:ffff::2", k.sid, 0, srh, 9, k.proto, *k.inner));
      const Bytes out = run(in, false);
      Bytes want = test::ethernet(test::L2Spec{kHostMac.bytes, kHostPortMac.bytes, {}},
                                  k.proto == 4 ? 0x0800 : 0x86DD, *k.inner);
      EXPECT_EQ(out, want) << k.sid << " srh=" << with_srh;
    }
  }
  EXPECT_EQ(c().decap, 8u);
  EXPECT_EQ(c().decap_status[size_t(srv6::DecapStatus::ok)], 8u);
}

TEST_F(PipelineTest, HostMacLearnedFromHostTrafficWhenNotConfigured) {
  config::GatewayConfig cfg = gateway_config({"fc00:1::1"});
  cfg.host_mac.reset();
  create(cfg);
  RoceSpec v4;
  const Bytes inner = test::roce_ip_packet(v4);
  const Bytes in =
      fabric_frame(test::srv6_packet("fc00:ffff::2", "fc00:aa::d4", 0, {}, 9, 4, inner));
  // Nothing learned yet: the frame keeps the destination it arrived with.
  EXPECT_EQ(
      run(in, false),
      test::ethernet(test::L2Spec{kFabricPortMac.bytes, kHostPortMac.bytes, {}}, 0x0800, inner));
  // The host speaks (any frame, here RoCE toward the fabric): its source MAC is learned.
  const net::MacAddr rnic = testing::mac("02:00:00:00:05:05");
  test::L2Spec from_host;
  from_host.src = rnic.bytes;
  ASSERT_FALSE(run(test::roce_frame(v4, from_host), true).empty());
  EXPECT_EQ(run(in, false),
            test::ethernet(test::L2Spec{rnic.bytes, kHostPortMac.bytes, {}}, 0x0800, inner));
  // A multicast source (never a host's own address) is not learned.
  test::L2Spec bogus;
  bogus.src = testing::mac("03:00:00:00:06:06").bytes;
  ASSERT_FALSE(run(test::roce_frame(v4, bogus), true).empty());
  EXPECT_EQ(run(in, false),
            test::ethernet(test::L2Spec{rnic.bytes, kHostPortMac.bytes, {}}, 0x0800, inner));
}

TEST_F(PipelineTest, DecapRfc6040AndFeedbackCounters) {
  create(gateway_config({"fc00:1::1"}));
  RoceSpec cnp;
  cnp.ecn = 2;  // ECT(0)
  cnp.opcode = 0x81;
  cnp.payload = 16;
  const Bytes inner = test::roce_ip_packet(cnp);
  // Outer CE (traffic class ECN bits 11) + an IPv4 tail of Ethernet padding.
  Bytes ip6 = test::srv6_packet("fc00:ffff::2", "fc00:aa::d4", 0x03, {"fc00:aa::d4"}, 5, 4, inner);
  ip6.insert(ip6.end(), 6, 0xEE);  // trailing bytes beyond the IPv6 payload
  const Bytes out = run(fabric_frame(ip6), false);
  ASSERT_EQ(out.size(), 14 + inner.size());  // padding trimmed
  Bytes want_ip = inner;
  want_ip[1] = uint8_t((want_ip[1] & ~3) | 3);  // inner becomes CE
  want_ip[10] = want_ip[11] = 0;
  const uint16_t csum = test::inet_checksum(std::span(want_ip.data(), 20));
  want_ip[10] = uint8_t(csum >> 8);
  want_ip[11] = uint8_t(csum);
  EXPECT_TRUE(std::equal(out.begin() + 14, out.end(), want_ip.begin()));
  EXPECT_EQ(c().outer_ce_seen, 1u);
  EXPECT_EQ(c().inner_ce_marked, 1u);
  EXPECT_EQ(c().cnp_seen, 1u);

  // CE on a not-ECT inner: dropped and counted (RFC 6040).
  RoceSpec not_ect;
  const Bytes bad = fabric_frame(test::srv6_packet(
      "fc00:ffff::2", "fc00:aa::d4", 0x03, {"fc00:aa::d4"}, 5, 4, test::roce_ip_packet(not_ect)));
  EXPECT_TRUE(run(bad, false).empty());
  EXPECT_EQ(c().decap_status[size_t(srv6::DecapStatus::ecn_ce_on_not_ect)], 1u);
  // Segments left != 0 and a DX4 SID carrying IPv6: refused.
  Bytes sl = test::srv6_packet("fc00:ffff::2", "fc00:aa::d4", 0, {"fc00:aa::d4", "fc00:1::1"}, 5, 4,
                               inner);
  sl[40 + 3] = 1;
  EXPECT_TRUE(run(fabric_frame(sl), false).empty());
  RoceSpec v6;
  v6.src = "fd00:1::1";
  v6.dst = "fd00:2::2";
  EXPECT_TRUE(run(fabric_frame(test::srv6_packet("fc00:ffff::2", "fc00:aa::d4", 0, {"fc00:aa::d4"},
                                                 5, 41, test::roce_ip_packet(v6))),
                  false)
                  .empty());
  EXPECT_EQ(c().drops[size_t(DropReason::decap_refused)], 3u);
  EXPECT_EQ(c().decap_status[size_t(srv6::DecapStatus::segments_left_nonzero)], 1u);
  EXPECT_EQ(c().decap_status[size_t(srv6::DecapStatus::bad_next_header)], 1u);
}

TEST_F(PipelineTest, FabricTrafficNotForUsPassesOrDrops) {
  auto cfg = gateway_config({"fc00:1::1"});
  create(cfg);
  const Bytes other_sid = fabric_frame(test::srv6_packet(
      "fc00:ffff::2", "fc00:bb::1", 0, {"fc00:bb::1"}, 5, 4, test::roce_ip_packet({})));
  const Bytes arp = test::ethernet({}, 0x0806, Bytes(28, 0x22));
  EXPECT_EQ(run(other_sid, false), other_sid);
  EXPECT_EQ(run(arp, false), arp);
  EXPECT_EQ(c().passed_fabric_to_host, 2u);
  EXPECT_TRUE(run(Bytes(10, 0), false).empty());  // runt
  EXPECT_EQ(c().drops[size_t(DropReason::malformed)], 1u);
  cfg.fabric_non_sid = config::MissAction::drop;
  ASSERT_FALSE(gw_->apply(cfg));
  EXPECT_TRUE(run(other_sid, false).empty());
  EXPECT_EQ(c().drops[size_t(DropReason::non_sid_dropped)], 1u);
  // Transparent mode keeps the fabric frame's MACs on the decapsulated frame.
  cfg.transparent_mac = true;
  ASSERT_FALSE(gw_->apply(cfg));
  const Bytes inner = test::roce_ip_packet({});
  const Bytes in = fabric_frame(
      test::srv6_packet("fc00:ffff::2", "fc00:aa::d4", 0, {"fc00:aa::d4"}, 5, 4, inner));
  const Bytes out = run(in, false);
  ASSERT_EQ(out.size(), 14 + inner.size());
  EXPECT_TRUE(std::equal(out.begin(), out.begin() + 12, in.begin()));
}

TEST_F(PipelineTest, BurstOfMixedTrafficKeepsOrderAndFreesDrops) {
  auto cfg = gateway_config({"fc00:1::1", "fc00:2::1"});
  cfg.non_roce = config::MissAction::drop;
  create(cfg);
  rte_mbuf* in[kBurstSize];
  rte_mbuf* out[kBurstSize];
  for (unsigned i = 0; i < kBurstSize; ++i) {
    RoceSpec s;
    s.payload_tag = i;
    s.dest_qp = i;
    in[i] = i % 4 == 3 ? mbuf(test::ethernet({}, 0x0806, Bytes(28, 0))) : mbuf(test::roce_frame(s));
  }
  const uint16_t n = process_host_burst(*w_, in, kBurstSize, out);
  EXPECT_EQ(n, kBurstSize - kBurstSize / 4);
  for (uint16_t i = 0; i < n; ++i) {
    const Bytes b = bytes(out[i]);
    // Inner payload tag after eth(14) + ipv6(40) + srh(8 + 32) + ipv4(20) + udp(8) + bth(12).
    const size_t at = 14 + 40 + 40 + 20 + 8 + 12;
    const uint32_t tag = uint32_t(b[at]) << 24 | b[at + 1] << 16 | b[at + 2] << 8 | b[at + 3];
    EXPECT_EQ(tag, i + i / 3) << i;
    rte_pktmbuf_free(out[i]);
  }
}

// ---- The last flow's classification (datapath/flow_cache.hpp) ----

// Two policies (exact, DSCP, dst-any, prefix rules) and a steering miss, so that runs of one
// flow and changes of flow move between slots.
config::GatewayConfig flow_cache_config() {
  auto cfg = gateway_config({"fc00:1::1", "fc00:2::1"});
  config::SegmentList a = testing::segment_list("a", 21, 1, {"fc00:21::1"});
  config::SegmentList b = testing::segment_list("b", 22, 1, {"fc00:22::1"});
  cfg.policies.push_back(testing::policy("q", config::SelectionMode::flow, {a, b}));
  cfg.steering.push_back(testing::exact_rule("10.0.1.1", 0x100, "q"));
  cfg.steering.push_back(testing::exact_rule("10.0.1.1", 0x101, "q", uint8_t(26)));
  cfg.steering.push_back(testing::dst_rule("fd00:1::2", "q"));
  return cfg;
}

// Frames in runs of one flow (1..40 packets), flows differing in each field the cache keys
// on, CNPs, VLAN tags, non-RoCE and malformed frames in between. Deterministic.
std::vector<Bytes> flow_runs(size_t count) {
  struct Flow {
    const char* src;
    const char* dst;
    uint8_t dscp;
    uint16_t sport;
    uint32_t qp;
  };
  static const Flow kFlows[] = {
      {"10.0.0.1", "10.0.1.1", 0, 49152, 0x100},    {"10.0.0.1", "10.0.1.1", 0, 49152, 0x101},
      {"10.0.0.1", "10.0.1.1", 26, 49152, 0x101},   {"10.0.0.2", "10.0.1.1", 0, 49152, 0x100},
      {"10.0.0.1", "10.0.1.1", 0, 49153, 0x100},    {"10.0.0.1", "10.0.1.2", 0, 49152, 0x100},
      {"10.0.0.1", "192.168.0.1", 0, 49152, 0x100}, {"fd00::1", "fd00:1::2", 0, 49152, 0x100},
      {"fd00::1", "fd00:1::3", 0, 49152, 0x100},    {"fd00::2", "fd00:1::2", 26, 50000, 0x7},
  };
  std::vector<Bytes> frames;
  uint64_t rng = 12345;
  auto next = [&rng](uint64_t bound) {
    rng = rng * 6364136223846793005ull + 1442695040888963407ull;
    return (rng >> 33) % bound;
  };
  uint32_t psn = 0;
  while (frames.size() < count) {
    const Flow& f = kFlows[next(std::size(kFlows))];
    const size_t run = 1 + next(40);
    const bool vlan = next(4) == 0;
    for (size_t i = 0; i < run && frames.size() < count; ++i) {
      RoceSpec s;
      s.src = f.src;
      s.dst = f.dst;
      s.dscp = f.dscp;
      s.sport = f.sport;
      s.dest_qp = f.qp;
      s.psn = ++psn;
      s.payload_tag = psn;
      s.ecn = uint8_t(next(4));
      s.opcode = next(16) == 0 ? 0x81 : 0x07;  // a CNP now and then
      test::L2Spec l2;
      if (vlan) l2.tags = {{0x8100, 100}};
      Bytes frame = test::roce_frame(s, l2);
      const uint64_t kind = next(32);
      if (kind == 0) frame = test::ethernet({}, 0x0806, Bytes(28, 0));  // non-RoCE
      if (kind == 1) frame.resize(14 + 20 + 8 + 4);                     // malformed
      frames.push_back(std::move(frame));
    }
  }
  return frames;
}

TEST_F(PipelineTest, CachedClassificationMatchesUncachedOnRunsOfFlows) {
  const auto cfg = flow_cache_config();
  create(cfg);
  PortEnv env;
  env.host_port_mac = kHostPortMac;
  env.fabric_port_mac = kFabricPortMac;
  env.fabric_multiseg_tx = true;
  config::ConfigError err;
  auto uncached_gw = Gateway::create(cfg, 1, env, g_hdr_pool, err);
  ASSERT_NE(uncached_gw, nullptr) << err.message;
  WorkerContext* uncached = uncached_gw->worker(0);
  uncached->flow_cache = false;
  ASSERT_TRUE(w_->flow_cache);
  // One clock for both workers, so that their recent-path tables can be compared exactly.
  w_->fixed_tsc = uncached->fixed_tsc = uint64_t(1) << 32;

  const std::vector<Bytes> frames = flow_runs(2000);
  size_t at = 0, burst_index = 0;
  while (at < frames.size()) {
    // Bursts of varying sizes, so runs cross burst boundaries at many places.
    const size_t n = std::min<size_t>(1 + (burst_index++ * 7) % kBurstSize, frames.size() - at);
    std::vector<Bytes> outputs[2];
    WorkerContext* workers[2] = {w_, uncached};
    for (int k = 0; k < 2; ++k) {
      rte_mbuf* in[kBurstSize];
      rte_mbuf* out[kBurstSize];
      for (size_t i = 0; i < n; ++i) in[i] = mbuf(frames[at + i]);
      const uint16_t n_out = process_host_burst(*workers[k], in, uint16_t(n), out);
      for (uint16_t i = 0; i < n_out; ++i) {
        outputs[k].push_back(bytes(out[i]));
        rte_pktmbuf_free(out[i]);
      }
    }
    ASSERT_EQ(outputs[0], outputs[1]) << "burst at frame " << at;
    at += n;
  }
  const WorkerCounters& a = counters(*w_);
  const WorkerCounters& b = counters(*uncached);
  EXPECT_GT(a.encap, 1000u);
  EXPECT_GT(a.passed_host_to_fabric, 0u);  // the steering misses
  EXPECT_EQ(a.encap, b.encap);
  EXPECT_EQ(a.passed_host_to_fabric, b.passed_host_to_fabric);
  EXPECT_EQ(a.cnp_seen, b.cnp_seen);
  EXPECT_EQ(a.drops, b.drops);
  EXPECT_EQ(a.parse_status, b.parse_status);
  const uint32_t slots = gw_->runtime().slot_capacity();
  for (size_t i = 0; i < size_t(slots) * policy::kMaxPaths; ++i) {
    EXPECT_EQ(w_->path_counters[i].packets, uncached->path_counters[i].packets) << i;
    EXPECT_EQ(w_->path_counters[i].bytes, uncached->path_counters[i].bytes) << i;
  }
  // The recent-path tap: notes added per run of a shared class (cached worker) give the
  // table that one note per packet (uncached worker) gives.
  size_t used = 0;
  for (unsigned i = 0; i < kRecentEntries; ++i) {
    const RecentPathEntry& x = w_->recent[i];
    const RecentPathEntry& y = uncached->recent[i];
    constexpr auto R = std::memory_order_relaxed;
    used += x.key.load(R) != 0;
    ASSERT_EQ(x.key.load(R), y.key.load(R)) << i;
    ASSERT_EQ(x.slot.load(R), y.slot.load(R)) << i;
    ASSERT_EQ(x.epoch.load(R), y.epoch.load(R)) << i;
    ASSERT_EQ(x.paths.load(R), y.paths.load(R)) << i;
    for (unsigned k = 0; k < kRecentWays; ++k) {
      ASSERT_EQ(x.cur[k].load(R), y.cur[k].load(R)) << i << " way " << k;
      ASSERT_EQ(x.prev[k].load(R), y.prev[k].load(R)) << i << " way " << k;
    }
  }
  EXPECT_GT(used, 5u);
}

// The compare is a cost switch (flow_cache.hpp, runs_worth_comparing): a burst whose every
// packet is a new flow turns it off, a run of one flow turns it back on; the outputs are
// those of the uncached worker either way (CachedClassificationMatchesUncachedOnRunsOfFlows).
TEST_F(PipelineTest, FlowCompareStopsOnChangingFlowsAndResumesOnARun) {
  create(flow_cache_config());
  auto burst = [&](bool one_flow) {
    rte_mbuf* in[kBurstSize];
    rte_mbuf* out[kBurstSize];
    for (uint32_t i = 0; i < kBurstSize; ++i) {
      RoceSpec s;
      s.dst = "10.0.1.9";
      s.dest_qp = one_flow ? 0x55 : 0x1000 + i;
      in[i] = mbuf(test::roce_frame(s));
    }
    const uint16_t n = process_host_burst(*w_, in, kBurstSize, out);
    EXPECT_EQ(n, kBurstSize);
    for (uint16_t i = 0; i < n; ++i) rte_pktmbuf_free(out[i]);
  };
  EXPECT_TRUE(w_->last_flow.compare);
  burst(false);
  EXPECT_FALSE(w_->last_flow.compare);
  burst(false);
  EXPECT_FALSE(w_->last_flow.compare);
  burst(true);
  EXPECT_TRUE(w_->last_flow.compare);
  burst(true);
  EXPECT_TRUE(w_->last_flow.compare);
  EXPECT_EQ(counters(*w_).encap, 4u * kBurstSize);
}

TEST_F(PipelineTest, CachedFlowFollowsTheNextPublishedSteering) {
  auto cfg = flow_cache_config();
  create(cfg);
  RoceSpec s;
  s.dst = "10.0.1.9";
  s.dest_qp = 0x55;
  const Bytes frame = test::roce_frame(s);
  // The outer destination: the first SID of the path the flow was steered to.
  auto first_sid = [&] {
    rte_mbuf* in[1] = {mbuf(frame)};
    rte_mbuf* out[1];
    EXPECT_EQ(process_host_burst(*w_, in, 1, out), 1);
    const Bytes b = bytes(out[0]);
    rte_pktmbuf_free(out[0]);
    return net::IpAddr::v6(net::Ipv6Addr{[&] {
      std::array<uint8_t, 16> a{};
      std::copy(b.begin() + 14 + 24, b.begin() + 14 + 40, a.begin());
      return a;
    }()});
  };
  EXPECT_EQ(first_sid(), testing::ip("fc00:1::1"));  // the prefix rule: policy p
  EXPECT_TRUE(w_->last_flow.valid);
  cfg.steering.push_back(testing::exact_rule("10.0.1.9", 0x55, "q"));
  ASSERT_FALSE(gw_->apply(cfg).has_value());
  const net::IpAddr now = first_sid();  // same flow, right after: policy q
  EXPECT_TRUE(now == testing::ip("fc00:21::1") || now == testing::ip("fc00:22::1"));
  cfg.steering.pop_back();
  ASSERT_FALSE(gw_->apply(cfg).has_value());
  EXPECT_EQ(first_sid(), testing::ip("fc00:1::1"));
}

// Two rails, one shared policy and steering table: rail 1's worker writes its own outer
// source (rail 0 keeps the gateway's), each uses its rail's next-hop and host MACs and port
// MACs, and a rail's local SID is decapsulated on that rail only (the shared one on both).
TEST_F(PipelineTest, RailsHaveTheirOwnSourceMacsAndSids) {
  config::GatewayConfig cfg = two_rail_config({"fc00:1::1"});
  const net::MacAddr nexthop1 = testing::mac("02:00:00:00:13:13");
  const net::MacAddr host1 = testing::mac("02:00:00:00:14:14");
  config::Rail &r0 = cfg.rails[0], &r1 = cfg.rails[1];
  r0.local_sids = {{testing::v6("fc00:a::46"), srv6::LocalSidBehavior::end_dt46}};
  r1.source = testing::v6("fc00:b::1");
  r1.fabric_nexthop_mac = nexthop1;
  r1.host_mac = host1;
  r1.local_sids = {{testing::v6("fc00:b::46"), srv6::LocalSidBehavior::end_dt46}};
  RailEnv envs[2];
  envs[0].ports = {kHostPortMac, kFabricPortMac, true};
  envs[1].ports = {testing::mac("02:00:00:00:11:11"), testing::mac("02:00:00:00:12:12"), true};
  config::ConfigError err;
  gw_ = Gateway::create(cfg, envs, g_hdr_pool, err);
  ASSERT_NE(gw_, nullptr) << err.path << ": " << err.message;
  ASSERT_EQ(gw_->worker_count(), 2u);
  EXPECT_EQ(gw_->worker_rail(0), 0u);
  EXPECT_EQ(gw_->worker_rail(1), 1u);

  const Bytes in = test::roce_frame(RoceSpec{});
  w_ = gw_->worker(0);
  const Bytes out0 = run(in, true);
  w_ = gw_->worker(1);
  const Bytes out1 = run(in, true);
  ASSERT_FALSE(out0.empty());
  ASSERT_FALSE(out1.empty());
  EXPECT_EQ(out0, expected_encap(in, cfg, cfg.policies[0].segment_lists[0], srv6::EncapMode::encaps,
                                 kNexthopMac, kFabricPortMac));
  config::GatewayConfig rail1_view = cfg;
  rail1_view.source = *r1.source;
  EXPECT_EQ(out1, expected_encap(in, rail1_view, cfg.policies[0].segment_lists[0],
                                 srv6::EncapMode::encaps, nexthop1, envs[1].ports.fabric_port_mac));

  const Bytes inner = test::roce_ip_packet(RoceSpec{});
  auto to_sid = [&](const char* sid) {
    return fabric_frame(test::srv6_packet("fc00:ffff::2", sid, 0, {}, 9, 4, inner));
  };
  // Rail 1 (w_ = worker 1): its SID and the shared one decapsulate, rail 0's does not.
  EXPECT_EQ(run(to_sid("fc00:b::46"), false),
            test::ethernet(test::L2Spec{host1.bytes, envs[1].ports.host_port_mac.bytes, {}}, 0x0800,
                           inner));
  EXPECT_FALSE(run(to_sid("fc00:aa::46"), false).empty());
  const Bytes foreign = to_sid("fc00:a::46");
  EXPECT_EQ(run(foreign, false), foreign);  // fabric-non-sid pass: not ours on this rail
  EXPECT_EQ(gw_->worker_counters(1).decap, 2u);
  EXPECT_EQ(gw_->worker_counters(1).passed_fabric_to_host, 1u);
  // Rail 0: its own SID decapsulates toward its host MAC.
  w_ = gw_->worker(0);
  EXPECT_EQ(run(to_sid("fc00:a::46"), false),
            test::ethernet(test::L2Spec{kHostMac.bytes, kHostPortMac.bytes, {}}, 0x0800, inner));
  EXPECT_EQ(run(to_sid("fc00:b::46"), false), to_sid("fc00:b::46"));
  EXPECT_EQ(c().decap, 1u);

  // Ports, queues, source and MTUs of a rail are set up at start: an apply that changes them
  // is refused naming the leaf, the running state kept.
  config::GatewayConfig changed = cfg;
  changed.rails[1].queues = 2;
  auto e = gw_->apply(changed);
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(e->path, "/srv6gw:gateway/rails/rail[name='b']/queues");
  changed = cfg;
  changed.rails[0].source = testing::v6("fc00:a::1");
  e = gw_->apply(changed);
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(e->path, "/srv6gw:gateway/rails/rail[name='a']/source-address");
  changed = cfg;
  changed.rails.pop_back();
  e = gw_->apply(changed);
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(e->path, "/srv6gw:gateway/rails/rail[name='b']");
  EXPECT_EQ(gw_->apply(cfg), std::nullopt);

  // What the published configuration holds (MACs, fabric VLAN, local SIDs) changes at runtime.
  changed = cfg;
  const net::MacAddr host1_new = testing::mac("02:00:00:00:15:15");
  changed.rails[1].host_mac = host1_new;
  changed.rails[1].local_sids = {{testing::v6("fc00:b::47"), srv6::LocalSidBehavior::end_dt46}};
  changed.rails[1].fabric_port.vlan = {true, 300, {}, config::HostVlanMode::strip};
  ASSERT_EQ(gw_->apply(changed), std::nullopt);
  w_ = gw_->worker(1);
  EXPECT_EQ(run(to_sid("fc00:b::47"), false),
            test::ethernet(test::L2Spec{host1_new.bytes, envs[1].ports.host_port_mac.bytes, {}},
                           0x0800, inner));
  EXPECT_EQ(run(to_sid("fc00:b::46"), false), to_sid("fc00:b::46"));  // no longer ours
  const Bytes tagged = run(in, true);
  ASSERT_GE(tagged.size(), 16u);
  EXPECT_EQ(tagged[12], 0x81);  // TPID 0x8100, VLAN 300 on rail b only
  EXPECT_EQ(tagged[13], 0x00);
  EXPECT_EQ((tagged[14] << 8 | tagged[15]) & 0x0FFF, 300);
  w_ = gw_->worker(0);
  EXPECT_EQ(run(in, true), out0);
}

// A policy scoped to rails (policy/rails) is applied on those rails only: on another rail a
// packet matching a rule to it takes the steering-miss action (pass, then drop) and is
// counted as steering_off_rail; re-scoping it at runtime takes effect on the next packet.
// Two policies for the same destination address (different QPs), one per rail: each rail's
// packets get their own policy's SIDs and the other rail's are a miss.
TEST_F(PipelineTest, PolicyScopedToOneRailIsAMissOnTheOther) {
  config::GatewayConfig cfg = two_rail_config({"fc00:1::1"});
  cfg.policies[0].rails = {"b"};
  RailEnv envs[2];
  envs[0].ports = {kHostPortMac, kFabricPortMac, true};
  envs[1].ports = {kHostPortMac, kFabricPortMac, true};
  config::ConfigError err;
  gw_ = Gateway::create(cfg, envs, g_hdr_pool, err);
  ASSERT_NE(gw_, nullptr) << err.path << ": " << err.message;
  ASSERT_EQ(gw_->worker_count(), 2u);

  const Bytes in = test::roce_frame(RoceSpec{});
  const Bytes encapsulated = expected_encap(in, cfg, cfg.policies[0].segment_lists[0],
                                            srv6::EncapMode::encaps, kNexthopMac, kFabricPortMac);
  w_ = gw_->worker(0);  // rail a: p is not on it, miss action pass
  EXPECT_EQ(run(in, true), in);
  EXPECT_EQ(gw_->worker_counters(0).steering_off_rail, 1u);
  EXPECT_EQ(gw_->worker_counters(0).passed_host_to_fabric, 1u);
  EXPECT_EQ(gw_->worker_counters(0).encap, 0u);
  w_ = gw_->worker(1);  // rail b
  EXPECT_EQ(run(in, true), encapsulated);
  EXPECT_EQ(gw_->worker_counters(1).encap, 1u);
  EXPECT_EQ(gw_->worker_counters(1).steering_off_rail, 0u);

  // Miss action drop: dropped as steering_miss, still counted as off-rail.
  cfg.steering_miss = config::MissAction::drop;
  ASSERT_EQ(gw_->apply(cfg), std::nullopt);
  w_ = gw_->worker(0);
  EXPECT_TRUE(run(in, true).empty());
  EXPECT_EQ(gw_->worker_counters(0).drops[size_t(DropReason::steering_miss)], 1u);
  EXPECT_EQ(gw_->worker_counters(0).steering_off_rail, 2u);

  // Re-scoped to rail a at runtime: rail a encapsulates, rail b misses.
  cfg.policies[0].rails = {"a"};
  ASSERT_EQ(gw_->apply(cfg), std::nullopt);
  EXPECT_EQ(run(in, true), encapsulated);
  w_ = gw_->worker(1);
  EXPECT_TRUE(run(in, true).empty());
  EXPECT_EQ(gw_->worker_counters(1).steering_off_rail, 1u);

  // Both rails named, or none: every rail encapsulates.
  cfg.policies[0].rails = {"b", "a"};
  ASSERT_EQ(gw_->apply(cfg), std::nullopt);
  EXPECT_EQ(run(in, true), encapsulated);
  cfg.policies[0].rails.clear();
  ASSERT_EQ(gw_->apply(cfg), std::nullopt);
  EXPECT_EQ(run(in, true), encapsulated);

  // One destination, a policy per rail (the rules differ by QP: one table, one value per key).
  config::SegmentList sa = cfg.policies[0].segment_lists[0], sb = sa;
  sa.name = "via-a";
  sa.path_id = 21;
  sa.sids = {testing::v6("fc00:a1::1")};
  sb.name = "via-b";
  sb.path_id = 22;
  sb.sids = {testing::v6("fc00:b1::1")};
  config::Policy pa = testing::policy("pa", config::SelectionMode::flow, {sa});
  config::Policy pb = testing::policy("pb", config::SelectionMode::flow, {sb});
  pa.rails = {"a"};
  pb.rails = {"b"};
  cfg.policies.push_back(pa);
  cfg.policies.push_back(pb);
  RoceSpec qa, qb;
  qa.dest_qp = 0x101;
  qb.dest_qp = 0x202;
  const Bytes in_a = test::roce_frame(qa), in_b = test::roce_frame(qb);
  cfg.steering.push_back(testing::exact_rule(qa.dst, qa.dest_qp, "pa"));
  cfg.steering.push_back(testing::exact_rule(qb.dst, qb.dest_qp, "pb"));
  ASSERT_EQ(gw_->apply(cfg), std::nullopt);
  w_ = gw_->worker(0);
  EXPECT_EQ(run(in_a, true),
            expected_encap(in_a, cfg, sa, srv6::EncapMode::encaps, kNexthopMac, kFabricPortMac));
  EXPECT_TRUE(run(in_b, true).empty());  // pb is rail b's
  w_ = gw_->worker(1);
  EXPECT_EQ(run(in_b, true),
            expected_encap(in_b, cfg, sb, srv6::EncapMode::encaps, kNexthopMac, kFabricPortMac));
  EXPECT_TRUE(run(in_a, true).empty());  // pa is rail a's
}

// ---- Fabric VLAN, MTU and chained frames (docs/design/vlan-jumbo.md) ----

// Segment sizes for a `total`-byte frame: `head` first, then full 2560-byte segments (the
// test pool's data room), and a last segment of `last` bytes when non-zero.
std::vector<uint16_t> segment_sizes(size_t total, std::vector<uint16_t> head, size_t last = 0) {
  size_t mid = total - last;
  for (uint16_t h : head) mid -= h;
  while (mid > 0) {
    const size_t n = std::min<size_t>(mid, 2560);
    head.push_back(uint16_t(n));
    mid -= n;
  }
  if (last) head.push_back(uint16_t(last));
  return head;
}

// `frame` as a chain of segments of segment_sizes(frame.size(), head, last).
rte_mbuf* chain_of(const Bytes& frame, std::vector<uint16_t> head, size_t last = 0) {
  rte_mbuf* chain = nullptr;
  size_t at = 0;
  for (const uint16_t n : segment_sizes(frame.size(), std::move(head), last)) {
    rte_mbuf* seg = rte_pktmbuf_alloc(g_pool);
    EXPECT_NE(seg, nullptr);
    char* p = rte_pktmbuf_append(seg, n);
    EXPECT_NE(p, nullptr) << "segment of " << n << " bytes";
    std::memcpy(p, frame.data() + at, n);
    at += n;
    if (chain == nullptr)
      chain = seg;
    else
      EXPECT_EQ(rte_pktmbuf_chain(chain, seg), 0);
  }
  return chain;
}

Bytes chain_bytes(const rte_mbuf* m) {
  Bytes b(m->pkt_len);
  EXPECT_EQ(copy_packet(m, b), m->pkt_len);
  return b;
}

// The frame with an 802.1Q tag (TCI `tci`) inserted after the MAC addresses.
Bytes with_tag(Bytes frame, uint16_t tci) {
  const uint8_t tag[4] = {0x81, 0x00, uint8_t(tci >> 8), uint8_t(tci)};
  frame.insert(frame.begin() + 12, tag, tag + 4);
  return frame;
}

TEST_F(PipelineTest, PullUpAndTrimOnChains) {
  Bytes frame(3000);
  for (size_t i = 0; i < frame.size(); ++i) frame[i] = uint8_t(i * 13 + 1);
  // A short first segment takes bytes from the next ones; an emptied segment is freed.
  rte_mbuf* m = chain_of(frame, {60, 100, 1000});
  ASSERT_EQ(m->nb_segs, 4);  // 60, 100, 1000, 1840
  pull_up_headers(m);
  EXPECT_EQ(m->data_len, kChainHeaderBytes);
  EXPECT_EQ(m->nb_segs, 3);
  EXPECT_EQ(m->pkt_len, frame.size());
  EXPECT_EQ(chain_bytes(m), frame);
  // Cut inside the third segment, then exactly at the end of the first.
  trim_packet(m, 2000);
  EXPECT_EQ(m->nb_segs, 3);
  EXPECT_EQ(chain_bytes(m), Bytes(frame.begin(), frame.begin() + 2000));
  trim_packet(m, kChainHeaderBytes);
  EXPECT_EQ(m->nb_segs, 1);
  EXPECT_EQ(rte_pktmbuf_lastseg(m), m);
  EXPECT_EQ(chain_bytes(m), Bytes(frame.begin(), frame.begin() + kChainHeaderBytes));
  rte_pktmbuf_free(m);
  // A chain shorter than the pull-up bound ends as one segment.
  m = chain_of(Bytes(frame.begin(), frame.begin() + 200), {50, 50});
  pull_up_headers(m);
  EXPECT_EQ(m->nb_segs, 1);
  EXPECT_EQ(chain_bytes(m), Bytes(frame.begin(), frame.begin() + 200));
  rte_pktmbuf_free(m);
}

TEST_F(PipelineTest, FabricVlanTagCarriesMappedPcp) {
  auto cfg = gateway_config({"fc00:1::1", "fc00:2::1"});
  cfg.fabric_port.vlan.enabled = true;
  cfg.fabric_port.vlan.id = 100;
  cfg.fabric_port.vlan.dscp_pcp = {{46, 6}};  // override; DSCP 26 keeps the default 26 >> 3
  create(cfg);
  for (const auto& [dscp, pcp] :
       std::vector<std::pair<uint8_t, uint16_t>>{{26, 3}, {46, 6}, {0, 0}}) {
    RoceSpec s;
    s.dscp = dscp;
    s.ecn = 1;
    const Bytes in = test::roce_frame(s);
    const Bytes out = run(in, true);
    const Bytes untagged = expected_encap(in, cfg, cfg.policies[0].segment_lists[0],
                                          srv6::EncapMode::encaps, kNexthopMac, kFabricPortMac);
    EXPECT_EQ(out, with_tag(untagged, uint16_t(pcp << 13 | 100))) << "dscp " << int(dscp);
  }
  EXPECT_EQ(c().fabric_vlan_tagged_out, 3u);
  EXPECT_EQ(c().encap, 3u);
  // Off again (published at runtime): untagged, not counted.
  cfg.fabric_port.vlan = {};
  ASSERT_FALSE(gw_->apply(cfg));
  const Bytes in = test::roce_frame({});
  EXPECT_EQ(run(in, true), expected_encap(in, cfg, cfg.policies[0].segment_lists[0],
                                          srv6::EncapMode::encaps, kNexthopMac, kFabricPortMac));
  EXPECT_EQ(c().fabric_vlan_tagged_out, 3u);
}

TEST_F(PipelineTest, TaggedFabricFramesDecapStripOrKeep) {
  auto cfg = gateway_config({"fc00:1::1"});
  create(cfg);  // no fabric-vlan configured: tagged frames to our SIDs are still accepted
  const Bytes inner = test::roce_ip_packet({});
  const Bytes ip6 = test::srv6_packet("fc00:ffff::2", "fc00:aa::d4", 0,
                                      {"fc00:1::1", "fc00:aa::d4"}, 9, 4, inner);
  const uint16_t tci = 5 << 13 | 100;
  const Bytes tagged = with_tag(fabric_frame(ip6), tci);
  const Bytes host_frame =
      test::ethernet(test::L2Spec{kHostMac.bytes, kHostPortMac.bytes, {}}, 0x0800, inner);
  EXPECT_EQ(run(tagged, false), host_frame);
  EXPECT_EQ(c().fabric_vlan_tagged_in, 1u);

  cfg.fabric_port.vlan.enabled = true;
  cfg.fabric_port.vlan.id = 100;
  cfg.fabric_port.vlan.host = config::HostVlanMode::keep;
  ASSERT_FALSE(gw_->apply(cfg));
  EXPECT_EQ(run(tagged, false), with_tag(host_frame, tci));  // the tag as received
  EXPECT_EQ(run(fabric_frame(ip6), false), host_frame);      // untagged in: untagged out
  // QinQ: the outer (802.1ad) tag is the one kept.
  test::L2Spec qinq{kFabricPortMac.bytes, kNexthopMac.bytes, {{0x88A8, 7}, {0x8100, tci}}};
  Bytes want = host_frame;
  const uint8_t stag[4] = {0x88, 0xA8, 0, 7};
  want.insert(want.begin() + 12, stag, stag + 4);
  EXPECT_EQ(run(test::ethernet(qinq, 0x86DD, ip6), false), want);
  EXPECT_EQ(c().fabric_vlan_tagged_in, 3u);
  EXPECT_EQ(c().decap, 4u);
}

// 9000-byte RoCEv2 IP packets in chains (a short first segment, and full ones as a NIC
// scatters) through encap and decap, byte-exact; without a configured MTU they stay refused.
TEST_F(PipelineTest, JumboChainsEncapAndDecapByteExact) {
  auto cfg = gateway_config({"fc00:1::1", "fc00:2::1"});
  cfg.host_port.mtu = 9000;
  cfg.fabric_port.mtu = 9100;
  create(cfg);
  RoceSpec s;
  s.payload = 9000 - 20 - 8 - 12 - 4;
  s.dscp = 26;
  const Bytes in = test::roce_frame(s);
  ASSERT_EQ(in.size(), 14u + 9000);
  const Bytes want = expected_encap(in, cfg, cfg.policies[0].segment_lists[0],
                                    srv6::EncapMode::encaps, kNexthopMac, kFabricPortMac);
  const Bytes inner = test::roce_ip_packet(s);
  const Bytes fabric_in = fabric_frame(test::srv6_packet(
      "fc00:ffff::2", "fc00:aa::46", 0, {"fc00:1::1", "fc00:aa::46"}, 9, 4, inner));
  const Bytes host_out =
      test::ethernet(test::L2Spec{kHostMac.bytes, kHostPortMac.bytes, {}}, 0x0800, inner);
  unsigned n = 0;
  for (const std::vector<uint16_t>& sizes :
       {std::vector<uint16_t>{40, 2000}, std::vector<uint16_t>{}}) {
    rte_mbuf* pkts[1] = {chain_of(in, sizes)};
    rte_mbuf* out[1] = {nullptr};
    ASSERT_EQ(process_host_burst(*w_, pkts, 1, out), 1);
    EXPECT_EQ(chain_bytes(out[0]), want) << "encap, " << sizes.size() << " head sizes";
    rte_pktmbuf_free(out[0]);
    // Decap, also with Ethernet trailer bytes after the IP packet spread over the last two
    // segments (cut across segments).
    for (const size_t trailer : {size_t(0), size_t(70)}) {
      Bytes f = fabric_in;
      f.resize(f.size() + trailer, 0xEE);
      pkts[0] = chain_of(f, sizes, trailer ? 30 : 0);
      ASSERT_EQ(process_fabric_burst(*w_, pkts, 1, out), 1);
      EXPECT_EQ(chain_bytes(out[0]), host_out)
          << "decap, " << sizes.size() << " head sizes, trailer " << trailer;
      rte_pktmbuf_free(out[0]);
      ++n;
    }
  }
  EXPECT_EQ(c().encap, 2u);
  EXPECT_EQ(c().decap, n);
  EXPECT_EQ(c().chained_in, 2u + n);
  EXPECT_EQ(c().drops[size_t(DropReason::oversize)], 0u);

  // No MTU configured: today's behaviour, chains refused as oversize on both sides.
  cfg.host_port.mtu = 0;
  cfg.fabric_port.mtu = 0;
  ASSERT_FALSE(gw_->apply(cfg));
  rte_mbuf* pkts[2] = {chain_of(in, {2560, 2560}), chain_of(fabric_in, {2560, 2560})};
  rte_mbuf* out[1] = {nullptr};
  EXPECT_EQ(process_host_burst(*w_, pkts, 1, out), 0);
  EXPECT_EQ(process_fabric_burst(*w_, pkts + 1, 1, out), 0);
  EXPECT_EQ(c().drops[size_t(DropReason::oversize)], 2u);
}

TEST_F(PipelineTest, MtuChecksDropTooBigOnBothPorts) {
  auto cfg = gateway_config({"fc00:1::1", "fc00:2::1"});  // 40 + 8 + 32 = 80 bytes of encap
  cfg.host_port.mtu = 1500;
  cfg.fabric_port.mtu = 1500;
  create(cfg);
  RoceSpec s;
  s.payload = 1420 - 44;  // 1420-byte IP packet: 1500 with the encap
  EXPECT_FALSE(run(test::roce_frame(s), true).empty());
  s.payload += 1;  // 1501 outer
  EXPECT_TRUE(run(test::roce_frame(s), true).empty());
  s.payload = 1501 - 44;  // above the host MTU itself
  EXPECT_TRUE(run(test::roce_frame(s), true).empty());
  EXPECT_EQ(c().drops[size_t(DropReason::too_big)], 2u);
  EXPECT_EQ(c().encap, 1u);

  // Fabric side: the outer packet above the fabric MTU, then an inner one above the host's.
  cfg.fabric_port.mtu = 1600;
  cfg.host_port.mtu = 1400;
  ASSERT_FALSE(gw_->apply(cfg));
  for (size_t inner_len : {size_t(1400), size_t(1401), size_t(1600)}) {
    RoceSpec i;
    i.payload = inner_len - 44;
    const Bytes out = run(fabric_frame(test::srv6_packet("fc00:ffff::2", "fc00:aa::d4", 0, {}, 0, 4,
                                                         test::roce_ip_packet(i))),
                          false);
    EXPECT_EQ(out.empty(), inner_len != 1400) << inner_len;
  }
  EXPECT_EQ(c().drops[size_t(DropReason::too_big)], 4u);
  EXPECT_EQ(c().decap, 1u);
}

// Probes with fabric-vlan on (docs/design/vlan-jumbo.md): a reflected reply leaves with exactly
// our tag, the PCP of its traffic class under the DSCP->PCP map, whatever tags the request
// had; requests are built with the same header (write_probe_l2). Off: tags stay as received.
TEST_F(PipelineTest, ProbesCarryTheFabricTagWithTheirClassPcp) {
  auto cfg = gateway_config({"fc00:1::1"});
  cfg.local_sids.push_back({testing::v6("fc00:aa::e0"), srv6::LocalSidBehavior::end_probe});
  cfg.fabric_port.vlan.enabled = true;
  cfg.fabric_port.vlan.id = 100;
  cfg.fabric_port.vlan.dscp_pcp = {{46, 6}};
  create(cfg);
  const net::Ipv6Addr ours = testing::v6("fc00:aa::e0"), theirs = testing::v6("fc00:ffff::e0");
  auto request = [&](uint8_t traffic_class) {
    srv6::probe::RequestSpec spec;
    spec.source = testing::v6("fc00:ffff::2");
    spec.segments = std::span<const net::Ipv6Addr>(&ours, 1);
    spec.return_segments = std::span<const net::Ipv6Addr>(&theirs, 1);
    spec.traffic_class = traffic_class;
    srv6::probe::Fields f;
    f.path_id = 9;
    f.seq = 1;
    Bytes ip6(srv6::probe::request_len(1, 1));
    size_t built = 0;
    EXPECT_EQ(srv6::probe::build_request(spec, f, ip6, built), srv6::probe::Status::ok);
    ip6.resize(built);
    return ip6;
  };
  // Returns the frame the worker queued for the fabric (empty when none).
  auto reflect = [&](const Bytes& frame) {
    rte_mbuf* in[1] = {mbuf(frame)};
    rte_mbuf* out[1] = {nullptr};
    EXPECT_EQ(process_fabric_burst(*w_, in, 1, out), 0);  // consumed by the probe path
    rte_mbuf* tx[2] = {nullptr, nullptr};
    if (take_probe_tx(*w_, tx, 2) != 1) return Bytes{};
    Bytes b = bytes(tx[0]);
    rte_pktmbuf_free(tx[0]);
    return b;
  };
  const Bytes req26 = request(26 << 2 | 2), req46 = request(46 << 2 | 2);
  const uint16_t other_tci = 7 << 13 | 200;
  struct Case {
    Bytes frame;
    uint16_t want_tci;
  };
  const std::vector<Case> cases = {
      {fabric_frame(req26), 3 << 13 | 100},  // untagged request: the tag is added
      {with_tag(fabric_frame(req46), other_tci), 6 << 13 | 100},  // another VLAN's tag replaced
      {test::ethernet({kFabricPortMac.bytes, kNexthopMac.bytes, {{0x88A8, 5}, {0x8100, other_tci}}},
                      0x86DD, req26),
       3 << 13 | 100},  // QinQ: both tags replaced by ours
  };
  for (const Case& k : cases) {
    const Bytes got = reflect(k.frame);
    ASSERT_GE(got.size(), 18u + 40u);
    EXPECT_EQ(Bytes(got.begin(), got.begin() + 18),
              with_tag(test::ethernet({kNexthopMac.bytes, kFabricPortMac.bytes, {}}, 0x86DD, {}),
                       k.want_tci));
    srv6::probe::Parsed p;
    EXPECT_EQ(srv6::probe::parse(std::span<const uint8_t>(got).subspan(18), p),
              srv6::probe::Status::ok);
    EXPECT_EQ(p.fields.type, srv6::probe::Type::reply);
  }
  EXPECT_EQ(c().probe_reflected, cases.size());

  // The prober's requests: the same header from the same settings.
  const policy::Settings& s = policy::settings_of_rail(*gw_->runtime().view(), 0);
  ASSERT_EQ(probe_l2_len(s), 18u);
  Bytes l2(18);
  write_probe_l2(l2.data(), kNexthopMac.bytes.data(), kFabricPortMac.bytes.data(), s, 46 << 2);
  EXPECT_EQ(l2, with_tag(test::ethernet({kNexthopMac.bytes, kFabricPortMac.bytes, {}}, 0x86DD, {}),
                         6 << 13 | 100));

  // Off: no tag added, the request's tags kept.
  cfg.fabric_port.vlan = {};
  ASSERT_FALSE(gw_->apply(cfg));
  EXPECT_EQ(probe_l2_len(policy::settings_of_rail(*gw_->runtime().view(), 0)), 14u);
  Bytes got = reflect(fabric_frame(req26));
  ASSERT_GE(got.size(), 14u);
  EXPECT_EQ(got[12], 0x86);
  got = reflect(with_tag(fabric_frame(req26), other_tci));
  ASSERT_GE(got.size(), 18u);
  EXPECT_EQ(Bytes(got.begin() + 12, got.begin() + 16), Bytes({0x81, 0x00, 0xE0, 0xC8}));
}

// Probes per rail: a request arriving on rail b is reflected onto rail b's probe TX ring (its
// fabric port, drained by its first worker) from rail b's fabric MAC to rail b's next hop;
// the prober's frames handed to a rail go to that rail's ring only; a reply names its rail.
TEST_F(PipelineTest, RailsReflectAndSendProbesOnTheirOwnRing) {
  config::GatewayConfig cfg = two_rail_config({"fc00:1::1"});
  const net::MacAddr nexthop1 = testing::mac("02:00:00:00:13:13");
  const net::MacAddr fabric1 = testing::mac("02:00:00:00:12:12");
  config::Rail& r1 = cfg.rails[1];
  r1.fabric_nexthop_mac = nexthop1;
  r1.local_sids = {{testing::v6("fc00:b::e0"), srv6::LocalSidBehavior::end_probe}};
  RailEnv envs[2];
  envs[0].ports = {kHostPortMac, kFabricPortMac, true};
  envs[1].ports = {testing::mac("02:00:00:00:11:11"), fabric1, true};
  config::ConfigError err;
  gw_ = Gateway::create(cfg, envs, g_hdr_pool, err);
  ASSERT_NE(gw_, nullptr) << err.path << ": " << err.message;
  WorkerContext* a = gw_->worker(0);
  WorkerContext* b = gw_->worker(1);

  const net::Ipv6Addr ours = testing::v6("fc00:b::e0"), theirs = testing::v6("fc00:ffff::e0");
  srv6::probe::RequestSpec spec;
  spec.source = testing::v6("fc00:ffff::2");
  spec.segments = std::span<const net::Ipv6Addr>(&ours, 1);
  spec.return_segments = std::span<const net::Ipv6Addr>(&theirs, 1);
  srv6::probe::Fields f;
  f.path_id = 3;
  Bytes ip6(srv6::probe::request_len(1, 1));
  size_t built = 0;
  ASSERT_EQ(srv6::probe::build_request(spec, f, ip6, built), srv6::probe::Status::ok);
  ip6.resize(built);
  rte_mbuf* in[1] = {mbuf(fabric_frame(ip6))};
  rte_mbuf* out[2] = {nullptr, nullptr};
  EXPECT_EQ(process_fabric_burst(*b, in, 1, out), 0);
  EXPECT_EQ(take_probe_tx(*a, out, 2), 0);  // not rail a's port
  ASSERT_EQ(take_probe_tx(*b, out, 2), 1);
  const Bytes got = bytes(out[0]);
  rte_pktmbuf_free(out[0]);
  ASSERT_GE(got.size(), 14u);
  EXPECT_EQ(Bytes(got.begin(), got.begin() + 6),
            Bytes(nexthop1.bytes.begin(), nexthop1.bytes.end()));
  EXPECT_EQ(Bytes(got.begin() + 6, got.begin() + 12),
            Bytes(fabric1.bytes.begin(), fabric1.bytes.end()));

  // The prober's frames: to the rail named, drained by that rail's first worker only.
  rte_mbuf* probe = mbuf(fabric_frame(ip6));
  ASSERT_EQ(gw_->send_probes(1, &probe, 1), 1u);
  EXPECT_EQ(take_probe_tx(*a, out, 2), 0);
  ASSERT_EQ(take_probe_tx(*b, out, 2), 1);
  rte_pktmbuf_free(out[0]);
  rte_mbuf* stray = mbuf(fabric_frame(ip6));
  EXPECT_EQ(gw_->send_probes(2, &stray, 1), 0u);  // no such rail: refused, still ours
  rte_pktmbuf_free(stray);
}

}  // namespace
}  // namespace srv6gw::dataplane
