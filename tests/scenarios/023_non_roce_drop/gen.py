#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
# actions/non-roce drop and actions/fabric-non-sid drop: what is neither RoCEv2 from the host
# nor SRv6 to a local SID from the fabric is dropped and counted; RoCEv2 is still
# encapsulated and SRv6 to our SIDs decapsulated.
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from scenlib import (HOST_RNIC_MAC, LEAF_MAC, eth, fab, gen_main, roce4, roce6,  # noqa: E402
                     srv6)
from scapy.all import ARP, IP, TCP, UDP, Ether, IPv6, Raw, raw  # noqa: E402

host = [
    raw(Ether(dst="ff:ff:ff:ff:ff:ff", src=HOST_RNIC_MAC) /
        ARP(op=1, hwsrc=HOST_RNIC_MAC, psrc="10.0.0.1", pdst="10.0.0.254")),  # 0 ARP
    eth(roce4("10.0.1.2", qp=0x10, psn=1)),                                  # 1 RoCEv2
    eth(raw(IP(src="10.0.0.1", dst="10.0.1.2", id=3) / TCP(sport=1, dport=2, flags="S"))),  # 2
    eth(raw(IPv6(src="fd00::1", dst="fd00:1::2") / UDP(sport=1, dport=53) / Raw(b"x" * 20))),  # 3
    eth(roce6("fd00:1::2", qp=0x10, psn=2)),                                 # 4 RoCEv2
]
SRH = ["fc00:0:1::d4", "fc00:0:11::e"]
fabric = [
    fab(srv6(roce4("10.0.0.1", src="10.0.1.2", qp=0x41, psn=1), "fc00:0:1::d4", SRH, tag=9)),
    fab(raw(IPv6(src="fd00:1::2", dst="fd00::1") / TCP(sport=1, dport=2, flags="S"))),
    raw(Ether(dst="ff:ff:ff:ff:ff:ff", src=LEAF_MAC) /
        ARP(op=1, hwsrc=LEAF_MAC, psrc="10.0.9.1", pdst="10.0.9.2")),
]
gen_main(host_frames=host, fabric_frames=fabric)
