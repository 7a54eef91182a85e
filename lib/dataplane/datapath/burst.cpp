// SPDX-License-Identifier: BSD-3-Clause
// The per-burst packet pipeline: host -> fabric encapsulation, fabric -> host
// decapsulation. Worker side only (the Gateway is control/gateway.cpp).
#include "dataplane/datapath/burst.hpp"

#include <rte_branch_prediction.h>
#include <rte_cycles.h>
#include <rte_ether.h>
#include <rte_malloc.h>
#include <rte_mbuf.h>
#include <rte_prefetch.h>
#include <rte_rcu_qsbr.h>
#include <rte_ring.h>
#include <rte_ring_elem.h>

#include <algorithm>
#include <cstring>
#include <new>

#include "dataplane/datapath/chain.hpp"
#include "dataplane/datapath/flow_cache.hpp"
#include "dataplane/datapath/mbuf_span.hpp"
#include "dataplane/datapath/probe.hpp"
#include "dataplane/worker_context.hpp"
#include "net/bytes.hpp"
#include "net/l2.hpp"
#include "net/parse.hpp"
#include "policy/runtime.hpp"
#include "policy/selection.hpp"
#include "policy/steering.hpp"
#include "srv6/decap.hpp"
#include "srv6/encap.hpp"

namespace srv6gw::dataplane {

namespace {

constexpr unsigned kPrefetchAhead = 4;
// Packets per stage of process_host_burst (stack arrays; steer_bulk takes at most
// policy::kSteerBulkMax).
constexpr unsigned kStageMax = kBurstSize;
static_assert(kStageMax <= policy::kSteerBulkMax);

// Parser outcomes that are not RoCEv2 but legitimate host traffic: they take the non-RoCE
// action (pass by default: a bump in the wire must not break the host). Everything else
// that is not ok is a broken frame and is dropped as malformed.
constexpr bool is_pass_through(net::ParseStatus s) {
  switch (s) {
    case net::ParseStatus::not_ip:
    case net::ParseStatus::not_udp:
    case net::ParseStatus::not_roce:
    case net::ParseStatus::fragment:        // RoCEv2 is never fragmented
    case net::ParseStatus::too_many_vlans:  // deeper tag stacks than we classify
    case net::ParseStatus::ext_chain_too_long:
      return true;
    default:
      return false;
  }
}

// Stage-1 status of a host frame that arrived in more than one mbuf segment: not a parser
// outcome (never counted in parse_status), dropped as DropReason::oversize.
constexpr net::ParseStatus kChainedFrame = net::ParseStatus::count_;

inline void drop(WorkerCounters& c, rte_mbuf* m, DropReason r) {
  ++c.drops[size_t(r)];
  rte_pktmbuf_free(m);
}

inline void write_eth(uint8_t* p, const uint8_t* dst, const uint8_t* src, uint16_t ethertype) {
  std::memcpy(p, dst, 6);
  std::memcpy(p + 6, src, 6);
  net::store_be16(p + 12, ethertype);
}

// ---- Fabric VLAN and MTU (docs/design/vlan-jumbo.md) ----

// Ethernet header length of encapsulated frames: with the fabric 802.1Q tag or without.
inline unsigned fabric_l2_len(const policy::Settings& s) {
  return s.fabric_vlan ? net::kEthHeaderLen + net::kVlanTagLen : net::kEthHeaderLen;
}

// The outer Ethernet header toward the fabric. The tag is the one the configuration built
// (policy::Settings) with the PCP of the inner DSCP put in.
inline void write_fabric_l2(WorkerCounters& c, uint8_t* p, const uint8_t* dst, const uint8_t* src,
                            const policy::Settings& s, uint8_t dscp) {
  if (likely(!s.fabric_vlan)) {
    write_eth(p, dst, src, net::kEthTypeIpv6);
    return;
  }
  write_eth(p, dst, src, net::kEthTypeVlan);
  net::store_be16(p + 14, uint16_t(s.fabric_vlan_tci | s.pcp_tci_of_dscp[dscp & 0x3F]));
  net::store_be16(p + 16, net::kEthTypeIpv6);
  ++c.fabric_vlan_tagged_out;
}

// Prepends `len` bytes the caller knows the headroom holds (decap: the outer headers just
// removed leave at least 54 bytes), without rte_pktmbuf_prepend's check for room.
inline uint8_t* prepend_in_room(rte_mbuf* m, uint16_t len) {
  m->data_off = uint16_t(m->data_off - len);
  m->data_len = uint16_t(m->data_len + len);
  m->pkt_len += len;
  return rte_pktmbuf_mtod(m, uint8_t*);
}

// Decap with host mode keep: the Ethernet header toward the host with the outer tag.
[[gnu::noinline, gnu::cold]] void write_host_tagged_eth(rte_mbuf* m, const uint8_t* dst,
                                                        const uint8_t* src, uint32_t outer_tag,
                                                        uint16_t inner_type) {
  uint8_t* eth = prepend_in_room(m, uint16_t(net::kEthHeaderLen + net::kVlanTagLen));
  write_eth(eth, dst, src, uint16_t(outer_tag >> 16));
  net::store_be16(eth + 14, uint16_t(outer_tag));
  net::store_be16(eth + 16, inner_type);
}

// Stage 1 for a host frame of several segments. Without a host MTU (today's behaviour) it is
// refused (kChainedFrame, dropped as oversize). With one, its headers are pulled into the
// first segment and it is parsed with its whole length when they all lie there; otherwise
// refused the same way.
[[gnu::noinline, gnu::cold]] net::ParseStatus parse_chained_host_frame(WorkerCounters& c,
                                                                       const policy::Settings& s,
                                                                       rte_mbuf* m,
                                                                       net::PacketInfo& info);

// ---- Local SR engine feedback taps ----
// Events are rare (CE marks, CNPs): they are built out of line, collected per burst and
// enqueued with one ring operation at its end. A full ring drops the event and counts it.

[[gnu::noinline]] void flush_feedback(WorkerContext& w) {
  const unsigned n = w.n_pending;
  w.n_pending = 0;
  const unsigned queued = w.feedback_ring
                              ? rte_ring_mp_enqueue_burst_elem(w.feedback_ring, w.pending,
                                                               sizeof(FeedbackEvent), n, nullptr)
                              : 0;
  w.counters.feedback_events += queued;
  w.counters.feedback_dropped += n - queued;
}

[[gnu::noinline, gnu::cold]] void push_feedback(WorkerContext& w, FeedbackKind kind,
                                                const net::PacketInfo& inner, bool has_tag,
                                                uint16_t tag, uint64_t tsc) {
  if (w.n_pending == WorkerContext::kPendingCapacity) flush_feedback(w);
  FeedbackEvent& e = w.pending[w.n_pending++];
  e.tsc = tsc;
  e.kind = kind;
  e.flags = uint8_t((has_tag ? kFeedbackHasTag : 0) |
                    (inner.family == net::Family::ipv6 ? kFeedbackIpv6 : 0));
  e.tag = tag;
  e.dest_qp = inner.bth.dest_qp;
  std::memcpy(e.inner_src, inner.src.bytes.data(), 16);
  std::memcpy(e.inner_dst, inner.dst.bytes.data(), 16);
}

// The remote's path id (or a reflected one of ours) in a decapsulated packet: the SRH Tag,
// else, with engine/path-id-in-source, the low 16 bits of the outer source (`outer`: the
// outer IPv6 header). False when the packet carries none.
inline bool decap_path_tag(const WorkerContext& w, const srv6::DecapResult& r, const uint8_t* outer,
                           uint16_t& tag) {
  if (r.had_srh) {
    tag = r.srh_tag;
    return true;
  }
  if (!w.path_id_in_source.load(std::memory_order_relaxed)) return false;
  tag = srv6::read_source_path_id(outer);
  return true;
}

// Decap of a CE-marked packet from the remote's path `tag`: remember it for the CNP our host
// will send back to that source (path-id reflection) and tell the engine.
[[gnu::noinline, gnu::cold]] void tap_ce(WorkerContext& w, const net::PacketInfo& inner,
                                         const srv6::DecapResult& r, const uint8_t* outer,
                                         uint64_t tsc) {
  uint16_t tag = 0;
  const bool has_tag = decap_path_tag(w, r, outer, tag);
  if (has_tag && !(tag & kTagReflected) && w.reflect)
    w.reflect->record(pair_hash(inner.src, inner.dst), tag, tsc);
  push_feedback(w, FeedbackKind::ce_decap, inner, has_tag, tag, tsc);
}

[[gnu::noinline, gnu::cold]] void tap_cnp_decap(WorkerContext& w, const net::PacketInfo& inner,
                                                const srv6::DecapResult& r, const uint8_t* outer,
                                                uint64_t tsc) {
  uint16_t tag = 0;
  const bool has_tag = decap_path_tag(w, r, outer, tag);
  push_feedback(w, FeedbackKind::cnp_decap, inner, has_tag, tag, tsc);
}

// Encap of a CNP our host sends: the Tag (or, without an SRH, the source's path-id bits when
// `carried`) carries the remote's path that saw CE toward our host when we have a fresh one
// for this pair, else our own path id.
[[gnu::noinline, gnu::cold]] uint16_t cnp_tag(WorkerContext& w, const net::PacketInfo& info,
                                              bool carried, uint16_t own, uint64_t tsc) {
  const uint16_t reflected = w.reflect ? w.reflect->lookup(pair_hash(info.dst, info.src), tsc) : 0;
  const uint16_t tag = reflected ? reflected : own;
  if (reflected && carried) ++w.counters.cnp_reflected;
  push_feedback(w, FeedbackKind::cnp_encap, info, carried, tag, tsc);
  return tag;
}

// How many packets each of our paths carried toward this remote host lately (fallback blame
// for CNPs without a reflected path id). One worker-private cache line per host pair; the key
// comes from the CRC of the address pair the flow hash already computed.
inline void note_recent_path(WorkerContext& w, uint32_t pair_crc, uint32_t slot, uint8_t idx,
                             uint64_t now, uint16_t packets) {
  const uint32_t key = pair_hash_from_pair_crc(pair_crc);
  recent_note(w.recent[key & (kRecentEntries - 1)], key, slot, idx,
              uint32_t(now >> w.recent_epoch_shift), packets);
}

// The recent-path notes and path counters of one chunk, added per run of consecutive
// encapsulations of one flow class on one path (RDMA sends runs of one flow: one table update
// and one counter update per run instead of one per packet, ~30 instructions a packet). The
// sums are those of one update per packet; they reach the table and the counters at the
// run's end, within the same burst.
struct PathRun {
  const FlowClass* cls = nullptr;
  uint8_t idx = 0;
  uint16_t packets = 0;
  uint32_t bytes = 0;
  bool batch = false;  // the chunk was classified in runs (some packets share a class)
};

inline void count_on_path(WorkerContext& w, uint32_t slot, uint8_t idx, uint16_t packets,
                          uint32_t bytes) {
  PathCounter& pc = w.path_counters[size_t(slot) * policy::kMaxPaths + idx];
  pc.packets += packets;
  pc.bytes += bytes;
}

inline void path_run_flush(WorkerContext& w, PathRun& run, uint64_t now) {
  if (run.packets != 0) {
    note_recent_path(w, run.cls->pair_crc, run.cls->slot, run.idx, now, run.packets);
    count_on_path(w, run.cls->slot, run.idx, run.packets, run.bytes);
  }
  run.packets = 0;
}

// One packet of `bytes` (as sent) of flow class fc (steered to `slot`, the caller's copy of
// fc.slot: the counter stores may alias fc) encapsulated on path idx.
inline void path_run_add(WorkerContext& w, PathRun& run, const FlowClass& fc, uint32_t slot,
                         uint8_t idx, uint64_t now, uint32_t bytes) {
  if (!run.batch) {  // no runs in this chunk: one update per packet, as nothing is shared
    count_on_path(w, slot, idx, 1, bytes);
    note_recent_path(w, fc.pair_crc, slot, idx, now, 1);
    return;
  }
  if (run.packets != 0 && run.cls == &fc && run.idx == idx) {
    ++run.packets;
    run.bytes += bytes;
    return;
  }
  path_run_flush(w, run, now);
  run.cls = &fc;
  run.idx = idx;
  run.packets = 1;
  run.bytes = bytes;
}

// A worker of a rail with its own source address writes it over the template's (the
// gateway's): all 16 bytes, or the upper 14 when the low 16 bits carry the path id.
inline void write_rail_source(const WorkerContext& w, uint8_t* ipv6, bool keep_path_id) {
  std::memcpy(ipv6 + 8, w.rail_source.bytes.data(), keep_path_id ? 14 : 16);
}

// What encap_one reads from the view and the worker that stays the same for a burst, read
// once per burst: the per-packet stores into counters and mbufs may alias these fields, so
// read in encap_one they were loaded again for every packet (~20 instructions a packet).
// The engine's relaxed flags take effect from the next burst on, as they did from the next
// packet.
struct EncapBurst {
  const policy::Settings* s;  // this rail's
  uint64_t rail_bit;          // WorkerContext::rail_bit
  uint32_t entropy_mask;      // engine/source-entropy-bits (0 = off)
  bool tag_in_source;         // engine/path-id-in-source
  bool miss_pass;             // steering-miss action is pass
  bool own_macs;              // outer MACs: configured next hop and our fabric port
  uint8_t l2_len;             // fabric_l2_len(*s)

  EncapBurst(const WorkerContext& w, const policy::View& view)
      : s(&policy::settings_of_rail(view, w.rail)),
        rail_bit(w.rail_bit),
        entropy_mask(w.source_entropy_mask.load(std::memory_order_relaxed)),
        tag_in_source(w.path_id_in_source.load(std::memory_order_relaxed)),
        miss_pass(view.settings.steering_miss == config::MissAction::pass),
        own_macs(!s->transparent_mac && s->has_fabric_nexthop_mac),
        l2_len(uint8_t(fabric_l2_len(*s))) {}
};

// engine/source-entropy-bits: the flow label's low bits into the outer source (`ipv6`: the
// outer header just written), for a far NIC that hashes only addresses. Off: one branch.
inline void spread_source(const EncapBurst& b, uint8_t* ipv6, uint32_t flow_label) {
  if (b.entropy_mask != 0) srv6::write_source_entropy(ipv6, b.entropy_mask, flow_label);
}

// No room before the frame for the outer headers (`hdr_len` bytes in place of its L2 header,
// `l3_offset`): with multi-segment TX they go into a header segment chained in front, else
// the frame is dropped. Returns the chain's head with `hdr` at the headers, or null (dropped,
// counted).
[[gnu::noinline, gnu::cold]] rte_mbuf* prepend_header_segment(WorkerContext& w, rte_mbuf* m,
                                                              uint16_t l3_offset, uint16_t hdr_len,
                                                              uint8_t*& hdr) {
  WorkerCounters& c = w.counters;
  if (!w.multiseg_tx || !w.header_pool) {
    drop(c, m, DropReason::no_headroom);
    return nullptr;
  }
  rte_pktmbuf_adj(m, l3_offset);
  rte_mbuf* h = rte_pktmbuf_alloc(w.header_pool);
  if (unlikely(!h)) {
    drop(c, m, DropReason::header_alloc_failed);
    return nullptr;
  }
  hdr = reinterpret_cast<uint8_t*>(rte_pktmbuf_append(h, hdr_len));
  if (unlikely(!hdr || rte_pktmbuf_chain(h, m) != 0)) {
    rte_pktmbuf_free_seg(h);
    drop(c, m, DropReason::no_headroom);
    return nullptr;
  }
  h->port = m->port;
  ++c.chained_header;
  return h;
}

// Encapsulates one classified RoCEv2 packet of flow class `fc` (steered to fc.slot; kNoSlot:
// a miss). Returns the mbuf to send (the same one, or a header segment chained in front of
// it) or null when the packet was dropped or counted as a miss that the caller passes (then
// `*passed` is set and m is unchanged).
inline rte_mbuf* encap_one(WorkerContext& w, const EncapBurst& b, rte_mbuf* m,
                           const net::PacketInfo& info, const FlowClass& fc, uint64_t now,
                           PathRun& run, bool* passed) {
  WorkerCounters& c = w.counters;
  const uint32_t slot = fc.slot;
  const policy::CompiledPolicy* p =
      likely(slot != policy::kNoSlot) ? w.runtime->policy(slot) : nullptr;
  // A policy scoped to other rails (CompiledPolicy::rail_mask) is a miss on this one.
  if (unlikely(p == nullptr || !(p->rail_mask & b.rail_bit))) {
    if (p != nullptr) ++c.steering_off_rail;
    if (b.miss_pass) {
      *passed = true;
      return nullptr;
    }
    drop(c, m, DropReason::steering_miss);
    return nullptr;
  }
  const uint8_t idx =
      policy::select_path(*p, slot, fc.flow_hash, info.bth.opcode, now, w.selector, info.l3_len);
  if (unlikely(idx == policy::kNoPath)) {
    drop(c, m, DropReason::no_usable_path);
    return nullptr;
  }
  const policy::CompiledPath& path = p->paths[idx];
  const srv6::EncapTemplate& t = path.encap;
  const policy::Settings& s = *b.s;
  // Port MTUs: the packet as received on the host port, and as it would leave the fabric port.
  if (unlikely(s.mtu_checks) &&
      (info.l3_len > s.host_mtu_limit || t.size + info.l3_len > s.fabric_mtu_limit)) {
    drop(c, m, DropReason::too_big);
    return nullptr;
  }

  // Outer Ethernet addresses: the configured next hop and our fabric port (the usual case),
  // else the frame's own, saved before the new header overwrites them.
  uint8_t macs[12];
  const uint8_t* dst_mac = macs;
  const uint8_t* src_mac = macs + 6;
  if (likely(b.own_macs)) {
    dst_mac = s.fabric_nexthop_mac.bytes.data();
    src_mac = w.fabric_port_mac.bytes.data();
  } else {
    std::memcpy(macs, rte_pktmbuf_mtod(m, const uint8_t*), sizeof macs);
    if (!s.transparent_mac) src_mac = w.fabric_port_mac.bytes.data();
  }

  // Ethernet padding after the IP packet would end up inside the outer payload: cut it.
  const uint32_t ip_end = uint32_t(info.l3_offset) + info.l3_len;
  if (unlikely(m->pkt_len > ip_end)) trim_packet(m, ip_end);

  const unsigned l2_len = b.l2_len;
  const uint16_t hdr_len = uint16_t(l2_len + t.size);
  uint8_t* hdr;
  rte_mbuf* head = m;
  if (likely(rte_pktmbuf_headroom(m) + info.l3_offset >= hdr_len)) {
    // The frame's L2 header gives way to ours in one move of the data start (an
    // rte_pktmbuf_adj then a prepend wrote the same three fields twice). The parser read
    // the IP header in this segment, so l3_offset <= data_len.
    const int grow = int(hdr_len) - int(info.l3_offset);
    m->data_off = uint16_t(m->data_off - grow);
    m->data_len = uint16_t(m->data_len + grow);
    m->pkt_len = uint32_t(int64_t(m->pkt_len) + grow);
    hdr = rte_pktmbuf_mtod(m, uint8_t*);
  } else {
    head = prepend_header_segment(w, m, info.l3_offset, hdr_len, hdr);
    if (unlikely(head == nullptr)) return nullptr;
  }

  write_fabric_l2(c, hdr, dst_mac, src_mac, s, info.dscp);
  srv6::EncapFields f;
  f.inner_len = info.l3_len;
  f.inner_proto = info.family == net::Family::ipv4 ? net::kProtoIpv4 : net::kProtoIpv6;
  f.traffic_class = uint8_t(info.dscp << 2 | info.ecn);
  f.flow_label = fc.flow_label;
  f.tag_in_source = b.tag_in_source;
  f.tag = likely(!info.is_cnp) ? path.path_id
                               : cnp_tag(w, info, t.has_srh || f.tag_in_source, path.path_id, now);
  srv6::write_encap(t, hdr + l2_len, f);
  if (unlikely(w.rail_source_override) && p->default_source)
    write_rail_source(w, hdr + l2_len, f.tag_in_source && !t.has_srh);
  spread_source(b, hdr + l2_len, f.flow_label);

  ++c.encap;
  path_run_add(w, run, fc, slot, idx, now, head->pkt_len);
  return head;
}

// The decap step, the mirror of encap_one: decapsulates one frame addressed to our local SID
// (`behavior`; the outer IPv6 header at `l3_offset`), taps the engine's feedback and writes
// the inner packet's Ethernet header toward the host (`host_mac`: configured or learned,
// null to keep the frame's own). Returns the mbuf to send, or null when the packet was
// dropped (counted).
inline rte_mbuf* decap_one(WorkerContext& w, const policy::Settings& s, rte_mbuf* m,
                           uint16_t l3_offset, srv6::LocalSidBehavior behavior,
                           const uint8_t* host_mac, uint64_t now) {
  WorkerCounters& c = w.counters;
  // A chain (a frame beyond one segment) is decapsulated only with a fabric MTU configured
  // (its headers were pulled into the first segment); otherwise refused by name as before.
  // Chains not for us took the non-SID action before, untouched (e.g. our own
  // chained-header encapsulations looped back by net_ring).
  const bool chained = unlikely(m->nb_segs != 1);
  if (chained) {
    if (s.fabric_mtu == 0) {
      drop(c, m, DropReason::oversize);
      return nullptr;
    }
    ++c.chained_in;
  }
  // The L2 walk put the IPv6 header after the Ethernet header: anything further is tags.
  const bool tagged = unlikely(l3_offset != net::kEthHeaderLen);
  if (tagged) ++c.fabric_vlan_tagged_in;
  uint8_t* d = rte_pktmbuf_mtod(m, uint8_t*);
  const uint16_t len = m->data_len;
  srv6::DecapResult r;
  const std::span<uint8_t> outer(d + l3_offset, len - l3_offset);
  // A chain: lengths from the whole packet, headers from the first segment.
  const srv6::DecapStatus ds = likely(!chained)
                                   ? srv6::decap(outer, behavior, r)
                                   : srv6::decap(outer, m->pkt_len - l3_offset, behavior, r);
  ++c.decap_status[size_t(ds)];
  if (unlikely(ds != srv6::DecapStatus::ok)) {
    drop(c, m, DropReason::decap_refused);
    return nullptr;
  }
  // Port MTUs: the outer IPv6 packet as it came from the fabric (trailing Ethernet bytes not
  // counted), the inner one as it would leave the host port.
  if (unlikely(s.mtu_checks) &&
      (net::kIpv6HeaderLen + net::load_be16(d + l3_offset + 4) > s.fabric_mtu_limit ||
       r.inner_len > s.host_mtu_limit)) {
    drop(c, m, DropReason::too_big);
    return nullptr;
  }
  // Feedback taps for the local SR engine (RoCEv2 inner packets only).
  if (r.inner_marked_ce) ++c.inner_ce_marked;
  {
    const bool ce = r.outer_ecn == 3;
    c.outer_ce_seen += ce;
    // Raw storage: parse_ip() writes every field on ok and clears the record otherwise.
    alignas(net::PacketInfo) unsigned char inner_storage[sizeof(net::PacketInfo)];
    net::PacketInfo& inner = *std::launder(reinterpret_cast<net::PacketInfo*>(inner_storage));
    const uint8_t* inner_ip = d + l3_offset + r.inner_offset;
    const std::span<const uint8_t> ip(inner_ip, r.inner_len);
    // A chain's inner headers are read from the first segment only.
    const bool readable = !chained || roce_headers_fit(inner_ip, len - l3_offset - r.inner_offset,
                                                       r.inner_family == net::Family::ipv6);
    // Only a CE mark or a CNP makes a tap fire: data packets without a mark skip the parse
    // (may_be_cnp never says no to a packet that parses as a CNP; a chain's first segment
    // may not hold what it reads, so a chain is parsed as before).
    const bool taps_may_fire = ce || chained || net::may_be_cnp(ip, r.inner_family);
    if (taps_may_fire && readable &&
        net::parse_ip(ip, r.inner_family, inner) == net::ParseStatus::ok) {
      if (unlikely(ce)) tap_ce(w, inner, r, d + l3_offset, now);
      if (unlikely(inner.is_cnp)) {
        ++c.cnp_seen;
        tap_cnp_decap(w, inner, r, d + l3_offset, now);
      }
    }
  }

  uint8_t macs[12];
  std::memcpy(macs, d, sizeof macs);
  // The first tag (TPID and TCI) for host mode keep, read before the headers are rewritten.
  const uint32_t outer_tag = tagged && s.host_keep_vlan ? net::load_be32(d + 12) : 0;
  rte_pktmbuf_adj(m, uint16_t(l3_offset + r.inner_offset));
  if (m->pkt_len > r.inner_len) trim_packet(m, r.inner_len);
  const uint8_t* dst_mac = macs;
  const uint8_t* src_mac = macs + 6;
  if (!s.transparent_mac) {
    if (host_mac) dst_mac = host_mac;
    src_mac = w.host_port_mac.bytes.data();
  }
  const uint16_t inner_type =
      r.inner_family == net::Family::ipv4 ? net::kEthTypeIpv4 : net::kEthTypeIpv6;
  // Decap "keep": the frame toward the host carries the outer frame's first tag as received.
  if (likely(outer_tag == 0))
    write_eth(prepend_in_room(m, net::kEthHeaderLen), dst_mac, src_mac, inner_type);
  else
    write_host_tagged_eth(m, dst_mac, src_mac, outer_tag, inner_type);
  ++c.decap;
  return m;
}

net::ParseStatus parse_chained_host_frame(WorkerCounters& c, const policy::Settings& s, rte_mbuf* m,
                                          net::PacketInfo& info) {
  if (s.host_mtu == 0) return kChainedFrame;
  pull_up_headers(m);
  const uint8_t* d = rte_pktmbuf_mtod(m, const uint8_t*);
  net::L2Header l2;
  if (net::walk_l2(d, m->data_len, l2, [](unsigned, uint16_t, uint16_t) {}) !=
          net::ParseStatus::ok ||
      (l2.ethertype != net::kEthTypeIpv4 && l2.ethertype != net::kEthTypeIpv6) ||
      !roce_headers_fit(d + l2.l3_offset, m->data_len - l2.l3_offset,
                        l2.ethertype == net::kEthTypeIpv6))
    return kChainedFrame;
  ++c.chained_in;
  // Every read of the parser lies in the headers just checked to be in the first segment;
  // lengths are checked against the whole frame.
  return net::parse_frame(std::span<const uint8_t>(d, m->pkt_len), info);
}

}  // namespace

uint16_t process_host_burst(WorkerContext& w, rte_mbuf** pkts, uint16_t n, rte_mbuf** out) {
  const uint64_t start = rte_rdtsc();
  const uint64_t now = w.fixed_tsc ? w.fixed_tsc : start;
  WorkerCounters& c = w.counters;
  const policy::View& view = *w.runtime->view();
  uint16_t n_out = 0;
  ++c.bursts;
  LastFlow& last = w.last_flow;
  last_flow_check(last, view.generation, now);
  const bool reuse_flows = w.flow_cache;
  const EncapBurst encap_burst(w, view);
  for (unsigned i = 0; i < kPrefetchAhead && i < n; ++i)
    rte_prefetch0(rte_pktmbuf_mtod(pkts[i], void*));
  // Learn the host RNIC's MAC from what it sends, once per burst (before the burst is
  // rewritten), so decapsulated frames reach it without configuration. The shared line is
  // written only when the MAC changes.
  if (n > 0 && !policy::settings_of_rail(view, w.rail).has_host_mac && pkts[0]->data_len >= 12) {
    const uint64_t mac = pack_mac(rte_pktmbuf_mtod(pkts[0], const uint8_t*) + 6);
    if (unlikely(mac != w.last_learned_host_mac) && !(mac >> 40 & 0x01)) {  // not multicast
      w.last_learned_host_mac = mac;
      w.learned_host_mac->packed.store(mac, std::memory_order_relaxed);
    }
  }
  // Staged over chunks of the burst: parse every packet, steer all RoCEv2 packets with bulk
  // hash lookups, then select and encapsulate in arrival order (the output keeps the input
  // order of the packets that go out).
  for (uint16_t base = 0; base < n; base += kStageMax) {
    const unsigned cn = std::min(unsigned(n - base), kStageMax);
    rte_mbuf** chunk = pkts + base;
    // Raw storage: parse_frame() writes every field of a PacketInfo on ok and clears the
    // record itself otherwise, so value-initialising 32 of them would be wasted stores.
    alignas(net::PacketInfo) unsigned char info_storage[kStageMax * sizeof(net::PacketInfo)];
    net::PacketInfo* info = std::launder(reinterpret_cast<net::PacketInfo*>(info_storage));
    net::ParseStatus status[kStageMax];
    const net::PacketInfo* roce[kStageMax];
    unsigned n_roce = 0;
    uint64_t rx_bytes = 0;

    // Stage 1: parse. Counters of the chunk are added once at its end (the stores into
    // PacketInfo may alias them, which would otherwise force a load and store per packet).
    for (unsigned i = 0; i < cn; ++i) {
      if (base + i + kPrefetchAhead < n)
        rte_prefetch0(rte_pktmbuf_mtod(pkts[base + i + kPrefetchAhead], void*));
      rte_mbuf* m = chunk[i];
      rx_bytes += m->pkt_len;
      net::ParseStatus st;
      if (unlikely(m->nb_segs != 1)) {
        // Larger than one segment: scattered RX with a host MTU configured, or a vdev such as
        // net_pcap chaining what a NIC would drop at its MTU (refused without a host MTU).
        st = parse_chained_host_frame(c, policy::settings_of_rail(view, w.rail), m, info[i]);
        if (st == kChainedFrame) {
          status[i] = st;
          continue;
        }
      } else {
        st = net::parse_frame(first_segment(m), info[i]);
      }
      status[i] = st;
      if (likely(st == net::ParseStatus::ok)) {
        if (unlikely(info[i].is_cnp)) ++c.cnp_seen;
        roce[n_roce++] = &info[i];
      } else {
        ++c.parse_status[size_t(st)];
      }
    }
    c.rx_host += cn;
    c.rx_host_bytes += rx_bytes;
    c.parse_status[size_t(net::ParseStatus::ok)] += n_roce;

    // Stage 2: classification. A packet of the same flow as the RoCEv2 packet before it
    // (datapath/flow_cache.hpp; the first one of the chunk is compared with the worker's last
    // flow) shares its FlowClass; the first packet of each run is steered, one bulk lookup
    // per hash level over those, and hashed. classes[0] is the carried last flow's.
    FlowClass classes[kStageMax + 1];
    uint8_t class_of[kStageMax];  // per RoCEv2 packet, index into classes
    const net::PacketInfo* firsts[kStageMax];
    uint32_t first_slots[kStageMax];
    unsigned n_firsts = 0;
    bool shared_classes = false;  // some packets of the chunk share a FlowClass
    if (n_roce != 0 && reuse_flows && last.compare) {
      classes[0] = last.cls;
      // The first packet against the carried key, every other one against the packet
      // before it (read in place: no key is built per packet).
      if (!(last.valid && same_flow(flow_key(*roce[0]), last.key))) firsts[n_firsts++] = roce[0];
      class_of[0] = uint8_t(n_firsts);
      for (unsigned j = 1; j < n_roce; ++j) {
        if (!same_flow(*roce[j], *roce[j - 1])) firsts[n_firsts++] = roce[j];
        class_of[j] = uint8_t(n_firsts);
      }
      last.key = flow_key(*roce[n_roce - 1]);
      if (n_firsts != 0) policy::steer_bulk(view.steering, firsts, n_firsts, first_slots);
      for (unsigned f = 0; f < n_firsts; ++f)
        classes[f + 1] = classify_flow(*firsts[f], first_slots[f]);
      last.cls = classes[n_firsts];
      last.valid = true;
      last.compare = runs_worth_comparing(n_roce, n_roce - n_firsts);
      shared_classes = n_firsts < n_roce;
    } else if (n_roce != 0) {
      // Flows changed every packet lately (or the cache is off): each packet is steered and
      // hashed as its own flow, no compare.
      policy::steer_bulk(view.steering, roce, n_roce, first_slots);
      for (unsigned j = 0; j < n_roce; ++j) {
        classes[j + 1] = classify_flow(*roce[j], first_slots[j]);
        class_of[j] = uint8_t(j + 1);
      }
      const net::PacketInfo& tail = *roce[n_roce - 1];
      last.compare =
          reuse_flows && (n_roce > 1 ? same_flow(tail, *roce[n_roce - 2])
                                     : last.valid && same_flow(flow_key(tail), last.key));
      last.key = flow_key(tail);
      last.cls = classes[n_roce];
      last.valid = true;
    }

    // Stage 3: select + encapsulate (or pass / drop), in arrival order.
    unsigned r = 0;
    PathRun run;
    run.batch = shared_classes;
    for (unsigned i = 0; i < cn; ++i) {
      rte_mbuf* m = chunk[i];
      const net::ParseStatus st = status[i];
      if (likely(st == net::ParseStatus::ok)) {
        bool passed = false;
        rte_mbuf* res =
            encap_one(w, encap_burst, m, info[i], classes[class_of[r++]], now, run, &passed);
        if (likely(res != nullptr)) {
          out[n_out++] = res;
        } else if (passed) {
          ++c.passed_host_to_fabric;
          out[n_out++] = m;
        }
      } else if (is_pass_through(st)) {
        if (view.settings.non_roce == config::MissAction::pass) {
          ++c.passed_host_to_fabric;
          out[n_out++] = m;
        } else {
          drop(c, m, DropReason::non_roce_dropped);
        }
      } else {
        drop(c, m, unlikely(st == kChainedFrame) ? DropReason::oversize : DropReason::malformed);
      }
    }
    path_run_flush(w, run, now);  // `classes` ends with the chunk
  }
  if (unlikely(w.n_pending != 0)) flush_feedback(w);
  c.balanced_overflow = w.selector.balanced_overflow;
  const uint64_t spent = rte_rdtsc() - start;
  c.busy_tsc += spent;
  c.pipeline_tsc += spent;
  return n_out;
}

uint16_t process_fabric_burst(WorkerContext& w, rte_mbuf** pkts, uint16_t n, rte_mbuf** out) {
  const uint64_t start = rte_rdtsc();
  const uint64_t now = w.fixed_tsc ? w.fixed_tsc : start;
  WorkerCounters& c = w.counters;
  const policy::View& view = *w.runtime->view();
  const policy::Settings& s = policy::settings_of_rail(view, w.rail);
  const policy::LocalSidTable& sids = *view.local_sids;
  const bool have_sids = !sids.empty();  // once per burst: counter stores may alias the table
  // Destination MAC toward the host: configured, else learned, else (nothing learned yet,
  // null) the frame's own destination is kept.
  uint8_t learned_mac[6];
  const uint64_t learned =
      s.has_host_mac ? 0 : w.learned_host_mac->packed.load(std::memory_order_relaxed);
  unpack_mac(learned, learned_mac);
  const uint8_t* host_mac = s.has_host_mac ? s.host_mac.bytes.data()
                            : learned != 0 ? learned_mac
                                           : nullptr;
  uint16_t n_out = 0;
  ++c.bursts;
  // The local SID of the previous packet: fabric traffic arrives for a few SIDs, mostly
  // ours for decap, so most packets match it and skip the table's binary search. Only an
  // entry found for this rail is kept, so a match is what find_on_rail would return.
  const policy::LocalSidTable::Entry* last_sid = nullptr;
  for (unsigned i = 0; i < kPrefetchAhead && i < n; ++i)
    rte_prefetch0(rte_pktmbuf_mtod(pkts[i], void*));
  for (uint16_t i = 0; i < n; ++i) {
    if (i + kPrefetchAhead < n) rte_prefetch0(rte_pktmbuf_mtod(pkts[i + kPrefetchAhead], void*));
    rte_mbuf* m = pkts[i];
    ++c.rx_fabric;
    c.rx_fabric_bytes += m->pkt_len;
    // A chain's headers are read from its first segment (MTU configured: pulled up there).
    if (unlikely(m->nb_segs != 1) && s.fabric_mtu != 0) pull_up_headers(m);
    const uint8_t* d = rte_pktmbuf_mtod(m, const uint8_t*);
    const uint16_t len = m->data_len;

    // Classify: L2 (the parser's walk), then the outer destination against our local SIDs.
    // More tags than we walk is not a frame for one of our SIDs: the non-SID action.
    net::L2Header l2;
    const net::ParseStatus l2_status =
        net::walk_l2(d, len, l2, [](unsigned, uint16_t, uint16_t) {});
    if (unlikely(l2_status == net::ParseStatus::truncated_eth ||
                 l2_status == net::ParseStatus::truncated_vlan)) {
      ++c.parse_status[size_t(l2_status)];
      drop(c, m, DropReason::malformed);
      continue;
    }
    const uint16_t off = l2.l3_offset;
    const policy::LocalSidTable::Entry* sid = nullptr;
    if (l2_status == net::ParseStatus::ok && l2.ethertype == net::kEthTypeIpv6 &&
        len >= off + net::kIpv6HeaderLen && have_sids) {
      const uint8_t* dst = d + off + 24;
      if (last_sid && std::memcmp(last_sid->sid.bytes.data(), dst, 16) == 0) {
        sid = last_sid;
      } else {
        sid = sids.find_on_rail(dst, w.rail);
        if (sid) last_sid = sid;
      }
    }
    if (!sid) {
      if (s.fabric_non_sid == config::MissAction::pass) {
        ++c.passed_fabric_to_host;
        out[n_out++] = m;
      } else {
        drop(c, m, DropReason::non_sid_dropped);
      }
      continue;
    }
    if (unlikely(sid->behavior == srv6::LocalSidBehavior::end_probe)) {
      handle_probe(w, m, off, now);  // reflected toward the fabric or handed to the prober
      continue;
    }
    if (rte_mbuf* res = decap_one(w, s, m, off, sid->behavior, host_mac, now);
        likely(res != nullptr))
      out[n_out++] = res;
  }
  if (unlikely(w.n_pending != 0)) flush_feedback(w);
  const uint64_t spent = rte_rdtsc() - start;
  c.busy_tsc += spent;
  c.pipeline_tsc += spent;
  return n_out;
}

WorkerCounters& counters(WorkerContext& w) {
  return w.counters;
}
unsigned worker_index(const WorkerContext& w) {
  return w.index;
}
void worker_online(WorkerContext& w) {
  rte_rcu_qsbr_thread_online(w.qsbr, w.index);
}
void worker_quiescent(WorkerContext& w) {
  rte_rcu_qsbr_quiescent(w.qsbr, w.index);
}
void worker_offline(WorkerContext& w) {
  rte_rcu_qsbr_thread_offline(w.qsbr, w.index);
}

}  // namespace srv6gw::dataplane
