#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
# Segment lists of 1, 3 and 5 SIDs (H.Encaps), 6 SIDs (H.Encaps.Red: 5 in the SRH) and 6
# micro-SIDs (one uSID container): all fit the 128 B mbuf headroom + the 14 B Ethernet
# header the encapsulation replaces, so they are built in place. DestQP picks the policy.
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from scenlib import (OP_WRITE_ONLY, TPID_8021AD, TPID_8021Q, eth, gen_main, roce4,  # noqa: E402
                     roce6)

frames = []
for qp in (1, 3, 5, 6, 7):
    frames.append(eth(roce4("10.0.1.1", qp=qp, psn=qp)))
    frames.append(eth(roce6("fd00:1::1", qp=qp, psn=0x100 + qp)))
frames.append(eth(roce4("10.0.1.1", qp=5, psn=0x200, opcode=OP_WRITE_ONLY, payload_len=4096)))
frames.append(eth(roce6("fd00:1::1", qp=6, psn=0x201), tags=[(TPID_8021AD, 7), (TPID_8021Q, 8)]))
gen_main(host_frames=frames)
