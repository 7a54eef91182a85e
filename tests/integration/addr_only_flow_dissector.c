// SPDX-License-Identifier: BSD-3-Clause
// A NIC that hashes only IP addresses, for tests/integration/test_fabric_rx_spread.py: a BPF
// flow dissector (attached to one network namespace) that reports the outer IPv6 source and
// destination and nothing else, so the kernel's packet hash there (what PACKET_FANOUT_HASH,
// and so net_af_packet with several queue pairs, spreads by) ignores the flow label, the
// extension headers and the inner packet, as many NICs' receive-side scaling does for SRv6.
// Built by the test: clang -O2 -target bpf -c.
#include <linux/bpf.h>

__attribute__((section("flow_dissector"), used)) int addr_only(struct __sk_buff* skb) {
  struct bpf_flow_keys* k = skb->flow_keys;
  unsigned char* data = (unsigned char*)(long)skb->data;
  unsigned char* end = (unsigned char*)(long)skb->data_end;
  unsigned nhoff = k->nhoff;
  if (nhoff > 128) return BPF_DROP;  // bounded, or the verifier refuses the access below
  unsigned char* ip6 = data + nhoff;
  if (ip6 + 40 > end || (ip6[0] >> 4) != 6) return BPF_DROP;
  __builtin_memcpy(k->ipv6_src, ip6 + 8, 16);
  __builtin_memcpy(k->ipv6_dst, ip6 + 24, 16);
  k->addr_proto = 0x86DD;                  // ETH_P_IPV6, host order
  k->n_proto = __builtin_bswap16(0x86DD);  // network order
  k->ip_proto = 0;
  k->thoff = (unsigned short)(nhoff + 40);
  return BPF_OK;
}

char _license[] __attribute__((section("license"), used)) = "GPL";
