#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
# A destination rule (any DestQP) beats the QP range and prefix rules that match the same
# packets; other destinations fall through to the QP range.
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from scenlib import eth, gen_main, roce4, roce6  # noqa: E402

gen_main(host_frames=[
    eth(roce4("10.0.1.1", qp=0x000001, psn=1)),   # 0 dst-any (QP inside the range)
    eth(roce4("10.0.1.1", qp=0x000100, psn=2)),   # 1 dst-any
    eth(roce4("10.0.1.1", qp=0xFFFFFF, psn=3)),   # 2 dst-any, highest QP
    eth(roce6("fd00:1::1", qp=0x000007, psn=4)),  # 3 dst-any, IPv6
    eth(roce4("10.0.1.9", qp=0x000005, psn=5)),   # 4 other destination: QP range
    eth(roce6("fd00:1::9", qp=0x000FFF, psn=6)),  # 5 other destination: QP range (IPv6)
    eth(roce4("10.0.1.9", qp=0x001000, psn=7)),   # 6 outside the range: prefix
])
