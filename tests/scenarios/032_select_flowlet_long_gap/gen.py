#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
# Flowlet mode with a 1 s gap: 16 QPs (IPv4 and IPv6) send 20 packets each, round robin. The
# whole replay takes milliseconds, far less than the gap, so no QP may ever change list.
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from scenlib import eth, gen_main, roce4, roce6  # noqa: E402

N_QPS, PER_QP = 16, 20
frames = []
for psn in range(PER_QP):
    for k in range(N_QPS):
        if k % 2 == 0:
            frames.append(eth(roce4("10.0.1.2", qp=0x500 + k, psn=psn, payload_len=16)))
        else:
            frames.append(eth(roce6("fd00:1::2", qp=0x500 + k, psn=psn, payload_len=16)))
gen_main(host_frames=frames)
