// SPDX-License-Identifier: BSD-3-Clause
// Per-worker cache of the last flow's classification. An RDMA queue pair sends its messages
// as runs of back-to-back packets (16-64 and more per message), so most packets belong to the
// same flow as the packet before them: such a packet reuses that packet's steering slot and
// hashes instead of another exact-table lookup and CRC pass. Everything cached is a function
// of the FlowKey's fields (steering: family, destination, DestQP, DSCP; hashes: those plus
// source and UDP source port) and, for the slot, of the published steering tables.
//
// Invalidation (the slot): the control thread edits the exact table and the LPM in place
// between a transitional and a final View (policy/runtime.hpp), and every publication carries
// a new View::generation. A carried entry is used only under the generation it was filled
// under, so the first burst that sees a new view looks its flows up again. Within one burst
// a run shares the classification of its first packet, as all packets of a burst already
// share the burst's view. One case returns to an older generation: an Apply whose table
// update fails puts the old view back (Runtime::abort_publish); an entry filled from the
// half-updated table during it would then look current, so entries also expire after
// kLastFlowMaxAgeTsc cycles, which bounds that staleness to well under a millisecond.
#pragma once

#include <cstdint>
#include <cstring>

#include "net/parse.hpp"
#include "policy/selection.hpp"
#include "policy/steering.hpp"

namespace srv6gw::dataplane {

// Every packet field the cached classification depends on, in five words.
struct FlowKey {
  uint64_t head = 0;  // family | DSCP << 8 | UDP source port << 16 | DestQP << 32
  uint64_t src[2] = {};
  uint64_t dst[2] = {};
};

inline FlowKey flow_key(const net::PacketInfo& info) {
  FlowKey k;
  k.head = uint64_t(uint8_t(info.family)) | uint64_t(info.dscp) << 8 |
           uint64_t(info.udp_sport) << 16 | uint64_t(info.bth.dest_qp) << 32;
  std::memcpy(k.src, info.src.bytes.data(), 16);
  std::memcpy(k.dst, info.dst.bytes.data(), 16);
  return k;
}

// Branch-free: a run of one flow is the common case, a new flow the other; neither should
// cost a mispredicted compare per word.
inline bool same_flow(const FlowKey& a, const FlowKey& b) {
  return ((a.head ^ b.head) | (a.src[0] ^ b.src[0]) | (a.src[1] ^ b.src[1]) |
          (a.dst[0] ^ b.dst[0]) | (a.dst[1] ^ b.dst[1])) == 0;
}

// same_flow(flow_key(a), flow_key(b)) read from the two records in place.
inline bool same_flow(const net::PacketInfo& a, const net::PacketInfo& b) {
  uint64_t x[4], y[4];
  std::memcpy(x, a.src.bytes.data(), 16);
  std::memcpy(x + 2, a.dst.bytes.data(), 16);
  std::memcpy(y, b.src.bytes.data(), 16);
  std::memcpy(y + 2, b.dst.bytes.data(), 16);
  const uint32_t head = uint32_t(uint8_t(a.family) ^ uint8_t(b.family)) |
                        uint32_t(a.dscp ^ b.dscp) | uint32_t(a.udp_sport ^ b.udp_sport) |
                        (a.bth.dest_qp ^ b.bth.dest_qp);
  return (head | ((x[0] ^ y[0]) | (x[1] ^ y[1]) | (x[2] ^ y[2]) | (x[3] ^ y[3]))) == 0;
}

// What the encapsulation step needs of a flow beyond the packet itself. No member
// initialisers: the pipeline keeps a stack array of them per chunk, each written before use.
struct FlowClass {
  uint32_t slot;        // steering result (policy::kNoSlot: a miss)
  uint32_t pair_crc;    // net::crc32c_pair(src, dst)
  uint32_t flow_hash;   // policy::flow_hash of (src, dst, DestQP)
  uint32_t flow_label;  // net::outer_flow_label of the packet
};

// One CRC pass over the inner address pair feeds the flow hash, the outer flow label and the
// recent-path key (net/hash.hpp: the same values as three passes).
inline FlowClass classify_flow(const net::PacketInfo& info, uint32_t slot) {
  FlowClass c;
  c.slot = slot;
  c.pair_crc = net::crc32c_pair(info.src.bytes.data(), info.dst.bytes.data());
  c.flow_hash = policy::flow_hash_from_pair_crc(c.pair_crc, info.family, info.bth.dest_qp);
  c.flow_label = net::outer_flow_label_from_pair_crc(c.pair_crc, info.udp_sport, info.bth.dest_qp);
  return c;
}

// ~0.4 ms at 2.5 GHz (see the invalidation note at the top).
inline constexpr uint64_t kLastFlowMaxAgeTsc = uint64_t(1) << 20;

// The last RoCEv2 flow a worker classified. Worker-private (WorkerContext::last_flow).
struct LastFlow {
  FlowKey key;
  FlowClass cls{policy::kNoSlot, 0, 0, 0};
  uint64_t generation = 0;  // View::generation `cls.slot` was looked up under
  uint64_t filled_tsc = 0;  // when the current generation's first entry was made
  bool valid = false;
  // Whether the next chunk looks for runs (see runs_worth_comparing). Only a cost switch:
  // both ways classify every packet the same.
  bool compare = true;
};

// Comparing each packet with the one before it and sharing classes costs ~60 instructions a
// packet when no packet repeats its predecessor's flow (traffic that changes flow every
// packet). A chunk that compared keeps comparing while at least a quarter of its RoCEv2
// packets were repeats; one that did not compare starts again when its last RoCEv2 packet
// repeats the one before it (one compare per chunk), which a run of 16+ packets shows at
// once.
inline bool runs_worth_comparing(unsigned n_roce, unsigned n_repeats) {
  return n_repeats * 4 >= n_roce;
}

// Start of a burst under `generation` at TSC `now`: drops the entry when the view changed
// or the entry is too old.
inline void last_flow_check(LastFlow& last, uint64_t generation, uint64_t now) {
  if (__builtin_expect(last.generation != generation || now - last.filled_tsc > kLastFlowMaxAgeTsc,
                       0)) {
    last.valid = false;
    last.generation = generation;
    last.filled_tsc = now;
  }
}

}  // namespace srv6gw::dataplane
