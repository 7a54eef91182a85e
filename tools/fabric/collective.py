#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
# Collective completion time per path-selection scheme on the emulated 4-host fabric
# (collective_lib.py, docs/fabric.md "Collectives under DCQCN"):
#
#   collective.py [--schemes flow,packet,flowlet,balanced,engine] [--scenarios healthy,
#                 degraded,cut] [--collective alltoall|allreduce] [--bytes N] [--iterations N]
#                 [--qps-per-peer N] [--no-dcqcn] [--out DIR]
#
# Schemes: flow (per-QP hashing), packet (spraying), flowlet (5 ms gap), balanced, and
# engine (flow with the local SR engine and reflection); every other scheme runs with the
# engine off. Scenarios: healthy; degraded (L1's uplink to spine 1 at 4 of 20 Mbit/s); cut
# (link L1-S1 down for the whole run; the gateways' path probes take the dead path out).
# Prints one line per run and writes DIR/collective.json and DIR/collective.md (the table).
# Needs root; exits 77 where the machine cannot build the fabric.
import argparse
import json
import os
import sys
import tempfile
import time

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import collective_lib as cl  # noqa: E402
import fabric_lib as fl  # noqa: E402

SCHEMES = {  # name: (selection mode, flowlet gap us, engine)
    "flow": ("flow", None, False),
    "packet": ("packet", None, False),
    "flowlet": ("flowlet", 5000, False),
    "balanced": ("balanced", None, False),
    "engine": ("flow", None, True),
}
DEGRADED_SPINE, LINK_MBIT, DEGRADED_MBIT = 1, 20.0, 4.0


def apply_scenario(fab, scenario, on=True):
    if scenario == "degraded":
        fab.shape("L1", DEGRADED_SPINE, DEGRADED_MBIT if on else LINK_MBIT)
    elif scenario == "cut":
        fab.cut(DEGRADED_SPINE, down=on)


def run_matrix(work, schemes, scenarios, collective, nbytes, iterations, qps_per_peer,
               dcqcn=True, log=fl.log):
    fab = cl.CollectiveFabric(work, link_mbit=LINK_MBIT)
    fab.precompile(DEGRADED_MBIT)
    results = []
    engine_state = None
    try:
        for scheme in schemes:
            mode, gap, engine = SCHEMES[scheme]
            if engine_state != engine:
                fab.stop_gateways()
                t = time.monotonic()
                fab.start(engine=engine)
                log(f"gateways started (engine {'on' if engine else 'off'}) in "
                    f"{time.monotonic() - t:.1f} s")
                engine_state = engine
            fab.push_policies(mode=mode, flowlet_gap_us=gap)
            for scenario in scenarios:
                apply_scenario(fab, scenario, True)
                if scenario == "cut":
                    time.sleep(0.5)  # the probes' detection (65 ms) and hold-down
                t = time.monotonic()
                res = fab.run_collective(collective, nbytes, iterations, qps_per_peer,
                                         dcqcn=dcqcn)
                res.update({"scheme": scheme, "scenario": scenario,
                            "wall_s": round(time.monotonic() - t, 2)})
                apply_scenario(fab, scenario, False)
                log(f"{scheme:>9} {scenario:>9}: {cl.fmt(res)}")
                results.append(res)
    finally:
        fab.cleanup()
    return results


def table(results):
    lines = ["| scheme | scenario | CCT median s | CCT p99 s | goodput Mbit/s per rank | "
             "CNPs | retransmitted | NAKs | timeouts | reordered |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for r in results:
        s, k = r["sender"], r["sink"]
        done = "" if r["completed"] else " (not completed)"
        lines.append(
            f"| {r['scheme']} | {r['scenario']}{done} | {r.get('cct_median_s', '—')} | "
            f"{r.get('cct_p99_s', '—')} | {r.get('goodput_mbit_per_rank', '—')} | "
            f"{k['cnps']} | {s['retransmitted']} ({r['retransmit_fraction']:.1%}) | "
            f"{k['naks']} | {s['timeouts']} | {r['reorder_fraction']:.2%} |")
    return "\n".join(lines) + "\n"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--schemes", default="flow,packet,flowlet,balanced,engine")
    ap.add_argument("--scenarios", default="healthy,degraded,cut")
    ap.add_argument("--collective", default="alltoall", choices=["alltoall", "allreduce"])
    ap.add_argument("--bytes", type=int, default=1 << 20)
    ap.add_argument("--iterations", type=int, default=5)
    ap.add_argument("--qps-per-peer", type=int, default=1)
    ap.add_argument("--no-dcqcn", action="store_true")
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    schemes = args.schemes.split(",")
    scenarios = args.scenarios.split(",")
    for s in schemes:
        if s not in SCHEMES:
            fl.rl.fail(f"--schemes: unknown scheme '{s}' (known: {', '.join(SCHEMES)})")
    for s in scenarios:
        if s not in ("healthy", "degraded", "cut"):
            fl.rl.fail(f"--scenarios: unknown scenario '{s}'")
    fl.require_tools()
    work = tempfile.mkdtemp(prefix="srv6gw-collective-")
    out_dir = os.path.abspath(args.out or work)
    os.makedirs(out_dir, exist_ok=True)
    results = run_matrix(work, schemes, scenarios, args.collective, args.bytes,
                         args.iterations, args.qps_per_peer, dcqcn=not args.no_dcqcn)
    name = f"collective-{args.collective}"
    with open(os.path.join(out_dir, f"{name}.json"), "w") as f:
        json.dump({"args": vars(args), "runs": results}, f, indent=1)
    with open(os.path.join(out_dir, f"{name}.md"), "w") as f:
        f.write(table(results))
    print(table(results))
    fl.log(f"results in {out_dir}")


if __name__ == "__main__":
    fl.rl.main_wrapper(main)
