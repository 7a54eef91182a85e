#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
# H.Encaps with one SID, H.Encaps.Red with one and three SIDs, NEXT-C-SID (uSID) with 4 and
# 8 micro-SIDs (one and two containers) and with a 48-bit locator block. DestQP picks the
# policy; each is sent with an IPv4 and an IPv6 inner packet.
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from scenlib import eth, gen_main, roce4, roce6  # noqa: E402

frames = []
for qp in range(0x21, 0x27):
    frames.append(eth(roce4("10.0.1.1", qp=qp, psn=qp)))
    frames.append(eth(roce6("fd00:1::1", qp=qp, psn=0x100 + qp)))
gen_main(host_frames=frames)
