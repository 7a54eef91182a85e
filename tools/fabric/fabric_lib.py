# SPDX-License-Identifier: BSD-3-Clause
# An emulated leaf-spine SRv6 fabric in network namespaces, with two srv6gw daemons as host
# gateways (docs/design/fabric.md has the picture):
#
#   hA ─ gA ─ L1 ═╤═ S1 ═╤═ L2 ─ gB ─ hB
#                 ├─ S2 ─┤
#                 └─ S3 ─┘
#
# - L1, L2 (leaves) and S1..Sn (spines) are Linux kernel IPv6 routers; every spine has a
#   seg6local End SID fc00:5:<i>::e. A segment list [fc00:5:<i>::e, <remote DX4 SID>] pins a
#   packet to spine i.
# - Each uplink L1 -> Si is rate-limited (HTB, FIFO of `limit_bytes`) with ECN marking in front
#   of the shaper (ecn_marker.bpf.c: step marking at `mark_bytes` of queue; this kernel has no
#   RED/fq_codel). Congestion therefore marks CE on the outer IPv6 header of SRv6 traffic, in
#   the kernel, on the packet path. The spines' downlinks and the reverse direction are not
#   shaped: CNPs come back unhindered.
# - gA and gB run srv6gw on net_af_packet ports (no kernel addresses, IPv6 off on their veths).
#   They start with ports, addresses and engine settings only; the controller step
#   (`push_policies`) gives them their policies, steering rules and local SIDs over gRPC with
#   srv6gw-ctl, as a central controller would.
# - hA sends RoCEv2 with roce-gen's DPDK transmit mode (net_af_packet) at a fixed rate;
#   hB runs roce-sink, which counts goodput, CE, loss and reordering from the PSNs, and
#   answers CE-marked packets with CNPs (at most one per QP per 50 us, like an RNIC's
#   notification point), which gB encapsulates back with the congested path id reflected.
import atexit
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time

sys.dont_write_bytecode = True
_HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.environ.get("SRV6GW_SRC") or os.path.abspath(os.path.join(_HERE, "..", ".."))
sys.path.insert(0, os.path.join(SRC, "tests", "interop"))
sys.path.insert(0, os.path.join(SRC, "tests", "integration"))
import gwlib  # noqa: E402
import netns_lib as nl  # noqa: E402
from netns_lib import rl  # noqa: E402

BUILD = os.environ.get("SRV6GW_BUILD") or os.path.join(SRC, "build")
GW_BIN = os.environ.get("SRV6GW_BIN") or os.path.join(BUILD, "apps", "srv6gw", "srv6gw")
CTL_BIN = os.environ.get("SRV6GW_CTL") or os.path.join(BUILD, "apps", "srv6gw-ctl", "srv6gw-ctl")
# balanced mode's idle gap in this fabric (see push_policies): above its worst queueing delay.
BALANCED_IDLE_GAP_US = 1000000
GEN_BIN = os.environ.get("ROCE_GEN") or os.path.join(BUILD, "tools", "roce-gen", "roce-gen")
SINK_BIN = os.environ.get("ROCE_SINK") or os.path.join(BUILD, "tools", "fabric", "roce-sink")
MARKER_SRC = os.path.join(_HERE, "ecn_marker.bpf.c")
gwlib.BIN = GW_BIN

HOST_A, HOST_B = "10.0.0.1", "10.0.1.1"
SID_A, SID_B = "fc00:a::d4", "fc00:b::d4"  # End.DX4 of gA and gB
# Path probing (issue 6): gA probes each list toward gB's end-probe SID; the replies come back
# over the same spine to gA's end-probe SID. Both are inside the prefixes the leaves route.
PROBE_SID_A, PROBE_SID_B = "fc00:a::9", "fc00:b::9"


def probing_available():
    """True when this source tree's gateway has path probing (the YANG module knows the
    end-probe behaviour): scenario (b) then runs its 'probe' variant."""
    with open(os.path.join(SRC, "config", "yang", "srv6gw.yang")) as f:
        return "end-probe" in f.read()


def spine_sid(i):
    return f"fc00:5:{i}::e"


# NEXT-C-SID (RFC 9800, "uSID"): block fcbb:bb00::/32, 16-bit micro-SIDs. Spine i is uN
# 0x10<i> (kernel End with flavor next-csid), gB's End.DX4 is uDX4 0xb4: a path over spine i
# is the single container fcbb:bb00:10<i>:b4:: in the destination address.
USID_BLOCK = "fcbb:bb00"
USID_FLAVOR = "flavors next-csid lblen 32 nflen 16"
USID_B = f"{USID_BLOCK}:b4::"


def spine_usid(i):
    return f"{USID_BLOCK}:{0x100 + i:x}::"


def log(msg):
    print(msg, flush=True)


def sh(cmd, check=True):
    return nl.sh(cmd, check=check)


def require_tools():
    """Exits 77 (with the reason) when this machine cannot build the fabric."""
    if os.geteuid() != 0:
        nl.skip("needs root (network namespaces, veth, tc, seg6local)")
    for tool in ("ip", "tc", "clang-14"):
        if subprocess.run(["which", tool], capture_output=True).returncode != 0:
            nl.skip(f"{tool} is not installed (tools/setup.sh installs it)")
    if not os.path.exists("/usr/include/bpf/bpf_helpers.h"):
        nl.skip("libbpf-dev is not installed (bpf_helpers.h; tools/setup.sh installs it)")
    for b in (GW_BIN, CTL_BIN, GEN_BIN, SINK_BIN):
        if not os.access(b, os.X_OK):
            rl.fail(f"{b} missing: build first (ninja -C build)")
    nl.require_root_and_netns()


class NamespacePlumbing:
    """Commands in the namespaces of a fabric: self.ns maps a role (node name) to its network
    namespace; the subclass provides cleanup(), run at exit and on a fatal signal."""

    def _cleanup_at_exit(self):
        atexit.register(self.cleanup)
        self._reap_dead_runs()
        for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            signal.signal(sig, self._on_signal)

    def _reap_dead_runs(self):
        """Deletes the namespaces a killed earlier run of this kind of fabric left (meson's
        SIGKILL after a timeout skips atexit): their root-namespace veths keep routes to the
        same management addresses and would steal this run's traffic. A namespace is this
        kind's when its name is this run's prefix with another run's tag; that run is dead
        when no live process has that tag (pid % 100000). Processes still inside (gateways
        whose parent died) are killed first, or the namespace would outlive its name."""
        mine = next(iter(self.ns.values()))
        m = re.match(r"^([a-z]+)(\d+)", mine)
        if not m:
            return
        prefix, tag = m.group(1), m.group(2)
        # Any count of spines or hosts: the digits of a role name are not part of its kind.
        roles = "|".join(sorted({re.sub(r"\d+", r"\\d+", re.escape(r)) for r in self.ns}))
        pattern = re.compile(rf"^{prefix}(\d+)({roles})$")
        live = {pid % 100000 for pid in (int(d) for d in os.listdir("/proc") if d.isdigit())}
        listed = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
        for line in listed.splitlines():
            name = line.split()[0] if line.split() else ""
            hit = pattern.match(name)
            if not hit or hit.group(1) == tag or int(hit.group(1)) in live:
                continue
            pids = subprocess.run(["ip", "netns", "pids", name], capture_output=True,
                                  text=True).stdout.split()
            for pid in pids:
                try:
                    os.kill(int(pid), signal.SIGKILL)
                except (ProcessLookupError, ValueError):
                    pass
            subprocess.run(["ip", "netns", "del", name], capture_output=True)
            print(f"removed namespace {name} left by a dead earlier run", file=sys.stderr)

    def _on_signal(self, signum, _frame):
        if signum == signal.SIGTERM:  # meson's timeout: say where the test hung
            nl.rl.report_hang(signum)
        self.cleanup()
        sys.exit(128 + signum)

    def ip(self, role, args, check=True):
        return sh(["ip", "-n", self.ns[role]] + args.split(), check=check)

    def sysctl(self, role, key, value):
        sh(["ip", "netns", "exec", self.ns[role], "sysctl", "-qw", f"{key}={value}"])

    def mac(self, role, dev):
        return json.loads(self.ip(role, f"-j link show dev {dev}").stdout)[0]["address"]

    def _link(self, a, dev_a, b, dev_b):
        sh(["ip", "-n", self.ns[a], "link", "add", dev_a, "type", "veth", "peer", "name", dev_b,
            "netns", self.ns[b]])
        self.ip(a, f"link set dev {dev_a} up")
        self.ip(b, f"link set dev {dev_b} up")


class Fabric(NamespacePlumbing):
    def __init__(self, work, spines=3, link_mbit=20.0, mark_bytes=100000, limit_bytes=400000):
        self.work = work
        self.spines = spines
        self.mark_bytes = mark_bytes
        self.limit_bytes = limit_bytes
        self.link_mbit = {i: link_mbit for i in range(1, spines + 1)}
        tag = os.getpid() % 100000
        self.roles = ["hA", "gA", "L1"] + [f"S{i}" for i in range(1, spines + 1)] + \
            ["L2", "gB", "hB"]
        self.ns = {r: f"fb{tag}{r}" for r in self.roles}
        self.created = []
        self.gateways = {}
        self._markers = {}
        self._shaped = set()
        self.usid_ok, self.usid_reason = True, ""
        self._cleanup_at_exit()
        self._build()

    # -- plumbing (NamespacePlumbing) ----------------------------------------------------------
    def tc(self, role, args, check=True):
        return sh(["ip", "netns", "exec", self.ns[role], "tc"] + args.split(), check=check)

    def _addr(self, role, dev, addr):
        self.ip(role, f"-6 addr add {addr}/64 dev {dev} nodad")

    def _neigh(self, role, dev, addr, mac):
        self.ip(role, f"neigh replace {addr} lladdr {mac} dev {dev} nud permanent")

    # -- topology ----------------------------------------------------------------------------
    def _build(self):
        for r in self.roles:
            sh(["ip", "netns", "add", self.ns[r]])
            self.created.append(self.ns[r])
            self.ip(r, "link set lo up")
            for key, value in (("net.ipv6.conf.default.accept_dad", 0),
                               ("net.ipv6.conf.all.accept_dad", 0)):
                self.sysctl(r, key, value)
            if r[0] in "LS":  # routers
                for key, value in (("net.ipv6.conf.all.forwarding", 1),
                                   ("net.ipv6.conf.all.seg6_enabled", 1),
                                   ("net.ipv6.conf.default.seg6_enabled", 1)):
                    self.sysctl(r, key, value)
            else:  # hosts and gateways: nothing of the kernel's own on the wire
                self.sysctl(r, "net.ipv6.conf.default.disable_ipv6", 1)
                self.sysctl(r, "net.ipv6.conf.all.disable_ipv6", 1)
        self._link("hA", "eth0", "gA", "host0")
        self._link("gA", "fab0", "L1", "gw0")
        self._link("L2", "gw0", "gB", "fab0")
        self._link("gB", "host0", "hB", "eth0")
        for i in range(1, self.spines + 1):
            self._link("L1", f"up{i}", f"S{i}", "dn1")
            self._link(f"S{i}", "dn2", "L2", f"up{i}")
        # Leaves <-> gateways: the gateways have no kernel address; the leaf reaches them
        # through a static neighbour with the gateway port's MAC.
        self._addr("L1", "gw0", "fc00:ff:a::1")
        self._neigh("L1", "gw0", "fc00:ff:a::2", self.mac("gA", "fab0"))
        self.ip("L1", "-6 route add fc00:a::/48 via fc00:ff:a::2 dev gw0")
        self._addr("L2", "gw0", "fc00:ff:b::1")
        self._neigh("L2", "gw0", "fc00:ff:b::2", self.mac("gB", "fab0"))
        self.ip("L2", "-6 route add fc00:b::/48 via fc00:ff:b::2 dev gw0")
        self.ip("L2", f"-6 route add {USID_B}/48 via fc00:ff:b::2 dev gw0")
        self._spine_macs = {}
        for i in range(1, self.spines + 1):
            self._spine_macs[i] = self._configure_spine_links(i)
            self.shape(i, self.link_mbit[i])

    def _configure_spine_links(self, i, macs=None):
        """Addresses, neighbours and routes of spine i's two links (idempotent: a link that
        went down lost them, and restoring it re-applies them). One `ip -batch` per
        namespace: on a loaded machine a dozen separate ip calls take seconds."""
        s = f"S{i}"
        up, down = f"fc00:ff:1{i}::", f"fc00:ff:2{i}::"
        if macs is None:
            macs = {"S_dn1": self.mac(s, "dn1"), "S_dn2": self.mac(s, "dn2"),
                    "L1_up": self.mac("L1", f"up{i}"), "L2_up": self.mac("L2", f"up{i}")}
        batches = {
            "L1": [f"addr replace {up}1/64 dev up{i} nodad",
                   f"neigh replace {up}2 lladdr {macs['S_dn1']} dev up{i} nud permanent",
                   f"route replace fc00:5:{i}::/48 via {up}2 dev up{i}",
                   f"route replace {spine_usid(i)}/48 via {up}2 dev up{i}"],
            s: [f"addr replace {up}2/64 dev dn1 nodad",
                f"addr replace {down}1/64 dev dn2 nodad",
                f"neigh replace {up}1 lladdr {macs['L1_up']} dev dn1 nud permanent",
                f"neigh replace {down}2 lladdr {macs['L2_up']} dev dn2 nud permanent",
                f"route replace {spine_sid(i)}/128 encap seg6local action End count dev dn1",
                f"route replace fc00:b::/48 via {down}2 dev dn2",
                f"route replace fc00:a::/48 via {up}1 dev dn1",
                f"route replace {USID_B}/48 via {down}2 dev dn2"],
            "L2": [f"addr replace {down}2/64 dev up{i} nodad",
                   f"neigh replace {down}1 lladdr {macs['S_dn2']} dev up{i} nud permanent",
                   f"route replace fc00:5:{i}::/48 via {down}1 dev up{i}"],
        }
        for role, lines in batches.items():
            r = subprocess.run(["ip", "-6", "-n", self.ns[role], "-batch", "-"],
                               input="\n".join(lines), capture_output=True, text=True)
            if r.returncode != 0:
                rl.fail(f"configuring spine {i} links in {role}: {r.stderr.strip()}")
        # uN (End with the NEXT-C-SID flavour) needs Linux 6.1+ and a matching iproute2:
        # without it the fabric still runs every SRH scenario.
        r = self.ip(s, f"-6 route replace {spine_usid(i)}/48 encap seg6local action End "
                       f"{USID_FLAVOR} count dev dn1", check=False)
        if r.returncode != 0:
            self.usid_ok = False
            self.usid_reason = f"spine {i} refused End {USID_FLAVOR}: {r.stderr.strip()}"
        return macs

    def _marker(self, rate_bps):
        obj = self._markers.get(rate_bps)
        if obj is None:
            obj = os.path.join(self.work, f"ecn_marker_{rate_bps}.o")
            sh(["clang-14", "-O2", "-g", "-Wall", "-Werror", "-target", "bpf",
                "-I/usr/include/x86_64-linux-gnu", f"-DRATE_BPS={rate_bps}ull",
                f"-DMARK_BYTES={self.mark_bytes}", f"-DLIMIT_BYTES={self.limit_bytes}",
                "-c", MARKER_SRC, "-o", obj])
            self._markers[rate_bps] = obj
        return obj

    def shape(self, i, mbit):
        """(Re)shapes uplink L1 -> Si to `mbit` Mbit/s with ECN marking. Changing the rate
        replaces the HTB class rate and the marker (its queue estimate restarts empty)."""
        dev = f"up{i}"
        rate_bps = int(mbit * 1e6)
        if i not in self._shaped:
            self._shaped.add(i)
            self.tc("L1", f"qdisc add dev {dev} root handle 1: htb default 10")
            self.tc("L1", f"class add dev {dev} parent 1: classid 1:10 htb rate {rate_bps}bit "
                          f"ceil {rate_bps}bit burst 3000 cburst 3000")
            self.tc("L1", f"qdisc add dev {dev} parent 1:10 handle 10: bfifo "
                          f"limit {self.limit_bytes}")
            self.tc("L1", f"qdisc add dev {dev} clsact")
            self.tc("L1", f"filter add dev {dev} egress pref 1 handle 1 bpf da "
                          f"obj {self._marker(rate_bps)} sec classifier")
        else:
            # Marker first: loading it (BPF verifier) takes a while on a busy machine, the
            # class change is instant. The other order would leave the old marker, blind to
            # the new rate, in front of the slower shaper for that while.
            self.tc("L1", f"filter replace dev {dev} egress pref 1 handle 1 bpf da "
                          f"obj {self._marker(rate_bps)} sec classifier")
            self.tc("L1", f"class change dev {dev} parent 1: classid 1:10 htb rate {rate_bps}bit "
                          f"ceil {rate_bps}bit burst 3000 cburst 3000")
        self.link_mbit[i] = mbit

    def cut(self, i, down=True):
        """Link cut between L1 and Si (both ends down), or its restoration (both up, and
        the addresses and routes the kernel removed with the link put back)."""
        state = "down" if down else "up"
        self.ip("L1", f"link set dev up{i} {state}")
        self.ip(f"S{i}", f"link set dev dn1 {state}")
        if not down:
            self._configure_spine_links(i, self._spine_macs[i])

    # -- counters ----------------------------------------------------------------------------
    def uplink_counters(self):
        """{i: (tx_packets, tx_bytes)} of L1's uplinks, read from /proc/net/dev in L1."""
        with nl.open_in_netns(self.ns["L1"]):
            with open("/proc/thread-self/net/dev") as f:
                lines = f.readlines()[2:]
        out = {}
        for line in lines:
            name, data = line.split(":", 1)
            name = name.strip()
            if name.startswith("up"):
                v = data.split()
                out[int(name[2:])] = (int(v[9]), int(v[8]))
        return out

    def uplink_drops(self):
        """{i: packets the uplink's FIFO dropped}."""
        out = {}
        for i in range(1, self.spines + 1):
            r = self.tc("L1", f"-s -j qdisc show dev up{i}")
            for q in json.loads(r.stdout):
                if q.get("kind") == "bfifo":
                    out[i] = q.get("drops", 0)
        return out

    def spine_end_packets(self, usid=False):
        """{i: packets spine i's End (or uN) SID processed} (seg6local 'count')."""
        out = {}
        for i in range(1, self.spines + 1):
            prefix = f"{spine_usid(i)}/48" if usid else spine_sid(i)
            r = self.ip(f"S{i}", f"-s -6 route show {prefix}")
            words = r.stdout.split()
            out[i] = int(words[words.index("packets") + 1]) if "packets" in words else 0
        return out

    # -- gateways ----------------------------------------------------------------------------
    def start_gateways(self, engine=True, reflect=True, engine_params=None, probe=None):
        """Starts gA and gB with a base configuration (no policies: the controller pushes
        them). gA's worker runs on lcore 1, gB's on lcore 0. `probe`: the gateway-level
        probe container (YANG names), for gateways that have path probing."""
        self.stop_gateways()
        eng = {"enabled": engine, "reflect": reflect}
        eng.update(engine_params or {})
        # path-id-in-source writes the path id into the low 16 source bits (docs/design/engine.md):
        # the source must end in 16 zero bits (fc00:a::/48 is routed to gA either way).
        host_part = "" if eng.get("path-id-in-source") else "1"
        specs = {
            "A": ("gA", "hA", f"fc00:a::{host_part}", 0),
            "B": ("gB", "hB", f"fc00:b::{host_part}", 1),
        }
        for name, (role, host, source, main_lcore) in specs.items():
            leaf = "L1" if name == "A" else "L2"
            cfg = {"srv6gw:gateway": {
                "ports": {"host": "net_af_packet0", "fabric": "net_af_packet1", "queues": 1,
                          "mbufs": 8191, "fabric-nexthop-mac": self.mac(leaf, "gw0"),
                          "host-mac": self.mac(host, "eth0")},
                "source-address": source,
                "engine": eng,
                "actions": {"steering-miss": "drop", "non-roce": "drop",
                            "fabric-non-sid": "drop"},
                "stats-interval-ms": 0,
            }}
            if probe:
                cfg["srv6gw:gateway"]["probe"] = probe
            cfg_path = os.path.join(self.work, f"g{name}.json")
            with open(cfg_path, "w") as f:
                json.dump(cfg, f, indent=2)
            sock = os.path.join(self.work, f"g{name}.sock")
            state = os.path.join(self.work, f"g{name}-state.json")
            for p in (sock, state):
                if os.path.exists(p):
                    os.unlink(p)
            prefix = gwlib.unique_prefix(f"fabric_{name}")
            err_path = os.path.join(self.work, f"g{name}-stderr.txt")
            stats_json = os.path.join(self.work, f"g{name}-stats.json")
            eal = gwlib.eal_args(prefix, ["net_af_packet0,iface=host0,qpairs=1",
                                          "net_af_packet1,iface=fab0,qpairs=1"])
            eal += ["--main-lcore", str(main_lcore)]
            with open(err_path, "w") as err_f, nl.open_in_netns(self.ns[role]):
                p = gwlib.start(eal, ["--config", cfg_path, "--stats-json", stats_json,
                                      "--agent-listen", f"unix:{sock}", "--agent-state", state],
                                stdout=subprocess.DEVNULL, stderr=err_f)
            self.gateways[name] = {"p": p, "sock": sock, "err": err_path, "stats": stats_json}
        for name, g in self.gateways.items():
            deadline = time.monotonic() + 40
            while True:
                with open(g["err"]) as f:
                    err = f.read()
                if "worker 0 on lcore" in err and os.path.exists(g["sock"]):
                    r = subprocess.run([CTL_BIN, "--socket", g["sock"], "health"],
                                       capture_output=True, text=True)
                    if r.returncode == 0:
                        break
                if g["p"].poll() is not None or time.monotonic() > deadline:
                    rl.fail(f"gateway {name} did not start (exit {g['p'].poll()}):\n"
                            f"{err[-3000:]}")
                time.sleep(0.2)

    def ctl(self, name, args, check=True):
        r = subprocess.run([CTL_BIN, "--socket", self.gateways[name]["sock"]] + args,
                           capture_output=True, text=True, timeout=30)
        if check and r.returncode != 0:
            rl.fail(f"srv6gw-ctl {' '.join(args)} on g{name}: {r.stderr.strip()}")
        return r

    def push_policies(self, mode="flow", flowlet_gap_us=None, spines=None, usid=False,
                      probe=False):
        """The controller step: policies, steering and local SIDs over gRPC (srv6gw-ctl
        apply), one atomic batch per gateway. gA's lists go over spines 1..n (path ids
        1..n); gB's return lists (CNPs) likewise with path ids 101... With `usid`, gA's
        policy is NEXT-C-SID (one container in the destination address, no SRH: the path
        id rides in the outer source when the gateways run with engine path-id-in-source,
        and gB reflects it in the Tag of its SRH return lists). With `probe`, gA probes every list
        of toB toward gB's end-probe SID, and both gateways get an end-probe SID."""
        spines = spines or list(range(1, self.spines + 1))
        if usid and not self.usid_ok:
            nl.skip(f"no uSID paths on this kernel: {self.usid_reason}")
        selection = {"mode": f"SELECTION_MODE_{mode.upper()}"}
        if flowlet_gap_us is not None:
            selection["flowlet_gap_us"] = flowlet_gap_us
        if mode == "balanced":
            # This fabric runs ~1000x slower than a real one (20 Mbit/s links, queues of up
            # to 200 ms, a QP sends every few ms): the idle gap scales with it, or every
            # packet would start a new placement and overtake the queued ones.
            selection["idle_gap_us"] = BALANCED_IDLE_GAP_US
        a_lists = [(f"s{i}", i, [spine_usid(i), USID_B] if usid else [spine_sid(i), SID_B])
                   for i in spines]
        batches = {
            "A": ("toB", selection, a_lists, "10.0.1.0/24", SID_A),
            "B": ("toA", {"mode": "SELECTION_MODE_FLOW"},
                  [(f"s{i}", 100 + i, [spine_sid(i), SID_A]) for i in spines],
                  "10.0.0.0/24", SID_B),
        }
        for name, (policy, sel, lists, prefix, local_sid) in batches.items():
            pol = {"name": policy, "color": 1, "selection": sel,
                   "segment_lists": [{"name": n, "path_id": pid, "weight": 1, "sids": sids}
                                     for n, pid, sids in lists]}
            if probe and name == "A":
                pol["probe_sid"] = PROBE_SID_B
            if usid and name == "A":
                pol["encap"] = "ENCAP_MODE_USID"
                pol["usid_format"] = {"block_bits": 32, "usid_bits": 16}
            changes = {"changes": [
                {"upsert_policy": pol},
                {"upsert_steering": {"id": 1, "prefix": prefix, "policy": policy}},
                {"upsert_local_sid": {"sid": local_sid,
                                      "behavior": "LOCAL_SID_BEHAVIOR_END_DX4"}},
            ]}
            if name == "B":  # gB answers on both: uSID traffic ends on its uDX4
                changes["changes"].append({"upsert_local_sid": {
                    "sid": USID_B, "behavior": "LOCAL_SID_BEHAVIOR_END_DX4"}})
            if probe:
                changes["changes"].append({"upsert_local_sid": {
                    "sid": PROBE_SID_A if name == "A" else PROBE_SID_B,
                    "behavior": "LOCAL_SID_BEHAVIOR_END_PROBE"}})
            path = os.path.join(self.work, f"changes-{name}.json")
            with open(path, "w") as f:
                json.dump(changes, f, indent=2)
            self.ctl(name, ["apply", "-f", path])

    def gateway_stats(self, name):
        return json.loads(self.ctl(name, ["--json", "stats"]).stdout)

    def path_packets(self, name="A"):
        """{path_id: packets} from the gateway's GetStats."""
        st = self.gateway_stats(name)
        out = {}
        for pol in st.get("policies", []):
            for p in pol.get("paths", []):
                out[int(p.get("path_id", 0))] = int(p.get("packets", 0))
        return out

    def stop_gateways(self):
        results = {}
        for name, g in list(self.gateways.items()):
            if g["p"].poll() is None:
                g["p"].send_signal(signal.SIGTERM)
                try:
                    g["p"].wait(timeout=20)
                except subprocess.TimeoutExpired:
                    g["p"].kill()
                    g["p"].wait()
            try:
                with open(g["stats"]) as f:
                    results[name] = json.load(f)
            except (OSError, ValueError):
                results[name] = {}
        self.gateways.clear()
        return results

    # -- traffic -----------------------------------------------------------------------------
    def start_generator(self, rate_mbit, duration_s, qps=16, size=1024, seed=1, opcodes="writes"):
        """roce-gen's DPDK transmit mode in hA (net_af_packet on eth0), in the background."""
        report = os.path.join(self.work, f"gen-{seed}-{time.monotonic_ns()}.json")
        prefix = gwlib.unique_prefix("fabric_gen")
        cmd = ["ip", "netns", "exec", self.ns["hA"], GEN_BIN, "-l", "0", "--no-huge",
               "--no-shconf", "--file-prefix", prefix, "--no-pci", "-m", "256",
               "--log-level", "lib.eal:warning", "--vdev", "net_af_packet0,iface=eth0",
               "--", "--tx-port", "net_af_packet0", "--rate-mbps", str(rate_mbit),
               "--duration", str(duration_s), "--hosts", "1", "--qps", str(qps),
               "--remote-hosts", "1", "--size", str(size), "--opcodes", opcodes,
               "--seed", str(seed), "--src-base", HOST_A, "--dst-base", HOST_B,
               "--src-mac", self.mac("hA", "eth0"), "--dst-mac", self.mac("gA", "host0"),
               "--report-json", report, "--quiet"]
        p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        return p, report

    def precompile(self, mbit):
        """Builds the marker for a rate ahead of time (clang takes a while on a busy
        machine: a rate change during a measured phase must be instant)."""
        self._marker(int(mbit * 1e6))

    @staticmethod
    def stop_generator(gen, timeout=30):
        """Ends the generator (SIGTERM: it stops after the current burst and reports)."""
        p, report = gen
        if p.poll() is None:
            p.send_signal(signal.SIGTERM)
        try:
            _, err = p.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            p.kill()
            rl.fail("roce-gen did not finish in time")
        if p.returncode != 0:
            rl.fail(f"roce-gen exit {p.returncode}: {err[-2000:]}")
        with open(report) as f:
            return json.load(f)

    def cleanup(self):
        try:
            self.stop_gateways()
        except Exception:  # noqa: BLE001 - cleanup must go on
            pass
        while self.created:
            subprocess.run(["ip", "netns", "del", self.created.pop()], capture_output=True)


class Receiver:
    """Host B: roce-sink (roce_sink.cpp) on hB's eth0 counts RoCE frames per 100 ms bin
    (frames, bytes, CE, late PSNs, PSN advance) and answers CE with CNPs toward gB."""

    def __init__(self, fabric, bin_ms=100, cnp_gap_us=50, answer_ce=True):
        self.path = os.path.join(fabric.work, f"sink-{time.monotonic_ns()}.txt")
        self.bin_s = bin_ms / 1000
        cmd = ["ip", "netns", "exec", fabric.ns["hB"], SINK_BIN, "--iface", "eth0",
               "--out", self.path, "--gw-mac", fabric.mac("gB", "host0"),
               "--cnp-gap-us", str(cnp_gap_us), "--bin-ms", str(bin_ms)]
        if not answer_ce:
            cmd.append("--no-cnp")
        self.p = subprocess.Popen(cmd, stderr=subprocess.PIPE, text=True)
        deadline = time.monotonic() + 30
        while not os.path.exists(self.path):
            if self.p.poll() is not None or time.monotonic() > deadline:
                if self.p.poll() is None:  # still running: its stderr would block the read
                    self.p.kill()
                    self.p.wait()
                rl.fail(f"roce-sink did not start within 30 s: {self.p.stderr.read()}")
            time.sleep(0.05)
        self.t0 = time.monotonic()

    def stop(self):
        self.p.send_signal(signal.SIGTERM)
        try:
            self.p.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.p.kill()
            self.p.wait()

    def wait_traffic(self, timeout):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if any(b[1] > 0 for b in self.bins()):
                return
            time.sleep(0.1)
        rl.fail(f"no RoCE frame reached host B within {timeout} s")

    def bins(self):
        """[(t_end, frames, bytes, ce, late, psn_advance, cnps)]"""
        out = []
        with open(self.path) as f:
            for line in f:
                if line.startswith("#") or not line.strip():
                    continue
                v = line.split()
                out.append((float(v[0]),) + tuple(int(x) for x in v[1:]))
        return out


def window_metrics(bins, t_start, t_end):
    """Goodput, CE, loss and reordering at the receiver between two monotonic times."""
    sel = [b for b in bins if t_start < b[0] <= t_end]
    frames = sum(b[1] for b in sel)
    nbytes = sum(b[2] for b in sel)
    ce = sum(b[3] for b in sel)
    late = sum(b[4] for b in sel)
    advance = sum(b[5] for b in sel)
    dt = max(t_end - t_start, 1e-9)
    return {
        "seconds": round(dt, 3),
        "goodput_mbit": round(nbytes * 8 / dt / 1e6, 3),
        # What the sender sent in this window (PSN advance at the mean received frame size):
        # the generator's own average covers its whole run, stalls included.
        "offered_mbit": round(advance * (nbytes / frames) * 8 / dt / 1e6, 3) if frames else 0.0,
        "received": frames,
        "ce_fraction": round(ce / frames, 4) if frames else 0.0,
        "late_fraction": round(late / frames, 5) if frames else 0.0,
        # A late frame was counted in the PSN advance when a later one overtook it.
        "loss_fraction": round(max(0.0, 1 - frames / advance), 4) if advance else 0.0,
        "cnps": sum(b[6] for b in sel),
    }


def share_metrics(up_before, up_after):
    tx = {i: up_after[i][0] - up_before[i][0] for i in up_after}
    total = sum(tx.values())
    return {"uplink_packets": tx,
            "uplink_shares": {i: round(v / total, 4) if total else 0.0 for i, v in tx.items()}}


class UplinkSampler:
    """Samples, every `period_s`, L1's uplink TX counters (what each spine link delivered)
    and gA's per-path packet counters over gRPC (what the gateway sent on each path)."""

    def __init__(self, fabric, period_s=0.2):
        self.fabric = fabric
        self.period_s = period_s
        self.samples = []
        self.t0 = time.monotonic()
        self.stop_flag = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self):
        while not self.stop_flag.is_set():
            try:
                paths = self.fabric.path_packets("A")
            except Exception:  # noqa: BLE001 - a missed sample is not a failure
                paths = None
            try:
                uplinks = self.fabric.uplink_counters()
            except OSError:  # the fabric is being torn down (a failed run): stop quietly
                return
            self.samples.append((time.monotonic() - self.t0, uplinks, paths))
            self.stop_flag.wait(self.period_s)

    def stop(self):
        self.stop_flag.set()
        self.thread.join()

    def rates(self):
        """[(t, {i: uplink Mbit/s}, {path_id: gA packets/s})] between consecutive samples."""
        out = []
        for (t0, c0, p0), (t1, c1, p1) in zip(self.samples, self.samples[1:]):
            dt = max(t1 - t0, 1e-9)
            paths = {p: (p1[p] - p0.get(p, 0)) / dt for p in p1} if p0 and p1 else {}
            out.append((t1, {i: (c1[i][1] - c0[i][1]) * 8 / dt / 1e6 for i in c1}, paths))
        return out
