# SPDX-License-Identifier: BSD-3-Clause
# WRITE middle (opcode 7) packets are sprayed: their sequence of lists, over the policy, is
# exact to the weights 2:1 over every cycle of 3; every other opcode stays per flow: all the
# non-middle packets of one QP use one list.
from scenlib import OP_WRITE_MIDDLE, one_of, steered

N = 4 * (2 + 9 * 3 + 4)
TAGS = {0x61: 2, 0x62: 1}
FABRIC_OUT = [one_of(*[steered(i, t) for t in TAGS]) for i in range(N)]
HOST_OUT = []
COUNTERS = {"encap": N}


def check(run):
    from scenlib import cycles_exact
    sprayed, per_flow = [], {}
    for k in sorted(run.choice["fabric_out"]):
        src = run.rows["host_in"][run.sources["fabric_out"][k]]
        tag = run.choice["fabric_out"][k]
        if src["infiniband.bth.opcode"][0] == OP_WRITE_MIDDLE:
            sprayed.append(tag)
        else:
            per_flow.setdefault(src["infiniband.bth.destqp"][0], set()).add(tag)
    run.check(len(sprayed) == 72, f"{len(sprayed)} WRITE middle packets")
    err = cycles_exact(sprayed, TAGS)
    run.check(err is None, f"sprayed WRITE middles: {err}")
    for qp, tags in per_flow.items():
        run.check(len(tags) == 1, f"QP {qp:#x}: non-sprayed opcodes on lists {tags}")
    print(f"WRITE middles sprayed {[hex(t) for t in sprayed[:9]]}...; "
          f"other opcodes per QP: { {hex(q): hex(next(iter(t))) for q, t in per_flow.items()} }")
