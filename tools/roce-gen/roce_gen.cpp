// SPDX-License-Identifier: BSD-3-Clause
// RoCEv2 frame construction and the deterministic workload generator. Layouts follow the
// InfiniBand Architecture Specification vol. 1 (BTH 9.2, RETH 9.3.3, AETH 9.3.5) and the
// RoCEv2 annex A17 (UDP port 4791, ICRC, CNP 0x81 with 16 reserved bytes and BECN set).
#include "roce-gen/roce_gen.hpp"

#include <algorithm>
#include <charconv>
#include <cstring>

#include "net/headers.hpp"
#include "net/icrc.hpp"

namespace srv6gw::rocegen {
namespace {

constexpr size_t kCnpReservedLen = 16;  // CNP payload after the BTH (annex A17)
// A multi-packet message (write-first ... write-last) is modelled as this many packets when
// the RETH of its first packet announces the total DMA length.
constexpr uint32_t kPacketsPerMessage = 4;
// Longest message of message mode (GenSpec::message_max): 1M packets of 4 KB = 4 GB.
constexpr uint32_t kMaxMessagePackets = 1u << 20;

// The opcode of packet `index` of a message of `len` packets whose opcode the mix drew as
// `drawn`: writes, sends and read responses are sent as first, middle..., last (only when
// alone); other opcodes are single-packet messages.
Opcode message_opcode(Opcode drawn, uint32_t index, uint32_t len) {
  struct Family {
    Opcode first, middle, last, only;
  };
  static constexpr Family kFamilies[] = {
      {Opcode::write_first, Opcode::write_middle, Opcode::write_last, Opcode::write_only},
      {Opcode::send_first, Opcode::send_middle, Opcode::send_last, Opcode::send_only},
      {Opcode::read_response_first, Opcode::read_response_middle, Opcode::read_response_last,
       Opcode::read_response_only}};
  for (const Family& f : kFamilies) {
    if (drawn != f.first && drawn != f.middle && drawn != f.last && drawn != f.only) continue;
    if (len == 1) return f.only;
    return index == 0 ? f.first : index + 1 == len ? f.last : f.middle;
  }
  return drawn;
}

bool single_packet_opcode(Opcode op) {
  return message_opcode(op, 0, 2) == op && message_opcode(op, 1, 2) == op;
}

void store16(uint8_t* p, uint16_t v) {
  p[0] = uint8_t(v >> 8);
  p[1] = uint8_t(v);
}
void store24(uint8_t* p, uint32_t v) {
  p[0] = uint8_t(v >> 16);
  p[1] = uint8_t(v >> 8);
  p[2] = uint8_t(v);
}
void store32(uint8_t* p, uint32_t v) {
  store16(p, uint16_t(v >> 16));
  store16(p + 2, uint16_t(v));
}
void store64(uint8_t* p, uint64_t v) {
  store32(p, uint32_t(v >> 32));
  store32(p + 4, uint32_t(v));
}

uint64_t splitmix64(uint64_t& state) {
  uint64_t z = (state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

// Ones' complement sum over `len` bytes, folded later.
uint32_t sum16(const uint8_t* p, size_t len, uint32_t acc = 0) {
  for (size_t i = 0; i + 1 < len; i += 2) acc += uint32_t(p[i]) << 8 | p[i + 1];
  if (len & 1) acc += uint32_t(p[len - 1]) << 8;
  return acc;
}
uint16_t fold(uint32_t acc) {
  while (acc >> 16) acc = (acc & 0xffff) + (acc >> 16);
  return uint16_t(~acc);
}

size_t l2_len(const FlowAddress& flow) {
  return net::kEthHeaderLen + (flow.vlan_tci ? net::kVlanTagLen : 0);
}
size_t l3_len(net::Family family) {
  return family == net::Family::ipv4 ? net::kIpv4MinHeaderLen : net::kIpv6HeaderLen;
}

size_t transport_header_len(Opcode op) {
  const OpcodeLayout l = layout_of(op);
  return net::kBthLen + (l.reth ? net::kRethLen : 0) + (l.aeth ? net::kAethLen : 0) +
         (l.cnp ? kCnpReservedLen : 0);
}

// Ethernet (+ VLAN) header; returns its length.
size_t write_l2(const FlowAddress& flow, const net::MacAddr& dst_mac, uint16_t ethertype,
                uint8_t* p) {
  std::memcpy(p, dst_mac.bytes.data(), 6);
  std::memcpy(p + 6, flow.src_mac.bytes.data(), 6);
  size_t off = 12;
  if (flow.vlan_tci) {
    store16(p + off, net::kEthTypeVlan);
    store16(p + off + 2, *flow.vlan_tci);
    off += net::kVlanTagLen;
  }
  store16(p + off, ethertype);
  return off + 2;
}

// IP header for `payload_len` bytes of `proto`; returns its length. IPv4 gets DF and a
// correct header checksum.
size_t write_ip(const FlowAddress& flow, uint8_t tos, uint8_t ttl, uint8_t proto,
                size_t payload_len, const uint8_t* dst, uint8_t* p) {
  if (flow.src.family == net::Family::ipv4) {
    p[0] = 0x45;
    p[1] = tos;
    store16(p + 2, uint16_t(net::kIpv4MinHeaderLen + payload_len));
    store16(p + 4, flow.ip_id);
    store16(p + 6, 0x4000);  // DF: RoCE must never be fragmented
    p[8] = ttl;
    p[9] = proto;
    store16(p + 10, 0);
    std::memcpy(p + 12, flow.src.bytes.data(), 4);
    std::memcpy(p + 16, dst, 4);
    store16(p + 10, fold(sum16(p, net::kIpv4MinHeaderLen)));
    return net::kIpv4MinHeaderLen;
  }
  store32(p, 6u << 28 | uint32_t(tos) << 20 | (flow.flow_label & 0xfffff));
  store16(p + 4, uint16_t(payload_len));
  p[6] = proto;
  p[7] = ttl;
  std::memcpy(p + 8, flow.src.bytes.data(), 16);
  std::memcpy(p + 24, dst, 16);
  return net::kIpv6HeaderLen;
}

// TCP/UDP/ICMPv6 checksum with the pseudo-header of the IP header at `ip`.
uint16_t l4_checksum(const uint8_t* ip, net::Family family, uint8_t proto, const uint8_t* l4,
                     size_t l4_len) {
  uint32_t acc = 0;
  if (family == net::Family::ipv4) {
    acc = sum16(ip + 12, 8);
  } else {
    acc = sum16(ip + 8, 32);
  }
  acc += uint32_t(proto);
  acc += uint32_t(l4_len >> 16) + uint32_t(l4_len & 0xffff);
  return fold(sum16(l4, l4_len, acc));
}

void fill_payload(uint8_t* p, size_t len, uint64_t seed) {
  uint64_t state = seed;
  size_t i = 0;
  for (; i + 8 <= len; i += 8) store64(p + i, splitmix64(state));
  if (i < len) {
    uint8_t tail[8];
    store64(tail, splitmix64(state));
    std::memcpy(p + i, tail, len - i);
  }
}

struct OpcodeName {
  Opcode op;
  const char* name;
};
constexpr OpcodeName kOpcodeNames[] = {
    {Opcode::send_first, "send-first"},
    {Opcode::send_middle, "send-middle"},
    {Opcode::send_last, "send-last"},
    {Opcode::send_only, "send-only"},
    {Opcode::write_first, "write-first"},
    {Opcode::write_middle, "write-middle"},
    {Opcode::write_last, "write-last"},
    {Opcode::write_only, "write-only"},
    {Opcode::read_request, "read-request"},
    {Opcode::read_response_first, "read-response-first"},
    {Opcode::read_response_middle, "read-response-middle"},
    {Opcode::read_response_last, "read-response-last"},
    {Opcode::read_response_only, "read-response-only"},
    {Opcode::ack, "ack"},
    {Opcode::cnp, "cnp"},
};

template <typename T>
bool parse_number(std::string_view text, T& out) {
  if (text.empty()) return false;
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, out);
  return ec == std::errc() && ptr == end;
}

std::vector<std::string_view> split(std::string_view text, char sep) {
  std::vector<std::string_view> parts;
  size_t start = 0;
  while (true) {
    const size_t pos = text.find(sep, start);
    parts.push_back(text.substr(start, pos == std::string_view::npos ? pos : pos - start));
    if (pos == std::string_view::npos) break;
    start = pos + 1;
  }
  return parts;
}

// "name[:weight]" -> name, weight; false when the weight is not a positive integer.
bool split_weight(std::string_view item, std::string_view& name, uint32_t& weight) {
  const size_t colon = item.find(':');
  name = item.substr(0, colon);
  weight = 1;
  if (colon == std::string_view::npos) return true;
  return parse_number(item.substr(colon + 1), weight) && weight > 0 && weight <= 1000000;
}

net::Ipv4Addr add_v4(const net::Ipv4Addr& base, uint32_t n) {
  const uint32_t v = base.host_order() + n;
  return net::Ipv4Addr{{uint8_t(v >> 24), uint8_t(v >> 16), uint8_t(v >> 8), uint8_t(v)}};
}

// Adds to the low 64 bits (interface identifier) of an IPv6 address.
net::Ipv6Addr add_v6(const net::Ipv6Addr& base, uint64_t n) {
  net::Ipv6Addr r = base;
  uint64_t low = 0;
  for (int i = 8; i < 16; ++i) low = low << 8 | base.bytes[i];
  low += n;
  for (int i = 15; i >= 8; --i) {
    r.bytes[i] = uint8_t(low);
    low >>= 8;
  }
  return r;
}

net::MacAddr add_mac(const net::MacAddr& base, uint32_t n) {
  net::MacAddr r = base;
  const uint32_t low =
      (uint32_t(base.bytes[3]) << 16 | uint32_t(base.bytes[4]) << 8 | base.bytes[5]) + n;
  r.bytes[3] = uint8_t(low >> 16);
  r.bytes[4] = uint8_t(low >> 8);
  r.bytes[5] = uint8_t(low);
  return r;
}

uint32_t remote_count(const GenSpec& spec) {
  return spec.remote_hosts == 0 ? spec.hosts : spec.remote_hosts;
}

}  // namespace

// ------------------------------------------------------------------------------------------
// Opcodes

const char* to_string(Opcode op) {
  for (const auto& n : kOpcodeNames) {
    if (n.op == op) return n.name;
  }
  return "unknown";
}

std::optional<Opcode> parse_opcode(std::string_view name) {
  for (const auto& n : kOpcodeNames) {
    if (name == n.name) return n.op;
  }
  return std::nullopt;
}

OpcodeLayout layout_of(Opcode op) {
  switch (op) {
    case Opcode::send_first:
    case Opcode::send_middle:
    case Opcode::send_last:
    case Opcode::send_only:
    case Opcode::write_middle:
    case Opcode::write_last:
    case Opcode::read_response_middle:
      return {.payload = true};
    case Opcode::write_first:
    case Opcode::write_only:
      return {.reth = true, .payload = true};
    case Opcode::read_request:
      return {.reth = true};
    case Opcode::read_response_first:
    case Opcode::read_response_last:
    case Opcode::read_response_only:
      return {.aeth = true, .payload = true};
    case Opcode::ack:
      return {.aeth = true};
    case Opcode::cnp:
      return {.cnp = true};
  }
  return {};
}

const char* to_string(NonRoceKind kind) {
  switch (kind) {
    case NonRoceKind::arp_request:
      return "arp-request";
    case NonRoceKind::nd_solicit:
      return "nd-solicit";
    case NonRoceKind::tcp_syn:
      return "tcp-syn";
    case NonRoceKind::udp_other:
      return "udp-other";
  }
  return "unknown";
}

// ------------------------------------------------------------------------------------------
// Single frames

size_t roce_frame_len(const FlowAddress& flow, const RoceFields& roce) {
  return l2_len(flow) + l3_len(flow.src.family) + net::kUdpHeaderLen +
         transport_header_len(roce.opcode) +
         (layout_of(roce.opcode).payload ? roce.payload_len : 0) + net::kIcrcLen;
}

uint32_t payload_len_for(size_t requested_frame_len, const FlowAddress& flow, Opcode opcode) {
  if (!layout_of(opcode).payload) return 0;
  const size_t headers = l2_len(flow) + l3_len(flow.src.family) + net::kUdpHeaderLen +
                         transport_header_len(opcode) + net::kIcrcLen;
  if (requested_frame_len <= headers) return 0;
  return uint32_t((requested_frame_len - headers) & ~size_t(3));
}

size_t build_roce_frame(const FlowAddress& flow, const RoceFields& roce, std::span<uint8_t> out) {
  const net::Family family = flow.src.family;
  if (family != net::Family::ipv4 && family != net::Family::ipv6) return 0;
  if (flow.dst.family != family) return 0;
  const OpcodeLayout layout = layout_of(roce.opcode);
  const uint32_t payload_len = layout.payload ? roce.payload_len : 0;
  if (payload_len % 4 != 0) return 0;
  const size_t len = roce_frame_len(flow, roce);
  if (len > kMaxFrameLen || len > out.size()) return 0;

  uint8_t* p = out.data();
  const uint16_t ethertype = family == net::Family::ipv4 ? net::kEthTypeIpv4 : net::kEthTypeIpv6;
  const size_t l3 = write_l2(flow, flow.dst_mac, ethertype, p);
  const size_t udp_len =
      net::kUdpHeaderLen + transport_header_len(roce.opcode) + payload_len + net::kIcrcLen;
  const uint8_t tos = uint8_t((flow.dscp & 0x3f) << 2 | (flow.ecn & 0x3));
  const size_t l4 =
      l3 + write_ip(flow, tos, flow.ttl, net::kProtoUdp, udp_len, flow.dst.bytes.data(), p + l3);
  store16(p + l4, flow.udp_sport);
  store16(p + l4 + 2, net::kRoceV2Port);
  store16(p + l4 + 4, uint16_t(udp_len));
  store16(p + l4 + 6, 0);  // RoCEv2 senders leave the UDP checksum zero; the ICRC covers it

  uint8_t* bth = p + l4 + net::kUdpHeaderLen;
  bth[0] = uint8_t(roce.opcode);
  bth[1] = uint8_t((roce.mig_req ? 0x40 : 0));  // SE 0, pad count 0, TVer 0
  store16(bth + 2, roce.pkey);
  bth[4] = uint8_t((roce.fecn ? 0x80 : 0) | (roce.becn ? 0x40 : 0));
  store24(bth + 5, roce.dest_qp & 0xffffff);
  bth[8] = roce.ack_req ? 0x80 : 0;
  store24(bth + 9, roce.psn & 0xffffff);
  uint8_t* q = bth + net::kBthLen;
  if (layout.reth) {
    store64(q, roce.reth.virtual_address);
    store32(q + 8, roce.reth.r_key);
    store32(q + 12, roce.reth.dma_length);
    q += net::kRethLen;
  }
  if (layout.aeth) {
    q[0] = roce.aeth.syndrome;
    store24(q + 1, roce.aeth.msn & 0xffffff);
    q += net::kAethLen;
  }
  if (layout.cnp) {
    std::memset(q, 0, kCnpReservedLen);
    q += kCnpReservedLen;
  }
  fill_payload(q, payload_len, roce.payload_seed);
  q += payload_len;
  std::memset(q, 0, net::kIcrcLen);
  net::roce_icrc_fill(std::span<uint8_t>(p + l3, len - l3), family);
  return len;
}

size_t build_non_roce_frame(NonRoceKind kind, const FlowAddress& flow, std::span<uint8_t> out) {
  const net::Family family = flow.src.family;
  if (family != net::Family::ipv4 && family != net::Family::ipv6) return 0;
  if (flow.dst.family != family) return 0;
  uint8_t frame[128] = {};  // the longest of these is a tagged ND solicitation, 90 bytes
  uint8_t* p = frame;
  size_t len = 0;
  switch (kind) {
    case NonRoceKind::arp_request: {
      if (family != net::Family::ipv4) return 0;
      const net::MacAddr broadcast{{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}};
      const size_t off = write_l2(flow, broadcast, net::kEthTypeArp, p);
      uint8_t* a = p + off;
      store16(a, 1);  // Ethernet
      store16(a + 2, net::kEthTypeIpv4);
      a[4] = 6;
      a[5] = 4;
      store16(a + 6, 1);  // request
      std::memcpy(a + 8, flow.src_mac.bytes.data(), 6);
      std::memcpy(a + 14, flow.src.bytes.data(), 4);
      std::memset(a + 18, 0, 6);
      std::memcpy(a + 24, flow.dst.bytes.data(), 4);
      len = off + 28;
      break;
    }
    case NonRoceKind::nd_solicit: {
      if (family != net::Family::ipv6) return 0;
      const auto& target = flow.dst.bytes;
      // Solicited-node multicast group ff02::1:ffXX:XXXX and its MAC 33:33:ff:XX:XX:XX.
      uint8_t group[16] = {0xff, 0x02, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x01, 0xff};
      std::memcpy(group + 13, target.data() + 13, 3);
      const net::MacAddr group_mac{{0x33, 0x33, 0xff, target[13], target[14], target[15]}};
      const size_t l3 = write_l2(flow, group_mac, net::kEthTypeIpv6, p);
      constexpr size_t kNsLen = 32;  // header 8 + target 16 + source link-layer option 8
      FlowAddress nd = flow;
      nd.flow_label = 0;
      const size_t l4 = l3 + write_ip(nd, 0, 255, net::kProtoIcmpv6, kNsLen, group, p + l3);
      uint8_t* icmp = p + l4;
      icmp[0] = 135;  // neighbour solicitation
      icmp[1] = 0;
      std::memcpy(icmp + 8, target.data(), 16);
      icmp[24] = 1;  // source link-layer address option, 1 unit of 8 bytes
      icmp[25] = 1;
      std::memcpy(icmp + 26, flow.src_mac.bytes.data(), 6);
      store16(icmp + 2, l4_checksum(p + l3, family, net::kProtoIcmpv6, icmp, kNsLen));
      len = l4 + kNsLen;
      break;
    }
    case NonRoceKind::tcp_syn: {
      const uint16_t ethertype =
          family == net::Family::ipv4 ? net::kEthTypeIpv4 : net::kEthTypeIpv6;
      const size_t l3 = write_l2(flow, flow.dst_mac, ethertype, p);
      constexpr size_t kTcpLen = 24;  // header + MSS option
      const size_t l4 =
          l3 + write_ip(flow, 0, flow.ttl, net::kProtoTcp, kTcpLen, flow.dst.bytes.data(), p + l3);
      uint8_t* t = p + l4;
      store16(t, flow.udp_sport);
      store16(t + 2, 22);  // a management session toward the remote host
      store32(t + 4, uint32_t(flow.ip_id) << 16 | flow.udp_sport);  // initial sequence
      store32(t + 8, 0);
      t[12] = uint8_t((kTcpLen / 4) << 4);
      t[13] = 0x02;  // SYN
      store16(t + 14, 64240);
      t[20] = 2;  // MSS
      t[21] = 4;
      store16(t + 22, family == net::Family::ipv4 ? 1460 : 1440);
      store16(t + 16, l4_checksum(p + l3, family, net::kProtoTcp, t, kTcpLen));
      len = l4 + kTcpLen;
      break;
    }
    case NonRoceKind::udp_other: {
      const uint16_t ethertype =
          family == net::Family::ipv4 ? net::kEthTypeIpv4 : net::kEthTypeIpv6;
      const size_t l3 = write_l2(flow, flow.dst_mac, ethertype, p);
      constexpr char kText[] = "srv6gw pass-through probe";
      constexpr size_t kDataLen = sizeof kText - 1;
      const size_t udp_len = net::kUdpHeaderLen + kDataLen;
      const size_t l4 =
          l3 + write_ip(flow, 0, flow.ttl, net::kProtoUdp, udp_len, flow.dst.bytes.data(), p + l3);
      uint8_t* u = p + l4;
      store16(u, flow.udp_sport);
      store16(u + 2, 9);  // discard
      store16(u + 4, uint16_t(udp_len));
      std::memcpy(u + net::kUdpHeaderLen, kText, kDataLen);
      uint16_t sum = l4_checksum(p + l3, family, net::kProtoUdp, u, udp_len);
      store16(u + 6, sum == 0 ? 0xffff : sum);
      len = l4 + udp_len;
      break;
    }
  }
  len = std::max(len, net::kMinEthFrameLen);
  if (len > out.size()) return 0;
  std::memcpy(out.data(), frame, len);
  return len;
}

// ------------------------------------------------------------------------------------------
// Mixes and validation

std::optional<std::vector<WeightedOpcode>> named_opcode_mix(std::string_view name) {
  using O = Opcode;
  if (name == "default") {
    return std::vector<WeightedOpcode>{
        {O::send_only, 2},          {O::write_first, 1}, {O::write_middle, 4},
        {O::write_last, 1},         {O::write_only, 2},  {O::read_request, 1},
        {O::read_response_only, 2}, {O::ack, 2},         {O::cnp, 1}};
  }
  if (name == "all") {
    std::vector<WeightedOpcode> mix;
    for (Opcode op : kAllOpcodes) mix.push_back({op, 1});
    return mix;
  }
  if (name == "writes") {
    return std::vector<WeightedOpcode>{
        {O::write_first, 1}, {O::write_middle, 6}, {O::write_last, 1}, {O::write_only, 2}};
  }
  if (name == "sends") {
    return std::vector<WeightedOpcode>{
        {O::send_first, 1}, {O::send_middle, 6}, {O::send_last, 1}, {O::send_only, 2}};
  }
  if (name == "reads") {
    return std::vector<WeightedOpcode>{{O::read_request, 1},
                                       {O::read_response_first, 1},
                                       {O::read_response_middle, 6},
                                       {O::read_response_last, 1},
                                       {O::read_response_only, 2}};
  }
  if (name == "control") {
    return std::vector<WeightedOpcode>{{O::ack, 4}, {O::read_request, 1}, {O::cnp, 1}};
  }
  return std::nullopt;
}

std::optional<std::vector<WeightedOpcode>> parse_opcode_mix(std::string_view text,
                                                            std::string& error) {
  if (auto named = named_opcode_mix(text)) return named;
  std::vector<WeightedOpcode> mix;
  for (std::string_view item : split(text, ',')) {
    std::string_view name;
    uint32_t weight = 1;
    if (!split_weight(item, name, weight)) {
      error = "opcodes: bad weight in '" + std::string(item) + "' (want NAME:1..1000000)";
      return std::nullopt;
    }
    auto op = parse_opcode(name);
    if (!op) {
      std::string known;
      for (const auto& n : kOpcodeNames) known += std::string(known.empty() ? "" : ", ") + n.name;
      error = "opcodes: unknown opcode '" + std::string(name) + "' (known: " + known +
              "; mixes: default, all, writes, sends, reads, control)";
      return std::nullopt;
    }
    mix.push_back({*op, weight});
  }
  return mix;
}

std::optional<std::vector<WeightedSize>> parse_size_mix(std::string_view text, std::string& error) {
  if (text == "imix") {
    return std::vector<WeightedSize>{{64, 7}, {576, 4}, {1500, 1}};
  }
  std::vector<WeightedSize> mix;
  for (std::string_view item : split(text, ',')) {
    std::string_view number;
    uint32_t weight = 1;
    uint32_t len = 0;
    if (!split_weight(item, number, weight)) {
      error = "sizes: bad weight in '" + std::string(item) + "' (want BYTES:1..1000000)";
      return std::nullopt;
    }
    if (!parse_number(number, len) || len < net::kMinEthFrameLen || len > kMaxFrameLen) {
      error = "sizes: '" + std::string(number) + "' is not a frame length in " +
              std::to_string(net::kMinEthFrameLen) + ".." + std::to_string(kMaxFrameLen);
      return std::nullopt;
    }
    mix.push_back({len, weight});
  }
  return mix;
}

std::string validate(const GenSpec& spec) {
  if (spec.hosts == 0 || spec.hosts > 65536) return "hosts: must be 1..65536";
  if (spec.qps_per_host == 0 || spec.qps_per_host > 65536) return "qps: must be 1..65536";
  const uint64_t qps = uint64_t(spec.hosts) * spec.qps_per_host;
  if (qps > (1u << 20)) return "hosts x qps: at most 1048576 queue pairs";
  if (spec.remote_hosts > 65536) return "remote-hosts: must be 0..65536 (0 = hosts)";
  const uint32_t remotes = remote_count(spec);
  if (uint64_t(spec.src_base4.host_order()) + spec.hosts - 1 > 0xffffffffull)
    return "src-base: IPv4 base + hosts runs past 255.255.255.255";
  if (uint64_t(spec.dst_base4.host_order()) + remotes - 1 > 0xffffffffull)
    return "dst-base: IPv4 base + remote hosts runs past 255.255.255.255";
  for (const auto& o : spec.opcodes) {
    if (o.weight == 0) return std::string("opcodes: weight of ") + to_string(o.opcode) + " is 0";
    if (!parse_opcode(to_string(o.opcode))) return "opcodes: unsupported opcode value";
  }
  for (const auto& s : spec.sizes) {
    if (s.weight == 0) return "sizes: weight of " + std::to_string(s.frame_len) + " is 0";
    if (s.frame_len < net::kMinEthFrameLen || s.frame_len > kMaxFrameLen)
      return "sizes: " + std::to_string(s.frame_len) + " is not a frame length in " +
             std::to_string(net::kMinEthFrameLen) + ".." + std::to_string(kMaxFrameLen);
  }
  if (spec.vlan_id && *spec.vlan_id > 4094) return "vlan: VLAN id must be 0..4094";
  if (spec.vlan_pcp > 7) return "pcp: must be 0..7";
  if (spec.dscp > 63) return "dscp: must be 0..63";
  if (spec.cnp_dscp > 63) return "cnp-dscp: must be 0..63";
  if (spec.ecn > 3) return "ecn: must be 0..3";
  if (spec.ttl == 0) return "ttl: must be 1..255";
  if (spec.dest_qp_base < 2 || uint64_t(spec.dest_qp_base) + qps > 0xffffff)
    return "dest-qp-base: DestQPs must stay in 2..0xfffffe (0/1 are QP0/QP1, 0xffffff is "
           "multicast)";
  if (spec.interval_ns == 0) return "interval-ns: must be positive";
  if (spec.message_min != 0 || spec.message_max != 0) {
    if (spec.message_min == 0 || spec.message_max < spec.message_min)
      return "message-packets: want MIN-MAX with 1 <= MIN <= MAX";
    if (spec.message_max > kMaxMessagePackets)
      return "message-packets: at most " + std::to_string(kMaxMessagePackets) + " per message";
  }
  return {};
}

// ------------------------------------------------------------------------------------------
// Generator

std::optional<Generator> Generator::create(const GenSpec& spec, std::string& error) {
  error = validate(spec);
  if (!error.empty()) return std::nullopt;
  Generator g;
  g.spec_ = spec;
  if (g.spec_.opcodes.empty()) g.spec_.opcodes = *named_opcode_mix("default");
  if (g.spec_.sizes.empty()) g.spec_.sizes = {{1024, 1}};
  uint64_t total = 0;
  for (const auto& o : g.spec_.opcodes) g.opcode_cdf_.push_back(total += o.weight);
  total = 0;
  for (const auto& s : g.spec_.sizes) g.size_cdf_.push_back(total += s.weight);

  g.rng_state_ = spec.seed;
  const uint32_t remotes = remote_count(spec);
  g.qps_.reserve(size_t(spec.hosts) * spec.qps_per_host);
  for (uint32_t h = 0; h < spec.hosts; ++h) {
    for (uint32_t q = 0; q < spec.qps_per_host; ++q) {
      const uint32_t index = h * spec.qps_per_host + q;
      QueuePair qp;
      qp.host = h;
      qp.qp = q;
      qp.remote = (h + q) % remotes;
      const bool v6 =
          spec.family == FamilyMode::ipv6 || (spec.family == FamilyMode::mixed && index % 2 == 1);
      qp.flow = g.flow_for(h, qp.remote, v6 ? net::Family::ipv6 : net::Family::ipv4);
      // RNICs derive the UDP source port from the QP (RSS/ECMP entropy), in 0xc000..0xffff.
      qp.flow.udp_sport = uint16_t(0xc000 | (g.random() & 0x3fff));
      qp.flow.flow_label = uint32_t(g.random() & 0xfffff) | 1;
      qp.flow.ip_id = uint16_t(g.random());
      qp.dest_qp = spec.dest_qp_base + index;
      qp.psn = uint32_t(g.random() & 0xffffff);
      qp.msn = uint32_t(g.random() & 0xffffff);
      qp.next_va = g.random() & 0x00007ffffffff000ull;
      qp.r_key = uint32_t(g.random());
      g.qps_.push_back(qp);
    }
  }
  return g;
}

FlowAddress Generator::flow_for(uint32_t host, uint32_t remote, net::Family family) const {
  FlowAddress f;
  f.src_mac = add_mac(spec_.src_mac, host);
  f.dst_mac = spec_.dst_mac;
  if (spec_.vlan_id) f.vlan_tci = uint16_t(uint16_t(spec_.vlan_pcp) << 13 | *spec_.vlan_id);
  if (family == net::Family::ipv4) {
    f.src = net::IpAddr::v4(add_v4(spec_.src_base4, host));
    f.dst = net::IpAddr::v4(add_v4(spec_.dst_base4, remote));
  } else {
    f.src = net::IpAddr::v6(add_v6(spec_.src_base6, host));
    f.dst = net::IpAddr::v6(add_v6(spec_.dst_base6, remote));
  }
  f.dscp = spec_.dscp;
  f.ecn = spec_.ecn;
  f.ttl = spec_.ttl;
  return f;
}

uint64_t Generator::random() {
  return splitmix64(rng_state_);
}

uint64_t Generator::random_below(uint64_t bound) {
  // Lemire's multiply-shift: deterministic and free of the modulo bias that matters little
  // here, but costs nothing to avoid.
  return uint64_t((unsigned __int128)random() * bound >> 64);
}

size_t Generator::next(std::span<uint8_t> out, FrameInfo& info) {
  if (produced_ >= spec_.count) return 0;
  const uint64_t index = produced_;
  info = FrameInfo{};
  info.timestamp_ns = spec_.start_time_ns + index * spec_.interval_ns;
  const auto pick = [&](const std::vector<uint64_t>& cdf) {
    const uint64_t r = random_below(cdf.back());
    return size_t(std::upper_bound(cdf.begin(), cdf.end(), r) - cdf.begin());
  };
  const bool non_roce = spec_.non_roce_every != 0 && (index + 1) % spec_.non_roce_every == 0;
  const bool messages = spec_.message_max != 0;
  if (messages && !non_roce && message_sent_ == message_len_) {
    // The next message: its QP, its opcode, its length.
    message_qp_ = random_below(qps_.size());
    message_opcode_ = spec_.opcodes[pick(opcode_cdf_)].opcode;
    message_len_ =
        single_packet_opcode(message_opcode_)
            ? 1
            : spec_.message_min + uint32_t(random_below(spec_.message_max - spec_.message_min + 1));
    message_sent_ = 0;
  }
  QueuePair& qp = qps_[messages ? message_qp_ : random_below(qps_.size())];
  info.host = qp.host;
  info.qp = qp.qp;
  info.dest_qp = qp.dest_qp;
  info.udp_sport = qp.flow.udp_sport;

  size_t len = 0;
  if (non_roce) {
    const NonRoceKind kind = kAllNonRoceKinds[non_roce_produced_ % kAllNonRoceKinds.size()];
    net::Family family = qp.flow.src.family;
    if (kind == NonRoceKind::arp_request) family = net::Family::ipv4;
    if (kind == NonRoceKind::nd_solicit) family = net::Family::ipv6;
    FlowAddress flow =
        family == qp.flow.src.family ? qp.flow : flow_for(qp.host, qp.remote, family);
    flow.ip_id = qp.flow.ip_id;
    len = build_non_roce_frame(kind, flow, out);
    if (len == 0) return 0;
    ++qp.flow.ip_id;
    ++non_roce_produced_;
    info.kind = FrameKind::non_roce;
    info.non_roce = kind;
    info.family = family;
  } else {
    const Opcode op = messages ? message_opcode(message_opcode_, message_sent_, message_len_)
                               : spec_.opcodes[pick(opcode_cdf_)].opcode;
    const uint32_t requested = spec_.sizes[pick(size_cdf_)].frame_len;
    RoceFields roce;
    roce.opcode = op;
    roce.pkey = spec_.pkey;
    roce.dest_qp = qp.dest_qp;
    roce.payload_len = payload_len_for(requested, qp.flow, op);
    roce.payload_seed = spec_.seed ^ (index * 0x9e3779b97f4a7c15ull);
    FlowAddress flow = qp.flow;
    if (op == Opcode::cnp) {
      // The PSN of a CNP is reserved; it goes out Not-ECT at the CNP priority, with BECN.
      roce.becn = true;
      roce.psn = 0;
      flow.ecn = 0;
      flow.dscp = spec_.cnp_dscp;
    } else {
      roce.psn = qp.psn;
      qp.psn = (qp.psn + 1) & 0xffffff;
    }
    roce.ack_req = op == Opcode::send_last || op == Opcode::send_only || op == Opcode::write_last ||
                   op == Opcode::write_only || op == Opcode::read_request;
    const OpcodeLayout layout = layout_of(op);
    if (layout.reth) {
      uint32_t length = roce.payload_len;
      if (op == Opcode::write_first) length *= messages ? message_len_ : kPacketsPerMessage;
      // A read asks for what one response of the requested size would carry.
      if (op == Opcode::read_request)
        length = payload_len_for(requested, qp.flow, Opcode::read_response_only);
      roce.reth = Reth{qp.next_va, qp.r_key, length};
      qp.next_va += length;
    }
    if (layout.aeth) {
      roce.aeth.msn = qp.msn;
      if (op == Opcode::ack || op == Opcode::read_response_only || op == Opcode::read_response_last)
        qp.msn = (qp.msn + 1) & 0xffffff;
    }
    len = build_roce_frame(flow, roce, out);
    if (len == 0) return 0;
    ++qp.flow.ip_id;
    if (messages) ++message_sent_;
    info.kind = FrameKind::roce;
    info.opcode = op;
    info.psn = roce.psn;
    info.family = flow.src.family;
  }
  info.len = len;
  ++produced_;
  return len;
}

std::optional<std::vector<GeneratedFrame>> generate_frames(const GenSpec& spec,
                                                           std::string& error) {
  auto gen = Generator::create(spec, error);
  if (!gen) return std::nullopt;
  std::vector<GeneratedFrame> frames;
  frames.reserve(spec.count);
  std::vector<uint8_t> buffer(kMaxFrameLen);
  FrameInfo info;
  while (size_t len = gen->next(buffer, info)) {
    frames.push_back({std::vector<uint8_t>(buffer.begin(), buffer.begin() + len), info});
  }
  if (frames.size() != spec.count) {
    error = "frame " + std::to_string(frames.size() + 1) + " could not be built";
    return std::nullopt;
  }
  return frames;
}

std::optional<std::vector<std::vector<uint8_t>>> generate(const GenSpec& spec, std::string& error) {
  auto frames = generate_frames(spec, error);
  if (!frames) return std::nullopt;
  std::vector<std::vector<uint8_t>> bytes;
  bytes.reserve(frames->size());
  for (auto& f : *frames) bytes.push_back(std::move(f.bytes));
  return bytes;
}

}  // namespace srv6gw::rocegen
