#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
# roce-sink (the fabric's receiving host) against frames built by scapy (tests/oracle/
# roce_lib.py), on a veth pair in a namespace:
#  - its per-bin counts: frames, bytes, CE, late (reordered PSNs), PSN advance (so loss is
#    visible: a gap of PSNs that never arrive);
#  - the CNPs it answers CE with: opcode 0x81, BECN, DestQP of the CE-marked frame, addresses
#    swapped, sent to --gw-mac, Not-ECT with DSCP 48, a valid ICRC (computed independently by
#    roce_lib), and at most one per QP per --cnp-gap-us;
#  - non-RoCE frames and frames without CE are counted or ignored, never answered;
#  - with --rc, the RC responder of roce-gen's closed-loop mode: in-order PSNs acknowledged
#    on AckReq, one NAK (PSN sequence error, naming the expected PSN) per gap, out-of-order
#    frames dropped, duplicates acknowledged again, and the totals in --summary.
# Needs root and network namespaces (exits 77 otherwise).
import os
import signal
import subprocess
import sys
import tempfile
import time

sys.dont_write_bytecode = True
SRC = os.environ.get("SRV6GW_SRC") or os.path.abspath(
    os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(SRC, "tests", "interop"))
import netns_lib as nl  # noqa: E402
from netns_lib import rl  # noqa: E402

SINK = os.environ.get("ROCE_SINK") or os.path.join(SRC, "build", "tools", "fabric", "roce-sink")
GW_MAC = "02:00:00:00:0b:01"
A, B = "10.0.0.1", "10.0.1.1"


def main():
    nl.require_root_and_netns()
    if not os.access(SINK, os.X_OK):
        rl.fail(f"{SINK} missing: build first")
    chain = nl.Chain(["tx", "rx"])  # tx:rgt0 <-> rx:lft0
    work = tempfile.mkdtemp(prefix="roce-sink-test-")
    out = os.path.join(work, "bins.txt")
    try:
        for role, dev in (("tx", "rgt0"), ("rx", "lft0")):
            chain.sysctl(role, f"net.ipv6.conf.{dev}.disable_ipv6", 1)
            chain.ip(role, f"addr flush dev {dev}")
        tx = nl.packet_socket(chain.ns["tx"], "rgt0")
        sink = subprocess.Popen(["ip", "netns", "exec", chain.ns["rx"], SINK, "--iface", "lft0",
                                 "--out", out, "--gw-mac", GW_MAC, "--cnp-gap-us", "200000",
                                 "--bin-ms", "50"], stderr=subprocess.PIPE, text=True)
        deadline = time.monotonic() + 10
        while not os.path.exists(out):
            if sink.poll() is not None or time.monotonic() > deadline:
                rl.fail(f"roce-sink did not start: {sink.stderr.read()}")
            time.sleep(0.05)
        time.sleep(0.3)

        def send(qp, psn, ecn, payload=256):
            ip = rl.roce_ip_packet(4, A, B, rl.OP_WRITE_ONLY if psn % 2 else rl.OP_SEND_ONLY,
                                   qp, psn, tos=0x68 | ecn, payload_len=payload)
            f = rl.frame(ip, dst_mac="02:00:00:00:0c:01", src_mac="02:00:00:00:0a:01")
            tx.send(f)
            return len(f)

        sent_bytes = 0
        # QP 0x111: PSNs 100..119 with 105 and 106 lost and 110 arriving after 111 (late);
        # QP 0x222: PSNs 500..509, all CE-marked (one CNP expected: the gap is 200 ms).
        # QP 0x333: 5 frames Not-ECT, one ECT(1).
        for psn in [p for p in range(100, 120) if p not in (105, 106, 110)] + [110]:
            sent_bytes += send(0x111, psn, 2)
        for psn in range(500, 510):
            sent_bytes += send(0x222, psn, 3)
        for psn in range(900, 906):
            sent_bytes += send(0x333, psn, 1 if psn == 905 else 0)
        # Not RoCE: an ARP-sized junk frame and a UDP frame to another port: ignored.
        tx.send(bytes(6) + bytes.fromhex("020000000a01") + b"\x08\x06" + bytes(46))
        from scapy.all import IP, UDP, Ether, Raw
        tx.send(bytes(Ether(dst="02:00:00:00:0c:01") / IP(src=A, dst=B) / UDP(dport=9) /
                      Raw(b"x" * 40)))
        frames_sent = 18 + 10 + 6
        # The CNPs come back on tx's side.
        cnps = nl.capture(tx, 2, lambda d: nl.plain_roce_frame(d) and d[14 + 20 + 8] == 0x81,
                          timeout=3.0)
        time.sleep(0.3)
        sink.send_signal(signal.SIGTERM)
        sink.wait(timeout=10)
        bins = []
        with open(out) as f:
            for line in f:
                if not line.startswith("#"):
                    bins.append([float(x) for x in line.split()])
        tot = [int(sum(b[k] for b in bins)) for k in range(1, 7)]
        frames, nbytes, ce, late, advance, cnp_count = tot
        rl.log(f"roce-sink counted: frames {frames}, bytes {nbytes}, CE {ce}, late {late}, "
               f"PSN advance {advance}, CNPs {cnp_count}; captured CNPs {len(cnps)}")
        problems = []
        if frames != frames_sent:
            problems.append(f"frames {frames}, sent {frames_sent}")
        if nbytes != sent_bytes:
            problems.append(f"bytes {nbytes}, sent {sent_bytes}")
        if ce != 10:
            problems.append(f"CE {ce}, expected 10")
        if late != 1:
            problems.append(f"late {late}, expected 1 (PSN 110 after 111)")
        # advance: QP 0x111 first 100 then up to 119 (20), QP 0x222 10, QP 0x333 6 = 36;
        # received 34: loss 2 (105, 106).
        if advance != 36:
            problems.append(f"PSN advance {advance}, expected 36 (2 lost of 36)")
        if cnp_count != 1 or len(cnps) != 1:
            problems.append(f"{cnp_count} CNPs counted, {len(cnps)} captured; expected 1 "
                            "(10 CE frames of one QP within the 200 ms gap)")
        for c in cnps:
            ip = c[14:]
            bth = ip[28:]
            if c[0:6] != bytes.fromhex(GW_MAC.replace(":", "")):
                problems.append(f"CNP to MAC {c[0:6].hex(':')}, not {GW_MAC}")
            if ip[12:16] != bytes(map(int, B.split("."))) or ip[16:20] != bytes(
                    map(int, A.split("."))):
                problems.append("CNP addresses are not the CE frame's swapped")
            if ip[1] != (48 << 2):
                problems.append(f"CNP TOS 0x{ip[1]:02x}, expected DSCP 48 Not-ECT (0xc0)")
            if int.from_bytes(bth[5:8], "big") != 0x222 or not bth[4] & 0x40:
                problems.append(f"CNP DestQP {bth[5:8].hex()} / BECN bit: {bth.hex()[:24]}")
            if not rl.icrc_valid(ip[:int.from_bytes(ip[2:4], "big")]):
                problems.append("CNP ICRC invalid")
        if problems:
            rl.fail("\n".join(problems))
        rc_responder(chain, tx, work)
        rl.log("ok")
    finally:
        chain.cleanup()


def rc_responder(chain, tx, work):
    import json
    out = os.path.join(work, "rc-bins.txt")
    summary = os.path.join(work, "rc-summary.json")
    sink = subprocess.Popen(["ip", "netns", "exec", chain.ns["rx"], SINK, "--iface", "lft0",
                             "--out", out, "--gw-mac", GW_MAC, "--bin-ms", "50", "--rc",
                             "--summary", summary], stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 10
    while not os.path.exists(out):
        if sink.poll() is not None or time.monotonic() > deadline:
            rl.fail(f"roce-sink --rc did not start: {sink.stderr.read()}")
        time.sleep(0.05)
    time.sleep(0.3)
    qp = 0x444
    # PSN 0, 1, 2 (AckReq), 4 and 5 (gap: one NAK for 3, both dropped), 3 (AckReq), 4, 5
    # (AckReq), then a duplicate 1 (AckReq: acknowledged again with the last in-order PSN).
    sequence = [(0, 0), (1, 0), (2, 1), (4, 0), (5, 0), (3, 1), (4, 0), (5, 1), (1, 1)]
    for psn, ackreq in sequence:
        ip = rl.roce_ip_packet(4, A, B, 0x07, qp, psn,
                               tos=0x68 | 2, payload_len=256, ackreq=ackreq)
        tx.send(rl.frame(ip, dst_mac="02:00:00:00:0c:01", src_mac="02:00:00:00:0a:01"))
        time.sleep(0.01)
    answers = nl.capture(tx, 5, lambda d: nl.plain_roce_frame(d) and d[14 + 20 + 8] == 0x11,
                         timeout=3.0)
    time.sleep(0.2)
    sink.send_signal(signal.SIGTERM)
    sink.wait(timeout=10)
    got = []
    for a in answers:
        bth = a[14 + 20 + 8:]
        got.append((int.from_bytes(bth[9:12], "big"), bth[12]))
        if int.from_bytes(bth[5:8], "big") != qp or not rl.icrc_valid(
                a[14:14 + int.from_bytes(a[16:18], "big")]):
            rl.fail(f"ACK/NAK for the wrong QP or with a bad ICRC: {a.hex()}")
    # ACK 2, NAK 3 (syndrome 0x60), ACK 3, ACK 5, ACK 5 (the duplicate).
    want = [(2, 0x1F), (3, 0x60), (3, 0x1F), (5, 0x1F), (5, 0x1F)]
    with open(summary) as f:
        tot = json.load(f)
    rl.log(f"roce-sink --rc answered {got}; summary {tot}")
    if got != want:
        rl.fail(f"RC answers {got}, expected {want}")
    if (tot["acks"], tot["naks"], tot["accepted"], tot["out_of_order_dropped"],
            tot["duplicates"]) != (4, 1, 6, 2, 1):
        rl.fail(f"summary {tot}: expected 4 ACKs, 1 NAK, 6 accepted, 2 dropped, 1 duplicate")


if __name__ == "__main__":
    rl.main_wrapper(main)
