#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
# Fabric VLAN (issue 18, acceptance 2). The gateway tags what it encapsulates with VLAN 100 and
# a PCP from its DSCP->PCP map (DSCP 46 overridden to PCP 6, the others their top three bits).
#
# Part 1, net_pcap (runs everywhere): RoCEv2 packets with DSCP 0, 26, 46 from the host; tshark
# on the fabric output shows VLAN 100 and the mapped PCP for each. Tagged frames from the
# fabric to our End.DX4 SID (one with QinQ) are decapsulated; host: keep gives the host the
# fabric frame's first tag as received.
#
# Part 2, the Linux kernel as the VLAN peer, in network namespaces (root, and a kernel with
# 802.1Q VLAN devices; said and left out otherwise):
#
#   host --veth-- [gw: srv6gw net_af_packet0 | net_af_packet1] --veth-- fab --veth-- rcv
#
# fab's side toward the gateway is a VLAN subinterface (v100 on lft0); its SRv6 lives there.
# (a) host -> rcv: dumpcap on fab's lft0 (the trunk); tshark shows VLAN 100 and the mapped
#     PCP; the kernel's End.DX4 on v100 (route counter) decapsulates every packet, rcv gets it.
# (b) rcv -> host: fab encapsulates toward the gateway's End.DX4 SID out of v100 (tagged); the
#     gateway accepts the tagged frames and host gets the inner packets untagged (strip).
# The daemon's counters (tagged out / tagged in, encap, decap) must agree.
import json
import logging
import os
import signal
import subprocess
import sys
import time

sys.dont_write_bytecode = True  # keep the source tree clean
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "interop"))
import gwlib  # noqa: E402
import netns_lib as nl  # noqa: E402
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


def setup():
    chain = nl.Chain(["host", "gw", "fab", "rcv"])
    for dev in ("lft0", "rgt0"):
        chain.ip("gw", f"addr flush dev {dev}")
        chain.sysctl("gw", f"net.ipv6.conf.{dev}.disable_ipv6", 1)
    chain.forwarding("fab")
    chain.ip("fab", f"link add link lft0 name v{VLAN} type vlan id {VLAN}")
    chain.ip("fab", f"link set dev v{VLAN} up")
    chain.sysctl("fab", f"net.ipv6.conf.v{VLAN}.seg6_enabled", 1)
    chain.sysctl("fab", f"net.ipv4.conf.v{VLAN}.rp_filter", 0)
    chain.ip("fab", f"-6 addr add fc00:fa::2/64 dev v{VLAN} nodad")
    chain.neigh("fab", f"v{VLAN}", "fc00:fa::1", chain.mac("gw", "rgt0"))
    r = chain.ip("fab", f"-6 route add {FAB_DX4}/128 encap seg6local action End.DX4 nh4 10.0.1.1 "
                        "count dev rgt0", check=False)
    if r.returncode != 0:
        nl.skip(f"the kernel refuses seg6local End.DX4 routes: {r.stderr.strip()}")
    chain.ip("fab", "addr add 10.0.1.254/24 dev rgt0")
    chain.neigh("fab", "rgt0", "10.0.1.1", chain.mac("rcv", "lft0"))
    # Back toward the gateway: its SIDs behind v100; the host's network encapsulated to them.
    chain.ip("fab", f"-6 route add fc00:9::/64 via fc00:fa::1 dev v{VLAN}")
    chain.ip("fab", f"route add 10.0.0.0/24 encap seg6 mode encap segs {OUR_DX4} dev v{VLAN}")
    return chain


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


def start_dumpcap(ns, dev, path):
    """dumpcap on `dev` in namespace `ns` (libpcap puts the tag the kernel took off back in
    front of the frame); returns once it captures."""
    err = open(path + ".log", "w")
    p = subprocess.Popen(["ip", "netns", "exec", ns, "dumpcap", "-i", dev, "-w", path, "-q"],
                         stdout=subprocess.DEVNULL, stderr=err)
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and not os.path.exists(path) and p.poll() is None:
        time.sleep(0.1)
    if not os.path.exists(path):
        p.kill()
        p.wait()
        with open(path + ".log") as f:
            rl.fail(f"dumpcap did not start: {f.read()}")
    time.sleep(0.5)
    return p


def stop_dumpcap(p):
    p.send_signal(signal.SIGINT)
    try:
        p.wait(timeout=10)
    except subprocess.TimeoutExpired:
        p.kill()
        p.wait()


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


def kernel_vlan_reason():
    """None when this kernel can make 802.1Q VLAN devices, else why not."""
    probe = f"s6vlan{os.getpid()}"
    nl.sh(["ip", "netns", "add", probe])
    try:
        r = nl.sh(["ip", "-n", probe, "link", "add", "link", "lo", "name", "v5", "type", "vlan",
                   "id", "5"], check=False)
        return None if r.returncode == 0 else f"no 802.1Q VLAN devices: {r.stderr.strip()}"
    finally:
        nl.sh(["ip", "netns", "del", probe], check=False)


def main():
    gwlib.need_tools("ip", "tshark", "dumpcap")
    failures = pcap_part()
    if failures:
        rl.fail("\n".join(failures))
    if os.geteuid() != 0:
        log("part 2 (kernel VLAN peer) left out: needs root")
        return
    nl.require_root_and_netns()
    reason = kernel_vlan_reason()
    if reason:
        log(f"part 2 (kernel VLAN peer) left out: this kernel has {reason}")
        return
    kernel_part()


def kernel_part():
    started = time.monotonic()
    work = gwlib.workdir("fabric-vlan")
    chain = setup()
    gw = dump = None
    failures = []
    try:
        macs = {"host": chain.mac("host", "rgt0"), "gw_host": chain.mac("gw", "lft0"),
                "fab": chain.mac("fab", "lft0"), "fab_rcv_side": chain.mac("fab", "rgt0"),
                "rcv": chain.mac("rcv", "lft0")}
        cfg_path = os.path.join(work, "gateway.json")
        with open(cfg_path, "w") as f:
            json.dump(gateway_config(macs), f)
        stats_json = os.path.join(work, "stats.json")
        eal = gwlib.eal_args(gwlib.unique_prefix("fabric_vlan"),
                             ["net_af_packet0,iface=lft0,qpairs=1",
                              "net_af_packet1,iface=rgt0,qpairs=1"])
        gw = gwlib.start_logged("gateway", work, eal,
                                ["--config", cfg_path, "--stats-json", stats_json],
                                enter=nl.open_in_netns(chain.ns["gw"]))
        pcap = os.path.join(work, "fab-lft0.pcap")
        dump = start_dumpcap(chain.ns["fab"], "lft0", pcap)

        # (a) host -> gateway (tag + PCP) -> kernel End.DX4 on the VLAN subinterface -> rcv.
        host_tx = nl.packet_socket(chain.ns["host"], "rgt0")
        rcv_rx = nl.packet_socket(chain.ns["rcv"], "lft0")
        samples = []
        for dscp in DSCP_PCP:
            for k in range(PER_DSCP):
                seq = len(samples)
                samples.append((dscp, rl.roce_ip_packet(4, "10.0.0.1", "10.0.1.1",
                                                        rl.OP_SEND_ONLY, qp=0x100 + seq,
                                                        psn=seq, tos=dscp << 2 | 2,
                                                        sport=49152 + seq)))
        before = chain.route_packets("fab", FAB_DX4)
        for _, ip in samples:
            host_tx.send(rl.frame(ip, dst_mac=macs["gw_host"], src_mac=macs["host"]))
        got = nl.capture(rcv_rx, len(samples), nl.plain_roce_frame, timeout=5.0)
        dx4 = chain.route_packets("fab", FAB_DX4) - before
        if dx4 != len(samples):
            failures.append(f"(a) kernel End.DX4 on v{VLAN} counted {dx4}, expected "
                            f"{len(samples)}")
        if len(got) != len(samples):
            failures.append(f"(a) rcv got {len(got)} of {len(samples)} packets")
        log(f"(a) sent {len(samples)}, kernel End.DX4 on v{VLAN} decapsulated {dx4}, "
            f"rcv got {len(got)}")

        # (b) rcv -> kernel encap out of v100 (tagged) -> gateway End.DX4 -> host, untagged.
        rcv_tx = nl.packet_socket(chain.ns["rcv"], "lft0")
        host_rx = nl.packet_socket(chain.ns["host"], "rgt0")
        back = [rl.roce_ip_packet(4, "10.0.1.1", "10.0.0.1", rl.OP_SEND_ONLY, qp=0x200 + i,
                                  psn=i, tos=26 << 2, sport=50000 + i) for i in range(6)]
        nl.drain(host_rx)
        for ip in back:
            rcv_tx.send(rl.frame(ip, dst_mac=macs["fab_rcv_side"], src_mac=macs["rcv"]))
        got_b = nl.capture(host_rx, len(back), nl.plain_roce_frame, timeout=5.0)
        # The kernel encapsulates on its input path: the inner packets arrive as rcv sent them.
        got_ips = sorted(bytes(f[14:14 + int.from_bytes(f[16:18], "big")]) for f in got_b)
        if got_ips != sorted(back):
            failures.append(f"(b) host got {len(got_b)} packets, not the {len(back)} rcv sent")
        for f in got_b:
            if f[:6] != bytes.fromhex(macs["host"].replace(":", "")) or f[12:14] != b"\x08\x00":
                failures.append(f"(b) host frame header {f[:14].hex(' ')}: expected untagged "
                                "IPv4 to the host MAC")
                break
        log(f"(b) rcv sent {len(back)} through the kernel's encap on v{VLAN}, host got "
            f"{len(got_b)} untagged")
        for s in (host_tx, rcv_rx, rcv_tx, host_rx):
            s.close()
        time.sleep(0.3)
        stop_dumpcap(dump)
        dump = None

        # What was on fab's trunk: the gateway's frames (outer source ours) with their tags.
        failures += check_tags(pcap, "fab lft0")
        # The kernel's encapsulations toward us were tagged too (v100's frames).
        rows_b = gwlib.tshark_fields(pcap, ["vlan.id"], display_filter=f"ipv6.dst == {OUR_DX4}")
        if [r[0] for r in rows_b] != [str(VLAN)] * len(back):
            failures.append(f"tshark: kernel frames toward {OUR_DX4}: vlan ids "
                            f"{[r[0] for r in rows_b]}")

        stats, out, err = gwlib.stop_checked(gw, stats_json, timeout=20)
        gw = None
        tot = stats["total"]
        want = {"encap": len(samples), "fabric_vlan_tagged_out": len(samples),
                "decap": len(back), "fabric_vlan_tagged_in": len(back)}
        for k, v in want.items():
            if tot[k] != v:
                failures.append(f"gateway {k} = {tot[k]}, expected {v}")
        drops = {k: v for k, v in tot["drops"].items() if v}
        if drops:
            failures.append(f"gateway drops {drops}")
        log(f"gateway: encap {tot['encap']} tagged out {tot['fabric_vlan_tagged_out']}, "
            f"decap {tot['decap']} tagged in {tot['fabric_vlan_tagged_in']}; "
            f"elapsed {time.monotonic() - started:.1f} s")
        if failures:
            rl.fail("\n".join(failures))
    finally:
        if dump is not None:
            stop_dumpcap(dump)
        if gw is not None and gw["p"].poll() is None:
            gw["p"].kill()
            gw["p"].wait()
        chain.cleanup()


if __name__ == "__main__":
    rl.main_wrapper(main)
