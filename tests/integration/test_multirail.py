#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
# issue 18, rails: one srv6gw serves two rails (two host/fabric port pairs) with one shared
# policy set and steering table. net_pcap part: each rail's host traffic leaves on that rail's
# fabric port with that rail's outer source, SIDs and next-hop MAC; return traffic to a rail's
# SID is decapsulated to that rail's host port with that rail's host MAC; a SID of rail b
# arriving on rail a's fabric port is not ours there (fabric-non-sid: drop, counted); the
# per-rail counters of --stats-json match. Per-rail fabric VLAN and MTU: rail a takes
# ports/fabric-vlan (VLAN 100) and ports/fabric-mtu (9000), rail b gives its own (VLAN 200 with
# DSCP 0 -> PCP 4, fabric-mtu 1280): the same large host frames pass on rail a and are dropped
# as too_big on rail b. The periodic stats line is printed for all rails and per rail.
# Rail scope of policies (policy/rails): one destination (SHARED_DST) is steered by exact
# rules to a policy per rail (the rules differ by QP: one table, one policy per key); each
# rail's frames to it carry its own policy's SID, and a rail's frames matching the other
# rail's rule are steering misses there (steering-miss drop, counted as steering_off_rail).
# The af_packet + kernel seg6local part is test_multirail_kernel.py
# (root, namespaces).
import json
import os

import gwlib

try:
    from scapy.all import IP, UDP, Dot1Q, Ether, IPv6, Raw, rdpcap, wrpcap
except ImportError:
    gwlib.skip("python3-scapy is not installed")

work = gwlib.workdir("multirail")
prefix = gwlib.unique_prefix("multirail")

# Rail a takes the gateway's source-address, rail b has its own: both ways of setting it.
RAILS = {
    "a": {"source": "fc00:a::1", "sid": "fc00:a::d46", "nexthop": "02:aa:00:00:00:01",
          "host_mac": "02:aa:00:00:00:02", "dst": "10.0.1.7", "policy_sid": "fc00:1::1",
          "encap": 40, "decap": 10, "vlan": 100, "pcp": 0},
    "b": {"source": "fc00:b::1", "sid": "fc00:b::d46", "nexthop": "02:bb:00:00:00:01",
          "host_mac": "02:bb:00:00:00:02", "dst": "10.0.2.7", "policy_sid": "fc00:2::1",
          "encap": 24, "decap": 6, "vlan": 200, "pcp": 4},
}
LARGE = 3  # host frames of each rail whose encapsulation (> 1300 B) exceeds rail b's fabric MTU
LARGE_PAYLOAD = 1300
FOREIGN_ON_A = 4  # frames to rail b's SID received on rail a's fabric port
SHARED_DST = "10.0.9.9"  # a destination both rails send to, with a policy per rail
SHARED = {"a": {"qp": 0x901, "sid": "fc00:91::1"}, "b": {"qp": 0x902, "sid": "fc00:92::1"}}
SHARED_N = 5  # frames of each rail to SHARED_DST on its own QP
OFF_N = 2  # frames of each rail to SHARED_DST on the other rail's QP: off-rail misses


def roce_to(dst, qp, psn):
    bth = bytes([0x0A, 0x40, 0xFF, 0xFF, 0]) + qp.to_bytes(3, "big") + bytes([0x80]) + \
        psn.to_bytes(3, "big")
    return (Ether(src="02:00:00:00:00:01", dst="02:00:00:00:01:01") /
            IP(src="10.0.0.1", dst=dst) / UDP(sport=49155, dport=4791, chksum=0) /
            Raw(bth + bytes(64) + bytes(4)))


cfg = {"srv6gw:gateway": {
    "ports": {"mbufs": 4095, "fabric-mtu": 9000, "fabric-vlan": {"id": RAILS["a"]["vlan"]}},
    "source-address": RAILS["a"]["source"],
    "actions": {"fabric-non-sid": "drop", "steering-miss": "drop"},
    "stats-interval-ms": 200,  # the periodic lines: all rails, then one per rail
    "policies": {"policy": [
        {"name": "to-rail-a-peer", "segment-list": [{"name": "l", "path-id": 1,
                                                     "sid": [RAILS["a"]["policy_sid"]]}]},
        {"name": "to-rail-b-peer", "segment-list": [{"name": "l", "path-id": 2,
                                                     "sid": [RAILS["b"]["policy_sid"]]}]},
    ] + [{"name": f"shared-dst-{n}", "rails": [n],
          "segment-list": [{"name": "l", "path-id": 10 + i, "sid": [s["sid"]]}]}
         for i, (n, s) in enumerate(SHARED.items())]},
    # One steering table for both rails: rail-optimized fabrics give each rail its own
    # destination addresses, so one table steers every rail.
    "steering": {"rule": [
        {"id": 1, "prefix": "10.0.1.0/24", "policy": "to-rail-a-peer"},
        {"id": 2, "prefix": "10.0.2.0/24", "policy": "to-rail-b-peer"},
    ] + [{"id": 10 + i, "exact": {"destination": SHARED_DST, "dest-qp": s["qp"]},
          "policy": f"shared-dst-{n}"} for i, (n, s) in enumerate(SHARED.items())]},
    "rails": {"rail": []},
}}
ports = {}
for i, (name, r) in enumerate(RAILS.items()):
    host_in = os.path.join(work, f"host-in-{name}.pcap")
    fabric_in = os.path.join(work, f"fabric-in-{name}.pcap")
    ports[name] = {"host_out": os.path.join(work, f"host-out-{name}.pcap"),
                   "fabric_out": os.path.join(work, f"fabric-out-{name}.pcap"),
                   "host_in": host_in, "fabric_in": fabric_in,
                   "host_dev": f"net_pcap{2 * i}", "fabric_dev": f"net_pcap{2 * i + 1}"}
    gwlib.write_roce_writes_pcap(host_in, dst=r["dst"], count=r["encap"])
    wrpcap(host_in, [Ether(src="02:00:00:00:00:01", dst="02:00:00:00:01:01") /
                     IP(src="10.0.0.1", dst=r["dst"]) / UDP(sport=49154, dport=4791, chksum=0) /
                     Raw(bytes([0x04, 0x40, 0xFF, 0xFF]) + bytes(8) + bytes(LARGE_PAYLOAD))
                     for _ in range(LARGE)], append=True)
    other = "b" if name == "a" else "a"
    wrpcap(host_in, [roce_to(SHARED_DST, SHARED[name]["qp"], i) for i in range(SHARED_N)] +
           [roce_to(SHARED_DST, SHARED[other]["qp"], i) for i in range(OFF_N)], append=True)
    back = [Ether(src="02:00:00:00:0f:0f", dst="02:00:00:00:0f:01") /
            IPv6(src="fc00:99::1", dst=r["sid"], hlim=60, nh=4) /
            IP(src=r["dst"], dst="10.0.0.1", ttl=64) /
            UDP(sport=49153, dport=4791, chksum=0) / Raw(bytes(12 + 64 + 4))
            for _ in range(r["decap"])]
    if name == "a":
        back += [Ether(src="02:00:00:00:0f:0f", dst="02:00:00:00:0f:01") /
                 IPv6(src="fc00:99::1", dst=RAILS["b"]["sid"], hlim=60, nh=4) /
                 IP(src="10.0.2.7", dst="10.0.0.1") / UDP(sport=1, dport=4791) / Raw(bytes(80))
                 for _ in range(FOREIGN_ON_A)]
    wrpcap(fabric_in, back)
    rail = {"name": name, "host": ports[name]["host_dev"], "fabric": ports[name]["fabric_dev"],
            "fabric-nexthop-mac": r["nexthop"], "host-mac": r["host_mac"],
            "local-sids": {"local-sid": [{"sid": r["sid"], "behavior": "end-dt46"}]}}
    if name != "a":
        rail["source-address"] = r["source"]
        rail["fabric-mtu"] = 1280
        rail["fabric-vlan"] = {"id": r["vlan"], "dscp-pcp": [{"dscp": 0, "pcp": r["pcp"]}]}
    cfg["srv6gw:gateway"]["rails"]["rail"].append(rail)

cfg_path = os.path.join(work, "multirail.json")
with open(cfg_path, "w") as f:
    json.dump(cfg, f, indent=1)
stats_json = os.path.join(work, "stats.json")

vdevs = []
for name in RAILS:
    p = ports[name]
    vdevs += [f"{p['host_dev']},rx_pcap={p['host_in']},tx_pcap={p['host_out']}",
              f"{p['fabric_dev']},rx_pcap={p['fabric_in']},tx_pcap={p['fabric_out']}"]
eal = gwlib.eal_args(prefix, vdevs)
# Main + one worker per rail on a 2-core machine: three lcores floating over cores 0-1.
eal[eal.index("-l"):eal.index("-l") + 2] = ["--lcores", "(0-2)@(0-1)"]
rc, out, err = gwlib.run(eal, ["--config", cfg_path, "--until-idle", "1000",
                               "--stats-json", stats_json], timeout=120)
print(out)
print(err[-3000:])
for prefix_text in ("all rails: host rx", "rail a: host rx", "rail b: host rx"):
    gwlib.check(prefix_text in err, f"no periodic stats line '{prefix_text} ...'")
gwlib.check(rc == 0, f"gateway exit code {rc}")
with open(stats_json) as f:
    stats = json.load(f)

rails = {r["name"]: r for r in stats["rails"]}
gwlib.check(sorted(rails) == ["a", "b"], f"stats rails {sorted(rails)}")
for name, r in RAILS.items():
    p = ports[name]
    fab = rdpcap(p["fabric_out"])
    large_out = LARGE if name == "a" else 0  # rail b's fabric MTU drops them
    gwlib.check(len(fab) == r["encap"] + large_out + SHARED_N,
                f"rail {name}: {len(fab)} frames on its fabric port, "
                f"expected {r['encap'] + large_out + SHARED_N}")
    shared_out = sum(1 for pkt in fab if IP in pkt and pkt[IP].dst == SHARED_DST)
    gwlib.check(shared_out == SHARED_N,
                f"rail {name}: {shared_out} frames to {SHARED_DST}, expected {SHARED_N}")
    for pkt in fab:
        gwlib.check(IPv6 in pkt, f"rail {name}: a fabric frame is not IPv6: {pkt.summary()}")
        gwlib.check(Dot1Q in pkt and (pkt[Dot1Q].vlan, pkt[Dot1Q].prio) == (r["vlan"], r["pcp"]),
                    f"rail {name}: outer tag (VLAN, PCP) "
                    f"{(pkt[Dot1Q].vlan, pkt[Dot1Q].prio) if Dot1Q in pkt else None}, "
                    f"expected {(r['vlan'], r['pcp'])}")
        gwlib.check(pkt[IPv6].src == r["source"],
                    f"rail {name}: outer source {pkt[IPv6].src}, expected {r['source']}")
        # Frames to the shared destination carry this rail's own policy's SID.
        sid = SHARED[name]["sid"] if IP in pkt and pkt[IP].dst == SHARED_DST else r["policy_sid"]
        gwlib.check(pkt[IPv6].dst == sid,
                    f"rail {name}: outer destination {pkt[IPv6].dst}, expected {sid}")
        gwlib.check(pkt[Ether].dst == r["nexthop"],
                    f"rail {name}: next-hop MAC {pkt[Ether].dst}, expected {r['nexthop']}")
        gwlib.check(pkt[IP].dst in (r["dst"], SHARED_DST),
                    f"rail {name}: inner destination {pkt[IP].dst}")
    host = rdpcap(p["host_out"])
    gwlib.check(len(host) == r["decap"],
                f"rail {name}: {len(host)} frames to its host, expected {r['decap']}")
    for pkt in host:
        gwlib.check(IP in pkt and IPv6 not in pkt and pkt[IP].src == r["dst"],
                    f"rail {name}: host frame is not the decapsulated packet: {pkt.summary()}")
        gwlib.check(pkt[Ether].dst == r["host_mac"],
                    f"rail {name}: host MAC {pkt[Ether].dst}, expected {r['host_mac']}")
    rs = rails[name]
    gwlib.check(rs["encap"] == r["encap"] + large_out + SHARED_N,
                f"rail {name}: encap counter {rs['encap']}")
    gwlib.check(rs["steering_off_rail"] == OFF_N and rs["drops"]["steering_miss"] == OFF_N,
                f"rail {name}: steering_off_rail {rs['steering_off_rail']}, steering_miss "
                f"{rs['drops']['steering_miss']}, expected {OFF_N} (the other rail's policy)")
    gwlib.check(rs["drops"]["too_big"] == LARGE - large_out,
                f"rail {name}: too_big {rs['drops']['too_big']}, expected {LARGE - large_out}")
    gwlib.check(rs["decap"] == r["decap"], f"rail {name}: decap counter {rs['decap']}")
    gwlib.check(rs["rx_host"] == r["encap"] + LARGE + SHARED_N + OFF_N,
                f"rail {name}: rx_host counter {rs['rx_host']}")
    foreign = FOREIGN_ON_A if name == "a" else 0
    gwlib.check(rs["drops"]["non_sid_dropped"] == foreign,
                f"rail {name}: non_sid_dropped {rs['drops']['non_sid_dropped']}, "
                f"expected {foreign}")
    gwlib.check(rs["host"]["name"] == p["host_dev"] and rs["fabric"]["name"] == p["fabric_dev"],
                f"rail {name}: ports {rs['host']['name']}, {rs['fabric']['name']}")
    gwlib.check(rs["fabric"]["opackets"] == r["encap"] + large_out + SHARED_N,
                f"rail {name}: fabric port sent {rs['fabric']['opackets']}")
gwlib.check(stats["total"]["encap"] ==
            sum(r["encap"] for r in RAILS.values()) + LARGE + len(RAILS) * SHARED_N,
            "total encap is not the sum of the rails'")
gwlib.check("rail a" in out and "rail b" in out, "the final report has no per-rail rows")
print("multirail (net_pcap): OK")
