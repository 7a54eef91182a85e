#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
# (b) The gateway's DPDK telemetry commands, read the way an operator would: dpdk-telemetry.py
# -f PREFIX with the commands piped on stdin (non-interactive: one JSON reply per line).
# The telemetry socket is a plain unix socket, so this runs without hugepages.
import json
import shutil
import subprocess
import time

import gwlib

gwlib.need_tools("dpdk-telemetry.py")
work = gwlib.workdir("telemetry")
prefix = gwlib.unique_prefix("telemetry")
eal = gwlib.eal_args(prefix, [
    f"net_pcap0,rx_pcap={gwlib.DEMO_HOST_PCAP},infinite_rx=1",
    "net_null0,no-rx=1",
])
p = gwlib.start(eal, ["--config", gwlib.DEMO_JSON, "--host-port", "net_pcap0",
                      "--fabric-port", "net_null0", "--stats-interval", "0", "--duration", "60"],
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
sock = gwlib.telemetry_socket(prefix)
gwlib.check(gwlib.wait_for_file(sock, 30), f"no telemetry socket {sock}")

tool = shutil.which("dpdk-telemetry.py")


def query(*commands):
    """Runs dpdk-telemetry.py once with the commands on stdin; returns {command: reply}."""
    res = subprocess.run(["/usr/bin/python3", tool, "-f", prefix], input="\n".join(commands) + "\n",
                         capture_output=True, text=True, timeout=30)
    gwlib.check(res.returncode == 0, f"dpdk-telemetry.py failed: {res.stderr}")
    replies = {}
    for line in res.stdout.splitlines():
        line = line.strip()
        if line.startswith("{"):
            replies.update(json.loads(line))
    for c in commands:
        gwlib.check(c.split(",")[0] in replies, f"no reply to {c}: {res.stdout[:500]}")
    return replies


# Wait until the gateway is running (the commands answer an error before that).
deadline = time.time() + 30
while True:
    r = query("/srv6gw/stats")
    if isinstance(r["/srv6gw/stats"], dict) and r["/srv6gw/stats"].get("rx_host", 0) > 0:
        break
    gwlib.check(time.time() < deadline, f"no traffic counted within 30 s: {r}")
    time.sleep(0.3)

first = query("/", "/help,/srv6gw/paths")
for c in ("/srv6gw/stats", "/srv6gw/workers", "/srv6gw/paths", "/srv6gw/config"):
    gwlib.check(c in first["/"], f"{c} not registered: {first['/']}")
gwlib.check("policy" in first["/help"]["/srv6gw/paths"], "help of /srv6gw/paths")

a = query("/srv6gw/stats")["/srv6gw/stats"]
time.sleep(0.5)
r = query("/srv6gw/stats", "/srv6gw/workers", "/srv6gw/paths", "/srv6gw/config")
b = r["/srv6gw/stats"]
print(json.dumps(b)[:1500])
for k in ("rx_host", "tx_fabric", "encap", "passed_host_to_fabric", "busy_tsc", "bursts"):
    gwlib.check(b[k] > 0, f"/srv6gw/stats {k} = {b[k]}")
    gwlib.check(b[k] >= a[k], f"/srv6gw/stats {k} went backwards")
gwlib.check(b["rx_host"] > a["rx_host"], "counters do not move between two queries")
gwlib.check(b["cycles_per_packet_x100"] > 0, "cycles per packet")
for reason in ("steering_miss", "malformed", "decap_refused", "no_headroom", "tx_full"):
    gwlib.check(reason in b["drops"], f"drop reason {reason} missing")
gwlib.check(b["parse_status"]["ok"] > 0 and b["parse_status"]["not_ip"] > 0,
            "parse statuses: demo traffic has RoCE and ARP frames")
gwlib.check(b["host_port"]["name"] == "net_pcap0" and b["host_port"]["ipackets"] > 0, "host port")
gwlib.check(b["fabric_port"]["name"] == "net_null0" and b["fabric_port"]["opackets"] > 0,
            "fabric port")

w = r["/srv6gw/workers"]
gwlib.check(list(w) == ["0"] and w["0"]["lcore"] == 1 and w["0"]["rx_host"] > 0, f"workers {w}")

paths = r["/srv6gw/paths"]
gwlib.check(sorted(paths) == ["101", "102", "201", "301", "302"], f"paths {sorted(paths)}")
gwlib.check(sum(v["packets"] for v in paths.values()) > 0, "no packets on any path")
gwlib.check(paths["301"]["policy"] == "pinned-qp" and paths["301"]["weight"] == 3, "path 301")
gwlib.check(sorted(query("/srv6gw/paths,pinned-qp")["/srv6gw/paths"]) == ["301", "302"],
            "policy filter of /srv6gw/paths")

c = r["/srv6gw/config"]
gwlib.check(c["queues"] == 1 and c["policies"] == 3 and c["segment_lists"] == 5 and
            c["local_sid_count"] == 3 and c["source"] == "fc00:0:1::1", f"config {c}")
gwlib.check("fc00:0:1::d4 end_dx4" in c["local_sids"], f"local sids {c['local_sids']}")

p.terminate()
gwlib.check(p.wait(timeout=20) == 0, "gateway did not exit cleanly")
print("telemetry: /srv6gw/stats, /workers, /paths, /config answer with live counters")
