# SPDX-License-Identifier: BSD-3-Clause
# Every frame is one of its destination's three segment lists (checked in full). balanced
# mode places each new QP on the spine (load group: the lists' first SID, shared by the three
# policies) with the fewest active QPs, so the 24 QPs end exactly 8 per spine, none on two
# paths; with a 10 s idle gap nothing expires, and the stats JSON reports the same 8 active
# flows per spine.
from scenlib import encap, one_of

QPS_PER_DESTINATION = {1: 12, 2: 8, 3: 4}
PER_QP = 5
N_QPS = sum(QPS_PER_DESTINATION.values())
REMOTE = {1: "fc00:0:2::d4", 2: "fc00:0:3::d4", 3: "fc00:0:4::d4"}


def path_id(d, s):
    return 0x10 * (d + 5) + s


def via(host, d, s):
    first = f"fc00:0:b{s}::e"
    return encap(host, da=first, srh=[REMOTE[d], first], segleft=1, last=1, tag=path_id(d, s))


order = []
for k in range(max(QPS_PER_DESTINATION.values())):
    for d, n in QPS_PER_DESTINATION.items():
        if k < n:
            order.append(d)
FABRIC_OUT = [one_of(*[via(i, order[i % N_QPS], s) for s in (1, 2, 3)])
              for i in range(N_QPS * PER_QP)]
HOST_OUT = []
COUNTERS = {"encap": N_QPS * PER_QP, "balanced_overflow": 0}
PATHS_SPINE = {path_id(d, s): s for d in REMOTE for s in (1, 2, 3)}


def check(run):
    # From tshark's reading of the output pcap: the SRH tag (path id) and the inner
    # destination and DestQP of every encapsulated frame.
    by_qp = {}
    for row in run.rows["fabric_out"]:
        tags = row["ipv6.routing.srh.tag"]
        run.check(len(tags) == 1, f"frame without one SRH tag: {row}")
        qp = (row["ip.dst"][0], row["infiniband.bth.destqp"][0])
        by_qp.setdefault(qp, set()).add(int(str(tags[0]), 0))
    run.check(len(by_qp) == N_QPS, f"{len(by_qp)} QPs on the output, {N_QPS} sent")
    moved = {qp: ids for qp, ids in by_qp.items() if len(ids) != 1}
    run.check(not moved, f"QPs on more than one path: {moved}")
    per_spine = {s: 0 for s in (1, 2, 3)}
    for ids in by_qp.values():
        per_spine[PATHS_SPINE[next(iter(ids))]] += 1
    run.check(per_spine == {1: 8, 2: 8, 3: 8}, f"QPs per spine {per_spine}, expected 8/8/8")
    active = {s: 0 for s in (1, 2, 3)}
    for p in run.stats["paths"]:
        active[PATHS_SPINE[p["path_id"]]] += p["active_flows"]
        run.check(p["load_group"] == f"sid:fc00:0:b{PATHS_SPINE[p['path_id']]}::e",
                  f"path {p['path_id']}: load group {p['load_group']}")
    run.check(active == {1: 8, 2: 8, 3: 8}, f"active flows per spine in the stats {active}")
    print(f"QPs per spine {per_spine} (tshark), active flows per spine {active} (stats), "
          "none on two paths")
