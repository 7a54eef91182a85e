#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
# Exact (destination, DestQP) rules beat every less specific level: destination-any-QP,
# QP range and prefix rules that also match the same packets.
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from scenlib import eth, gen_main, roce4, roce6  # noqa: E402

gen_main(host_frames=[
    eth(roce4("10.0.1.1", qp=0x100, psn=1)),   # 0 exact (10.0.1.1, 256)
    eth(roce4("10.0.1.1", qp=0x101, psn=2)),   # 1 same destination, other QP: dst-any
    eth(roce6("fd00:1::1", qp=0x100, psn=3)),  # 2 exact (fd00:1::1, 256)
    eth(roce6("fd00:1::1", qp=0x101, psn=4)),  # 3 no dst-any rule for it: QP range
    eth(roce4("10.0.1.2", qp=0x100, psn=5)),   # 4 exact QP, other destination: QP range
    eth(roce4("10.0.1.2", qp=0x200, psn=6)),   # 5 outside the range: prefix
    eth(roce6("fd00:1::2", qp=0x200, psn=7)),  # 6 IPv6 prefix
])
