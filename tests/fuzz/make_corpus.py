#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""Regenerates the seed corpora of the fuzz targets (tests/fuzz/corpus/<target>/).

Sources: one frame of every kind found in the bundled captures (config/examples/*.pcap),
SRv6 and RoCEv2 frames made with scapy (an implementation independent of ours), the example
and invalid configurations, and hand-laid inputs in the byte formats that fuzz_template.cpp
and fuzz_encap_roundtrip.cpp decode. Deterministic; keeps the total well under 1 MB.

    /usr/bin/python3 tests/fuzz/make_corpus.py
"""
import hashlib
import pathlib
import re
import shutil
import struct
import sys

import logging

logging.getLogger("scapy.runtime").setLevel(logging.ERROR)
from scapy.all import Ether, Dot1Q, Dot1AD, IP, IPv6, UDP, TCP, ARP, Raw, rdpcap
from scapy.layers.inet6 import (IPv6ExtHdrSegmentRouting, IPv6ExtHdrHopByHop,
                                IPv6ExtHdrDestOpt, IPv6ExtHdrFragment)
from scapy.contrib.roce import BTH

ROOT = pathlib.Path(__file__).resolve().parents[2]
CORPUS = ROOT / "tests" / "fuzz" / "corpus"
EXAMPLES = ROOT / "config" / "examples"
MAX_SEED = 2048  # bytes: long payloads add nothing a short one does not


def save(target, data):
    d = CORPUS / target
    d.mkdir(parents=True, exist_ok=True)
    data = bytes(data)
    (d / hashlib.sha1(data).hexdigest()[:16]).write_bytes(data)


def pcap_kinds(path):
    """First frame of each (length, layer stack) kind in a capture."""
    seen = {}
    for pkt in rdpcap(str(path)):
        layers = []
        layer = pkt
        while layer:
            layers.append(type(layer).__name__)
            layer = layer.payload
        key = (len(pkt), tuple(layers))
        seen.setdefault(key, bytes(pkt))
    return list(seen.values())


def roce(opcode=0x0A, dqp=0x1234, psn=7, payload=b"\x11" * 32):
    # scapy's BTH carries a 4-byte icrc field and writes the ICRC (IPv4; 0 for IPv6) over the
    # last four bytes of BTH + payload.
    return UDP(sport=49152, dport=4791, chksum=0) / BTH(opcode=opcode, dqpn=dqp, psn=psn) / \
        Raw(payload)


def inner4(tos=0x02, **kw):
    return IP(src="10.0.0.1", dst="10.0.1.1", tos=tos, flags="DF", ttl=64) / roce(**kw)


def inner6(tc=0x02, **kw):
    return IPv6(src="fd00::1", dst="fd00:1::1", tc=tc, fl=0x12345, hlim=64) / roce(**kw)


def srh(segleft=0, tag=7, addresses=("fc00:3::d4", "fc00:b::1", "fc00:a::1"), nh=4):
    return IPv6ExtHdrSegmentRouting(addresses=list(addresses), segleft=segleft,
                                    lastentry=len(addresses) - 1, tag=tag, nh=nh)


def outer(tc=0x02, dst="fc00:3::d4", nh=43):
    return IPv6(src="fc00:100::1", dst=dst, tc=tc, nh=nh, hlim=63)


def srv6_packets():
    """Outer IPv6 packets (no Ethernet) for the decap target."""
    return [
        outer() / srh(nh=4) / inner4(),
        outer() / srh(nh=41, addresses=("fc00:3::d6", "fc00:b::1")) / inner6(),
        outer(nh=4) / inner4(),                                     # reduced, no SRH
        outer(nh=41, dst="fc00:3::d6") / inner6(),
        outer(nh=0) / IPv6ExtHdrHopByHop(nh=43) / srh(nh=4) / inner4(),
        outer(tc=0x03) / srh(nh=4) / inner4(tos=0x02),              # CE onto ECT(0)
        outer(tc=0x03) / srh(nh=4) / inner4(tos=0x00),              # CE onto not-ECT
        outer(tc=0x01) / srh(nh=41) / inner6(tc=0x02),              # ECT(1) onto ECT(0)
        outer() / srh(segleft=1, nh=4) / inner4(),                  # not the last segment
        outer(nh=44) / IPv6ExtHdrFragment(nh=43, offset=0, m=0) / srh(nh=4) / inner4(),
        outer(nh=60) / IPv6ExtHdrDestOpt(nh=43) / srh(nh=41) / inner6(opcode=0x81),
        outer() / srh(nh=4, addresses=("fc00:3::d4",)) / inner4(opcode=0x81),
    ]


def eth(ethertype_payload):
    return Ether(src="02:00:00:00:00:01", dst="02:00:00:00:00:02") / ethertype_payload


def parse_frames():
    return [
        eth(inner4()),
        eth(inner6()),
        Ether() / Dot1Q(vlan=100) / inner4(),
        Ether() / Dot1AD(vlan=10) / Dot1Q(vlan=100) / inner6(),
        Ether() / Dot1AD(vlan=10) / Dot1Q(vlan=100) / Dot1Q(vlan=5) / inner4(),
        eth(IP(src="10.0.0.1", dst="10.0.1.1", options=b"\x01\x01\x01\x00") / roce()),
        eth(IP(src="10.0.0.1", dst="10.0.1.1", flags="MF") / roce()),
        eth(IPv6(src="fd00::1", dst="fd00:1::1") / IPv6ExtHdrHopByHop() / IPv6ExtHdrDestOpt()
            / roce()),
        eth(IPv6(src="fd00::1", dst="fd00:1::1") / IPv6ExtHdrFragment(offset=0, m=0) / roce()),
        eth(IPv6(src="fd00::1", dst="fd00:1::1") / IPv6ExtHdrFragment(offset=8, m=1) / roce()),
        eth(inner4(opcode=0x81)),
        eth(IP(src="10.0.0.1", dst="10.0.1.1") / UDP(dport=53) / Raw(b"q" * 12)),
        eth(IP(src="10.0.0.1", dst="10.0.1.1") / TCP(dport=80)),
        Ether() / ARP(),
    ] + [eth(p) for p in srv6_packets()[:3]]


def inner_spec(v6=False, extra=False, tc=0x02, payload=b"\x5a" * 24):
    """The inner-packet bytes make_roce_packet (roce_packet.hpp) decodes."""
    flags = (1 if v6 else 0) | (2 if extra else 0)
    b = bytes([flags, tc, 64]) + struct.pack(">IHH", 0x12345, 1, 49152)
    b += bytes([0x0A, 0x40, 0xFF, 0xFF, 0, 0, 0x12, 0x34, 0x80, 0, 0, 7])  # BTH
    b += bytes(range(16)) + bytes(range(16, 32))
    if extra:
        b += bytes([3])  # IPv4 option words
    return b + payload


def template_input(mode, sids, fmt=(32, 16), structured=False, raw_format=False, **inner):
    """fuzz_template.cpp's input: choice, format, count, tag, hop limit, source, block,
    SIDs, flow label, per-packet tag, inner packet."""
    choice = mode | (0x10 if structured else 0) | (0x20 if raw_format else 0)
    fb, fu = fmt if raw_format else (fmt[0] // 8 - 1, fmt[1] // 8 - 1)
    b = bytes([choice, fb, fu, len(sids)]) + struct.pack(">HB", 0x0102, 64)
    b += bytes.fromhex("fc000100" + "00" * 11 + "01")  # source
    b += bytes.fromhex("fcbbbb00" + "00" * 12)         # block
    for s in sids:
        b += s
    b += struct.pack(">IH", 0xABCDE, 0x0007)
    return b + inner_spec(**inner)


def template_seeds():
    full = [bytes.fromhex("fc00%04x" % (i + 1) + "00" * 11 + "01") for i in range(20)]
    usid16 = [struct.pack(">H", 0x0100 + i + 1) for i in range(40)]
    usid8 = [bytes([i + 1]) for i in range(40)]
    usid32 = [struct.pack(">I", 0x01000000 + i + 1) for i in range(20)]
    return [
        template_input(0, full[:1]),
        template_input(0, full[:3], v6=True),
        template_input(0, full[:16], extra=True),
        template_input(0, full[:17]),
        template_input(1, full[:1]),
        template_input(1, full[:2], v6=True, extra=True),
        template_input(1, full[:5], tc=0x03),
        template_input(2, usid16[:1], structured=True),
        template_input(2, usid16[:6], structured=True, v6=True),
        template_input(2, usid16[:7], structured=True),
        template_input(2, usid16[:20], structured=True, extra=True),
        template_input(2, usid8[:20], fmt=(48, 8), structured=True),
        template_input(2, usid16[:3], fmt=(48, 16), structured=True, v6=True),
        template_input(2, usid32[:16], fmt=(96, 32), structured=True),  # 16 containers
        template_input(2, usid32[:17], fmt=(96, 32), structured=True),  # 17: too many
        template_input(2, full[:3]),                                    # not in one block
        template_input(2, usid16[:4], fmt=(33, 16), structured=True, raw_format=True),
        template_input(0, []),
    ]


def roundtrip_seeds():
    seeds = []
    for t in range(5):
        for v6 in (False, True):
            seeds.append(bytes([t]) + struct.pack(">H", 0x8000 + t) +
                         inner_spec(v6=v6, extra=(t % 2 == 1), tc=(0x00, 0x02, 0x03, 0x01, 0xB8)[t],
                                    payload=bytes(range(256))[: 16 + 60 * t]))
    return seeds


def config_dictionary():
    """libFuzzer dictionary for fuzz_config: the module's node names as JSON keys, its enum
    values as JSON strings, and JSON punctuation, so mutations stay near valid instances."""
    yang = (ROOT / "config" / "yang" / "srv6gw.yang").read_text()
    words = set(re.findall(r"^\s*(?:leaf|leaf-list|list|container)\s+([\w-]+)", yang, re.M))
    enums = set(re.findall(r"^\s*enum\s+([\w-]+)", yang, re.M))
    entries = ['"\\"srv6gw:gateway\\":"']
    entries += ['"\\"%s\\":"' % w for w in sorted(words)]
    entries += ['"\\"%s\\""' % e for e in sorted(enums)]
    entries += ['"{"', '"}"', '"["', '"]"', '","', '"true"', '"false"', '"null"',
                '"\\"fc00::1\\""', '"\\"10.0.0.0/24\\""', '"\\"02:00:00:00:00:01\\""']
    lines = ["# SPDX-License-Identifier: BSD-3-Clause",
             "# Generated by make_corpus.py from config/yang/srv6gw.yang."]
    lines += ["kw%d=%s" % (i, e) for i, e in enumerate(entries)]
    (ROOT / "tests" / "fuzz" / "fuzz_config.dict").write_text("\n".join(lines) + "\n")


def main():
    config_dictionary()
    if CORPUS.exists():
        shutil.rmtree(CORPUS)
    host = pcap_kinds(EXAMPLES / "demo-host.pcap")
    fabric = pcap_kinds(EXAMPLES / "demo-fabric.pcap")
    for f in host + fabric + [bytes(p) for p in parse_frames()]:
        save("fuzz_parse", f[:MAX_SEED])
    for f in fabric:
        if f[12:14] == b"\x86\xdd":
            save("fuzz_decap", f[14:MAX_SEED])
    for p in srv6_packets():
        save("fuzz_decap", bytes(p))
    for s in template_seeds():
        save("fuzz_template", s)
    for s in roundtrip_seeds():
        save("fuzz_encap_roundtrip", s)
    configs = sorted(EXAMPLES.glob("*.json")) + \
        sorted((ROOT / "tests" / "unit" / "config" / "invalid").glob("*.json"))
    for c in configs:
        save("fuzz_config", c.read_bytes())
    total = sum(f.stat().st_size for f in CORPUS.rglob("*") if f.is_file())
    for d in sorted(CORPUS.iterdir()):
        print(f"{d.name}: {len(list(d.iterdir()))} seeds")
    print(f"total {total} bytes")
    if total > 1 << 20:
        sys.exit("corpus over 1 MB")


if __name__ == "__main__":
    main()
