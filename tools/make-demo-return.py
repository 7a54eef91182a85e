#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
# Writes config/examples/demo-fabric.pcap: the return direction of the demo, as the remote
# gateway (fc00:0:2::1) would send it to our local SIDs of config/examples/demo.json. Fixed
# content (timestamps included) so the committed file only changes when this script does.
#
#   /usr/bin/python3 tools/make-demo-return.py [OUT.pcap]
#
# What is in it, in order (the demo and the integration test count on it):
#   0-7   End.DX4 fc00:0:1::d4, full SRH (3 SIDs, segments left 0, tag 101): RoCEv2 ACKs
#         10.0.1.2 -> 10.0.0.1, QP 0x000101, PSN 0..7
#   8-10  End.DX4, READ response first/middle/last, 1024 B payload each
#   11-14 End.DX6 fc00:0:1::d6, full SRH (tag 201): ACKs fd00:1::2 -> fd00::1, QP 0x000201
#   15    End.DT46 fc00:0:1::100, reduced encap without SRH (next header 4): IPv4 ACK
#   16    End.DT46, reduced encap without SRH (next header 41): IPv6 ACK
#   17    End.DX4, CNP (opcode 0x81) to QP 0x000101 (the local SR engine's feedback)
#   18    End.DX4, outer CE over an ECT(0) inner: decapsulated with the inner marked CE
#   19    IPv6 to an address that is not a local SID: passed to the host unchanged
#   20    End.DX4 with segments left 1: not the last segment, refused (segments_left_nonzero)
#   21    End.DX4, outer CE over a not-ECT inner: dropped (ecn_ce_on_not_ect, RFC 6040)
# So 22 frames in, 20 out on the host port, 2 refused by name.
import logging
import sys
import zlib

logging.getLogger("scapy.runtime").setLevel(logging.ERROR)

from scapy.all import IP, UDP, Ether, ICMPv6EchoRequest, IPv6, IPv6ExtHdrSegmentRouting, Raw  # noqa: E402
from scapy.contrib.roce import AETH, BTH  # noqa: E402
from scapy.utils import wrpcap  # noqa: E402

REMOTE_GW = "fc00:0:2::1"
DX4, DX6, DT46 = "fc00:0:1::d4", "fc00:0:1::d6", "fc00:0:1::100"
# Path from the remote gateway back to us (path order); the SRH lists it reversed.
V4_PATH = ["fc00:0:21::e", "fc00:0:11::e", DX4]
V6_PATH = ["fc00:0:21::e", "fc00:0:11::e", DX6]
LEAF_MAC, GW_FABRIC_MAC = "02:00:00:00:0f:01", "02:00:00:00:0e:01"
LOCAL4, REMOTE4 = "10.0.0.1", "10.0.1.2"
LOCAL6, REMOTE6 = "fd00::1", "fd00:1::2"
QP4, QP6 = 0x000101, 0x000201
ECT0, CE, NOT_ECT = 0b10, 0b11, 0b00
DSCP = 26 << 2


def icrc(ip_packet: bytes) -> int:
    """RoCEv2 ICRC (IBTA Annex A17): CRC-32 over 8 bytes of 0xff and the IP packet with the
    variant fields set to ones, ICRC excluded."""
    b = bytearray(ip_packet[:-4])
    if b[0] >> 4 == 6:
        b[0] |= 0x0F
        b[1:4] = b"\xff\xff\xff"
        b[7] = 0xFF
        udp = 40
    else:
        b[1] = 0xFF
        b[8] = 0xFF
        b[10:12] = b"\xff\xff"
        udp = (b[0] & 0xF) * 4
    b[udp + 6:udp + 8] = b"\xff\xff"
    b[udp + 12] = 0xFF
    return zlib.crc32(b"\xff" * 8 + bytes(b))


def roce(v6: bool, opcode: int, qp: int, psn: int, ecn=ECT0, payload=b"", aeth=False):
    if v6:
        ip = IPv6(src=REMOTE6, dst=LOCAL6, tc=DSCP | ecn, fl=0x12345, hlim=64)
    else:
        ip = IP(src=REMOTE4, dst=LOCAL4, tos=DSCP | ecn, ttl=64, id=0x4000 + psn, flags="DF")
    bth = BTH(opcode=opcode, dqpn=qp, psn=psn, pkey=0xFFFF)
    pkt = ip / UDP(sport=0xC000 | (qp & 0x3FFF), dport=4791) / bth
    if aeth:
        pkt = pkt / AETH(syndrome=0x1F, msn=psn)
    if opcode == 0x81:
        payload = bytes(16)  # CNP: 16 reserved bytes
    raw = bytearray(bytes(pkt / Raw(payload + b"\0\0\0\0")))
    raw[-4:] = icrc(bytes(raw)).to_bytes(4, "little")
    return bytes(raw)


def encap(inner: bytes, sid_path, tag, outer_ecn=None, segleft=0, srh=True):
    v6_inner = inner[0] >> 4 == 6
    inner_tc = (inner[0] & 0x0F) << 4 | inner[1] >> 4 if v6_inner else inner[1]
    tc = inner_tc if outer_ecn is None else (inner_tc & 0xFC) | outer_ecn
    nh = 41 if v6_inner else 4
    # Always addressed to our SID (the last of the path), even when segments left says
    # otherwise: that inconsistency is what the segments-left case exercises.
    outer = IPv6(src=REMOTE_GW, dst=sid_path[-1], tc=tc, fl=0xABCDE, hlim=61)
    if srh:
        outer = outer / IPv6ExtHdrSegmentRouting(addresses=list(reversed(sid_path)), nh=nh,
                                                   segleft=segleft, lastentry=len(sid_path) - 1,
                                                   tag=tag)
    else:
        outer.nh = nh
    return Ether(src=LEAF_MAC, dst=GW_FABRIC_MAC) / outer / Raw(inner)


def frames():
    out = []
    for psn in range(8):
        out.append(encap(roce(False, 0x11, QP4, psn, aeth=True), V4_PATH, 101))
    for i, op in enumerate((0x0D, 0x0E, 0x0F)):
        body = bytes((i * 7 + k) & 0xFF for k in range(1024))
        out.append(encap(roce(False, op, QP4, 100 + i, payload=body, aeth=op != 0x0E),
                         V4_PATH, 101))
    for psn in range(4):
        out.append(encap(roce(True, 0x11, QP6, psn, aeth=True), V6_PATH, 201))
    out.append(encap(roce(False, 0x11, QP4, 8, aeth=True), [DT46], 0, srh=False))
    out.append(encap(roce(True, 0x11, QP6, 4, aeth=True), [DT46], 0, srh=False))
    out.append(encap(roce(False, 0x81, QP4, 0), V4_PATH, 101))
    out.append(encap(roce(False, 0x11, QP4, 9, aeth=True), V4_PATH, 101, outer_ecn=CE))
    out.append(Ether(src=LEAF_MAC, dst=GW_FABRIC_MAC) /
               IPv6(src=REMOTE_GW, dst="fc00:0:1::1", hlim=64) / ICMPv6EchoRequest(id=1, seq=1))
    out.append(encap(roce(False, 0x11, QP4, 10, aeth=True), V4_PATH, 101, segleft=1))
    out.append(encap(roce(False, 0x11, QP4, 11, ecn=NOT_ECT, aeth=True), V4_PATH, 101,
                     outer_ecn=CE))
    for i, f in enumerate(out):
        f.time = 1700000000 + i * 0.001
    return out


def main():
    path = sys.argv[1] if len(sys.argv) > 1 else "config/examples/demo-fabric.pcap"
    pkts = frames()
    wrpcap(path, pkts)
    print(f"wrote {len(pkts)} frames to {path}")


if __name__ == "__main__":
    main()
