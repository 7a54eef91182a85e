// SPDX-License-Identifier: BSD-3-Clause
// Encapsulation round trip on the data plane's path: the input makes a RoCEv2 packet (IPv4
// or IPv6, options / extension header, any payload up to a jumbo frame) and picks one of a
// few fixed templates; the packet is classified, encapsulated in place behind an Ethernet
// header as the encap direction does, carried through the fabric's End processing, and
// decapsulated. The inner packet must come back byte for byte with a valid ICRC, the Tag
// must be carried, and an outer CE must reach the inner header as RFC 6040 says while the
// ICRC (which masks the ECN bits) stays valid.
// Input layout: template index (% 5), SRH tag (2), then the inner packet as roce_packet.hpp
// reads it.
#include <algorithm>
#include <array>
#include <cstring>
#include <vector>

#include "fuzz_util.hpp"
#include "net/icrc.hpp"
#include "net/parse.hpp"
#include "roce_packet.hpp"
#include "srv6/decap.hpp"
#include "srv6/encap.hpp"

namespace {

namespace net = srv6gw::net;
namespace srv6 = srv6gw::srv6;
using srv6::DecapStatus;
using srv6::EncapMode;
using srv6::LocalSidBehavior;

constexpr size_t kMinFrame = 60;      // Ethernet minimum without FCS: shorter frames are padded
constexpr size_t kMaxPayload = 9000;  // jumbo frames
constexpr uint8_t kCe = 3;

net::Ipv6Addr addr(const char* text) {
  const auto a = net::parse_ipv6(text);
  FUZZ_CHECK(a.has_value());
  return *a;
}

struct FixedTemplate {
  srv6::EncapTemplate t;
  const char* name;
};

std::vector<FixedTemplate> make_templates() {
  std::vector<FixedTemplate> out;
  const auto add = [&out](const char* name, EncapMode mode, std::vector<net::Ipv6Addr> sids) {
    srv6::TemplateSpec spec;
    spec.source = addr("fc00:100::1");
    spec.sids = sids;
    spec.mode = mode;
    spec.hop_limit = 64;
    FixedTemplate f{{}, name};
    FUZZ_CHECK(srv6::build_template(spec, f.t) == srv6::BuildStatus::ok);
    out.push_back(f);
  };
  add("encaps-3", EncapMode::encaps, {addr("fc00:a::1"), addr("fc00:b::1"), addr("fc00:3::d6")});
  add("encaps-red-1", EncapMode::encaps_red, {addr("fc00:3::d4")});
  add("encaps-red-4", EncapMode::encaps_red,
      {addr("fc00:a::1"), addr("fc00:b::1"), addr("fc00:c::1"), addr("fc00:3::d6")});
  std::vector<net::Ipv6Addr> usids;  // F3216: 8 uSIDs -> 2 containers (reduced SRH of 1)
  for (int i = 1; i <= 8; ++i) {
    net::Ipv6Addr a = addr("fcbb:bb00::");
    a.bytes[4] = 0x01;
    a.bytes[5] = uint8_t(i);
    usids.push_back(a);
  }
  add("usid-8", EncapMode::usid, usids);
  std::vector<net::Ipv6Addr> sixteen;
  for (int i = 1; i <= 16; ++i) {
    net::Ipv6Addr a = addr("fc00:e::");
    a.bytes[15] = uint8_t(i);
    sixteen.push_back(a);
  }
  add("encaps-16", EncapMode::encaps, sixteen);
  return out;
}

// RFC 8754 End at every node on the path: segments left - 1, destination = list[segments left].
void traverse_fabric(std::span<uint8_t> outer, const srv6::EncapTemplate& t) {
  if (!t.has_srh) return;
  uint8_t* srh = outer.data() + 40;
  FUZZ_CHECK(srh[2] == net::kSrhRoutingType);
  while (srh[3] > 0) {
    --srh[3];
    FUZZ_CHECK(srh[3] <= srh[4]);
    std::memcpy(outer.data() + 24, srh + 8 + 16 * srh[3], 16);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::vector<FixedTemplate> templates = make_templates();
  srv6gw::fuzz::ByteReader in(data, size);
  const FixedTemplate& chosen = templates[in.u8() % templates.size()];
  const srv6::EncapTemplate& t = chosen.t;
  const uint16_t tag = in.u16();
  const srv6gw::fuzz::RocePacket inner = srv6gw::fuzz::make_roce_packet(in, kMaxPayload);
  const bool v4 = inner.family == net::Family::ipv4;

  // Classification of the host's packet, as the encap direction sees it.
  net::PacketInfo info;
  FUZZ_CHECK(net::parse_ip(inner.bytes, inner.family, info) == net::ParseStatus::ok);
  FUZZ_CHECK(info.l3_len == inner.bytes.size());
  FUZZ_CHECK(info.udp_sport == inner.udp_sport && info.bth.opcode == inner.opcode);
  FUZZ_CHECK(info.bth.dest_qp == inner.dest_qp && info.bth.psn() == inner.psn);
  FUZZ_CHECK((info.dscp << 2 | info.ecn) == inner.traffic_class);
  FUZZ_CHECK(net::roce_icrc_valid(inner.bytes, inner.family));

  srv6::EncapFields fields;
  fields.inner_len = info.l3_len;
  fields.inner_proto = v4 ? net::kProtoIpv4 : net::kProtoIpv6;
  fields.traffic_class = uint8_t(info.dscp << 2 | info.ecn);
  fields.flow_label = net::outer_flow_label(info);
  fields.tag = tag;

  // Frame: Ethernet | outer IPv6 (+ SRH) | inner packet | padding to the Ethernet minimum,
  // built in place: the inner packet first, the encapsulation prepended in front of it.
  const size_t outer_len = t.size + inner.bytes.size();
  std::vector<uint8_t> frame(std::max(net::kEthHeaderLen + outer_len, kMinFrame), 0);
  std::copy(inner.bytes.begin(), inner.bytes.end(),
            frame.begin() + long(net::kEthHeaderLen + t.size));
  srv6::write_encap(t, frame.data() + net::kEthHeaderLen, fields);
  frame[12] = 0x86;
  frame[13] = 0xDD;
  FUZZ_CHECK(std::equal(inner.bytes.begin(), inner.bytes.end(),
                        frame.begin() + long(net::kEthHeaderLen + t.size)));

  // The fabric sees a well-formed IPv6 packet carrying IPv4/IPv6 after the SRH.
  net::PacketInfo outer_info;
  FUZZ_CHECK(net::parse_frame(frame, outer_info) == net::ParseStatus::not_udp);
  FUZZ_CHECK(outer_info.family == net::Family::ipv6 && outer_info.l3_offset == net::kEthHeaderLen);
  FUZZ_CHECK(outer_info.l4_proto == fields.inner_proto);
  FUZZ_CHECK(outer_info.l3_len == outer_len);
  FUZZ_CHECK(outer_info.ipv6_flow_label == fields.flow_label);
  FUZZ_CHECK(outer_info.dscp == info.dscp && outer_info.ecn == info.ecn);
  FUZZ_CHECK(outer_info.dst.as_v6() == t.first_destination);

  const std::span<uint8_t> outer(frame.data() + net::kEthHeaderLen,
                                 frame.size() - net::kEthHeaderLen);
  traverse_fabric(outer, t);
  const LocalSidBehavior dx = v4 ? LocalSidBehavior::end_dx4 : LocalSidBehavior::end_dx6;
  for (const LocalSidBehavior b : {dx, LocalSidBehavior::end_dt46}) {
    std::vector<uint8_t> copy(outer.begin(), outer.end());
    srv6::DecapResult r;
    FUZZ_CHECK(srv6::decap(copy, b, r) == DecapStatus::ok);
    FUZZ_CHECK(r.inner_offset == t.size && r.inner_len == inner.bytes.size());
    FUZZ_CHECK(r.inner_family == inner.family);
    FUZZ_CHECK(r.had_srh == t.has_srh);
    if (t.has_srh) FUZZ_CHECK(r.srh_tag == tag);
    FUZZ_CHECK(r.outer_ecn == info.ecn && !r.inner_marked_ce);
    const std::span<const uint8_t> back(copy.data() + r.inner_offset, r.inner_len);
    FUZZ_CHECK(std::equal(back.begin(), back.end(), inner.bytes.begin(), inner.bytes.end()));
    FUZZ_CHECK(net::roce_icrc_valid(back, inner.family));
  }

  // Congestion on the path: an outer CE (RFC 6040 egress).
  std::vector<uint8_t> marked(outer.begin(), outer.end());
  marked[1] |= kCe << 4;
  srv6::DecapResult r;
  const DecapStatus st = srv6::decap(marked, LocalSidBehavior::end_dt46, r);
  if (info.ecn == 0) {
    FUZZ_CHECK(st == DecapStatus::ecn_ce_on_not_ect);
    return 0;
  }
  FUZZ_CHECK(st == DecapStatus::ok);
  FUZZ_CHECK(r.outer_ecn == kCe && r.inner_marked_ce == (info.ecn != kCe));
  const std::span<const uint8_t> back(marked.data() + r.inner_offset, r.inner_len);
  net::PacketInfo after;
  FUZZ_CHECK(net::parse_ip(back, inner.family, after) == net::ParseStatus::ok);
  FUZZ_CHECK(after.ecn == kCe && after.dscp == info.dscp);
  FUZZ_CHECK(net::roce_icrc_valid(back, inner.family));  // ECN is masked in the ICRC
  if (v4) {
    const size_t ihl = size_t(back[0] & 0xF) * 4;
    FUZZ_CHECK(srv6gw::fuzz::inet_checksum(back.first(ihl)) == 0);
  }
  for (size_t i = 0; i < back.size(); ++i) {
    const bool may_change = i == 1 || (v4 && (i == 10 || i == 11));
    if (!may_change) FUZZ_CHECK(back[i] == inner.bytes[i]);
  }
  return 0;
}
