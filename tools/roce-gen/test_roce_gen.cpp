// SPDX-License-Identifier: BSD-3-Clause
// The in-memory generator: frames classify as RoCEv2 with the intended fields under the packet
// core's parser, carry a valid ICRC and IPv4 checksum, sizes follow the rounding rule, bad
// specs are refused naming the field, and workloads are deterministic. (tshark/scapy check the
// same output in check_gen.py.)
#include <gtest/gtest.h>

#include <map>
#include <set>

#include "net/icrc.hpp"
#include "net/parse.hpp"
#include "roce-gen/roce_gen.hpp"

namespace {

using namespace srv6gw;
using rocegen::FlowAddress;
using rocegen::Opcode;
using rocegen::RoceFields;

FlowAddress make_flow(net::Family family, bool vlan) {
  FlowAddress f;
  f.src_mac = *net::parse_mac("02:00:00:00:00:01");
  f.dst_mac = *net::parse_mac("02:00:00:00:01:01");
  if (vlan) f.vlan_tci = uint16_t(3 << 13 | 100);
  if (family == net::Family::ipv4) {
    f.src = *net::parse_ip("10.0.0.1");
    f.dst = *net::parse_ip("10.0.1.1");
  } else {
    f.src = *net::parse_ip("fd00::1");
    f.dst = *net::parse_ip("fd00:1::1");
    f.flow_label = 0x12345;
  }
  f.udp_sport = 0xc123;
  return f;
}

uint16_t ipv4_header_sum(const uint8_t* p) {
  uint32_t acc = 0;
  for (int i = 0; i < 20; i += 2) acc += uint32_t(p[i]) << 8 | p[i + 1];
  while (acc >> 16) acc = (acc & 0xffff) + (acc >> 16);
  return uint16_t(acc);
}

struct FrameCase {
  net::Family family;
  bool vlan;
};

class RoceFrameTest : public ::testing::TestWithParam<FrameCase> {};

TEST_P(RoceFrameTest, EveryOpcodeClassifiesWithItsFieldsAndAValidIcrc) {
  const auto [family, vlan] = GetParam();
  const FlowAddress flow = make_flow(family, vlan);
  for (Opcode op : rocegen::kAllOpcodes) {
    SCOPED_TRACE(rocegen::to_string(op));
    RoceFields roce;
    roce.opcode = op;
    roce.dest_qp = 0xabcdef;
    roce.psn = 0x123456;
    roce.ack_req = true;
    roce.becn = op == Opcode::cnp;
    roce.payload_len = rocegen::payload_len_for(1024, flow, op);
    roce.reth = {0x1122334455667788ull, 0xdeadbeef, 4096};
    std::vector<uint8_t> buf(rocegen::kMaxFrameLen);
    const size_t len = rocegen::build_roce_frame(flow, roce, buf);
    ASSERT_GT(len, 0u);
    EXPECT_EQ(len, rocegen::roce_frame_len(flow, roce));
    if (rocegen::layout_of(op).payload) {
      EXPECT_LE(len, 1024u);
      EXPECT_GT(len, 1020u);
    }
    const std::span<const uint8_t> frame(buf.data(), len);

    net::PacketInfo info;
    ASSERT_EQ(net::parse_frame(frame, info), net::ParseStatus::ok);
    EXPECT_EQ(info.family, family);
    EXPECT_EQ(info.vlan_count, vlan ? 1 : 0);
    EXPECT_EQ(info.bth.opcode, uint8_t(op));
    EXPECT_EQ(info.bth.dest_qp, 0xabcdefu);
    EXPECT_EQ(info.bth.psn(), 0x123456u);
    EXPECT_TRUE(info.bth.ack_req());
    EXPECT_TRUE(info.bth.mig_req());
    EXPECT_EQ(info.bth.pad_count(), 0);
    EXPECT_EQ(info.bth.becn(), op == Opcode::cnp);
    EXPECT_EQ(info.is_cnp, op == Opcode::cnp);
    EXPECT_EQ(info.bth.pkey(), 0xffff);
    EXPECT_EQ(info.udp_sport, 0xc123);
    EXPECT_EQ(info.udp_dport, 4791);
    EXPECT_EQ(info.dscp, 26);
    EXPECT_EQ(info.ecn, 0b10);
    EXPECT_EQ(info.l3_offset + info.l3_len, len);  // no Ethernet padding on RoCE frames
    EXPECT_EQ(frame[info.l4_offset + 6], 0);       // UDP checksum 0
    EXPECT_EQ(frame[info.l4_offset + 7], 0);
    const auto ip = frame.subspan(info.l3_offset);
    EXPECT_TRUE(net::roce_icrc_valid(ip, family));
    if (family == net::Family::ipv4) {
      EXPECT_EQ(ipv4_header_sum(ip.data()), 0xffff);  // checksum verifies
      EXPECT_EQ(ip[6] & 0x40, 0x40);                  // DF
    } else {
      EXPECT_EQ(info.ipv6_flow_label, 0x12345u);
    }
    // Any single-bit change inside the covered area breaks the ICRC.
    std::vector<uint8_t> corrupted(frame.begin(), frame.end());
    corrupted[info.bth_offset + 6] ^= 0x01;  // DestQP
    EXPECT_FALSE(
        net::roce_icrc_valid(std::span<const uint8_t>(corrupted).subspan(info.l3_offset), family));
  }
}

INSTANTIATE_TEST_SUITE_P(Families, RoceFrameTest,
                         ::testing::Values(FrameCase{net::Family::ipv4, false},
                                           FrameCase{net::Family::ipv4, true},
                                           FrameCase{net::Family::ipv6, false},
                                           FrameCase{net::Family::ipv6, true}));

TEST(RoceFrame, ExtensionHeadersSitWhereTheSpecPutsThem) {
  const FlowAddress flow = make_flow(net::Family::ipv4, false);
  std::vector<uint8_t> buf(rocegen::kMaxFrameLen);
  RoceFields roce;
  roce.opcode = Opcode::write_first;
  roce.reth = {0x0102030405060708ull, 0x0a0b0c0d, 0x00001000};
  roce.payload_len = 256;
  ASSERT_GT(rocegen::build_roce_frame(flow, roce, buf), 0u);
  const uint8_t* reth = buf.data() + 14 + 20 + 8 + 12;
  const uint8_t expected_reth[16] = {1, 2, 3, 4, 5, 6, 7, 8, 0x0a, 0x0b, 0x0c, 0x0d, 0, 0, 0x10, 0};
  EXPECT_EQ(std::vector<uint8_t>(reth, reth + 16),
            std::vector<uint8_t>(expected_reth, expected_reth + 16));

  roce.opcode = Opcode::ack;
  roce.aeth = {0x1f, 0x00abcd};
  const size_t len = rocegen::build_roce_frame(flow, roce, buf);
  EXPECT_EQ(len, 14u + 20 + 8 + 12 + 4 + 4);
  const uint8_t* aeth = buf.data() + 14 + 20 + 8 + 12;
  EXPECT_EQ(aeth[0], 0x1f);
  EXPECT_EQ(aeth[1], 0x00);
  EXPECT_EQ(aeth[2], 0xab);
  EXPECT_EQ(aeth[3], 0xcd);

  roce.opcode = Opcode::cnp;
  roce.becn = true;
  EXPECT_EQ(rocegen::build_roce_frame(flow, roce, buf), 14u + 20 + 8 + 12 + 16 + 4);
}

TEST(RoceFrame, RefusesBadFieldsAndSmallBuffers) {
  const FlowAddress flow = make_flow(net::Family::ipv6, false);
  RoceFields roce;
  roce.opcode = Opcode::send_only;
  roce.payload_len = 64;
  std::vector<uint8_t> buf(rocegen::kMaxFrameLen);
  const size_t len = rocegen::build_roce_frame(flow, roce, buf);
  ASSERT_GT(len, 0u);
  EXPECT_EQ(rocegen::build_roce_frame(flow, roce, std::span<uint8_t>(buf.data(), len - 1)), 0u);
  roce.payload_len = 62;  // not a multiple of 4
  EXPECT_EQ(rocegen::build_roce_frame(flow, roce, buf), 0u);
  roce.payload_len = rocegen::kMaxFrameLen;
  EXPECT_EQ(rocegen::build_roce_frame(flow, roce, buf), 0u);
  FlowAddress mixed = flow;
  mixed.dst = *net::parse_ip("10.0.1.1");
  roce.payload_len = 64;
  EXPECT_EQ(rocegen::build_roce_frame(mixed, roce, buf), 0u);
}

TEST(RoceFrame, PayloadLengthRoundsDownToFourByteUnits) {
  const FlowAddress v4 = make_flow(net::Family::ipv4, false);
  const FlowAddress v6 = make_flow(net::Family::ipv6, true);
  // IPv4 send: 14 + 20 + 8 + 12 + 4 = 58 bytes of headers.
  EXPECT_EQ(rocegen::payload_len_for(64, v4, Opcode::send_only), 4u);
  EXPECT_EQ(rocegen::payload_len_for(1024, v4, Opcode::send_only), 964u);
  EXPECT_EQ(rocegen::payload_len_for(58, v4, Opcode::send_only), 0u);
  EXPECT_EQ(rocegen::payload_len_for(20, v4, Opcode::send_only), 0u);
  // RETH and AETH come out of the same frame budget.
  EXPECT_EQ(rocegen::payload_len_for(1024, v4, Opcode::write_only), 948u);
  EXPECT_EQ(rocegen::payload_len_for(1024, v4, Opcode::read_response_only), 960u);
  // Tagged IPv6: 18 + 40 + 8 + 12 + 4 = 82.
  EXPECT_EQ(rocegen::payload_len_for(4096, v6, Opcode::write_middle), 4012u);
  EXPECT_EQ(rocegen::payload_len_for(4096, v6, Opcode::ack), 0u);
  EXPECT_EQ(rocegen::payload_len_for(4096, v6, Opcode::read_request), 0u);
}

TEST(NonRoceFrame, ClassifyAsPassThrough) {
  std::vector<uint8_t> buf(256);
  const FlowAddress v4 = make_flow(net::Family::ipv4, false);
  const FlowAddress v6 = make_flow(net::Family::ipv6, true);
  struct Case {
    rocegen::NonRoceKind kind;
    const FlowAddress* flow;
    net::ParseStatus status;
  };
  const Case cases[] = {
      {rocegen::NonRoceKind::arp_request, &v4, net::ParseStatus::not_ip},
      {rocegen::NonRoceKind::nd_solicit, &v6, net::ParseStatus::not_udp},
      {rocegen::NonRoceKind::tcp_syn, &v4, net::ParseStatus::not_udp},
      {rocegen::NonRoceKind::tcp_syn, &v6, net::ParseStatus::not_udp},
      {rocegen::NonRoceKind::udp_other, &v4, net::ParseStatus::not_roce},
      {rocegen::NonRoceKind::udp_other, &v6, net::ParseStatus::not_roce},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(rocegen::to_string(c.kind));
    const size_t len = rocegen::build_non_roce_frame(c.kind, *c.flow, buf);
    ASSERT_GE(len, 60u);
    net::PacketInfo info;
    EXPECT_EQ(net::parse_frame(std::span<const uint8_t>(buf.data(), len), info), c.status);
  }
  EXPECT_EQ(rocegen::build_non_roce_frame(rocegen::NonRoceKind::arp_request, v6, buf), 0u);
  EXPECT_EQ(rocegen::build_non_roce_frame(rocegen::NonRoceKind::nd_solicit, v4, buf), 0u);
  EXPECT_EQ(rocegen::build_non_roce_frame(rocegen::NonRoceKind::tcp_syn, v4,
                                          std::span<uint8_t>(buf.data(), 59)),
            0u);
}

TEST(Mixes, ParseNamesWeightsAndRefuseBadElements) {
  std::string err;
  auto mix = rocegen::parse_opcode_mix("send-only,write-first:3,cnp", err);
  ASSERT_TRUE(mix) << err;
  ASSERT_EQ(mix->size(), 3u);
  EXPECT_EQ((*mix)[1].opcode, Opcode::write_first);
  EXPECT_EQ((*mix)[1].weight, 3u);
  EXPECT_TRUE(rocegen::parse_opcode_mix("all", err));
  EXPECT_FALSE(rocegen::parse_opcode_mix("send-only,bogus", err));
  EXPECT_NE(err.find("'bogus'"), std::string::npos) << err;
  EXPECT_FALSE(rocegen::parse_opcode_mix("ack:0", err));
  EXPECT_NE(err.find("ack:0"), std::string::npos) << err;
  EXPECT_FALSE(rocegen::parse_opcode_mix("", err));

  auto sizes = rocegen::parse_size_mix("imix", err);
  ASSERT_TRUE(sizes);
  EXPECT_EQ(sizes->size(), 3u);
  sizes = rocegen::parse_size_mix("64:2,4096", err);
  ASSERT_TRUE(sizes) << err;
  EXPECT_EQ((*sizes)[1].frame_len, 4096u);
  EXPECT_FALSE(rocegen::parse_size_mix("59", err));
  EXPECT_NE(err.find("'59'"), std::string::npos) << err;
  EXPECT_FALSE(rocegen::parse_size_mix("64,x", err));
  EXPECT_FALSE(rocegen::parse_size_mix("99999", err));
}

TEST(Spec, ValidationNamesTheField) {
  const auto error_of = [](auto mutate) {
    rocegen::GenSpec spec;
    mutate(spec);
    return rocegen::validate(spec);
  };
  EXPECT_EQ(error_of([](rocegen::GenSpec&) {}), "");
  EXPECT_EQ(error_of([](auto& s) { s.hosts = 0; }).rfind("hosts:", 0), 0u);
  EXPECT_EQ(error_of([](auto& s) { s.qps_per_host = 0; }).rfind("qps:", 0), 0u);
  EXPECT_EQ(error_of([](auto& s) { s.vlan_id = 4095; }).rfind("vlan:", 0), 0u);
  EXPECT_EQ(error_of([](auto& s) { s.dscp = 64; }).rfind("dscp:", 0), 0u);
  EXPECT_EQ(error_of([](auto& s) { s.ecn = 4; }).rfind("ecn:", 0), 0u);
  EXPECT_EQ(error_of([](auto& s) { s.dest_qp_base = 1; }).rfind("dest-qp-base:", 0), 0u);
  EXPECT_EQ(error_of([](auto& s) { s.sizes = {{40, 1}}; }).rfind("sizes:", 0), 0u);
  EXPECT_EQ(error_of([](auto& s) {
              s.src_base4 = *net::parse_ipv4("255.255.255.255");
              s.hosts = 2;
            }).rfind("src-base:", 0),
            0u);
  std::string err;
  rocegen::GenSpec bad;
  bad.hosts = 0;
  EXPECT_FALSE(rocegen::Generator::create(bad, err));
  EXPECT_FALSE(err.empty());
}

TEST(Generator, DeterministicPerSeedWithPerQpSequences) {
  rocegen::GenSpec spec;
  spec.hosts = 3;
  spec.qps_per_host = 4;
  spec.count = 600;
  spec.seed = 99;
  spec.family = rocegen::FamilyMode::mixed;
  spec.opcodes = *rocegen::named_opcode_mix("all");
  spec.sizes = {{64, 1}, {1024, 1}, {4096, 1}};
  spec.non_roce_every = 10;
  std::string err;
  auto a = rocegen::generate_frames(spec, err);
  ASSERT_TRUE(a) << err;
  auto b = rocegen::generate(spec, err);
  ASSERT_TRUE(b) << err;
  ASSERT_EQ(a->size(), 600u);
  ASSERT_EQ(b->size(), 600u);
  for (size_t i = 0; i < a->size(); ++i) ASSERT_EQ((*a)[i].bytes, (*b)[i]) << i;
  spec.seed = 100;
  auto c = rocegen::generate(spec, err);
  ASSERT_TRUE(c);
  EXPECT_NE(*b, *c);

  std::map<uint32_t, uint32_t> last_psn;
  std::map<uint32_t, uint16_t> sport;
  std::set<net::Family> families;
  size_t non_roce = 0;
  for (size_t i = 0; i < a->size(); ++i) {
    const auto& f = (*a)[i];
    EXPECT_EQ(f.info.timestamp_ns, spec.start_time_ns + i * spec.interval_ns);
    EXPECT_EQ(f.info.len, f.bytes.size());
    if (f.info.kind == rocegen::FrameKind::non_roce) {
      ++non_roce;
      EXPECT_EQ((i + 1) % 10, 0u);
      continue;
    }
    net::PacketInfo info;
    ASSERT_EQ(net::parse_frame(f.bytes, info), net::ParseStatus::ok) << i;
    EXPECT_TRUE(net::roce_icrc_valid(std::span<const uint8_t>(f.bytes).subspan(info.l3_offset),
                                     info.family));
    EXPECT_EQ(info.bth.dest_qp, f.info.dest_qp);
    EXPECT_EQ(info.bth.psn(), f.info.psn);
    EXPECT_EQ(info.bth.opcode, uint8_t(f.info.opcode));
    EXPECT_EQ(info.family, f.info.family);
    families.insert(info.family);
    // QP index within the host alternates the family in mixed mode.
    const uint32_t global = f.info.host * spec.qps_per_host + f.info.qp;
    EXPECT_EQ(info.family, global % 2 ? net::Family::ipv6 : net::Family::ipv4);
    EXPECT_EQ(f.info.dest_qp, spec.dest_qp_base + global);
    auto [it, fresh] = sport.emplace(f.info.dest_qp, info.udp_sport);
    EXPECT_EQ(it->second, info.udp_sport);
    (void)fresh;
    if (f.info.opcode == Opcode::cnp) {
      EXPECT_EQ(info.bth.psn(), 0u);
      EXPECT_EQ(info.ecn, 0);
      EXPECT_EQ(info.dscp, 48);
      continue;
    }
    auto prev = last_psn.find(f.info.dest_qp);
    if (prev != last_psn.end()) {
      EXPECT_EQ(info.bth.psn(), (prev->second + 1) & 0xffffff);
    }
    last_psn[f.info.dest_qp] = info.bth.psn();
  }
  EXPECT_EQ(non_roce, 60u);
  EXPECT_EQ(families.size(), 2u);
  EXPECT_EQ(sport.size(), 12u);
}

TEST(Generator, MessageModeSendsWholeMessagesBackToBack) {
  rocegen::GenSpec spec;
  spec.hosts = 4;
  spec.qps_per_host = 16;
  spec.count = 5000;
  spec.seed = 7;
  spec.opcodes = *rocegen::named_opcode_mix("writes");
  spec.message_min = 16;
  spec.message_max = 64;
  std::string err;
  auto frames = rocegen::generate_frames(spec, err);
  ASSERT_TRUE(frames) << err;
  // Split into runs of one QP: every run is one or more whole messages, each write-first,
  // write-middle..., write-last (or write-only), of 16..64 packets, PSNs consecutive.
  std::vector<std::vector<const rocegen::GeneratedFrame*>> messages;
  for (const auto& f : *frames) {
    ASSERT_EQ(f.info.kind, rocegen::FrameKind::roce);
    const Opcode op = f.info.opcode;
    if (op == Opcode::write_first || op == Opcode::write_only || messages.empty())
      messages.emplace_back();
    messages.back().push_back(&f);
  }
  std::set<uint32_t> qps;
  for (size_t m = 0; m < messages.size(); ++m) {
    const auto& msg = messages[m];
    SCOPED_TRACE("message " + std::to_string(m));
    const bool last_one = m + 1 == messages.size();  // may be cut by the frame count
    if (!last_one) {
      EXPECT_GE(msg.size(), 16u);
      EXPECT_LE(msg.size(), 64u);
    }
    EXPECT_EQ(msg.front()->info.opcode, Opcode::write_first);
    if (!last_one) {
      EXPECT_EQ(msg.back()->info.opcode, Opcode::write_last);
    }
    for (size_t i = 0; i < msg.size(); ++i) {
      EXPECT_EQ(msg[i]->info.dest_qp, msg.front()->info.dest_qp);
      EXPECT_EQ(msg[i]->info.psn, (msg.front()->info.psn + i) & 0xffffff);
      if (i != 0 && i + 1 != msg.size()) {
        EXPECT_EQ(msg[i]->info.opcode, Opcode::write_middle);
      }
      net::PacketInfo info;
      ASSERT_EQ(net::parse_frame(msg[i]->bytes, info), net::ParseStatus::ok);
      EXPECT_EQ(info.bth.opcode, uint8_t(msg[i]->info.opcode));
      EXPECT_EQ(msg[i]->bytes.size(), msg.front()->bytes.size());  // every frame 1024 B
    }
    qps.insert(msg.front()->info.dest_qp);
  }
  // ~125 messages over 64 QPs: interleaved, most QPs seen.
  EXPECT_GT(messages.size(), 5000u / 64);
  EXPECT_GT(qps.size(), 40u);

  // Without messages the same spec draws a QP per frame (the default, unchanged).
  spec.message_min = spec.message_max = 0;
  auto plain = rocegen::generate_frames(spec, err);
  ASSERT_TRUE(plain) << err;
  size_t same_as_previous = 0;
  for (size_t i = 1; i < plain->size(); ++i)
    same_as_previous += (*plain)[i].info.dest_qp == (*plain)[i - 1].info.dest_qp;
  EXPECT_LT(same_as_previous, plain->size() / 10);

  spec.message_min = 65;
  spec.message_max = 64;
  EXPECT_EQ(rocegen::validate(spec).rfind("message-packets:", 0), 0u);
  spec.message_min = 0;
  EXPECT_EQ(rocegen::validate(spec).rfind("message-packets:", 0), 0u);
}

}  // namespace
