#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
# A short AlltoAll on the emulated 4-host fabric (tools/fabric/collective_lib.py, docs/design/fabric.md
# "Collectives under DCQCN"): 2 leaves x 3 spines x 2 hosts, four srv6gw daemons, kernel SRv6
# spines, ECN-marking 20 Mbit/s uplinks; in every host roce-gen's closed-loop mode (DCQCN per
# QP, RC messages, go-back-N) and roce-sink --rc (ACK/NAK, CNPs). Three schemes, flow (per-QP
# hashing), balanced and controller (srv6gw-controller runs the gateways; the AlltoAll's 12
# flows are submitted as a job and pinned before it starts), 2 iterations of 256 KiB per rank
# each. Without a built srv6gw-controller the controller scheme is left out (said so).
#
# Asserted, per scheme (numbers printed):
#  - every rank finished, every message was acknowledged (messages and bytes as planned), and
#    the receivers accepted exactly one copy of every PSN: the senders' first transmissions
#    (data sent - retransmitted) equal the receivers' in-order packets;
#  - every iteration has a finite CCT, no shorter than the NIC bound (what a rank sends at the
#    paced line rate);
#  - retransmissions are accounted for: no more NAKs received than the receivers sent, every
#    go-back-N resent something, and no retransmission without a NAK or a timeout;
#  - controller: every flow placed, each gateway runs one exact rule per flow it sources
#    while the job runs (the rule's DestQP is the one roce-gen uses), none after the cancel.
# Needs root, network namespaces, clang-14 and libbpf-dev (exits 77 otherwise).
import os
import sys
import tempfile
import time

sys.dont_write_bytecode = True
SRC = os.environ.get("SRV6GW_SRC") or os.path.abspath(
    os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(SRC, "tools", "fabric"))
import collective_lib as cl  # noqa: E402
import fabric_lib as fl  # noqa: E402
import leafspine_lib as ls  # noqa: E402

NBYTES, ITERATIONS, QPS = 256 * 1024, 2, 1


def check(res, ranks, problems):
    name = res["scheme"]
    s, k = res["sender"], res["sink"]
    messages = ranks * (ranks - 1) * QPS * ITERATIONS
    per_message = (NBYTES // ranks // QPS) & ~3
    if not res["completed"]:
        problems.append(f"{name}: not every rank finished ({res['cct_s']})")
    if s["messages_done"] != messages or s["bytes_done"] != messages * per_message:
        problems.append(f"{name}: {s['messages_done']} messages / {s['bytes_done']} bytes "
                        f"acknowledged, planned {messages} / {messages * per_message}")
    if s["data_packets"] - s["retransmitted"] != k["accepted"]:
        problems.append(f"{name}: first transmissions {s['data_packets'] - s['retransmitted']} "
                        f"!= packets the receivers accepted in order {k['accepted']}")
    # The NIC bound: each rank sends (N-1)/N of the size at LINE_MBIT (frames of 1024 B).
    frames = -(-(NBYTES // ranks) // 966) * (ranks - 1)
    bound = frames * 1024 * 8 / (cl.LINE_MBIT * 1e6)
    if len(res["cct_s"]) != ITERATIONS or any(not (bound <= c < 60) for c in res["cct_s"]):
        problems.append(f"{name}: CCTs {res['cct_s']} not all within [{bound:.3f}, 60) s")
    if s["naks"] > k["naks"]:
        problems.append(f"{name}: senders received {s['naks']} NAKs, receivers sent {k['naks']}")
    if s["nak_go_backs"] > s["naks"] or (s["nak_go_backs"] and not s["retransmitted"]):
        problems.append(f"{name}: {s['nak_go_backs']} go-backs, {s['naks']} NAKs, "
                        f"{s['retransmitted']} retransmitted")
    if s["retransmitted"] and not (s["naks"] or s["timeouts"]):
        problems.append(f"{name}: {s['retransmitted']} retransmitted without NAK or timeout")
    if s["cnps"] > k["cnps"]:
        problems.append(f"{name}: senders received {s['cnps']} CNPs, receivers sent {k['cnps']}")


def check_pinned(fab, job, resp, problems):
    """Every flow of the job placed, and each source gateway runs exactly its flows' exact
    rules (destination, DestQP)."""
    if len(resp.get("placements", [])) != len(job["flows"]):
        problems.append(f"controller: {len(resp.get('placements', []))} of "
                        f"{len(job['flows'])} flows placed")
    address = {g.host: g.address for g in fab.gws}
    for g in fab.gws:
        want = sorted((address[f["dst_host"]], f["dest_qp"]) for f in job["flows"]
                      if f["src_host"] == g.host)
        have = sorted((r["exact"]["destination"], int(r["exact"].get("dest_qp", 0)))
                      for r in fab.objects(g)["steering"].values() if "exact" in r)
        if have != want:
            problems.append(f"controller: {g.name} runs exact rules {have}, the job's flows "
                            f"from it are {want}")


def main():
    fl.require_tools()
    t0 = time.monotonic()
    work = tempfile.mkdtemp(prefix="srv6gw-collective-ci-")
    fab = cl.CollectiveFabric(work)
    problems = []
    try:
        fab.start(engine=False)
        fl.log(f"fabric and 4 gateways up in {time.monotonic() - t0:.1f} s")
        schemes = ["flow", "balanced"]
        if os.access(ls.CONTROLLER_BIN, os.X_OK):
            schemes.append("controller")
        else:
            fl.log(f"{ls.CONTROLLER_BIN} not built: the controller scheme is left out")
        for scheme in schemes:
            t_scheme = time.monotonic()
            job = None
            if scheme == "controller":
                t = time.monotonic()
                fab.start_controller()
                job = fab.collective_job("ci", "alltoall", NBYTES, QPS)
                resp, per_spine = fab.submit_job(job)
                fl.log(f"controller: plan on every gateway, {len(resp.get('placements', []))} "
                       f"flows pinned in {time.monotonic() - t:.1f} s; cross-leaf flows per "
                       f"spine {per_spine}, max link load {resp.get('max_link_load', 0):.4g} "
                       f"(lower bound {resp.get('lower_bound', 0):.4g})")
                check_pinned(fab, job, resp, problems)
            else:
                fab.push_policies(mode=scheme)
            if fab.wait_paths_up() is None:
                fl.log(f"paths not in use 15 s after the push: {fab.paths_out}")
            res = fab.run_collective("alltoall", NBYTES, ITERATIONS, QPS, timeout_s=60)
            res["scheme"] = scheme
            fl.log(f"{scheme}: {cl.fmt(res)}")
            check(res, len(fab.gws), problems)
            if job is not None:
                fab.cancel_job(job["job_id"])
                left = sum(1 for g in fab.gws for r in fab.objects(g)["steering"].values()
                           if "exact" in r)
                if left:
                    problems.append(f"controller: {left} exact rules left after the cancel")
                fab.stop_controller()
            fl.log(f"{scheme}: {time.monotonic() - t_scheme:.1f} s")
    finally:
        fab.cleanup()
    fl.log(f"wall time {time.monotonic() - t0:.1f} s")
    if problems:
        fl.rl.fail("\n".join(problems))
    fl.log("ok")


if __name__ == "__main__":
    fl.rl.main_wrapper(main)
