#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""Policy updates under load (issue 4 scale, issue 7 "policy updates under load").

The real daemon forwards RoCEv2 traffic while its gRPC agent takes steering changes:
  host port  net_pcap0,rx_pcap=<64 RoCEv2 frames>,infinite_rx=1 (replayed as fast as the
             worker polls: the source never drops, so nothing can be lost before the worker)
  fabric     net_null0 (accepts every packet)
Every frame is steered by an exact rule (destination, DestQP) of its own, so every packet
received must leave encapsulated:
  lost = rx_host - tx_fabric - drops (all reasons)      must be 0
  misses = packets passed without encapsulation          must be 0 (a rule was missing)
Phases:
  (a) one Apply of --batch steering upserts (new rules) that also re-points the measured
      rules to the other policy;
  (b) --seconds of churn at --rate changes/s: batches of --churn-batch upserts that move
      rules of the --batch pool to another destination (a delete and an add in the
      data-plane hash each) and re-point the measured rules, so the lookups of the measured
      traffic run against tables that change under them. Its batches are encoded before it
      starts, so that the rate is the gateway's, not Python's encoding speed.
Prints entries/s per phase, the agent's per-phase times (validate, data plane, persist)
from its log, packets received/sent/dropped by reason, loss and misses; writes JSON.

The Apply requests are encoded here (proto3 wire format of srv6gw.v1.ApplyRequest) and
sent with python3-grpcio's generic unary call, so the client costs little next to the agent.

Full run (documented in docs/design/agent.md):
  /usr/bin/python3 tools/bench/updates_under_load.py --batch 100000 --rate 100000 \
      --seconds 10 --json bench-results/updates_under_load.json
Smoke (CI, integration suite): --batch 20000 --rate 20000 --seconds 3 --check
"""
import argparse
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(SRC, "tests", "integration"))
sys.path.insert(0, os.path.join(SRC, "tests", "oracle"))


def _binaries_from_build_dir():
    """--build-dir BUILD (run.py's contract) names the binaries, unless SRV6GW_BIN/SRV6GW_CTL
    do; gwlib reads those when imported, so this runs before the import."""
    build = None
    for i, a in enumerate(sys.argv):
        if a == "--build-dir" and i + 1 < len(sys.argv):
            build = sys.argv[i + 1]
        elif a.startswith("--build-dir="):
            build = a.split("=", 1)[1]
    if build:
        build = os.path.abspath(build)
        os.environ.setdefault("SRV6GW_BIN", os.path.join(build, "apps", "srv6gw", "srv6gw"))
        os.environ.setdefault("SRV6GW_CTL",
                              os.path.join(build, "apps", "srv6gw-ctl", "srv6gw-ctl"))


_binaries_from_build_dir()
import gwlib  # noqa: E402

try:
    import grpc  # noqa: E402
except ImportError:
    gwlib.skip("python3-grpcio is not installed (tools/setup.sh installs it)")
try:
    import roce_lib as rl  # noqa: E402  (scapy)
except ImportError:
    gwlib.skip("python3-scapy is not installed")

POLICIES = ("load-a", "load-b")
MEASURED_FLOWS = 64
MEASURED_DST = "10.0.9.7"
MEASURED_FIRST_ID = 900001
POOL_FIRST_ID = 1_000_001


# ---- proto3 wire encoding of the few messages we send ----------------------------------------
def varint(n):
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def field_varint(num, value):
    return varint(num << 3) + varint(value)


def field_bytes(num, data):
    return varint(num << 3 | 2) + varint(len(data)) + data


def exact_rule(rule_id, dst, qp, policy):
    # SteeringRule{id=1, exact=2 {destination=1, dest_qp=2}, policy=7}
    exact = field_bytes(1, dst.encode()) + field_varint(2, qp)
    return field_varint(1, rule_id) + field_bytes(2, exact) + field_bytes(7, policy.encode())


def upsert_steering(rule):
    return field_bytes(1, field_bytes(3, rule))  # ApplyRequest.changes[] = Change{upsert_steering=3}


def parse_generation(resp):
    # ApplyResponse{generation=1 (uint64)}; absent = 0.
    if resp[:1] == b"\x08":
        n, shift, i = 0, 0, 1
        while True:
            b = resp[i]
            n |= (b & 0x7F) << shift
            i += 1
            shift += 7
            if not b & 0x80:
                return n
    return 0


# ---- the rules --------------------------------------------------------------------------------
def measured_rules(policy):
    return [exact_rule(MEASURED_FIRST_ID + k, MEASURED_DST, 0x100 + k, policy)
            for k in range(MEASURED_FLOWS)]


def pool_rule(index, variant, policy):
    """Rule POOL_FIRST_ID + index; its destination moves between 10.64/10 (variant 0) and
    11.64/10 (variant 1)."""
    n = index + 1
    first = 10 + variant
    dst = f"{first}.{64 + ((n >> 16) & 63)}.{(n >> 8) & 255}.{n & 255}"
    return exact_rule(POOL_FIRST_ID + index, dst, 0x200 + (index & 0xFFFF), policy)


def frames():
    out = []
    for k in range(MEASURED_FLOWS):
        ip = rl.roce_ip_packet(4, "10.0.0.1", MEASURED_DST, 4, 0x100 + k, k, sport=49152 + k,
                               payload_len=256)
        out.append(rl.frame(ip, dst_mac="02:00:00:00:00:01", src_mac="02:00:00:00:00:02"))
    return out


def config(base_json, batch):
    with open(base_json) as f:
        cfg = json.load(f)
    gw = cfg["srv6gw:gateway"]
    gw["ports"]["host"] = "net_pcap0"
    gw["ports"]["fabric"] = "net_null0"
    gw["stats-interval-ms"] = 0
    caps = gw.setdefault("capacities", {})
    caps["exact-entries"] = max(int(caps.get("exact-entries", 0)), 2 * batch + 4096)
    gw["policies"]["policy"] += [{
        "name": name, "color": 700 + i, "endpoint": MEASURED_DST, "encap": "encaps",
        "selection": {"mode": "flow"},
        "segment-list": [{"name": "only", "path-id": 700 + i, "weight": 1,
                          "sid": [f"fc00:0:7{i}::e", "fc00:0:9::d4"]}]}
        for i, name in enumerate(POLICIES)]
    # The measured rules are in the file: traffic is steered from its first packet on.
    gw.setdefault("steering", {}).setdefault("rule", [])
    gw["steering"]["rule"] += [
        {"id": MEASURED_FIRST_ID + k, "exact": {"destination": MEASURED_DST, "dest-qp": 0x100 + k},
         "policy": POLICIES[0]} for k in range(MEASURED_FLOWS)]
    return cfg


class Daemon:
    def __init__(self, work, cfg_path, pcap, persist, mem_mb):
        self.prefix = gwlib.unique_prefix("upd")
        self.sock = os.path.join(work, "agent.sock")
        self.stats_json = os.path.join(work, "stats.json")
        state = os.path.join(work, "state.json") if persist else "none"
        eal = gwlib.eal_args(self.prefix, [f"net_pcap0,rx_pcap={pcap},infinite_rx=1", "net_null0"],
                             mem_mb=mem_mb)
        self.proc = gwlib.start(eal, [
            "--config", cfg_path, "--stats-interval", "0", "--stats-json", self.stats_json,
            "--agent-listen", "unix:" + self.sock, "--agent-state", state],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        self.log = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self):
        for line in self.proc.stdout:
            self.log.append(line)

    def dump_log(self, n=40):
        print("".join(self.log[-n:]), flush=True)

    def wait_serving(self, channel, timeout=60):
        deadline = time.time() + timeout
        health = channel.unary_unary("/grpc.health.v1.Health/Check",
                                     request_serializer=lambda x: x,
                                     response_deserializer=lambda x: x)
        while time.time() < deadline:
            if self.proc.poll() is not None:
                self._reader.join(5)
                self.dump_log()
                gwlib.fail(f"gateway exited with {self.proc.returncode} at start")
            if os.path.exists(self.sock):
                try:
                    # HealthCheckResponse{status=1 SERVING}
                    if health(b"", timeout=2) == b"\x08\x01":
                        return
                except grpc.RpcError:
                    pass
            time.sleep(0.1)
        self.dump_log()
        gwlib.fail(f"agent not SERVING on {self.sock} within {timeout} s")

    def rx_host(self):
        s = gwlib.telemetry_query(self.prefix, "/srv6gw/stats")
        return s["rx_host"] if isinstance(s, dict) else None

    def stop(self):
        self.proc.send_signal(signal.SIGTERM)
        try:
            rc = self.proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.dump_log()
            gwlib.fail("gateway did not exit within 60 s of SIGTERM")
        self._reader.join(5)
        if rc != 0:
            self.dump_log()
            gwlib.fail(f"gateway exit code {rc} after SIGTERM")
        with open(self.stats_json) as f:
            return json.load(f)

    def apply_phases(self, generation):
        """validate/data plane/persist ms of one generation, from the agent's log line."""
        pat = re.compile(rf"agent: generation {generation} from .*\(validate ([\d.]+) ms, "
                         r"edit ([\d.]+) ms, data plane ([\d.]+) ms, persist ([\d.]+) ms\)")
        for line in self.log:
            m = pat.search(line)
            if m:
                phases = {"validate_ms": float(m.group(1)), "edit_ms": float(m.group(2)),
                          "data_plane_ms": float(m.group(3)), "persist_ms": float(m.group(4))}
                # The split of validate and the handler's whole time (absent from older logs).
                m2 = re.search(r"validate = convert ([\d.]+) \+ delta ([\d.]+) \+ check "
                               r"([\d.]+) ms; index commit ([\d.]+) ms; in the handler "
                               r"([\d.]+) ms", line)
                m3 = re.search(r"after parsing the request in ([\d.]+) ms", line)
                if m3:
                    phases["parse_ms"] = float(m3.group(1))
                # The handler thread's CPU time: the rest of its wall time was waiting (for a
                # CPU on a loaded machine, the control mutex, the disk).
                m4 = re.search(r"thread CPU ([\d.]+) ms \(data plane ([\d.]+) ms\)", line)
                if m4:
                    phases["cpu_ms"] = float(m4.group(1))
                    phases["data_plane_cpu_ms"] = float(m4.group(2))
                if m2:
                    phases.update({"convert_ms": float(m2.group(1)),
                                   "delta_ms": float(m2.group(2)),
                                   "check_ms": float(m2.group(3)),
                                   "commit_ms": float(m2.group(4)),
                                   "handler_ms": float(m2.group(5))})
                return phases
        return None


def rate_sample(daemon, seconds):
    a = daemon.rx_host()
    t0 = time.time()
    time.sleep(seconds)
    b = daemon.rx_host()
    dt = time.time() - t0
    return (b - a) / dt if a is not None and b is not None else None


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--batch", type=int, default=100000, help="rules of the one big Apply (a)")
    ap.add_argument("--rate", type=int, default=100000, help="target changes/s of phase (b)")
    ap.add_argument("--churn-batch", type=int, default=0,
                    help="changes per Apply in (b) (default rate/10)")
    ap.add_argument("--seconds", type=float, default=10, help="duration of phase (b)")
    ap.add_argument("--no-persist", action="store_true", help="--agent-state none")
    ap.add_argument("--config", default=gwlib.DEMO_JSON, help="base configuration")
    ap.add_argument("--mem-mb", type=int, default=1024)
    ap.add_argument("--json", help="write the results here")
    ap.add_argument("--build-dir", help="take srv6gw and srv6gw-ctl from this build directory "
                    "(default: SRV6GW_BIN / SRV6GW_CTL, else SRC/build)")
    ap.add_argument("--check", action="store_true",
                    help="exit 1 unless loss == 0, misses == 0 and every Apply succeeded")
    args = ap.parse_args()
    churn_batch = args.churn_batch or max(MEASURED_FLOWS + 1, args.rate // 10)
    if not os.access(gwlib.BIN, os.X_OK):
        gwlib.fail(f"gateway binary {gwlib.BIN} missing (SRV6GW_BIN)")

    work = gwlib.workdir("upd")
    cfg_path = os.path.join(work, "gateway.json")
    with open(cfg_path, "w") as f:
        json.dump(config(args.config, args.batch), f)
    pcap = os.path.join(work, "roce.pcap")
    rl.write_pcap(pcap, frames())

    daemon = Daemon(work, cfg_path, pcap, not args.no_persist, args.mem_mb)
    channel = grpc.insecure_channel("unix:" + daemon.sock, options=[
        ("grpc.max_send_message_length", -1), ("grpc.max_receive_message_length", -1)])
    daemon.wait_serving(channel)
    apply_rpc = channel.unary_unary("/srv6gw.v1.Gateway/Apply", request_serializer=lambda x: x,
                                    response_deserializer=lambda x: x)
    results = {"load_average_start": os.getloadavg(), "batch": args.batch, "rate_target": args.rate, "churn_batch": churn_batch,
               "seconds": args.seconds, "persist": not args.no_persist, "applies": []}
    errors = []

    def apply(request, n_changes, label):
        t0 = time.perf_counter()
        try:
            gen = parse_generation(apply_rpc(request, timeout=600))
        except grpc.RpcError as e:
            errors.append(f"{label}: {e.code()}: {e.details()}")
            return None, time.perf_counter() - t0
        dt = time.perf_counter() - t0
        results["applies"].append({"label": label, "changes": n_changes, "seconds": dt,
                                   "generation": gen})
        return gen, dt

    try:
        if not gwlib.wait_forwarding(daemon.prefix, timeout=30):
            daemon.dump_log()
            gwlib.fail("the gateway does not forward")
        results["pps_before"] = rate_sample(daemon, 1.0)

        # (a) one big Apply.
        req = b"".join(upsert_steering(r) for r in measured_rules(POLICIES[1]))
        req += b"".join(upsert_steering(pool_rule(i, 0, POLICIES[i & 1]))
                        for i in range(args.batch))
        n = MEASURED_FLOWS + args.batch
        rx0 = daemon.rx_host()
        gen, dt = apply(req, n, "one big batch")
        rx1 = daemon.rx_host()
        big = {"changes": n, "seconds": dt, "entries_per_s": n / dt if gen is not None else 0,
               "request_mb": len(req) / 1e6,
               "packets_during": (rx1 - rx0) if rx0 is not None and rx1 is not None else None}
        if gen is not None:
            big.update(daemon.apply_phases(gen) or {})
        results["big_apply"] = big
        print(f"(a) one Apply of {n} upserts ({len(req) / 1e6:.1f} MB): {dt * 1e3:.0f} ms, "
              f"{big['entries_per_s']:.0f} entries/s; agent: "
              f"validate {big.get('validate_ms')} ms, edit {big.get('edit_ms')} ms, "
              f"data plane {big.get('data_plane_ms')} ms, "
              f"persist {big.get('persist_ms')} ms, commit {big.get('commit_ms')} ms, "
              f"in the handler {big.get('handler_ms')} ms, request parse "
              f"{big.get('parse_ms')} ms "
              f"(convert {big.get('convert_ms')}, delta {big.get('delta_ms')}, "
              f"check {big.get('check_ms')}); {big['packets_during']} packets forwarded "
              f"meanwhile", flush=True)

        # (b) sustained churn. The batches are encoded before the clock starts (as many as the
        # pacing allows in --seconds, one more for rounding): encoding 10k upserts in Python
        # takes longer than the gateway's Apply of them, and the rate measured is the gateway's.
        variant = [0] * args.batch
        cursor = 0
        policy_flip = 0
        interval = churn_batch / args.rate
        batches = []
        for _ in range(int(args.seconds / interval) + 2):
            policy_flip ^= 1
            parts = [upsert_steering(r) for r in measured_rules(POLICIES[policy_flip])]
            for _ in range(churn_batch - MEASURED_FLOWS):
                i = cursor
                cursor = (cursor + 1) % args.batch
                variant[i] ^= 1
                parts.append(upsert_steering(pool_rule(i, variant[i], POLICIES[(i + policy_flip) & 1])))
            batches.append((b"".join(parts), len(parts)))
        changes_done = 0
        applies = 0
        rx0 = daemon.rx_host()
        t_start = time.perf_counter()
        next_at = t_start
        apply_seconds = []
        churn_gens = []
        while time.perf_counter() - t_start < args.seconds and applies < len(batches):
            body, n_changes = batches[applies]
            gen, dt = apply(body, n_changes, "churn")
            if gen is None:
                break
            apply_seconds.append(dt)
            churn_gens.append(gen)
            changes_done += n_changes
            applies += 1
            next_at += interval
            delay = next_at - time.perf_counter()
            if delay > 0:
                time.sleep(delay)
            else:
                next_at = time.perf_counter()  # behind: no catching up in bursts
        elapsed = time.perf_counter() - t_start
        rx1 = daemon.rx_host()
        churn = {"applies": applies, "changes": changes_done, "seconds": elapsed,
                 "entries_per_s": changes_done / elapsed if elapsed else 0,
                 "apply_ms_max": max(apply_seconds) * 1e3 if apply_seconds else None,
                 "apply_ms_mean": sum(apply_seconds) / len(apply_seconds) * 1e3
                 if apply_seconds else None,
                 "pps_during": (rx1 - rx0) / elapsed if rx0 is not None and rx1 is not None
                 else None}
        # Mean agent phases of the churn Applies (from the daemon's log).
        phases = [p for p in (daemon.apply_phases(g) for g in churn_gens) if p]
        for key in ("validate_ms", "edit_ms", "data_plane_ms", "persist_ms", "handler_ms",
                    "cpu_ms", "data_plane_cpu_ms"):
            have = [p[key] for p in phases if key in p]
            churn[key + "_mean"] = (sum(have) / len(have)) if have else None
        results["churn"] = churn
        print(f"(b) churn: {applies} Applies of {churn_batch} changes in {elapsed:.1f} s = "
              f"{churn['entries_per_s']:.0f} entries/s (target {args.rate}); Apply mean "
              f"{churn['apply_ms_mean'] or 0:.0f} ms, max {churn['apply_ms_max'] or 0:.0f} ms; "
              f"{churn['pps_during'] or 0:.0f} packets/s forwarded meanwhile "
              f"({results['pps_before'] or 0:.0f} before); agent means: validate "
              f"{churn['validate_ms_mean'] or 0:.1f} ms, edit {churn['edit_ms_mean'] or 0:.1f} ms, "
              f"data plane {churn['data_plane_ms_mean'] or 0:.1f} ms, "
              f"persist {churn['persist_ms_mean'] or 0:.1f} ms; in the handler "
              f"{churn['handler_ms_mean'] or 0:.1f} ms of which the thread's CPU "
              f"{churn['cpu_ms_mean'] or 0:.1f} ms (data plane "
              f"{churn['data_plane_cpu_ms_mean'] or 0:.1f} ms)", flush=True)
    finally:
        stats = daemon.stop()

    tot = stats["total"]
    drops = {k: v for k, v in tot["drops"].items() if v}
    lost = tot["rx_host"] - tot["tx_fabric"] - tot["drops_total"]
    misses = tot["passed_host_to_fabric"]
    results["packets"] = {
        "received_host": tot["rx_host"], "host_port_ipackets": stats["ports"]["host"]["ipackets"],
        "sent_fabric": tot["tx_fabric"], "fabric_port_opackets": stats["ports"]["fabric"]["opackets"],
        "encapsulated": tot["encap"], "passed_unencapsulated": misses,
        "dropped_by_reason": drops, "dropped_total": tot["drops_total"], "lost": lost}
    results["errors"] = errors
    # On a shared machine the rates follow its load: say what it was.
    results["load_average_end"] = os.getloadavg()
    print(f"load average (1/5/15 min): {results['load_average_start'][0]:.1f} at start, "
          f"{results['load_average_end'][0]:.1f} at the end", flush=True)
    # run.py's contract (run_updates_under_load): the churn rate reached, the loss, one line.
    churn = results.get("churn", {})
    big = results.get("big_apply", {})
    results["changes_per_second"] = churn.get("entries_per_s", 0.0)
    results["packets_lost"] = lost
    results["summary"] = (
        f"one {big.get('changes', 0)}-rule Apply in {big.get('seconds', 0) * 1e3:.0f} ms; "
        f"churn {churn.get('entries_per_s', 0):.0f} changes/s of {args.rate} asked; "
        f"{tot['rx_host']} packets received, {lost} lost, {tot['drops_total']} dropped, "
        f"{misses} steering misses" + (f"; {len(errors)} Applies refused" if errors else ""))
    print(f"packets: received {tot['rx_host']} (host port {stats['ports']['host']['ipackets']}), "
          f"sent {tot['tx_fabric']} (fabric port {stats['ports']['fabric']['opackets']}), "
          f"encapsulated {tot['encap']}, passed unencapsulated {misses}, dropped {drops or 0}; "
          f"lost {lost}", flush=True)
    for e in errors:
        print(f"Apply refused: {e}", flush=True)
    if args.json:
        os.makedirs(os.path.dirname(os.path.abspath(args.json)), exist_ok=True)
        with open(args.json, "w") as f:
            json.dump(results, f, indent=2)
        print(f"wrote {args.json}")
    if args.check:
        gwlib.check(not errors, f"Applies refused: {errors}")
        gwlib.check(results.get("big_apply", {}).get("entries_per_s", 0) > 0, "the big Apply failed")
        gwlib.check(results.get("churn", {}).get("applies", 0) >= 2,
                    f"only {results.get('churn', {}).get('applies')} churn Applies happened")
        gwlib.check(tot["rx_host"] > 0, "no traffic")
        gwlib.check(lost == 0, f"{lost} packets lost")
        gwlib.check(tot["drops_total"] == 0, f"drops {drops}")
        gwlib.check(misses == 0, f"{misses} packets missed their steering rule")
        gwlib.check(tot["encap"] == tot["rx_host"], "not every packet was encapsulated")
        print("PASS", flush=True)


if __name__ == "__main__":
    main()
