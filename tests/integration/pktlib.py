# SPDX-License-Identifier: BSD-3-Clause
# Packet helpers of the integration suite, on scapy: the IP packet of a frame, RoCEv2
# detection, and the RoCEv2 ICRC computed from the specification (IBTA Annex A17), not from
# the gateway's code.
import logging
import zlib

logging.getLogger("scapy.runtime").setLevel(logging.ERROR)
from scapy.all import IP, UDP, Ether, IPv6  # noqa: E402

ROCE_PORT = 4791


def ip_bytes(pkt):
    """The IP packet of a frame, Ethernet padding cut."""
    l3 = pkt[Ether].payload
    while l3.name == "802.1Q":
        l3 = l3.payload
    raw = bytes(l3)
    if isinstance(l3, IP):
        return raw[:l3.len]
    return raw[:40 + l3.plen]


def is_roce(pkt):
    return (IP in pkt or IPv6 in pkt) and UDP in pkt and pkt[UDP].dport == ROCE_PORT


def icrc_ok(ip_packet: bytes) -> bool:
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
    return zlib.crc32(b"\xff" * 8 + bytes(b)) == int.from_bytes(ip_packet[-4:], "little")
