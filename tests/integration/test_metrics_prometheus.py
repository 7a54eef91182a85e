#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
# issue 19, acceptance 1: a real Prometheus server (Debian's `prometheus`) scrapes the
# gateway's --metrics-address endpoint while it replays the demo pcaps once; Prometheus's
# HTTP API then returns the series with the values the gateway's own final statistics
# (--stats-json) and the fabric port's output pcap show; `promtool check metrics` accepts
# the exposition.
import json
import os
import re
import socket
import struct
import subprocess
import time
import urllib.parse
import urllib.request

import gwlib

gwlib.need_tools("prometheus", "promtool")
work = gwlib.workdir("metrics-prometheus")
prefix = gwlib.unique_prefix("metrics")
fabric_out = os.path.join(work, "fabric-out.pcap")
stats_json = os.path.join(work, "stats.json")
gw_log = os.path.join(work, "srv6gw.log")

eal = gwlib.eal_args(prefix, [
    f"net_pcap0,rx_pcap={gwlib.DEMO_HOST_PCAP},tx_pcap={os.path.join(work, 'host-out.pcap')}",
    f"net_pcap1,rx_pcap={gwlib.DEMO_FABRIC_PCAP},tx_pcap={fabric_out}",
])
with open(gw_log, "w") as log:
    gw = gwlib.start(eal, ["--config", gwlib.DEMO_JSON, "--stats-interval", "0", "--duration",
                           "120", "--stats-json", stats_json, "--metrics-address", "127.0.0.1:0",
                           "--agent-listen", f"unix:{os.path.join(work, 'agent.sock')}",
                           "--agent-state", "none"],
                     stdout=subprocess.DEVNULL, stderr=log)


def wait_for(what, fn, timeout):
    deadline = time.time() + timeout
    while True:
        v = fn()
        if v is not None:
            return v
        gwlib.check(gw.poll() is None, f"gateway exited ({gw.returncode}) while waiting for {what}")
        gwlib.check(time.time() < deadline, f"no {what} within {timeout} s")
        time.sleep(0.3)


def listening():
    with open(gw_log) as f:
        m = re.search(r"metrics: listening on http://([0-9.]+:[0-9]+)/metrics", f.read())
    return m.group(1) if m else None


target = wait_for("metrics listener in the log", listening, 60)


def exposition():
    with urllib.request.urlopen(f"http://{target}/metrics", timeout=10) as r:
        return r.read().decode()


def samples(text):
    """{'name{labels}': value} of an exposition."""
    out = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            key, value = line.rsplit(" ", 1)
            out[key] = float(value)
    return out


# The pcaps are replayed once: wait until both ports stopped receiving.
last = {}


def idle():
    global last
    s = samples(exposition())
    rx = (s.get('srv6gw_port_rx_packets_total{port="host",device="net_pcap0"}'),
          s.get('srv6gw_port_rx_packets_total{port="fabric",device="net_pcap1"}'))
    done = rx[0] and rx == last.get("rx")
    last = {"rx": rx, "samples": s}
    return s if done else None


wait_for("idle ports after the replay", lambda: (time.sleep(1), idle())[1], 60)
text = exposition()
direct = samples(text)
res = subprocess.run(["promtool", "check", "metrics"], input=text, capture_output=True, text=True,
                     timeout=60)
gwlib.check(res.returncode == 0, f"promtool check metrics: {res.stdout}{res.stderr}")

with socket.socket() as s:  # a free port for Prometheus's own listener
    s.bind(("127.0.0.1", 0))
    prom_port = s.getsockname()[1]
with open(os.path.join(work, "prometheus.yml"), "w") as f:
    f.write(f"""global:
  scrape_interval: 1s
  scrape_timeout: 1s
scrape_configs:
  - job_name: srv6gw
    static_configs:
      - targets: ['{target}']
""")
prom = subprocess.Popen(["prometheus", f"--config.file={work}/prometheus.yml",
                         f"--storage.tsdb.path={work}/tsdb",
                         f"--web.listen-address=127.0.0.1:{prom_port}", "--log.level=warn"],
                        stdout=subprocess.DEVNULL, stderr=open(os.path.join(work, "prom.log"), "w"))
gwlib._procs.append(prom)


def query(expr):
    """Instant query through Prometheus's HTTP API: [(labels, value)], None while unreachable."""
    url = f"http://127.0.0.1:{prom_port}/api/v1/query?" + urllib.parse.urlencode({"query": expr})
    try:
        with urllib.request.urlopen(url, timeout=10) as r:
            body = json.load(r)
    except OSError:
        return None
    gwlib.check(body["status"] == "success", f"query {expr}: {body}")
    return [(x["metric"], float(x["value"][1])) for x in body["data"]["result"]]


def scraped():
    r = query('up{job="srv6gw"}')
    return True if r and r[0][1] == 1 else None


wait_for("successful Prometheus scrape", scraped, 60)
encap = direct['srv6gw_worker_encap_total{worker="0"}']
gwlib.check(encap > 0, "no packet encapsulated")
got = query("sum(srv6gw_worker_encap_total)")
gwlib.check(got and got[0][1] == encap, f"Prometheus encap {got}, endpoint {encap}")
paths = query("sum(srv6gw_path_packets_total)")
gwlib.check(paths and paths[0][1] == encap, f"path packets {paths} != encap {encap}")
path_series = query("srv6gw_path_packets_total")
gwlib.check(sorted(m["path_id"] for m, _ in path_series) == ["101", "102", "201", "301", "302"],
            f"path series {path_series}")
weight = query('srv6gw_path_weight{policy="pinned-qp",path_id="301"}')
gwlib.check(weight and weight[0][1] == 3, f"weight of path 301: {weight}")
drops = {m["reason"]: v for m, v in query("srv6gw_dropped_packets_total")}
for reason in ("steering_miss", "malformed", "decap_refused", "no_headroom", "tx_full"):
    gwlib.check(reason in drops, f"drop reason {reason} missing: {sorted(drops)}")
parse = {m["status"]: v for m, v in query("srv6gw_parse_status_packets_total")}
gwlib.check(parse.get("ok", 0) > 0 and parse.get("not_ip", 0) > 0, f"parse statuses {parse}")
for expr in ("srv6gw_agent_generation", "srv6gw_engine_decisions_total",
             'srv6gw_build_info{version!=""}', "srv6gw_worker_busy_seconds_total",
             "srv6gw_steering_rules"):
    gwlib.check(query(expr), f"no series {expr}")
fabric_tx = query('srv6gw_port_tx_packets_total{port="fabric"}')[0][1]

gw.terminate()
gwlib.check(gw.wait(timeout=30) == 0, "gateway did not exit cleanly")
prom.terminate()
prom.wait(timeout=30)

with open(stats_json) as f:
    stats = json.load(f)
gwlib.check(stats["total"]["encap"] == encap,
            f"final statistics encap {stats['total']['encap']} != Prometheus {encap}")


def pcap_records(path):
    with open(path, "rb") as f:
        data = f.read()
    n, off = 0, 24
    while off + 16 <= len(data):
        off += 16 + struct.unpack_from("<I", data, off + 8)[0]
        n += 1
    return n


frames = pcap_records(fabric_out)
gwlib.check(frames == fabric_tx, f"fabric pcap has {frames} frames, Prometheus says {fabric_tx}")
print(f"metrics-prometheus: Prometheus scraped encap={encap:.0f} fabric_tx={fabric_tx:.0f} "
      f"(= stats JSON, = fabric pcap frames); promtool check metrics passed")
