#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
# H.Encaps with 6 and 16 SIDs and H.Encaps.Red with 16 need 158, 318 and 302 bytes in front
# of the inner packet; the mbuf offers 128 + 14 (+ 4 per VLAN tag) and net_pcap has no
# multi-segment TX for a chained header: each such packet is dropped as no_headroom and
# counted, its neighbours are not disturbed.
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from scenlib import TPID_8021AD, TPID_8021Q, eth, gen_main, roce4, roce6  # noqa: E402

gen_main(host_frames=[
    eth(roce4("10.0.1.1", qp=3, psn=1)),                                         # 0 3 SIDs
    eth(roce4("10.0.1.1", qp=6, psn=2)),                                         # 1 6 SIDs
    eth(roce6("fd00:1::1", qp=6, psn=3), tags=[(TPID_8021AD, 1), (TPID_8021Q, 2)]),  # 2 6, QinQ
    eth(roce4("10.0.1.1", qp=16, psn=4)),                                        # 3 16 SIDs
    eth(roce6("fd00:1::1", qp=17, psn=5)),                                       # 4 16 reduced
    eth(roce6("fd00:1::1", qp=3, psn=6)),                                        # 5 3 SIDs
])
