#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
# persist-crash (issue 20): the real gateway is SIGKILLed at random moments while a client
# runs a storm of changes through its agent (steering adds and deletes, policy changes,
# engine parameters, path downs and ups), then restarted on the same state directory
# (snapshot + journal), CYCLES times. After every restart:
#   - the state read back (steering rules, policies, engine alpha, paths down, generation)
#     equals the state after the last acknowledged change or after the one in flight, never
#     anything else (a mix, a lost acknowledged change, a replayed refused one);
#   - the first packets (a pcap the host port reads at start) are steered by it: rule 900
#     sends 10.0.9.0/24 to the policy the restored state names, over one of its segment lists
#     that is not down.
# Changes are made one at a time by srv6gw-ctl with --expected-generation, so the i-th change
# of the storm is known exactly; the storm runs until its first change is acknowledged, then
# 0.05-0.5 s more before the kill.
import json
import os
import random
import signal
import struct
import subprocess
import sys
import threading
import time

import gwlib

CYCLES = int(os.environ.get("PERSIST_CRASH_CYCLES", "30"))
CTL = gwlib.CTL
if not os.access(CTL, os.X_OK):
    gwlib.fail(f"srv6gw-ctl {CTL} missing (SRV6GW_CTL)")
if not os.access(gwlib.BIN, os.X_OK):
    gwlib.fail(f"gateway binary {gwlib.BIN} missing")

work = gwlib.workdir("persist-crash")
state_path = os.path.join(work, "state.json")
host_pcap = os.path.join(work, "host-in.pcap")
gwlib.write_roce_writes_pcap(host_pcap, dst="10.0.9.7", count=8)
rng = random.Random(int(os.environ.get("PERSIST_CRASH_SEED", "20")))

# ---- the model: what the gateway must hold after each change ----------------------------------
# Two policies of two segment lists each; their path ids stay, their SIDs vary.
SID_SETS = [["fc00:0:91::e", "fc00:0:9::d4"], ["fc00:0:92::e", "fc00:0:93::e", "fc00:0:9::d4"],
            ["fc00:0:94::e", "fc00:0:9::d4"], ["fc00:0:95::e", "fc00:0:96::e", "fc00:0:9::d4"]]
POLICIES = {"crash-a": (911, 912), "crash-b": (921, 922)}


def policy_msg(name, variant):
    p1, p2 = POLICIES[name]
    return {"name": name, "color": 9, "segment_lists": [
        {"name": "l1", "path_id": p1, "sids": SID_SETS[variant % 4]},
        {"name": "l2", "path_id": p2, "sids": SID_SETS[(variant + 1) % 4]}]}


# The alpha of the configuration file (the engine's default when it sets none), read from the
# first gateway before any change: "engine set" of this value changes nothing.
config_alpha = [None]


class Model:
    def __init__(self):
        self.generation = 0
        self.rules = {}      # id -> (destination, qp, policy); prefix rule 900 as ("10.0.9.0/24", 0, p)
        self.policies = {}   # name -> ((list name, path id, sids), ...)
        self.alpha = None    # None: the configuration file's
        self.down = set()    # path ids

    def copy(self):
        m = Model()
        m.generation, m.rules, m.policies = self.generation, dict(self.rules), dict(self.policies)
        m.alpha, m.down = self.alpha, set(self.down)
        return m

    def describe(self):
        return (f"generation {self.generation}, {len(self.rules)} rules "
                f"(900 -> {self.rules.get(900, ('', 0, None))[2]}), policies "
                f"{ {k: [sl[2][0] for sl in v] for k, v in sorted(self.policies.items())} }, "
                f"alpha {self.alpha}, down {sorted(self.down)}")

    def key(self):
        return (self.generation, sorted(self.rules.items()), sorted(self.policies.items()),
                self.alpha, sorted(self.down))


def apply_policy(m, msg):
    m.policies[msg["name"]] = tuple((sl["name"], sl["path_id"], tuple(sl["sids"]))
                                    for sl in msg["segment_lists"])


def next_change(m):
    """A random change valid on model m: (srv6gw-ctl arguments, the model after it)."""
    after = m.copy()
    kind = rng.random()
    if kind < 0.12:
        alpha = rng.choice([0.25, 0.5, 0.125, 0.75])
        # The gateway compares with the alpha it runs (the configuration file's while none was
        # set over gRPC): the same value is answered "unchanged", with no new generation and
        # nothing set by the agent, so the model keeps its alpha (None stays None).
        running = m.alpha if m.alpha is not None else config_alpha[0]
        if alpha != running:
            after.alpha = alpha
            after.generation += 1
        return ["engine", "set", f"alpha={alpha}", "--expected-generation",
                str(m.generation)], after
    if kind < 0.24:
        path = rng.choice([912, 922])
        policy = "crash-a" if path == 912 else "crash-b"
        up = rng.random() < 0.5
        (after.down.discard if up else after.down.add)(path)
        return ["path", "up" if up else "down", policy, "--path-id", str(path)], after
    changes = []
    for _ in range(rng.randint(1, 6)):
        what = rng.random()
        if what < 0.45:
            rid = rng.randint(1000, 1199)
            dst = f"10.1.{rid // 256}.{rid % 256}"
            pol = rng.choice(list(POLICIES))
            changes.append({"upsert_steering": {"id": rid, "exact": {
                "destination": dst, "dest_qp": rid}, "policy": pol}})
            after.rules[rid] = (dst, rid, pol)
        elif what < 0.7:
            ids = [i for i in after.rules if i != 900]
            if not ids:
                continue
            rid = rng.choice(ids)
            changes.append({"delete_steering": rid})
            del after.rules[rid]
        elif what < 0.85:
            pol = rng.choice(list(POLICIES))
            changes.append({"upsert_steering": {"id": 900, "prefix": "10.0.9.0/24",
                                                "policy": pol}})
            after.rules[900] = ("10.0.9.0/24", 0, pol)
        else:
            msg = policy_msg(rng.choice(list(POLICIES)), rng.randint(0, 3))
            changes.append({"upsert_policy": msg})
            apply_policy(after, msg)
    if not changes:
        changes.append({"upsert_steering": {"id": 900, "prefix": "10.0.9.0/24",
                                            "policy": "crash-a"}})
        after.rules[900] = ("10.0.9.0/24", 0, "crash-a")
    after.generation += 1
    path = os.path.join(work, f"change-{after.generation}.json")
    with open(path, "w") as f:
        json.dump({"changes": changes, "expected_generation": m.generation}, f)
    return ["apply", "-f", path], after


# ---- the gateway ----------------------------------------------------------------------------
class Gateway:
    def __init__(self, n):
        self.sock = os.path.join(work, "agent.sock")
        self.out = os.path.join(work, f"fabric-out-{n}.pcap")
        self.log_path = os.path.join(work, f"gw-{n}.log")
        eal = gwlib.eal_args(gwlib.unique_prefix(f"pc{n}"), [
            f"net_pcap0,rx_pcap={host_pcap}", f"net_pcap1,tx_pcap={self.out}"], mem_mb=256)
        self.log = open(self.log_path, "w")
        self.proc = gwlib.start(eal, [
            "--config", gwlib.DEMO_JSON, "--host-port", "net_pcap0", "--fabric-port", "net_pcap1",
            "--stats-interval", "0", "--agent-listen", "unix:" + self.sock,
            "--agent-state", state_path,
            # Compacted every few changes (the snapshot is a few kB): kills land in the middle
            # of background snapshots and journal restarts too.
            "--agent-journal-kb", "1"], stdout=self.log, stderr=subprocess.STDOUT)
        # Generous: an fsync at start (a torn tail cut off) can wait for a busy disk.
        deadline = time.time() + 90
        while time.time() < deadline:
            if self.proc.poll() is not None:
                self.fail(f"gateway exited with {self.proc.returncode} at start")
            if os.path.exists(self.sock):
                r = ctl_run("health", timeout="2")
                if r.returncode == 0 and r.stdout.strip() == "SERVING":
                    return
            time.sleep(0.02)
        self.fail("agent not SERVING within 90 s")

    def fail(self, msg):
        self.log.flush()
        with open(self.log_path) as f:
            print(f.read()[-4000:], flush=True)
        gwlib.fail(msg)

    def kill(self):
        self.proc.send_signal(signal.SIGKILL)
        try:
            # SIGKILL waits for a system call in uninterruptible sleep (an fsync on a busy
            # disk) to end.
            self.proc.wait(timeout=120)
        except subprocess.TimeoutExpired:
            with open(f"/proc/{self.proc.pid}/wchan") as f:
                wchan = f.read()
            self.fail(f"gateway still alive 120 s after SIGKILL (waiting in {wchan})")
        self.log.close()


def ctl_run(*args, timeout="10"):
    return subprocess.run([CTL, "--socket", os.path.join(work, "agent.sock"), "--timeout", timeout,
                           *args], capture_output=True, text=True, timeout=60)


def ctl_json(*args):
    r = ctl_run("--json", *args)
    if r.returncode != 0:
        gwlib.fail(f"srv6gw-ctl {' '.join(args)}: {r.stderr}")
    return json.loads(r.stdout)


def read_state(gw):
    """The gateway's state as a Model."""
    m = Model()
    st = ctl_json("state")
    m.generation = int(st["generation"])
    for r in ctl_json("list", "steering")["rules"]:
        rid = int(r["id"])
        if rid < 900:
            continue  # demo.json's own rules
        if "exact" in r:
            m.rules[rid] = (r["exact"]["destination"], int(r["exact"]["dest_qp"]), r["policy"])
        else:
            m.rules[rid] = (r["prefix"], 0, r["policy"])
    for p in ctl_json("list", "policies")["policies"]:
        if p["name"] in POLICIES:
            apply_policy(m, p)
    eng = ctl_json("engine", "show")
    if eng["set_by_agent"]:
        m.alpha = float(eng["params"]["alpha"])
    stats = ctl_json("stats")
    for p in stats["policies"]:
        if p["name"] in POLICIES:
            for path in p["paths"]:
                if float(path["factor"]) == 0.0:
                    m.down.add(int(path["path_id"]))
    return m


def srh_segments(frame):
    """The SRv6 segment list (path order) of an encapsulated frame, or None."""
    if len(frame) < 14 + 40 + 8 or frame[12:14] != b"\x86\xdd" or frame[14 + 6] != 43:
        return None
    srh = frame[54:]
    n = srh[4] + 1  # last entry + 1
    sids = [srh[8 + 16 * i: 24 + 16 * i] for i in range(n)]
    import ipaddress
    return [str(ipaddress.IPv6Address(s)) for s in reversed(sids)]


def read_pcap(path):
    with open(path, "rb") as f:
        data = f.read()
    frames, off = [], 24
    while off + 16 <= len(data):
        caplen = struct.unpack_from("<I", data, off + 8)[0]
        frames.append(data[off + 16: off + 16 + caplen])
        off += 16 + caplen
    return frames


def check_traffic(gw, m, cycle):
    """The 8 packets of the host pcap, sent at start, follow rule 900 of the restored state."""
    deadline = time.time() + 10
    frames = []
    while time.time() < deadline:
        frames = read_pcap(gw.out) if os.path.exists(gw.out) else []
        if len(frames) >= 8:
            break
        time.sleep(0.05)
    gwlib.check(len(frames) == 8, f"cycle {cycle}: {len(frames)} of 8 packets out")
    policy = m.rules[900][2]
    allowed = [list(sl[2]) for sl in m.policies[policy] if sl[1] not in m.down]
    for i, fr in enumerate(frames):
        seg = srh_segments(fr)
        gwlib.check(seg in allowed, f"cycle {cycle}: packet {i} carries {seg}; rule 900 -> "
                    f"{policy}, usable lists {allowed}")


# ---- the run --------------------------------------------------------------------------------
t_start = time.time()
gw = Gateway(0)
eng0 = ctl_json("engine", "show")
gwlib.check(not eng0["set_by_agent"], "a fresh state directory has engine parameters set")
config_alpha[0] = float(eng0["params"]["alpha"])
model = Model()
setup = {"changes": [{"upsert_policy": policy_msg("crash-a", 0)},
                     {"upsert_policy": policy_msg("crash-b", 2)},
                     {"upsert_steering": {"id": 900, "prefix": "10.0.9.0/24", "policy": "crash-a"}}]}
with open(os.path.join(work, "setup.json"), "w") as f:
    json.dump(setup, f)
ctl_json("apply", "-f", os.path.join(work, "setup.json"))
model.generation = 1
for c in setup["changes"]:
    if "upsert_policy" in c:
        apply_policy(model, c["upsert_policy"])
model.rules[900] = ("10.0.9.0/24", 0, "crash-a")

outcomes = {"acknowledged": 0, "in flight": 0}
changes_total = 0
for cycle in range(1, CYCLES + 1):
    # The storm: one change at a time until the kill.
    acked = [model]
    in_flight = [None]
    stop = threading.Event()
    first_ack = threading.Event()
    misanswered = []

    def storm():
        while not stop.is_set():
            args, after = next_change(acked[-1])
            in_flight[0] = after
            r = ctl_run("--json", *args)
            if r.returncode != 0:
                return  # the gateway is gone (or refused: checked by the state below)
            # The generation answered is the model's: a model that counts a change the gateway
            # did not make fails here, not as a "lost" change after the restart.
            if args[0] in ("apply", "engine"):
                answered = int(json.loads(r.stdout).get("generation", 0))
                if answered != after.generation:
                    misanswered.append(f"{' '.join(args)} answered generation {answered}, "
                                       f"the model says {after.generation}")
                    return
            acked.append(after)
            in_flight[0] = None
            first_ack.set()

    t = threading.Thread(target=storm)
    t.start()
    # The kill comes 0.05-0.5 s into the storm once it has had a change acknowledged: on a
    # loaded machine one srv6gw-ctl change can take longer than the whole window, and storms
    # that never get a change through would test restarts of an unchanged state only.
    first_ack.wait(30)
    time.sleep(rng.uniform(0.05, 0.5))
    gw.kill()
    stop.set()
    t.join(60)
    gwlib.check(not misanswered, f"cycle {cycle}: {misanswered}")
    changes_total += len(acked) - 1

    t_restart = time.time()
    gw = Gateway(cycle)
    t_serving = time.time()
    got = read_state(gw)
    t_read = time.time()
    last = acked[-1]
    if got.key() == last.key():
        outcomes["acknowledged"] += 1
        model = last
    elif in_flight[0] is not None and got.key() == in_flight[0].key():
        outcomes["in flight"] += 1
        model = in_flight[0]
    else:
        gw.fail(f"cycle {cycle}: restored {got.describe()}\n  acknowledged {last.describe()}\n"
                f"  in flight {in_flight[0].describe() if in_flight[0] else None}")
    check_traffic(gw, model, cycle)
    print(f"cycle {cycle}: serving after {t_serving - t_restart:.2f} s, state read in "
          f"{t_read - t_serving:.2f} s, packets checked in {time.time() - t_read:.2f} s; "
          f"{len(acked) - 1} changes acknowledged, restored "
          f"{'the one in flight' if model is in_flight[0] else 'the last acknowledged'} "
          f"({model.describe()})", flush=True)

gw.kill()
took = time.time() - t_start
# Background compactions the storms ran (the daemons' logs; one per ~50 changes: a kill lands
# in one now and then, not in every run).
compactions = 0
for n in range(CYCLES + 1):
    try:
        with open(os.path.join(work, f"gw-{n}.log")) as f:
            compactions += f.read().count("agent: background snapshot of generation")
    except OSError:
        pass
print(f"persist-crash: {CYCLES} SIGKILLs during {changes_total} acknowledged changes "
      f"({compactions} background compactions); restored "
      f"the last acknowledged state {outcomes['acknowledged']} times, the one in flight "
      f"{outcomes['in flight']} times; ok in {took:.1f} s", flush=True)
gwlib.check(changes_total >= CYCLES, "the storms made too few changes to mean anything")
sys.exit(0)
