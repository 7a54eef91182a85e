#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
# DestQP ranges: both bounds inclusive, neighbours outside fall through to the prefix rule,
# a range scoped to one destination beats the global range, a one-QP range, IPv6 inner.
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from scenlib import eth, gen_main, roce4, roce6  # noqa: E402

gen_main(host_frames=[
    eth(roce4("10.0.1.1", qp=0x1000, psn=1)),   # 0 low bound 4096: range
    eth(roce4("10.0.1.1", qp=0x10FF, psn=2)),   # 1 high bound 4351: range
    eth(roce4("10.0.1.1", qp=0x0FFF, psn=3)),   # 2 low - 1: prefix
    eth(roce4("10.0.1.1", qp=0x1100, psn=4)),   # 3 high + 1: prefix
    eth(roce4("10.0.1.7", qp=0x1080, psn=5)),   # 4 range scoped to 10.0.1.7 beats the global one
    eth(roce4("10.0.1.7", qp=0x1100, psn=6)),   # 5 outside both: prefix
    eth(roce6("fd00:1::5", qp=0x1010, psn=7)),  # 6 IPv6 inner, global range
    eth(roce4("10.0.1.1", qp=0x2000, psn=8)),   # 7 one-QP range 8192
    eth(roce4("10.0.1.1", qp=0x2001, psn=9)),   # 8 next QP: prefix
])
