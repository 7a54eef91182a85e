#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
# 802.1Q, 802.1ad + 802.1Q (QinQ) and two 802.1Q tags on input, both directions; three tags
# are more than the gateway classifies (passed unchanged); a tagged miss keeps its tags.
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from scenlib import (LEAF_MAC, REMOTE_GW_MAC, TPID_8021AD, TPID_8021Q, eth, gen_main,  # noqa: E402
                     roce4, roce6, srv6)

Q, AD = TPID_8021Q, TPID_8021AD
host = [
    eth(roce4("10.0.1.2", qp=0x11, psn=1), tags=[(Q, 0x6064)]),              # 0 802.1Q 100 PCP 3
    eth(roce6("fd00:1::2", qp=0x12, psn=2), tags=[(AD, 10), (Q, 100)]),      # 1 QinQ
    eth(roce4("10.0.1.2", qp=0x13, psn=3), tags=[(Q, 10), (Q, 100)]),        # 2 double 802.1Q
    eth(roce4("10.0.1.2", qp=0x14, psn=4), tags=[(AD, 1), (Q, 2), (Q, 3)]),  # 3 three tags
    eth(roce4("10.0.2.2", qp=0x15, psn=5), tags=[(Q, 100)]),                 # 4 miss, tagged
]
SRH4 = ["fc00:0:1::d4", "fc00:0:11::e", "fc00:0:21::e"]
SRH6 = ["fc00:0:1::d6", "fc00:0:11::e", "fc00:0:21::e"]
ret4 = roce4("10.0.0.1", src="10.0.1.2", qp=0x21, psn=7)
ret6 = roce6("fd00::1", src="fd00:1::2", qp=0x22, psn=8)
fabric = [
    eth(srv6(ret4, "fc00:0:1::d4", SRH4, tag=201), dst=LEAF_MAC, src=REMOTE_GW_MAC,
        tags=[(Q, 200)]),                                                     # 0 tagged DX4
    eth(srv6(ret6, "fc00:0:1::d6", SRH6, tag=202), dst=LEAF_MAC, src=REMOTE_GW_MAC,
        tags=[(AD, 20), (Q, 200)]),                                           # 1 QinQ DX6
    eth(srv6(ret6, "fc00:0:9::1", SRH6, tag=203), dst=LEAF_MAC, src=REMOTE_GW_MAC,
        tags=[(Q, 200)]),                                                     # 2 not our SID
]
gen_main(host_frames=host, fabric_frames=fabric)
