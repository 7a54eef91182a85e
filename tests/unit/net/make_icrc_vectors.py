#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
# Regenerates the ICRC test vectors embedded in test_icrc.cpp. Two independent oracles:
# scapy.contrib.roce computes the ICRC of the IPv4 packet itself, and a direct zlib.crc32 over
# the masked packet (IBTA Annex A17) must agree with it; for IPv6, where scapy writes 0, the
# zlib computation is the oracle.
#   make_icrc_vectors.py            print the vectors
#   make_icrc_vectors.py --check F  fail unless the vectors embedded in F (test_icrc.cpp) match
import re
import sys
import zlib

try:
    from scapy.all import IP, IPv6, UDP, Raw
    from scapy.contrib.roce import BTH
except ImportError as e:
    print(f"skip: scapy not available ({e}); install python3-scapy")
    sys.exit(77)


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
v4_hex = v4.hex()

v6 = bytearray(bytes(IPv6(src="fd00::1", dst="fd00::2", tc=0x0A, fl=0xABCDE, hlim=63) /
                     UDP(sport=50000, dport=4791) /
                     BTH(opcode=0x0A, dqpn=0x00ABCD, psn=0x000042, pkey=0x8001, becn=1) /
                     Raw(payload)))
icrc6 = masked_icrc(bytes(v6), True)
v6[-4:] = icrc6.to_bytes(4, "little")
v6_hex = bytes(v6).hex()

if len(sys.argv) == 3 and sys.argv[1] == "--check":
    text = open(sys.argv[2]).read()
    embedded = {}
    for name in ("kScapyIpv4", "kZlibIpv6"):
        m = re.search(name + r" = from_hex\(((?:\s*\"[0-9a-f]*\")+)\)", text)
        if not m:
            sys.exit(f"{name} not found in {sys.argv[2]}")
        embedded[name] = "".join(re.findall(r'"([0-9a-f]*)"', m.group(1)))
    ok = embedded["kScapyIpv4"] == v4_hex and embedded["kZlibIpv6"] == v6_hex
    for name, want in (("kScapyIpv4", v4_hex), ("kZlibIpv6", v6_hex)):
        print(name, "matches" if embedded[name] == want else f"differs: oracle says {want}")
    sys.exit(0 if ok else 1)

print("ipv4", v4_hex, hex(scapy_icrc))
print("ipv6", v6_hex, hex(icrc6))
