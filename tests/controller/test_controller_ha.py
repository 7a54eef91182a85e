#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
# controller-ha: three srv6gw-controller replicas on a real etcd (Debian's etcd-server: a
# 3-member cluster on loopback ports in a temporary folder) in front of four real srv6gw
# daemons (net_null ports, EAL --no-huge and a unique file prefix) whose gRPC agents enforce
# expected_generation. Topology: 2 leaves x 2 spines x 2 hosts per leaf. Lease TTL 2 s.
#
# A. SIGKILL the leader while a job is being submitted: a new leader within 2 x TTL + 1 s;
#    the job is placed on every gateway it touches or nowhere (then refused to its
#    submitter), never half; every gateway runs the new leader's plan.
# B. SIGKILL the leader while a link-down is being spread (its replicas push one gateway at
#    a time, 300 ms apart: --fault-push-delay-ms): the same checks; the link stays down in
#    the new leader's plan.
# C. SIGSTOP the leader (--fault-push-delay-ms 3000: its pushes wait between the lease check
#    and the Apply) just after a plan change, past its lease; a new leader pushes; SIGCONT
#    the old one: its late pushes are refused by the gateways (stale generation) and it
#    steps down.
# The gateways' own logs say which controller term pushed each generation (the agent logs
# the term and plan version a controller sends along) and which pushes they refused: from
# them the test counts conflicting generations (a generation from an older term accepted
# after one from a newer term: must be 0) and the deposed leader's refused pushes.
# Failover time: from the kill / stop to the "etcd: leader" line of the new leader's log.
# Exits 77 without etcd or root.
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

sys.dont_write_bytecode = True
SRC = os.environ.get("SRV6GW_SRC") or os.path.abspath(
    os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(SRC, "tests", "integration"))
import gwlib  # noqa: E402

CONTROLLER = os.environ.get("SRV6GW_CONTROLLER")
CTL = os.environ.get("SRV6GW_CTL")
TTL = 2
LIMIT = 2 * TTL + 1.0
LEAVES, SPINES, PER_LEAF = 2, 2, 2
GATEWAYS = LEAVES * PER_LEAF
ETCD_MEMBERS = 3
# Under AddressSanitizer everything runs ~3x slower: waits (never the failover bound) grow.
SLOW = 3 if gwlib.asan_build(CONTROLLER) else 1


def log(msg):
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", flush=True)


def fail(msg):
    print("controller-ha: FAIL: " + msg, flush=True)
    raise SystemExit(1)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def terminate(p, timeout):
    """SIGTERM (after SIGCONT, for a stopped process), SIGKILL past `timeout` seconds.
    Returns the exit status."""
    if p.poll() is not None:
        return p.returncode
    try:
        os.kill(p.pid, signal.SIGCONT)
    except ProcessLookupError:
        return p.wait(timeout=10)
    p.terminate()
    try:
        return p.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        p.kill()
        p.wait(timeout=10)
        return "no exit within the timeout of SIGTERM"


def log_time(line):
    """Wall time of a log line starting with [YYYY-mm-dd HH:MM:SS.mmm] (spdlog's default)."""
    m = re.match(r"\[(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d)\.(\d{3})\]", line)
    if not m:
        return None
    return time.mktime(time.strptime(m.group(1), "%Y-%m-%d %H:%M:%S")) + int(m.group(2)) / 1000


def topology(work):
    sw = [{"name": f"leaf{i}", "role": "leaf", "sid": f"fc00:5:{0x100 + i:x}::e"}
          for i in range(LEAVES)]
    sw += [{"name": f"spine{j}", "role": "spine", "sid": f"fc00:5:{0x200 + j:x}::e"}
           for j in range(SPINES)]
    hosts, links = [], []
    for i in range(LEAVES):
        for k in range(PER_LEAF):
            n = i * PER_LEAF + k
            hosts.append({"name": f"h{n}", "address": f"10.{i}.0.{k + 1}", "gateway": {
                "source-address": f"fc00:a:{n + 1:x}::1", "locator": f"fc00:a:{n + 1:x}::/48",
                "decap-sid": f"fc00:a:{n + 1:x}::d46",
                "agent": "unix:" + os.path.join(work, f"h{n}.sock")}})
            links.append({"a": f"h{n}", "b": f"leaf{i}", "members": 1, "member-gbps": "400"})
        for j in range(SPINES):
            links.append({"a": f"leaf{i}", "b": f"spine{j}", "members": 2,
                          "member-gbps": "200"})
    return {"srv6gw-topology:topology": {
        "name": "controller-ha 2x2x2", "switches": {"switch": sw}, "hosts": {"host": hosts},
        "links": {"link": links}}}


class Etcd:
    """A cluster of `members` etcd members on loopback ports."""

    def __init__(self, work, members):
        etcd = shutil.which("etcd")
        self.clients = [free_port() for _ in range(members)]
        peers = [free_port() for _ in range(members)]
        cluster = ",".join(f"e{i}=http://127.0.0.1:{peers[i]}" for i in range(members))
        self.procs = []
        t0 = time.monotonic()
        for i in range(members):
            f = open(os.path.join(work, f"etcd{i}.log"), "w")
            self.procs.append(subprocess.Popen(
                [etcd, "--name", f"e{i}", "--data-dir", os.path.join(work, f"etcd{i}"),
                 "--listen-client-urls", f"http://127.0.0.1:{self.clients[i]}",
                 "--advertise-client-urls", f"http://127.0.0.1:{self.clients[i]}",
                 "--listen-peer-urls", f"http://127.0.0.1:{peers[i]}",
                 "--initial-advertise-peer-urls", f"http://127.0.0.1:{peers[i]}",
                 "--initial-cluster", cluster, "--initial-cluster-state", "new",
                 "--log-level", "warn"], stdout=f, stderr=subprocess.STDOUT))
        pending = set(range(members))
        while pending and time.monotonic() - t0 < 30 * SLOW:
            for i in list(pending):
                try:  # etcd's own health endpoint: true once the cluster has a leader
                    with urllib.request.urlopen(
                            f"http://127.0.0.1:{self.clients[i]}/health", timeout=1) as h:
                        if json.load(h).get("health") == "true":
                            pending.discard(i)
                except (OSError, ValueError):
                    pass
            time.sleep(0.05)
        if pending:
            fail(f"etcd members {sorted(pending)} not healthy in {30 * SLOW} s")
        self.startup = time.monotonic() - t0

    def url(self):
        return "etcd://" + ",".join(f"127.0.0.1:{p}" for p in self.clients)


class Gateway:
    """A real srv6gw daemon: ports on net_null, its agent on a unix socket, no state file."""

    def __init__(self, work, n, topo):
        host = topo["srv6gw-topology:topology"]["hosts"]["host"][n]
        self.name = host["name"]
        self.sock = host["gateway"]["agent"][len("unix:"):]
        cfg = {"srv6gw:gateway": {
            "ports": {"host": "net_null0", "fabric": "net_null1", "queues": 1, "mbufs": 2047},
            "source-address": host["gateway"]["source-address"],
            "engine": {"enabled": True},
            "actions": {"steering-miss": "drop", "non-roce": "drop", "fabric-non-sid": "drop"},
            "stats-interval-ms": 0}}
        cfg_path = os.path.join(work, f"{self.name}.json")
        with open(cfg_path, "w") as f:
            json.dump(cfg, f)
        self.log_path = os.path.join(work, f"{self.name}.log")
        self.logf = open(self.log_path, "w")
        # Main and worker lcore may run on either core; the worker busy-polls, so the daemons
        # run niced: etcd and the controllers, whose timing the test is about, come first.
        eal = ["--lcores", "0@(0,1),1@(0,1)", "--no-pci", "--no-huge", "-m", "256",
               "--file-prefix", gwlib.unique_prefix(f"ha_{self.name}"),
               "--log-level", "lib.eal:warning",
               "--vdev", "net_null0,no-rx=1", "--vdev", "net_null1,no-rx=1"]
        self.p = subprocess.Popen(
            ["nice", "-n", "10", gwlib.BIN] + eal +
            ["--", "--config", cfg_path, "--stats-interval", "0",
             "--agent-listen", "unix:" + self.sock, "--agent-state", "none"],
            stdout=self.logf, stderr=subprocess.STDOUT)

    def serving(self):
        if self.p.poll() is not None:
            fail(f"{self.name}: the gateway exited with {self.p.returncode}:\n" +
                 self.text()[-3000:])
        if not os.path.exists(self.sock):
            return False
        r = subprocess.run([CTL, "--socket", self.sock, "--timeout", "5", "health"],
                           capture_output=True, text=True, timeout=30)
        return r.stdout.strip() == "SERVING"

    def running(self):
        """Canonical objects the gateway runs (srv6gw-ctl --json list)."""
        objs = []
        for kind, field in (("policies", "policies"), ("steering", "rules"),
                            ("local-sids", "local_sids")):
            r = subprocess.run([CTL, "--socket", self.sock, "--timeout", "10", "--json", "list",
                                kind], capture_output=True, text=True, timeout=60)
            if r.returncode != 0:
                fail(f"{self.name}: srv6gw-ctl list {kind}: {r.stderr.strip()}")
            objs += [(kind, o) for o in json.loads(r.stdout).get(field, [])]
        return objs

    def text(self):
        with open(self.log_path, errors="replace") as f:
            return f.read()

    def pushes(self):
        """(accepted, refused) controller pushes in the gateway's log, in order:
        accepted (generation, term), refused (term, reason)."""
        accepted, refused = [], []
        for line in self.text().splitlines():
            m = re.search(r"agent: generation (\d+) from .*\(controller term (\d+), plan \d+\)",
                          line)
            if m:
                accepted.append((int(m.group(1)), int(m.group(2))))
                continue
            m = re.search(r"agent: refused a batch of \d+ changes from "
                          r".*\(controller term (\d+), plan \d+\): (.*)", line)
            if m:
                refused.append((int(m.group(1)), m.group(2)))
        return accepted, refused

    def stop(self):
        rc = terminate(self.p, 20 * SLOW)
        self.logf.close()
        return rc


class Replica:
    def __init__(self, work, name, etcd_url, extra=()):
        self.name, self.work = name, work
        self.sock = os.path.join(work, name + ".sock")
        self.log_path = os.path.join(work, name + ".log")
        self.logf = open(self.log_path, "a")
        self.p = subprocess.Popen(
            [CONTROLLER, "run", "--topology", os.path.join(work, "topology.json"),
             "--gateways", os.path.join(work, "gateways.json"), "--state", "none",
             "--store", etcd_url, "--lease-ttl", str(TTL), "--id", name,
             "--listen", "unix:" + self.sock, "--no-watch", "--resync-ms", "0", *extra],
            stdout=self.logf, stderr=subprocess.STDOUT)

    def ctl(self, args, timeout=None):
        return subprocess.run([CONTROLLER, "ctl", "--socket", self.sock, "--timeout",
                               str(2 * SLOW), *args], capture_output=True, text=True,
                              timeout=timeout or 20 * SLOW)

    def plan(self, objects=False):
        if self.p.poll() is not None:
            return None
        try:
            r = self.ctl(["plan"] + (["--objects"] if objects else []))
        except subprocess.TimeoutExpired:
            return None
        return json.loads(r.stdout) if r.returncode == 0 else None

    def leads(self):
        p = self.plan()
        return bool(p and p.get("is_leader"))

    def alive(self):
        return self.p.poll() is None

    def text(self):
        with open(self.log_path, errors="replace") as f:
            return f.read()

    def led_at(self, after):
        """Wall time of this replica's first "etcd: leader" log line after `after`."""
        for line in self.text().splitlines():
            if "etcd: leader (term" in line:
                t = log_time(line)
                if t is not None and t >= after - 0.001:
                    return t
        return None

    def stop(self):
        rc = terminate(self.p, 10 * SLOW)
        self.logf.close()
        return rc


def leader_of(replicas, exclude=None):
    for r in replicas:
        if r is not exclude and r.alive() and r.leads():
            return r
    return None


def wait_new_leader(replicas, old, t_wall):
    """The replica that took over from `old` (gone at wall time t_wall) and the failover
    time from its own log."""
    deadline = time.monotonic() + LIMIT + 20 * SLOW
    while time.monotonic() < deadline:
        for r in replicas:
            if r is old or not r.alive():
                continue
            t = r.led_at(t_wall)
            if t is not None and r.leads():
                return r, t - t_wall
        time.sleep(0.05)
    fail(f"no new leader {LIMIT + 20 * SLOW:.0f} s after the old one went")


def check_failover(label, dt):
    if dt > LIMIT:
        fail(f"{label}: failover took {dt:.2f} s > 2 x TTL + 1 s = {LIMIT:.0f} s")


def canon_desired(g):
    objs = [("policies", o) for o in g.get("desired_policies", [])]
    objs += [("steering", o) for o in g.get("desired_steering", [])]
    objs += [("local-sids", o) for o in g.get("desired_local_sids", [])]
    return sorted(json.dumps(o, sort_keys=True) for o in objs)


def conflicts(gateways):
    """Generations from an older controller term accepted after one from a newer term, over
    every gateway, and refused pushes per term."""
    bad, refused = 0, {}
    for g in gateways:
        accepted, ref = g.pushes()
        newest = 0
        for _, term in accepted:
            if term < newest:
                bad += 1
            newest = max(newest, term)
        for term, _ in ref:
            refused[term] = refused.get(term, 0) + 1
    return bad, refused


def converged(leader, gateways, label, replicas, exclude=None):
    """Every gateway runs exactly the leader's desired objects. Returns the plan and the
    leader: on a starved machine a leader can miss its keep-alives and lose the lease; then
    the replica that took over (not `exclude`) must bring the gateways to its plan."""
    end = time.monotonic() + 30 * SLOW
    why = ""
    while time.monotonic() < end:
        r = leader.ctl(["wait-synced", "--timeout", str(5 * SLOW)])
        plan = leader.plan(objects=True) if r.returncode == 0 else None
        if plan is None or not plan.get("is_leader"):
            if r.returncode != 0:
                why = r.stderr.strip()
            p = leader.plan()
            if p is not None and p.get("is_leader"):
                continue
            now = leader_of(replicas, exclude)
            if now is None:
                time.sleep(0.1)
                continue
            log(f"{label}: {leader.name} lost its lease (a starved keep-alive); {now.name} "
                "leads now")
            leader = now
            continue
        bad = []
        for g in gateways:
            want = next(p for p in plan["gateways"] if p["name"] == g.name)
            have = sorted(json.dumps(o, sort_keys=True) for o in g.running())
            if canon_desired(want) != have:
                bad.append(g.name)
        if not bad:
            n, refused = conflicts(gateways)
            objects = sum(len(canon_desired(p)) for p in plan["gateways"])
            log(f"{label}: all {len(gateways)} gateways run the {objects} objects of plan "
                f"{plan['version']} of "
                f"{leader.name} (term {plan['leader_term']}); conflicting generations seen by "
                f"the gateways: {n}; pushes refused per term: {refused or 'none'}")
            if n:
                fail(f"{label}: {n} conflicting generations (older term after newer)")
            return plan, leader
        why = "objects differ on " + ",".join(bad)
        time.sleep(0.2)
    fail(f"{label}: not converged in {30 * SLOW} s: {why}")


def job_rules_present(plan, gateways, job_id):
    """(placed flows whose rule runs on its gateway, flows) for the job in `plan`."""
    for j in plan.get("jobs", []):
        if j["job_id"] == job_id:
            rules = {}
            for g in gateways:
                rules[g.name] = {str(o["id"]) for k, o in g.running() if k == "steering"}
            have = sum(1 for pl in j.get("placements", [])
                       if str(pl["rule_id"]) in rules[pl["gateway"]])
            return have, len(j.get("placements", []))
    return None


def write_on_leader(replicas, args, label, exclude=None):
    """Runs a write (ctl ARGS) on the replica that leads, again on the next leader when a
    starved leader lost its lease meanwhile. Returns (leader, result, monotonic time of the
    successful call)."""
    t0 = time.monotonic()
    while True:
        lead = leader_of(replicas, exclude)
        t = time.monotonic()
        r = lead.ctl(args) if lead else None
        if r is not None and "not the leader" not in r.stderr:
            return lead, r, t
        if time.monotonic() - t0 > 20 * SLOW:
            fail(f"{label}: ctl {' '.join(args)}: " + (r.stderr if r else "no leader"))
        time.sleep(0.1)


def wait_leader(replicas, label, timeout):
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout:
        r = leader_of(replicas)
        if r:
            return r, time.monotonic() - t0
        time.sleep(0.05)
    fail(f"{label}: no leader {timeout} s after start")


def main():
    if not shutil.which("etcd"):
        print("controller-ha: SKIP: etcd is not installed (Debian package etcd-server)")
        return 77
    if not CONTROLLER or not CTL:
        print("controller-ha: SKIP: SRV6GW_CONTROLLER / SRV6GW_CTL not set (run by meson)")
        return 77
    if os.geteuid() != 0:
        print("controller-ha: SKIP: the gateways' EAL needs root")
        return 77
    t_start = time.monotonic()
    work = tempfile.mkdtemp(prefix="srv6gw-ha-")
    etcd, gateways, replicas = None, [], []
    try:
        etcd = Etcd(work, ETCD_MEMBERS)
        log(f"etcd: {ETCD_MEMBERS} members on {etcd.url()} healthy after {etcd.startup:.2f} s")
        topo = topology(work)
        with open(os.path.join(work, "topology.json"), "w") as f:
            json.dump(topo, f)
        with open(os.path.join(work, "gateways.json"), "w") as f:
            json.dump({"gateways": []}, f)
        t0 = time.monotonic()
        gateways = [Gateway(work, n, topo) for n in range(GATEWAYS)]
        pending = list(gateways)
        while pending:
            if time.monotonic() - t0 > 60 * SLOW:
                fail(f"gateways {[g.name for g in pending]} not serving in {60 * SLOW} s")
            pending = [g for g in pending if not g.serving()]
            time.sleep(0.1)
        log(f"{GATEWAYS} srv6gw daemons serving after {time.monotonic() - t0:.2f} s")

        # Replicas push one gateway at a time, 300 ms before each Apply: a spread of a change
        # to 4 gateways takes over a second, time to kill the leader in its middle (B).
        slow_push = ["--concurrency", "1", "--fault-push-delay-ms", "300"]
        replicas = [Replica(work, f"c{i}", etcd.url(), slow_push) for i in (1, 2, 3)]
        leader, dt = wait_leader(replicas, "start", 20 * SLOW)
        log(f"replicas up, leader {leader.name} after {dt:.2f} s")
        # Followers refuse writes naming the leader.
        follower = next(r for r in replicas if r is not leader)
        r = follower.ctl(["link", "leaf0--spine0", "down"])
        if r.returncode == 0 or "not the leader" not in r.stderr or leader.name not in r.stderr:
            fail(f"a follower's answer to a write: rc {r.returncode}: {r.stderr.strip()}")
        log(f"follower {follower.name} refuses a write: {r.stderr.strip()}")
        _, leader = converged(leader, gateways, "start", replicas)
        failovers = []

        # ---- A: SIGKILL during SubmitJob ----------------------------------------------------
        flows = [{"src_host": f"h{i % GATEWAYS}", "dst_host": f"h{(i + PER_LEAF) % GATEWAYS}",
                  "dest_qp": 256 + i, "bytes": 1 << 30} for i in range(8)]
        job = {"job_id": "ha-job-1", "flows": flows}
        job_path = os.path.join(work, "job.json")
        with open(job_path, "w") as f:
            json.dump(job, f)
        sub = subprocess.Popen([CONTROLLER, "ctl", "--socket", leader.sock, "--timeout",
                                str(5 * SLOW), "submit", "-f", job_path],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        time.sleep(0.03)
        os.kill(leader.p.pid, signal.SIGKILL)
        t_kill = time.time()
        _, err = sub.communicate(timeout=60 * SLOW)
        new, dt = wait_new_leader(replicas, leader, t_kill)
        failovers.append(dt)
        log(f"A: leader {leader.name} SIGKILLed during SubmitJob; new leader {new.name} after "
            f"{dt:.2f} s (limit {LIMIT:.0f} s); submitter: "
            f"{'acknowledged' if sub.returncode == 0 else 'error: ' + err.strip()}")
        check_failover("A", dt)
        plan, new = converged(new, gateways, "A", replicas, leader)
        present = job_rules_present(plan, gateways, "ha-job-1")
        if sub.returncode == 0 and present is None:
            fail("A: the job was acknowledged but the new leader does not have it")
        if present is None:
            log("A: job outcome: refused to its submitter and placed nowhere")
            new, r, _ = write_on_leader(replicas, ["submit", "-f", job_path], "A", leader)
            if r.returncode != 0:
                fail("A: resubmitting to the new leader: " + r.stderr)
            plan, new = converged(new, gateways, "A (resubmitted)", replicas, leader)
            present = job_rules_present(plan, gateways, "ha-job-1")
        else:
            again = new.ctl(["submit", "-f", job_path])
            log(f"A: job outcome: stored before the kill (submitter "
                f"{'acknowledged' if sub.returncode == 0 else 'saw an error'}); "
                f"resubmitting says: {again.stderr.strip()}")
        if present[0] != present[1] or present[1] != len(flows):
            fail(f"A: job half placed: {present[0]} of {present[1]} rules present")
        log(f"A: job ha-job-1 fully placed: {present[0]} of {len(flows)} pinned rules run on "
            "their gateways")
        replicas[replicas.index(leader)] = Replica(work, leader.name, etcd.url(), slow_push)
        leader = new

        # ---- B: SIGKILL during a link-down spread -------------------------------------------
        seen = {g.name: len(g.pushes()[0]) for g in gateways}
        leader, r, t_write = write_on_leader(replicas, ["link", "leaf1--spine1", "down"], "B")
        if r.returncode != 0:
            fail("B: link down: " + r.stderr)
        # One or two of the four 300 ms-apart pushes done.
        time.sleep(max(0.0, 0.45 - (time.monotonic() - t_write)))
        os.kill(leader.p.pid, signal.SIGKILL)
        t_kill = time.time()
        term_old = int(re.findall(r"etcd: leader \(term (\d+)", leader.text())[-1])
        new, dt = wait_new_leader(replicas, leader, t_kill)
        failovers.append(dt)
        reached = sum(1 for g in gateways
                      if any(t == term_old for _, t in g.pushes()[0][seen[g.name]:]))
        log(f"B: leader {leader.name} SIGKILLed while spreading leaf1--spine1 down; new leader "
            f"{new.name} after {dt:.2f} s")
        check_failover("B", dt)
        plan, new = converged(new, gateways, "B", replicas, leader)
        link = [x for x in plan.get("links", []) if x["link"] == "leaf1--spine1"]
        if not link or link[0]["up"]:
            fail("B: the link-down acknowledged before the kill is not in the new plan")
        term_b = int(plan["leader_term"])
        by_new = sum(1 for g in gateways if any(t == term_b for _, t in g.pushes()[0]))
        log(f"B: leaf1--spine1 down in plan {plan['version']}; the old leader (term {term_old}) "
            f"had pushed it to {reached} of {GATEWAYS} gateways, the new one (term {term_b}) "
            f"pushed to {by_new}")
        replicas[replicas.index(leader)] = Replica(work, leader.name, etcd.url(), slow_push)
        leader = new

        # ---- C: SIGSTOP past the lease, late push refused, step down ------------------------
        for rep in replicas:
            rep.stop()
        replicas = [Replica(work, "c4", etcd.url(), ["--fault-push-delay-ms", "3000"])]
        old, _ = wait_leader(replicas, "C", 20 * SLOW)
        replicas += [Replica(work, f"c{i}", etcd.url()) for i in (5, 6)]
        _, lead = converged(old, gateways, "C (c4 leads)", replicas)
        if lead is not old:
            fail("C: c4 lost its lease before the test could stop it (a starved machine)")
        term_c4 = int(old.plan()["leader_term"])
        held_before = old.text().count("fault: push of plan")
        r = old.ctl(["link", "leaf1--spine1", "clear"])
        if r.returncode != 0:
            fail("C: link clear: " + r.stderr)
        # Stop c4 once its pushes have passed the lease check and wait before their Apply.
        t_held = time.monotonic()
        while old.text().count("fault: push of plan") - held_before < GATEWAYS:
            if time.monotonic() - t_held > 2.5:  # the pushes leave after 3 s
                fail("C: c4's pushes of the link clear were not held before their Apply")
            time.sleep(0.02)
        os.kill(old.p.pid, signal.SIGSTOP)
        t_stop = time.time()
        new, dt = wait_new_leader(replicas, old, t_stop)
        failovers.append(dt)
        log(f"C: leader c4 SIGSTOPped with pushes pending; new leader {new.name} after {dt:.2f} s")
        check_failover("C", dt)
        _, new = converged(new, gateways, "C (new leader)", replicas, old)
        late_before = conflicts(gateways)[1].get(term_c4, 0)
        os.kill(old.p.pid, signal.SIGCONT)
        t_cont = time.monotonic()
        stepped = None
        while time.monotonic() - t_cont < 10 * SLOW:
            p = old.plan()
            if p is not None and not p["is_leader"] and "stepped down" in old.text():
                stepped = time.monotonic() - t_cont
                break
            time.sleep(0.05)
        if stepped is None:
            fail("C: c4 did not step down after SIGCONT")
        time.sleep(0.5 * SLOW)  # c4's pending pushes reach the gateways
        _, new = converged(new, gateways, "C (after SIGCONT)", replicas, old)
        late = conflicts(gateways)[1].get(term_c4, 0) - late_before
        stale = sum(1 for g in gateways for term, why in g.pushes()[1]
                    if term == term_c4 and "generation" in why)
        log(f"C: c4 (term {term_c4}) resumed: {late} late pushes refused by the gateways "
            f"({stale} for a stale generation), stepped down after {stepped:.2f} s")
        if late < 1:
            fail("C: the deposed leader's late push was not seen refused")
        # A follower learns of a stored change from its etcd watch: a link set down on the
        # leader shows in the follower's plan.
        lead, r, t_set = write_on_leader(replicas, ["link", "leaf0--spine1", "down"], "watch")
        if r.returncode != 0:
            fail("link down on the leader: " + r.stderr)
        follower = next(r for r in replicas if r is not lead)
        while True:
            p = follower.plan()
            if p and any(x["link"] == "leaf0--spine1" and not x["up"] for x in p["links"]):
                break
            if time.monotonic() - t_set > 10 * SLOW:
                fail(f"follower {follower.name} did not see leaf0--spine1 down in {10 * SLOW} s")
            time.sleep(0.05)
        if "etcd: watching" not in follower.text():
            fail(f"follower {follower.name} has no etcd watch (its log says no 'etcd: watching')")
        log(f"follower {follower.name} shows the leader's change (leaf0--spine1 down) "
            f"{time.monotonic() - t_set:.2f} s after it was set (its etcd watch on meta)")
        n, _ = conflicts(gateways)
        log(f"failover times: {', '.join(f'{x:.2f} s' for x in failovers)} (limit {LIMIT:.0f} s, "
            f"TTL {TTL} s); conflicting generations: {n}; total "
            f"{time.monotonic() - t_start:.1f} s")
        # Stopped with SIGTERM, every replica and gateway exits 0 (a sanitizer report in one
        # of them would not: their logs go away with the temporary folder).
        for proc in replicas + gateways:
            rc = proc.stop()
            if rc != 0:
                fail(f"{proc.name} exited with {rc} on SIGTERM:\n{proc.text()[-3000:]}")
        print("controller-ha: OK", flush=True)
        return 0
    except SystemExit as e:
        for rep in replicas:
            print(f"---- {rep.name} log (tail) ----\n" + rep.text()[-3000:])
        for g in gateways:
            print(f"---- {g.name} log (tail) ----\n" + g.text()[-2000:])
        raise e
    finally:
        for rep in replicas:
            rep.stop()
        for g in gateways:
            g.stop()
        if etcd:
            for p in etcd.procs:
                terminate(p, 10)
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
