# SPDX-License-Identifier: BSD-3-Clause
# Packet helpers of the integration suite, on scapy: the IP packet of a frame, RoCEv2
# detection, and the RoCEv2 ICRC check (IBTA Annex A17, from tests/oracle/roce_lib, not from
# the gateway's code).
import logging
import os
import sys

logging.getLogger("scapy.runtime").setLevel(logging.ERROR)
from scapy.all import IP, UDP, Ether, IPv6  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "oracle"))
import roce_lib  # noqa: E402

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
    """ICRC check by the suite's one specification-derived oracle (tests/oracle/roce_lib);
    anything that is not an IP packet is simply not valid."""
    try:
        return roce_lib.icrc_valid(ip_packet)
    except (ValueError, IndexError):
        return False
