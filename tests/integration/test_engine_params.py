#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
# Local SR engine parameters and path downs over gRPC, through the daemon and across restarts.
# srv6gw with its gRPC agent and a state file, one policy of two segment lists in packet
# (spray) mode, RoCEv2 traffic replayed without end on the host port (net_pcap infinite_rx),
# the fabric port on net_null:
#   - `srv6gw-ctl engine show`: the configuration file's values;
#   - `engine set alpha=0.5 hold-down-us=3000`: a new generation, the running engine logs its
#     new parameters (no restart), `engine show` says they were set over gRPC;
#   - an invalid value is refused naming params.<field> and the YANG node; nothing changes;
#   - `engine set enabled=false` takes effect live: SetPathState is then FAILED_PRECONDITION;
#   - `path down` of one list: only the other list carries traffic;
#   - restart with the same configuration file and state file: the engine parameters set over
#     gRPC and the path down are restored (only the up list moves, its factor is 0);
#   - `path up`, restart: both lists carry traffic again.
import json
import os
import time

import gwlib

CTL = gwlib.CTL
if not os.access(CTL, os.X_OK):
    gwlib.fail(f"srv6gw-ctl {CTL} missing (SRV6GW_CTL)")

work = gwlib.workdir("engineparams")
POLICY = "it-spray"
LISTS = {"via-a": 821, "via-b": 822}
STATE = os.path.join(work, "state.json")

with open(gwlib.DEMO_JSON) as f:
    DEMO = json.load(f)["srv6gw:gateway"]

CONFIG = os.path.join(work, "gw.json")
with open(CONFIG, "w") as f:
    json.dump({"srv6gw:gateway": {
        "ports": DEMO["ports"],
        "source-address": DEMO["source-address"],
        "stats-interval-ms": 0,
        "engine": {"hold-down-us": 1000},
        "policies": {"policy": [{
            "name": POLICY, "color": 82, "endpoint": "10.0.8.7",
            "selection": {"mode": "packet"},
            "segment-list": [{"name": n, "path-id": pid, "weight": 1,
                              "sid": [f"fc00:0:8{i}::e", "fc00:0:8::d4"]}
                             for i, (n, pid) in enumerate(LISTS.items())]}]},
        "steering": {"rule": [{"id": 80, "prefix": "10.0.8.0/24", "policy": POLICY}]},
    }}, f)


HOST_PCAP = os.path.join(work, "host-in.pcap")
gwlib.write_roce_writes_pcap(HOST_PCAP)


class Gateway(gwlib.AgentGateway):
    def __init__(self, name):
        super().__init__(name, work, CONFIG, HOST_PCAP, agent_state=STATE)

    def engine(self):
        return json.loads(self.ctl("--json", "engine", "show").stdout)

    def paths(self):
        s = json.loads(self.ctl("--json", "stats").stdout)
        for p in s.get("policies", []):
            if p["name"] == POLICY:
                return {x["segment_list"]: (int(x["packets"]), float(x["factor"]))
                        for x in p["paths"]}
        self.fail(f"no policy {POLICY} in stats")

    def moved(self, wait=0.4):
        a = self.paths()
        time.sleep(wait)
        b = self.paths()
        return {n: b[n][0] - a[n][0] for n in LISTS}, {n: b[n][1] for n in LISTS}

    def wait_log(self, text, timeout=5):
        deadline = time.time() + timeout
        while time.time() < deadline:
            if any(text in line for line in self.log):
                return
            time.sleep(0.05)
        self.fail(f"no log line with {text!r} within {timeout} s")


def main():
    gw = Gateway("engp1")
    try:
        e = gw.engine()
        print(f"start: {e}", flush=True)
        gwlib.check(e["set_by_agent"] is False, f"engine params should be the file's: {e}")
        gwlib.check(e["params"]["hold_down_us"] == 1000 and e["params"]["alpha"] == 0.25,
                    f"file values expected: {e['params']}")

        r = gw.ctl("engine", "set", "alpha=0.5", "hold-down-us=3000")
        print(r.stdout.strip(), flush=True)
        gwlib.check("applied, generation 1" in r.stdout, f"engine set: {r.stdout}")
        # In force in the running engine, without a restart: it logs its new parameters.
        gw.wait_log("alpha=0.5 ")
        gw.wait_log("hold-down-us=3000 ")
        e = gw.engine()
        gwlib.check(e["set_by_agent"] is True and e["params"]["alpha"] == 0.5 and
                    e["params"]["hold_down_us"] == 3000 and e["generation"] == "1",
                    f"after engine set: {e}")

        r = gw.ctl("engine", "set", "alpha=0", expect=1)
        print(f"refused: {r.stderr.strip()}", flush=True)
        gwlib.check("INVALID_ARGUMENT" in r.stderr and "params.alpha" in r.stderr and
                    "/srv6gw:gateway/engine/alpha" in r.stderr, f"alpha=0: {r.stderr}")
        r = gw.ctl("engine", "set", "readmit-threshold=9", expect=1)
        gwlib.check("params.readmit_threshold" in r.stderr, f"readmit-threshold=9: {r.stderr}")
        gwlib.check(gw.engine() == e, "a refused change changed the engine parameters")

        # enabled=false is live: the engine then refuses path commands.
        gw.ctl("engine", "set", "enabled=false")
        deadline = time.time() + 5
        while True:
            r = gw.ctl("path", "down", POLICY, "via-b", expect=None)
            if r.returncode == 1 and "FAILED_PRECONDITION" in r.stderr:
                break
            gwlib.check(time.time() < deadline, f"path down with the engine disabled: {r}")
            if r.returncode == 0:  # raced the engine's next poll: undo and retry
                gw.ctl("path", "up", POLICY, "via-b")
            time.sleep(0.05)
        gw.ctl("engine", "set", "enabled=true")
        gw.wait_log("enabled=true ")
        time.sleep(0.1)

        moved, _ = gw.moved()
        print(f"both up: {moved}", flush=True)
        gwlib.check(all(v > 0 for v in moved.values()), f"both lists should move: {moved}")
        gw.ctl("path", "down", POLICY, "via-b")
        moved, factors = gw.moved()
        print(f"via-b down: {moved} factors {factors}", flush=True)
        gwlib.check(moved["via-b"] == 0 and moved["via-a"] > 0, f"via-b is down: {moved}")
    finally:
        gw.stop()

    with open(STATE) as f:
        state = json.load(f)
    print(f"state file: generation {state['generation']}, paths-down {state.get('paths-down')}, "
          f"engine-params-from-agent {state.get('engine-params-from-agent')}", flush=True)

    gw = Gateway("engp2")
    try:
        e = gw.engine()
        gwlib.check(e["set_by_agent"] is True and e["params"]["alpha"] == 0.5 and
                    e["params"]["hold_down_us"] == 3000 and e["generation"] == "3",
                    f"after restart: {e}")
        gw.wait_log("restored down")
        moved, factors = gw.moved()
        print(f"after restart: {moved} factors {factors}", flush=True)
        gwlib.check(moved["via-b"] == 0 and moved["via-a"] > 0 and factors["via-b"] == 0,
                    f"via-b should still be down after the restart: {moved} {factors}")
        gw.ctl("path", "up", POLICY, "via-b")
        moved, _ = gw.moved()
        gwlib.check(all(v > 0 for v in moved.values()), f"both lists after path up: {moved}")
    finally:
        gw.stop()

    gw = Gateway("engp3")
    try:
        moved, factors = gw.moved()
        print(f"after path up and restart: {moved} factors {factors}", flush=True)
        gwlib.check(all(v > 0 for v in moved.values()), f"both lists should move: {moved}")
    finally:
        gw.stop()
    print("ok")


main()
