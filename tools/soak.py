#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""Soak: the daemon under traffic, policy churn over gRPC and local SR engine events for a
while; checks that nothing leaks, nothing is lost and the counters add up (issue 8).

    tools/soak.py [--duration S] [--churn-interval S] [--warmup S] [--rss-growth-mb MB]
    tools/soak.py --duration 600          # the documented 10-minute run

Setup: srv6gw with its gRPC agent on a unix socket; host port net_pcap (infinite_rx: RoCEv2
from 4 hosts x 16 QPs toward 10.0.8.0/24, no end), fabric port net_pcap (infinite_rx: SRv6
to our End.DX4 SID, a quarter with outer CE over ECT, some CNPs reflecting path ids). What
the ports send is dropped by the PMD (no tx file). Meanwhile, until the duration is over:
  - churn that must not touch the measured flows: a new policy with two steering rules for
    10.9.<n>.0/24 and a local SID, upserted, then deleted one cycle later;
  - churn that does: the policy 'measured' re-upserted with other weights and SIDs (same
    path ids), and one exact rule (10.0.8.7, QP 0x4d2) moved between 'measured' and
    'measured-alt' and back;
  - engine events: 'srv6gw-ctl path down/up measured m-b' in turn (m-a stays up), and the
    fabric's CE marks and CNPs through the feedback ring.
Checks (numbers printed, loose where the machine is noisy):
  - every Apply and every path down/up succeeded; the final generation = applies made;
  - 0 loss on updates: encap = rx_host and no drop at all (every host packet is a steered
    RoCEv2 packet whatever the churn); decap = rx_fabric;
  - counters consistent: rx = encap + decap + passed + drops; the ports' ipackets/opackets
    equal the workers' rx/tx counters; tx_fabric = encap; tx_host = decap; the path
    counters of 'measured' and 'measured-alt' sum to encap (and the moved rule was used);
  - no mbuf leak: every mempool's in-use count at exit equals its count when the workers
    started;
  - no resident-memory growth: RSS sampled every second; after --warmup, the maximum may
    exceed the value at the end of the warm-up by at most --rss-growth-mb.
Exit 0 when every check holds, 1 otherwise, 77 when the machine lacks something.
"""
import argparse
import json
import os
import signal
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.abspath(os.path.join(HERE, ".."))
sys.path.insert(0, os.path.join(SRC, "tests", "integration"))
sys.path.insert(0, os.path.join(SRC, "tests", "scenarios"))
import gwlib  # noqa: E402

CTL = os.environ.get("SRV6GW_CTL") or os.path.join(SRC, "build", "apps", "srv6gw-ctl",
                                                   "srv6gw-ctl")
DX4 = "fc00:0:1::d4"
GW_MAC = "02:00:00:00:00:02"
RNIC_MAC = "02:00:00:00:00:01"
ASAN_QUARANTINE_MB = 8


def measured_policy(variant):
    """'measured' with two lists of fixed path ids; the variant changes weights and SIDs."""
    spine = 100 + variant % 4
    return {"name": "measured", "color": 81, "endpoint": "10.0.8.1",
            "selection": {"mode": "SELECTION_MODE_PACKET"},
            "segment_lists": [
                {"name": "m-a", "path_id": 901, "weight": 1 + variant % 3,
                 "sids": [f"fc00:0:{spine:x}::e", "fc00:0:8::d4"]},
                {"name": "m-b", "path_id": 902, "weight": 1 + (variant + 1) % 3,
                 "sids": [f"fc00:0:{spine + 8:x}::e", "fc00:0:8::d4"]}]}


def config():
    return {"srv6gw:gateway": {
        "ports": {"host": "net_pcap0", "fabric": "net_pcap1", "queues": 1, "mbufs": 4095,
                  "fabric-nexthop-mac": "02:00:00:00:0f:01", "host-mac": RNIC_MAC},
        "source-address": "fc00:0:1::1",
        "stats-interval-ms": 0,
        "actions": {"steering-miss": "drop", "non-roce": "drop", "fabric-non-sid": "drop"},
        "engine": {"enabled": True, "hold-down-us": 1000},
        "policies": {"policy": [
            {"name": "measured", "color": 81, "endpoint": "10.0.8.1",
             "selection": {"mode": "packet"},
             "segment-list": [
                 {"name": "m-a", "path-id": 901, "weight": 1,
                  "sid": ["fc00:0:64::e", "fc00:0:8::d4"]},
                 {"name": "m-b", "path-id": 902, "weight": 2,
                  "sid": ["fc00:0:6c::e", "fc00:0:8::d4"]}]},
            {"name": "measured-alt", "color": 82, "endpoint": "10.0.8.1",
             "segment-list": [{"name": "alt-a", "path-id": 903,
                               "sid": ["fc00:0:70::e", "fc00:0:8::d4"]}]}]},
        "steering": {"rule": [
            {"id": 80, "prefix": "10.0.8.0/24", "policy": "measured"},
            {"id": 81, "exact": {"destination": "10.0.8.7", "dest-qp": 0x4D2},
             "policy": "measured"}]},
        "local-sids": {"local-sid": [{"sid": DX4, "behavior": "end-dx4"}]},
    }}


def write_traffic(work):
    from scenlib import OP_CNP, eth, fab, roce4, srv6, write_pcap
    host = []
    for h in range(4):
        for q in range(16):
            qp = 0x4D2 if q == 0 else 0x100 + q
            host.append(eth(roce4(f"10.0.8.{7 + h}", qp=qp, psn=h * 16 + q, src=f"10.0.0.{h + 1}",
                                  payload_len=256), dst=GW_MAC, src=RNIC_MAC))
    srh = [DX4, "fc00:0:11::e"]
    fabric = []
    for i in range(32):
        tag = 901 + i % 2
        if i % 8 == 3:
            inner = roce4("10.0.0.1", src="10.0.8.7", qp=0x4D2, opcode=OP_CNP)
        else:
            inner = roce4("10.0.0.1", src="10.0.8.7", qp=0x200 + i, psn=i, payload_len=256)
        tc = 0x6B if i % 4 == 1 else None  # DSCP 26 + CE over an ECT(0) inner
        fabric.append(fab(srv6(inner, DX4, srh, tag=tag, tc=tc)))
    hp, fp = os.path.join(work, "h.pcap"), os.path.join(work, "f.pcap")
    write_pcap(hp, host)
    write_pcap(fp, fabric)
    return hp, fp


def rss_kb(pid):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return None


class Soak:
    def __init__(self, args):
        self.args = args
        self.work = gwlib.workdir("soak")
        self.sock = os.path.join(self.work, "agent.sock")
        self.stats_json = os.path.join(self.work, "stats.json")
        self.failures = []
        self.applies = 0
        self.path_toggles = 0
        self.log = []
        self.sanitized = gwlib.asan_build()
        if self.sanitized:
            print(f"gateway built with ASan: quarantine {ASAN_QUARANTINE_MB} MB, added to the "
                  "allowed RSS growth", flush=True)

    def fail_now(self, msg):
        print("".join(self.log[-60:]), flush=True)
        gwlib.fail(msg)

    def ctl(self, *args, stdin=None):
        r = subprocess.run([CTL, "--socket", self.sock, "--timeout", "30"] + list(args),
                           input=stdin, capture_output=True, text=True, timeout=90)
        if r.returncode != 0:
            self.fail_now(f"srv6gw-ctl {' '.join(args)}: exit {r.returncode}\n"
                          f"stdout: {r.stdout}\nstderr: {r.stderr}")
        return r

    def apply(self, changes):
        self.ctl("apply", "-f", "-", stdin=json.dumps({"changes": changes}))
        self.applies += 1

    def start(self):
        if self.sanitized:
            # ASan keeps freed memory in a quarantine (256 MB by default) to catch use after
            # free: every churn cycle's freed policies and tables would show as RSS growth
            # until it is full. A small quarantine still catches recent use-after-free, and
            # its size is added to the allowed growth.
            opts = os.environ.get("ASAN_OPTIONS", "")
            os.environ["ASAN_OPTIONS"] = (opts + ":" if opts else "") + \
                f"quarantine_size_mb={ASAN_QUARANTINE_MB}"
        cfg = os.path.join(self.work, "config.json")
        with open(cfg, "w") as f:
            json.dump(config(), f)
        hp, fp = write_traffic(self.work)
        eal = gwlib.eal_args(gwlib.unique_prefix("soak"), [
            f"net_pcap0,rx_pcap={hp},infinite_rx=1", f"net_pcap1,rx_pcap={fp},infinite_rx=1"])
        self.proc = gwlib.start(eal, [
            "--config", cfg, "--stats-interval", "0", "--stats-json", self.stats_json,
            "--agent-listen", "unix:" + self.sock, "--agent-state", "none"],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        threading.Thread(target=lambda: self.log.extend(self.proc.stdout), daemon=True).start()
        deadline = time.time() + 60
        while time.time() < deadline:
            if self.proc.poll() is not None:
                self.fail_now(f"gateway exited with {self.proc.returncode} at start")
            if os.path.exists(self.sock):
                r = subprocess.run([CTL, "--socket", self.sock, "health"], capture_output=True,
                                   text=True, timeout=30)
                if r.stdout.strip() == "SERVING":
                    return
            time.sleep(0.1)
        self.fail_now("agent not SERVING within 60 s")

    def churn_cycle(self, n):
        """One cycle: unrelated policy/rules/SID in, the previous cycle's out, the measured
        policy varied, the exact rule moved, m-b down or up."""
        name = f"churn-{n}"
        changes = [
            {"upsert_policy": {"name": name, "color": 1000 + n % 1000, "endpoint": "10.9.0.1",
                               "segment_lists": [{"name": "c", "path_id": 2000 + n % 2,
                                                  "sids": [f"fc00:0:{0x200 + n % 16:x}::e"]}]}},
            {"upsert_steering": {"id": 1000 + n % 2, "prefix": f"10.9.{n % 256}.0/24",
                                 "policy": name}},
            {"upsert_steering": {"id": 1100 + n % 2,
                                 "exact": {"destination": f"10.9.{n % 256}.1", "dest_qp": n},
                                 "policy": name}},
            {"upsert_local_sid": {"sid": f"fc00:0:1::c{n % 2}",
                                  "behavior": "LOCAL_SID_BEHAVIOR_END_DT46"}},
        ]
        if n > 0:
            prev = n - 1
            changes += [{"delete_steering": 1000 + prev % 2},
                        {"delete_steering": 1100 + prev % 2},
                        {"delete_local_sid": f"fc00:0:1::c{prev % 2}"},
                        {"delete_policy": f"churn-{prev}"}]
        self.apply(changes)
        self.apply([{"upsert_policy": measured_policy(n)}])
        self.apply([{"upsert_steering": {
            "id": 81, "exact": {"destination": "10.0.8.7", "dest_qp": 0x4D2},
            "policy": "measured-alt" if n % 2 == 0 else "measured"}}])
        if self.args.path_toggles:
            self.ctl("path", "down" if n % 2 == 0 else "up", "measured", "m-b")
            self.path_toggles += 1

    def run(self):
        a = self.args
        self.start()
        pid = self.proc.pid
        t0 = time.time()
        samples = []  # (seconds since start, RSS kB)
        next_sample = t0
        n = 0
        next_churn = t0
        while time.time() - t0 < a.duration:
            now = time.time()
            if now >= next_sample:
                r = rss_kb(pid)
                if r is None or self.proc.poll() is not None:
                    self.fail_now(f"gateway died after {now - t0:.0f} s "
                                  f"(exit code {self.proc.poll()})")
                samples.append((now - t0, r))
                next_sample += 1.0
            if now >= next_churn:
                self.churn_cycle(n)
                n += 1
                next_churn = now + a.churn_interval
            time.sleep(0.05)
        if n % 2 == 1 and a.path_toggles:  # leave m-b up
            self.ctl("path", "up", "measured", "m-b")
            self.path_toggles += 1
        state = self.ctl("state").stdout
        elapsed = time.time() - t0
        self.proc.send_signal(signal.SIGTERM)
        try:
            rc = self.proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.fail_now("gateway did not exit within 60 s of SIGTERM")
        if rc != 0:
            self.fail_now(f"gateway exit code {rc}")
        with open(self.stats_json) as f:
            stats = json.load(f)
        self.check(stats, samples, n, elapsed, state)

    def check(self, stats, samples, cycles, elapsed, state):
        a = self.args
        t = stats["total"]
        f = self.failures
        print(f"soak: {elapsed:.0f} s, {cycles} churn cycles, {self.applies} applies, "
              f"{self.path_toggles} path down/up", flush=True)
        print(f"  rx_host {t['rx_host']} encap {t['encap']} | rx_fabric {t['rx_fabric']} "
              f"decap {t['decap']} | passed {t['passed_host_to_fabric']}/"
              f"{t['passed_fabric_to_host']} | drops {t['drops_total']} "
              f"{ {k: v for k, v in t['drops'].items() if v} }", flush=True)
        print(f"  events: outer CE {t['outer_ce_seen']}, CNP {t['cnp_seen']}, feedback "
              f"{t['feedback_events']} (ring full {t['feedback_dropped']}), reflected "
              f"{t['cnp_reflected']}", flush=True)
        gen = [line for line in state.splitlines() if "generation" in line]
        print(f"  agent: {gen[0].strip() if gen else state.strip()}", flush=True)
        if not gen or str(self.applies) not in gen[0]:
            f.append(f"final generation ({gen}) is not the {self.applies} applies made")
        if t["rx_host"] == 0 or t["rx_fabric"] == 0:
            f.append("no traffic flowed")
        if t["encap"] != t["rx_host"]:
            f.append(f"loss on updates: encap {t['encap']} != rx_host {t['rx_host']}")
        if t["decap"] != t["rx_fabric"]:
            f.append(f"decap {t['decap']} != rx_fabric {t['rx_fabric']}")
        if t["drops_total"] != 0:
            f.append(f"drops {t['drops_total']}: {t['drops']}")
        handled = t["encap"] + t["decap"] + t["passed_host_to_fabric"] + \
            t["passed_fabric_to_host"] + t["drops_total"]
        if handled != t["rx_host"] + t["rx_fabric"]:
            f.append(f"rx {t['rx_host'] + t['rx_fabric']} != encap + decap + passed + drops "
                     f"{handled}")
        if t["tx_fabric"] != t["encap"] or t["tx_host"] != t["decap"]:
            f.append(f"tx_fabric {t['tx_fabric']} / tx_host {t['tx_host']} != encap / decap")
        ports = stats["ports"]
        for role, rx, tx in (("host", "rx_host", "tx_host"), ("fabric", "rx_fabric", "tx_fabric")):
            if ports[role]["ipackets"] != t[rx] or ports[role]["opackets"] != t[tx]:
                f.append(f"{role} port ipackets/opackets {ports[role]['ipackets']}/"
                         f"{ports[role]['opackets']} != {rx}/{tx} {t[rx]}/{t[tx]}")
        if t["outer_ce_seen"] == 0 or t["cnp_seen"] == 0 or t["feedback_events"] == 0:
            f.append("no engine events (outer CE, CNP, feedback) seen")
        paths = {(p["policy"], p["segment_list"]): p["packets"] for p in stats["paths"]}
        print(f"  paths at exit: {paths}", flush=True)
        on_measured = sum(v for (pol, _), v in paths.items() if pol.startswith("measured"))
        if on_measured != t["encap"]:
            f.append(f"path counters of the measured policies sum to {on_measured}, "
                     f"encap {t['encap']}")
        if paths.get(("measured-alt", "alt-a"), 0) == 0:
            f.append("the exact rule moved to measured-alt but no packet took it")
        for p in stats["mempools"]:
            print(f"  mempool {p['name']}: {p['in_use']} in use at exit, "
                  f"{p['in_use_at_start']} when the workers started (of {p['size']})", flush=True)
            if p["in_use"] != p["in_use_at_start"]:
                f.append(f"mbuf leak: mempool {p['name']} {p['in_use']} in use at exit, "
                         f"{p['in_use_at_start']} at start")
        warm = [r for s, r in samples if s >= a.warmup]
        if len(warm) < 2:
            f.append(f"too few RSS samples after the {a.warmup} s warm-up ({len(samples)} total)")
        else:
            base, peak, last = warm[0], max(warm), warm[-1]
            print(f"  RSS: {samples[0][1] / 1024:.1f} MB at start, {base / 1024:.1f} MB after "
                  f"the {a.warmup:.0f} s warm-up, peak {peak / 1024:.1f} MB, "
                  f"{last / 1024:.1f} MB at the end ({len(samples)} samples)", flush=True)
            allowed_mb = a.rss_growth_mb + (ASAN_QUARANTINE_MB if self.sanitized else 0)
            if peak - base > allowed_mb * 1024:
                f.append(f"RSS grew {(peak - base) / 1024:.1f} MB after the warm-up "
                         f"(allowed {allowed_mb} MB"
                         f"{', ASan quarantine included' if self.sanitized else ''})")
        if "AddressSanitizer" in "".join(self.log) or "runtime error:" in "".join(self.log):
            f.append("sanitizer report in the gateway's output")
        if f:
            print("".join(self.log[-40:]), flush=True)
            gwlib.fail("; ".join(f))
        print("PASS: soak without loss, leak or RSS growth; counters consistent", flush=True)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--duration", type=float, default=60.0, help="seconds of traffic (60)")
    p.add_argument("--churn-interval", type=float, default=1.0,
                   help="seconds between churn cycles (1; each cycle is 3 applies + 1 path "
                        "down/up)")
    p.add_argument("--warmup", type=float, default=None,
                   help="seconds before RSS is taken as the baseline (default: 20%% of the "
                        "duration, at least 10)")
    p.add_argument("--rss-growth-mb", type=float, default=16.0,
                   help="allowed RSS growth after the warm-up, MB (16)")
    p.add_argument("--no-path-toggles", dest="path_toggles", action="store_false",
                   help="no SetPathState down/up (to tell its effect from the CE/CNP traffic's)")
    args = p.parse_args()
    if args.warmup is None:
        args.warmup = max(10.0, args.duration * 0.2)
    gwlib.need_tools()
    if not os.access(CTL, os.X_OK):
        gwlib.fail(f"srv6gw-ctl {CTL} missing (SRV6GW_CTL)")
    Soak(args).run()


if __name__ == "__main__":
    main()
