#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
# Interop (a): what srv6gw encapsulates, the Linux kernel's SRv6 forwards and decapsulates.
#
#   snd --veth-- fab1 --veth-- fab2 --veth-- rcv
#   snd injects frames encapsulated by srv6gw-pcap on a raw AF_PACKET socket; fab1 is a
#   kernel SRv6 node (seg6local End, End with NEXT-C-SID), fab2 too (End, End.DX4, End.DX6);
#   rcv captures what comes out of the tunnel. Every seg6local route counts its packets, so the
#   test knows each kernel behavior really ran. rcv must get the original RoCEv2 packets,
#   equal except for the TTL/hop limit that fab2 lowers when it forwards them (and the IPv4
#   checksum), with the ICRC still valid.
#
# usage: our_encap_kernel_decap.py SRV6GW_PCAP      (root; exits 77 without namespaces)
import os
import sys
import tempfile
import time

sys.dont_write_bytecode = True  # keep the source tree clean
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import netns_lib as nl  # noqa: E402
from netns_lib import rl  # noqa: E402

SOURCE = "fc00:ffff::1"
USID_FLAVOR = "flavors next-csid lblen 32 nflen 16"


def setup():
    chain = nl.Chain(["snd", "fab1", "fab2", "rcv"])
    for role in ("fab1", "fab2"):
        chain.forwarding(role)
    # fab1: End, uSID End x4, routes toward fab2.
    r = chain.ip("fab1", "-6 route add fc00:1::e/128 encap seg6local action End count dev lft0",
                 check=False)
    if r.returncode != 0:
        nl.skip(f"the kernel refuses seg6local End routes: {r.stderr.strip()}")
    chain.ip("fab1", "-6 route add fc00:3::/64 via fc00:f1::2 dev rgt0")
    chain.ip("fab1", "-6 route add fcbb:bb00:200::/40 via fc00:f1::2 dev rgt0")
    # fab2: End, End.DX4/End.DX6 toward rcv.
    chain.ip("fab2", "-6 addr add fd00:1::fe/64 dev rgt0 nodad")
    chain.ip("fab2", "addr add 10.0.1.254/24 dev rgt0")
    rcv_mac = chain.mac("rcv", "lft0")
    chain.neigh("fab2", "rgt0", "10.0.1.1", rcv_mac)
    chain.neigh("fab2", "rgt0", "fd00:1::1", rcv_mac)
    chain.ip("fab2", "-6 route add fc00:3::e/128 encap seg6local action End count dev lft0")
    chain.ip("fab2", "-6 route add fc00:3::d4/128 encap seg6local action End.DX4 nh4 10.0.1.1 "
                     "count dev rgt0")
    chain.ip("fab2", "-6 route add fc00:3::d6/128 encap seg6local action End.DX6 nh6 fd00:1::1 "
                     "count dev rgt0")
    chain.ip("rcv", "-6 addr add fd00:1::1/64 dev lft0 nodad")
    chain.ip("rcv", "addr add 10.0.1.1/24 dev lft0")

    # NEXT-C-SID (uSID): block fcbb:bb00::/32, 16-bit micro-SIDs; 1xx on fab1, 2xx on fab2.
    usid_ok, usid_reason = True, ""
    for role, usid in (("fab1", 0x101), ("fab1", 0x102), ("fab1", 0x103), ("fab1", 0x104),
                       ("fab2", 0x201), ("fab2", 0x202), ("fab2", 0x203)):
        r = chain.ip(role, f"-6 route add fcbb:bb00:{usid:x}::/48 encap seg6local action End "
                           f"{USID_FLAVOR} count dev lft0", check=False)
        if r.returncode != 0:
            usid_ok, usid_reason = False, f"kernel/iproute2 refused End {USID_FLAVOR}: " \
                                          f"{r.stderr.strip()}"
            break
    if usid_ok:
        chain.ip("fab2", "-6 route add fcbb:bb00:2d4::/48 encap seg6local action End.DX4 "
                         "nh4 10.0.1.1 count dev rgt0")
        chain.ip("fab2", "-6 route add fcbb:bb00:2d6::/48 encap seg6local action End.DX6 "
                         "nh6 fd00:1::1 count dev rgt0")
    return chain, usid_ok, usid_reason


def counters(chain, routes):
    return {(role, prefix): chain.route_packets(role, prefix) for role, prefix in routes}


def main():
    tool = rl.tool_path(sys.argv[1])
    nl.require_root_and_netns()
    started = time.monotonic()
    chain, usid_ok, usid_reason = setup()
    fab1_mac, snd_mac = chain.mac("fab1", "lft0"), chain.mac("snd", "rgt0")
    tx = nl.packet_socket(chain.ns["snd"], "rgt0")
    rx = nl.packet_socket(chain.ns["rcv"], "lft0")

    samples = rl.roce_samples(v4_dst="10.0.1.1", v6_dst="fd00:1::1", big=False)
    by_family = {f: [s for s in samples if s.family == f] for f in (4, 6)}
    usid_v4 = [f"fcbb:bb00:{u:x}::" for u in (0x101, 0x102, 0x103, 0x104, 0x201, 0x202, 0x203)]
    # name, mode, SIDs per family, the seg6local routes that must each count every packet
    cases = [
        ("encaps 3 SIDs", "encaps",
         {4: ["fc00:1::e", "fc00:3::e", "fc00:3::d4"], 6: ["fc00:1::e", "fc00:3::e", "fc00:3::d6"]},
         {4: [("fab1", "fc00:1::e"), ("fab2", "fc00:3::e"), ("fab2", "fc00:3::d4")],
          6: [("fab1", "fc00:1::e"), ("fab2", "fc00:3::e"), ("fab2", "fc00:3::d6")]}),
        ("encaps-red 3 SIDs", "encaps-red",
         {4: ["fc00:1::e", "fc00:3::e", "fc00:3::d4"], 6: ["fc00:1::e", "fc00:3::e", "fc00:3::d6"]},
         {4: [("fab1", "fc00:1::e"), ("fab2", "fc00:3::e"), ("fab2", "fc00:3::d4")],
          6: [("fab1", "fc00:1::e"), ("fab2", "fc00:3::e"), ("fab2", "fc00:3::d6")]}),
        ("encaps 1 SID (SRH, segments left 0)", "encaps",
         {4: ["fc00:3::d4"], 6: ["fc00:3::d6"]},
         {4: [("fab2", "fc00:3::d4")], 6: [("fab2", "fc00:3::d6")]}),
        ("encaps-red 1 SID (no SRH, next header 4/41)", "encaps-red",
         {4: ["fc00:3::d4"], 6: ["fc00:3::d6"]},
         {4: [("fab2", "fc00:3::d4")], 6: [("fab2", "fc00:3::d6")]}),
        ("usid 3 micro-SIDs (1 container, no SRH)", "usid",
         {4: ["fcbb:bb00:101::", "fcbb:bb00:201::", "fcbb:bb00:2d4::"],
          6: ["fcbb:bb00:101::", "fcbb:bb00:201::", "fcbb:bb00:2d6::"]},
         {4: [("fab1", "fcbb:bb00:101::/48"), ("fab2", "fcbb:bb00:201::/48"),
              ("fab2", "fcbb:bb00:2d4::/48")],
          6: [("fab1", "fcbb:bb00:101::/48"), ("fab2", "fcbb:bb00:201::/48"),
              ("fab2", "fcbb:bb00:2d6::/48")]}),
        ("usid 8 micro-SIDs (2 containers, reduced SRH)", "usid",
         {4: usid_v4 + ["fcbb:bb00:2d4::"], 6: usid_v4 + ["fcbb:bb00:2d6::"]},
         {4: [("fab1", f"fcbb:bb00:{u:x}::/48") for u in (0x101, 0x102, 0x103, 0x104)] +
             [("fab2", f"fcbb:bb00:{u:x}::/48") for u in (0x201, 0x202, 0x203, 0x2d4)],
          6: [("fab1", f"fcbb:bb00:{u:x}::/48") for u in (0x101, 0x102, 0x103, 0x104)] +
             [("fab2", f"fcbb:bb00:{u:x}::/48") for u in (0x201, 0x202, 0x203, 0x2d6)]}),
    ]
    failures, skipped = [], []
    with tempfile.TemporaryDirectory(prefix="srv6gw-interop-a-") as tmp:
        for name, mode, sids, routes in cases:
            if mode == "usid" and not usid_ok:
                skipped.append(f"{name}: {usid_reason}")
                print(f"skip {name}: {usid_reason}", flush=True)
                continue
            for family in (4, 6):
                label = f"{name}, IPv{family} inner"
                src = by_family[family]
                in_pcap = os.path.join(tmp, "in.pcap")
                out_pcap = os.path.join(tmp, "out.pcap")
                rl.write_pcap(in_pcap, [s.frame for s in src])
                rl.run([tool, "encap", "--in", in_pcap, "--out", out_pcap, "--mode", mode,
                        "--sids", ",".join(sids[family]), "--source", SOURCE,
                        "--dst-mac", fab1_mac, "--src-mac", snd_mac])
                frames = rl.read_pcap(out_pcap)
                before = counters(chain, routes[family])
                nl.drain(rx)
                for f in frames:
                    tx.send(f)
                got = nl.capture(rx, len(src), nl.plain_roce_frame, timeout=4.0)
                after = counters(chain, routes[family])
                problems = []
                for key in routes[family]:
                    delta = after[key] - before[key]
                    if delta != len(src):
                        problems.append(f"kernel route {key[1]} on {key[0]} counted {delta} "
                                        f"packets, expected {len(src)}")
                if len(got) != len(src):
                    problems.append(f"rcv got {len(got)} RoCE packets, expected {len(src)}")
                for s, g in zip(src, got):
                    want_type = b"\x08\x00" if family == 4 else b"\x86\xdd"
                    if g[12:14] != want_type:
                        problems.append(f"{s.name}: ethertype {g[12:14].hex()}")
                        continue
                    ip = g[14:14 + len(s.ip)]
                    diff = nl.same_modulo_ttl(s.ip, ip, hops=1)
                    if diff:
                        problems.append(f"{s.name}: received packet differs:\n{diff}")
                    elif not rl.icrc_valid(ip):
                        problems.append(f"{s.name}: ICRC invalid after the kernel's decap")
                if problems:
                    failures.append(f"{label}:\n  " + "\n  ".join(problems))
                    print(f"FAIL {label}", flush=True)
                else:
                    print(f"ok {label}: {len(src)} packets through "
                          f"{' -> '.join(p for _, p in routes[family])}, identical modulo TTL",
                          flush=True)
    tx.close()
    rx.close()
    chain.cleanup()
    print(f"elapsed {time.monotonic() - started:.1f} s", flush=True)
    if skipped:
        print("skipped cases:\n  " + "\n  ".join(skipped), flush=True)
    if failures:
        rl.fail("\n".join(failures))


if __name__ == "__main__":
    rl.main_wrapper(main)
