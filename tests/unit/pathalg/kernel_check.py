#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
# Kernel check: segment lists srv6gw-plan generates for a 2-leaf / 2-spine fabric steer
# packets through the Linux kernel's SRv6 to the far gateway, over the spine they name.
#
#   gA ─ L1 ─┬─ S1 ─┬─ L2 ─ gB        leaves: plain IPv6 routers (locators)
#            └─ S2 ─┘                 spines: seg6local End (full SIDs), End next-csid (uN)
#
# For every segment list of gA's policy toward gB (both spines, full SIDs and uSID), frames
# encapsulated by srv6gw-pcap (the gateway's packet core) leave gA, must arrive at gB with the
# destination address the gateway's decap SID (or micro-SID), and must cross the spine the
# list names (its link counters). Root and network namespaces; exits 77 otherwise.
# Usage: kernel_check.py SRV6GW_PLAN SRV6GW_PCAP
import json
import os
import subprocess
import sys
import tempfile
import time

sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "interop"))
sys.path.insert(0, os.path.join(HERE, "..", "..", "integration"))
import netns_lib as nl  # noqa: E402

nl.require_root_and_netns()
try:
    from scapy.all import IPv6, rdpcap
except ImportError:
    nl.skip("python3-scapy is not installed")
import gwlib  # noqa: E402

plan, pcap_tool = sys.argv[1:3]
work = tempfile.mkdtemp(prefix="pathalg-kernel-")
topo = os.path.join(work, "topo.json")
subprocess.run([plan, "generate", "leaf-spine", "--leaves", "2", "--spines", "2",
                "--hosts-per-leaf", "1", "-o", topo], check=True)
# generated addressing: leaf0 0x100, leaf1 0x101, spine0 0x102, spine1 0x103; h0 0x1000 (gA),
# h1 0x1001 (gB); End SIDs fc00:0:<u>::e, uN fc00:0:<u>::, locators fc00:0:<u>::/48.
tag = os.getpid() % 100000
roles = ["gA", "L1", "S1", "S2", "L2", "gB"]
ns = {r: f"pa{tag}{r}" for r in roles}
created = []


def ip(role, args, check=True):
    return nl.sh(["ip", "-n", ns[role]] + args.split(), check=check)


def batch(role, lines):
    r = subprocess.run(["ip", "-6", "-n", ns[role], "-batch", "-"], input="\n".join(lines),
                       capture_output=True, text=True)
    if r.returncode != 0:
        gwlib.fail(f"{role}: {r.stderr.strip()}")


def mac(role, dev):
    return json.loads(ip(role, f"-j link show dev {dev}").stdout)[0]["address"]


def rx_packets(role, dev):
    return json.loads(ip(role, f"-s -j link show dev {dev}").stdout)[0]["stats64"]["rx"]["packets"]


def cleanup():
    for n in created:
        subprocess.run(["ip", "netns", "del", n], capture_output=True)


import atexit  # noqa: E402
atexit.register(cleanup)
for r in roles:
    nl.sh(["ip", "netns", "add", ns[r]])
    created.append(ns[r])
    ip(r, "link set lo up")
    sysctls = ["net.ipv6.conf.all.accept_dad=0", "net.ipv6.conf.default.accept_dad=0"]
    if r[0] in "LS":
        sysctls += ["net.ipv6.conf.all.forwarding=1", "net.ipv6.conf.all.seg6_enabled=1",
                    "net.ipv6.conf.default.seg6_enabled=1"]
    else:
        sysctls += ["net.ipv6.conf.all.disable_ipv6=1", "net.ipv6.conf.default.disable_ipv6=1"]
    for s in sysctls:
        nl.sh(["ip", "netns", "exec", ns[r], "sysctl", "-qw", s])
links = [("gA", "fab0", "L1", "gw0"), ("L1", "up1", "S1", "dn1"), ("L1", "up2", "S2", "dn1"),
         ("S1", "dn2", "L2", "up1"), ("S2", "dn2", "L2", "up2"), ("L2", "gw0", "gB", "fab0")]
for a, da, b, db in links:
    nl.sh(["ip", "-n", ns[a], "link", "add", da, "type", "veth", "peer", "name", db, "netns",
           ns[b]])
    ip(a, f"link set dev {da} up")
    ip(b, f"link set dev {db} up")
m = {(r, d): mac(r, d) for a, da, b, db in links for r, d in ((a, da), (b, db))}
batch("L1", ["addr add fc00:ff:1::1/64 dev up1 nodad", "addr add fc00:ff:2::1/64 dev up2 nodad",
             f"neigh replace fc00:ff:1::2 lladdr {m[('S1', 'dn1')]} dev up1 nud permanent",
             f"neigh replace fc00:ff:2::2 lladdr {m[('S2', 'dn1')]} dev up2 nud permanent",
             "route add fc00:0:102::/48 via fc00:ff:1::2 dev up1",
             "route add fc00:0:103::/48 via fc00:ff:2::2 dev up2",
             "route add fc00:0:1001::/48 via fc00:ff:1::2 dev up1"])
batch("L2", ["addr add fc00:ff:3::2/64 dev up1 nodad", "addr add fc00:ff:4::2/64 dev up2 nodad",
             "addr add fc00:ff:5::1/64 dev gw0 nodad",
             f"neigh replace fc00:ff:5::2 lladdr {m[('gB', 'fab0')]} dev gw0 nud permanent",
             "route add fc00:0:1001::/48 via fc00:ff:5::2 dev gw0"])
usid_ok, usid_reason = True, ""
for i, s in ((1, "S1"), (2, "S2")):
    u = 0x101 + i
    batch(s, [f"addr add fc00:ff:{i}::2/64 dev dn1 nodad",
              f"addr add fc00:ff:{i + 2}::1/64 dev dn2 nodad",
              f"neigh replace fc00:ff:{i + 2}::2 lladdr {m[('L2', f'up{i}')]} dev dn2 nud permanent",
              f"route add fc00:0:{u:x}::e/128 encap seg6local action End dev dn1",
              "route add fc00:0:1001::/48 via fc00:ff:%d::2 dev dn2" % (i + 2)])
    r = ip(s, f"-6 route add fc00:0:{u:x}::/48 encap seg6local action End flavors next-csid "
              f"lblen 32 nflen 16 dev dn1", check=False)
    if r.returncode != 0:
        usid_ok, usid_reason = False, r.stderr.strip()

sink = nl.packet_socket(ns["gB"], "fab0")
frames_in = os.path.join(work, "in.pcap")
gwlib.write_roce_writes_pcap(frames_in, dst="10.0.0.1", count=5)
checked = 0
for mode in ("encaps", "usid"):
    if mode == "usid" and not usid_ok:
        print(f"SKIP part: the kernel refused End next-csid ({usid_reason})")
        continue
    lines = subprocess.run([plan, topo, "--gateway", "h0", "--encap", mode, "--headers",
                            "--backups", "0", "-q"], capture_output=True, text=True,
                           check=True).stdout.splitlines()
    lists = [l.split() for l in lines if l.startswith("to-h1 ")]
    if len(lists) != 2:
        gwlib.fail(f"{mode}: expected two lists toward h1, got {lines}")
    for policy, name, path_id, sids, _ in lists:
        spine = {"spine0": "S1", "spine1": "S2"}[name]
        other = "S2" if spine == "S1" else "S1"
        out = os.path.join(work, f"{mode}-{name}.pcap")
        cmd = [pcap_tool, "encap", "--in", frames_in, "--out", out, "--sids", sids,
               "--source", "fc00:0:1000::1", "--mode", mode, "--tag", path_id,
               "--dst-mac", m[("L1", "gw0")], "--src-mac", m[("gA", "fab0")]]
        subprocess.run(cmd, check=True, capture_output=True)
        before = {s: rx_packets(s, "dn1") for s in ("S1", "S2")}
        nl.drain(sink)
        with nl.open_in_netns(ns["gA"]):
            import socket
            tx = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
            tx.bind(("fab0", 0))
        for f in rdpcap(out):
            tx.send(bytes(f))
        tx.close()
        final = sids.split(",")[-1]
        got = nl.capture(sink, 5, lambda fr: len(fr) > 54 and fr[12:14] == b"\x86\xdd" and
                         IPv6(fr[14:]).dst == final, timeout=5.0)
        time.sleep(0.2)
        crossed = {s: rx_packets(s, "dn1") - before[s] for s in ("S1", "S2")}
        if len(got) != 5:
            gwlib.fail(f"{mode} {name} [{sids}]: {len(got)} of 5 frames reached gB with "
                       f"destination {final}; spine counters {crossed}")
        if crossed[spine] < 5 or crossed[other] >= 5:
            gwlib.fail(f"{mode} {name}: frames did not cross {spine} only: {crossed}")
        print(f"ok {mode} {name} [{sids}]: 5 frames via {spine} reached gB ({final})")
        checked += 1
print(f"{checked} generated segment lists steered through the kernel fabric")
