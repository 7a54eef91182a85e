#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
# Decapsulation checked two ways:
#  1. round trip: our decap of our encap gives back every original IP packet byte for byte;
#  2. SRv6 packets built by scapy (not by our encap): RFC 6040 egress ECN, reduced encap
#     without SRH, extension headers before the SRH, VLAN-tagged outer frames, and the named
#     drop reasons for packets a local SID must refuse.
#
# usage: roundtrip_oracle.py SRV6GW_PCAP
import ipaddress
import os
import re
import sys
import tempfile

sys.dont_write_bytecode = True  # keep the source tree clean
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import roce_lib as rl  # noqa: E402
from roce_lib import IP, IPv6, UDP, Dot1Q, Ether, fail, log  # noqa: E402
from scapy.all import (IPv6ExtHdrDestOpt, IPv6ExtHdrFragment,  # noqa: E402
                       IPv6ExtHdrHopByHop, IPv6ExtHdrSegmentRouting)

SOURCE = "fc00:ffff::1"
MACS = ("02:00:00:00:10:01", "02:00:00:00:10:02")


def decap_counts(stdout):
    """'decap <reason> N' lines of the tool's summary."""
    return {m.group(1): int(m.group(2))
            for m in re.finditer(r"^\s+decap (\S+)\s+(\d+)", stdout, re.M)}


def expect_decapped(where, out, inner, macs):
    eth = Ether(out[:14])
    want_type = 0x0800 if inner[0] >> 4 == 4 else 0x86DD
    if (eth.dst, eth.src, eth.type) != (macs[0], macs[1], want_type):
        fail(f"{where}: Ethernet {eth.dst} {eth.src} 0x{eth.type:04x}, expected {macs} "
             f"0x{want_type:04x}")
    if out[14:] != inner:
        fail(f"{where}: decapsulated packet differs from the expected inner packet\n" +
             rl.hexdiff(inner, out[14:]))


def traverse(frame_bytes, usid_block=None, usid_len=None):
    """The fabric between two gateways, modelled here from RFC 8986 End and RFC 9800
    End with NEXT-C-SID: consume the path until the last segment is active. Returns the new
    frame and the final destination address."""
    b = bytearray(frame_bytes)
    ip = 14
    if b[12:14] != b"\x86\xdd":
        fail("encapsulated frame is not IPv6")
    srh = ip + 40 if b[ip + 6] == 43 and b[ip + 40 + 2] == 4 else None
    while True:
        da = bytes(b[ip + 24:ip + 40])
        if usid_block is not None:
            arg = da[usid_block + usid_len:]
            if any(arg):  # another micro-SID in this container: shift it in
                b[ip + 24:ip + 40] = da[:usid_block] + arg + b"\x00" * usid_len
                b[ip + 7] -= 1
                continue
        if srh is not None and b[srh + 3] > 0:
            b[srh + 3] -= 1
            entry = srh + 8 + 16 * b[srh + 3]
            b[ip + 24:ip + 40] = b[entry:entry + 16]
            b[ip + 7] -= 1
            continue
        break
    return bytes(b), str(ipaddress.IPv6Address(bytes(b[ip + 24:ip + 40])))


def round_trip(tool, tmp):
    samples = rl.roce_samples()
    passthrough = rl.passthrough_frames()  # ARP, IPv4 TCP, IPv6 UDP/53
    frames = [s.frame for s in samples] + passthrough
    in_pcap = os.path.join(tmp, "rt-in.pcap")
    rl.write_pcap(in_pcap, frames)
    modes = [("encaps", ["fc00:1::e", "fc00:2::e", "fc00:3::d"], []),
             ("encaps", [f"fc00:{i + 1:x}::e" for i in range(16)], []),
             ("encaps-red", ["fc00:3::d"], []),
             ("encaps-red", ["fc00:1::e", "fc00:3::d"], []),
             ("usid", [f"fc00:0:{(i + 1) * 0x100:x}::" for i in range(8)], [])]
    for mode, sids, extra in modes:
        enc = os.path.join(tmp, f"rt-{mode}-{len(sids)}.pcap")
        dec = os.path.join(tmp, f"rt-{mode}-{len(sids)}-dec.pcap")
        rl.run([tool, "encap", "--in", in_pcap, "--out", enc, "--sids", ",".join(sids),
                "--source", SOURCE, "--mode", mode] + extra)
        # Walk the path as the fabric would; the last segment must be the last SID given.
        walked = []
        for f in rl.read_pcap(enc):
            if f in passthrough:
                walked.append(f)
                continue
            usid = (4, 2) if mode == "usid" else (None, None)
            w, final_da = traverse(f, *usid)
            if final_da != str(ipaddress.IPv6Address(sids[-1])):
                fail(f"round trip {mode}/{len(sids)}: after the path the destination is "
                     f"{final_da}, expected the last SID {sids[-1]}")
            walked.append(w)
        at_end = os.path.join(tmp, f"rt-{mode}-{len(sids)}-walked.pcap")
        rl.write_pcap(at_end, walked)
        r = rl.run([tool, "decap", "--in", at_end, "--out", dec, "--behavior", "dt46",
                    "--dst-mac", MACS[0], "--src-mac", MACS[1]])
        out = rl.read_pcap(dec)
        # RoCE frames come back decapsulated; ARP and IPv4/TCP are not IPv6: passed unchanged;
        # the plain IPv6/UDP frame is not SRv6-encapsulated: refused by the local SID.
        if len(out) != len(samples) + 2:
            fail(f"round trip {mode}/{len(sids)}: {len(out)} frames out, expected "
                 f"{len(samples) + 2}\n{r.stdout}")
        for s, o in zip(samples, out):
            expect_decapped(f"round trip {mode}/{len(sids)} {s.name}", o, s.ip, MACS)
            if not rl.icrc_valid(o[14:]):
                fail(f"round trip {mode}/{len(sids)} {s.name}: ICRC invalid")
        if out[len(samples):] != passthrough[:2]:
            fail(f"round trip {mode}/{len(sids)}: non-IPv6 frames not passed unchanged")
        counts = decap_counts(r.stdout)
        want = {"ok": len(samples), "bad_next_header": 1}
        if counts != want:
            fail(f"round trip {mode}/{len(sids)}: decap counts {counts}, expected {want}\n"
                 f"{r.stdout}")
        log(f"ok round trip {mode} {len(sids)} SIDs: {len(samples)} packets identical")

    # A behavior that wants one family refuses the other, by name.
    enc = os.path.join(tmp, "rt-encaps-red-1.pcap")
    for behavior, family in (("dx4", 4), ("dx6", 6)):
        dec = os.path.join(tmp, f"rt-{behavior}.pcap")
        r = rl.run([tool, "decap", "--in", enc, "--out", dec, "--behavior", behavior])
        out = rl.read_pcap(dec)
        kept = [s for s in samples if s.family == family]
        decapped = [o for o in out if o[12:14] in (b"\x08\x00", b"\x86\xdd")
                    and o not in passthrough]
        if [o[14:] for o in decapped] != [s.ip for s in kept]:
            fail(f"{behavior}: decapsulated packets are not exactly the IPv{family} inputs")
        counts = decap_counts(r.stdout)
        want = {"ok": len(kept), "bad_next_header": len(samples) - len(kept) + 1}
        if counts != want:
            fail(f"{behavior}: decap counts {counts}, expected {want}\n{r.stdout}")
        # Without --dst-mac/--src-mac the MACs of the outer frame are kept.
        in_eth = Ether(rl.read_pcap(enc)[0])
        if (Ether(decapped[0]).dst, Ether(decapped[0]).src) != (in_eth.dst, in_eth.src):
            fail(f"{behavior}: MACs not kept without --dst-mac/--src-mac")
        log(f"ok {behavior}: {len(kept)} IPv{family} packets out, others refused by name")


def set_ecn(ip: bytes, ecn: int) -> bytes:
    """The expected inner packet after RFC 6040 marking, built by scapy."""
    if ip[0] >> 4 == 4:
        p = IP(ip)
        p.tos = (p.tos & 0xFC) | ecn
        del p.chksum
        return bytes(p)
    p = IPv6(ip)
    p.tc = (p.tc & 0xFC) | ecn
    return bytes(p)


def outer(inner: bytes, tc=0, segleft=0, srh=True, ext=(), vlan=None, sid="fc00:9::d4"):
    nh = 4 if inner[0] >> 4 == 4 else 41
    o = IPv6(src="fc00:ffff::2", dst=sid, tc=tc, hlim=60)
    chain = o
    for e in ext:
        chain = chain / e
    if srh:
        addrs = [sid] + [f"fc00:{i + 1}::e" for i in range(segleft)]
        chain = chain / IPv6ExtHdrSegmentRouting(addresses=addrs, segleft=segleft,
                                                 lastentry=len(addrs) - 1, tag=0x55, nh=nh)
    else:
        o.nh = nh
    pkt = bytes(chain) + inner
    # scapy set the payload length from what it built; patch it to include the raw inner bytes
    b = bytearray(pkt)
    b[4:6] = (len(pkt) - 40).to_bytes(2, "big")
    if not srh and not ext:
        b[6] = nh
    eth = Ether(dst="02:00:00:00:20:01", src="02:00:00:00:20:02")
    if vlan is not None:
        return bytes(eth / Dot1Q(vlan=vlan, type=0x86DD)) + bytes(b)
    eth.type = 0x86DD
    return bytes(eth) + bytes(b)


def scapy_built(tool, tmp):
    v4_ect0 = rl.roce_ip_packet(4, "10.0.0.1", "10.9.0.2", rl.OP_WRITE_ONLY, 0x42, 7, tos=0x68 | 2)
    v4_notect = rl.roce_ip_packet(4, "10.0.0.1", "10.9.0.2", rl.OP_ACK, 0x42, 8, tos=0x68)
    v4_ce = rl.roce_ip_packet(4, "10.0.0.1", "10.9.0.2", rl.OP_SEND_ONLY, 0x42, 9, tos=0x68 | 3)
    v6_ect1 = rl.roce_ip_packet(6, "fd00::1", "fd00:9::2", rl.OP_SEND_ONLY, 0x43, 10,
                                tos=0xB8 | 1)
    v6_notect = rl.roce_ip_packet(6, "fd00::1", "fd00:9::2", rl.OP_CNP, 0x43, 11, tos=0xC0)
    hbh = IPv6ExtHdrHopByHop()
    dst_opt = IPv6ExtHdrDestOpt()
    # name, frame, expected inner (None = dropped), expected reason
    cases = [
        ("outer CE onto IPv4 ECT(0) -> CE", outer(v4_ect0, tc=0x03), set_ecn(v4_ect0, 3), "ok"),
        ("outer CE onto IPv6 ECT(1) -> CE", outer(v6_ect1, tc=0xB8 | 3), set_ecn(v6_ect1, 3),
         "ok"),
        ("outer CE onto IPv4 not-ECT: drop", outer(v4_notect, tc=0x03), None,
         "ecn_ce_on_not_ect"),
        ("outer CE onto IPv6 not-ECT: drop", outer(v6_notect, tc=0x03), None,
         "ecn_ce_on_not_ect"),
        ("outer ECT(0), inner CE: unchanged", outer(v4_ce, tc=0x02), v4_ce, "ok"),
        ("outer not-ECT, inner ECT(0): unchanged", outer(v4_ect0, tc=0), v4_ect0, "ok"),
        # RFC 6040 figure 4: ECT(1) in the outer header is propagated onto an ECT(0) inner.
        ("outer ECT(1) onto IPv4 ECT(0) -> ECT(1)", outer(v4_ect0, tc=1), set_ecn(v4_ect0, 1),
         "ok"),
        ("outer ECT(0), inner ECT(1): unchanged", outer(v6_ect1, tc=2), v6_ect1, "ok"),
        ("reduced, no SRH, IPv4", outer(v4_ect0, srh=False), v4_ect0, "ok"),
        ("reduced, no SRH, IPv6", outer(v6_ect1, srh=False), v6_ect1, "ok"),
        ("hop-by-hop + dest options before SRH", outer(v4_ect0, ext=(hbh, dst_opt)), v4_ect0,
         "ok"),
        ("VLAN-tagged outer frame", outer(v6_ect1, vlan=20), v6_ect1, "ok"),
        ("atomic fragment header before SRH (RFC 6946)",
         outer(v4_ect0, ext=(IPv6ExtHdrFragment(offset=0, m=0, id=5),)), v4_ect0, "ok"),
        ("outer first fragment (M set): no reassembly",
         outer(v4_ect0, ext=(IPv6ExtHdrFragment(offset=0, m=1, id=6),)), None,
         "outer_fragment"),
        ("segments left 2: not the last segment", outer(v4_ect0, segleft=2), None,
         "segments_left_nonzero"),
    ]
    # An outer payload length that claims more than the frame holds.
    lying = bytearray(outer(v4_ect0))
    lying[14 + 4:14 + 6] = (int.from_bytes(lying[18:20], "big") + 100).to_bytes(2, "big")
    cases.append(("outer payload length beyond the frame", bytes(lying), None,
                  "bad_outer_length"))
    # SRH whose last entry disagrees with its length.
    bad_srh = bytearray(outer(v4_ect0, segleft=0))
    bad_srh[14 + 40 + 4] = 3  # last entry 3 with one 16-byte entry
    cases.append(("SRH last entry 3 with one entry", bytes(bad_srh), None, "srh_inconsistent"))
    # Inner IPv4 whose total length runs past the outer payload.
    short_inner = bytearray(outer(v4_ect0))
    off = 14 + 40 + 8 + 16
    short_inner[off + 2:off + 4] = (len(v4_ect0) + 40).to_bytes(2, "big")
    cases.append(("inner length beyond the outer payload", bytes(short_inner), None,
                  "truncated_inner"))
    # An outer IPv6 header cut short.
    cases.append(("outer IPv6 cut at 30 bytes", outer(v4_ect0)[:14 + 30], None,
                  "truncated_outer"))

    for name, frame_bytes, want_inner, reason in cases:
        in_pcap = os.path.join(tmp, "ecn-in.pcap")
        out_pcap = os.path.join(tmp, "ecn-out.pcap")
        rl.write_pcap(in_pcap, [frame_bytes])
        r = rl.run([tool, "decap", "--in", in_pcap, "--out", out_pcap, "--dst-mac", MACS[0],
                    "--src-mac", MACS[1]])
        counts = decap_counts(r.stdout)
        if counts != {reason: 1}:
            fail(f"scapy-built '{name}': decap counts {counts}, expected {{{reason!r}: 1}}\n"
                 f"{r.stdout}")
        out = rl.read_pcap(out_pcap)
        if want_inner is None:
            if out:
                fail(f"scapy-built '{name}': expected a drop, got {len(out)} frames")
        else:
            if len(out) != 1:
                fail(f"scapy-built '{name}': {len(out)} frames out, expected 1")
            expect_decapped(f"scapy-built '{name}'", out[0], want_inner, MACS)
            if not rl.icrc_valid(out[0][14:]):
                fail(f"scapy-built '{name}': ICRC invalid after decap (ECN is masked)")
            if want_inner[0] >> 4 == 4:
                ip = IP(out[0][14:])
                cs = ip.chksum
                del ip.chksum
                if IP(bytes(ip)).chksum != cs:
                    fail(f"scapy-built '{name}': IPv4 header checksum not updated")
            if UDP not in Ether(out[0]):
                fail(f"scapy-built '{name}': scapy does not see UDP in the output")
        log(f"ok scapy-built: {name} ({reason})")


def main():
    tool = rl.tool_path(sys.argv[1])
    with tempfile.TemporaryDirectory(prefix="srv6gw-roundtrip-") as tmp:
        round_trip(tool, tmp)
        scapy_built(tool, tmp)


if __name__ == "__main__":
    rl.main_wrapper(main)
