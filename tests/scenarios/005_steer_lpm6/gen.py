#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
# IPv6 longest prefix match over ::/0, /16, /64, /120 and /128; an IPv4 destination is not
# caught by the IPv6 default route (steering miss: passed unchanged).
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from scenlib import eth, gen_main, roce4, roce6  # noqa: E402

gen_main(host_frames=[
    eth(roce6("fd00:1::abcd", qp=0x10, psn=1)),  # 0 /128
    eth(roce6("fd00:1::abce", qp=0x10, psn=2)),  # 1 /120
    eth(roce6("fd00:1::ab00", qp=0x10, psn=3)),  # 2 /120, first address
    eth(roce6("fd00:1::aa00", qp=0x10, psn=4)),  # 3 /64
    eth(roce6("fd00:1::1:0:0:1", qp=0x10, psn=5)),  # 4 /64
    eth(roce6("fd00:2::1", qp=0x10, psn=6)),     # 5 /16
    eth(roce6("2001:db8::1", qp=0x10, psn=7)),   # 6 ::/0
    eth(roce4("10.0.1.1", qp=0x10, psn=8)),      # 7 IPv4: no rule, passed
])
