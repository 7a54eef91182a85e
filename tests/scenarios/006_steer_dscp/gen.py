#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
# A rule qualified by DSCP beats the plain rule with the same match, for prefixes of both
# families and for exact rules; the ECN bits do not take part in the DSCP match.
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from scenlib import ECN_CE, ECN_ECT0, eth, gen_main, roce4, roce6  # noqa: E402

EF, AF31, BE = 46 << 2, 26 << 2, 0
gen_main(host_frames=[
    eth(roce4("10.0.1.5", qp=0x10, psn=1, tos=AF31 | ECN_ECT0)),   # 0 plain prefix
    eth(roce4("10.0.1.5", qp=0x10, psn=2, tos=EF | ECN_ECT0)),     # 1 DSCP 46 prefix
    eth(roce4("10.0.1.5", qp=0x10, psn=3, tos=EF | ECN_CE)),       # 2 DSCP 46, CE: same
    eth(roce4("10.0.1.1", qp=0x100, psn=4, tos=AF31 | ECN_ECT0)),  # 3 plain exact
    eth(roce4("10.0.1.1", qp=0x100, psn=5, tos=EF | ECN_ECT0)),    # 4 DSCP 46 exact
    eth(roce4("10.0.1.1", qp=0x101, psn=6, tos=EF | ECN_ECT0)),    # 5 other QP: DSCP prefix
    eth(roce6("fd00:1::5", qp=0x10, psn=7, tos=AF31 | ECN_ECT0)),  # 6 DSCP 26 IPv6 prefix
    eth(roce6("fd00:1::5", qp=0x10, psn=8, tos=BE | ECN_ECT0)),    # 7 plain IPv6 prefix
])
