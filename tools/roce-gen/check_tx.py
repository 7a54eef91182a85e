#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
# roce-gen's DPDK transmit mode against things it does not control:
#  1. count mode on net_pcap: the frames on the wire are byte for byte the frames the pcap
#     mode writes for the same options and seed (scapy reads both files);
#  2. pacing: --rate-pps and --rate-mbps for a duration; the achieved rate, computed here from
#     the pcap's own timestamps and lengths, never exceeds the target, is not far below it
#     (loose: shared 2-core machine) and agrees with what roce-gen reports;
#  3. net_af_packet on a veth in a network namespace: a raw socket on the peer counts what
#     arrived, which must be what roce-gen says it sent (root only; else that part is skipped);
#  4. refused arguments exit 2 with a message naming the option.
# Usage: check_tx.py ROCE_GEN
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests",
                                "interop"))
from scapy.all import rdpcap  # noqa: E402
import netns_lib as nl  # noqa: E402

GEN = sys.argv[1]
WORK = tempfile.mkdtemp(prefix="rocegen-tx-")
failures = []


def log(msg):
    print(msg, flush=True)


def check(cond, msg):
    if not cond:
        failures.append(msg)
        log("FAIL: " + msg)


def eal(name, vdev):
    return ["-l", "0", "--no-huge", "--no-shconf", "--file-prefix", f"rgtx_{name}_{os.getpid()}",
            "--no-pci", "-m", "256", "--log-level", "lib.eal:warning", "--vdev", vdev]


def run(args, timeout=60):
    log("+ " + " ".join(args))
    r = subprocess.run(args, capture_output=True, text=True, timeout=timeout)
    if r.stdout.strip():
        log(r.stdout.strip())
    return r


def transmit(name, gen_args, tx_args, ns=None):
    out = os.path.join(WORK, f"{name}.pcap")
    report = os.path.join(WORK, f"{name}.json")
    vdev = f"net_pcap0,tx_pcap={out},rx_iface=lo" if ns is None else ns[1]
    cmd = [GEN] + eal(name, vdev) + ["--", "--tx-port", vdev.split(",")[0],
                                      "--report-json", report] + gen_args + tx_args
    if ns is not None:
        cmd = ["ip", "netns", "exec", ns[0]] + cmd
    r = run(cmd)
    if r.returncode != 0:
        check(False, f"{name}: roce-gen exit {r.returncode}: {r.stderr.strip()[-2000:]}")
        return out, None
    with open(report) as f:
        return out, json.load(f)


def main():
    gen_args = ["--seed", "11", "--hosts", "2", "--qps", "4", "--family", "mixed",
                "--opcodes", "all", "--sizes", "128,1024:2,4096"]

    # 1. identical frames
    ref = os.path.join(WORK, "ref.pcap")
    r = run([GEN, "-o", ref, "--count", "400"] + gen_args)
    check(r.returncode == 0, f"pcap mode failed: {r.stderr}")
    out, rep = transmit("count", gen_args, ["--count", "400", "--rate-pps", "4000"])
    if rep:
        check(rep["sent_packets"] == 400, f"count mode sent {rep['sent_packets']}, not 400")
        got, want = rdpcap(out), rdpcap(ref)
        check(len(got) == 400, f"net_pcap wrote {len(got)} frames, not 400")
        diff = sum(1 for a, b in zip(got, want) if bytes(a) != bytes(b))
        check(diff == 0, f"{diff} frames differ from the pcap mode's")
        check(rep["sent_bytes"] == sum(len(p) for p in want),
              f"reported bytes {rep['sent_bytes']} != frame bytes {sum(len(p) for p in want)}")
        log(f"count mode: {len(got)} frames, identical to pcap mode: {diff == 0}")

    # 2. pacing, measured from the capture's timestamps
    for name, tx_args, target_pps, target_mbps in (
            ("pps", ["--rate-pps", "3000", "--duration", "1.5"], 3000, None),
            ("mbps", ["--rate-mbps", "20", "--duration", "1.5"], None, 20.0)):
        out, rep = transmit(name, ["--seed", "3", "--size", "1024"], tx_args)
        if not rep:
            continue
        pkts = rdpcap(out)
        check(len(pkts) == rep["sent_packets"],
              f"{name}: capture has {len(pkts)} frames, roce-gen reports {rep['sent_packets']}")
        span = float(pkts[-1].time - pkts[0].time) if len(pkts) > 1 else 0
        pps = (len(pkts) - 1) / span if span > 0 else 0
        mbps = sum(len(p) for p in pkts[:-1]) * 8 / span / 1e6 if span > 0 else 0
        log(f"{name}: {len(pkts)} frames over {span:.3f} s in the capture: {pps:.0f} pps, "
            f"{mbps:.2f} Mbit/s; roce-gen reports {rep['achieved_pps']:.0f} pps, "
            f"{rep['achieved_mbps']:.2f} Mbit/s over {rep['elapsed_s']:.3f} s")
        # Loose on purpose (shared 2-core machine): pacing must never overshoot the target,
        # may fall short when the machine starves the sender, and what roce-gen reports
        # must be what the capture shows.
        check(1.4 <= rep["elapsed_s"] <= 15.0, f"{name}: ran {rep['elapsed_s']:.3f} s, not ~1.5")
        if target_pps:
            check(0.3 * target_pps <= pps <= 1.1 * target_pps,
                  f"{name}: {pps:.0f} pps on the wire, target {target_pps}")
        if target_mbps:
            check(0.3 * target_mbps <= mbps <= 1.1 * target_mbps,
                  f"{name}: {mbps:.2f} Mbit/s on the wire, target {target_mbps}")
        check(abs(rep["achieved_pps"] - pps) <= 0.05 * pps + 5,
              f"{name}: roce-gen reports {rep['achieved_pps']:.0f} pps, the capture {pps:.0f}")

    # 3. net_af_packet on a veth in a namespace, counted by the peer's raw socket
    if os.geteuid() != 0 or shutil.which("ip") is None:
        log("SKIP part 3: needs root and iproute2 (network namespace)")
    else:
        ns = f"rgtx{os.getpid()}"
        subprocess.run(["ip", "netns", "add", ns], check=True)
        try:
            for cmd in (f"link add tx0 type veth peer name rx0", "link set tx0 up",
                        "link set rx0 up", "link set tx0 mtu 9000", "link set rx0 mtu 9000"):
                subprocess.run(["ip", "-n", ns] + cmd.split(), check=True)
            for key in ("net.ipv6.conf.all.disable_ipv6=1", "net.ipv6.conf.default.disable_ipv6=1"):
                subprocess.run(["ip", "netns", "exec", ns, "sysctl", "-qw", key], check=True)
            sock = nl.packet_socket(ns, "rx0")
            _, rep = transmit("afp", ["--seed", "5", "--size", "512"],
                              ["--rate-pps", "2000", "--duration", "1.0"],
                              ns=(ns, "net_af_packet0,iface=tx0"))
            sock.settimeout(0.5)
            got = 0
            try:
                while True:
                    data = sock.recv(65535)
                    if len(data) > 42 and data[12:14] == b"\x08\x00" and data[23] == 17:
                        got += 1
            except socket.timeout:
                pass
            if rep:
                log(f"af_packet: roce-gen sent {rep['sent_packets']} "
                    f"({rep['achieved_pps']:.0f} pps), the veth peer received {got}")
                check(rep["sent_packets"] > 1000, f"af_packet: only {rep['sent_packets']} sent")
                check(got == rep["sent_packets"],
                      f"af_packet: peer received {got}, roce-gen sent {rep['sent_packets']}")
        finally:
            subprocess.run(["ip", "netns", "del", ns])

    # 4. refusals
    for args, needle in (
            (eal("bad1", "net_null0") + ["--", "--tx-port", "net_nope0", "--count", "1"],
             "--tx-port: no DPDK port 'net_nope0'"),
            (eal("bad2", "net_null0") + ["--", "--count", "1"], "--tx-port is required"),
            (eal("bad3", "net_null0") + ["--", "--tx-port", "net_null0", "--rate-pps", "x"],
             "--rate-pps: 'x'"),
            (eal("bad4", "net_null0") + ["--", "--tx-port", "net_null0", "-o", "/tmp/x.pcap"],
             "exclusive"),
            (["--rate-pps", "10", "-o", os.path.join(WORK, "x.pcap")], "need EAL arguments")):
        r = run([GEN] + args)
        check(r.returncode == 2 and needle in r.stderr,
              f"{args[-4:]}: exit {r.returncode}, stderr {r.stderr.strip()[-300:]!r}, "
              f"wanted exit 2 and {needle!r}")
    shutil.rmtree(WORK, ignore_errors=True)
    if failures:
        log(f"{len(failures)} failure(s)")
        sys.exit(1)
    log("ok")


if __name__ == "__main__":
    main()
