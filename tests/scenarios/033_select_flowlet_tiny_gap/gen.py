#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
# Flowlet mode with a 1 us gap: 3 QPs send 160 packets each, round robin (480 frames, 15 RX
# bursts of 32). Time is read once per burst, so a QP keeps its list inside a burst; between
# two bursts (reading and writing 32 pcap records) more than 1 us passes, so every QP starts
# a new flowlet, placed by weighted round robin: QPs must move between bursts.
# (032_select_flowlet_long_gap is the counterpart: a 1 s gap, no QP may ever move.)
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from scenlib import eth, gen_main, roce4, roce6  # noqa: E402

N_QPS, PER_QP = 3, 160
frames = []
for psn in range(PER_QP):
    for k in range(N_QPS):
        if k != 1:
            frames.append(eth(roce4("10.0.1.2", qp=0x600 + k, psn=psn, payload_len=512)))
        else:
            frames.append(eth(roce6("fd00:1::2", qp=0x600 + k, psn=psn, payload_len=512)))
gen_main(host_frames=frames)
