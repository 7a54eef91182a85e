# SPDX-License-Identifier: BSD-3-Clause
# Every frame is one of the three segment lists (checked in full). Flow mode keeps each QP on
# one list, and spreads the 4096 QPs by weight 1:1:2 within +-10% of each list's share. For
# a uniform hash, 10% of the smallest share (1024 QPs) is 3.7 standard deviations of the
# binomial count: a failure means a biased hash or bucket table, not bad luck.
from scenlib import one_of, steered

N_QPS = 4096
WEIGHTS = {0x41: 1, 0x42: 1, 0x43: 2}
TOLERANCE = 0.10
FABRIC_OUT = [one_of(*[steered(i, t) for t in WEIGHTS]) for i in range(2 * N_QPS)]
HOST_OUT = []
COUNTERS = {"encap": 2 * N_QPS}


def check(run):
    by_qp = {}
    for k, tag in run.choice["fabric_out"].items():
        src = run.rows["host_in"][run.sources["fabric_out"][k]]
        qp = src["infiniband.bth.destqp"][0]
        by_qp.setdefault(qp, set()).add(tag)
    run.check(len(by_qp) == N_QPS, f"{len(by_qp)} QPs seen, {N_QPS} sent")
    moved = {qp: tags for qp, tags in by_qp.items() if len(tags) != 1}
    run.check(not moved, f"{len(moved)} QPs used more than one list, e.g. {list(moved.items())[:3]}")
    per_list = {t: sum(1 for tags in by_qp.values() if t in tags) for t in WEIGHTS}
    total_w = sum(WEIGHTS.values())
    for t, w in WEIGHTS.items():
        share = N_QPS * w / total_w
        run.check(abs(per_list[t] - share) <= TOLERANCE * share,
                  f"list {t:#x}: {per_list[t]} QPs, weight share {share:.0f} +-{TOLERANCE:.0%}")
    print("QPs per list: " + ", ".join(f"{t:#x}: {n} ({n / (N_QPS * WEIGHTS[t] / total_w) - 1:+.1%})"
                                       for t, n in per_list.items()))
