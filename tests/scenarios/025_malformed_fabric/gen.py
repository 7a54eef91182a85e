#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
# Broken SRv6 frames to a local SID (End.DX4 fc00:0:1::d4) and broken Ethernet from the
# fabric, each refused and counted by name; valid oddities (an atomic fragment header, an
# SRH with a PadN TLV) are decapsulated; an IPv6 header cut short cannot name a SID and
# takes the fabric-non-sid action (pass).
import struct
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from scenlib import GW_FABRIC_MAC, LEAF_MAC, fab, gen_main, roce4, srv6  # noqa: E402
from scapy.all import (IPv6, IPv6ExtHdrDestOpt, IPv6ExtHdrFragment,  # noqa: E402
                       IPv6ExtHdrSegmentRouting, IPv6ExtHdrSegmentRoutingTLVPadN, Raw, raw)

DX4 = "fc00:0:1::d4"
SRH = [DX4, "fc00:0:11::e", "fc00:0:21::e"]
inner = roce4("10.0.0.1", src="10.0.1.2", qp=0x41, psn=1)
good = srv6(inner, DX4, SRH, tag=201)  # 40 B IPv6 + 56 B SRH + inner
L2 = bytes.fromhex(GW_FABRIC_MAC.replace(":", "") + LEAF_MAC.replace(":", ""))


def patch(b, off, data):
    b = bytearray(b)
    b[off:off + len(data)] = data
    return bytes(b)


def be16(v):
    return struct.pack("!H", v)


outer = IPv6(src="fc00:0:2::1", dst=DX4, tc=0x6A, hlim=63)
fragmented = raw(outer / IPv6ExtHdrFragment(nh=43, offset=1, m=0, id=1) /
                 IPv6ExtHdrSegmentRouting(nh=4, addresses=SRH, segleft=0, tag=201) / Raw(inner))
atomic = raw(outer / IPv6ExtHdrFragment(nh=43, offset=0, m=0, id=2) /
             IPv6ExtHdrSegmentRouting(nh=4, addresses=SRH, segleft=0, tag=201) / Raw(inner))
with_tlv = raw(outer / IPv6ExtHdrSegmentRouting(
    nh=4, addresses=SRH, segleft=0, tag=201,
    tlv_objects=[IPv6ExtHdrSegmentRoutingTLVPadN(len=6, padding=bytes(6))]) / Raw(inner))
chain = outer
for _ in range(9):
    chain = chain / IPv6ExtHdrDestOpt()
chain.lastlayer().nh = 4
long_chain = raw(chain / Raw(inner))
no_next = raw(IPv6(src="fc00:0:2::1", dst=DX4, nh=59) / Raw(bytes(24)))

gen_main(fabric_frames=[
    fab(good),                                           # 0 good
    fab(patch(good, 4, be16(len(good) - 40 + 100))),     # 1 bad_outer_length
    fab(patch(good, 40 + 4, b"\x05")),                   # 2 srh_inconsistent (last entry 5)
    fab(patch(good, 40 + 3, b"\x04")),                   # 3 srh_inconsistent (segleft 4 > 3)
    fab(patch(good, 40 + 1, b"\x14")),                   # 4 truncated_ext (SRH of 168 B)
    fab(patch(good, 96 + 2, be16(len(inner) + 100))),    # 5 truncated_inner
    fab(fragmented),                                     # 6 outer_fragment
    fab(long_chain),                                     # 7 ext_chain_too_long
    fab(no_next),                                        # 8 bad_next_header (59)
    L2[:8],                                              # 9 truncated_eth
    L2 + b"\x81\x00\x00",                                # 10 truncated_vlan
    L2 + b"\x86\xdd" + good[:24],                        # 11 IPv6 cut before the DA: pass
    fab(atomic),                                         # 12 atomic fragment: decap
    fab(with_tlv),                                       # 13 SRH with PadN TLV: decap
    fab(good),                                           # 14 good
])
