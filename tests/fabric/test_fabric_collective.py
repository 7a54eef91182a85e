#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
# A short AlltoAll on the emulated 4-host fabric (tools/fabric/collective_lib.py, docs/fabric.md
# "Collectives under DCQCN"): 2 leaves x 3 spines x 2 hosts, four srv6gw daemons, kernel SRv6
# spines, ECN-marking 20 Mbit/s uplinks; in every host roce-gen's closed-loop mode (DCQCN per
# QP, RC messages, go-back-N) and roce-sink --rc (ACK/NAK, CNPs). Two schemes, flow (per-QP
# hashing) and balanced, 2 iterations of 256 KiB per rank each.
#
# Asserted, per scheme (numbers printed):
#  - every rank finished, every message was acknowledged (messages and bytes as planned), and
#    the receivers accepted exactly one copy of every PSN: the senders' first transmissions
#    (data sent - retransmitted) equal the receivers' in-order packets;
#  - every iteration has a finite CCT, no shorter than the NIC bound (what a rank sends at the
#    paced line rate);
#  - retransmissions are accounted for: no more NAKs received than the receivers sent, every
#    go-back-N resent something, and no retransmission without a NAK or a timeout.
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


def main():
    fl.require_tools()
    t0 = time.monotonic()
    work = tempfile.mkdtemp(prefix="srv6gw-collective-ci-")
    fab = cl.CollectiveFabric(work)
    problems = []
    try:
        fab.start(engine=False)
        fl.log(f"fabric and 4 gateways up in {time.monotonic() - t0:.1f} s")
        for scheme in ("flow", "balanced"):
            fab.push_policies(mode=scheme)
            res = fab.run_collective("alltoall", NBYTES, ITERATIONS, QPS, timeout_s=60)
            res["scheme"] = scheme
            fl.log(f"{scheme}: {cl.fmt(res)}")
            check(res, len(fab.gws), problems)
    finally:
        fab.cleanup()
    fl.log(f"wall time {time.monotonic() - t0:.1f} s")
    if problems:
        fl.rl.fail("\n".join(problems))
    fl.log("ok")


if __name__ == "__main__":
    fl.rl.main_wrapper(main)
