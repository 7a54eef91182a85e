#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
# Runs of the flow-level simulator (docs/design/fabricsim.md).
#
#   run.py paper    [--out DIR]   Figure 1(B)/(C) analogues: 128 GPUs, 8 leaves x 8 spines,
#                                 symmetric and with one leaf-spine LAG halved
#   run.py extra    [--out DIR]   MoE-skewed AlltoAll, 3-tier fat-tree, spine failure, ring
#   run.py emulated [--out DIR]   the emulated fabric's scenarios (tools/fabric) beside its
#                                 measured numbers in docs/fabric/summary.json
#   run.py smoke    --build DIR   16 hosts, AlltoAll, every scheme, checked (CI: fabricsim-smoke)
#   run.py all      [--out DIR]   paper, extra, emulated, then the plots
#
# Each run writes DIR/<name>.json (fabricsim's own output) and prints a table; `all` and
# --plot also draw the PNGs with gnuplot.
import argparse
import json
import math
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))

# Topology files (lib/pathalg's format, checked by its YANG module).
TOPO_PAPER = os.path.join(ROOT, "config", "examples", "topologies", "2tier-8x8x16.json")
TOPO_FATTREE = os.path.join(ROOT, "config", "examples", "topologies", "fattree-k8.json")
TOPO_SMOKE = os.path.join(HERE, "topologies", "leafspine-16.json")
TOPO_EMULATED = os.path.join(HERE, "topologies", "emulated-3spine.json")

# The paper's degraded LAG: between leaf switch 128 and spine 136, i.e. the first leaf and
# the first spine of Figure 1(A)'s numbering (hosts 0-127, leaves 128-135, spines 136-143).
PAPER_DEGRADED = ["leaf0--spine0:0.5"]
PAPER_SPINE_FAILURE = ["leaf{}--spine0:0".format(i) for i in range(8)]
SIZES_PAPER = "1M,4M,16M,64M,256M,1G"
HASH_SEEDS = "1,2,3,4,5"

# The paper's numbers (Figure 1(C) text): CCT reduction of rerouting over spraying.
PAPER_REDUCTION = {64 << 20: 0.371, 1 << 30: 0.216}


def fabricsim_bin(build):
    path = os.path.join(build, "tools", "fabricsim", "fabricsim")
    if not os.path.exists(path):
        sys.exit(f"run.py: {path} not found (ninja -C {build} tools/fabricsim/fabricsim)")
    return path


def sim(build, out_json, *args):
    cmd = [fabricsim_bin(build), *args, "--out", out_json]
    print("+", " ".join(cmd), flush=True)
    t = time.monotonic()
    subprocess.run(cmd, check=True)
    print(f"  ({time.monotonic() - t:.1f} s)", flush=True)
    with open(out_json) as f:
        return json.load(f)


def degrade_args(changes):
    out = []
    for c in changes:
        out += ["--degrade", c]
    return out


def mean_by(runs, scheme, plan, size):
    v = [r for r in runs if r["scheme"] == scheme and r["plan"] == plan and r["size_bytes"] == size]
    if not v:
        return None
    cct = [r["cct_s"] if r["cct_s"] is not None else math.inf for r in v]
    norm = [r["norm_throughput"] or 0.0 for r in v]
    return {"cct_s": sum(cct) / len(cct), "cct_min": min(cct), "cct_max": max(cct),
            "norm": sum(norm) / len(norm), "norm_min": min(norm), "norm_max": max(norm)}


def size_label(b):
    return f"{b / (1 << 30):g}G" if b >= (1 << 30) else f"{b / (1 << 20):g}M"


def table(result, title):
    runs = result["runs"]
    sizes = sorted({r["size_bytes"] for r in runs})
    keys = []
    for r in runs:
        k = (r["scheme"], r["plan"])
        if k not in keys:
            keys.append(k)
    lines = [f"### {title}", "", "| scheme | plan | " +
             " | ".join(f"{size_label(s)} CCT ms (norm)" for s in sizes) + " |",
             "|---|---|" + "---|" * len(sizes)]
    for scheme, plan in keys:
        cells = []
        for s in sizes:
            m = mean_by(runs, scheme, plan, s)
            if m is None or math.isinf(m["cct_s"]):
                cells.append("never (stuck)")
            else:
                spread = ""
                if m["cct_max"] > m["cct_min"] * 1.0005:
                    spread = f" [{m['cct_min'] * 1e3:.3f}-{m['cct_max'] * 1e3:.3f}]"
                cells.append(f"{m['cct_s'] * 1e3:.3f}{spread} ({m['norm']:.3f})")
        lines.append(f"| {scheme} | {plan} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def run_paper(args):
    common = ["--topology", TOPO_PAPER, "--collective", "alltoall", "--sizes", SIZES_PAPER,
              "--hash-seeds", HASH_SEEDS]
    sym = sim(args.build, os.path.join(args.out, "paper-symmetric.json"), "run", *common,
              "--label", "symmetric (Figure 1(B))")
    deg = sim(args.build, os.path.join(args.out, "paper-degraded.json"), "run", *common,
              *degrade_args(PAPER_DEGRADED), "--label", "leaf0-spine0 LAG halved (Figure 1(C))")
    text = table(sym, "Symmetric 128-GPU AlltoAll (Figure 1(B))") + "\n" + \
        table(deg, "LAG leaf0-spine0 halved (Figure 1(C))")
    lines = ["", "| size | spray CCT ms | reroute (wspray, recomputed) CCT ms | reduction | "
             "paper's reduction |", "|---|---|---|---|---|"]
    for s in sorted({r["size_bytes"] for r in deg["runs"]}):
        sp = mean_by(deg["runs"], "spray", "stale", s)
        rr = mean_by(deg["runs"], "wspray", "recomputed", s)
        red = 1 - rr["cct_s"] / sp["cct_s"]
        paper = PAPER_REDUCTION.get(s)
        lines.append(f"| {size_label(s)} | {sp['cct_s'] * 1e3:.3f} | {rr['cct_s'] * 1e3:.3f} | "
                     f"{red * 100:.1f}% | {'%.1f%%' % (paper * 100) if paper else '-'} |")
    text += "\n".join(lines) + "\n"
    return {"paper-symmetric": sym, "paper-degraded": deg}, text


# 2:1 oversubscribed variant of the paper's fabric (one 400G member per leaf-spine link),
# from lib/pathalg's generator: where link balance, not the NICs, bounds a skewed AlltoAll.
TOPO_OVERSUB = "gen:leafspine:8,8,16,1,400,400"


def with_random_arrival(args, name, result, *run_args):
    """Adds `balanced` with each source's flows in a random order (3 seeds) to `result` as
    scheme "balanced-random": how much of balanced's result is NCCL's fixed peer order."""
    for seed in (1, 2, 3):
        extra = sim(args.build, os.path.join(args.out, f"{name}-arrival{seed}.json"), "run",
                    *run_args, "--schemes", "balanced", "--arrival-seed", str(seed))
        for r in extra["runs"]:
            r["scheme"] = "balanced-random"
            r["hash_seed"] = seed
            result["runs"].append(r)
        os.remove(os.path.join(args.out, f"{name}-arrival{seed}.json"))  # merged below
    with open(os.path.join(args.out, f"{name}.json"), "w") as f:
        json.dump(result, f, indent=1)


def run_extra(args):
    res, text = {}, ""
    cases = [
        ("moe", "MoE AlltoAll (1/8 of the experts get half of every GPU's tokens), 128 GPUs",
         ["--topology", TOPO_PAPER, "--collective", "moe", "--hot-fraction", "0.125",
          "--hot-share", "0.5", "--sizes", "64M,1G"]),
        ("moe-oversub", "MoE AlltoAll on the 2:1 oversubscribed variant (1 x 400G per leaf-spine)",
         ["--topology", TOPO_OVERSUB, "--collective", "moe", "--hot-fraction", "0.125",
          "--hot-share", "0.5", "--sizes", "64M,1G"]),
        ("alltoall-oversub", "Uniform AlltoAll on the 2:1 oversubscribed variant",
         ["--topology", TOPO_OVERSUB, "--collective", "alltoall", "--sizes", "64M,1G"]),
        ("fattree", "3-tier fat-tree (k = 8, 128 hosts, 400G) AlltoAll",
         ["--topology", TOPO_FATTREE, "--collective", "alltoall", "--sizes", "64M,1G"]),
        ("spine-failure", "Spine 0 failed (all its links down), 128-GPU AlltoAll",
         ["--topology", TOPO_PAPER, "--collective", "alltoall", "--sizes", "64M,1G",
          *degrade_args(PAPER_SPINE_FAILURE)]),
        ("allreduce", "Ring AllReduce, 128 GPUs, LAG leaf0-spine0 halved",
         ["--topology", TOPO_PAPER, "--collective", "allreduce", "--sizes", "64M,1G",
          *degrade_args(PAPER_DEGRADED)]),
    ]
    for name, title, run_args in cases:
        r = sim(args.build, os.path.join(args.out, f"{name}.json"), "run", *run_args,
                "--hash-seeds", HASH_SEEDS, "--label", title)
        if name != "allreduce":
            with_random_arrival(args, name, r, *run_args)
        res[name] = r
        text += table(r, title) + "\n"
    return res, text


# The emulated fabric (docs/design/fabric.md): one host pair, three spines, uplinks shaped to 20
# Mbit/s, open-loop QPs. Frames: 1024-byte RoCE frames plus 80 bytes of encapsulation (outer
# IPv6 40, SRH with two SIDs 40) on the shaped links.
EMU_PAYLOAD = 1024 / 1104
# Stated tolerance of the simulator against the emulated fabric's measured goodput: the
# largest difference seen is the flow-mode run of (c), whose measurement varies by 7% between
# runs of the same command (38.3, 40.2, 41.0 Mbit/s: host-side losses on a loaded machine).
EMULATED_TOLERANCE = 0.08


def run_emulated(args):
    summary_path = os.path.join(ROOT, "docs", "fabric", "summary.json")
    with open(summary_path) as f:
        measured = json.load(f)
    res, rows = {}, []

    def steady(name, qps, rate, changes, schemes):
        r = sim(args.build, os.path.join(args.out, f"emulated-{name}.json"), "steady",
                "--topology", TOPO_EMULATED, "--src", "hA", "--dst", "hB", "--qps", str(qps),
                "--rate-mbit", str(rate), "--payload-fraction", str(EMU_PAYLOAD),
                "--schemes", schemes, *degrade_args(changes))
        res[f"emulated-{name}"] = r
        return r

    def pick(r, scheme, plan):
        return next(x for x in r["runs"] if x["scheme"] == scheme and x["plan"] == plan)

    def phase(scn, variant, ph):
        v = measured[scn]["variants"][variant]
        return next(p for p in v["phases"] if p["phase"] == ph)

    # (c) modes: 45 Mbit/s over 8 QPs, symmetric.
    modes = steady("modes", 8, 45, [], "hash,spray")
    for scheme, mode in (("hash", "flow"), ("spray", "packet")):
        s = pick(modes, scheme, "healthy")
        m = measured["modes"]["variants"][mode]["phases"][0]
        rows.append(("(c) symmetric, 45 Mbit/s / 8 QPs", mode, s, m))
    # (a) degraded: 24 Mbit/s over 16 QPs; spine 1's uplink 20 -> 4 Mbit/s.
    healthy = steady("healthy", 16, 24, [], "hash")
    deg = steady("degraded", 16, 24, ["leafA--spine1:0.2"], "hash")
    rows.append(("(a) healthy, 24 Mbit/s / 16 QPs", "flow (hash)", pick(healthy, "hash", "healthy"),
                 phase("degraded", "hash", "healthy")))
    rows.append(("(a) spine 1 uplink at 4 Mbit/s", "flow (hash), engine off",
                 pick(deg, "hash", "stale"), phase("degraded", "hash", "degraded")))
    rows.append(("(a) spine 1 uplink at 4 Mbit/s", "engine on ≈ flow, weights recomputed",
                 pick(deg, "hash", "recomputed"), phase("degraded", "engine", "degraded")))
    # (b) cut: spine 1's link down.
    cut = steady("cut", 16, 24, ["leafA--spine1:0"], "hash")
    rows.append(("(b) L1-S1 cut", "flow (hash), no controller", pick(cut, "hash", "stale"),
                 phase("cut", "none", "cut")))
    rows.append(("(b) L1-S1 cut", "controller: path down", pick(cut, "hash", "recomputed"),
                 phase("cut", "controller", "cut")))

    lines = ["| scenario | gateway | simulated goodput Mbit/s | measured | difference | "
             "simulated path shares (sent) | measured path shares (gA's counters) |",
             "|---|---|---|---|---|---|---|"]
    worst = 0.0
    for scn, mode, s, m in rows:
        sim_g = s["goodput_mbit"]
        meas_g = m["goodput_mbit"]
        diff = (sim_g - meas_g) / meas_g
        worst = max(worst, abs(diff))
        ms = m.get("path_shares", {})
        lines.append(f"| {scn} | {mode} | {sim_g:.2f} | {meas_g:.2f} | {diff * 100:+.1f}% | "
                     + " / ".join(f"{x:.3f}" for x in s["offered_shares"]) + " | "
                     + " / ".join(f"{ms[k]:.3f}" for k in sorted(ms)) + " |")
    text = "\n".join(lines) + f"\n\nlargest goodput difference: {worst * 100:.1f}%\n"
    res["emulated-largest-difference"] = worst
    return res, text


def plot(out_dir, results):
    """Clustered bars like the paper's Figure 1: (B) normalised throughput per message size and
    scheme on the symmetric fabric, (C) CCT (log) under the halved LAG. Hashing is the mean
    over its seeds with the range as error bars."""
    sym = results.get("paper-symmetric")
    deg = results.get("paper-degraded")
    if not sym or not deg:
        return
    sizes = sorted({r["size_bytes"] for r in sym["runs"]})
    b_cols = [("hash", "healthy", "per-flow hashing (flow mode)"),
              ("spray", "healthy", "packet spraying"),
              ("wspray", "healthy", "capacity-weighted spraying"),
              ("balanced", "healthy", "balanced mode"),
              ("placement", "healthy", "application-aware placement")]
    c_cols = [("spray", "stale", "packet spraying"),
              ("wspray", "recomputed", "rerouting: weights recomputed"),
              ("placement", "recomputed", "rerouting: placement recomputed"),
              ("hash", "stale", "per-flow hashing"),
              ("hash", "recomputed", "hashing, weights recomputed"),
              ("balanced", "recomputed", "balanced, weights recomputed")]

    def write(name, result, cols, key, scale):
        with open(os.path.join(out_dir, name), "w") as f:
            f.write("# size " + " ".join(f"{a}/{b} min max" for a, b, _ in cols) + "\n")
            for s in sizes:
                row = [size_label(s)]
                for sc, plan, _ in cols:
                    m = mean_by(result["runs"], sc, plan, s)
                    row += [f"{m[key] * scale:.6g}", f"{m[key + '_min'] * scale:.6g}",
                            f"{m[key + '_max'] * scale:.6g}"]
                f.write(" ".join(row) + "\n")

    write("fig1b.dat", sym, b_cols, "norm", 1.0)
    with open(os.path.join(out_dir, "fig1c.dat"), "w") as f:
        f.write("# size " + " ".join(f"{a}/{b}_ms min max" for a, b, _ in c_cols) + "\n")
        for s in sizes:
            row = [size_label(s)]
            for sc, plan, _ in c_cols:
                m = mean_by(deg["runs"], sc, plan, s)
                row += [f"{m['cct_s'] * 1e3:.6g}", f"{m['cct_min'] * 1e3:.6g}",
                        f"{m['cct_max'] * 1e3:.6g}"]
            f.write(" ".join(row) + "\n")

    def bars(dat, cols):
        return ", \\\n     ".join(
            f"'{out_dir}/{dat}' u {2 + 3 * i}:{3 + 3 * i}:{4 + 3 * i}"
            + (":xtic(1)" if i == 0 else "") + f" t '{label}'"
            for i, (_, _, label) in enumerate(cols))

    gp = f"""
set terminal pngcairo size 1000,600 font ',11'
set grid ytics
set style data histograms
set style histogram errorbars gap 1 lw 1
set style fill solid 0.85 border -1
set xlabel 'AlltoAll message size per GPU'
set output '{out_dir}/fig1b.png'
set title "128 GPUs, 8x8 leaf-spine, 400G, symmetric: Figure 1(B) analogue (fabricsim)"
set ylabel 'normalised throughput (NIC bound / CCT)'
set yrange [0:1.25]
set key outside bottom center horizontal maxrows 2
plot {bars("fig1b.dat", b_cols)}
set output '{out_dir}/fig1c.png'
set title "128 GPUs, LAG leaf0-spine0 halved: Figure 1(C) analogue (fabricsim)"
set ylabel 'collective completion time (ms, log scale)'
set logscale y
set yrange [0.01:400]
plot {bars("fig1c.dat", c_cols)}
"""
    subprocess.run(["gnuplot"], input=gp, text=True, check=True)


def run_smoke(args):
    """CI: every scheme on a 16-host leaf-spine, symmetric and with one LAG halved; checks
    what must hold whatever the tuning: spraying, placement and the gateway's balanced mode
    reach the NIC bound on the symmetric fabric, rerouting (recomputed weights) and balanced
    with recomputed weights beat equal spraying under the halved LAG, and every scheme
    finishes."""
    out = args.out or "/tmp"
    os.makedirs(out, exist_ok=True)
    common = ["--topology", TOPO_SMOKE, "--collective", "alltoall", "--sizes", "1M,64M",
              "--hash-seeds", "1,2,3"]
    sym = sim(args.build, os.path.join(out, "smoke-symmetric.json"), "run", *common)
    deg = sim(args.build, os.path.join(out, "smoke-degraded.json"), "run", *common,
              "--degrade", "leaf0--spine0:0.5")
    print(table(sym, "smoke: symmetric"))
    print(table(deg, "smoke: leaf0-spine0 halved"))
    failures = []
    for r in sym["runs"] + deg["runs"]:
        if r["cct_s"] is None or r["stuck_flows"]:
            failures.append(f"{r['scheme']}/{r['plan']} did not complete")
    big = 64 << 20
    for sc in ("spray", "wspray", "placement", "balanced"):
        m = mean_by(sym["runs"], sc, "healthy", big)
        if m["norm"] < 0.99:
            failures.append(f"{sc} on the symmetric fabric: normalised {m['norm']:.3f} < 0.99")
    sp = mean_by(deg["runs"], "spray", "stale", big)
    rr = mean_by(deg["runs"], "wspray", "recomputed", big)
    if not rr["cct_s"] < sp["cct_s"] * 0.95:
        failures.append(f"rerouting {rr['cct_s']:.6f} s does not beat spraying {sp['cct_s']:.6f} s")
    # balanced counts load per first hop only: part of rerouting's gain (docs/design/fabricsim.md).
    bal = mean_by(deg["runs"], "balanced", "recomputed", big)
    if not bal["cct_s"] < sp["cct_s"] * 0.95:
        failures.append(f"balanced, recomputed {bal['cct_s']:.6f} s does not beat spraying "
                        f"{sp['cct_s']:.6f} s")
    # Agreement with the emulated fabric's measured goodput (docs/fabric/summary.json).
    emu, emu_text = run_emulated(argparse.Namespace(build=args.build, out=out))
    print(emu_text)
    if emu["emulated-largest-difference"] > EMULATED_TOLERANCE:
        failures.append(f"emulated fabric: goodput differs by "
                        f"{emu['emulated-largest-difference'] * 100:.1f}% "
                        f"> {EMULATED_TOLERANCE * 100:.0f}%")
    for f in failures:
        print("FAIL:", f)
    return 1 if failures else 0


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("what", choices=["paper", "extra", "emulated", "smoke", "all", "plot"])
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--out", default=None)
    ap.add_argument("--plot", action="store_true")
    args = ap.parse_args()
    if args.what == "smoke":
        sys.exit(run_smoke(args))
    args.out = args.out or os.path.join(ROOT, "docs", "fabricsim")
    os.makedirs(args.out, exist_ok=True)
    results, texts = {}, []
    if args.what == "plot":
        for name in ("paper-symmetric", "paper-degraded"):
            with open(os.path.join(args.out, name + ".json")) as f:
                results[name] = json.load(f)
        plot(args.out, results)
        return
    steps = {"paper": [run_paper], "extra": [run_extra], "emulated": [run_emulated],
             "all": [run_paper, run_extra, run_emulated]}[args.what]
    for step in steps:
        r, t = step(args)
        results.update(r)
        texts.append(t)
        print(t, flush=True)
    with open(os.path.join(args.out, f"tables-{args.what}.md"), "w") as f:
        f.write("\n".join(texts))
    if args.what in ("paper", "all") or args.plot:
        plot(args.out, results)


if __name__ == "__main__":
    main()
