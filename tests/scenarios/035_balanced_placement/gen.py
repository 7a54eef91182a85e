#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
# balanced mode: 24 QPs toward three destinations (12, 8 and 4 QPs: one policy each, three
# spines each), first packets interleaved across destinations, then 5 packets per QP round
# robin. Balanced per policy, the spines would carry 4+3+2 / 4+3+1 / 4+2+1 = 9/8/7 QPs;
# balanced per load group (the spine, the lists' first SID) across policies, 8/8/8.
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from scenlib import eth, gen_main, roce4  # noqa: E402

QPS_PER_DESTINATION = {1: 12, 2: 8, 3: 4}
PER_QP = 5
qps = []  # (destination index, DestQP), in the order of their first packets
for k in range(max(QPS_PER_DESTINATION.values())):
    for d, n in QPS_PER_DESTINATION.items():
        if k < n:
            qps.append((d, 0x600 + 0x40 * d + k))
frames = []
for psn in range(PER_QP):
    for d, qp in qps:
        frames.append(eth(roce4(f"10.0.{d}.2", qp=qp, psn=psn, payload_len=64)))
gen_main(host_frames=frames)
