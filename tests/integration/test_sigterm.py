#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
# (e) SIGTERM (and SIGINT) stop a gateway under load cleanly: exit code 0 within a few
# seconds, the final statistics printed, and every packet received accounted for (sent on the
# other port or dropped by name) once the workers have flushed their TX buffers.
import json
import os
import signal
import threading
import time

import gwlib

gwlib.need_tools()
work = gwlib.workdir("sigterm")


def run_and_signal(sig, name):
    prefix = gwlib.unique_prefix(name)
    stats_json = os.path.join(work, f"{name}.json")
    eal = gwlib.eal_args(prefix, [
        f"net_pcap0,rx_pcap={gwlib.DEMO_HOST_PCAP},infinite_rx=1",
        "net_null0,no-rx=1",
    ])
    p = gwlib.start(eal, ["--config", gwlib.DEMO_JSON, "--host-port", "net_pcap0",
                          "--fabric-port", "net_null0", "--stats-interval", "200",
                          "--stats-json", stats_json])
    err_lines = []
    saw_stats = threading.Event()

    def read_stderr():
        for line in p.stderr:
            err_lines.append(line)
            if "cycles/pkt" in line:
                saw_stats.set()

    t = threading.Thread(target=read_stderr, daemon=True)
    t.start()
    if not saw_stats.wait(30):
        p.kill()
        print("".join(err_lines))
        gwlib.fail(f"{name}: no periodic stats line within 30 s")
    time.sleep(0.3)
    sent_at = time.time()
    p.send_signal(sig)
    try:
        out = p.stdout.read()
        rc = p.wait(timeout=20)
    except Exception:
        p.kill()
        gwlib.fail(f"{name}: gateway did not exit within 20 s of the signal")
    t.join(5)
    took = time.time() - sent_at
    err = "".join(err_lines)
    print(out)
    print(err[-2000:])
    gwlib.check(rc == 0, f"{name}: exit code {rc} after the signal")
    gwlib.check(took < 10, f"{name}: exit took {took:.1f} s")
    gwlib.check("stop requested by signal" in err, f"{name}: stop not logged")
    gwlib.check("final statistics" in out and "drops:" in out, f"{name}: no final statistics")
    with open(stats_json) as f:
        stats = json.load(f)
    tot = stats["total"]
    gwlib.check(tot["rx_host"] > 0 and tot["encap"] > 0, f"{name}: no traffic went through")
    received = tot["rx_host"] + tot["rx_fabric"]
    accounted = tot["tx_host"] + tot["tx_fabric"] + tot["drops_total"]
    gwlib.check(received == accounted,
                f"{name}: {received} received but {accounted} sent or dropped (lost in flight)")
    port = stats["ports"]["fabric"]
    gwlib.check(port["opackets"] == tot["tx_fabric"],
                f"{name}: fabric port sent {port['opackets']}, workers counted {tot['tx_fabric']}")
    print(f"{name}: exited in {took:.2f} s after {received} packets, all accounted for")


run_and_signal(signal.SIGTERM, "sigterm")
run_and_signal(signal.SIGINT, "sigint")
