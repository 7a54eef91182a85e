#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
# Fabric VLAN (issue 18, acceptance 2). The gateway tags what it encapsulates with VLAN 100 and
# a PCP from its DSCP->PCP map (DSCP 46 overridden to PCP 6, the others their top three bits).
#
# net_pcap (runs everywhere): RoCEv2 packets with DSCP 0, 26, 46 from the host; tshark on the
# fabric output shows VLAN 100 and the mapped PCP for each. Tagged frames from the fabric to
# our End.DX4 SID (one with QinQ) are decapsulated; host: keep gives the host the fabric
# frame's first tag as received.
#
# The kernel as the VLAN peer (its seg6local decapsulating the tagged frames, its encap coming
# back tagged) is test_fabric_vlan_kernel.py; it imports this file's configuration.
import json
import logging
import os
import sys

sys.dont_write_bytecode = True  # keep the source tree clean
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "interop"))
import gwlib  # noqa: E402
from netns_lib import rl  # noqa: E402

VLAN = 100
GW_SOURCE = "fc00:9::1"
OUR_DX4 = "fc00:9::d4"
FAB_DX4 = "fc00:3::d4"
# DSCP -> PCP the gateway must use: default top three bits, 46 overridden to 6.
DSCP_PCP = {0: 0, 26: 3, 46: 6}
PER_DSCP = 4


def log(msg):
    print(msg, flush=True)


def gateway_config(macs):
    return {"srv6gw:gateway": {
        "ports": {"host": "net_af_packet0", "fabric": "net_af_packet1", "queues": 1,
                  "mbufs": 4095, "fabric-nexthop-mac": macs["fab"], "host-mac": macs["host"],
                  "fabric-vlan": {"id": VLAN, "dscp-pcp": [{"dscp": 46, "pcp": 6}],
                                  "host": "strip"}},
        "source-address": GW_SOURCE,
        "actions": {"steering-miss": "drop", "non-roce": "drop", "fabric-non-sid": "drop"},
        "stats-interval-ms": 0,
        "policies": {"policy": [{"name": "to-rcv", "encap": "encaps", "segment-list": [
            {"name": "dx4", "path-id": 11, "sid": [FAB_DX4]}]}]},
        "steering": {"rule": [{"id": 1, "prefix": "10.0.1.0/24", "policy": "to-rcv"}]},
        "local-sids": {"local-sid": [{"sid": OUR_DX4, "behavior": "end-dx4"}]},
    }}


def pcap_part():
    """Part 1 on net_pcap vdevs: tag and PCP on the wire, tagged decap with host: keep."""
    logging.getLogger("scapy.runtime").setLevel(logging.ERROR)
    from scapy.all import IP, Dot1Q, Ether, IPv6, IPv6ExtHdrSegmentRouting, rdpcap, wrpcap
    work = gwlib.workdir("fabric-vlan-pcap")
    cfg = gateway_config({"fab": "02:00:00:00:03:03", "host": "02:00:00:00:04:04"})
    g = cfg["srv6gw:gateway"]
    g["ports"].update({"host": "net_pcap0", "fabric": "net_pcap1"})
    g["ports"]["fabric-vlan"]["host"] = "keep"
    cfg_path = os.path.join(work, "gateway.json")
    with open(cfg_path, "w") as f:
        json.dump(cfg, f)
    host_in = []
    for dscp in DSCP_PCP:
        for k in range(PER_DSCP):
            seq = len(host_in)
            ip = rl.roce_ip_packet(4, "10.0.0.1", "10.0.1.1", rl.OP_SEND_ONLY, qp=0x100 + seq,
                                   psn=seq, tos=dscp << 2 | 2, sport=49152 + seq)
            host_in.append(Ether(rl.frame(ip)))
    inner = [rl.roce_ip_packet(4, "10.0.1.1", "10.0.0.1", rl.OP_SEND_ONLY, qp=0x200 + i, psn=i,
                               tos=26 << 2, sport=50000 + i) for i in range(3)]
    tags = [[(0x8100, 5 << 13 | VLAN)], [(0x8100, 3 << 13 | VLAN)],
            [(0x88A8, 7), (0x8100, 5 << 13 | VLAN)]]
    fab_in = []
    for ip, stack in zip(inner, tags):
        l2 = Ether(src="02:00:00:00:03:03", dst="02:00:00:00:00:09", type=stack[0][0])
        for i, (tpid, tci) in enumerate(stack):
            nxt = stack[i + 1][0] if i + 1 < len(stack) else 0x86DD
            l2 = l2 / Dot1Q(prio=tci >> 13, id=(tci >> 12) & 1, vlan=tci & 0xFFF, type=nxt)
        fab_in.append(l2 / IPv6(src="fc00:0:9::1", dst=OUR_DX4, nh=43) /
                      IPv6ExtHdrSegmentRouting(addresses=[OUR_DX4], segleft=0, lastentry=0,
                                               nh=4) / IP(ip))
    paths = {n: os.path.join(work, n + ".pcap") for n in ("host-in", "fab-in", "host-out",
                                                          "fab-out")}
    wrpcap(paths["host-in"], host_in)
    wrpcap(paths["fab-in"], fab_in)
    stats_json = os.path.join(work, "stats.json")
    eal = gwlib.eal_args(gwlib.unique_prefix("fabric_vlan_pcap"),
                         [f"net_pcap0,rx_pcap={paths['host-in']},tx_pcap={paths['host-out']}",
                          f"net_pcap1,rx_pcap={paths['fab-in']},tx_pcap={paths['fab-out']}"])
    rc, _, err = gwlib.run(eal, ["--config", cfg_path, "--until-idle", "300",
                                 "--stats-json", stats_json], timeout=120)
    gwlib.check(rc == 0, f"net_pcap gateway exit code {rc}:\n{err[-2000:]}")
    failures = check_tags(paths["fab-out"], "net_pcap fabric output")
    got = rdpcap(paths["host-out"])
    if len(got) != len(inner):
        failures.append(f"net_pcap host output: {len(got)} frames, expected {len(inner)}")
    for frame, ip, stack in zip(got, inner, tags):
        raw = bytes(frame)
        tpid, tci = stack[0]
        want = (bytes.fromhex("020000000404") + raw[6:12] + tpid.to_bytes(2, "big") +
                tci.to_bytes(2, "big") + b"\x08\x00" + ip)
        if raw != want:
            failures.append(f"host: keep: got {raw[:20].hex(' ')}..., expected "
                            f"{want[:20].hex(' ')}...")
    with open(stats_json) as f:
        tot = json.load(f)["total"]
    for k, v in {"encap": len(host_in), "fabric_vlan_tagged_out": len(host_in),
                 "decap": len(inner), "fabric_vlan_tagged_in": len(inner)}.items():
        if tot[k] != v:
            failures.append(f"net_pcap gateway {k} = {tot[k]}, expected {v}")
    log(f"part 1 (net_pcap): {len(host_in)} encapsulated with VLAN {VLAN} and mapped PCPs, "
        f"{len(got)} tagged frames decapsulated with host: keep")
    return failures


def check_tags(pcap, where):
    """tshark: every gateway frame (outer source ours) carries VLAN 100 and the PCP of its
    inner DSCP, PER_DSCP of each."""
    rows = gwlib.tshark_fields(pcap, ["vlan.id", "vlan.priority", "ip.dsfield.dscp"],
                               display_filter=f"ipv6.src == {GW_SOURCE}")
    seen = {}
    for vid, prio, dscp in rows:
        seen.setdefault(int(dscp), []).append((vid, prio))
    failures = []
    for dscp, pcp in DSCP_PCP.items():
        want = [(str(VLAN), str(pcp))] * PER_DSCP
        if seen.get(dscp) != want:
            failures.append(f"tshark on {where}: DSCP {dscp}: (vlan id, PCP) {seen.get(dscp)}, "
                            f"expected {want}")
    log(f"tshark on {where}: " + ", ".join(
        f"DSCP {d} -> VLAN {v[0][0]} PCP {v[0][1]} x{len(v)}" for d, v in sorted(seen.items())))
    return failures


def main():
    gwlib.need_tools("tshark")
    failures = pcap_part()
    if failures:
        rl.fail("\n".join(failures))


if __name__ == "__main__":
    rl.main_wrapper(main)
