#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
# IPv4 longest prefix match over /0, /8, /24, /25 and /32; an IPv6 destination is not
# caught by the IPv4 default route (steering miss: passed unchanged).
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from scenlib import eth, gen_main, roce4, roce6  # noqa: E402

gen_main(host_frames=[
    eth(roce4("10.0.1.200", qp=0x10, psn=1)),   # 0 /32
    eth(roce4("10.0.1.201", qp=0x10, psn=2)),   # 1 /25
    eth(roce4("10.0.1.128", qp=0x10, psn=3)),   # 2 /25, first address
    eth(roce4("10.0.1.127", qp=0x10, psn=4)),   # 3 /24
    eth(roce4("10.0.1.0", qp=0x10, psn=5)),     # 4 /24
    eth(roce4("10.9.9.9", qp=0x10, psn=6)),     # 5 /8
    eth(roce4("192.168.1.1", qp=0x10, psn=7)),  # 6 /0
    eth(roce6("fd00:1::1", qp=0x10, psn=8)),    # 7 IPv6: no rule, passed
])
