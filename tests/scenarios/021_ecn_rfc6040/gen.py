#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
# ECN both ways (RFC 6040 normal mode). Host -> fabric: the outer traffic class copies the
# inner DSCP and ECN, for the four ECN codepoints and both families. Fabric -> host: the full
# egress table for IPv4 and IPv6 inners: outer CE marks an ECT inner CE, CE over not-ECT is
# dropped, outer ECT(1) over inner ECT(0) gives ECT(1), anything else leaves the inner alone.
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from scenlib import (DSCP26, ECN_CE, ECN_ECT0, ECN_ECT1, ECN_NOT_ECT, eth, fab,  # noqa: E402
                     gen_main, roce4, roce6, srv6)

host = []
for k, ecn in enumerate((ECN_NOT_ECT, ECN_ECT1, ECN_ECT0, ECN_CE)):
    host.append(eth(roce4("10.0.1.2", qp=0x70 + k, psn=k, tos=DSCP26 | ecn)))
    host.append(eth(roce6("fd00:1::2", qp=0x70 + k, psn=k, tos=DSCP26 | ecn)))

# (outer ECN, inner ECN) in the order of expect.py
TABLE = [(ECN_CE, ECN_ECT0), (ECN_CE, ECN_ECT1), (ECN_CE, ECN_CE), (ECN_CE, ECN_NOT_ECT),
         (ECN_ECT1, ECN_ECT0), (ECN_ECT0, ECN_ECT1), (ECN_NOT_ECT, ECN_ECT0),
         (ECN_ECT0, ECN_NOT_ECT)]
SRH4 = ["fc00:0:1::d4", "fc00:0:11::e", "fc00:0:21::e"]
SRH6 = ["fc00:0:1::d6", "fc00:0:11::e", "fc00:0:21::e"]
fabric = []
for k, (outer, inner) in enumerate(TABLE):
    ip = roce4("10.0.0.1", src="10.0.1.2", qp=0x80 + k, psn=k, tos=DSCP26 | inner)
    fabric.append(fab(srv6(ip, "fc00:0:1::d4", SRH4, tag=201, tc=DSCP26 | outer)))
for k, (outer, inner) in enumerate(TABLE):
    ip = roce6("fd00::1", src="fd00:1::2", qp=0x80 + k, psn=k, tos=DSCP26 | inner)
    fabric.append(fab(srv6(ip, "fc00:0:1::d6", SRH6, tag=202, tc=DSCP26 | outer)))
gen_main(host_frames=host, fabric_frames=fabric)
