// SPDX-License-Identifier: BSD-3-Clause
// Probe wire format (probe.hpp, docs/design/probing.md).
#include "srv6/probe.hpp"

#include <cstring>

#include "net/bytes.hpp"

namespace srv6gw::srv6::probe {

namespace {

inline void store_be64(uint8_t* p, uint64_t v) {
  net::store_be32(p, uint32_t(v >> 32));
  net::store_be32(p + 4, uint32_t(v));
}
inline uint64_t load_be64(const uint8_t* p) {
  return uint64_t(net::load_be32(p)) << 32 | net::load_be32(p + 4);
}

uint32_t sum16(uint32_t acc, const uint8_t* p, size_t n) {
  for (; n >= 2; p += 2, n -= 2) acc += net::load_be16(p);
  if (n) acc += uint32_t(p[0]) << 8;
  return acc;
}

// IPv6 header + SRH with `segs` in path order (SRH holds them reversed), segments left n-1.
void write_route(uint8_t* p, const net::Ipv6Addr& src, std::span<const net::Ipv6Addr> segs,
                 uint8_t traffic_class, uint8_t hop_limit, uint16_t tag, uint16_t payload_len,
                 uint32_t flow_label) {
  const size_t n = segs.size();
  net::store_be32(p, 6u << 28 | uint32_t(traffic_class) << 20 | (flow_label & 0xFFFFF));
  net::store_be16(p + 4, payload_len);
  p[6] = net::kProtoRouting;
  p[7] = hop_limit;
  std::memcpy(p + 8, src.bytes.data(), 16);
  std::memcpy(p + 24, segs[0].bytes.data(), 16);
  uint8_t* srh = p + net::kIpv6HeaderLen;
  srh[0] = net::kProtoUdp;
  srh[1] = uint8_t(2 * n);
  srh[2] = net::kSrhRoutingType;
  srh[3] = uint8_t(n - 1);  // segments left
  srh[4] = uint8_t(n - 1);  // last entry
  srh[5] = 0;               // flags
  net::store_be16(srh + 6, tag);
  for (size_t i = 0; i < n; ++i) std::memcpy(srh + 8 + 16 * i, segs[n - 1 - i].bytes.data(), 16);
}

void write_header(uint8_t* h, const Fields& f, uint8_t n_return) {
  net::store_be32(h, kMagic);
  h[4] = kVersion;
  h[5] = uint8_t(f.type);
  h[6] = n_return;
  h[7] = 0;
  net::store_be16(h + 8, f.path_id);
  net::store_be16(h + 10, 0);
  net::store_be32(h + 12, f.seq);
  store_be64(h + 16, f.tx_time);
  store_be64(h + 24, f.reflect_time);
}

// Fills the UDP header (ports, length) and the checksum over header + payload.
void finish_udp(uint8_t* udp, uint16_t sport, size_t udp_len, const net::Ipv6Addr& src,
                const net::Ipv6Addr& final_dst) {
  net::store_be16(udp, sport);
  net::store_be16(udp + 2, kUdpPort);
  net::store_be16(udp + 4, uint16_t(udp_len));
  net::store_be16(udp + 6, 0);
  uint16_t c = udp6_checksum(src, final_dst, std::span<const uint8_t>(udp, udp_len));
  net::store_be16(udp + 6, c);
}

// Flow label and UDP source port from the path id: stable per path (the fabric's ECMP keeps
// one path's probes on one link, like its data) and distinct between paths.
uint32_t flow_label_of(uint16_t path_id) {
  return (uint32_t(path_id) * 0x9E3779B1u >> 12) & 0xFFFFF;
}
uint16_t source_port_of(uint16_t path_id) {
  return uint16_t(0xC000 | (path_id & 0x3FFF));
}

}  // namespace

const char* to_string(Status s) {
  return net::enum_name(kStatusNames, s);
}

uint16_t udp6_checksum(const net::Ipv6Addr& src, const net::Ipv6Addr& final_dst,
                       std::span<const uint8_t> udp) {
  uint32_t acc = 0;
  acc = sum16(acc, src.bytes.data(), 16);
  acc = sum16(acc, final_dst.bytes.data(), 16);
  acc += uint32_t(udp.size() >> 16) + uint32_t(udp.size() & 0xFFFF);
  acc += net::kProtoUdp;
  acc = sum16(acc, udp.data(), udp.size());
  while (acc >> 16) acc = (acc & 0xFFFF) + (acc >> 16);
  const uint16_t c = uint16_t(~acc);
  return c == 0 ? 0xFFFF : c;  // RFC 8200: a computed 0 is sent as all ones
}

Status build_request(const RequestSpec& spec, const Fields& fields, std::span<uint8_t> out,
                     size_t& len) {
  const size_t n = spec.segments.size(), r = spec.return_segments.size();
  if (n == 0 || n > kMaxSegments || r == 0 || r > kMaxSegments) return Status::bad_segment_count;
  const size_t total = request_len(n, r);
  if (out.size() < total) return Status::buffer_too_small;
  uint8_t* p = out.data();
  const size_t srh_len = 8 + 16 * n;
  const size_t udp_len = net::kUdpHeaderLen + kHeaderLen + 16 * r;
  write_route(p, spec.source, spec.segments, spec.traffic_class, spec.hop_limit, fields.path_id,
              uint16_t(srh_len + udp_len), flow_label_of(fields.path_id));
  uint8_t* udp = p + net::kIpv6HeaderLen + srh_len;
  Fields f = fields;
  f.type = Type::request;
  write_header(udp + net::kUdpHeaderLen, f, uint8_t(r));
  uint8_t* ret = udp + net::kUdpHeaderLen + kHeaderLen;
  for (size_t i = 0; i < r; ++i)
    std::memcpy(ret + 16 * i, spec.return_segments[i].bytes.data(), 16);
  finish_udp(udp, source_port_of(fields.path_id), udp_len, spec.source, spec.segments[n - 1]);
  len = total;
  return Status::ok;
}

Status parse(std::span<const uint8_t> pkt, Parsed& out) {
  const uint8_t* p = pkt.data();
  if (pkt.size() < net::kIpv6HeaderLen) return Status::truncated;
  if ((p[0] >> 4) != 6) return Status::not_ipv6;
  const size_t payload = net::load_be16(p + 4);
  if (net::kIpv6HeaderLen + payload > pkt.size()) return Status::bad_length;
  const size_t end = net::kIpv6HeaderLen + payload;
  if (p[6] != net::kProtoRouting) return Status::no_srh;
  if (end < net::kIpv6HeaderLen + 8) return Status::truncated;
  const uint8_t* srh = p + net::kIpv6HeaderLen;
  if (srh[2] != net::kSrhRoutingType) return Status::no_srh;
  const size_t srh_len = 8 + 8 * size_t(srh[1]);
  if (net::kIpv6HeaderLen + srh_len > end) return Status::truncated;
  const size_t n_seg = size_t(srh[4]) + 1;
  if (8 + 16 * n_seg > srh_len || srh[3] > srh[4]) return Status::srh_inconsistent;
  if (srh[3] != 0) return Status::segments_left_nonzero;
  if (srh[0] != net::kProtoUdp) return Status::not_probe;
  const size_t udp_off = net::kIpv6HeaderLen + srh_len;
  if (udp_off + net::kUdpHeaderLen > end) return Status::truncated;
  const uint8_t* udp = p + udp_off;
  if (net::load_be16(udp + 2) != kUdpPort) return Status::not_probe;
  const size_t udp_len = net::load_be16(udp + 4);
  if (udp_len != end - udp_off) return Status::bad_udp_length;
  if (udp_len < net::kUdpHeaderLen + kHeaderLen) return Status::truncated;
  net::Ipv6Addr src, dst;
  std::memcpy(src.bytes.data(), p + 8, 16);
  std::memcpy(dst.bytes.data(), p + 24, 16);
  // Segments left is 0: the destination address is the final one (RFC 8200 8.1).
  if (net::load_be16(udp + 6) == 0 ||
      udp6_checksum(src, dst, std::span<const uint8_t>(udp, udp_len)) != 0xFFFF) {
    // A correct checksum sums (with itself) to all ones, so the complement is 0, which the
    // function returns as 0xFFFF.
    return Status::bad_checksum;
  }
  const uint8_t* h = udp + net::kUdpHeaderLen;
  if (net::load_be32(h) != kMagic) return Status::bad_magic;
  if (h[4] != kVersion) return Status::bad_version;
  if (h[5] != uint8_t(Type::request) && h[5] != uint8_t(Type::reply)) return Status::bad_type;
  out.fields.type = Type(h[5]);
  out.fields.path_id = net::load_be16(h + 8);
  out.fields.seq = net::load_be32(h + 12);
  out.fields.tx_time = load_be64(h + 16);
  out.fields.reflect_time = load_be64(h + 24);
  out.destination = dst;
  out.traffic_class = uint8_t(net::load_be32(p) >> 20);
  out.tag = net::load_be16(srh + 6);
  out.n_return = 0;
  out.returns_offset = 0;
  if (out.fields.type == Type::request) {
    const size_t r = h[6];
    if (r == 0 || r > kMaxSegments || net::kUdpHeaderLen + kHeaderLen + 16 * r > udp_len)
      return Status::bad_return_list;
    out.n_return = uint8_t(r);
    out.returns_offset = udp_off + net::kUdpHeaderLen + kHeaderLen;
  }
  return Status::ok;
}

Status reflect(std::span<uint8_t> pkt, const Parsed& request, uint8_t hop_limit,
               uint64_t reflect_time, size_t& len) {
  if (request.fields.type != Type::request || request.n_return == 0 ||
      request.n_return > kMaxSegments)
    return Status::bad_type;
  const size_t r = request.n_return;
  if (request.returns_offset + 16 * r > pkt.size()) return Status::bad_return_list;
  const size_t total = reply_len(r);
  // The reply overlaps the request's bytes: compose it aside, then copy it over.
  uint8_t buf[reply_len(kMaxSegments)];
  net::Ipv6Addr segs[kMaxSegments];
  for (size_t i = 0; i < r; ++i)
    std::memcpy(segs[i].bytes.data(), pkt.data() + request.returns_offset + 16 * i, 16);
  const size_t srh_len = 8 + 16 * r;
  const size_t udp_len = net::kUdpHeaderLen + kHeaderLen;
  write_route(buf, request.destination, std::span<const net::Ipv6Addr>(segs, r),
              request.traffic_class, hop_limit, request.tag, uint16_t(srh_len + udp_len),
              flow_label_of(request.fields.path_id));
  uint8_t* udp = buf + net::kIpv6HeaderLen + srh_len;
  Fields f = request.fields;
  f.type = Type::reply;
  f.reflect_time = reflect_time;
  write_header(udp + net::kUdpHeaderLen, f, 0);
  finish_udp(udp, source_port_of(request.fields.path_id), udp_len, request.destination,
             segs[r - 1]);
  if (total > pkt.size()) return Status::buffer_too_small;
  std::memcpy(pkt.data(), buf, total);
  len = total;
  return Status::ok;
}

}  // namespace srv6gw::srv6::probe
