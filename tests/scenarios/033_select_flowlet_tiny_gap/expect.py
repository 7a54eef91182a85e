# SPDX-License-Identifier: BSD-3-Clause
# Every QP uses both lists and changes list at least twice over its 160 packets. (Each
# burst places 3 new flowlets by 1:1 weighted round robin, the QP that comes first rotating
# with the burst: each QP moves every third burst or so, 4-5 times in 15 bursts. The bound
# leaves room for bursts that come less than 1 us apart on a very fast machine.)
from scenlib import one_of, steered

N_QPS, PER_QP = 3, 160
TAGS = (0x53, 0x54)
MIN_MOVES = 2
FABRIC_OUT = [one_of(*[steered(i, t) for t in TAGS]) for i in range(N_QPS * PER_QP)]
HOST_OUT = []
COUNTERS = {"encap": N_QPS * PER_QP}


def check(run):
    by_qp = {}
    for k in sorted(run.choice["fabric_out"]):
        src = run.rows["host_in"][run.sources["fabric_out"][k]]
        by_qp.setdefault(src["infiniband.bth.destqp"][0], []).append(run.choice["fabric_out"][k])
    run.check(len(by_qp) == N_QPS, f"{len(by_qp)} QPs")
    for qp, seq in sorted(by_qp.items()):
        moves = sum(1 for a, b in zip(seq, seq[1:]) if a != b)
        print(f"QP {qp:#x}: {moves} moves over {len(seq)} packets, "
              f"{seq.count(TAGS[0])}/{seq.count(TAGS[1])} on {TAGS[0]:#x}/{TAGS[1]:#x}")
        run.check(set(seq) == set(TAGS) and moves >= MIN_MOVES,
                  f"QP {qp:#x}: {moves} moves, expected >= {MIN_MOVES} with a 1 us gap")
    print(f"{run.total['bursts']} bursts")
