// SPDX-License-Identifier: BSD-3-Clause
// The kernel's side of a fabric VLAN trunk, for tests/integration/test_fabric_vlan_kernel.py,
// on kernels without 802.1Q VLAN devices (no 8021q): tc clsact programs on the veth facing
// the gateway do what a VLAN subinterface would, so the kernel's seg6local sees plain frames.
//
// Ingress: the kernel has already moved the frame's 802.1Q tag into skb metadata (receive
// path, before tc), so skb->vlan_present/vlan_tci carry it. Only frames tagged with
// PEER_VID pass; their PCP is counted and the tag popped. Everything else is dropped and
// counted (an untagged or wrongly tagged frame would not reach a VLAN subinterface either).
// Egress: every frame gets the tag, PCP = top three bits of the IPv6 traffic class's DSCP
// (the gateway's default DSCP->PCP map), 0 for non-IPv6; the PCP is counted.
//
// Counters, array map peer_counts (each program loaded by its own tc command has its own
// copy; the test reads each program's): [0..7] ingress frames per PCP accepted,
// [8..15] egress frames per PCP pushed, [16] ingress frames refused.
// Built by the test: clang -O2 -g -target bpf -DPEER_VID=<vid> -c.
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/pkt_cls.h>

#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>

#ifndef PEER_VID
#error "build with -DPEER_VID=<the fabric VLAN id>"
#endif

enum { kEgressBase = 8, kRefused = 16, kSlots = 17 };

struct {
  __uint(type, BPF_MAP_TYPE_ARRAY);
  __uint(max_entries, kSlots);
  __type(key, __u32);
  __type(value, __u64);
} peer_counts SEC(".maps");

static void count(__u32 slot) {
  __u64* v = bpf_map_lookup_elem(&peer_counts, &slot);
  if (v) __sync_fetch_and_add(v, 1);
}

SEC("tc/ingress") int vlan_in(struct __sk_buff* skb) {
  if (skb->vlan_present && (skb->vlan_tci & 0x0FFF) == PEER_VID) {
    count(skb->vlan_tci >> 13);
    if (bpf_skb_vlan_pop(skb) == 0) return TC_ACT_OK;
  }
  count(kRefused);
  return TC_ACT_SHOT;
}

SEC("tc/egress") int vlan_out(struct __sk_buff* skb) {
  __u32 pcp = 0;
  __u8 ver_tc[2];
  if (skb->protocol == bpf_htons(ETH_P_IPV6) &&
      bpf_skb_load_bytes(skb, ETH_HLEN, ver_tc, sizeof ver_tc) == 0) {
    const __u32 traffic_class = (__u32)(ver_tc[0] & 0x0F) << 4 | ver_tc[1] >> 4;
    pcp = traffic_class >> 5;  // DSCP (traffic_class >> 2), its top three bits
  }
  count(kEgressBase + pcp);
  if (bpf_skb_vlan_push(skb, bpf_htons(ETH_P_8021Q), (__u16)(pcp << 13 | PEER_VID)) != 0)
    return TC_ACT_SHOT;
  return TC_ACT_OK;
}

char _license[] SEC("license") = "GPL";
