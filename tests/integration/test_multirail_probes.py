#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
# issue 18, rails: path health probes per rail (net_pcap, two rails, fabric-vlan on).
# Run 1: each rail probes the shared policy from its own fabric port: every probe request on
# a rail's fabric output has that rail's outer source, next-hop MAC, its own end-probe SID as
# the way back, and the fabric VLAN tag with the PCP of the policy's probe-dscp (34 -> 4).
# Run 2: the requests rail a sent in run 1 arrive on rail b's fabric port of a gateway whose
# rail b owns the probed SID: each is reflected out of rail b's fabric port (none on rail a's),
# to rail b's next hop, tagged with the same PCP; the replies go back to rail a's probe SID.
# Run 3: the policy scoped to rail a (policy/rails) and no gateway-wide next hop (each rail has
# its own): rail a probes it, rail b sends no probe and reports no path.
# Link propagation per rail (root and /dev/net/tun, else said and left out): net_tap ports;
# rail b's fabric tap set down sets rail b's host tap down and leaves rail a's up; up again.
import json
import os
import subprocess
import time

import gwlib

try:
    from scapy.all import UDP, Dot1Q, Ether, IPv6, IPv6ExtHdrSegmentRouting, rdpcap, wrpcap
except ImportError:
    gwlib.skip("python3-scapy is not installed")

PROBE_PORT = 62316
VLAN, PROBE_DSCP, PCP = 100, 34, 4  # default DSCP->PCP map: 34 >> 3
REMOTE_PROBE_SID = "fc00:77::e0"
RAILS = {
    "a": {"source": "fc00:a::1", "probe_sid": "fc00:a::e0", "nexthop": "02:aa:00:00:00:01"},
    "b": {"source": "fc00:b::1", "probe_sid": "fc00:b::e0", "nexthop": "02:bb:00:00:00:01"},
}


def config(rail_b_owns_remote):
    rails = []
    for i, (name, r) in enumerate(RAILS.items()):
        sids = [{"sid": r["probe_sid"], "behavior": "end-probe"}]
        if name == "b" and rail_b_owns_remote:
            sids.append({"sid": REMOTE_PROBE_SID, "behavior": "end-probe"})
        rails.append({"name": name, "host": f"net_pcap{2 * i}", "fabric": f"net_pcap{2 * i + 1}",
                      "source-address": r["source"], "fabric-nexthop-mac": r["nexthop"],
                      "host-mac": "02:00:00:00:04:04", "local-sids": {"local-sid": sids}})
    policy = {"name": "far", "segment-list": [{"name": "l", "path-id": 5,
                                               "sid": ["fc00:77::d4"]}]}
    if not rail_b_owns_remote:
        policy.update({"probe-sid": REMOTE_PROBE_SID, "probe-dscp": PROBE_DSCP})
    return {"srv6gw:gateway": {
        # A gateway-wide next hop for probes; each rail's own must win.
        "ports": {"mbufs": 4095, "fabric-vlan": {"id": VLAN},
                  "fabric-nexthop-mac": "02:99:00:00:00:01"},
        "source-address": RAILS["a"]["source"],
        "stats-interval-ms": 0,
        "probe": {"interval-us": 50000, "timeout-us": 40000},
        "policies": {"policy": [policy]},
        "rails": {"rail": rails},
    }}


def run(work, name, cfg, fabric_in):
    """Runs the gateway on net_pcap for both rails (until its input is done, or 1.5 s without
    input: probing only); returns ({rail: probe frames on its fabric output}, stdout)."""
    cfg_path = os.path.join(work, f"{name}.json")
    with open(cfg_path, "w") as f:
        json.dump(cfg, f)
    empty = os.path.join(work, "empty.pcap")
    wrpcap(empty, [])
    vdevs, outs = [], {}
    for i, rail in enumerate(RAILS):
        outs[rail] = os.path.join(work, f"{name}-fabric-out-{rail}.pcap")
        host_out = os.path.join(work, f"{name}-host-out-{rail}.pcap")
        vdevs += [f"net_pcap{2 * i},rx_pcap={empty},tx_pcap={host_out}",
                  f"net_pcap{2 * i + 1},rx_pcap={fabric_in.get(rail, empty)},"
                  f"tx_pcap={outs[rail]}"]
    eal = gwlib.eal_args(gwlib.unique_prefix(f"mrprobe_{name}"), vdevs)
    eal[eal.index("-l"):eal.index("-l") + 2] = ["--lcores", "(0-2)@(0-1)"]
    stop = ["--until-idle", "600"] if fabric_in else ["--duration", "1.5"]
    rc, out, err = gwlib.run(eal, ["--config", cfg_path] + stop, timeout=120)
    gwlib.check(rc == 0, f"{name}: gateway exit code {rc}:\n{err[-3000:]}")
    return {rail: [p for p in rdpcap(path) if UDP in p and p[UDP].dport == PROBE_PORT]
            for rail, path in outs.items()}, out


def check_tag(pkt, where):
    gwlib.check(Dot1Q in pkt and pkt[Dot1Q].vlan == VLAN and pkt[Dot1Q].prio == PCP,
                f"{where}: not tagged VLAN {VLAN} PCP {PCP}: {pkt.summary()}")
    gwlib.check(pkt[IPv6].tc >> 2 == PROBE_DSCP, f"{where}: DSCP {pkt[IPv6].tc >> 2}")


def main():
    work = gwlib.workdir("multirail-probes")
    sent, out = run(work, "probing", config(False), {})
    for rail, r in RAILS.items():
        reqs = sent[rail]
        gwlib.check(len(reqs) >= 2, f"rail {rail}: {len(reqs)} probe requests on its fabric port")
        for p in reqs:
            where = f"rail {rail} request"
            gwlib.check(p[IPv6].src == r["source"], f"{where}: source {p[IPv6].src}")
            gwlib.check(p[IPv6].dst == REMOTE_PROBE_SID, f"{where}: destination {p[IPv6].dst}")
            gwlib.check(p[Ether].dst == r["nexthop"], f"{where}: next hop {p[Ether].dst}")
            way_back = bytes(p[UDP].payload)[-16:]
            gwlib.check(way_back == bytes(IPv6(dst=r["probe_sid"]))[24:40],
                        f"{where}: way back {way_back.hex()}, expected {r['probe_sid']}")
            check_tag(p, where)
        print(f"rail {rail}: {len(reqs)} probe requests from {r['source']}, back to "
              f"{r['probe_sid']}, VLAN {VLAN} PCP {PCP}")
    gwlib.check("rail a far/l" in out and "rail b far/l" in out,
                "the probe report does not name the rails")

    # The policy on rail a only: rail b does not probe it (a rail probes the policies on it).
    scoped = config(False)
    scoped["srv6gw:gateway"]["policies"]["policy"][0]["rails"] = ["a"]
    del scoped["srv6gw:gateway"]["ports"]["fabric-nexthop-mac"]
    only, out = run(work, "scoped", scoped, {})
    gwlib.check(len(only["a"]) >= 2 and not only["b"],
                f"policy on rail a: {len(only['a'])} probe requests on rail a, "
                f"{len(only['b'])} on rail b (expected >= 2 and 0)")
    gwlib.check("rail a far/l" in out and "rail b far/l" not in out,
                "the probe report of a policy on rail a names another rail")
    print(f"policy on rail a: {len(only['a'])} probe requests on rail a, none on rail b")

    # Rail a's requests, received on rail b's fabric port of a gateway whose rail b owns the SID.
    fabric_in_b = os.path.join(work, "requests-on-b.pcap")
    wrpcap(fabric_in_b, sent["a"])
    got, _ = run(work, "reflecting", config(True), {"b": fabric_in_b})
    gwlib.check(not got["a"], f"{len(got['a'])} reflected probes left by rail a's fabric port")
    gwlib.check(len(got["b"]) == len(sent["a"]),
                f"rail b reflected {len(got['b'])} of {len(sent['a'])} requests")
    for p in got["b"]:
        where = "reply on rail b"
        gwlib.check(p[IPv6].dst == RAILS["a"]["probe_sid"] and
                    p[IPv6].src == REMOTE_PROBE_SID, f"{where}: {p[IPv6].src} -> {p[IPv6].dst}")
        gwlib.check(IPv6ExtHdrSegmentRouting in p, f"{where}: no SRH")
        gwlib.check(p[Ether].dst == RAILS["b"]["nexthop"], f"{where}: next hop {p[Ether].dst}")
        check_tag(p, where)
    print(f"rail b reflected {len(got['b'])} requests out of its own fabric port, tagged; "
          "rail a's fabric port sent none")
    print("multirail-probes: probes OK")


def link_up(iface):
    out = subprocess.run(["ip", "-o", "link", "show", iface], capture_output=True, text=True,
                         timeout=10).stdout
    return "<" in out and "UP" in out.split("<", 1)[1].split(">", 1)[0].split(",")


def wait_link(iface, want, timeout):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if link_up(iface) == want:
            return True
        time.sleep(0.01)
    return False


def link_propagation_per_rail(work):
    if os.geteuid() != 0 or not os.path.exists("/dev/net/tun"):
        print("link propagation per rail: left out (needs root and /dev/net/tun for net_tap)")
        return
    tag = str(os.getpid() % 100000)
    taps = {(rail, role): f"mr{rail}{role[0]}{tag}" for rail in RAILS for role in ("host", "fab")}
    cfg = {"srv6gw:gateway": {"ports": {"mbufs": 4095}, "source-address": RAILS["a"]["source"],
                              "stats-interval-ms": 0, "rails": {"rail": [
                                  {"name": rail, "host": f"net_tap{2 * i}",
                                   "fabric": f"net_tap{2 * i + 1}",
                                   "fabric-nexthop-mac": r["nexthop"]}
                                  for i, (rail, r) in enumerate(RAILS.items())]}}}
    cfg_path = os.path.join(work, "taps.json")
    with open(cfg_path, "w") as f:
        json.dump(cfg, f)
    vdevs = [f"net_tap{2 * i + k},iface={taps[(rail, role)]}"
             for i, rail in enumerate(RAILS) for k, role in enumerate(("host", "fab"))]
    eal = gwlib.eal_args(gwlib.unique_prefix("mrprobe_taps"), vdevs)
    eal[eal.index("-l"):eal.index("-l") + 2] = ["--lcores", "(0-2)@(0-1)"]
    gw = gwlib.start(eal, ["--config", cfg_path, "--duration", "60", "--link-propagation"])
    try:
        gwlib.check(all(wait_link(t, True, 60) for t in taps.values()), "taps did not come up")
        time.sleep(0.5)
        subprocess.run(["ip", "link", "set", taps[("b", "fab")], "down"], check=True, timeout=10)
        gwlib.check(wait_link(taps[("b", "host")], False, 10),
                    "rail b's host tap stayed up after its fabric tap went down")
        gwlib.check(link_up(taps[("a", "host")]), "rail a's host tap went down with rail b's")
        subprocess.run(["ip", "link", "set", taps[("b", "fab")], "up"], check=True, timeout=10)
        gwlib.check(wait_link(taps[("b", "host")], True, 10),
                    "rail b's host tap stayed down after its fabric tap came back")
        print("link propagation per rail: rail b's fabric down/up took rail b's host down/up, "
              "rail a's host stayed up")
    finally:
        gw.send_signal(2)
        try:
            gw.communicate(timeout=40)
        except subprocess.TimeoutExpired:
            gw.kill()
            gw.communicate()


main()
link_propagation_per_rail(gwlib.workdir("multirail-links"))
