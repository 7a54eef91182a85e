#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
# Oracle: the Apply requests srv6gw-plan writes for the 2-tier 128-GPU example are accepted by
# a real srv6gw (its gRPC agent on a unix socket, vdev ports, no root):
#   - `srv6gw-ctl apply --dry-run` of gateways h0, h17 and h127 in every encap mode, with
#     pinned flows (exact rules, pinned policies);
#   - h0's Apply for real: the daemon then holds its 127 + pinned policies;
#   - after a LAG member of leaf0--spine1 fails, h0's minimal Apply (srv6gw-plan --change)
#     applies on top, with the generation it read, and halves spine1's weights.
# Usage: apply_oracle.py SRV6GW_PLAN TOPOLOGY
import json
import os
import subprocess
import sys

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                "integration"))
import gwlib  # noqa: E402

plan, topology = sys.argv[1:3]
if not os.access(gwlib.CTL, os.X_OK):
    gwlib.fail(f"srv6gw-ctl {gwlib.CTL} missing")
work = gwlib.workdir("pathalg-apply")

# Flows of h0 (and others) to pin: exact (destination, DestQP) rules.
flows = os.path.join(work, "flows.txt")
with open(flows, "w") as f:
    for i in range(64):
        f.write(f"h0 h{16 + (i * 7) % 112} {0x100 + i} {(i % 5 + 1) << 20}\n")
        f.write(f"h{17 + i} h{(i * 3) % 16} {0x200 + i} {(i % 3 + 1) << 20}\n")

with open(gwlib.DEMO_JSON) as f:
    demo = json.load(f)["srv6gw:gateway"]
config = os.path.join(work, "gw.json")
with open(config, "w") as f:
    json.dump({"srv6gw:gateway": {
        "ports": demo["ports"], "source-address": "fc00:0:1000::1", "stats-interval-ms": 0,
        "capacities": {"policies": 1024, "exact-entries": 65536}}}, f)
host_pcap = os.path.join(work, "host.pcap")
gwlib.write_roce_writes_pcap(host_pcap, dst="10.0.0.99", count=4)


def run_plan(*args):
    r = subprocess.run([plan, topology] + list(args), capture_output=True, text=True)
    if r.returncode != 0:
        gwlib.fail(f"srv6gw-plan {' '.join(args)}: {r.stderr}")
    return r.stdout


outs = {}
for mode in ("encaps", "encaps-red", "usid"):
    outs[mode] = os.path.join(work, mode)
    print(run_plan("--flows", flows, "--encap", mode, "--out", outs[mode]), flush=True)

gw = gwlib.AgentGateway("pathalg", work, config, host_pcap, agent_state="none")
try:
    for mode, d in outs.items():
        for host in ("h0", "h17", "h127"):
            r = gw.ctl("apply", "-f", os.path.join(d, f"{host}.json"), "--dry-run")
            if "dry run: would apply" not in r.stdout:
                gw.fail(f"{mode} {host}: {r.stdout}")
            print(f"ok dry run {mode} {host}: {r.stdout.splitlines()[0]}", flush=True)
    h0 = os.path.join(outs["usid"], "h0.json")
    with open(h0) as f:
        req = json.load(f)
    want = sum(1 for c in req["changes"] if "upsert_policy" in c)
    print(f"h0's Apply: {len(req['changes'])} changes, {os.path.getsize(h0)} bytes of JSON")
    gw.ctl("apply", "-f", h0)
    state = json.loads(gw.ctl("--json", "state").stdout)
    if state.get("policies") != want:
        gw.fail(f"the daemon holds {state.get('policies')} policies, the plan has {want}")
    # A LAG member of leaf0--spine1 down: h0's minimal Apply, on the generation read.
    delta_dir = os.path.join(work, "delta")
    print(run_plan("--flows", flows, "--encap", "usid", "--out", delta_dir,
                   "--change", "leaf0--spine1=1"), flush=True)
    delta = os.path.join(delta_dir, "h0.delta.json")
    with open(delta) as f:
        changes = json.load(f)["changes"]
    if not changes or len(changes) >= len(req["changes"]):
        gw.fail(f"the delta has {len(changes)} changes (full Apply {len(req['changes'])})")
    gw.ctl("apply", "-f", delta, "--expected-generation", str(state["generation"]))
    pol = json.loads(gw.ctl("--json", "show", "policy", "to-h16").stdout)
    weights = {sl["name"]: sl.get("weight", 1) for sl in pol["segment_lists"]
               if not sl.get("backup")}
    if weights.get("spine1") != 1 or weights.get("spine0") != 2:
        gw.fail(f"weights after the change: {weights}")
    print(f"ok delta of {len(changes)} changes applied; to-h16 weights {weights}")
finally:
    gw.stop()
print("the gateway accepted every Apply srv6gw-plan wrote")
