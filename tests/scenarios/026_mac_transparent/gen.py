#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
# ports/transparent-mac true (and no next-hop or host MAC configured): encapsulated and
# decapsulated frames keep the Ethernet addresses they arrived with. Every other scenario
# runs with configured MACs (fabric-nexthop-mac / host-mac, source = the port's own MAC).
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from scenlib import TPID_8021Q, eth, fab, gen_main, roce4, roce6, srv6  # noqa: E402

SRH4 = ["fc00:0:1::d4", "fc00:0:11::e"]
SRH6 = ["fc00:0:1::d6", "fc00:0:11::e"]
gen_main(host_frames=[
    eth(roce4("10.0.1.2", qp=0x10, psn=1)),
    eth(roce6("fd00:1::2", qp=0x10, psn=2), dst="02:aa:bb:cc:dd:ee", src="02:11:22:33:44:55",
        tags=[(TPID_8021Q, 3)]),
], fabric_frames=[
    fab(srv6(roce4("10.0.0.1", src="10.0.1.2", qp=0x41, psn=1), "fc00:0:1::d4", SRH4, tag=9)),
    fab(srv6(roce6("fd00::1", src="fd00:1::2", qp=0x61, psn=2), "fc00:0:1::d6", SRH6, tag=9)),
])
