#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
# Packet mode (smooth weighted round robin): one QP per policy, interleaved, 120 packets to
# the 3:2:1 policy (IPv4) and 80 to the 5:3:0 policy (IPv6).
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from scenlib import eth, gen_main, roce4, roce6  # noqa: E402

frames = []
for k in range(120):
    frames.append(eth(roce4("10.0.1.2", qp=0x77, psn=k, payload_len=32)))
    if k % 3 != 2:
        frames.append(eth(roce6("fd00:1::2", qp=0x78, psn=k, payload_len=32)))
gen_main(host_frames=frames)
