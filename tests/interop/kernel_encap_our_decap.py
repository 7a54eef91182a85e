#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
# Interop (b): what the Linux kernel encapsulates (seg6 H.Encaps / H.Encaps.Red, with a kernel
# End on the way), srv6gw decapsulates.
#
#   src --veth-- kenc --veth-- kend --veth-- cap
#   src injects scapy RoCEv2 frames (valid ICRC) on a raw socket; kenc forwards them into a
#   route 'encap seg6 mode encap|encap.red segs ...'; kend is a kernel End for the 2-SID paths;
#   cap captures the SRv6 frames. srv6gw-pcap decap (End.DX4 / End.DX6 / End.DT46) must give
#   back exactly the packets src sent (the kernel's seg6 encap runs on the input path, before
#   forwarding, so not even the inner TTL changes).
#
# usage: kernel_encap_our_decap.py SRV6GW_PCAP      (root; exits 77 without namespaces)
import os
import sys
import tempfile
import time

sys.dont_write_bytecode = True  # keep the source tree clean
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import netns_lib as nl  # noqa: E402
from netns_lib import rl  # noqa: E402
from scapy.all import Ether, IPv6, IPv6ExtHdrSegmentRouting  # noqa: E402

MACS = ("02:00:00:00:30:01", "02:00:00:00:30:02")
V4_NET, V6_NET = "10.9.0.0/24", "fd00:9::/64"


def setup():
    chain = nl.Chain(["src", "kenc", "kend", "cap"])
    chain.forwarding("kenc")
    chain.forwarding("kend")
    # kenc: reverse routes to the sender, the tunnel source, routes toward the SIDs.
    chain.ip("kenc", "route add 10.0.0.0/24 via 10.100.0.1 dev lft0")
    chain.ip("kenc", "-6 route add fd00::/64 via fc00:f0::1 dev lft0")
    chain.ip("kenc", "-6 route add fc00:9::/64 via fc00:f1::2 dev rgt0")
    chain.ip("kenc", "-6 route add fc00:1::/64 via fc00:f1::2 dev rgt0")
    r = sh_ok(["ip", "-n", chain.ns["kenc"], "sr", "tunsrc", "set", "fc00:f1::1"])
    if not r:
        print("note: 'ip sr tunsrc set' refused; the kernel picks the outer source", flush=True)
    # kend: a kernel End for fc00:1::e, then on toward cap.
    r = chain.ip("kend", "-6 route add fc00:1::e/128 encap seg6local action End count dev lft0",
                 check=False)
    if r.returncode != 0:
        nl.skip(f"the kernel refuses seg6local End routes: {r.stderr.strip()}")
    r = chain.ip("kenc", f"route add {V4_NET} encap seg6 mode encap segs fc00:9::d4 dev rgt0",
                 check=False)
    if r.returncode != 0:
        nl.skip(f"the kernel refuses seg6 encap routes: {r.stderr.strip()}")
    chain.ip("kend", "-6 route add fc00:9::/64 via fc00:f2::2 dev rgt0")
    return chain


def sh_ok(cmd):
    return nl.sh(cmd, check=False).returncode == 0


def srv6_to(sid):
    want = bytes(IPv6(dst=sid))[24:40]

    def match(frame):
        return frame[12:14] == b"\x86\xdd" and frame[14 + 24:14 + 40] == want
    return match


def describe_outer(frame):
    p = Ether(frame)
    o = p[IPv6]
    if IPv6ExtHdrSegmentRouting in p:
        srh = p[IPv6ExtHdrSegmentRouting]
        return (f"outer {o.src} -> {o.dst}, SRH segleft {srh.segleft} last entry "
                f"{srh.lastentry} [{', '.join(srh.addresses)}]")
    return f"outer {o.src} -> {o.dst}, no SRH, next header {o.nh}"


def main():
    tool = rl.tool_path(sys.argv[1])
    nl.require_root_and_netns()
    started = time.monotonic()
    chain = setup()
    kenc_mac, src_mac = chain.mac("kenc", "lft0"), chain.mac("src", "rgt0")
    tx = nl.packet_socket(chain.ns["src"], "rgt0")
    rx = nl.packet_socket(chain.ns["cap"], "lft0")

    samples = rl.roce_samples(v4_dst="10.9.0.2", v6_dst="fd00:9::2", vlans=(None,),
                              big=False)
    for s in samples:  # frames addressed to kenc
        s.frame = bytes(Ether(dst=kenc_mac, src=src_mac))[:12] + s.frame[12:]
    by_family = {f: [s for s in samples if s.family == f] for f in (4, 6)}
    # name, kernel mode, SIDs per family, expect SRH, expect kernel End, behaviors to try
    cases = [
        ("encap 1 SID", "encap", {4: ["fc00:9::d4"], 6: ["fc00:9::d6"]}, True, False),
        ("encap.red 1 SID", "encap.red", {4: ["fc00:9::d4"], 6: ["fc00:9::d6"]}, False, False),
        ("encap 2 SIDs via kernel End", "encap",
         {4: ["fc00:1::e", "fc00:9::d4"], 6: ["fc00:1::e", "fc00:9::d6"]}, True, True),
        ("encap.red 2 SIDs via kernel End", "encap.red",
         {4: ["fc00:1::e", "fc00:9::d4"], 6: ["fc00:1::e", "fc00:9::d6"]}, True, True),
    ]
    failures = []
    with tempfile.TemporaryDirectory(prefix="srv6gw-interop-b-") as tmp:
        for name, mode, sids, want_srh, via_end in cases:
            for family in (4, 6):
                label = f"kernel {name}, IPv{family} inner"
                src = by_family[family]
                fam = "" if family == 4 else "-6 "
                net = V4_NET if family == 4 else V6_NET
                r = chain.ip("kenc", f"{fam}route replace {net} encap seg6 mode {mode} segs "
                                     f"{','.join(sids[family])} dev rgt0", check=False)
                if r.returncode != 0:
                    failures.append(f"{label}: kernel refused the route: {r.stderr.strip()}")
                    continue
                end_before = chain.route_packets("kend", "fc00:1::e")
                nl.drain(rx)
                for s in src:
                    tx.send(s.frame)
                got = nl.capture(rx, len(src), srv6_to(sids[family][-1]), timeout=4.0)
                end_delta = chain.route_packets("kend", "fc00:1::e") - end_before
                problems = []
                if len(got) != len(src):
                    problems.append(f"cap got {len(got)} SRv6 frames, expected {len(src)}")
                if via_end and end_delta != len(src):
                    problems.append(f"kernel End on kend counted {end_delta}, expected "
                                    f"{len(src)}")
                has_srh = [IPv6ExtHdrSegmentRouting in Ether(g) for g in got]
                if got and any(h != want_srh for h in has_srh):
                    problems.append(f"kernel SRH presence {has_srh[0]}, expected {want_srh}: "
                                    f"{describe_outer(got[0])}")
                in_pcap = os.path.join(tmp, "captured.pcap")
                rl.write_pcap(in_pcap, got)
                for behavior in ("dx4" if family == 4 else "dx6", "dt46"):
                    out_pcap = os.path.join(tmp, f"decap-{behavior}.pcap")
                    res = rl.run([tool, "decap", "--in", in_pcap, "--out", out_pcap,
                                  "--behavior", behavior, "--dst-mac", MACS[0],
                                  "--src-mac", MACS[1]])
                    out = rl.read_pcap(out_pcap)
                    if len(out) != len(got):
                        problems.append(f"decap {behavior}: {len(out)} of {len(got)} frames "
                                        f"decapsulated\n{res.stdout}")
                        continue
                    for s, o in zip(src, out):
                        want_type = b"\x08\x00" if family == 4 else b"\x86\xdd"
                        if o[:12] != rl.frame(b"\x45", *MACS)[:12] or o[12:14] != want_type:
                            problems.append(f"{behavior} {s.name}: Ethernet header "
                                            f"{o[:14].hex()}")
                            continue
                        # The kernel encapsulates on its input path (lwtunnel), before IP
                        # forwarding: the inner TTL/hop limit stays as src sent it.
                        diff = nl.same_modulo_ttl(s.ip, o[14:], hops=0)
                        if diff:
                            problems.append(f"{behavior} {s.name}: decapsulated packet differs "
                                            f"from what src sent ({describe_outer(got[0])}):"
                                            f"\n{diff}")
                        elif not rl.icrc_valid(o[14:]):
                            problems.append(f"{behavior} {s.name}: ICRC invalid")
                if problems:
                    failures.append(f"{label}:\n  " + "\n  ".join(problems))
                    print(f"FAIL {label}", flush=True)
                else:
                    print(f"ok {label}: {len(src)} packets, {describe_outer(got[0])}; "
                          f"decap gives back what src sent byte for byte", flush=True)
    tx.close()
    rx.close()
    chain.cleanup()
    print(f"elapsed {time.monotonic() - started:.1f} s", flush=True)
    if failures:
        rl.fail("\n".join(failures))


if __name__ == "__main__":
    rl.main_wrapper(main)
