#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
# Path health probing and fast failover (issue 6, acceptance 1-3) with two srv6gw daemons and
# a Linux kernel SRv6 fabric of two disjoint paths in network namespaces:
#
#                               +-- t1 (End fc00:1::e) --+
#   ha -- [gateway A] -- fa ---+                          +--- fb -- [gateway B] -- hb
#                               +-- t2 (End fc00:2::e) --+
#
# A's policy toB has two segment lists, p1 = <fc00:1::e, B's DX4> and p2 = <fc00:2::e, B's DX4>
# (flow mode), and names B's probe SID: A probes <fc00:1::e, B's probe SID> and back
# <fc00:1::e, A's probe SID> (and the same over t2); B reflects. The kernel's seg6local End on
# t1/t2 processes the probes and the data alike.
#
# 1. ha sends one RoCEv2 flow (one QP, PSN counting up) at RATE_PPS; taps on fb's two
#    fabric links tell which path carries it. That path is cut (its link toward fa set down).
#    Printed: time from the cut to the first packet of the flow seen on the surviving path
#    (sender's clock: send time of that packet), and the PSNs lost in between (missing at hb).
#    Asserted: the flow moved, and the loss is within RATE x (timeout + threshold x interval)
#    with generous slack (a loaded 2-core machine).
# 2. The link comes back: the flow returns to its path after the probe hold-down (not before).
# 3. A second policy names a probe SID nobody answers (B has no such SID): its path is
#    reported down (stats), the engine takes it out, nothing crashes.
#
# Needs root and network namespaces (exits 77 otherwise).
import json
import os
import signal
import socket
import struct
import subprocess
import sys
import threading
import time

sys.dont_write_bytecode = True  # keep the source tree clean
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "interop"))
import gwlib  # noqa: E402
import netns_lib as nl  # noqa: E402
from netns_lib import rl  # noqa: E402

HOST_A, HOST_B = "10.0.0.1", "10.0.1.1"
T_SID = {1: "fc00:1::e", 2: "fc00:2::e"}
B_DX4, B_PROBE = "fc00:b::d4", "fc00:b::f"
A_DX4, A_PROBE = "fc00:a::d4", "fc00:a::f"
DARK_PROBE = "fc00:b::99"  # B has no such SID: probes to it are never answered
PROBE = {"interval-us": 2000, "timeout-us": 20000, "loss-threshold": 3, "hold-down-us": 500000}
RATE_PPS = 1000
PSN_OFFSET = 14 + 20 + 8 + 9  # Ethernet + IPv4 + UDP + BTH bytes before the PSN


def log(msg):
    print(msg, flush=True)


class Fabric:
    """The namespaces and links of the picture above; every step can be re-applied."""

    def __init__(self):
        pid = os.getpid()
        self.ns = {r: f"p6{r}{pid}" for r in ("ha", "gwa", "fa", "t1", "t2", "fb", "gwb", "hb")}
        self.created = []
        import atexit
        atexit.register(self.cleanup)
        for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            signal.signal(sig, self._on_signal)
        for ns in self.ns.values():
            nl.sh(["ip", "netns", "add", ns])
            self.created.append(ns)
            self.ip_ns(ns, "link set lo up")
        for role in ("fa", "t1", "t2", "fb"):
            for key, value in (("net.ipv6.conf.all.forwarding", 1),
                               ("net.ipv6.conf.all.seg6_enabled", 1),
                               ("net.ipv6.conf.default.seg6_enabled", 1),
                               ("net.ipv6.conf.all.accept_dad", 0),
                               ("net.ipv6.conf.default.accept_dad", 0)):
                self.sysctl(role, key, value)
        for role in ("ha", "gwa", "gwb", "hb"):
            self.sysctl(role, "net.ipv6.conf.all.disable_ipv6", 1)
            self.sysctl(role, "net.ipv6.conf.default.disable_ipv6", 1)
        self.link("ha", "h0", "gwa", "h")
        self.link("gwa", "f", "fa", "fa0")
        self.link("fa", "fa1", "t1", "t1a")
        self.link("fa", "fa2", "t2", "t2a")
        self.link("t1", "t1b", "fb", "fb1")
        self.link("t2", "t2b", "fb", "fb2")
        self.link("fb", "fb0", "gwb", "f")
        self.link("gwb", "h", "hb", "h0")
        self.mac = {k: self.mac_of(*k) for k in (("ha", "h0"), ("gwa", "h"), ("gwa", "f"),
                                                  ("fa", "fa0"), ("fb", "fb0"), ("gwb", "f"),
                                                  ("gwb", "h"), ("hb", "h0"))}
        # The gateways' ports are DPDK af_packet ports: they answer no ND, hence static
        # neighbours with their MACs on the fabric routers.
        self.ip("fa", "-6 addr replace fd00:a::1/64 dev fa0 nodad")
        self.ip("fa", f"-6 neigh replace fd00:a::2 lladdr {self.mac[('gwa', 'f')]} dev fa0 "
                      "nud permanent")
        self.ip("fa", "-6 route replace fc00:a::/32 via fd00:a::2 dev fa0")
        self.ip("fb", "-6 addr replace fd00:b::1/64 dev fb0 nodad")
        self.ip("fb", f"-6 neigh replace fd00:b::2 lladdr {self.mac[('gwb', 'f')]} dev fb0 "
                      "nud permanent")
        self.ip("fb", "-6 route replace fc00:b::/32 via fd00:b::2 dev fb0")
        for k in (1, 2):
            self.setup_path(k)

    def setup_path(self, k):
        """Addresses, neighbours, routes and the End SID of transit t<k> (idempotent)."""
        t = f"t{k}"
        legs = (("fa", f"fa{k}", f"fd00:1{k}::1", t, f"{t}a", f"fd00:1{k}::2"),
                (t, f"{t}b", f"fd00:2{k}::1", "fb", f"fb{k}", f"fd00:2{k}::2"))
        for la, ldev, laddr, ra, rdev, raddr in legs:
            self.ip(la, f"link set dev {ldev} up")
            self.ip(ra, f"link set dev {rdev} up")
            self.ip(la, f"-6 addr replace {laddr}/64 dev {ldev} nodad")
            self.ip(ra, f"-6 addr replace {raddr}/64 dev {rdev} nodad")
            self.ip(la, f"-6 neigh replace {raddr} lladdr {self.mac_of(ra, rdev)} dev {ldev} "
                        "nud permanent")
            self.ip(ra, f"-6 neigh replace {laddr} lladdr {self.mac_of(la, ldev)} dev {rdev} "
                        "nud permanent")
            self.sysctl(la, f"net.ipv6.conf.{ldev}.seg6_enabled", 1)
            self.sysctl(ra, f"net.ipv6.conf.{rdev}.seg6_enabled", 1)
        self.ip("fa", f"-6 route replace fc00:{k}::/32 via fd00:1{k}::2 dev fa{k}")
        self.ip("fb", f"-6 route replace fc00:{k}::/32 via fd00:2{k}::1 dev fb{k}")
        self.ip(t, f"-6 route replace fc00:a::/32 via fd00:1{k}::1 dev {t}a")
        self.ip(t, f"-6 route replace fc00:b::/32 via fd00:2{k}::2 dev {t}b")
        self.ip(t, f"-6 route replace {T_SID[k]}/128 encap seg6local action End dev {t}a")

    def cut(self, k):
        self.ip(f"t{k}", f"link set dev t{k}a down")

    def link(self, a, adev, b, bdev):
        nl.sh(["ip", "-n", self.ns[a], "link", "add", adev, "type", "veth", "peer", "name", bdev,
               "netns", self.ns[b]])
        self.ip(a, f"link set dev {adev} up")
        self.ip(b, f"link set dev {bdev} up")

    def ip(self, role, args):
        return self.ip_ns(self.ns[role], args)

    @staticmethod
    def ip_ns(ns, args):
        return nl.sh(["ip", "-n", ns] + args.split())

    def sysctl(self, role, key, value):
        nl.sh(["ip", "netns", "exec", self.ns[role], "sysctl", "-qw", f"{key}={value}"])

    def mac_of(self, role, dev):
        return json.loads(self.ip(role, f"-j link show dev {dev}").stdout)[0]["address"]

    def _on_signal(self, signum, _frame):
        self.cleanup()
        sys.exit(128 + signum)

    def cleanup(self):
        while self.created:
            subprocess.run(["ip", "netns", "del", self.created.pop()], capture_output=True)


def gateway_config(me, nexthop_mac, host_mac, extra_policies=(), extra_rules=()):
    a = me == "A"
    policies = [{
        "name": "toB" if a else "toA", "selection": {"mode": "flow"},
        "probe-sid": B_PROBE if a else A_PROBE,
        "segment-list": [{"name": f"p{k}", "path-id": (0 if a else 100) + k, "weight": 1,
                          "sid": [T_SID[k], B_DX4 if a else A_DX4]} for k in (1, 2)]}]
    rules = [{"id": 1, "prefix": "10.0.1.0/24" if a else "10.0.0.0/24",
              "policy": policies[0]["name"]}]
    return {"srv6gw:gateway": {
        "ports": {"host": "net_af_packet0", "fabric": "net_af_packet1", "queues": 1,
                  "mbufs": 4095, "fabric-nexthop-mac": nexthop_mac, "host-mac": host_mac},
        "source-address": "fc00:a::1" if a else "fc00:b::1",
        "actions": {"steering-miss": "drop", "non-roce": "drop", "fabric-non-sid": "drop"},
        "stats-interval-ms": 0,
        "probe": PROBE,
        "policies": {"policy": policies + list(extra_policies)},
        "steering": {"rule": rules + list(extra_rules)},
        "local-sids": {"local-sid": [
            {"sid": A_DX4 if a else B_DX4, "behavior": "end-dx4"},
            {"sid": A_PROBE if a else B_PROBE, "behavior": "end-probe"}]},
    }}


def start_gateway(fab, role, work, name, config, main_lcore):
    cfg_path = os.path.join(work, f"{name}.json")
    with open(cfg_path, "w") as f:
        json.dump(config, f, indent=2)
    prefix = gwlib.unique_prefix(f"probe_{name}")
    stats_json = os.path.join(work, f"{name}-stats.json")
    err_path = os.path.join(work, f"{name}-stderr.txt")
    out_path = os.path.join(work, f"{name}-stdout.txt")
    eal = gwlib.eal_args(prefix, ["net_af_packet0,iface=h,qpairs=1",
                                  "net_af_packet1,iface=f,qpairs=1"])
    eal += ["--main-lcore", str(main_lcore)]
    err_f, out_f = open(err_path, "w"), open(out_path, "w")
    with nl.open_in_netns(fab.ns[role]):
        p = gwlib.start(eal, ["--config", cfg_path, "--stats-json", stats_json],
                        stdout=out_f, stderr=err_f)
    err_f.close()
    out_f.close()
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        with open(err_path) as f:
            err = f.read()
        if "worker 0 on lcore" in err:
            time.sleep(0.3)
            return {"p": p, "stats": stats_json, "err": err_path, "out": out_path}
        if p.poll() is not None:
            break
        time.sleep(0.1)
    with open(err_path) as f:
        rl.fail(f"gateway {name} did not start (exit code {p.poll()}):\n{f.read()[-3000:]}")


def stop_gateway(g):
    g["p"].send_signal(signal.SIGTERM)
    try:
        rc = g["p"].wait(timeout=20)
    except Exception:
        g["p"].kill()
        g["p"].wait()
        rl.fail("a gateway did not stop within 20 s of SIGTERM")
    with open(g["err"]) as f:
        err = f.read()
    with open(g["out"]) as f:
        out = f.read()
    if rc != 0:
        rl.fail(f"gateway exit code {rc}:\n{err[-3000:]}")
    with open(g["stats"]) as f:
        return json.load(f), out, err


def data_psn(frame):
    """PSN of A's encapsulated RoCEv2 data frame (outer IPv6 + SRH + inner IPv4), else None.
    Probes (SRH next header UDP) are not data."""
    if len(frame) < 14 + 48 or frame[12:14] != b"\x86\xdd" or frame[14 + 6] != 43:
        return None
    srh = 14 + 40
    if frame[srh] != 4:
        return None
    inner = srh + (frame[srh + 1] + 1) * 8
    if len(frame) < inner + PSN_OFFSET - 14 + 3:
        return None
    off = inner + PSN_OFFSET - 14
    return int.from_bytes(frame[off:off + 3], "big")


def main():
    gwlib.need_tools("ip")
    nl.require_root_and_netns()
    work = gwlib.workdir("probe-failover")
    fab = Fabric()
    m = fab.mac
    dark = {"name": "dark", "selection": {"mode": "flow"}, "probe-sid": DARK_PROBE,
            "segment-list": [{"name": "x", "path-id": 9, "weight": 1, "sid": [T_SID[1], B_DX4]}]}
    gws = [start_gateway(fab, "gwa", work, "A",
                         gateway_config("A", m[("fa", "fa0")], m[("ha", "h0")], [dark],
                                        [{"id": 2, "prefix": "10.0.9.0/24", "policy": "dark"}]),
                         0),
           start_gateway(fab, "gwb", work, "B",
                         gateway_config("B", m[("fb", "fb0")], m[("hb", "h0")]), 1)]
    try:
        run(fab, gws)
    finally:
        for g in gws:
            if g["p"].poll() is None:
                g["p"].kill()


def run(fab, gws):
    m = fab.mac
    tx = nl.packet_socket(fab.ns["ha"], "h0")
    taps = {k: nl.packet_socket(fab.ns["fb"], f"fb{k}") for k in (1, 2)}
    hb = nl.packet_socket(fab.ns["hb"], "h0")
    seen = {1: [], 2: []}  # psn per tap, in arrival order
    received = set()
    stop = threading.Event()

    def tap(k):
        s = taps[k]
        s.settimeout(0.1)
        while not stop.is_set():
            try:
                data, addr = s.recvfrom(65535)
            except socket.timeout:
                continue
            if addr[2] == nl.PACKET_OUTGOING:
                continue
            psn = data_psn(data)
            if psn is not None:
                seen[k].append(psn)

    def sink():
        hb.settimeout(0.1)
        while not stop.is_set():
            try:
                data, addr = hb.recvfrom(65535)
            except socket.timeout:
                continue
            if addr[2] != nl.PACKET_OUTGOING and data[12:14] == b"\x08\x00" and \
                    len(data) >= PSN_OFFSET + 3:
                received.add(int.from_bytes(data[PSN_OFFSET:PSN_OFFSET + 3], "big"))

    threads = [threading.Thread(target=tap, args=(k,), daemon=True) for k in (1, 2)]
    threads.append(threading.Thread(target=sink, daemon=True))
    for t in threads:
        t.start()

    # One flow: SEND-only on one QP; the PSN is patched per packet (its ICRC is then stale:
    # nothing on this path checks it, and the test only counts PSNs).
    base = bytearray(rl.frame(rl.roce_ip_packet(4, HOST_A, HOST_B, rl.OP_SEND_ONLY, 0x4242, 0,
                                                tos=0x02, payload_len=128),
                              dst_mac=m[("gwa", "h")], src_mac=m[("ha", "h0")]))
    sent_at = {}
    next_psn = [0]

    def send_for(seconds):
        period = 1.0 / RATE_PPS
        t0 = time.monotonic()
        i = 0
        while True:
            due = t0 + i * period
            now = time.monotonic()
            if due - t0 >= seconds:
                break
            if due > now:
                time.sleep(due - now)
            psn = next_psn[0]
            base[PSN_OFFSET:PSN_OFFSET + 3] = psn.to_bytes(3, "big")
            sent_at[psn] = time.monotonic()
            tx.send(bytes(base))
            next_psn[0] += 1
            i += 1

    hold_down_s = PROBE["hold-down-us"] / 1e6
    time.sleep(0.5)  # probes settle (first answers, RTT samples)
    send_for(1.0)
    before = {k: len(seen[k]) for k in (1, 2)}
    victim = 1 if before[1] >= before[2] else 2
    other = 3 - victim
    log(f"before the cut: flow on path p{victim} ({before[victim]} frames; p{other} "
        f"{before[other]}); hb received {len(received)} of {next_psn[0]}")
    psn_cut = next_psn[0]
    t_cut = time.monotonic()
    fab.cut(victim)
    log(f"cut: link fa-t{victim} down at PSN {psn_cut}")
    send_for(1.5)
    psn_restore = next_psn[0]
    fab.setup_path(victim)
    t_restore = time.monotonic()
    log(f"restored: link fa-t{victim} up at PSN {psn_restore}")
    send_for(hold_down_s + 1.5)
    psn_end = next_psn[0]
    time.sleep(0.3)
    stop.set()
    for t in threads:
        t.join()
    stats_a, out_a, err_a = stop_gateway(gws[0])
    stats_b, out_b, err_b = stop_gateway(gws[1])

    problems = []
    # Acceptance 1: failover.
    rerouted = [p for p in seen[other] if psn_cut <= p < psn_restore]
    first_rerouted = min(rerouted) if rerouted else None
    lost = [p for p in range(psn_cut, psn_restore) if p not in received]
    probe_a = stats_a.get("engine", {}).get("probe", {})
    paths_a = {p["path_id"]: p for p in probe_a.get("paths", [])}
    bound_s = (PROBE["timeout-us"] + PROBE["loss-threshold"] * PROBE["interval-us"]) / 1e6
    bound = RATE_PPS * bound_s
    if first_rerouted is None:
        problems.append(f"no packet of the flow reached fb over p{other} after the cut")
    else:
        failover_ms = (sent_at[first_rerouted] - t_cut) * 1e3
        lost_before = sum(1 for p in lost if p < first_rerouted)
        log(f"failover: first packet on p{other} was PSN {first_rerouted}, sent "
            f"{failover_ms:.1f} ms after the cut; {lost_before} packets lost before it "
            f"(bound rate x (timeout + threshold x interval) = {bound:.0f}), {len(lost)} lost "
            f"in the whole cut phase of {psn_restore - psn_cut}")
        if lost_before > 4 * bound + 50:
            problems.append(f"{lost_before} packets lost before the failover, more than 4 x "
                            f"{bound:.0f} + 50")
        if len(lost) > lost_before + 5:
            problems.append(f"{len(lost) - lost_before} packets lost after the failover")
    # Acceptance 2: back after the hold-down, not before.
    back = [p for p in seen[victim] if p >= psn_restore]
    if not back:
        problems.append(f"the flow never returned to p{victim} after the restore")
    else:
        ret_s = sent_at[min(back)] - t_restore
        log(f"return: first packet on p{victim} again was PSN {min(back)}, sent {ret_s * 1e3:.0f} "
            f"ms after the restore (hold-down {hold_down_s * 1e3:.0f} ms)")
        if ret_s < hold_down_s * 0.9:
            problems.append(f"returned {ret_s * 1e3:.0f} ms after the restore, before the "
                            f"hold-down of {hold_down_s * 1e3:.0f} ms")
        if ret_s > hold_down_s + 1.0:
            problems.append(f"returned only {ret_s:.2f} s after the restore")
    tail = [p for p in range(psn_restore, psn_end) if p not in received]
    if len(tail) > 5:
        problems.append(f"{len(tail)} packets lost after the restore (the return must be "
                        "lossless)")
    # Probe statistics and events.
    for pid in sorted(paths_a):
        p = paths_a[pid]
        log(f"A probe path {pid} ({p['policy']}/{p['segment_list']}): {p['state']}, sent "
            f"{p['sent']} answered {p['answered']} lost {p['lost']} late {p['late']}, rtt "
            f"min/avg/p99 {p['rtt_min_ns'] / 1e3:.0f}/{p['rtt_avg_ns'] / 1e3:.0f}/"
            f"{p['rtt_p99_ns'] / 1e3:.0f} us")
    vp = paths_a.get(victim, {})
    if vp.get("state") != "up" or vp.get("answered", 0) == 0:
        problems.append(f"path {victim} should be up and answered at the end: {vp}")
    downs = [ln for ln in err_a.splitlines() if "probe: policy toB" in ln and " down:" in ln]
    ups = [ln for ln in err_a.splitlines() if "probe: policy toB" in ln and " up:" in ln]
    if len(downs) != 1 or len(ups) != 1:
        problems.append(f"expected one down and one up of toB's path {victim}, got "
                        f"{len(downs)} down, {len(ups)} up:\n" + "\n".join(downs + ups))
    if paths_a.get(other, {}).get("lost", 1) > 3:
        problems.append(f"the surviving path lost probes: {paths_a.get(other)}")
    engine_paths = {p["path_id"]: p for p in stats_a.get("engine", {}).get("paths", [])}
    # Acceptance 3: the remote that never answers.
    dp = paths_a.get(9, {})
    log(f"unanswered probe SID: path 9 {dp.get('state')}, sent {dp.get('sent')} answered "
        f"{dp.get('answered')} loss {dp.get('loss_ratio')}; engine factor "
        f"{engine_paths.get(9, {}).get('factor')}")
    if dp.get("state") != "down" or dp.get("answered") != 0 or not dp.get("sent"):
        problems.append(f"path 9 (probe SID nobody answers) should be down: {dp}")
    if engine_paths.get(9, {}).get("factor") != 0 or not engine_paths.get(9, {}).get("probe_down"):
        problems.append(f"the engine did not take path 9 out: {engine_paths.get(9)}")
    log(f"B: {json.dumps(stats_b.get('engine', {}).get('probe', {}).get('transitions_down'))} "
        f"down transitions of its own probes (its path over the cut link went down too)")
    if problems:
        rl.fail("\n".join(problems) + "\n--- A stderr tail ---\n" + err_a[-2500:])
    log("OK: probes took the cut path out, traffic failed over and came back after the "
        "hold-down; the unanswered path is down")


if __name__ == "__main__":
    rl.main_wrapper(main)
