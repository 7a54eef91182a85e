# SPDX-License-Identifier: BSD-3-Clause
# Every frame is one of its policy's segment lists (checked in full); the sequence of tags
# per policy is exact to the weights over every cycle (6 and 8 packets), and a list of
# weight 0 is never used.
from scenlib import cycles_exact, one_of, steered

W4 = {0x31: 3, 0x32: 2, 0x33: 1}
W6 = {0x34: 5, 0x35: 3, 0x36: 0}
N4, N6 = 120, 80
order = []
for k in range(120):
    order.append(4)
    if k % 3 != 2:
        order.append(6)
FABRIC_OUT = [one_of(*[steered(i, t) for t in (W4 if fam == 4 else W6)])
              for i, fam in enumerate(order)]
HOST_OUT = []
COUNTERS = {"encap": N4 + N6}
PATHS = {0x31: 60, 0x32: 40, 0x33: 20, 0x34: 50, 0x35: 30, 0x36: 0}


def check(run):
    seq4 = [run.choice["fabric_out"][k] for k, fam in enumerate(order) if fam == 4]
    seq6 = [run.choice["fabric_out"][k] for k, fam in enumerate(order) if fam == 6]
    for seq, w in ((seq4, W4), (seq6, W6)):
        err = cycles_exact(seq, w)
        run.check(err is None, f"weights {w}: {err}")
    print(f"3:2:1 first cycles {[hex(t) for t in seq4[:12]]}")
    print(f"5:3:0 first cycle {[hex(t) for t in seq6[:8]]}")
