// SPDX-License-Identifier: BSD-3-Clause
// Worker side of path health probes (probe.hpp): reflect requests, hand replies over, drain
// the probe TX ring. Everything here runs only for packets to an end-probe SID.
#include "dataplane/datapath/probe.hpp"

#include <rte_branch_prediction.h>
#include <rte_mbuf.h>
#include <rte_ring.h>
#include <rte_ring_elem.h>

#include <cstring>

#include "dataplane/worker_context.hpp"
#include "net/bytes.hpp"
#include "net/headers.hpp"
#include "policy/runtime.hpp"
#include "srv6/probe.hpp"

namespace srv6gw::dataplane {

namespace {

void drop_probe(WorkerContext& w, rte_mbuf* m, DropReason r) {
  ++w.counters.drops[size_t(r)];
  rte_pktmbuf_free(m);
}

}  // namespace

unsigned probe_l2_len(const policy::Settings& s) {
  return s.fabric_vlan ? net::kEthHeaderLen + net::kVlanTagLen : net::kEthHeaderLen;
}

void write_probe_l2(uint8_t* frame, const uint8_t* dst_mac, const uint8_t* src_mac,
                    const policy::Settings& s, uint8_t traffic_class) {
  std::memmove(frame, dst_mac, 6);  // dst_mac may be the frame's own source MAC
  std::memmove(frame + 6, src_mac, 6);
  uint8_t* type = frame + 12;
  if (s.fabric_vlan) {
    net::store_be16(type, net::kEthTypeVlan);
    net::store_be16(type + 2, uint16_t(s.fabric_vlan_tci | s.pcp_tci_of_dscp[traffic_class >> 2]));
    type += net::kVlanTagLen;
  }
  net::store_be16(type, net::kEthTypeIpv6);
}

void handle_probe(WorkerContext& w, rte_mbuf* m, uint16_t l3_offset, uint64_t now_tsc) {
  WorkerCounters& c = w.counters;
  // Probes are a few hundred bytes: one segment. A chained one is not ours.
  if (unlikely(m->nb_segs != 1 || m->data_len <= l3_offset)) {
    ++c.probe_status[size_t(srv6::probe::Status::truncated)];
    drop_probe(w, m, DropReason::probe_refused);
    return;
  }
  uint8_t* frame = rte_pktmbuf_mtod(m, uint8_t*);
  const std::span<uint8_t> pkt(frame + l3_offset, size_t(m->data_len) - l3_offset);
  srv6::probe::Parsed parsed;
  srv6::probe::Status st = srv6::probe::parse(pkt, parsed);
  ++c.probe_status[size_t(st)];
  if (st != srv6::probe::Status::ok) {
    drop_probe(w, m, DropReason::probe_refused);
    return;
  }
  if (parsed.fields.type == srv6::probe::Type::reply) {
    ProbeReply r;
    r.rx_tsc = now_tsc;
    r.tx_time = parsed.fields.tx_time;
    r.reflect_time = parsed.fields.reflect_time;
    r.seq = parsed.fields.seq;
    r.path_id = parsed.fields.path_id;
    r.rail = w.rail;
    rte_pktmbuf_free(m);
    if (unlikely(!w.probe_replies ||
                 rte_ring_mp_enqueue_elem(w.probe_replies, &r, sizeof r) != 0)) {
      ++c.drops[size_t(DropReason::probe_ring_full)];
      return;
    }
    ++c.probe_replies;
    return;
  }
  size_t len = 0;
  st = srv6::probe::reflect(pkt, parsed, w.probe_hop_limit.load(std::memory_order_relaxed), now_tsc,
                            len);
  if (st != srv6::probe::Status::ok) {
    ++c.probe_status[size_t(st)];
    drop_probe(w, m, DropReason::probe_refused);
    return;
  }
  // Back to the neighbour it came from (or the rail's next hop), from our fabric MAC. With
  // fabric-vlan on, the reply carries exactly our tag with the PCP of its traffic class (the
  // request's, copied by reflect); without, the request's tags, if any, stay as they were.
  const policy::Settings& s = policy::settings_of_rail(*w.runtime->view(), w.rail);
  uint8_t dst[6];
  std::memcpy(dst, s.has_fabric_nexthop_mac ? s.fabric_nexthop_mac.bytes.data() : frame + 6, 6);
  rte_pktmbuf_trim(m, uint16_t(m->data_len - l3_offset - len));
  if (s.fabric_vlan) {
    const uint8_t traffic_class = uint8_t((pkt[0] & 0x0F) << 4 | pkt[1] >> 4);
    const unsigned l2 = probe_l2_len(s);
    // Requests come from RX mbufs: the headroom holds the 4 bytes an untagged one lacks.
    if (l3_offset > l2)
      rte_pktmbuf_adj(m, uint16_t(l3_offset - l2));
    else if (l3_offset < l2 && !rte_pktmbuf_prepend(m, uint16_t(l2 - l3_offset))) {
      drop_probe(w, m, DropReason::probe_refused);
      return;
    }
    write_probe_l2(rte_pktmbuf_mtod(m, uint8_t*), dst, w.fabric_port_mac.bytes.data(), s,
                   traffic_class);
  } else {
    std::memcpy(frame, dst, 6);
    std::memcpy(frame + 6, w.fabric_port_mac.bytes.data(), 6);
  }
  if (unlikely(!w.probe_tx || rte_ring_mp_enqueue(w.probe_tx, m) != 0)) {
    drop_probe(w, m, DropReason::probe_ring_full);
    return;
  }
  ++c.probe_reflected;
}

uint16_t take_probe_tx(WorkerContext& w, rte_mbuf** out, uint16_t max) {
  if (!w.probe_tx_drain) return 0;
  const unsigned n =
      rte_ring_sc_dequeue_burst(w.probe_tx, reinterpret_cast<void**>(out), max, nullptr);
  w.counters.probe_tx += n;
  return uint16_t(n);
}

}  // namespace srv6gw::dataplane
