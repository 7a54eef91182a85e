#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
# issue 18, rails against the kernel: one srv6gw (net_af_packet, four ports) serves two rails,
# each between its own host namespace and its own kernel SRv6 node, as in kernel-e2e:
#
#   hA --veth-- [gw: hosta | faba] --veth-- kA      (rail a: source fc00:a::1, SID fc00:a::46)
#   hB --veth-- [gw: hostb | fabb] --veth-- kB      (rail b: source fc00:b::1, SID fc00:b::46)
#
# host -> kernel: each host's RoCEv2 frames leave on its rail's fabric port only, with the
# rail's outer source, toward the rail's policy SID, and the kernel's seg6local End.DX4 there
# decapsulates every one (its route counter). kernel -> host: each kernel node encapsulates
# UDP toward its rail's local SID ('encap seg6 mode encap'); the gateway decapsulates it to that
# rail's host only. The per-rail counters of --stats-json agree.
#
# Needs root and network namespaces (exits 77 otherwise).
import json
import os
import socket
import sys
import time

sys.dont_write_bytecode = True  # keep the source tree clean
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "interop"))
import gwlib  # noqa: E402
import netns_lib as nl  # noqa: E402
from netns_lib import rl  # noqa: E402

RAILS = {
    "a": {"source": "fc00:a::1", "sid": "fc00:a::46", "policy_sid": "fc00:1::d4",
          "dst": "10.0.1.7", "link": "fc00:fa::", "count": 12},
    "b": {"source": "fc00:b::1", "sid": "fc00:b::46", "policy_sid": "fc00:2::d4",
          "dst": "10.0.2.7", "link": "fc00:fb::", "count": 8},
}
HOST_V4 = "10.0.0.1"


def log(msg):
    print(msg, flush=True)


class Topology:
    def __init__(self):
        pid = os.getpid()
        self.ns = {n: f"s6mr{n}{pid}" for n in ("hA", "hB", "gw", "kA", "kB")}
        self.created = []
        for ns in self.ns.values():
            nl.sh(["ip", "netns", "add", ns])
            self.created.append(ns)
            self.ip("lo", "link set lo up", ns)
            nl.sh(["ip", "netns", "exec", ns, "sysctl", "-qw",
                   "net.ipv6.conf.all.accept_dad=0"])
            nl.sh(["ip", "netns", "exec", ns, "sysctl", "-qw",
                   "net.ipv6.conf.default.accept_dad=0"])
        # gw side names: the gateway's net_af_packet vdevs bind to these.
        for gw_dev, peer in (("hosta", "hA"), ("hostb", "hB"), ("faba", "kA"), ("fabb", "kB")):
            nl.sh(["ip", "-n", self.ns["gw"], "link", "add", gw_dev, "type", "veth", "peer",
                   "name", "eth0", "netns", self.ns[peer]])
            # A bump in the wire: no IPv6 on the gateway's side, nothing of its own to send.
            nl.sh(["ip", "netns", "exec", self.ns["gw"], "sysctl", "-qw",
                   f"net.ipv6.conf.{gw_dev}.disable_ipv6=1"])
            self.ip("gw", f"link set dev {gw_dev} up")
            self.ip(peer, "link set dev eth0 up")
        for host in ("hA", "hB"):
            nl.sh(["ip", "netns", "exec", self.ns[host], "sysctl", "-qw",
                   "net.ipv6.conf.eth0.disable_ipv6=1"])

    def ip(self, role, args, ns=None, check=True):
        return nl.sh(["ip", "-n", ns or self.ns[role]] + args.split(), check=check)

    def mac(self, role, dev):
        r = self.ip(role, f"-j link show dev {dev}")
        return json.loads(r.stdout)[0]["address"]

    def sysctl(self, role, key, value):
        nl.sh(["ip", "netns", "exec", self.ns[role], "sysctl", "-qw", f"{key}={value}"])

    def cleanup(self):
        while self.created:
            nl.sh(["ip", "netns", "del", self.created.pop()], check=False)


def setup_kernel_node(t, role, rail, gw_fabric_mac):
    """The rail's kernel SRv6 node: End.DX4 on the rail's policy SID, and the encapsulation
    of traffic to the hosts toward the rail's local SID on the gateway."""
    for key in ("net.ipv4.ip_forward", "net.ipv6.conf.all.forwarding",
                "net.ipv6.conf.all.seg6_enabled", "net.ipv6.conf.default.seg6_enabled",
                "net.ipv6.conf.eth0.seg6_enabled"):
        t.sysctl(role, key, 1)
    t.ip(role, f"-6 addr add {rail['link']}2/64 dev eth0 nodad")
    # Where End.DX4 sends the inner packets: a veth pair inside the node (no dummy module
    # everywhere), a permanent neighbour, and a blackhole for what comes back in on d1.
    t.ip(role, "link add d0 type veth peer name d1")
    t.ip(role, "link set d0 up")
    t.ip(role, "link set d1 up")
    t.ip(role, "addr add 10.9.0.1/24 dev d0")
    t.ip(role, "neigh replace 10.9.0.2 lladdr 02:00:00:00:09:02 dev d0 nud permanent")
    t.ip(role, f"route add blackhole {rail['dst'].rsplit('.', 1)[0]}.0/24")
    r = t.ip(role, f"-6 route add {rail['policy_sid']}/128 encap seg6local action End.DX4 "
                   "nh4 10.9.0.2 count dev eth0", check=False)
    if r.returncode != 0:
        nl.skip(f"the kernel refuses seg6local End.DX4 routes: {r.stderr.strip()}")
    t.ip(role, f"-6 neigh replace {rail['link']}1 lladdr {gw_fabric_mac} dev eth0 nud permanent")
    t.ip(role, f"-6 route add {rail['sid']}/128 via {rail['link']}1 dev eth0")
    r = t.ip(role, f"route add 10.0.0.0/24 encap seg6 mode encap segs {rail['sid']} dev eth0",
             check=False)
    if r.returncode != 0:
        nl.skip(f"the kernel refuses seg6 encap routes: {r.stderr.strip()}")


def route_packets(t, role, prefix):
    r = t.ip(role, f"-s -6 route show {prefix}")
    words = r.stdout.split()
    for i, w in enumerate(words):
        if w == "packets" and i + 1 < len(words):
            return int(words[i + 1])
    rl.fail(f"no packet counter on route {prefix} in {role}:\n{r.stdout}")


def main():
    gwlib.need_tools("ip")
    nl.require_root_and_netns()
    started = time.monotonic()
    work = gwlib.workdir("multirail-kernel")
    t = Topology()
    p = None
    try:
        macs = {n: t.mac("gw", n) for n in ("hosta", "hostb", "faba", "fabb")}
        peer = {"a": ("hA", "kA", "hosta", "faba"), "b": ("hB", "kB", "hostb", "fabb")}
        for name, rail in RAILS.items():
            setup_kernel_node(t, peer[name][1], rail, macs[peer[name][3]])
        rails_cfg = []
        for i, (name, rail) in enumerate(RAILS.items()):
            h, k, _, _ = peer[name]
            rails_cfg.append({
                "name": name, "host": f"net_af_packet{2 * i}",
                "fabric": f"net_af_packet{2 * i + 1}", "source-address": rail["source"],
                "fabric-nexthop-mac": t.mac(k, "eth0"), "host-mac": t.mac(h, "eth0"),
                "local-sids": {"local-sid": [{"sid": rail["sid"], "behavior": "end-dt46"}]}})
        cfg = {"srv6gw:gateway": {
            "ports": {"mbufs": 4095},
            "source-address": "fc00:9::1",
            "actions": {"steering-miss": "drop", "fabric-non-sid": "drop"},
            "stats-interval-ms": 0,
            "policies": {"policy": [
                {"name": f"via-k{name}", "segment-list": [
                    {"name": "l", "path-id": 10 + i, "sid": [rail["policy_sid"]]}]}
                for i, (name, rail) in enumerate(RAILS.items())]},
            "steering": {"rule": [
                {"id": 1 + i, "prefix": rail["dst"].rsplit(".", 1)[0] + ".0/24",
                 "policy": f"via-k{name}"} for i, (name, rail) in enumerate(RAILS.items())]},
            "rails": {"rail": rails_cfg},
        }}
        # 4 ports, 2 workers on 2 cores: up to 60 s (3-10x slower under ASan)
        gw = gwlib.start_on_interfaces("multirail", work, nl.open_in_netns(t.ns["gw"]), cfg,
                                       ["hosta", "faba", "hostb", "fabb"],
                                       lcores="(0-2)@(0-1)", timeout=60)
        p = gw["p"]
        time.sleep(0.5)  # both workers polling
        log(f"gateway up after {time.monotonic() - started:.1f} s")

        failures = []
        # host -> kernel, rail by rail
        fab_rx = {n: nl.packet_socket(t.ns[peer[n][1]], "eth0") for n in RAILS}
        host_rx = {n: nl.packet_socket(t.ns[peer[n][0]], "eth0") for n in RAILS}
        for s in list(fab_rx.values()) + list(host_rx.values()):
            nl.drain(s)
        for name, rail in RAILS.items():
            h = peer[name][0]
            before = route_packets(t, peer[name][1], rail["policy_sid"])
            tx = nl.packet_socket(t.ns[h], "eth0")
            for psn in range(rail["count"]):
                ip = rl.roce_ip_packet(4, HOST_V4, rail["dst"], rl.OP_WRITE_ONLY, qp=0x100 + psn,
                                       psn=psn, payload_len=64)
                tx.send(rl.frame(ip, dst_mac=macs[peer[name][2]], src_mac=t.mac(h, "eth0")))
            tx.close()
            got = nl.capture(fab_rx[name], rail["count"],
                             lambda fr: fr[12:14] == b"\x86\xdd" and fr[14 + 6] in (4, 43))
            for fr in got:
                src = socket.inet_ntop(socket.AF_INET6, fr[22:38])
                dst = socket.inet_ntop(socket.AF_INET6, fr[38:54])
                if src != rail["source"] or dst != rail["policy_sid"]:
                    failures.append(f"rail {name}: outer {src} -> {dst}, expected "
                                    f"{rail['source']} -> {rail['policy_sid']}")
                    break
            if len(got) != rail["count"]:
                failures.append(f"rail {name}: {len(got)} encapsulated frames at k{name}, "
                                f"host sent {rail['count']}")
            deadline = time.monotonic() + 5
            while (route_packets(t, peer[name][1], rail["policy_sid"]) - before < rail["count"]
                   and time.monotonic() < deadline):
                time.sleep(0.1)
            done = route_packets(t, peer[name][1], rail["policy_sid"]) - before
            if done != rail["count"]:
                failures.append(f"rail {name}: the kernel End.DX4 decapsulated {done} of "
                                f"{rail['count']}")
            log(f"rail {name}: host -> kernel {len(got)} frames, End.DX4 ran {done} times")
        for name in RAILS:
            other = [n for n in RAILS if n != name][0]
            extra = nl.capture(fab_rx[name], 1, lambda fr: fr[12:14] == b"\x86\xdd" and
                               fr[22:38] == socket.inet_pton(
                                   socket.AF_INET6, RAILS[other]["source"]), timeout=0.3)
            if extra:
                failures.append(f"rail {other}'s traffic left on rail {name}'s fabric port")

        # The kernel node answers some of the End.DX4 packets with ICMP errors toward the host
        # (rate-limited, a handful): the gateway decapsulates those too, to the right host.
        # Count those seen so far; the per-rail decap check below allows for later ones.
        icmp_back = {n: len(nl.capture(host_rx[n], 1000, lambda fr: fr[12:14] == b"\x08\x00",
                                       timeout=0.5)) for n in RAILS}
        # kernel -> host: UDP from each kernel node, encapsulated by its seg6 route
        for name, rail in RAILS.items():
            marker = f"rail-{name}-".encode()
            with nl.open_in_netns(t.ns[peer[name][1]]):
                s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            for i in range(rail["count"]):
                s.sendto(marker + bytes([i]) * 32, (HOST_V4, 4791))
            s.close()
        got = {}
        for name, rail in RAILS.items():
            marker = f"rail-{name}-".encode()
            got[name] = nl.capture(host_rx[name], rail["count"],
                                   lambda fr, m=marker: fr[12:14] == b"\x08\x00" and m in fr)
            if len(got[name]) != rail["count"]:
                failures.append(f"rail {name}: host got {len(got[name])} decapsulated packets, "
                                f"k{name} sent {rail['count']}")
            log(f"rail {name}: kernel -> host {len(got[name])} packets")
        # Anything else either host received now: the other rail's return traffic must not be
        # among it.
        for name in RAILS:
            other = [n for n in RAILS if n != name][0]
            stray = nl.capture(host_rx[other], 1,
                               lambda fr, m=f"rail-{name}-".encode(): m in fr, timeout=0.3)
            if stray:
                failures.append(f"rail {name}'s return traffic reached rail {other}'s host")

        stats, out, err = gwlib.stop_checked(gw, gw["stats"], timeout=40)
        p = None
        rails = {r["name"]: r for r in stats["rails"]}
        for name, rail in RAILS.items():
            rs = rails.get(name)
            if rs is None:
                failures.append(f"no rail {name} in the statistics")
                continue
            # The kernel's ICMP errors may also come after the window above (an unresolved
            # neighbour answers only when its resolution times out, ~3 s): up to one per
            # End.DX4 packet beyond the ones seen. Which host they reach is checked above.
            want_decap = rail["count"] + icmp_back[name]
            if rs["encap"] != rail["count"] or not (
                    want_decap <= rs["decap"] <= want_decap + rail["count"]):
                failures.append(f"rail {name}: encap {rs['encap']} decap {rs['decap']}, expected "
                                f"{rail['count']} and {want_decap}..{want_decap + rail['count']} "
                                f"({icmp_back[name]} ICMP seen)")
        log(f"elapsed {time.monotonic() - started:.1f} s")
        if failures:
            log(out[-4000:])
            rl.fail("\n".join(failures))
        log("multirail (net_af_packet, kernel seg6local): OK")
    finally:
        if p is not None and p.poll() is None:
            p.kill()
            p.wait()
        t.cleanup()


if __name__ == "__main__":
    rl.main_wrapper(main)
