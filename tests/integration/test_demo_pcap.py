#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
# (a) The README demo end to end: srv6gw (EAL, net_pcap vdevs, worker lcore) replays
# config/examples/demo-host.pcap on the host port and demo-fabric.pcap on the fabric port.
# Oracles not written by the gateway's authors: scapy parses both sides, tshark dissects the
# output (SRH fields, inner BTH); the expected encapsulation is derived here from RFC 8986 /
# RFC 8754 / RFC 9800 and demo.json, the expected decapsulation from RFC 8986 and RFC 6040.
import ipaddress
import json
import logging
import os
import subprocess
from collections import Counter, defaultdict

import gwlib
from pktlib import icrc_ok, ip_bytes, is_roce

logging.getLogger("scapy.runtime").setLevel(logging.ERROR)
from scapy.all import IP, UDP, Ether, IPv6, IPv6ExtHdrSegmentRouting, rdpcap  # noqa: E402

gwlib.need_tools("tshark")
work = gwlib.workdir("demo")

# The committed return traffic is exactly what its generator writes (no hand edits, no drift).
regen = os.path.join(work, "demo-fabric.pcap")
subprocess.run(["/usr/bin/python3", os.path.join(gwlib.SRC, "tools", "make-demo-return.py"), regen],
               check=True, capture_output=True, timeout=120)
with open(regen, "rb") as a, open(gwlib.DEMO_FABRIC_PCAP, "rb") as b:
    gwlib.check(a.read() == b.read(),
                "config/examples/demo-fabric.pcap differs from tools/make-demo-return.py output")

prefix = gwlib.unique_prefix("demo")
fabric_out = os.path.join(work, "fabric-out.pcap")
host_out = os.path.join(work, "host-out.pcap")
stats_json = os.path.join(work, "stats.json")

eal = gwlib.eal_args(prefix, [
    # host port: RX what the hosts send, TX what the gateway delivers to them
    f"net_pcap0,rx_pcap={gwlib.DEMO_HOST_PCAP},tx_pcap={host_out}",
    # fabric port: RX the return traffic to our SIDs, TX the encapsulated traffic
    f"net_pcap1,rx_pcap={gwlib.DEMO_FABRIC_PCAP},tx_pcap={fabric_out}",
])
rc, out, err = gwlib.run(eal, ["--config", gwlib.DEMO_JSON, "--until-idle", "300",
                               "--stats-json", stats_json], timeout=120)
print(out)
print(err[-3000:])
gwlib.check(rc == 0, f"gateway exit code {rc}")
gwlib.check("final statistics" in out, "no final statistics printed")
with open(stats_json) as f:
    stats = json.load(f)
with open(gwlib.DEMO_JSON) as f:
    cfg = json.load(f)["srv6gw:gateway"]

policies = {p["name"]: p for p in cfg["policies"]["policy"]}
gw_source = cfg["source-address"]
hop_limit = cfg.get("hop-limit", 64)
nexthop_mac = cfg["ports"]["fabric-nexthop-mac"]
host_mac = cfg["ports"]["host-mac"]
fabric_port_mac = stats["ports"]["fabric"]["mac"].lower()
host_port_mac = stats["ports"]["host"]["mac"].lower()


# ---- oracle: steering (exact > dst-any-qp > qp-range > longest prefix) --------------------
def steer(dst, qp):
    rules = cfg.get("steering", {}).get("rule", [])
    addr = ipaddress.ip_address(dst)
    for r in rules:
        e = r.get("exact")
        if e and ipaddress.ip_address(e["destination"]) == addr and e["dest-qp"] == qp:
            return r["policy"]
    for r in rules:
        if "destination" in r and ipaddress.ip_address(r["destination"]) == addr:
            return r["policy"]
    for r in rules:
        q = r.get("qp-range")
        if q and q["qp-low"] <= qp <= q["qp-high"] and (
                "destination" not in q or ipaddress.ip_address(q["destination"]) == addr):
            return r["policy"]
    best, best_len = None, -1
    for r in rules:
        if "prefix" in r:
            net = ipaddress.ip_network(r["prefix"])
            if net.version == addr.version and addr in net and net.prefixlen > best_len:
                best, best_len = r["policy"], net.prefixlen
    return best


# ---- oracle: what H.Encaps / H.Encaps.Red / NEXT-C-SID put on the wire (outer DA, SRH list)
def usid_containers(sids, block_bits, usid_bits):
    ints = [int(ipaddress.IPv6Address(s)) for s in sids]
    block = ints[0] >> (128 - block_bits)
    per = (128 - block_bits) // usid_bits
    containers = []
    for i in range(0, len(ints), per):
        c = block << (128 - block_bits)
        for j, s in enumerate(ints[i:i + per]):
            u = (s >> (128 - block_bits - usid_bits)) & ((1 << usid_bits) - 1)
            c |= u << (128 - block_bits - usid_bits * (j + 1))
        containers.append(str(ipaddress.IPv6Address(c)))
    return containers


def expected_encap(policy, seglist):
    """(outer destination, SRH segment list as on the wire or None, segments left, last entry)."""
    sids = [str(ipaddress.IPv6Address(s)) for s in seglist["sid"]]
    mode = policy.get("encap", "encaps")
    if mode == "usid":
        fmt = policy.get("usid-format", {})
        sids = usid_containers(sids, fmt.get("block-bits", 32), fmt.get("usid-bits", 16))
        mode = "encaps-red"  # containers travel as a reduced SRH (RFC 9800)
    n = len(sids)
    if mode == "encaps":
        return sids[0], list(reversed(sids)), n - 1, n - 1
    if n == 1:
        return sids[0], None, None, None
    return sids[0], list(reversed(sids[1:])), n - 1, n - 2


# ---- host -> fabric ------------------------------------------------------------------------
host_in = rdpcap(gwlib.DEMO_HOST_PCAP)
fab_out = rdpcap(fabric_out)
gwlib.check(len(fab_out) == len(host_in),
            f"fabric side sent {len(fab_out)} frames for {len(host_in)} host frames "
            "(every action of demo.json is pass: nothing may be lost)")

n_roce = 0
n_passed = 0
per_path = Counter()
flow_path = {}
packet_mode_paths = defaultdict(list)
for i, (src, dst) in enumerate(zip(host_in, fab_out)):
    if not is_roce(src):
        gwlib.check(bytes(dst) == bytes(src), f"host frame {i}: non-RoCE frame not passed unchanged")
        n_passed += 1
        continue
    n_roce += 1
    inner = ip_bytes(src)
    inner_ip = src[IP] if IP in src else src[IPv6]
    qp = int.from_bytes(bytes(src[UDP].payload)[5:8], "big")
    pname = steer(inner_ip.dst, qp)
    gwlib.check(pname is not None, f"host frame {i}: demo.json steers every RoCE frame")
    policy = policies[pname]
    gwlib.check(dst[Ether].dst == nexthop_mac and dst[Ether].src == fabric_port_mac,
                f"host frame {i}: fabric MACs {dst[Ether].src} -> {dst[Ether].dst}")
    outer = dst[IPv6]
    gwlib.check(outer.src == str(ipaddress.IPv6Address(policy.get("source-address", gw_source))),
                f"host frame {i}: outer source {outer.src}")
    gwlib.check(outer.hlim == hop_limit, f"host frame {i}: hop limit {outer.hlim}")
    inner_tc = inner_ip.tos if IP in src else inner_ip.tc
    gwlib.check(outer.tc == inner_tc, f"host frame {i}: outer traffic class {outer.tc:#x} != inner {inner_tc:#x}")
    srh = dst[IPv6ExtHdrSegmentRouting] if IPv6ExtHdrSegmentRouting in dst else None
    # Which segment list: the SRH tag names it; without an SRH only one list can match the DA.
    candidates = []
    for sl in policy["segment-list"]:
        da, seg, left, last = expected_encap(policy, sl)
        if da != outer.dst:
            continue
        if seg is None and srh is None:
            candidates.append((sl, seg, left, last))
        elif seg is not None and srh is not None and srh.tag == sl["path-id"]:
            candidates.append((sl, seg, left, last))
    gwlib.check(len(candidates) == 1,
                f"host frame {i}: output (DA {outer.dst}, SRH {srh.addresses if srh else None}) "
                f"matches no segment list of policy {pname}")
    sl, seg, left, last = candidates[0]
    nh_inner = 4 if IP in src else 41
    if seg is None:
        gwlib.check(outer.nh == nh_inner, f"host frame {i}: outer next header {outer.nh}")
        payload = bytes(outer.payload)
    else:
        gwlib.check(outer.nh == 43, f"host frame {i}: outer next header {outer.nh}, expected 43")
        gwlib.check([str(ipaddress.IPv6Address(a)) for a in srh.addresses] == seg,
                    f"host frame {i}: SRH list {srh.addresses} != {seg}")
        gwlib.check(srh.segleft == left and srh.lastentry == last and srh.type == 4 and
                    srh.nh == nh_inner,
                    f"host frame {i}: SRH segleft {srh.segleft} last {srh.lastentry} nh {srh.nh}")
        payload = bytes(srh.payload)
    gwlib.check(payload == inner, f"host frame {i}: inner packet changed by encapsulation")
    gwlib.check(icrc_ok(payload), f"host frame {i}: inner ICRC invalid")
    per_path[sl["path-id"]] += 1
    mode = policy.get("selection", {}).get("mode", "flow")
    if mode == "flow":
        key = (inner_ip.src, inner_ip.dst, qp)
        gwlib.check(flow_path.setdefault(key, sl["path-id"]) == sl["path-id"],
                    f"host frame {i}: flow {key} changed path under flow selection")
    elif mode == "packet":
        packet_mode_paths[pname].append(sl["path-id"])

# Per-packet spraying is exact to the weights (smooth weighted round robin): in every prefix
# of the sequence each list is within one packet of its share.
for pname, seq in packet_mode_paths.items():
    weights = {sl["path-id"]: sl.get("weight", 1) for sl in policies[pname]["segment-list"]}
    total = sum(weights.values())
    seen = Counter()
    for k, pid in enumerate(seq, 1):
        seen[pid] += 1
        for q, w in weights.items():
            gwlib.check(abs(seen[q] - k * w / total) <= 1.0 + 1e-9,
                        f"policy {pname}: path {q} has {seen[q]} of {k} packets, weight {w}/{total}")
    print(f"policy {pname}: packet spraying {dict(seen)} for weights {weights}")

# tshark, an independent dissector, agrees on the SRH and on the inner BTH.
fields = ["ipv6.routing.segleft", "ipv6.routing.srh.last_entry", "ipv6.routing.srh.tag",
          "ipv6.routing.srh.addr", "infiniband.bth.opcode", "infiniband.bth.destqp",
          "infiniband.bth.psn"]
t_out = gwlib.tshark_fields(fabric_out, fields)
t_in = gwlib.tshark_fields(gwlib.DEMO_HOST_PCAP, fields[4:])
gwlib.check(len(t_out) == len(t_in), "tshark frame counts differ")
srh_frames = 0
for i, (o, s) in enumerate(zip(t_out, t_in)):
    gwlib.check(o[4:7] == s, f"frame {i}: tshark BTH (opcode, destqp, psn) {o[4:7]} != input {s}")
    if o[0]:
        srh_frames += 1
        pkt = fab_out[i]
        srh = pkt[IPv6ExtHdrSegmentRouting]
        gwlib.check(int(o[0]) == srh.segleft and int(o[1]) == srh.lastentry and
                    int(o[2], 16) == srh.tag,
                    f"frame {i}: tshark SRH {o[:3]} disagrees with scapy")
        gwlib.check([str(ipaddress.IPv6Address(a)) for a in o[3].split(",")] ==
                    [str(ipaddress.IPv6Address(a)) for a in srh.addresses],
                    f"frame {i}: tshark SRH addresses {o[3]}")
gwlib.check(srh_frames > 0, "no SRH in the output: the demo must show SRv6 segment lists")

tot = stats["total"]
gwlib.check(tot["rx_host"] == len(host_in) and tot["tx_fabric"] == len(fab_out),
            f"counters rx_host {tot['rx_host']} tx_fabric {tot['tx_fabric']}")
gwlib.check(tot["encap"] == n_roce, f"encap counter {tot['encap']} != {n_roce} RoCE frames")
gwlib.check(tot["passed_host_to_fabric"] == n_passed,
            f"passed_host_to_fabric {tot['passed_host_to_fabric']} != {n_passed}")
gwlib.check(stats["ports"]["host"]["ipackets"] == len(host_in), "host port ipackets")
for p in stats["paths"]:
    gwlib.check(p["packets"] == per_path[p["path_id"]],
                f"path {p['path_id']}: counter {p['packets']}, output has {per_path[p['path_id']]}")
print(f"host->fabric: {n_roce} RoCE frames encapsulated, {n_passed} passed, paths {dict(per_path)}")

# ---- fabric -> host ------------------------------------------------------------------------
local_sids = {str(ipaddress.IPv6Address(s["sid"])): s["behavior"]
              for s in cfg["local-sids"]["local-sid"]}
fab_in = rdpcap(gwlib.DEMO_FABRIC_PCAP)
host_got = rdpcap(host_out)
expected = []
refused = Counter()
for i, f in enumerate(fab_in):
    outer = f[IPv6]
    if outer.dst not in local_sids:
        expected.append(("pass", bytes(f)))
        continue
    srh = f[IPv6ExtHdrSegmentRouting] if IPv6ExtHdrSegmentRouting in f else None
    if srh is not None and srh.segleft != 0:
        refused["segments_left_nonzero"] += 1
        continue
    inner = bytearray(bytes(srh.payload) if srh is not None else bytes(outer.payload))
    outer_ecn = outer.tc & 3
    v4 = inner[0] >> 4 == 4
    inner_ecn = inner[1] & 3 if v4 else (inner[1] >> 4) & 3
    if outer_ecn == 3 and inner_ecn == 0:
        refused["ecn_ce_on_not_ect"] += 1  # RFC 6040: CE onto not-ECT is dropped
        continue
    if outer_ecn == 3 and inner_ecn != 3:  # RFC 6040: CE copied onto an ECT inner
        if v4:
            p = IP(bytes(inner))
            p.tos |= 3
            del p.chksum
            inner = bytearray(bytes(p))
        else:
            inner[1] |= 0x30
    expected.append(("decap", bytes(inner)))

gwlib.check(len(host_got) == len(expected),
            f"host side got {len(host_got)} frames, expected {len(expected)}")
for i, ((kind, exp), got) in enumerate(zip(expected, host_got)):
    if kind == "pass":
        gwlib.check(bytes(got) == exp, f"return frame {i}: non-SID frame not passed unchanged")
        continue
    gwlib.check(got[Ether].dst == host_mac and got[Ether].src == host_port_mac,
                f"return frame {i}: MACs {got[Ether].src} -> {got[Ether].dst}")
    gwlib.check(ip_bytes(got) == exp, f"return frame {i}: decapsulated packet differs")
    gwlib.check(icrc_ok(exp), f"return frame {i}: ICRC no longer valid")

ds = tot["decap_status"]
gwlib.check(tot["decap"] == sum(1 for k, _ in expected if k == "decap"), f"decap counter {tot['decap']}")
gwlib.check(tot["passed_fabric_to_host"] == sum(1 for k, _ in expected if k == "pass"),
            "passed_fabric_to_host counter")
for reason, n in refused.items():
    gwlib.check(ds[reason] == n, f"decap_status {reason} = {ds[reason]}, expected {n}")
gwlib.check(tot["drops"]["decap_refused"] == sum(refused.values()), "decap_refused drops")
gwlib.check(tot["inner_ce_marked"] == 1, f"inner_ce_marked {tot['inner_ce_marked']}")
cnp_in = sum(1 for p in host_in if is_roce(p) and bytes(p[UDP].payload)[0] == 0x81)
gwlib.check(tot["cnp_seen"] == cnp_in + 1, f"cnp_seen {tot['cnp_seen']}, expected {cnp_in} + 1")
print(f"fabric->host: {len(host_got)} frames delivered, refused {dict(refused)}")
print("demo end to end: OK")
