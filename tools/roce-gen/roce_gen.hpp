// SPDX-License-Identifier: BSD-3-Clause
// RoCEv2 traffic generation in memory: single frames (build_roce_frame, build_non_roce_frame)
// and whole deterministic workloads (Generator, generate) of N hosts x M queue pairs with an
// opcode mix, frame sizes, IPv4/IPv6 and interleaved non-RoCE frames. Frame building writes
// into a caller's buffer and never allocates, so a future DPDK transmitter can build straight
// into mbufs; the pcap writing lives in the roce-gen tool, not here.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "net/addr.hpp"

namespace srv6gw::rocegen {

// Reliable Connected opcodes plus the RoCEv2 congestion notification packet.
enum class Opcode : uint8_t {
  send_first = 0x00,
  send_middle = 0x01,
  send_last = 0x02,
  send_only = 0x04,
  write_first = 0x06,
  write_middle = 0x07,
  write_last = 0x08,
  write_only = 0x0a,
  read_request = 0x0c,
  read_response_first = 0x0d,
  read_response_middle = 0x0e,
  read_response_last = 0x0f,
  read_response_only = 0x10,
  ack = 0x11,
  cnp = 0x81,
};

// Every opcode the generator knows, in a fixed order (summaries and tables use it).
inline constexpr std::array<Opcode, 15> kAllOpcodes = {Opcode::send_first,
                                                       Opcode::send_middle,
                                                       Opcode::send_last,
                                                       Opcode::send_only,
                                                       Opcode::write_first,
                                                       Opcode::write_middle,
                                                       Opcode::write_last,
                                                       Opcode::write_only,
                                                       Opcode::read_request,
                                                       Opcode::read_response_first,
                                                       Opcode::read_response_middle,
                                                       Opcode::read_response_last,
                                                       Opcode::read_response_only,
                                                       Opcode::ack,
                                                       Opcode::cnp};

// Command-line names ("send-only", "write-first", ..., "ack", "cnp").
const char* to_string(Opcode op);
std::optional<Opcode> parse_opcode(std::string_view name);

// Which extension headers follow the BTH and whether the packet carries data.
struct OpcodeLayout {
  bool reth = false;     // RDMA extended transport header, 16 bytes
  bool aeth = false;     // ACK extended transport header, 4 bytes
  bool payload = false;  // carries data (frame size applies)
  bool cnp = false;      // 16 reserved bytes, no payload
};
OpcodeLayout layout_of(Opcode op);

inline constexpr size_t kMaxFrameLen = 9216;  // jumbo; a 4096-MTU RoCE frame is ~4.2 KB

// Layer 2-4 identity of one queue pair's packets.
struct FlowAddress {
  net::MacAddr src_mac;
  net::MacAddr dst_mac;
  std::optional<uint16_t> vlan_tci;  // 802.1Q tag (PCP << 13 | VID) when set
  net::IpAddr src;                   // family selects IPv4 or IPv6
  net::IpAddr dst;
  uint8_t dscp = 26;
  uint8_t ecn = 0b10;       // ECT(0)
  uint8_t ttl = 64;         // TTL or hop limit
  uint32_t flow_label = 0;  // IPv6 only, 20 bits
  uint16_t ip_id = 0;       // IPv4 only
  uint16_t udp_sport = 0xc000;
};

struct Reth {
  uint64_t virtual_address = 0;
  uint32_t r_key = 0;
  uint32_t dma_length = 0;
};

struct Aeth {
  uint8_t syndrome = 0x1f;  // ACK, credit count "invalid" (as responders with an SRQ send)
  uint32_t msn = 0;         // 24 bits
};

struct RoceFields {
  Opcode opcode = Opcode::send_only;
  uint16_t pkey = 0xffff;
  bool fecn = false;
  bool becn = false;
  bool ack_req = false;
  bool mig_req = true;        // RNICs send M=1 (no automatic path migration in progress)
  uint32_t dest_qp = 0;       // 24 bits
  uint32_t psn = 0;           // 24 bits
  Reth reth;                  // used when layout_of(opcode).reth
  Aeth aeth;                  // used when layout_of(opcode).aeth
  uint32_t payload_len = 0;   // bytes of data; must be a multiple of 4 (pad count stays 0)
  uint64_t payload_seed = 0;  // the data bytes are a deterministic function of this seed
};

// Frame length (Ethernet header to ICRC, no FCS) of a RoCE frame with these parameters.
size_t roce_frame_len(const FlowAddress& flow, const RoceFields& roce);

// Data bytes for `opcode` so that the frame is as long as possible without exceeding
// `requested_frame_len`: data comes in 4-byte units (pad count stays 0), so the frame is
// `headers + 4k`. Opcodes without data, and requests shorter than the headers, give 0.
uint32_t payload_len_for(size_t requested_frame_len, const FlowAddress& flow, Opcode opcode);

// Writes a complete RoCEv2 frame (IPv4 header checksum, UDP checksum 0, ICRC) into `out`.
// Returns the frame length, or 0 when `out` is too small or the fields are invalid
// (payload_len not a multiple of 4, family none, frame above kMaxFrameLen).
size_t build_roce_frame(const FlowAddress& flow, const RoceFields& roce, std::span<uint8_t> out);

// Non-RoCE frames for pass-through tests.
enum class NonRoceKind : uint8_t {
  arp_request,  // who-has dst tell src (IPv4 addresses of the flow, or defaults)
  nd_solicit,   // IPv6 neighbour solicitation to the solicited-node group of dst
  tcp_syn,      // TCP SYN with an MSS option, valid checksums, flow family
  udp_other,    // UDP to the discard port (9), not 4791, valid checksum
};
inline constexpr std::array<NonRoceKind, 4> kAllNonRoceKinds = {
    NonRoceKind::arp_request, NonRoceKind::nd_solicit, NonRoceKind::tcp_syn,
    NonRoceKind::udp_other};
const char* to_string(NonRoceKind kind);

// Builds a non-RoCE frame from the flow's addresses. ARP needs an IPv4 flow and ND an IPv6
// flow; TCP and UDP use the flow's family. Frames shorter than 60 bytes get Ethernet padding
// (zeros after the IP packet). Returns the length, or 0 on a family mismatch or small `out`.
size_t build_non_roce_frame(NonRoceKind kind, const FlowAddress& flow, std::span<uint8_t> out);

// ------------------------------------------------------------------------------------------
// Workloads

enum class FamilyMode : uint8_t { ipv4, ipv6, mixed };  // mixed: QPs alternate v4 / v6

struct WeightedOpcode {
  Opcode opcode;
  uint32_t weight = 1;
};
struct WeightedSize {
  uint32_t frame_len;
  uint32_t weight = 1;
};

struct GenSpec {
  uint32_t hosts = 1;         // local hosts (source addresses)
  uint32_t qps_per_host = 1;  // queue pairs per local host
  uint32_t remote_hosts = 0;  // destination addresses; 0 = same as hosts
  uint64_t count = 1000;      // frames in total, RoCE and non-RoCE
  uint64_t seed = 1;
  FamilyMode family = FamilyMode::ipv4;
  std::vector<WeightedOpcode> opcodes;  // empty = the "default" mix
  std::vector<WeightedSize> sizes;      // empty = 1024
  std::optional<uint16_t> vlan_id;
  uint8_t vlan_pcp = 3;
  net::MacAddr src_mac{{0x02, 0x00, 0x00, 0x00, 0x00, 0x01}};  // + host index
  net::MacAddr dst_mac{{0x02, 0x00, 0x00, 0x00, 0x01, 0x01}};
  net::Ipv4Addr src_base4{{10, 0, 0, 1}};  // + host index
  net::Ipv4Addr dst_base4{{10, 0, 1, 1}};  // + remote index
  net::Ipv6Addr src_base6{{0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1}};
  net::Ipv6Addr dst_base6{{0xfd, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1}};
  uint8_t dscp = 26;
  uint8_t ecn = 0b10;     // on RoCE data and ACKs; CNPs go out Not-ECT
  uint8_t cnp_dscp = 48;  // CNPs use their own (high) priority, as RNICs default to
  uint8_t ttl = 64;
  uint16_t pkey = 0xffff;
  uint32_t dest_qp_base = 0x100;  // DestQP of QP i is base + i
  uint64_t non_roce_every = 0;    // every K-th frame is non-RoCE (0 = never)
  // Messages (realistic RDMA traffic): 0 = every frame picks a random QP. Otherwise a QP
  // picked at random sends one whole message of message_min..message_max packets (uniform)
  // back to back before the next QP is picked: a write/send/read-response opcode drawn from
  // the mix becomes first, middle..., last (only for one packet); read requests, ACKs and
  // CNPs are messages of one packet. Non-RoCE frames are interleaved without ending a message.
  uint32_t message_min = 0;
  uint32_t message_max = 0;
  uint64_t start_time_ns = 1704067200ull * 1000000000ull;  // 2024-01-01T00:00:00Z
  uint64_t interval_ns = 1000;
};

// Named opcode mixes: "default", "all", "writes", "sends", "reads", "control".
std::optional<std::vector<WeightedOpcode>> named_opcode_mix(std::string_view name);
// "send-only,write-first:3,ack" or a named mix; error names the bad element.
std::optional<std::vector<WeightedOpcode>> parse_opcode_mix(std::string_view text,
                                                            std::string& error);
// "imix" (64:7,576:4,1500:1), or "N[:weight],..."; error names the bad element.
std::optional<std::vector<WeightedSize>> parse_size_mix(std::string_view text, std::string& error);

// Empty when the spec is usable, else a message naming the offending field.
std::string validate(const GenSpec& spec);

enum class FrameKind : uint8_t { roce, non_roce };

// What the generator claims a frame is (tests compare it against independent dissectors).
struct FrameInfo {
  FrameKind kind = FrameKind::roce;
  net::Family family = net::Family::none;
  Opcode opcode = Opcode::send_only;                // kind == roce
  NonRoceKind non_roce = NonRoceKind::arp_request;  // kind == non_roce
  uint32_t host = 0;
  uint32_t qp = 0;  // index within the host
  uint32_t dest_qp = 0;
  uint32_t psn = 0;
  uint16_t udp_sport = 0;
  uint64_t timestamp_ns = 0;
  size_t len = 0;
};

// Streams the workload one frame at a time into caller buffers (no allocation per frame).
class Generator {
 public:
  // nullopt with `error` set when validate(spec) fails.
  static std::optional<Generator> create(const GenSpec& spec, std::string& error);

  // Builds the next frame into `out` (at least kMaxFrameLen bytes is always enough).
  // Returns the length, 0 when the workload is exhausted or `out` is too small.
  size_t next(std::span<uint8_t> out, FrameInfo& info);
  uint64_t produced() const { return produced_; }
  const GenSpec& spec() const { return spec_; }

 private:
  struct QueuePair {
    FlowAddress flow;  // ip_id advances per frame
    uint32_t host = 0;
    uint32_t qp = 0;  // index within the host
    uint32_t remote = 0;
    uint32_t dest_qp = 0;
    uint32_t psn = 0;
    uint32_t msn = 0;
    uint64_t next_va = 0;
    uint32_t r_key = 0;
  };
  Generator() = default;
  FlowAddress flow_for(uint32_t host, uint32_t remote, net::Family family) const;
  uint64_t random();
  uint64_t random_below(uint64_t bound);

  GenSpec spec_;
  std::vector<QueuePair> qps_;
  std::vector<uint64_t> opcode_cdf_;
  std::vector<uint64_t> size_cdf_;
  uint64_t rng_state_ = 0;
  uint64_t produced_ = 0;
  uint64_t non_roce_produced_ = 0;
  // Message mode: the QP sending the current message, its opcode (as drawn from the mix),
  // its length in packets and how many of them were sent.
  size_t message_qp_ = 0;
  Opcode message_opcode_ = Opcode::send_only;
  uint32_t message_len_ = 0;
  uint32_t message_sent_ = 0;
};

struct GeneratedFrame {
  std::vector<uint8_t> bytes;
  FrameInfo info;
};

// Whole workload in memory; nullopt with `error` on a bad spec.
std::optional<std::vector<GeneratedFrame>> generate_frames(const GenSpec& spec, std::string& error);
// Bytes only (benchmarks, tests).
std::optional<std::vector<std::vector<uint8_t>>> generate(const GenSpec& spec, std::string& error);

}  // namespace srv6gw::rocegen
