#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""What fabric receive spreading (engine/source-entropy-bits, docs/design/engine.md) buys and
costs, as a model (no packets): the busiest receive queue at a far gateway whose NIC hashes
only the outer IPv6 addresses (Toeplitz, the usual key, 128-entry RETA) for 64 flows from one
peer, by entropy bits and queue count; and how many source addresses the fabric's uRPF/ACLs
then see from one gateway. Flow labels are random 20-bit values, as the flow hash gives."""
import collections
import ipaddress
import random

from path_id_costs import toeplitz


def busiest_share(bits, queues, flows, path_ids=(0,)):
    dst = ipaddress.IPv6Address("fc00:0:bd4::").packed
    base = int(ipaddress.IPv6Address("fc00:a::"))
    count = collections.Counter()
    for i, label in enumerate(flows):
        entropy = (label & ((1 << bits) - 1)) << 16 if bits else 0
        src = (base | entropy | path_ids[i % len(path_ids)]).to_bytes(16, "big")
        count[(toeplitz(src + dst) % 128) % queues] += 1
    return max(count.values()) / len(flows)


def main():
    rnd = random.Random(1)
    trials = [[rnd.getrandbits(20) for _ in range(64)] for _ in range(50)]
    print("64 flows from one peer, address-only RSS: busiest queue share "
          "(mean / worst of 50 draws of flow labels)")
    for queues in (2, 4, 8, 16):
        row = []
        for bits in (0, 2, 4, 6, 8, 12, 16):
            s = [busiest_share(bits, queues, f) for f in trials]
            row.append(f"{bits:2d} bits {sum(s) / len(s):.2f}/{max(s):.2f}")
        print(f"  {queues:2d} queues (fair {1 / queues:.2f}): " + ", ".join(row))
    print("source addresses one gateway sends from (uRPF/ACL view): 2^bits per path id; "
          "with path-id-in-source x paths: e.g. 8 bits x 8 paths =", (1 << 8) * 8)


if __name__ == "__main__":
    main()
