#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
# Issue 22, acceptance 2: uSID packets carrying the path id in the low 16 bits of the outer
# source (engine/path-id-in-source, docs/design/engine.md) cross kernel `End flavors next-csid`
# spines with the source (path id, reflected bit) and the flow label untouched.
#
#   snd --veth-- sp1 --veth-- sp2 --veth-- rcv
#   snd sends uSID packets (no SRH, inner RoCEv2 over IPv4) to fcbb:bb00:101:201:2d4::; sp1
#   and sp2 run End with NEXT-C-SID on their micro-SIDs (each shifts the destination by one
#   micro-SID); rcv captures what arrives for fcbb:bb00:2d4:: and compares every header field.
#
# usage: usid_path_id_kernel.py      (root; exits 77 without namespaces or next-csid support)
import os
import random
import struct
import sys
import time

sys.dont_write_bytecode = True  # keep the source tree clean
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import netns_lib as nl  # noqa: E402
from netns_lib import rl  # noqa: E402

USID_FLAVOR = "flavors next-csid lblen 32 nflen 16"
LOCATOR = bytes.fromhex("fc00ffff000000000000000000000000")  # fc00:ffff::/112, ours
DST = bytes.fromhex("fcbbbb000101020102d4000000000000")    # fcbb:bb00:101:201:2d4::
FINAL = bytes.fromhex("fcbbbb0002d400000000000000000000")  # after both spines
# Every kind of value: path ids at the edges, reflected ones, and a random spread.
random.seed(22)
TAGS = sorted({0, 1, 2, 0x7FFE, 0x7FFF, 0x8000, 0x8001, 0x8002, 0xFFFF} |
              {random.randrange(0x10000) for _ in range(55)})


def setup():
    chain = nl.Chain(["snd", "sp1", "sp2", "rcv"])
    for role in ("sp1", "sp2"):
        chain.forwarding(role)
    for role, usid, nexthop in (("sp1", 0x101, "fc00:f1::2"), ("sp2", 0x201, "fc00:f2::2")):
        r = chain.ip(role, f"-6 route add fcbb:bb00:{usid:x}::/48 encap seg6local action End "
                           f"{USID_FLAVOR} count dev lft0", check=False)
        if r.returncode != 0:
            nl.skip(f"kernel/iproute2 refused End {USID_FLAVOR}: {r.stderr.strip()}")
    chain.ip("sp1", "-6 route add fcbb:bb00:200::/40 via fc00:f1::2 dev rgt0")
    chain.ip("sp2", "-6 route add fcbb:bb00:2d4::/48 via fc00:f2::2 dev rgt0")
    return chain


def frame(dst_mac, src_mac, tag, flow_label, inner):
    src = LOCATOR[:14] + struct.pack("!H", tag)
    ip6 = struct.pack("!IHBB", 0x60000000 | 0x68 << 20 | flow_label, len(inner), 4, 64)
    return (bytes.fromhex(dst_mac.replace(":", "")) + bytes.fromhex(src_mac.replace(":", "")) +
            b"\x86\xdd" + ip6 + src + DST + inner)


def main():
    nl.require_root_and_netns()
    started = time.monotonic()
    chain = setup()
    tx = nl.packet_socket(chain.ns["snd"], "rgt0")
    rx = nl.packet_socket(chain.ns["rcv"], "lft0")
    inner = [s for s in rl.roce_samples(v4_dst="10.0.1.1", v6_dst="fd00:1::1", big=False)
             if s.family == 4][0].ip
    sent = {}
    for i, tag in enumerate(TAGS):
        label = (i * 0x9E3B + 0x12345) & 0xFFFFF  # distinct labels, as distinct flows get
        sent[tag] = label
        tx.send(frame(chain.mac("sp1", "lft0"), chain.mac("snd", "rgt0"), tag, label, inner))

    def ours(f):
        return f[12:14] == b"\x86\xdd" and f[14 + 24:14 + 40] == FINAL

    got = nl.capture(rx, len(TAGS), ours, timeout=5.0)
    problems = []
    if len(got) != len(TAGS):
        problems.append(f"rcv got {len(got)} packets, expected {len(TAGS)}")
    for role, prefix in (("sp1", "fcbb:bb00:101::/48"), ("sp2", "fcbb:bb00:201::/48")):
        n = chain.route_packets(role, prefix)
        if n != len(TAGS):
            problems.append(f"End next-csid on {role} ({prefix}) counted {n}, expected {len(TAGS)}")
    seen = set()
    for f in got:
        ip6 = f[14:54]
        tag = struct.unpack("!H", ip6[22:24])[0]
        first = struct.unpack("!I", ip6[0:4])[0]
        if ip6[8:22] != LOCATOR[:14]:
            problems.append(f"source locator changed: {ip6[8:24].hex()}")
        if tag not in sent:
            problems.append(f"path id bits changed: 0x{tag:04x} was never sent")
            continue
        if first & 0xFFFFF != sent[tag]:
            problems.append(f"flow label of 0x{tag:04x} changed: {first & 0xFFFFF:05x}")
        if (first >> 20) & 0xFF != 0x68:
            problems.append(f"traffic class of 0x{tag:04x} changed: {(first >> 20) & 0xFF:02x}")
        if ip6[7] != 62:
            problems.append(f"hop limit {ip6[7]} after two spines, expected 62")
        if f[54:54 + len(inner)] != inner:
            problems.append(f"inner packet of 0x{tag:04x} changed")
        seen.add(tag)
    if seen != set(sent) and not problems:
        problems.append(f"missing path ids: {sorted(set(sent) - seen)}")
    tx.close()
    rx.close()
    chain.cleanup()
    print(f"elapsed {time.monotonic() - started:.1f} s", flush=True)
    if problems:
        rl.fail("\n".join(problems))
    print(f"ok: {len(TAGS)} uSID packets (path ids 0..0x7fff, reflected ones) crossed two kernel "
          f"End {USID_FLAVOR} spines with source, flow label and traffic class untouched",
          flush=True)


if __name__ == "__main__":
    rl.main_wrapper(main)
