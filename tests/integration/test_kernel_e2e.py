#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
# Kernel end to end: the srv6gw daemon between a GPU host and the Linux kernel's SRv6, all in
# network namespaces joined by veth pairs.
#
#   host --veth-- [gw: srv6gw net_af_packet0 | net_af_packet1] --veth-- fab1 --- fab2 --- rcv
#
# (a) host -> rcv: host sends scapy RoCEv2 frames (IPv4 and IPv6, valid ICRC, several QPs and
#     opcodes, some VLAN-tagged); the daemon steers them (prefix, destination, exact and
#     QP-range rules) to policies: H.Encaps over 3 SIDs (kernel End on fab1, End on fab2, then
#     End.DX4 / End.DX6 on fab2), H.Encaps.Red over the same SIDs, H.Encaps.Red with one SID
#     (no SRH), and a NEXT-C-SID policy when the kernel has End with flavor next-csid. What the
#     gateway puts on the wire is checked on fab1 against the RFCs (outer header, SRH, the
#     untouched inner packet); what rcv gets must be the packet host sent, except the TTL/hop
#     limit (and IPv4 checksum) that fab2 changes when it forwards it, with the ICRC still
#     valid. Every kernel seg6local route counts its packets: each behavior really ran.
# (b) rcv -> host: fab2 encapsulates rcv's RoCEv2 packets with the kernel's 'encap seg6 mode
#     encap | encap.red' toward the gateway's local SIDs (End.DX4, End.DX6, End.DT46), directly
#     or through the kernel End on fab1; the daemon decapsulates and host must receive exactly
#     the packets rcv sent (the kernel encapsulates on its input path: the inner TTL is kept),
#     with the configured host MAC as destination.
# The daemon's final statistics (per path, encap/decap, drops by reason) must agree.
#
# Needs root and network namespaces (exits 77 otherwise). net_af_packet runs inside the gw
# namespace (the daemon process is started there); the gw kernel has no addresses and IPv6
# off on its two veths, so it puts nothing of its own on the wire the PMD could pick up.
import ipaddress
import os
import sys
import time

sys.dont_write_bytecode = True  # keep the source tree clean
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "interop"))
import gwlib  # noqa: E402
import netns_lib as nl  # noqa: E402
from netns_lib import rl  # noqa: E402

GW_SOURCE = "fc00:9::1"
LOCAL_SID = {"dx4": "fc00:9::d4", "dx6": "fc00:9::d6", "dt46": "fc00:9::46"}
USID_FLAVOR = "flavors next-csid lblen 32 nflen 16"
HOST_V4, HOST_V6 = "10.0.0.1", "fd00::1"
HOST_NET4, HOST_NET6 = "10.0.0.0/24", "fd00::/64"
RCV_V4, RCV_V6 = "10.0.1.1", "fd00:1::1"
HOP_LIMIT = 64

# (name, opcode, TOS/traffic class, payload bytes)
KINDS = [
    ("send-only", rl.OP_SEND_ONLY, 0x68 | 0x2, 64),
    ("write-first", rl.OP_WRITE_FIRST, 0x68 | 0x1, 1024),
    ("write-only", rl.OP_WRITE_ONLY, 0x68 | 0x3, 200),
    ("read-request", rl.OP_READ_REQUEST, 0xB8 | 0x2, 0),
    ("ack", rl.OP_ACK, 0x00, 0),
    ("cnp", rl.OP_CNP, 0xC0 | 0x2, 0),
]


def log(msg):
    print(msg, flush=True)


# ---------------------------------------------------------------------------------------------
# Topology


def setup_topology():
    chain = nl.Chain(["host", "gw", "fab1", "fab2", "rcv"])
    # gw: a bump in the wire for its kernel. No addresses, no IPv6 (no RS/MLD/ND of its own
    # that net_af_packet would see as outgoing frames and forward).
    for dev in ("lft0", "rgt0"):
        chain.ip("gw", f"addr flush dev {dev}")
        chain.sysctl("gw", f"net.ipv6.conf.{dev}.disable_ipv6", 1)
    for role in ("fab1", "fab2"):
        chain.forwarding(role)

    r = chain.ip("fab1", "-6 route add fc00:1::e/128 encap seg6local action End count dev lft0",
                 check=False)
    if r.returncode != 0:
        nl.skip(f"the kernel refuses seg6local End routes: {r.stderr.strip()}")
    # fab1: toward fab2's SIDs, and back toward the gateway's SIDs (fc00:f1::1 is gw's
    # rgt0: netns_lib left a permanent neighbour entry with its MAC).
    chain.ip("fab1", "-6 route add fc00:3::/64 via fc00:f2::2 dev rgt0")
    chain.ip("fab1", "-6 route add fcbb:bb00:200::/40 via fc00:f2::2 dev rgt0")
    chain.ip("fab1", "-6 route add fc00:9::/64 via fc00:f1::1 dev lft0")

    # fab2: End, End.DX4, End.DX6 toward rcv; routes back toward fab1 and the gateway.
    chain.ip("fab2", "-6 addr add fd00:1::fe/64 dev rgt0 nodad")
    chain.ip("fab2", "addr add 10.0.1.254/24 dev rgt0")
    # Every inner destination lives behind rcv. Static neighbours for all of them, not only
    # for nh4/nh6: the kernel's End.DX4 looks the route up for nh4, but on a connected route
    # the neighbour it resolves is the inner destination address (rt_nexthop), so without
    # these, packets to 10.0.1.2-4 wait for ARP that nobody answers (and fab2's ICMP errors
    # would travel the reverse tunnel to the gateway).
    rcv_mac = chain.mac("rcv", "lft0")
    for i in range(1, 5):
        chain.neigh("fab2", "rgt0", f"10.0.1.{i}", rcv_mac)
        chain.neigh("fab2", "rgt0", f"fd00:1::{i}", rcv_mac)
    chain.ip("fab2", "-6 route add fc00:3::e/128 encap seg6local action End count dev lft0")
    chain.ip("fab2", f"-6 route add fc00:3::d4/128 encap seg6local action End.DX4 nh4 {RCV_V4} "
                     "count dev rgt0")
    chain.ip("fab2", f"-6 route add fc00:3::d6/128 encap seg6local action End.DX6 nh6 {RCV_V6} "
                     "count dev rgt0")
    chain.ip("fab2", "-6 route add fc00:1::/64 via fc00:f2::1 dev lft0")
    chain.ip("fab2", "-6 route add fc00:9::/64 via fc00:f2::1 dev lft0")
    # rcv is a capture point: it owns none of the RoCE addresses, so its kernel never answers
    # (no ICMP port unreachable that would travel the tunnels too).

    # NEXT-C-SID: block fcbb:bb00::/32, 16-bit micro-SIDs, 1xx on fab1, 2xx on fab2.
    usid_ok, usid_reason = True, ""
    for role, usid in (("fab1", 0x101), ("fab2", 0x201)):
        r = chain.ip(role, f"-6 route add fcbb:bb00:{usid:x}::/48 encap seg6local action End "
                           f"{USID_FLAVOR} count dev lft0", check=False)
        if r.returncode != 0:
            usid_ok = False
            usid_reason = f"kernel/iproute2 refused End {USID_FLAVOR}: {r.stderr.strip()}"
            break
    if usid_ok:
        chain.ip("fab2", f"-6 route add fcbb:bb00:2d4::/48 encap seg6local action End.DX4 "
                         f"nh4 {RCV_V4} count dev rgt0")
        chain.ip("fab2", f"-6 route add fcbb:bb00:2d6::/48 encap seg6local action End.DX6 "
                         f"nh6 {RCV_V6} count dev rgt0")
    r = chain.ip("fab2", f"route add {HOST_NET4} encap seg6 mode encap segs {LOCAL_SID['dx4']} "
                         "dev lft0", check=False)
    if r.returncode != 0:
        nl.skip(f"the kernel refuses seg6 encap routes: {r.stderr.strip()}")
    return chain, usid_ok, usid_reason


# ---------------------------------------------------------------------------------------------
# Direction (a): what the gateway is configured to do, and the packets that exercise it


class Group:
    """Packets of one family steered to one policy, and what the kernel must do with them."""

    def __init__(self, kind, family, mode, sids, path_id, dst, qps, routes, vlan_every=0):
        self.kind, self.family, self.mode, self.sids = kind, family, mode, sids
        self.policy = f"{kind}-v{family}"
        self.path_id, self.dst, self.qps, self.routes = path_id, dst, qps, routes
        self.samples = []
        seq = 0
        src = "10.0.0.1" if family == 4 else "fd00::1"
        for qp in qps:
            for name, op, tos, plen in KINDS:
                seq += 1
                psn = (0xFFFFF0 + seq) & 0xFFFFFF if seq % 3 == 0 else path_id * 1000 + seq
                ip = rl.roce_ip_packet(family, src, dst, op, qp=qp, psn=psn, tos=tos,
                                       sport=49152 + (qp & 0x3FFF), payload_len=plen,
                                       flow_label=(qp * 7) & 0xFFFFF, ackreq=seq % 2)
                vlan = 100 if vlan_every and seq % vlan_every == 0 else None
                self.samples.append((f"{self.policy} qp {qp:#x} {name}"
                                     f"{' vlan' if vlan else ''}", ip, vlan))

    def expected(self):
        return rl.Expected(self.mode, self.sids)


def build_groups(usid_ok):
    groups = []
    for family in (4, 6):
        fin = "d4" if family == 4 else "d6"
        net = (lambda i: f"10.0.1.{i}") if family == 4 else (lambda i: f"fd00:1::{i}")
        end3 = ["fc00:1::e", "fc00:3::e", f"fc00:3::{fin}"]
        routes3 = [("fab1", "fc00:1::e"), ("fab2", "fc00:3::e"), ("fab2", f"fc00:3::{fin}")]
        base = 100 * family
        groups.append(Group("encaps", family, "encaps", end3, base + 1, net(1),
                            [0x000101, 0x00A0B0, 0xFFFFFE], routes3, vlan_every=4))
        groups.append(Group("red", family, "encaps-red", end3, base + 2, net(2),
                            [0x000202, 0x123456], routes3, vlan_every=5))
        groups.append(Group("red1", family, "encaps-red", [f"fc00:3::{fin}"], base + 3, net(3),
                            [0x000301, 0x000302, 0x000303], [("fab2", f"fc00:3::{fin}")]))
        if usid_ok:
            groups.append(Group("usid", family, "usid",
                                ["fcbb:bb00:101::", "fcbb:bb00:201::", f"fcbb:bb00:2{fin}::"],
                                base + 4, net(4), [0x004000, 0x004ABC, 0x004FFF],
                                [("fab1", "fcbb:bb00:101::/48"), ("fab2", "fcbb:bb00:201::/48"),
                                 ("fab2", f"fcbb:bb00:2{fin}::/48")]))
    return groups


def steering_rules(groups):
    """One steering level per group kind: prefix, destination, exact, QP range."""
    rules, rid = [], 0
    for g in groups:
        if g.kind == "encaps":
            rid += 1
            rules.append({"id": rid, "prefix": "10.0.1.0/24" if g.family == 4 else "fd00:1::/64",
                          "policy": g.policy})
        elif g.kind == "red":
            rid += 1
            rules.append({"id": rid, "destination": g.dst, "policy": g.policy})
        elif g.kind == "red1":
            for qp in g.qps:
                rid += 1
                rules.append({"id": rid, "exact": {"destination": g.dst, "dest-qp": qp},
                              "policy": g.policy})
        elif g.kind == "usid":
            rid += 1
            rules.append({"id": rid, "qp-range": {"qp-low": 0x4000, "qp-high": 0x4FFF,
                                                  "destination": g.dst},
                          "policy": g.policy})
    return rules


def gateway_config(groups, fabric_nexthop_mac, host_mac):
    policies = []
    for g in groups:
        p = {"name": g.policy, "color": g.path_id, "endpoint": "fc00:3::1", "encap": g.mode,
             "selection": {"mode": "flow"},
             "segment-list": [{"name": "via-kernel", "path-id": g.path_id, "weight": 1,
                               "sid": g.sids}]}
        if g.mode == "usid":
            p["usid-format"] = {"block-bits": 32, "usid-bits": 16}
        policies.append(p)
    return {"srv6gw:gateway": {
        "ports": {"host": "net_af_packet0", "fabric": "net_af_packet1", "queues": 1,
                  "mbufs": 4095, "transparent-mac": False,
                  "fabric-nexthop-mac": fabric_nexthop_mac, "host-mac": host_mac},
        "source-address": GW_SOURCE,
        "hop-limit": HOP_LIMIT,
        "actions": {"steering-miss": "drop", "non-roce": "pass", "fabric-non-sid": "drop"},
        "stats-interval-ms": 0,
        "policies": {"policy": policies},
        "steering": {"rule": steering_rules(groups)},
        "local-sids": {"local-sid": [
            {"sid": LOCAL_SID["dx4"], "behavior": "end-dx4"},
            {"sid": LOCAL_SID["dx6"], "behavior": "end-dx6"},
            {"sid": LOCAL_SID["dt46"], "behavior": "end-dt46"},
        ]},
    }}


def v6(addr_bytes):
    return str(ipaddress.IPv6Address(bytes(addr_bytes)))


def check_gateway_output(frame, sent_ip, exp, g, macs):
    """None when `frame` (seen on fab1) is RFC 8986 encapsulation of sent_ip for group g."""
    dst_mac, src_mac = macs
    if frame[0:6] != bytes.fromhex(dst_mac.replace(":", "")):
        return f"outer destination MAC {frame[0:6].hex(':')}, expected {dst_mac}"
    if frame[6:12] != bytes.fromhex(src_mac.replace(":", "")):
        return f"outer source MAC {frame[6:12].hex(':')}, expected the gateway's {src_mac}"
    if frame[12:14] != b"\x86\xdd":
        return f"ethertype {frame[12:14].hex()}"
    o = frame[14:]
    tos = sent_ip[1] if g.family == 4 else ((sent_ip[0] & 0xF) << 4) | (sent_ip[1] >> 4)
    tc = ((o[0] & 0xF) << 4) | (o[1] >> 4)
    problems = []
    if o[0] >> 4 != 6:
        problems.append(f"outer version {o[0] >> 4}")
    if tc != tos:
        problems.append(f"outer traffic class {tc:#x}, inner TOS {tos:#x}")
    if o[7] != HOP_LIMIT:
        problems.append(f"outer hop limit {o[7]}")
    if v6(o[8:24]) != str(ipaddress.IPv6Address(GW_SOURCE)):
        problems.append(f"outer source {v6(o[8:24])}, expected {GW_SOURCE}")
    if v6(o[24:40]) != exp.destination:
        problems.append(f"outer destination {v6(o[24:40])}, expected {exp.destination}")
    inner_proto = 4 if g.family == 4 else 41
    off = 40
    if exp.srh is None:
        if o[6] != inner_proto:
            problems.append(f"outer next header {o[6]}, expected {inner_proto} (no SRH)")
    else:
        if o[6] != 43:
            problems.append(f"outer next header {o[6]}, expected 43 (SRH)")
        srh = o[40:]
        n = len(exp.srh)
        if len(srh) < 8 + 16 * (srh[4] + 1):
            return f"SRH truncated: {srh[:8].hex(' ')}"
        segs = [v6(srh[8 + 16 * i:24 + 16 * i]) for i in range(srh[4] + 1)]
        if srh[0] != inner_proto:
            problems.append(f"SRH next header {srh[0]}, expected {inner_proto}")
        if srh[1] != 2 * n or srh[2] != 4:
            problems.append(f"SRH length {srh[1]} / type {srh[2]}, expected {2 * n} / 4")
        if srh[3] != exp.segments_left or srh[4] != exp.last_entry:
            problems.append(f"SRH segments left {srh[3]} last entry {srh[4]}, expected "
                            f"{exp.segments_left} / {exp.last_entry}")
        if int.from_bytes(srh[6:8], "big") != g.path_id:
            problems.append(f"SRH tag {int.from_bytes(srh[6:8], 'big')}, expected the path id "
                            f"{g.path_id}")
        if segs != exp.srh:
            problems.append(f"segment list {segs}, expected {exp.srh}")
        off += 8 + 16 * n
    plen = int.from_bytes(o[4:6], "big")
    if plen != len(o) - 40:
        problems.append(f"outer payload length {plen}, frame carries {len(o) - 40}")
    if o[off:] != sent_ip:
        problems.append("inner packet changed by the gateway:\n" +
                        rl.hexdiff(sent_ip, bytes(o[off:]), "sent", "inner"))
    return "; ".join(problems) or None


def from_gateway(gw_fabric_mac):
    mac = bytes.fromhex(gw_fabric_mac.replace(":", ""))

    def match(frame):
        return (len(frame) > 54 and frame[6:12] == mac and frame[12:14] == b"\x86\xdd" and
                frame[14 + 6] in (4, 41, 43))
    return match


def roce_key(ip):
    """Identifies a RoCEv2 packet across forwarding: family, length and its ICRC (which
    forwarding does not change)."""
    return (ip[0] >> 4, len(ip), ip[-4:])


def frame_ip(frame):
    """The IP packet of a received plain (untagged) RoCEv2 frame, padding cut."""
    ip = frame[14:]
    if ip[0] >> 4 == 4:
        return ip[:int.from_bytes(ip[2:4], "big")]
    return ip[:40 + int.from_bytes(ip[4:6], "big")]


def run_direction_a(chain, groups, macs):
    host_tx = nl.packet_socket(chain.ns["host"], "rgt0")
    fab_rx = nl.packet_socket(chain.ns["fab1"], "lft0")
    rcv_rx = nl.packet_socket(chain.ns["rcv"], "lft0")
    sent_total = received_total = 0
    failures = []
    try:
        for g in groups:
            exp = g.expected()
            before = {k: chain.route_packets(*k) for k in g.routes}
            nl.drain(fab_rx)
            nl.drain(rcv_rx)
            for _, ip, vlan in g.samples:
                host_tx.send(rl.frame(ip, dst_mac=macs["gw_host"], src_mac=macs["host"],
                                      vlan=vlan))
            n = len(g.samples)
            on_wire = nl.capture(fab_rx, n, from_gateway(macs["gw_fabric"]), timeout=3.0)
            got = nl.capture(rcv_rx, n, nl.plain_roce_frame, timeout=3.0)
            after = {k: chain.route_packets(*k) for k in g.routes}
            sent_total += n
            received_total += len(got)
            problems = []
            for k in g.routes:
                if after[k] - before[k] != n:
                    problems.append(f"kernel route {k[1]} on {k[0]} counted "
                                    f"{after[k] - before[k]} packets, expected {n}")
            # What the gateway put on the wire (in order: one queue, one path).
            if len(on_wire) != n:
                problems.append(f"fab1 saw {len(on_wire)} frames from the gateway, expected {n}")
            for (name, ip, _), f in zip(g.samples, on_wire):
                diff = check_gateway_output(f, ip, exp, g, (macs["fab1"], macs["gw_fabric"]))
                if diff:
                    problems.append(f"{name}: gateway output: {diff}")
            # What came out of the kernel's End.DX4/DX6.
            by_key = {roce_key(ip): (name, ip) for name, ip, _ in g.samples}
            seen = set()
            for f in got:
                ip = frame_ip(f)
                k = roce_key(ip)
                if k not in by_key:
                    problems.append(f"rcv got an unexpected packet:\n  {ip[:64].hex(' ')}")
                    continue
                if k in seen:
                    problems.append(f"{by_key[k][0]}: duplicated")
                    continue
                seen.add(k)
                name, sent = by_key[k]
                if f[12:14] != (b"\x08\x00" if g.family == 4 else b"\x86\xdd"):
                    problems.append(f"{name}: ethertype {f[12:14].hex()} at rcv")
                    continue
                diff = nl.same_modulo_ttl(sent, ip, hops=1)
                if diff:
                    problems.append(f"{name}: received packet differs:\n{diff}")
                elif not rl.icrc_valid(ip):
                    problems.append(f"{name}: ICRC invalid at rcv")
            for k, (name, _) in by_key.items():
                if k not in seen:
                    problems.append(f"{name}: not received at rcv")
            label = (f"(a) {g.policy}: {g.mode} {' -> '.join(g.sids)}")
            log(f"{'FAIL' if problems else 'ok  '} {label}: sent {n}, gateway out {len(on_wire)}, "
                f"rcv got {len(got)}")
            if problems:
                failures.append(f"{label}:\n  " + "\n  ".join(problems[:12]))
        # Non-RoCE host traffic (ARP, TCP, DNS) passes unchanged: byte for byte through both
        # net_af_packet ports, original MACs kept.
        frames = rl.passthrough_frames()
        nl.drain(fab_rx)
        for f in frames:
            host_tx.send(f)
        src_mac = frames[0][6:12]
        got = nl.capture(fab_rx, len(frames), lambda f: f[6:12] == src_mac, timeout=3.0)
        problems = [f"frame {i} changed on its way through the gateway:\n" +
                    rl.hexdiff(a, b, "sent", "fab1 got")
                    for i, (a, b) in enumerate(zip(frames, got)) if a != b]
        if len(got) != len(frames):
            problems.append(f"fab1 got {len(got)} of {len(frames)} pass-through frames")
        log(f"{'FAIL' if problems else 'ok  '} (a) pass-through of non-RoCE frames: sent "
            f"{len(frames)}, fab1 got {len(got)}, byte-identical {not problems}")
        if problems:
            failures.append("(a) pass-through:\n  " + "\n  ".join(problems))
    finally:
        for s in (host_tx, fab_rx, rcv_rx):
            s.close()
    log(f"(a) host -> gateway -> kernel: sent {sent_total} RoCEv2, received {received_total}")
    return failures, sent_total


# ---------------------------------------------------------------------------------------------
# Direction (b): the kernel encapsulates toward our local SIDs, the gateway decapsulates


def reverse_samples(family):
    src, dst = (RCV_V4, HOST_V4) if family == 4 else (RCV_V6, HOST_V6)
    out, seq = [], 0
    for qp in (0x000777, 0x00C0DE):
        for name, op, tos, plen in KINDS:
            seq += 1
            ip = rl.roce_ip_packet(family, src, dst, op, qp=qp, psn=family * 100 + seq, tos=tos,
                                   sport=50000 + seq, payload_len=plen,
                                   flow_label=0x5A5A0 + seq, ackreq=seq % 2)
            out.append((f"v{family} qp {qp:#x} {name}", ip))
    return out


def run_direction_b(chain, macs):
    rcv_tx = nl.packet_socket(chain.ns["rcv"], "lft0")
    host_rx = nl.packet_socket(chain.ns["host"], "rgt0")
    end_sid = "fc00:1::e"
    cases = [
        # name, kernel mode, SIDs (the last one ours: None = DX4/DX6 by family), via fab1 End
        ("encap, 1 SID -> End.DX", "encap", [None], False),
        ("encap.red, 1 SID (no SRH) -> End.DX", "encap.red", [None], False),
        ("encap, kernel End + End.DX", "encap", [end_sid, None], True),
        ("encap.red, kernel End + End.DX", "encap.red", [end_sid, None], True),
        ("encap, 1 SID -> End.DT46", "encap", [LOCAL_SID["dt46"]], False),
        ("encap.red, kernel End + End.DT46", "encap.red", [end_sid, LOCAL_SID["dt46"]], True),
    ]
    sent_total = received_total = 0
    failures = []
    try:
        for family in (4, 6):
            samples = reverse_samples(family)
            ours = LOCAL_SID["dx4" if family == 4 else "dx6"]
            net = HOST_NET4 if family == 4 else HOST_NET6
            fam = "" if family == 4 else "-6 "
            for name, mode, sids, via_end in cases:
                segs = [s or ours for s in sids]
                label = f"(b) IPv{family} kernel {name} ({','.join(segs)})"
                r = chain.ip("fab2", f"{fam}route replace {net} encap seg6 mode {mode} segs "
                                     f"{','.join(segs)} dev lft0", check=False)
                if r.returncode != 0:
                    failures.append(f"{label}: kernel refused the route: {r.stderr.strip()}")
                    log(f"FAIL {label}: kernel refused the route")
                    continue
                end_before = chain.route_packets("fab1", end_sid)
                nl.drain(host_rx)
                for _, ip in samples:
                    rcv_tx.send(rl.frame(ip, dst_mac=macs["fab2_rcv_side"], src_mac=macs["rcv"]))
                n = len(samples)
                got = nl.capture(host_rx, n, nl.plain_roce_frame, timeout=3.0)
                end_delta = chain.route_packets("fab1", end_sid) - end_before
                sent_total += n
                received_total += len(got)
                problems = []
                if via_end and end_delta != n:
                    problems.append(f"kernel End {end_sid} on fab1 counted {end_delta}, "
                                    f"expected {n}")
                by_key = {roce_key(ip): (nm, ip) for nm, ip in samples}
                seen = set()
                want_type = b"\x08\x00" if family == 4 else b"\x86\xdd"
                for f in got:
                    ip = frame_ip(f)
                    k = roce_key(ip)
                    if k not in by_key:
                        problems.append(f"host got an unexpected packet:\n  {f[:80].hex(' ')}")
                        continue
                    if k in seen:
                        problems.append(f"{by_key[k][0]}: duplicated")
                        continue
                    seen.add(k)
                    nm, sent = by_key[k]
                    want_eth = (bytes.fromhex(macs["host"].replace(":", "")) +
                                bytes.fromhex(macs["gw_host"].replace(":", "")) + want_type)
                    if f[:14] != want_eth:
                        problems.append(f"{nm}: Ethernet header {f[:14].hex(' ')}, expected "
                                        f"{want_eth.hex(' ')}")
                    if len(f) != max(60, 14 + len(sent)):
                        problems.append(f"{nm}: frame of {len(f)} bytes for a {len(sent)}-byte "
                                        "packet")
                    # The kernel encapsulates on its input path, before forwarding: not even
                    # the inner TTL changes.
                    diff = nl.same_modulo_ttl(sent, ip, hops=0)
                    if diff:
                        problems.append(f"{nm}: decapsulated packet differs from what rcv "
                                        f"sent:\n{diff}")
                    elif sent != ip:
                        problems.append(f"{nm}: not byte-equal:\n" +
                                        rl.hexdiff(sent, ip, "sent", "received"))
                    elif not rl.icrc_valid(ip):
                        problems.append(f"{nm}: ICRC invalid at host")
                for k, (nm, _) in by_key.items():
                    if k not in seen:
                        problems.append(f"{nm}: not received at host")
                log(f"{'FAIL' if problems else 'ok  '} {label}: sent {n}, host got {len(got)}")
                if problems:
                    failures.append(f"{label}:\n  " + "\n  ".join(problems[:12]))
    finally:
        rcv_tx.close()
        host_rx.close()
    log(f"(b) kernel -> gateway -> host: sent {sent_total}, received {received_total}")
    return failures, sent_total


# ---------------------------------------------------------------------------------------------
# The daemon


def start_gateway(chain, work, config):
    # Started inside the gw namespace, where its net_af_packet vdevs find the veth ends.
    return gwlib.start_on_interfaces("gateway", work, nl.open_in_netns(chain.ns["gw"]), config,
                                     ["lft0", "rgt0"])


def check_stats(stats, groups, sent_a, sent_b):
    tot = stats["total"]
    problems = []
    if tot["encap"] != sent_a:
        problems.append(f"encap {tot['encap']}, host sent {sent_a} RoCEv2 packets")
    if tot["passed_host_to_fabric"] < len(rl.passthrough_frames()):
        problems.append(f"passed host->fabric {tot['passed_host_to_fabric']}, host sent "
                        f"{len(rl.passthrough_frames())} non-RoCE frames")
    if tot["decap"] != sent_b:
        problems.append(f"decap {tot['decap']}, the kernel sent {sent_b} to our SIDs")
    for reason in ("steering_miss", "malformed", "decap_refused", "no_usable_path",
                   "no_headroom", "header_alloc_failed", "tx_full"):
        if tot["drops"].get(reason, 0):
            problems.append(f"drops {reason} = {tot['drops'][reason]}")
    for port in ("host", "fabric"):
        ps = stats["ports"][port]
        for k in ("imissed", "ierrors", "oerrors", "rx_nombuf"):
            if ps.get(k, 0):
                problems.append(f"{port} port {k} = {ps[k]}")
    by_path = {p["path_id"]: p["packets"] for p in stats["paths"]}
    for g in groups:
        if by_path.get(g.path_id) != len(g.samples):
            problems.append(f"path {g.path_id} ({g.policy}) counted {by_path.get(g.path_id)}, "
                            f"expected {len(g.samples)}")
    return problems


def main():
    gwlib.need_tools("ip")
    nl.require_root_and_netns()
    started = time.monotonic()
    work = gwlib.workdir("kernel-e2e")
    chain, usid_ok, usid_reason = setup_topology()
    p = None
    try:
        macs = {"host": chain.mac("host", "rgt0"), "gw_host": chain.mac("gw", "lft0"),
                "gw_fabric": chain.mac("gw", "rgt0"), "fab1": chain.mac("fab1", "lft0"),
                "fab2_rcv_side": chain.mac("fab2", "rgt0"), "rcv": chain.mac("rcv", "lft0")}
        groups = build_groups(usid_ok)
        if not usid_ok:
            log(f"note: no NEXT-C-SID policy: {usid_reason}")
        config = gateway_config(groups, macs["fab1"], macs["host"])
        gw = start_gateway(chain, work, config)
        p = gw["p"]
        log(f"gateway up in namespace {chain.ns['gw']} after {time.monotonic() - started:.1f} s")

        failures_a, sent_a = run_direction_a(chain, groups, macs)
        failures_b, sent_b = run_direction_b(chain, macs)

        stats, out, err = gwlib.stop_checked(gw, gw["stats"], timeout=20)
        p = None
        stat_problems = check_stats(stats, groups, sent_a, sent_b)
        tot = stats["total"]
        log(f"gateway: rx host {tot['rx_host']} fabric {tot['rx_fabric']}, encap {tot['encap']}, "
            f"decap {tot['decap']}, passed host->fabric {tot['passed_host_to_fabric']}, drops "
            f"{ {k: v for k, v in tot['drops'].items() if v} }")
        failures = failures_a + failures_b
        if stat_problems:
            failures.append("gateway statistics:\n  " + "\n  ".join(stat_problems))
        log(f"elapsed {time.monotonic() - started:.1f} s")
        if failures:
            log(out[-4000:])
            rl.fail("\n".join(failures))
    finally:
        if p is not None and p.poll() is None:
            p.kill()
            p.wait()
        chain.cleanup()


if __name__ == "__main__":
    rl.main_wrapper(main)
