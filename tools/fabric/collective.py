#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
# Collective completion time per path-selection scheme on the emulated 4-host fabric
# (collective_lib.py, docs/design/fabric.md "Collectives under DCQCN"):
#
#   collective.py [--schemes flow,packet,flowlet,balanced,engine,controller] [--scenarios
#                 healthy,degraded,cut] [--collective alltoall|allreduce] [--bytes N]
#                 [--iterations N] [--qps-per-peer N] [--rounds N] [--no-dcqcn] [--out DIR]
#                 [--plot]
#
# Schemes: flow (per-QP hashing), packet (spraying), flowlet (5 ms gap), balanced, engine
# (flow with the local SR engine and reflection), and controller (srv6gw-controller runs the
# gateways from the fabric's topology; before each run the collective's flows are submitted
# as a job and pinned with exact rules, cancelled after it); every scheme but engine runs
# with the engine off. Scenarios: healthy; degraded (L1's uplink to spine 1 at 4 of 20
# Mbit/s; nothing tells the controller); cut (link L1-S1 down for the whole run; the
# gateways' path probes take the dead path out, and with the controller the job is placed
# once the controller has inferred the dead links from those probes and pushed that to every
# gateway).
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
    "controller": ("controller", None, False),
}
DEGRADED_SPINE, LINK_MBIT, DEGRADED_MBIT = 1, 20.0, 4.0


def apply_scenario(fab, scenario, on=True):
    if scenario == "degraded":
        fab.shape("L1", DEGRADED_SPINE, DEGRADED_MBIT if on else LINK_MBIT)
    elif scenario == "cut":
        fab.cut(DEGRADED_SPINE, down=on)


def run_matrix(work, schemes, scenarios, collective, nbytes, iterations, qps_per_peer,
               dcqcn=True, rounds=1, log=fl.log):
    """Every (scheme, scenario) `rounds` times, the schemes interleaved within each round so
    that the machine's load drifts over all of them alike; a round runs `iterations`."""
    fab = cl.CollectiveFabric(work, link_mbit=LINK_MBIT)
    fab.precompile(DEGRADED_MBIT)
    runs = {}
    engine_state = None
    try:
        for rnd in range(rounds):
            for scheme in schemes:
                mode, gap, engine = SCHEMES[scheme]
                placing = mode == "controller"
                replace = False
                if not placing and fab.controller is not None:
                    fab.stop_controller()  # its objects go with the next push
                    replace = True
                if engine_state != engine:
                    fab.stop_gateways()
                    t = time.monotonic()
                    fab.start(engine=engine)
                    log(f"gateways started (engine {'on' if engine else 'off'}) in "
                        f"{time.monotonic() - t:.1f} s")
                    engine_state = engine
                if placing and fab.controller is None:
                    t = time.monotonic()
                    fab.start_controller()
                    log(f"controller started, every gateway on its plan in "
                        f"{time.monotonic() - t:.1f} s")
                elif not placing:
                    fab.push_policies(mode=mode, flowlet_gap_us=gap, replace=replace)
                for scenario in scenarios:
                    settle = fab.wait_paths_up()
                    if settle is None:
                        log(f"paths still out 15 s after the push or repair: {fab.paths_out}")
                    t_change = time.monotonic()
                    apply_scenario(fab, scenario, True)
                    extra = {}
                    if scenario == "cut":
                        time.sleep(1.0)  # the probes' detection (~0.3 s, collective_lib.PROBE)
                    if placing:
                        extra = place_job(fab, f"{collective}-{rnd}-{scenario}", collective,
                                          nbytes, qps_per_peer, scenario, t_change, log)
                    version = int(fab.controller.plan()["version"]) if placing else 0
                    t = time.monotonic()
                    res = fab.run_collective(collective, nbytes, iterations, qps_per_peer,
                                             dcqcn=dcqcn, seed=1 + rnd)
                    if placing:
                        # New plans while the job ran: probe verdicts (a false alarm on the
                        # loaded machine moves pinned flows to the multipath policy).
                        extra["plans_during_run"] = int(fab.controller.plan()["version"]) - version
                        if extra["plans_during_run"]:
                            log(f"controller: {extra['plans_during_run']} new plans during "
                                f"the run:\n{fab.controller.tail(1500)}")
                    res.update({"scheme": scheme, "scenario": scenario, "round": rnd,
                                "wall_s": round(time.monotonic() - t, 2),
                                "load_avg": os.getloadavg()[0], "settle_s": settle,
                                "utc": time.strftime("%H:%M:%S", time.gmtime())}, **extra)
                    if placing:
                        fab.cancel_job(extra["job_id"])
                    apply_scenario(fab, scenario, False)
                    if placing and scenario == "cut":
                        # The next job must be placed on the repaired fabric: the probes'
                        # probe-up (after their hold-down) brings the spine back.
                        back = fab.wait_links()
                        log(f"controller: spine {DEGRADED_SPINE} back in the plan "
                            f"{'after %.2f s' % back if back is not None else 'NOT within 15 s'}")
                    log(f"round {rnd} {scheme:>9} {scenario:>9}: {cl.fmt(res)}; "
                        f"load {res['load_avg']:.1f}")
                    runs.setdefault((scheme, scenario), []).append(res)
    finally:
        fab.cleanup()
    return [merge(parts) for parts in runs.values()], [r for p in runs.values() for r in p]


def place_job(fab, job_id, collective, nbytes, qps_per_peer, scenario, t_change, log):
    """The controller's scheme before a run: for a cut, first until the controller has
    inferred the dead spine from the gateways' probes and pushed that to every gateway; then
    the collective's flows submitted as one job and pinned. Returns what goes into the run's
    result: job id, flows per spine, max link load and its lower bound, the cut's spread."""
    out = {"job_id": job_id}
    if scenario == "cut":
        t = fab.wait_links({DEGRADED_SPINE})
        # Not inferred (probes stalled past the timeout): the job is placed as if the link
        # were up and the gateways' own probes move the pinned flows; the run says so.
        out["spread_s"] = None if t is None else round(time.monotonic() - t_change, 2)
        when = "NOT within 15 s" if t is None else f"{out['spread_s']:.2f} s after the cut began"
        log(f"controller: spine {DEGRADED_SPINE}'s links down in the plan and on every "
            f"gateway: {when}")
    elif fab.wait_links() is None:
        # A probe false alarm (2 loaded cores) took a spine out: placed without it; said so.
        log(f"controller: spines {sorted(fab.spines_down)} down in the plan (probes) when "
            f"the job was placed")
    out["spines_down_at_placement"] = sorted(fab.spines_down)
    t = time.monotonic()
    resp, per_spine = fab.submit_job(fab.collective_job(job_id, collective, nbytes,
                                                        qps_per_peer))
    out.update({"placement": {f"S{i}": n for i, n in sorted(per_spine.items())},
                "placed_flows": len(resp.get("placements", [])),
                "max_link_load": resp.get("max_link_load"),
                "lower_bound": resp.get("lower_bound"),
                "job_pinned_s": round(time.monotonic() - t, 2)})
    log(f"controller: job {job_id}: {out['placed_flows']} flows pinned in "
        f"{out['job_pinned_s']:.2f} s, cross-leaf flows per spine {out['placement']}, max link "
        f"load {out['max_link_load']:.4g} (lower bound {out['lower_bound']:.4g})")
    return out


def merge(parts):
    """One (scheme, scenario) over its rounds: CCTs pooled, counters summed."""
    import statistics
    out = {"scheme": parts[0]["scheme"], "scenario": parts[0]["scenario"],
           "rounds": len(parts), "completed": all(p["completed"] for p in parts),
           "cct_s": [c for p in parts for c in p["cct_s"]],
           "sender": {k: sum(p["sender"][k] for p in parts) for k in parts[0]["sender"]},
           "sink": {k: sum(p["sink"][k] for p in parts) for k in parts[0]["sink"]},
           "load_avg": [p["load_avg"] for p in parts],
           "iterations": parts[0]["params"]["iterations"]}
    ccts = sorted(out["cct_s"])
    if ccts:
        out["cct_median_s"] = round(statistics.median(ccts), 4)
        out["cct_p99_s"] = round(ccts[min(len(ccts) - 1, int(0.99 * len(ccts)))], 4)
        ranks = parts[0]["params"]["ranks"]
        out["goodput_mbit_per_rank"] = round(
            out["sender"]["bytes_done"] * 8 / sum(ccts) / 1e6 / ranks, 3)
    s, k = out["sender"], out["sink"]
    out["retransmit_fraction"] = round(s["retransmitted"] / s["data_packets"], 4) \
        if s["data_packets"] else 0.0
    out["reorder_fraction"] = round(k["late"] / k["frames"], 4) if k["frames"] else 0.0
    return out


SIM_SCHEMES = {"flow": "hash", "packet": "spray", "balanced": "balanced",
               "controller": "placement"}
SIM_CHANGE = {"healthy": [], "degraded": ["--degrade", f"L1--S{DEGRADED_SPINE}:0.2"],
              "cut": ["--degrade", f"L1--S{DEGRADED_SPINE}:0"]}


def simulate(work, scenarios, collective, nbytes, seeds=5):
    """tools/fabricsim on this fabric's topology (collective_lib.sim_topology): the fluid
    model's CCT for the schemes it has. Degraded and cut: the plan recomputed on the changed
    topology for the cut (what probing does: the dead path is taken out), the stale plan for
    the degradation (no reaction, fair shares over the slow link). Hashing: the median over
    `seeds` hash seeds. Returns {(scheme, scenario): cct_s}."""
    import subprocess
    sim = os.path.join(fl.BUILD, "tools", "fabricsim", "fabricsim")
    if not os.access(sim, os.X_OK):
        fl.log(f"{sim} not built: no simulator comparison")
        return {}
    topo = os.path.join(work, "sim-topology.json")
    with open(topo, "w") as f:
        json.dump(cl.sim_topology(link_mbit=LINK_MBIT), f)
    out = {}
    for scenario in scenarios:
        res = os.path.join(work, f"sim-{scenario}.json")
        subprocess.run([sim, "run", "--topology", topo, "--collective", collective,
                        "--sizes", str(nbytes), "--schemes", ",".join(SIM_SCHEMES.values()),
                        "--hash-seeds", ",".join(str(i) for i in range(1, seeds + 1)),
                        "--out", res] + SIM_CHANGE[scenario],
                       check=True, capture_output=True)
        with open(res) as f:
            runs = json.load(f)["runs"]
        plan = {"healthy": "healthy", "degraded": "stale", "cut": "recomputed"}[scenario]
        for ours, theirs in SIM_SCHEMES.items():
            ccts = sorted(r["cct_s"] for r in runs if r["scheme"] == theirs and r["plan"] == plan)
            if ccts:
                out[(ours, scenario)] = ccts[len(ccts) // 2]
    return out


def table(results, sim=None):
    sim = sim or {}
    lines = ["| scheme | scenario | CCT median s | CCT p99 s | fabricsim CCT s | "
             "goodput Mbit/s per rank | CNPs | retransmitted | NAKs | timeouts | "
             "out of order at receivers | runs × iterations | load avg |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in results:
        s, k = r["sender"], r["sink"]
        done = "" if r["completed"] else " (not completed)"
        lines.append(
            f"| {r['scheme']} | {r['scenario']}{done} | {r.get('cct_median_s', '—')} | "
            f"{r.get('cct_p99_s', '—')} | "
            f"{sim_cell(sim.get((r['scheme'], r['scenario'])))} | "
            f"{r.get('goodput_mbit_per_rank', '—')} | "
            f"{k['cnps']} | {s['retransmitted']} ({r['retransmit_fraction']:.1%}) | "
            f"{k['naks']} | {s['timeouts']} | "
            f"{k['out_of_order_dropped'] / max(k['frames'], 1):.2%} | "
            f"{r['rounds']} × {r['iterations']}{iterations_done(r)} | "
            f"{min(r['load_avg']):.0f}–{max(r['load_avg']):.0f} |")
    return "\n".join(lines) + "\n"


def iterations_done(r):
    done, planned = len(r["cct_s"]), r["rounds"] * r["iterations"]
    return "" if done == planned else f" ({done} done)"


def sim_cell(v):
    if v is None:
        return "—"
    return "never ends" if v == float("inf") else f"{v:.3f}"


def plot(out_dir, name, results, sim):
    """Bars of CCT median per scheme, one cluster per scenario, p99 as error bars, and the
    simulator's CCT as points."""
    import subprocess
    dat = os.path.join(out_dir, f"{name}.dat")
    scenarios = list(dict.fromkeys(r["scenario"] for r in results))
    schemes = list(dict.fromkeys(r["scheme"] for r in results))
    with open(dat, "w") as f:
        f.write("# scheme " + " ".join(f"{s}_median {s}_p99 {s}_sim" for s in scenarios) + "\n")
        for scheme in schemes:
            row = [scheme]
            for sc in scenarios:
                r = next((x for x in results if x["scheme"] == scheme and x["scenario"] == sc),
                         {})
                v = sim.get((scheme, sc))
                row += [str(r.get("cct_median_s", "NaN")), str(r.get("cct_p99_s", "NaN")),
                        "NaN" if v is None or v == float("inf") else str(v)]
            f.write(" ".join(row) + "\n")
    cols = []
    for i, sc in enumerate(scenarios):
        c = 2 + 3 * i  # median, bar from the median up to the p99
        cols.append(f"'{dat}' using {c}:{c}:{c + 1}:xtic(1) title '{sc} (median, p99)'")
    title = "Ring AllReduce" if "allreduce" in name else "AlltoAll"
    gp = f"""set terminal pngcairo size 900,420
set output '{os.path.join(out_dir, name + ".png")}'
set style data histograms
set style histogram errorbars gap 1 lw 1
set style fill solid 0.6 border -1
set ylabel 'CCT per iteration (s)'
set yrange [0:*]
set key top left
set title '{title} on the emulated 4-host fabric, DCQCN senders'
plot {', '.join(cols)}
"""
    subprocess.run(["gnuplot"], input=gp, text=True, check=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--schemes", default="flow,packet,flowlet,balanced,engine,controller")
    ap.add_argument("--scenarios", default="healthy,degraded,cut")
    ap.add_argument("--collective", default="alltoall", choices=["alltoall", "allreduce"])
    ap.add_argument("--bytes", type=int, default=1 << 20)
    ap.add_argument("--iterations", type=int, default=5)
    ap.add_argument("--qps-per-peer", type=int, default=1)
    ap.add_argument("--rounds", type=int, default=1,
                    help="repeat the whole matrix, schemes interleaved (load drifts alike)")
    ap.add_argument("--no-dcqcn", action="store_true")
    ap.add_argument("--out", default=None)
    ap.add_argument("--plot", action="store_true", help="DIR/<name>.png (gnuplot)")
    ap.add_argument("--replot", metavar="JSON", help="only redraw the plot of a results file")
    args = ap.parse_args()
    if args.replot:
        with open(args.replot) as f:
            d = json.load(f)
        sim = {(x["scheme"], x["scenario"]): x["cct_s"] for x in d.get("fabricsim", [])}
        name = os.path.splitext(os.path.basename(args.replot))[0]
        plot(os.path.dirname(os.path.abspath(args.replot)), name, d["results"], sim)
        return
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
    sim = simulate(work, scenarios, args.collective, args.bytes)
    results, each = run_matrix(work, schemes, scenarios, args.collective, args.bytes,
                               args.iterations, args.qps_per_peer, dcqcn=not args.no_dcqcn,
                               rounds=args.rounds)
    name = f"collective-{args.collective}"
    with open(os.path.join(out_dir, f"{name}.json"), "w") as f:
        json.dump({"args": vars(args), "results": results, "runs": each,
                   "fabricsim": [{"scheme": k[0], "scenario": k[1], "cct_s": v}
                                 for k, v in sim.items()]}, f, indent=1)
    with open(os.path.join(out_dir, f"{name}.md"), "w") as f:
        f.write(table(results, sim))
    if args.plot:
        plot(out_dir, name, results, sim)
    print(table(results, sim))
    fl.log(f"results in {out_dir}")


if __name__ == "__main__":
    fl.rl.main_wrapper(main)
