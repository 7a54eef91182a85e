#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
# RoCEv2 that no steering rule matches takes actions/steering-miss; the rest is steered and
# non-RoCE traffic keeps its own action (pass).
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from scenlib import TPID_8021Q, eth, gen_main, roce4, roce6  # noqa: E402
from scapy.all import ARP, Ether, raw  # noqa: E402

gen_main(host_frames=[
    eth(roce4("10.0.1.1", qp=0x10, psn=1)),                       # 0 steered
    eth(roce4("10.0.2.1", qp=0x10, psn=2)),                       # 1 miss
    eth(roce6("fd00:2::1", qp=0x10, psn=3)),                      # 2 miss, IPv6
    eth(roce4("10.0.2.1", qp=0x10, psn=4), tags=[(TPID_8021Q, 5)]),  # 3 miss, VLAN 5
    raw(Ether(dst="ff:ff:ff:ff:ff:ff", src="02:00:00:00:00:01") /
        ARP(hwsrc="02:00:00:00:00:01", psrc="10.0.0.1", pdst="10.0.0.254")),  # 4 ARP
    eth(roce6("fd00:1::1", qp=0x10, psn=5)),                      # 5 steered
])
