#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
# A bump in the wire must not break its host: ARP, IPv6 neighbour discovery, LLDP, TCP, ICMP,
# UDP to other ports and fragments (RoCEv2 is never fragmented) cross the gateway byte for
# byte in both directions, Ethernet padding and VLAN tags included. From the fabric, plain
# RoCEv2 and SRv6 to an address that is not a local SID are not ours either.
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from scenlib import (GW_FABRIC_MAC, HOST_GW_MAC, HOST_RNIC_MAC, LEAF_MAC, TPID_8021Q,  # noqa: E402
                     fab, gen_main, roce4, roce6, srv6)
from scapy.all import (ARP, ICMP, IP, TCP, UDP, Dot1Q, Ether, ICMPv6ND_NA, ICMPv6ND_NS,  # noqa: E402
                       ICMPv6NDOptDstLLAddr, ICMPv6NDOptSrcLLAddr, IPv6, IPv6ExtHdrFragment,
                       Raw, raw)


def pad60(b):
    return b + bytes(max(0, 60 - len(b)))


def common(mac_a, mac_b, a4, b4, a6, b6):
    e = Ether(dst=mac_b, src=mac_a)
    lldp = bytes.fromhex("0180c200000e") + bytes.fromhex(mac_a.replace(":", "")) + \
        bytes.fromhex("88cc" "0207046c0000000001" "040703" + mac_a.replace(":", "") +
                      "06020078" "0000")
    return [
        raw(Ether(dst="ff:ff:ff:ff:ff:ff", src=mac_a) /
            ARP(op=1, hwsrc=mac_a, psrc=a4, pdst=b4)),                            # ARP request
        pad60(raw(Ether(dst=mac_b, src=mac_a) /
                  ARP(op=2, hwsrc=mac_a, hwdst=mac_b, psrc=a4, pdst=b4))),       # ARP reply, padded
        raw(Ether(dst="ff:ff:ff:ff:ff:ff", src=mac_a) / Dot1Q(vlan=100) /
            ARP(op=1, hwsrc=mac_a, psrc=a4, pdst=b4)),                            # tagged ARP
        raw(Ether(dst="33:33:ff:00:00:02", src=mac_a) /
            IPv6(src=a6, dst="ff02::1:ff00:2", hlim=255) / ICMPv6ND_NS(tgt=b6) /
            ICMPv6NDOptSrcLLAddr(lladdr=mac_a)),                                  # ND NS
        raw(e / IPv6(src=a6, dst=b6, hlim=255) / ICMPv6ND_NA(tgt=a6, R=0, S=1, O=1) /
            ICMPv6NDOptDstLLAddr(lladdr=mac_a)),                                  # ND NA
        lldp,                                                                    # LLDP
        pad60(raw(e / IP(src=a4, dst=b4, id=7) / TCP(sport=40000, dport=22, flags="S",
                                                   seq=1))),                   # TCP SYN v4
        raw(e / IPv6(src=a6, dst=b6) / TCP(sport=40000, dport=4791, flags="S", seq=1)),  # TCP v6
        raw(e / IP(src=a4, dst=b4, id=8) / ICMP(id=1, seq=1) / Raw(b"ping" * 8)),  # ICMP echo
        raw(e / IP(src=a4, dst=b4, id=9) / UDP(sport=5353, dport=53) / Raw(b"q" * 30)),  # DNS
        raw(e / IPv6(src=a6, dst=b6) / UDP(sport=4791, dport=4792) / Raw(b"r" * 30)),  # UDP 4792
        raw(e / IP(src=a4, dst=b4, id=10, flags="MF") / UDP(sport=49152, dport=4791) /
            Raw(bytes(64))),                                                     # v4 fragment
        raw(e / IPv6(src=a6, dst=b6) / IPv6ExtHdrFragment(offset=1, m=0, id=5, nh=17) /
            Raw(bytes(64))),                                                     # v6 fragment
    ]


host = common(HOST_RNIC_MAC, HOST_GW_MAC, "10.0.0.1", "10.0.1.2", "fd00::1", "fd00:1::2")
fabric = common(LEAF_MAC, GW_FABRIC_MAC, "10.0.1.2", "10.0.0.1", "fd00:1::2", "fd00::1")
fabric += [
    fab(roce4("10.0.0.1", src="10.0.1.2", qp=0x41, psn=1)),                   # plain RoCEv2 v4
    fab(roce6("fd00::1", src="fd00:1::2", qp=0x61, psn=2)),                   # plain RoCEv2 v6
    fab(srv6(roce4("10.0.0.1", src="10.0.1.2", qp=0x41, psn=3), "fc00:0:1::5"),
        tags=[(TPID_8021Q, 7)]),                                              # SRv6, other SID
]
gen_main(host_frames=host, fabric_frames=fabric)
