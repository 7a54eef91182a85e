#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
# Regenerates the ICRC test vectors embedded in icrc_test.cpp. Two independent oracles:
# scapy.contrib.roce computes the ICRC of the IPv4 packet itself, and a direct zlib.crc32 over
# the masked packet (IBTA Annex A17) must agree with it; for IPv6, where scapy writes 0, the
# zlib computation is the oracle.
import zlib

from scapy.all import IP, IPv6, UDP, Raw
from scapy.contrib.roce import BTH


def masked_icrc(pkt: bytes, v6: bool) -> int:
    b = bytearray(pkt[:-4])
    if v6:
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
    b[udp + 8 + 4] = 0xFF
    return zlib.crc32(b"\xff" * 8 + bytes(b))


payload = bytes(range(1, 17))
v4 = bytes(IP(src="10.0.0.1", dst="10.0.0.2", tos=0x02, ttl=64, id=0x1234, flags="DF") /
           UDP(sport=49152, dport=4791) /
           BTH(opcode=4, dqpn=0x123456, psn=0x654321, ackreq=1, pkey=0xFFFF) / Raw(payload))
scapy_icrc = int.from_bytes(v4[-4:], "little")
assert scapy_icrc == masked_icrc(v4, False), "scapy and zlib disagree"
print("ipv4", v4.hex(), hex(scapy_icrc))

v6 = bytearray(bytes(IPv6(src="fd00::1", dst="fd00::2", tc=0x0A, fl=0xABCDE, hlim=63) /
                     UDP(sport=50000, dport=4791) /
                     BTH(opcode=0x0A, dqpn=0x00ABCD, psn=0x000042, pkey=0x8001, becn=1) /
                     Raw(payload)))
icrc6 = masked_icrc(bytes(v6), True)
v6[-4:] = icrc6.to_bytes(4, "little")
print("ipv6", bytes(v6).hex(), hex(icrc6))
