#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
# Fabric VLAN against the Linux kernel as the VLAN peer (issue 18, acceptance 2: "the kernel
# peer decapsulates it"), in network namespaces:
#
#   host --veth-- [gw: srv6gw net_af_packet0 | net_af_packet1] --veth-- fab --veth-- rcv
#
# This machine's kernel has no 802.1Q VLAN devices (no 8021q), so fab's side toward the
# gateway (lft0) is a trunk made of tc clsact BPF programs (fabric_vlan_peer.c): ingress
# accepts only frames tagged with VLAN 100, counts their PCP and pops the tag; egress pushes
# the tag (PCP from the outer DSCP). fab's SRv6 (seg6local End.DX4, encap seg6) runs on lft0
# behind them, as it would on a VLAN subinterface. That the kernel hands tc the tag in skb
# metadata (vlan_present) on this kernel is what the accepted count shows: a frame without
# it would be refused and counted.
# (a) host -> rcv: the gateway encapsulates with VLAN 100 and the PCP of its DSCP->PCP map
#     (DSCP 0 -> 0, 26 -> 3, 46 -> 6 by override); the BPF program counts exactly those PCPs
#     and refuses nothing; the kernel's End.DX4 (route counter) decapsulates every packet and
#     rcv gets it.
# (b) rcv -> host: fab's kernel encapsulates toward the gateway's End.DX4 SID; BPF tags it
#     (counted); the gateway accepts the tagged frames (fabric_vlan_tagged_in) and host gets
#     the inner packets untagged (host: strip).
#
# Needs root, network namespaces, clang with the bpf target, libbpf headers and tc with BPF
# support (exits 77 otherwise). About 5 s.
import json
import os
import sys
import time

sys.dont_write_bytecode = True  # keep the source tree clean
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "interop"))
import bpflib  # noqa: E402
import gwlib  # noqa: E402
import netns_lib as nl  # noqa: E402
import test_fabric_vlan as fv  # noqa: E402
from netns_lib import rl  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
EGRESS_BASE, REFUSED, SLOTS = 8, 16, 17  # fabric_vlan_peer.c's counter slots


def log(msg):
    print(msg, flush=True)


def attach_peer(chain, obj):
    """clsact on fab's lft0 with the ingress and egress programs; returns their program ids."""
    ns = chain.ns["fab"]
    nl.sh(["ip", "netns", "exec", ns, "tc", "qdisc", "add", "dev", "lft0", "clsact"])
    ids = {}
    for direction in ("ingress", "egress"):
        r = nl.sh(["ip", "netns", "exec", ns, "tc", "filter", "add", "dev", "lft0", direction,
                   "bpf", "direct-action", "obj", obj, "sec", f"tc/{direction}"], check=False)
        if r.returncode != 0:
            gwlib.skip(f"tc cannot attach the BPF VLAN peer: {r.stderr.strip()[-300:]}")
        shown = nl.sh(["ip", "netns", "exec", ns, "tc", "-j", "filter", "show", "dev", "lft0",
                       direction])
        progs = [f["options"]["prog"]["id"] for f in json.loads(shown.stdout)
                 if "prog" in f.get("options", {})]
        if len(progs) != 1:
            rl.fail(f"tc shows {len(progs)} BPF programs on lft0 {direction}: {shown.stdout}")
        ids[direction] = progs[0]
    return ids


def setup(obj):
    chain = nl.Chain(["host", "gw", "fab", "rcv"])
    for dev in ("lft0", "rgt0"):
        chain.ip("gw", f"addr flush dev {dev}")
        chain.sysctl("gw", f"net.ipv6.conf.{dev}.disable_ipv6", 1)
    chain.forwarding("fab")
    r = chain.ip("fab", f"-6 route add {fv.FAB_DX4}/128 encap seg6local action End.DX4 "
                        "nh4 10.0.1.1 count dev rgt0", check=False)
    if r.returncode != 0:
        nl.skip(f"the kernel refuses seg6local End.DX4 routes: {r.stderr.strip()}")
    chain.ip("fab", "-6 addr add fc00:fa::2/64 dev lft0 nodad")
    chain.neigh("fab", "lft0", "fc00:fa::1", chain.mac("gw", "rgt0"))
    chain.ip("fab", "addr add 10.0.1.254/24 dev rgt0")
    chain.neigh("fab", "rgt0", "10.0.1.1", chain.mac("rcv", "lft0"))
    # Back toward the gateway: its SIDs behind lft0; the host's network encapsulated to them.
    chain.ip("fab", "-6 route add fc00:9::/64 via fc00:fa::1 dev lft0")
    chain.ip("fab", f"route add 10.0.0.0/24 encap seg6 mode encap segs {fv.OUR_DX4} dev lft0")
    return chain, attach_peer(chain, obj)


def main():
    gwlib.need_tools("ip", "tc")
    nl.require_root_and_netns()
    work = gwlib.workdir("fabric-vlan-kernel")
    obj = bpflib.build(os.path.join(HERE, "fabric_vlan_peer.c"),
                       os.path.join(work, "fabric_vlan_peer.o"), [f"PEER_VID={fv.VLAN}"])
    started = time.monotonic()
    chain, progs = setup(obj)
    gw = None
    failures = []
    try:
        macs = {"host": chain.mac("host", "rgt0"), "gw_host": chain.mac("gw", "lft0"),
                "fab": chain.mac("fab", "lft0"), "fab_rcv_side": chain.mac("fab", "rgt0"),
                "rcv": chain.mac("rcv", "lft0")}
        gw = gwlib.start_on_interfaces("gateway", work, nl.open_in_netns(chain.ns["gw"]),
                                       fv.gateway_config(macs), ["lft0", "rgt0"], timeout=60)

        # (a) host -> gateway (tag + PCP) -> BPF pops -> kernel End.DX4 -> rcv.
        host_tx = nl.packet_socket(chain.ns["host"], "rgt0")
        rcv_rx = nl.packet_socket(chain.ns["rcv"], "lft0")
        samples = []
        for dscp in fv.DSCP_PCP:
            for k in range(fv.PER_DSCP):
                seq = len(samples)
                samples.append(rl.roce_ip_packet(4, "10.0.0.1", "10.0.1.1", rl.OP_SEND_ONLY,
                                                 qp=0x100 + seq, psn=seq, tos=dscp << 2 | 2,
                                                 sport=49152 + seq))
        in_before = bpflib.prog_array_map(progs["ingress"], SLOTS)
        dx4_before = chain.route_packets("fab", fv.FAB_DX4)
        for ip in samples:
            host_tx.send(rl.frame(ip, dst_mac=macs["gw_host"], src_mac=macs["host"]))
        got = nl.capture(rcv_rx, len(samples), nl.plain_roce_frame, timeout=10.0)
        dx4 = chain.route_packets("fab", fv.FAB_DX4) - dx4_before
        in_counts = [a - b for a, b in zip(bpflib.prog_array_map(progs["ingress"], SLOTS),
                                           in_before)]
        pcps = {p: n for p, n in enumerate(in_counts[:8]) if n}
        want_pcps = {}
        for pcp in fv.DSCP_PCP.values():
            want_pcps[pcp] = want_pcps.get(pcp, 0) + fv.PER_DSCP
        if pcps != want_pcps:
            failures.append(f"(a) BPF peer counted PCPs {pcps}, expected {want_pcps} (DSCP->PCP "
                            f"map {fv.DSCP_PCP})")
        if in_counts[REFUSED]:
            failures.append(f"(a) BPF peer refused {in_counts[REFUSED]} frames (untagged or "
                            f"not VLAN {fv.VLAN})")
        if dx4 != len(samples):
            failures.append(f"(a) kernel End.DX4 behind the BPF VLAN peer counted {dx4}, "
                            f"expected {len(samples)}")
        if len(got) != len(samples):
            failures.append(f"(a) rcv got {len(got)} packets, not the {len(samples)} sent")
        log(f"(a) sent {len(samples)}; BPF peer on VLAN {fv.VLAN}: PCP counts {pcps}, refused "
            f"{in_counts[REFUSED]}; kernel End.DX4 decapsulated {dx4}; rcv got {len(got)}")

        # (b) rcv -> kernel encap -> BPF pushes the tag -> gateway End.DX4 -> host, untagged.
        rcv_tx = nl.packet_socket(chain.ns["rcv"], "lft0")
        host_rx = nl.packet_socket(chain.ns["host"], "rgt0")
        back = [rl.roce_ip_packet(4, "10.0.1.1", "10.0.0.1", rl.OP_SEND_ONLY, qp=0x200 + i,
                                  psn=i, tos=26 << 2, sport=50000 + i) for i in range(6)]
        nl.drain(host_rx)
        out_before = bpflib.prog_array_map(progs["egress"], SLOTS)
        for ip in back:
            rcv_tx.send(rl.frame(ip, dst_mac=macs["fab_rcv_side"], src_mac=macs["rcv"]))
        got_b = nl.capture(host_rx, len(back), nl.plain_roce_frame, timeout=10.0)
        out_counts = [a - b for a, b in zip(bpflib.prog_array_map(progs["egress"], SLOTS),
                                            out_before)]
        tagged_out = sum(out_counts[EGRESS_BASE:EGRESS_BASE + 8])
        if tagged_out < len(back):
            failures.append(f"(b) BPF peer tagged {tagged_out} frames toward the gateway, "
                            f"expected at least {len(back)}")
        # The kernel encapsulates on its input path: the inner packets arrive as rcv sent them.
        got_ips = sorted(bytes(f[14:14 + int.from_bytes(f[16:18], "big")]) for f in got_b)
        if got_ips != sorted(back):
            failures.append(f"(b) host got {len(got_b)} packets, not the {len(back)} rcv sent")
        for f in got_b:
            if f[:6] != bytes.fromhex(macs["host"].replace(":", "")) or f[12:14] != b"\x08\x00":
                failures.append(f"(b) host frame header {f[:14].hex(' ')}: expected untagged "
                                "IPv4 to the host MAC")
                break
        log(f"(b) rcv sent {len(back)} through the kernel's encap; BPF peer tagged {tagged_out} "
            f"(PCP counts {dict((p, n) for p, n in enumerate(out_counts[8:16]) if n)}); host "
            f"got {len(got_b)} untagged")
        for s in (host_tx, rcv_rx, rcv_tx, host_rx):
            s.close()

        stats, _, _ = gwlib.stop_checked(gw, gw["stats"], timeout=40)
        gw = None
        tot = stats["total"]
        want = {"encap": len(samples), "fabric_vlan_tagged_out": len(samples),
                "decap": len(back), "fabric_vlan_tagged_in": len(back)}
        for k, v in want.items():
            if tot[k] != v:
                failures.append(f"gateway {k} = {tot[k]}, expected {v}")
        log(f"gateway: encap {tot['encap']} tagged out {tot['fabric_vlan_tagged_out']}, "
            f"decap {tot['decap']} tagged in {tot['fabric_vlan_tagged_in']}, drops "
            f"{ {k: v for k, v in tot['drops'].items() if v} }; "
            f"elapsed {time.monotonic() - started:.1f} s")
        if failures:
            rl.fail("\n".join(failures))
    finally:
        if gw is not None and gw["p"].poll() is None:
            gw["p"].kill()
            gw["p"].wait()
        chain.cleanup()


if __name__ == "__main__":
    rl.main_wrapper(main)
