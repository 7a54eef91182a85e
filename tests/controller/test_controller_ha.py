#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
# controller-ha: three srv6gw-controller replicas on a real etcd (Debian's etcd-server, one
# member on loopback ports in a temporary folder), 16 gateways of a 4 leaves x 3 spines x
# 4 hosts fabric played by srv6gw-gateway-standin (enforces expected_generation like the real
# agent, and records which leader term pushed what). Lease TTL 2 s.
#
# A. SIGKILL the leader while a job is being submitted: a new leader within 2 x TTL + 1 s;
#    the job is placed on every gateway it touches or nowhere (then refused to its
#    submitter), never half; every gateway runs the new leader's plan.
# B. SIGKILL the leader while a link-down is being spread (each Apply takes 100 ms at the
#    stand-in): the same checks; the link stays down in the new leader's plan.
# C. SIGSTOP the leader (started with --fault-push-delay-ms: its pushes wait between the
#    lease check and the Apply) just after a plan change, past its lease; a new leader
#    pushes; SIGCONT the old one: its late pushes are refused by the gateways (stale
#    generation) and it steps down.
# Printed: failover times, the job's outcome, refused late pushes, conflicting pushes (a
# push of an older term accepted after a newer term's: must be 0).
# Exits 77 when etcd is not installed.
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

CONTROLLER = os.environ.get("SRV6GW_CONTROLLER")
STANDIN = os.environ.get("SRV6GW_STANDIN")
TTL = 2
LIMIT = 2 * TTL + 1.0


def log(msg):
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", flush=True)


def fail(msg):
    print("controller-ha: FAIL: " + msg, flush=True)
    raise SystemExit(1)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def topology(sock):
    leaves, spines, per_leaf = 4, 3, 4
    sw = [{"name": f"leaf{i}", "role": "leaf", "sid": f"fc00:5:{0x100 + i:x}::e"}
          for i in range(leaves)]
    sw += [{"name": f"spine{j}", "role": "spine", "sid": f"fc00:5:{0x200 + j:x}::e"}
           for j in range(spines)]
    hosts, links = [], []
    for i in range(leaves):
        for k in range(per_leaf):
            n = i * per_leaf + k
            hosts.append({"name": f"h{n}", "address": f"10.{i}.0.{k + 1}", "gateway": {
                "source-address": f"fc00:a:{n + 1:x}::1", "locator": f"fc00:a:{n + 1:x}::/48",
                "decap-sid": f"fc00:a:{n + 1:x}::d46", "agent": "unix:" + sock}})
            links.append({"a": f"h{n}", "b": f"leaf{i}", "members": 1, "member-gbps": "400"})
        for j in range(spines):
            links.append({"a": f"leaf{i}", "b": f"spine{j}", "members": 2,
                          "member-gbps": "200"})
    return {"srv6gw-topology:topology": {
        "name": "controller-ha 4x3x4", "switches": {"switch": sw}, "hosts": {"host": hosts},
        "links": {"link": links}}}


class Replica:
    def __init__(self, work, name, etcd_port, extra=()):
        self.name, self.work = name, work
        self.sock = os.path.join(work, name + ".sock")
        self.log_path = os.path.join(work, name + ".log")
        self.logf = open(self.log_path, "a")
        self.p = subprocess.Popen(
            [CONTROLLER, "run", "--topology", os.path.join(work, "topology.json"),
             "--gateways", os.path.join(work, "gateways.json"), "--state", "none",
             "--store", f"etcd://127.0.0.1:{etcd_port}", "--lease-ttl", str(TTL),
             "--id", name, "--listen", "unix:" + self.sock, "--no-watch", "--concurrency", "4",
             "--resync-ms", "0", *extra], stdout=self.logf, stderr=subprocess.STDOUT)

    def ctl(self, args, timeout=10):
        return subprocess.run([CONTROLLER, "ctl", "--socket", self.sock, "--timeout", "2", *args],
                              capture_output=True, text=True, timeout=timeout)

    def plan(self, objects=False):
        if self.p.poll() is not None:
            return None
        try:
            r = self.ctl(["plan"] + (["--objects"] if objects else []), timeout=5)
        except subprocess.TimeoutExpired:
            return None
        return json.loads(r.stdout) if r.returncode == 0 else None

    def leads(self):
        p = self.plan()
        return bool(p and p.get("is_leader"))

    def alive(self):
        return self.p.poll() is None

    def stop(self):
        if self.alive():
            try:
                os.kill(self.p.pid, signal.SIGCONT)
            except ProcessLookupError:
                pass
            self.p.terminate()
            try:
                self.p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.p.kill()
                self.p.wait()
        self.logf.close()

    def text(self):
        with open(self.log_path) as f:
            return f.read()


class Standin:
    def __init__(self, work, delay_ms):
        self.summary_path = os.path.join(work, "standin.json")
        self.sock = os.path.join(work, "gateways.sock")
        self.logf = open(os.path.join(work, "standin.log"), "w")
        self.p = subprocess.Popen([STANDIN, "--listen", "unix:" + self.sock, "--summary",
                                   self.summary_path, "--apply-delay-ms", str(delay_ms)],
                                  stdout=self.logf, stderr=subprocess.STDOUT)

    def summary(self):
        old = os.stat(self.summary_path).st_mtime_ns if os.path.exists(self.summary_path) else 0
        os.kill(self.p.pid, signal.SIGUSR1)
        for _ in range(200):
            if os.path.exists(self.summary_path) and \
                    os.stat(self.summary_path).st_mtime_ns != old:
                with open(self.summary_path) as f:
                    return json.load(f)
            time.sleep(0.02)
        fail("the stand-in wrote no summary")

    def stop(self):
        self.p.terminate()
        self.p.wait(timeout=10)
        self.logf.close()


def leader_of(replicas, exclude=None):
    for r in replicas:
        if r is not exclude and r.alive() and r.leads():
            return r
    return None


def wait_new_leader(replicas, old, t0):
    while time.monotonic() - t0 < LIMIT + 5:
        r = leader_of(replicas, exclude=old)
        if r:
            return r, time.monotonic() - t0
        time.sleep(0.02)
    fail(f"no new leader {LIMIT + 5:.0f} s after the old one went")


def canon(objs):
    return sorted(json.dumps(o, sort_keys=True) for o in objs)


def converged(leader, standin, label, timeout=30):
    """Every gateway runs exactly the leader's desired objects. Returns the summary."""
    end = time.monotonic() + timeout
    why = ""
    while time.monotonic() < end:
        r = leader.ctl(["wait-synced", "--timeout", "2"], timeout=10)
        if r.returncode != 0:
            why = r.stderr.strip()
            continue
        plan = leader.plan(objects=True)
        s = standin.summary()
        bad = []
        for g in plan["gateways"]:
            want = canon(g.get("desired_policies", []) + g.get("desired_steering", []) +
                         g.get("desired_local_sids", []))
            have = canon(s["gateways"].get(g["name"], {}).get("objects", []))
            if want != have:
                bad.append(g["name"])
        if not bad:
            log(f"{label}: all {len(plan['gateways'])} gateways run plan {plan['version']} of "
                f"{leader.name} (term {plan['leader_term']}); conflicting pushes seen by the "
                f"gateways: {s['conflicts']}; stale pushes refused: {s['refused_stale']}, of "
                f"them from a deposed leader: {s['refused_late']}")
            if s["conflicts"] != 0:
                fail(f"{label}: {s['conflicts']} conflicting pushes (older term after newer)")
            return plan, s
        why = "objects differ on " + ",".join(bad)
        time.sleep(0.2)
    fail(f"{label}: not converged in {timeout} s: {why}")


def job_rules_present(plan, standin_summary, job_id):
    """(placed flows whose rule runs on its gateway, flows) for the job in `plan`."""
    for j in plan.get("jobs", []):
        if j["job_id"] == job_id:
            have = 0
            for pl in j.get("placements", []):
                objs = standin_summary["gateways"][pl["gateway"]]["objects"]
                if any(o.get("id") == pl["rule_id"] and "policy" in o for o in objs):
                    have += 1
            return have, len(j.get("placements", []))
    return None


def main():
    etcd = shutil.which("etcd")
    if not etcd:
        print("controller-ha: SKIP: etcd is not installed (Debian package etcd-server)")
        return 77
    if not CONTROLLER or not STANDIN:
        print("controller-ha: SKIP: SRV6GW_CONTROLLER / SRV6GW_STANDIN not set (run by meson)")
        return 77
    t_start = time.monotonic()
    work = tempfile.mkdtemp(prefix="srv6gw-ha-")
    procs = []
    replicas = []
    try:
        cport, pport = free_port(), free_port()
        etcd_log = open(os.path.join(work, "etcd.log"), "w")
        ep = subprocess.Popen(
            [etcd, "--name", "n1", "--data-dir", os.path.join(work, "etcd"),
             "--listen-client-urls", f"http://127.0.0.1:{cport}",
             "--advertise-client-urls", f"http://127.0.0.1:{cport}",
             "--listen-peer-urls", f"http://127.0.0.1:{pport}",
             "--initial-advertise-peer-urls", f"http://127.0.0.1:{pport}",
             "--initial-cluster", f"n1=http://127.0.0.1:{pport}", "--log-level", "warn"],
            stdout=etcd_log, stderr=subprocess.STDOUT)
        procs.append(ep)
        healthy = False
        for _ in range(300):  # etcd's own health endpoint: it serves once it has a leader
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{cport}/health", timeout=1) as h:
                    healthy = json.load(h).get("health") == "true"
            except OSError:
                pass
            if healthy:
                break
            time.sleep(0.1)
        if not healthy:
            fail("etcd did not become healthy in 30 s")
        standin = Standin(work, 100)
        procs.append(standin.p)
        with open(os.path.join(work, "topology.json"), "w") as f:
            json.dump(topology(standin.sock), f)
        with open(os.path.join(work, "gateways.json"), "w") as f:
            json.dump({"gateways": []}, f)
        replicas = [Replica(work, f"c{i}", cport) for i in (1, 2, 3)]
        t0 = time.monotonic()
        while not leader_of(replicas):
            if time.monotonic() - t0 > 20:
                fail("no leader 20 s after start")
            time.sleep(0.05)
        leader = leader_of(replicas)
        log(f"etcd on 127.0.0.1:{cport}; replicas up, leader {leader.name} after "
            f"{time.monotonic() - t0:.2f} s")
        # Followers refuse writes naming the leader.
        follower = next(r for r in replicas if r is not leader)
        r = follower.ctl(["link", "leaf0--spine0", "down"])
        if r.returncode == 0 or "not the leader" not in r.stderr or leader.name not in r.stderr:
            fail(f"a follower's answer to a write: rc {r.returncode}: {r.stderr.strip()}")
        log(f"follower {follower.name} refuses a write: {r.stderr.strip()}")
        converged(leader, standin, "start")
        failovers = []

        # ---- A: SIGKILL during SubmitJob ----------------------------------------------------
        job = {"job_id": "ha-job-1", "flows": [
            {"src_host": f"h{i}", "dst_host": f"h{(i + 5) % 16}", "dest_qp": 256 + i,
             "bytes": 1 << 30} for i in range(12)]}
        job_path = os.path.join(work, "job.json")
        with open(job_path, "w") as f:
            json.dump(job, f)
        sub = subprocess.Popen([CONTROLLER, "ctl", "--socket", leader.sock, "--timeout", "5",
                                "submit", "-f", job_path], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
        time.sleep(0.03)
        os.kill(leader.p.pid, signal.SIGKILL)
        t_kill = time.monotonic()
        out, err = sub.communicate(timeout=30)
        new, dt = wait_new_leader(replicas, leader, t_kill)
        failovers.append(dt)
        log(f"A: leader {leader.name} SIGKILLed during SubmitJob; new leader {new.name} after "
            f"{dt:.2f} s (limit {LIMIT:.0f} s); submitter: "
            f"{'placed' if sub.returncode == 0 else 'error: ' + err.strip()}")
        if dt > LIMIT:
            fail(f"A: failover took {dt:.2f} s > {LIMIT} s")
        plan, s = converged(new, standin, "A")
        present = job_rules_present(plan, s, "ha-job-1")
        if sub.returncode == 0 and present is None:
            fail("A: the job was acknowledged but the new leader does not have it")
        if present is None:
            log("A: job outcome: refused to its submitter and placed nowhere (no gateway has "
                "its rules)")
            r = new.ctl(["submit", "-f", job_path])
            if r.returncode != 0:
                fail("A: resubmitting to the new leader: " + r.stderr)
            plan, s = converged(new, standin, "A (resubmitted)")
            present = job_rules_present(plan, s, "ha-job-1")
        else:
            again = new.ctl(["submit", "-f", job_path])
            log(f"A: job outcome: stored before the kill ({'acknowledged' if sub.returncode == 0 else 'submitter saw an error'}); "
                f"resubmitting says: {again.stderr.strip()}")
        if present[0] != present[1] or present[1] != len(job["flows"]):
            fail(f"A: job half placed: {present[0]} of {present[1]} rules present")
        log(f"A: job ha-job-1 fully placed: {present[0]} of {len(job['flows'])} pinned rules "
            "run on their gateways")
        replicas[replicas.index(leader)] = Replica(work, leader.name, cport)
        leader = new

        # ---- B: SIGKILL during a link-down spread -------------------------------------------
        r = leader.ctl(["link", "leaf1--spine2", "down"])
        if r.returncode != 0:
            fail("B: link down: " + r.stderr)
        time.sleep(0.02)  # 16 gateways x 100 ms per Apply, 4 passes in parallel: mid-spread
        os.kill(leader.p.pid, signal.SIGKILL)
        t_kill = time.monotonic()
        new, dt = wait_new_leader(replicas, leader, t_kill)
        failovers.append(dt)
        before = standin.summary()
        log(f"B: leader {leader.name} SIGKILLed while spreading leaf1--spine2 down; new leader "
            f"{new.name} after {dt:.2f} s")
        if dt > LIMIT:
            fail(f"B: failover took {dt:.2f} s > {LIMIT} s")
        plan, s = converged(new, standin, "B")
        link = [x for x in plan.get("links", []) if x["link"] == "leaf1--spine2"]
        if not link or link[0]["up"]:
            fail("B: the link-down acknowledged before the kill is not in the new plan")
        term_b = int(plan["leader_term"])
        on_new = sum(1 for g in s["gateways"].values() if term_b in g["terms"])
        log(f"B: leaf1--spine2 down in plan {plan['version']}; gateways the new leader had to "
            f"push to: {on_new} of {len(s['gateways'])} (the old leader reached the others; "
            f"{sum(g['accepted'] for g in before['gateways'].values())} pushes accepted at the "
            "gateways when the new leader was found)")
        replicas[replicas.index(leader)] = Replica(work, leader.name, cport)
        leader = new

        # ---- C: SIGSTOP past the lease, late push refused, step down ------------------------
        for rep in replicas:
            rep.stop()
        replicas = [Replica(work, "c4", cport, ["--fault-push-delay-ms", "3000"])]
        t0 = time.monotonic()
        while not replicas[0].leads():
            if time.monotonic() - t0 > 15:
                fail("C: c4 did not lead")
            time.sleep(0.05)
        old = replicas[0]
        replicas += [Replica(work, f"c{i}", cport) for i in (5, 6)]
        time.sleep(0.5)
        r = old.ctl(["link", "leaf1--spine2", "clear"])
        if r.returncode != 0:
            fail("C: link clear: " + r.stderr)
        time.sleep(0.3)  # c4's passes have checked the lease and wait before their Apply
        os.kill(old.p.pid, signal.SIGSTOP)
        t_stop = time.monotonic()
        new, dt = wait_new_leader(replicas, old, t_stop)
        failovers.append(dt)
        log(f"C: leader c4 SIGSTOPped with pushes pending; new leader {new.name} after {dt:.2f} s")
        if dt > LIMIT:
            fail(f"C: failover took {dt:.2f} s > {LIMIT} s")
        plan, s_before = converged(new, standin, "C (new leader)")
        os.kill(old.p.pid, signal.SIGCONT)
        t_cont = time.monotonic()
        stepped = None
        while time.monotonic() - t_cont < 10:
            p = old.plan()
            if p is not None and not p["is_leader"] and "stepped down" in old.text():
                stepped = time.monotonic() - t_cont
                break
            time.sleep(0.05)
        if stepped is None:
            fail("C: c4 did not step down after SIGCONT")
        time.sleep(0.5)
        plan, s = converged(new, standin, "C (after SIGCONT)")
        late = s["refused_late"] - s_before["refused_late"]
        log(f"C: c4 resumed: {late} late pushes refused by the gateways (stale generation), "
            f"stepped down after {stepped:.2f} s; conflicting pushes: {s['conflicts']}")
        if late < 1:
            fail("C: the deposed leader's late push was not seen refused")
        log(f"failover times: {', '.join(f'{x:.2f} s' for x in failovers)} (limit {LIMIT:.0f} s, "
            f"TTL {TTL} s); total {time.monotonic() - t_start:.1f} s")
        print("controller-ha: OK", flush=True)
        return 0
    except SystemExit as e:
        for rep in replicas:
            print(f"---- {rep.name} log (tail) ----\n" + rep.text()[-3000:])
        raise e
    finally:
        for rep in replicas:
            rep.stop()
        for p in procs:
            if p.poll() is None:
                p.terminate()
                try:
                    p.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    p.kill()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
