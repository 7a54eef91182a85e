// SPDX-License-Identifier: BSD-3-Clause
// ECN marking for the emulated fabric's rate-limited links, as a tc clsact egress classifier.
//
// Why not RED or fq_codel: the kernels this runs on may lack them (the test machine's kernel
// has only HTB, TBF and FIFO qdiscs, and no pedit action). This program sits in front of the
// link's shaper (clsact egress runs before the qdisc enqueue) and keeps the shaper's queue
// length as it will be when this packet is enqueued: a FIFO drained at the link rate
// (RATE_BPS, the same rate HTB shapes to), filled by every packet. A packet that arrives when
// the queue holds more than MARK_BYTES is marked CE if it is ECN-capable: the DCTCP-style
// step marking a switch applies at its ECN threshold (RED with min = max). The outer IPv6
// header is what is marked: it is what the switch sees of SRv6 traffic. Packets the shaper's
// FIFO will drop (queue above LIMIT_BYTES) are not added to the queue.
//
// Built per link by tools/fabric (clang -target bpf) with -DRATE_BPS= -DMARK_BYTES=
// -DLIMIT_BYTES=; counters (packets, ECT seen, CE marked, over the limit) in map `marker_stats`.
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/pkt_cls.h>
#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>

#ifndef RATE_BPS
#error "build with -DRATE_BPS=<link rate in bit/s>"
#endif
#ifndef MARK_BYTES
#define MARK_BYTES 30000
#endif
#ifndef LIMIT_BYTES
#define LIMIT_BYTES 150000
#endif

struct queue_state {
  struct bpf_spin_lock lock;
  __u64 last_ns;
  __u64 backlog_bytes;
};

struct marker_counters {
  __u64 packets;
  __u64 ect;
  __u64 marked;
  __u64 over_limit;
};

struct {
  __uint(type, BPF_MAP_TYPE_ARRAY);
  __uint(max_entries, 1);
  __type(key, __u32);
  __type(value, struct queue_state);
} marker_queue SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
  __uint(max_entries, 1);
  __type(key, __u32);
  __type(value, struct marker_counters);
} marker_stats SEC(".maps");

SEC("classifier")
int ecn_mark(struct __sk_buff* skb) {
  __u32 zero = 0;
  struct queue_state* q = bpf_map_lookup_elem(&marker_queue, &zero);
  struct marker_counters* c = bpf_map_lookup_elem(&marker_stats, &zero);
  if (!q || !c) return TC_ACT_OK;
  c->packets++;

  const __u64 now = bpf_ktime_get_ns();
  __u64 backlog;
  int over = 0;
  bpf_spin_lock(&q->lock);
  __u64 elapsed = now - q->last_ns;
  if (elapsed > 1000000000ull) elapsed = 1000000000ull;  // idle for long: queue empty anyway
  const __u64 drained = elapsed * (RATE_BPS / 8) / 1000000000ull;
  backlog = q->backlog_bytes > drained ? q->backlog_bytes - drained : 0;
  q->last_ns = now;
  if (backlog + skb->len > LIMIT_BYTES) {
    over = 1;  // the FIFO behind us drops it: it never occupies the queue
  } else {
    backlog += skb->len;
  }
  q->backlog_bytes = backlog;
  bpf_spin_unlock(&q->lock);
  if (over) c->over_limit++;

  if (backlog <= MARK_BYTES || skb->protocol != bpf_htons(ETH_P_IPV6)) return TC_ACT_OK;
  // IPv6: version(4) traffic class(8) flow label(20); ECN = the low 2 bits of the traffic
  // class = bits 5..4 of the header's second byte. No checksum covers it.
  __u8 b1;
  if (bpf_skb_load_bytes(skb, ETH_HLEN + 1, &b1, 1) < 0) return TC_ACT_OK;
  if ((b1 & 0x30) == 0) return TC_ACT_OK;  // Not-ECT: a switch would not mark (RED drops)
  c->ect++;
  if ((b1 & 0x30) != 0x30) {
    b1 |= 0x30;
    bpf_skb_store_bytes(skb, ETH_HLEN + 1, &b1, 1, 0);
    c->marked++;
  }
  return TC_ACT_OK;
}

char _license[] SEC("license") = "Dual BSD/GPL";
