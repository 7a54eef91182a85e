# SPDX-License-Identifier: BSD-3-Clause
# A 2-leaf x N-spine SRv6 fabric with several hosts per leaf, each behind its own srv6gw
# daemon, for the controller (docs/design/controller.md). Built from fabric_lib's pieces (the same
# kernel spines with seg6local End + count, net_af_packet gateways, roce-gen, roce-sink):
#
#   hA1 ─ gA1 ─┐            ┌─ S1 ─┐            ┌─ gB1 ─ hB1
#              ├─ L1 ═══════┼─ S2 ─┼═══════ L2 ─┤
#   hA2 ─ gA2 ─┘            └─ S3 ─┘            └─ gB2 ─ hB2
#
# - Gateway <side><k> (side A on leaf L1, B on L2) owns locator fc00:<side>:<k>::/48: source
#   ::1, End.DX4 ::d4 (to its host), end-probe ::f. Spines route fc00:a::/32 to L1 and
#   fc00:b::/32 to L2; leaves route each gateway's /48 to it and each spine SID to the spine.
# - Hosts: hA<k> = 10.0.0.<k>, hB<k> = 10.0.1.<k>.
# - Each gateway's agent listens on TCP with mutual TLS on a management veth to the root
#   namespace (100.64.<n>.2:50051 from 100.64.<n>.1), where the controller runs; the
#   gateways start with ports and addresses only: everything else comes from the controller.
# - topology_json() describes exactly this fabric for lib/pathalg (srv6gw-topology YANG).
import json
import os
import re
import signal
import subprocess
import sys
import time

sys.dont_write_bytecode = True
_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, _HERE)
import fabric_lib as fl  # noqa: E402
from fabric_lib import gwlib, nl, rl, sh  # noqa: E402

CONTROLLER_BIN = os.environ.get("SRV6GW_CONTROLLER") or os.path.join(
    fl.BUILD, "apps", "srv6gw-controller", "srv6gw-controller")
AGENT_PORT = 50051
# Probes every 10 ms, lost after 300 ms, 3 lost = down, 0.5 s hold-down. Four busy-polling
# gateways on two cores, with other work beside them, answer late: at load 20-30 gA1 saw RTTs
# of 21 ms on average and 74 ms at p99, and 22 % of its probes missed a 50 ms timeout, so
# every path of every policy went down and up again and the controller took spine links out
# that worked (the test then failed on the plan it made). A cut is still seen ~0.3 s after
# it happens, well inside controller-fabric's 5 s cut.
PROBE = {"interval-us": 10000, "timeout-us": 300000, "loss-threshold": 3,
         "hold-down-us": 500000}


spine_sid = fl.spine_sid


class Gw:
    def __init__(self, side, k, index):
        self.side, self.k, self.index = side, k, index
        self.name = f"g{side}{k}"         # namespace role of the daemon
        self.host = f"h{side}{k}"         # the host behind it (topology name)
        self.leaf = "L1" if side == "A" else "L2"
        loc = f"fc00:{side.lower()}:{k}"
        self.locator = f"{loc}::/48"
        self.source = f"{loc}::1"
        self.dx4 = f"{loc}::d4"
        self.probe_sid = f"{loc}::f"
        self.address = f"10.0.{0 if side == 'A' else 1}.{k}"
        self.mgmt_root = f"100.64.{index}.1"
        self.mgmt_gw = f"100.64.{index}.2"
        self.agent = f"{self.mgmt_gw}:{AGENT_PORT}"


class LeafSpineFabric(fl.NamespacePlumbing):
    def __init__(self, work, spines=3, hosts_per_leaf=2, certs=None):
        self.work = work
        self.spines = spines
        self.certs = certs  # directory of make_test_certs.sh output (TLS agents); None = unix
        tag = os.getpid() % 100000
        self.tag = tag
        self.gws = [Gw(side, k, 1 + i * hosts_per_leaf + (k - 1))
                    for i, side in enumerate("AB") for k in range(1, hosts_per_leaf + 1)]
        self.roles = [g.host for g in self.gws] + [g.name for g in self.gws] + \
            ["L1", "L2"] + [f"S{i}" for i in range(1, spines + 1)]
        self.ns = {r: f"ls{tag}{r}" for r in self.roles}
        self.created = []
        self.root_links = []
        self.daemons = {}
        self._cleanup_at_exit()
        self._build()

    # -- plumbing (ip, sysctl, mac, _link: fl.NamespacePlumbing) ------------------------------
    def _batch(self, role, lines):
        r = subprocess.run(["ip", "-6", "-n", self.ns[role], "-batch", "-"],
                           input="\n".join(lines),
                           capture_output=True, text=True)
        if r.returncode != 0:
            rl.fail(f"configuring {role}: {r.stderr.strip()}")

    def _build(self):
        for r in self.roles:
            sh(["ip", "netns", "add", self.ns[r]])
            self.created.append(self.ns[r])
            self.ip(r, "link set lo up")
            self.sysctl(r, "net.ipv6.conf.all.accept_dad", 0)
            self.sysctl(r, "net.ipv6.conf.default.accept_dad", 0)
            if r[0] in "LS":
                for key in ("net.ipv6.conf.all.forwarding", "net.ipv6.conf.all.seg6_enabled",
                            "net.ipv6.conf.default.seg6_enabled"):
                    self.sysctl(r, key, 1)
            else:
                self.sysctl(r, "net.ipv6.conf.default.disable_ipv6", 1)
                self.sysctl(r, "net.ipv6.conf.all.disable_ipv6", 1)
        leaf_lines = {"L1": [], "L2": []}
        for g in self.gws:
            self._link(g.host, "eth0", g.name, "host0")
            self._link(g.name, "fab0", g.leaf, f"gw{g.k}")
            net = f"fc00:ff:{g.side.lower()}{g.k}::"
            leaf_lines[g.leaf] += [
                f"addr add {net}1/64 dev gw{g.k} nodad",
                f"neigh replace {net}2 lladdr {self.mac(g.name, 'fab0')} dev gw{g.k} "
                f"nud permanent",
                f"route add {g.locator} via {net}2 dev gw{g.k}"]
            # Management: root <-> gateway namespace, IPv4 only (the agent's TCP + TLS).
            root_dev = f"cm{self.tag}{g.index}"
            sh(["ip", "link", "add", root_dev, "type", "veth", "peer", "name", "mgmt0",
                "netns", self.ns[g.name]])
            self.root_links.append(root_dev)
            sh(["ip", "addr", "add", f"{g.mgmt_root}/30", "dev", root_dev])
            sh(["ip", "link", "set", root_dev, "up"])
            self.ip(g.name, f"addr add {g.mgmt_gw}/30 dev mgmt0")
            self.ip(g.name, "link set mgmt0 up")
        for i in range(1, self.spines + 1):
            s = f"S{i}"
            self._link("L1", f"up{i}", s, "dn1")
            self._link(s, "dn2", "L2", f"up{i}")
        self._spine_macs = {i: {"S_dn1": self.mac(f"S{i}", "dn1"), "S_dn2": self.mac(f"S{i}", "dn2"),
                                "L1_up": self.mac("L1", f"up{i}"),
                                "L2_up": self.mac("L2", f"up{i}")}
                            for i in range(1, self.spines + 1)}
        for leaf, lines in leaf_lines.items():
            self._batch(leaf, lines)
        for i in range(1, self.spines + 1):
            self._configure_spine(i)

    def _configure_spine(self, i):
        """Addresses, neighbours and routes of spine i's links (again after a restore: a link
        that went down lost them)."""
        s, m = f"S{i}", self._spine_macs[i]
        up, down = f"fc00:ff:1{i}::", f"fc00:ff:2{i}::"
        self._batch("L1", [f"addr replace {up}1/64 dev up{i} nodad",
                           f"neigh replace {up}2 lladdr {m['S_dn1']} dev up{i} nud permanent",
                           f"route replace fc00:5:{i}::/48 via {up}2 dev up{i}"])
        self._batch(s, [f"addr replace {up}2/64 dev dn1 nodad",
                        f"addr replace {down}1/64 dev dn2 nodad",
                        f"neigh replace {up}1 lladdr {m['L1_up']} dev dn1 nud permanent",
                        f"neigh replace {down}2 lladdr {m['L2_up']} dev dn2 nud permanent",
                        f"route replace {spine_sid(i)}/128 encap seg6local action End "
                        f"count dev dn1",
                        f"route replace fc00:a::/32 via {up}1 dev dn1",
                        f"route replace fc00:b::/32 via {down}2 dev dn2"])
        self._batch("L2", [f"addr replace {down}2/64 dev up{i} nodad",
                           f"neigh replace {down}1 lladdr {m['S_dn2']} dev up{i} "
                           f"nud permanent",
                           f"route replace fc00:5:{i}::/48 via {down}1 dev up{i}"])

    def cut(self, i, down=True):
        """Link L1 -- Si down at both ends, or back up (addresses and routes put back)."""
        state = "down" if down else "up"
        self.ip("L1", f"link set dev up{i} {state}")
        self.ip(f"S{i}", f"link set dev dn1 {state}")
        if not down:
            self._configure_spine(i)

    def spine_end_counters(self):
        """{i: (packets, bytes)} spine i's End SID processed (seg6local count)."""
        out = {}
        for i in range(1, self.spines + 1):
            words = self.ip(f"S{i}", f"-s -6 route show {spine_sid(i)}").stdout.split()
            get = (lambda k: int(words[words.index(k) + 1]) if k in words else 0)
            out[i] = (get("packets"), get("bytes"))
        return out

    def count_forward_data(self):
        """Makes spine_data_counters() count, on each spine, exactly the gateways' data it
        forwards from L1 to L2: an HTB root on Si's dn2 (toward L2) whose one class, far above
        any rate here, takes what a u32 filter picks: outer IPv6 whose SRH carries IPv4 (SRH
        next header 4 right after the 40-byte header), or IPv4 in IPv6 without an SRH. That is
        the gateways' encapsulated RoCEv2 (End.DX4 destinations). Path probes (SRH next header
        UDP) are not counted, their replies leave by dn1, and the rest takes HTB's direct
        queue uncounted (seg6local's End counters count all of it, probes both ways)."""
        for i in range(1, self.spines + 1):
            tc = ["ip", "netns", "exec", self.ns[f"S{i}"], "tc"]
            sh(tc + "qdisc add dev dn2 root handle 1: htb default 0".split())
            sh(tc + "class add dev dn2 parent 1: classid 1:10 htb rate 10gbit ceil 10gbit "
                    "burst 64k cburst 64k quantum 1514".split())
            sh(tc + "filter add dev dn2 parent 1: pref 1 protocol ipv6 u32 match u8 43 0xff "
                    "at 6 match u8 4 0xff at 40 flowid 1:10".split())
            sh(tc + "filter add dev dn2 parent 1: pref 2 protocol ipv6 u32 match u8 4 0xff "
                    "at 6 flowid 1:10".split())

    def spine_data_counters(self):
        """{i: (packets, bytes)} of gateway data spine i forwarded from L1 to L2 (after
        count_forward_data())."""
        out = {}
        for i in range(1, self.spines + 1):
            r = sh(["ip", "netns", "exec", self.ns[f"S{i}"], "tc", "-s", "class", "show",
                    "dev", "dn2", "classid", "1:10"])
            m = re.search(r"Sent (\d+) bytes (\d+) pkt", r.stdout)
            if not m:
                rl.fail(f"S{i}: no data class counters on dn2: {r.stdout.strip()}")
            out[i] = (int(m.group(2)), int(m.group(1)))
        return out

    # -- topology for lib/pathalg ------------------------------------------------------------
    def topology_json(self, link_gbps=100, host_gbps=None):
        """host_gbps: the hosts' access links (default link_gbps)."""
        switches = [{"name": "L1", "role": "leaf"}, {"name": "L2", "role": "leaf"}] + \
            [{"name": f"S{i}", "role": "spine", "sid": spine_sid(i)}
             for i in range(1, self.spines + 1)]
        hosts = [{"name": g.host, "address": g.address, "gateway": {
            "source-address": g.source, "locator": g.locator, "decap-sid": g.dx4,
            "decap-behavior": "end-dx4", "probe-sid": g.probe_sid,
            "agent": g.agent if self.certs else "unix:" + self.sock(g)}} for g in self.gws]
        links = [{"a": g.host, "b": g.leaf, "member-gbps": str(host_gbps or link_gbps)}
                 for g in self.gws]
        for i in range(1, self.spines + 1):
            links += [{"a": "L1", "b": f"S{i}", "member-gbps": str(link_gbps)},
                      {"a": f"S{i}", "b": "L2", "member-gbps": str(link_gbps)}]
        return {"srv6gw-topology:topology": {
            "name": f"emulated 2 leaves x {self.spines} spines x {len(self.gws) // 2} hosts",
            "switches": {"switch": switches}, "hosts": {"host": hosts},
            "links": {"link": links}}}

    def link_name(self, a, b):
        return f"{a}--{b}"

    # -- gateways ----------------------------------------------------------------------------
    def sock(self, g):
        return os.path.join(self.work, f"{g.name}.sock")

    def start_gateways(self, engine_params=None, probe=None, workers_share_cpu=False):
        """Every gateway with ports, addresses, probe timing (`probe`, default PROBE) and
        engine settings only (the controller pushes the rest). Workers alternate between
        lcores 1 and 0, or with `workers_share_cpu` all run on lcore 1 (main lcore 0 for
        every gateway): four busy-polling workers on both CPUs of a 2-CPU machine starved
        kernel threads (a CI run: kdamond held the mm lock for over 120 s while it waited for
        a CPU, and the controller started by the test blocked in mprotect), so tests that need
        correctness rather than throughput leave CPU 0 to the kernel and the control threads."""
        for n, g in enumerate(self.gws):
            eng = {"enabled": True}
            eng.update(engine_params or {})
            cfg = {"srv6gw:gateway": {
                "ports": {"host": "net_af_packet0", "fabric": "net_af_packet1", "queues": 1,
                          "mbufs": 4095, "fabric-nexthop-mac": self.mac(g.leaf, f"gw{g.k}"),
                          "host-mac": self.mac(g.host, "eth0")},
                "source-address": g.source,
                "engine": eng,
                "probe": probe or PROBE,
                "actions": {"steering-miss": "drop", "non-roce": "drop",
                            "fabric-non-sid": "drop"},
                "stats-interval-ms": 0,
            }}
            cfg_path = os.path.join(self.work, f"{g.name}.json")
            with open(cfg_path, "w") as f:
                json.dump(cfg, f, indent=2)
            if self.certs:
                agent = ["--agent-listen", g.agent,
                         "--agent-tls-cert", os.path.join(self.certs, "server.pem"),
                         "--agent-tls-key", os.path.join(self.certs, "server.key"),
                         "--agent-tls-client-ca", os.path.join(self.certs, "ca.pem")]
            else:
                agent = ["--agent-listen", "unix:" + self.sock(g)]
            state = os.path.join(self.work, f"{g.name}-state.json")
            prefix = gwlib.unique_prefix(f"ls_{g.name}")
            eal = gwlib.eal_args(prefix, ["net_af_packet0,iface=host0,qpairs=1",
                                          "net_af_packet1,iface=fab0,qpairs=1"])
            eal += ["--main-lcore", "0" if workers_share_cpu else str(n % 2)]
            stats = os.path.join(self.work, f"{g.name}-stats.json")
            d = gwlib.start_logged(g.name, self.work, eal,
                                   ["--config", cfg_path, "--stats-json", stats,
                                    "--agent-state", state] + agent,
                                   enter=nl.open_in_netns(self.ns[g.name]), timeout=180)
            d["stats"] = stats
            self.daemons[g.name] = d

    def ctl_args(self, g):
        if self.certs:
            return [fl.CTL_BIN, "--target", g.agent, "--ca", os.path.join(self.certs, "ca.pem"),
                    "--cert", os.path.join(self.certs, "client.pem"),
                    "--key", os.path.join(self.certs, "client.key"),
                    "--tls-server-name", "localhost"]
        return [fl.CTL_BIN, "--socket", self.sock(g)]

    def ctl(self, g, args, check=True, timeout=30):
        # A call whose connection failed never reached the gateway ("failed to connect":
        # under load the TLS handshake with a gateway whose gRPC threads wait for a core has
        # timed out) is made again, up to three times.
        for attempt in range(3):
            r = subprocess.run(self.ctl_args(g) + args, capture_output=True, text=True,
                               timeout=timeout)
            if r.returncode == 0 or "failed to connect" not in r.stderr or attempt == 2:
                break
            time.sleep(1.0)
        if check and r.returncode != 0:
            rl.fail(f"srv6gw-ctl {' '.join(args)} on {g.name}: {r.stderr.strip()}")
        return r

    def objects(self, g):
        """What gateway g runs: {policies: {name: obj}, steering: {id: obj}, local-sids:
        {sid: obj}}."""
        out = {}
        for kind, key in (("policies", "name"), ("steering", "id"), ("local-sids", "sid")):
            doc = json.loads(self.ctl(g, ["--json", "list", kind]).stdout)
            items = doc.get({"policies": "policies", "steering": "rules",
                             "local-sids": "local_sids"}[kind], [])
            out[kind] = {str(i[key]): i for i in items}
        return out

    def stop_gateways(self):
        for name, d in list(self.daemons.items()):
            if d["p"].poll() is None:
                d["p"].send_signal(signal.SIGTERM)
                try:
                    d["p"].wait(timeout=30)
                except subprocess.TimeoutExpired:
                    d["p"].kill()
                    d["p"].wait()
        self.daemons.clear()

    # -- traffic -----------------------------------------------------------------------------
    def start_generator(self, g, dst, rate_mbit, duration_s, qps=16, seed=1, qp_base=0x100):
        """roce-gen (DPDK net_af_packet) in host g toward gateway dst's host."""
        report = os.path.join(self.work, f"gen-{g.host}-{time.monotonic_ns()}.json")
        prefix = gwlib.unique_prefix(f"ls_gen_{g.host}")
        cmd = ["ip", "netns", "exec", self.ns[g.host], fl.GEN_BIN, "-l", "0", "--no-huge",
               "--no-shconf", "--file-prefix", prefix, "--no-pci", "-m", "256",
               "--log-level", "lib.eal:warning", "--vdev", "net_af_packet0,iface=eth0",
               "--", "--tx-port", "net_af_packet0", "--rate-mbps", str(rate_mbit),
               "--duration", str(duration_s), "--hosts", "1", "--qps", str(qps),
               "--remote-hosts", "1", "--size", "1024", "--opcodes", "writes",
               "--seed", str(seed), "--src-base", g.address, "--dst-base", dst.address,
               "--dest-qp-base", str(qp_base),
               "--src-mac", self.mac(g.host, "eth0"), "--dst-mac", self.mac(g.name, "host0"),
               "--report-json", report, "--quiet"]
        p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        gwlib._procs.append(p)  # killed at exit: a failed test must not wait for it
        return p, report

    def receiver(self, g, bin_ms=100):
        """roce-sink in host g: frames per bin (no CNPs: nothing is congested here)."""
        path = os.path.join(self.work, f"sink-{g.host}-{time.monotonic_ns()}.txt")
        cmd = ["ip", "netns", "exec", self.ns[g.host], fl.SINK_BIN, "--iface", "eth0",
               "--out", path, "--gw-mac", self.mac(g.name, "host0"), "--bin-ms", str(bin_ms),
               "--no-cnp"]
        p = subprocess.Popen(cmd, stderr=subprocess.PIPE, text=True)
        # Killed at exit: it inherits the test's stdout, and meson waits for every holder of
        # that pipe, so a failed test whose sink kept running hung until meson's timeout.
        gwlib._procs.append(p)
        # 30 s: opening its packet ring waits for a kernel RCU grace period, which took over
        # 10 s in CI with four busy-polling gateways on two cores.
        deadline = time.monotonic() + 30
        while not os.path.exists(path):
            if p.poll() is not None or time.monotonic() > deadline:
                # Stopped first: reading the stderr of a running sink would wait for its end
                # (a CI run hung here until meson's 600 s timeout).
                if p.poll() is None:
                    p.kill()
                try:
                    _, err = p.communicate(timeout=10)
                except subprocess.TimeoutExpired:
                    err = "(no output)"
                rl.fail(f"roce-sink in {g.host} did not start within 30 s: {err}")
            time.sleep(0.05)
        return {"p": p, "path": path}

    @staticmethod
    def frames(rx):
        total = 0
        with open(rx["path"]) as f:
            for line in f:
                if line.startswith("#") or not line.strip():
                    continue
                total += int(line.split()[1])
        return total

    @staticmethod
    def stop_receiver(rx):
        rx["p"].send_signal(signal.SIGTERM)
        try:
            rx["p"].wait(timeout=10)
        except subprocess.TimeoutExpired:
            rx["p"].kill()
            rx["p"].wait()

    def cleanup(self):
        try:
            self.stop_gateways()
        except Exception:  # noqa: BLE001 - cleanup must go on
            pass
        while self.root_links:
            subprocess.run(["ip", "link", "del", self.root_links.pop()], capture_output=True)
        while self.created:
            subprocess.run(["ip", "netns", "del", self.created.pop()], capture_output=True)


class Controller:
    """srv6gw-controller in the root namespace on a topology and gateways file, its API on a
    unix socket in `work` (docs/design/controller.md)."""

    def __init__(self, work, topo, gateways, state):
        self.sock = os.path.join(work, "controller.sock")
        self.log_path = os.path.join(work, f"controller-{time.monotonic_ns()}.log")
        self.f = open(self.log_path, "w")
        self.p = subprocess.Popen([CONTROLLER_BIN, "run", "--topology", topo, "--gateways",
                                   gateways, "--state", state, "--listen", "unix:" + self.sock,
                                   "--resync-ms", "0"],
                                  stdout=self.f, stderr=subprocess.STDOUT)
        gwlib._procs.append(self.p)  # killed at exit when a failed test did not stop it
        deadline = time.monotonic() + 20
        while not os.path.exists(self.sock):
            if self.p.poll() is not None or time.monotonic() > deadline:
                rl.fail(f"controller did not start:\n{self.tail()}")
            time.sleep(0.05)

    def tail(self, n=4000):
        with open(self.log_path) as f:
            return f.read()[-n:]

    def ctl(self, args, check=True, timeout=60):
        r = subprocess.run([CONTROLLER_BIN, "ctl", "--socket", self.sock] + args,
                           capture_output=True, text=True, timeout=timeout)
        if check and r.returncode != 0:
            rl.fail(f"srv6gw-controller ctl {' '.join(args)}: {r.stderr.strip()}\n{self.tail()}")
        return r

    def plan(self, objects=False):
        return json.loads(self.ctl(["plan"] + (["--objects"] if objects else [])).stdout)

    def watch(self, path):
        f = open(path, "w")
        return subprocess.Popen([CONTROLLER_BIN, "ctl", "--socket", self.sock, "watch"],
                                stdout=f, stderr=subprocess.DEVNULL), f

    def stop(self):
        if self.p.poll() is None:
            self.p.send_signal(signal.SIGTERM)
            try:
                self.p.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.p.kill()
                self.p.wait()
                rl.fail("controller did not stop on SIGTERM")
        self.f.close()
        if self.p.returncode != 0:
            rl.fail(f"controller exit {self.p.returncode}:\n{self.tail()}")
