#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
# Controller path administration through the daemon: srv6gw with its gRPC agent, one policy of
# two segment lists in packet (spray) mode, RoCEv2 traffic replayed without end on the host
# port (net_pcap infinite_rx) and the fabric port on net_null. While `srv6gw-ctl watch` runs:
#   - both lists carry traffic (per-path counters of `srv6gw-ctl stats`);
#   - `srv6gw-ctl path down` of one list: the watch stream shows the path-state event (down,
#     explicit-down, factor 1 -> 0) and from then on only the other list's counter moves;
#   - `srv6gw-ctl path up`: the event (up, explicit-up) and both counters move again;
#   - an unknown list is NOT_FOUND, a missing policy NOT_FOUND; the final statistics JSON
#     carries the engine object and the feedback counters.
# A second run with engine/enabled false: SetPathState is FAILED_PRECONDITION.
import json
import os
import subprocess
import threading
import time

import gwlib

CTL = gwlib.CTL
if not os.access(CTL, os.X_OK):
    gwlib.fail(f"srv6gw-ctl {CTL} missing (SRV6GW_CTL)")

work = gwlib.workdir("pathstate")
POLICY = "it-spray"
LISTS = {"via-a": 811, "via-b": 812}

with open(gwlib.DEMO_JSON) as f:
    DEMO = json.load(f)["srv6gw:gateway"]


def config(engine_enabled):
    return {"srv6gw:gateway": {
        "ports": DEMO["ports"],
        "source-address": DEMO["source-address"],
        "stats-interval-ms": 0,
        "engine": {"enabled": engine_enabled, "hold-down-us": 1000},
        "policies": {"policy": [{
            "name": POLICY, "color": 81, "endpoint": "10.0.8.7",
            "selection": {"mode": "packet"},
            "segment-list": [{"name": n, "path-id": pid, "weight": 1,
                              "sid": [f"fc00:0:8{i}::e", "fc00:0:8::d4"]}
                             for i, (n, pid) in enumerate(LISTS.items())]}]},
        "steering": {"rule": [{"id": 80, "prefix": "10.0.8.0/24", "policy": POLICY}]},
    }}


HOST_PCAP = os.path.join(work, "host-in.pcap")
gwlib.write_roce_writes_pcap(HOST_PCAP)


class Gateway(gwlib.AgentGateway):
    def __init__(self, name, engine_enabled):
        cfg = os.path.join(work, f"{name}.json")
        with open(cfg, "w") as f:
            json.dump(config(engine_enabled), f)
        super().__init__(name, work, cfg, HOST_PCAP, agent_state="none")

    def path_packets(self):
        s = json.loads(self.ctl("--json", "stats").stdout)
        out = {}
        for p in s.get("policies", []):
            if p["name"] == POLICY:
                for path in p["paths"]:
                    out[path["segment_list"]] = int(path["packets"])
        gwlib.check(set(out) == set(LISTS), f"{self.name}: paths of {POLICY}: {out}")
        return out

    def moved(self, wait=0.4):
        a = self.path_packets()
        time.sleep(wait)
        b = self.path_packets()
        return {n: b[n] - a[n] for n in LISTS}

    def moved_until(self, enough, timeout=15):
        """Packets per list over a window that grows until enough(window) holds or timeout
        passes: on a loaded machine the worker can be off the CPU for a whole short window
        (CI once saw neither list move in 0.4 s)."""
        a = self.path_packets()
        deadline = time.time() + timeout
        while True:
            time.sleep(0.4)
            b = self.path_packets()
            m = {n: b[n] - a[n] for n in LISTS}
            if enough(m) or time.time() > deadline:
                return m


class Watch:
    """`srv6gw-ctl --json watch --kind path-state` in the background, lines collected."""

    def __init__(self, gw):
        self.proc = subprocess.Popen([CTL, "--socket", gw.sock, "--json", "watch", "--kind",
                                      "path-state"], stdout=subprocess.PIPE, text=True)
        self.events = []
        self.lock = threading.Lock()
        threading.Thread(target=self._read, daemon=True).start()
        self.wait_for(lambda e: e.get("kind") == "EVENT_KIND_SUBSCRIBED", "SUBSCRIBED")

    def _read(self):
        for line in self.proc.stdout:
            with self.lock:
                self.events.append(json.loads(line))

    def wait_for(self, pred, what, timeout=10):
        deadline = time.time() + timeout
        while time.time() < deadline:
            with self.lock:
                for e in self.events:
                    if pred(e):
                        return e
            time.sleep(0.05)
        gwlib.fail(f"watch: no {what} event within {timeout} s; got {self.events}")

    def close(self):
        self.proc.terminate()
        self.proc.wait(timeout=10)


def path_event(state, reason):
    def pred(e):
        p = e.get("path", {})
        return (e.get("kind") == "EVENT_KIND_PATH_STATE" and p.get("policy") == POLICY and
                p.get("segment_list") == "via-b" and int(p.get("path_id", 0)) == LISTS["via-b"] and
                p.get("new_state") == state and p.get("reason") == reason)
    return pred


# ---- run 1: the engine enabled --------------------------------------------------------------
gw = Gateway("pathstate", True)
watch = Watch(gw)
deadline = time.time() + 20
while min(gw.path_packets().values()) == 0:
    if time.time() > deadline:
        gw.fail(f"both lists never carried traffic: {gw.path_packets()}")
    time.sleep(0.1)
m = gw.moved_until(lambda m: all(v > 0 for v in m.values()))
print(f"spraying: {m}", flush=True)
gwlib.check(all(v > 0 for v in m.values()), f"before: both lists must carry traffic: {m}")

r = json.loads(gw.ctl("--json", "path", "down", POLICY, "via-b").stdout)
gwlib.check(r.get("changed") is True and r.get("segment_list") == "via-b" and
            int(r.get("path_id", 0)) == LISTS["via-b"] and float(r.get("factor", 1)) == 0.0,
            f"path down answer: {r}")
e = watch.wait_for(path_event("PATH_STATE_DOWN", "explicit-down"), "via-b down")
gwlib.check(e["path"]["old_state"] == "PATH_STATE_UP" and float(e["path"]["old_factor"]) == 1.0
            and float(e["path"].get("new_factor", 0)) == 0.0, f"down event: {e}")
time.sleep(0.1)  # a burst in flight at the switch may still use the old weights
m = gw.moved_until(lambda m: m["via-a"] > 0)
print(f"via-b down: {m}", flush=True)
gwlib.check(m["via-b"] == 0 and m["via-a"] > 0, f"after down, only via-a may move: {m}")
again = gw.ctl("path", "down", POLICY, "--path-id", str(LISTS["via-b"]))
gwlib.check("unchanged" in again.stdout, f"second down: {again.stdout}")

gw.ctl("path", "up", POLICY, "via-b")
e = watch.wait_for(path_event("PATH_STATE_UP", "explicit-up"), "via-b up")
gwlib.check(float(e["path"].get("old_factor", 0)) == 0.0 and
            float(e["path"]["new_factor"]) == 1.0, f"up event: {e}")
time.sleep(0.1)
m = gw.moved_until(lambda m: all(v > 0 for v in m.values()))
print(f"via-b up: {m}", flush=True)
if not all(v > 0 for v in m.values()):
    gw.fail(f"after up, both lists must carry traffic: {m}; stats: {gw.ctl('--json', 'stats').stdout[-3000:]}")

r = gw.ctl("path", "down", POLICY, "via-z", expect=1)
gwlib.check("NOT_FOUND" in r.stderr and "via-z" in r.stderr, f"unknown list: {r.stderr}")
r = gw.ctl("path", "down", "no-such-policy", "via-a", expect=1)
gwlib.check("NOT_FOUND" in r.stderr and "no such policy" in r.stderr, f"unknown policy: {r.stderr}")
watch.close()
final = gw.stop()
eng = final.get("engine")
gwlib.check(isinstance(eng, dict) and eng["decisions"]["explicit-down"] == 1 and
            eng["decisions"]["explicit-up"] == 1 and eng["events_published"] >= 2,
            f"final engine stats: {eng}")
for k in ("feedback_events", "feedback_dropped", "cnp_reflected"):
    gwlib.check(k in final["total"], f"final stats total lacks {k}")

# ---- run 2: the engine disabled -------------------------------------------------------------
gw = Gateway("pathstate-off", False)
r = gw.ctl("path", "down", POLICY, "via-b", expect=1)
gwlib.check("FAILED_PRECONDITION" in r.stderr, f"engine disabled: {r.stderr}")
gw.stop()
print("PASS", flush=True)
