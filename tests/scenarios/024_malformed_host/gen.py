#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
# Broken frames from the host, one per parser reason, between good RoCEv2 frames: each is
# dropped and counted by name (nothing else lost, no crash). An IPv6 extension chain longer
# than the gateway walks is not broken, only not classified: it passes unchanged.
import struct
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from scenlib import HOST_GW_MAC, HOST_RNIC_MAC, eth, gen_main, roce4, roce6  # noqa: E402
from scapy.all import IPv6, IPv6ExtHdrDestOpt, Raw, UDP, raw  # noqa: E402

good4 = roce4("10.0.1.2", qp=0x10, psn=1)
good6 = roce6("fd00:1::2", qp=0x10, psn=2)
L2 = bytes.fromhex(HOST_GW_MAC.replace(":", "") + HOST_RNIC_MAC.replace(":", ""))


def patch(b, off, data):
    b = bytearray(b)
    b[off:off + len(data)] = data
    return bytes(b)


def be16(v):
    return struct.pack("!H", v)


udp4 = 20  # UDP offset in good4 (no options)
# UDP 4791 with 8 bytes of payload: shorter than BTH + ICRC
short_bth = patch(good4[:20 + 8 + 8], 2, be16(36))
short_bth = patch(short_bth, udp4 + 4, be16(16))
long_chain = raw(IPv6(src="fd00::1", dst="fd00:1::2") /
                 IPv6ExtHdrDestOpt() / IPv6ExtHdrDestOpt() / IPv6ExtHdrDestOpt() /
                 IPv6ExtHdrDestOpt() / IPv6ExtHdrDestOpt() / IPv6ExtHdrDestOpt() /
                 IPv6ExtHdrDestOpt() / IPv6ExtHdrDestOpt() / IPv6ExtHdrDestOpt() /
                 UDP(sport=49152, dport=4791) / Raw(bytes(32)))
gen_main(host_frames=[
    eth(good4),                                                      # 0 good
    L2[:10],                                                         # 1 truncated_eth
    L2 + b"\x81\x00\x00",                                            # 2 truncated_vlan
    L2 + b"\x08\x00" + good4[:12],                                   # 3 truncated_ipv4
    eth(good6, ethertype=0x0800),                                    # 4 bad_ipv4_version
    eth(patch(good4, 0, b"\x44")),                                   # 5 bad_ipv4_ihl
    eth(patch(good4, 2, be16(len(good4) + 100))),                    # 6 bad_ipv4_length
    L2 + b"\x86\xdd" + good6[:30],                                   # 7 truncated_ipv6
    eth(good4, ethertype=0x86DD),                                    # 8 bad_ipv6_version
    eth(patch(good6, 4, be16(len(good6) - 40 + 100))),               # 9 bad_ipv6_length
    eth(patch(patch(good6, 6, b"\x00"), 41, b"\xff")),               # 10 truncated_ext (HBH)
    eth(patch(patch(good4[:24], 2, be16(24)), 9, b"\x11")),          # 11 truncated_udp
    eth(patch(good4, udp4 + 4, be16(len(good4) - 20 + 50))),         # 12 bad_udp_length (long)
    eth(patch(good4, udp4 + 4, be16(4))),                            # 13 bad_udp_length (< 8)
    eth(short_bth),                                                  # 14 truncated_bth
    eth(patch(good4, udp4 + 8 + 1, b"\x01")),                        # 15 bad_bth_tver
    eth(long_chain),                                                 # 16 9 extension headers
    eth(good6),                                                      # 17 good
])
