# SPDX-License-Identifier: BSD-3-Clause
# Every QP stays on the list its first packet got (the gap never passes); new flowlets are
# placed by smooth weighted round robin, so the 16 QPs split exactly 8/8 over weights 1:1.
from scenlib import one_of, steered

N_QPS, PER_QP = 16, 20
TAGS = (0x51, 0x52)
FABRIC_OUT = [one_of(*[steered(i, t) for t in TAGS]) for i in range(N_QPS * PER_QP)]
HOST_OUT = []
COUNTERS = {"encap": N_QPS * PER_QP}


def qp_paths(run):
    by_qp = {}
    for k in sorted(run.choice["fabric_out"]):
        src = run.rows["host_in"][run.sources["fabric_out"][k]]
        by_qp.setdefault(src["infiniband.bth.destqp"][0], []).append(run.choice["fabric_out"][k])
    return by_qp


def check(run):
    by_qp = qp_paths(run)
    run.check(len(by_qp) == N_QPS, f"{len(by_qp)} QPs")
    for qp, seq in by_qp.items():
        run.check(len(set(seq)) == 1, f"QP {qp:#x} moved within the 1 s gap: {[hex(t) for t in seq]}")
    per = {t: sum(1 for seq in by_qp.values() if seq[0] == t) for t in TAGS}
    run.check(per == {TAGS[0]: 8, TAGS[1]: 8}, f"QPs per list {per}, expected 8/8")
    print(f"QPs per list {per}, none moved")
