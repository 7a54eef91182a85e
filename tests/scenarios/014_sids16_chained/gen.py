#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
# 6 and 16 SIDs through a fabric port with multi-segment TX (net_ring0): the header is built
# in a chained mbuf in front of the untouched packet. net_ring loops the fabric TX back into
# the fabric RX; not being for our SIDs, those frames pass to the host port, whose pcap is
# the output checked. A 3-SID packet still goes in place.
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from scenlib import OP_WRITE_ONLY, TPID_8021Q, eth, gen_main, roce4, roce6  # noqa: E402

gen_main(host_frames=[
    eth(roce4("10.0.1.1", qp=16, psn=1)),                               # 0 16 SIDs
    eth(roce6("fd00:1::1", qp=16, psn=2)),                              # 1 16 SIDs, IPv6
    eth(roce4("10.0.1.1", qp=16, psn=3, opcode=OP_WRITE_ONLY, payload_len=4096),
        tags=[(TPID_8021Q, 9)]),                                        # 2 16 SIDs, 4 KB, VLAN
    eth(roce4("10.0.1.1", qp=17, psn=4)),                               # 3 16 SIDs reduced
    eth(roce6("fd00:1::1", qp=6, psn=5)),                               # 4 6 SIDs
    eth(roce4("10.0.1.1", qp=3, psn=6)),                                # 5 3 SIDs, in place
])
