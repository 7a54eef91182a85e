#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""What each carrier of the path id without an SRH costs (docs/design/engine.md): flow label entropy
left for LAG hashing and RSS spread at the receiving gateway (Toeplitz over the outer IPv6
source and destination, the usual 40-byte key, 128-entry RETA). A model, no packets."""
import ipaddress, random, collections
KEY = bytes([0x6d,0x5a,0x56,0xda,0x25,0x5b,0x0e,0xc2,0x41,0x67,0x25,0x3d,0x43,0xa3,0x8f,0xb0,
             0xd0,0xca,0x2b,0xcb,0xae,0x7b,0x30,0xb4,0x77,0xcb,0x2d,0xa3,0x80,0x30,0xf2,0x0c,
             0x6a,0x42,0xb7,0x3b,0xbe,0xac,0x01,0xfa])
def toeplitz(data):
    k = int.from_bytes(KEY, 'big'); kl = len(KEY)*8; r = 0
    for i, byte in enumerate(data):
        for b in range(8):
            if byte & (0x80 >> b):
                r ^= (k >> (kl - 32 - (i*8+b))) & 0xffffffff
    return r
def rss_queue(src, dst, nq, reta=128):
    h = toeplitz(ipaddress.IPv6Address(src).packed + ipaddress.IPv6Address(dst).packed)
    return (h % reta) % nq
def main():
    random.seed(1)
    dst = "fc00:0:bd4::"
    for paths in (4, 8, 16):
        for nq in (4, 8):
            today = collections.Counter(rss_queue("fc00:a::", dst, nq) for p in range(1, paths+1))
            src = collections.Counter(rss_queue(f"fc00:a::{p:x}", dst, nq) for p in range(1, paths+1))
            print(f"paths={paths:2d} queues={nq}: queues used today {len(today)}/{nq}, "
                  f"with path id in source {len(src)}/{nq} (max per queue {max(src.values())})")
    # LAG hashing on (src, dst, flow label): distinct hash inputs per path for 10000 flows
    flows = [random.getrandbits(20) for _ in range(10000)]
    print("flow label, source carrier: distinct labels per path", len(set(flows)), "of 10000 flows")
    print("flow label, 16-bit id in label: distinct labels per path", len(set(f & 0xF for f in flows)))
    for members in (2, 4, 8, 16, 32):
        full = collections.Counter(f % members for f in flows)
        red = collections.Counter((f & 0xF) % members for f in flows)
        print(f"LAG {members:2d} members: max/mean load full label {max(full.values())/(10000/members):.2f}, "
              f"4-bit label {max(red.values())/(10000/members):.2f}, members used {len(red)}/{members}")


if __name__ == "__main__":
    main()
