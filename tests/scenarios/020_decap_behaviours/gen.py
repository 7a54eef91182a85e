#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
# Fabric -> host: End.DX4 (fc00:0:1::d4), End.DX6 (::d6), End.DT46 (::100), with a full SRH,
# reduced (no SRH), a destination-options header before the SRH, a CNP, a 4 KB packet and
# Ethernet padding; refused: segments left 1, the wrong inner family for DX4 and DX6, a
# non-IP payload; a frame for another SID passes unchanged.
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from scenlib import (OP_ACK, OP_CNP, OP_WRITE_ONLY, fab, gen_main, roce4, roce6,  # noqa: E402
                     srv6)
from scapy.all import ICMPv6EchoRequest, IPv6, raw  # noqa: E402

DX4, DX6, DT46 = "fc00:0:1::d4", "fc00:0:1::d6", "fc00:0:1::100"
PATH = ["fc00:0:21::e", "fc00:0:11::e"]  # the way back, path order; SRH lists it reversed


def srh(sid):
    return [sid] + PATH[::-1]


def v4(psn, **kw):
    return roce4("10.0.0.1", src="10.0.1.2", qp=0x41, psn=psn, **kw)


def v6(psn, **kw):
    return roce6("fd00::1", src="fd00:1::2", qp=0x61, psn=psn, **kw)


icmp = raw(IPv6(src="fc00:0:2::1", dst=DT46, hlim=63) / ICMPv6EchoRequest(id=1, seq=1))
gen_main(fabric_frames=[
    fab(srv6(v4(1), DX4, srh(DX4), tag=201)),                        # 0 DX4, SRH
    fab(srv6(v4(2, opcode=OP_ACK), DX4)),                            # 1 DX4 reduced
    fab(srv6(v6(3), DX6, srh(DX6), tag=202)),                        # 2 DX6, SRH
    fab(srv6(v6(4, opcode=OP_ACK), DX6)),                            # 3 DX6 reduced
    fab(srv6(v4(5), DT46)),                                          # 4 DT46, IPv4
    fab(srv6(v6(6), DT46, srh(DT46), tag=203)),                      # 5 DT46, IPv6, SRH
    fab(srv6(v4(7), DX4, srh(DX4), tag=201, dest_opts=True)),        # 6 dest-opts + SRH
    fab(srv6(v4(0, opcode=OP_CNP, tos=0xC2), DX4, srh(DX4), tag=201)),  # 7 CNP
    fab(srv6(v4(8), DX4, srh(DX4), segleft=1, tag=201)),             # 8 segments left 1
    fab(srv6(v6(9), DX4, srh(DX4), tag=201)),                        # 9 DX4 with IPv6 inside
    fab(srv6(v4(10), DX6, srh(DX6), tag=202)),                       # 10 DX6 with IPv4 inside
    fab(icmp),                                                       # 11 DT46, ICMPv6 inside
    fab(srv6(v4(11), "fc00:0:1::99", srh("fc00:0:1::99"), tag=201)),  # 12 not a local SID
    fab(srv6(v4(12, opcode=OP_WRITE_ONLY, payload_len=4096), DX4, srh(DX4), tag=201)),  # 13
    fab(srv6(v4(13, opcode=OP_ACK), DX4)) + bytes(range(16)),        # 14 trailing padding
])
