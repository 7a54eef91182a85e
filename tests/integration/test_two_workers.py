#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
# Two workers (issue 17): one rail with two queues, so the daemon runs two worker lcores
# (worker i serves queue i of both ports; main.cpp launch_workers), here with the main lcore
# on the same two CPUs (--lcores (0-2)@(0-1)):
#
#   hstp (test: RNICs) -- hst [ gateway: 2 queues, 2 workers ] fab -- fabp (test: the fabric)
#
# net_af_packet with qpairs=2 joins its two sockets in a PACKET_FANOUT_HASH group: the kernel
# spreads received frames over the two queues by its flow hash (addresses and UDP ports), the
# RSS of this vdev. The test sends RoCEv2 traffic of 128 QPs (each its own UDP source port, as
# RNICs do), in messages of 8 back-to-back packets with the QPs interleaved, while an agent
# client (srv6gw-ctl) keeps replacing both policies' segment lists, moving the prefix rule
# between them and adding and deleting an exact rule. Checks:
#   - both workers received and encapsulated traffic (stats JSON and GetStats);
#   - counters add up: the sum over the workers of rx_host = encap = tx_fabric = the host
#     port's ipackets = frames sent = frames received on the fabric side; each worker's own
#     rx_host = encap (no drop); the path counters sum to encap; no mbuf leaked;
#   - publication under churn with two readers: every frame received carries, as its outer
#     destination, SRH Tag (path id) and SRH segments, a segment list that some Apply
#     published (no mix of two versions), around the inner packet sent (UDP, BTH and payload
#     byte for byte), and frames of more than one published version arrived while traffic ran;
#   - the gateway exits 0 on SIGTERM.
# Needs root and network namespaces (exits 77 otherwise). About 10 s on a normal build.
# Busy-polling daemon test, run alone (is_parallel false in meson.build).
import json
import os
import random
import socket
import struct
import subprocess
import sys
import threading
import time

sys.dont_write_bytecode = True  # keep the source tree clean
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "interop"))
import gwlib  # noqa: E402
import netns_lib as nl  # noqa: E402

QPS = 128
MESSAGE_PACKETS = 8
PAYLOAD = 64
HOST_SRC = "10.0.0.1"
TRAFFIC_SECONDS = 3.0   # at least this long, and until MIN_APPLIES changes went in
MIN_APPLIES = 6
MAX_SECONDS = 60.0      # bound on the traffic phase whatever the machine's load
PACE_FRAMES, PACE_SLEEP = 32, 0.004  # at most ~8k frames/s: the RX rings never fill
LOCAL_SID = "fc00:a::d4"
POLICIES = {"tw-a": (11, 12), "tw-b": (21, 22)}  # path ids of each policy's two lists
EXACT_RULE = {"destination": "10.0.1.3", "dest_qp": 0x102}


def log(msg):
    print(msg, flush=True)


def sids_of(policy, variant, path_id):
    """Three SIDs that name their policy, version and list: a frame carrying parts of two
    versions cannot match any list published."""
    return [f"fc00:{variant + 1:x}:{path_id}::e", f"fc00:{variant + 1:x}:{path_id}::f",
            f"fc00:{0xb0 + (policy == 'tw-b'):x}::d4"]


def policy_change(policy, variant):
    lists = [{"name": f"l{pid}", "path_id": pid, "weight": 1 + (variant + i) % 3,
              "sids": sids_of(policy, variant, pid)}
             for i, pid in enumerate(POLICIES[policy])]
    return {"upsert_policy": {"name": policy, "encap": "ENCAP_MODE_ENCAPS",
                              "selection": {"mode": "SELECTION_MODE_FLOW"},
                              "segment_lists": lists}}


def published_key(sids, path_id):
    """What an H.Encaps frame of this list carries: outer destination = the first SID, the SRH
    Tag = the list's path id, the SRH's segments the list last SID first."""
    return (socket.inet_pton(socket.AF_INET6, sids[0]), path_id,
            b"".join(socket.inet_pton(socket.AF_INET6, s) for s in reversed(sids)))


def config(fabric_mac, host_mac):
    policies = []
    for name, pids in POLICIES.items():
        policies.append({"name": name, "encap": "encaps", "selection": {"mode": "flow"},
                         "segment-list": [{"name": f"l{pid}", "path-id": pid, "weight": 1,
                                           "sid": sids_of(name, 0, pid)} for pid in pids]})
    return {"srv6gw:gateway": {
        "ports": {"host": "net_af_packet0", "fabric": "net_af_packet1", "queues": 2,
                  "mbufs": 8191, "fabric-nexthop-mac": fabric_mac, "host-mac": host_mac},
        "source-address": "fc00:a::1",
        "actions": {"steering-miss": "drop", "non-roce": "drop", "fabric-non-sid": "drop"},
        "stats-interval-ms": 0,
        "policies": {"policy": policies},
        "steering": {"rule": [{"id": 1, "prefix": "10.0.1.0/24", "policy": "tw-a"}]},
        "local-sids": {"local-sid": [{"sid": LOCAL_SID, "behavior": "end-dx4"}]},
    }}


def roce_frame(qp, psn):
    """Ethernet + IPv4 (DSCP 26, ECT(0)) + UDP to 4791 + BTH (RDMA WRITE middle) + payload +
    ICRC field. QP q has its own UDP source port, as RNICs give each QP one. The gateway reads
    neither the UDP checksum nor the ICRC (both 0 here)."""
    dst = f"10.0.1.{1 + qp % 8}"
    bth = struct.pack("!BBHB", 0x07, 0x40, 0xFFFF, 0) + (0x100 + qp).to_bytes(3, "big") + \
        bytes([0]) + psn.to_bytes(3, "big")
    payload = struct.pack("!HI", qp, psn) + bytes((i * 7 + qp + psn) & 0xFF
                                                  for i in range(PAYLOAD - 6)) + bytes(4)
    udp_len = 8 + len(bth) + len(payload)
    udp = struct.pack("!HHHH", 49152 + 37 * qp, 4791, udp_len, 0)
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0x68 | 2, 20 + udp_len, psn & 0xFFFF, 0x4000, 64,
                     17, 0, socket.inet_aton(HOST_SRC), socket.inet_aton(dst))
    csum = sum(struct.unpack("!10H", ip))
    csum = (csum & 0xFFFF) + (csum >> 16)
    csum = ~((csum & 0xFFFF) + (csum >> 16)) & 0xFFFF
    ip = ip[:10] + struct.pack("!H", csum) + ip[12:]
    eth = bytes.fromhex("020000000002020000000001") + b"\x08\x00"
    return eth + ip + udp + bth + payload


class Traffic:
    """RDMA-like host traffic: the QPs in a shuffled order, each sending one message of
    MESSAGE_PACKETS back-to-back packets in turn, PSNs counting per QP; paced."""

    def __init__(self, ns):
        self.tx = nl.packet_socket(ns, "hstp")
        self.sent = {}  # (qp, psn) -> the IP packet's UDP header onwards
        self.psn = [0] * QPS
        self.rng = random.Random(17)

    def send_round(self):
        order = list(range(QPS))
        self.rng.shuffle(order)
        n = 0
        for qp in order:
            for _ in range(MESSAGE_PACKETS):
                psn = self.psn[qp]
                self.psn[qp] += 1
                fr = roce_frame(qp, psn)
                self.tx.send(fr)
                self.sent[(0x100 + qp, psn)] = fr[14 + 20:]
                n += 1
                if n % PACE_FRAMES == 0:
                    time.sleep(PACE_SLEEP)


class FabricSink(threading.Thread):
    """Every frame the gateway sends out of its fabric port, as the far end receives it."""

    def __init__(self, ns):
        super().__init__(daemon=True)
        with nl.open_in_netns(ns):
            self.s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(nl.ETH_P_ALL))
            self.s.bind(("fabp", nl.ETH_P_ALL))
        # SO_RCVBUFFORCE (root): room for every frame of the run even if this thread is
        # descheduled for a while.
        self.s.setsockopt(socket.SOL_SOCKET, 33, 64 << 20)
        self.s.settimeout(0.2)
        self.frames = []
        self.stop = threading.Event()

    def run(self):
        while not self.stop.is_set():
            try:
                data, addr = self.s.recvfrom(65535)
            except socket.timeout:
                continue
            if addr[2] != nl.PACKET_OUTGOING:
                self.frames.append(data)


class Churn(threading.Thread):
    """Apply after Apply through srv6gw-ctl until stopped: both policies replaced by a new
    version (other SIDs and weights), the prefix rule moved to the other policy, and an exact
    rule added or deleted. Records every list version published."""

    def __init__(self, sock):
        super().__init__(daemon=True)
        self.sock = sock
        self.published = {published_key(sids_of(p, 0, pid), pid) for p, pids in POLICIES.items()
                          for pid in pids}
        self.applies = 0
        self.error = None
        self.stop = threading.Event()

    def ctl(self, *args, stdin=None):
        return subprocess.run([gwlib.CTL, "--socket", self.sock, "--timeout", "30"] + list(args),
                              input=stdin, capture_output=True, text=True, timeout=90)

    def run(self):
        variant = 0
        try:
            while not self.stop.is_set():
                variant += 1
                changes = [policy_change(p, variant) for p in POLICIES]
                changes.append({"upsert_steering": {
                    "id": 1, "prefix": "10.0.1.0/24",
                    "policy": "tw-b" if variant % 2 else "tw-a"}})
                if variant % 2:
                    changes.append({"upsert_steering": {"id": 2, "exact": EXACT_RULE,
                                                        "policy": "tw-a"}})
                elif variant > 1:
                    changes.append({"delete_steering": 2})
                # Recorded before the Apply: frames may carry it as soon as it is published.
                for p, pids in POLICIES.items():
                    for pid in pids:
                        self.published.add(published_key(sids_of(p, variant, pid), pid))
                r = self.ctl("apply", "-f", "-", stdin=json.dumps({"changes": changes}))
                if r.returncode != 0:
                    self.error = f"apply {variant}: exit {r.returncode}: {r.stderr.strip()}"
                    return
                self.applies += 1
        except (OSError, subprocess.SubprocessError) as e:
            self.error = f"srv6gw-ctl: {e}"


def check_frames(frames, traffic, published):
    """Problems with the frames received at the far end (a list of strings), and how many
    distinct published lists they carried."""
    problems, seen, lists = [], set(), set()
    for fr in frames:
        if len(fr) < 62 or fr[12:14] != b"\x86\xdd" or fr[20] != 43 or fr[56] != 4:
            problems.append(f"not an IPv6 + SRH frame: {fr[:64].hex()}")
            continue
        srh_len = 8 + 8 * fr[55]
        n = fr[58] + 1  # last entry + 1 segments
        segments = fr[62:62 + 16 * n]
        key = (fr[38:54], int.from_bytes(fr[60:62], "big"), segments)
        if key not in published:
            problems.append(f"segment list never published: destination {fr[38:54].hex()}, "
                            f"tag {key[1]}, SRH {segments.hex()}")
            continue
        lists.add(key)
        inner = fr[54 + srh_len:]
        if len(inner) < 20 + 8 + 12 or inner[0] != 0x45:
            problems.append(f"inner packet is not the IPv4 sent: {inner[:40].hex()}")
            continue
        bth = inner[28:40]
        ident = (int.from_bytes(bth[5:8], "big"), int.from_bytes(bth[9:12], "big"))
        if ident in seen:
            problems.append(f"QP {ident[0]:#x} PSN {ident[1]} arrived twice")
        seen.add(ident)
        if traffic.sent.get(ident) != inner[20:]:
            problems.append(f"QP {ident[0]:#x} PSN {ident[1]}: inner UDP/BTH/payload differs "
                            "from what was sent")
        if len(problems) > 10:
            break
    return problems, len(lists)


def main():
    gwlib.need_tools("ip")
    if not os.access(gwlib.CTL, os.X_OK):
        gwlib.fail(f"srv6gw-ctl {gwlib.CTL} missing (SRV6GW_CTL)")
    nl.require_root_and_netns()
    started = time.monotonic()
    work = gwlib.workdir("two-workers")
    ns = f"tw{os.getpid()}"
    nl.sh(["ip", "netns", "add", ns])
    import atexit
    atexit.register(lambda: subprocess.run(["ip", "netns", "del", ns], capture_output=True))
    # No IPv6 of the kernel's own on these links: its ND and MLD frames would be RX too.
    for key in ("all", "default"):
        nl.sh(["ip", "netns", "exec", ns, "sysctl", "-qw", f"net.ipv6.conf.{key}.disable_ipv6=1"])
    for a, b in (("hst", "hstp"), ("fab", "fabp")):
        nl.sh(["ip", "-n", ns, "link", "add", a, "type", "veth", "peer", "name", b])
        for d in (a, b):
            nl.sh(["ip", "-n", ns, "link", "set", d, "up"])

    def mac_of(dev):
        return json.loads(nl.sh(["ip", "-n", ns, "-j", "link", "show", "dev", dev]).stdout)[0][
            "address"]
    cfg = os.path.join(work, "two-workers.json")
    with open(cfg, "w") as f:
        json.dump(config(mac_of("fabp"), mac_of("hstp")), f)
    stats_json = os.path.join(work, "stats.json")
    sock = os.path.join(work, "agent.sock")
    prefix = gwlib.unique_prefix("two_workers")
    # Main lcore + two workers floating on the two CPUs. 2048 frames per RX ring: a quarter of
    # a second of this traffic while a worker waits for a CPU.
    eal = ["--lcores", "(0-2)@(0-1)", "--no-pci", "--no-huge", "-m", "512", "--file-prefix",
           prefix, "--log-level", "lib.eal:warning",
           "--vdev", "net_af_packet0,iface=hst,qpairs=2,framecnt=2048",
           "--vdev", "net_af_packet1,iface=fab,qpairs=2,framecnt=2048"]
    sink = FabricSink(ns)
    sink.start()
    g = gwlib.start_logged("two-workers", work, eal,
                           ["--config", cfg, "--stats-json", stats_json,
                            "--agent-listen", "unix:" + sock, "--agent-state", "none"],
                           enter=nl.open_in_netns(ns), timeout=60)
    with open(g["err"]) as f:
        lines = [ln.strip() for ln in f if " on lcore " in ln]
    log("\n".join(lines))
    if not any("worker 1 on lcore" in ln for ln in lines):
        gwlib.fail("the daemon did not launch a second worker")
    deadline = time.monotonic() + 30
    while not os.path.exists(sock) and time.monotonic() < deadline:
        time.sleep(0.1)
    log(f"gateway up after {time.monotonic() - started:.1f} s")

    traffic = Traffic(ns)
    churn = Churn(sock)
    churn.start()
    t0 = time.monotonic()
    rounds = 0
    while time.monotonic() - t0 < MAX_SECONDS and churn.error is None and churn.is_alive() and (
            time.monotonic() - t0 < TRAFFIC_SECONDS or churn.applies < MIN_APPLIES):
        traffic.send_round()
        rounds += 1
    churn.stop.set()
    churn.join(120)
    traffic.tx.close()
    sent = len(traffic.sent)
    log(f"sent {sent} frames ({rounds} rounds of {QPS} QPs x {MESSAGE_PACKETS}-packet messages) "
        f"in {time.monotonic() - t0:.1f} s while {churn.applies} Applies went in")
    if churn.error:
        gwlib.fail(churn.error)
    # Bounded wait until the far end has every frame (or 20 s).
    deadline = time.monotonic() + 20
    while len(sink.frames) < sent and time.monotonic() < deadline:
        time.sleep(0.1)
    time.sleep(0.3)  # anything extra (duplicates) must be seen too
    r = churn.ctl("--json", "stats")
    api = json.loads(r.stdout) if r.returncode == 0 else None
    doc, out, _err = gwlib.stop_checked(g, stats_json, timeout=60)
    sink.stop.set()
    sink.join(5)
    received = list(sink.frames)

    problems = []
    workers = doc["workers"]
    total = doc["total"]
    per_worker = [(int(w["rx_host"]), int(w["encap"])) for w in workers]
    log(f"workers (rx_host, encap): {per_worker}; total rx_host {total['rx_host']} encap "
        f"{total['encap']} tx_fabric {total['tx_fabric']}; host port ipackets "
        f"{doc['ports']['host']['ipackets']} imissed {doc['ports']['host']['imissed']}; "
        f"received at the far end {len(received)}")
    if len(workers) != 2:
        problems.append(f"{len(workers)} workers in the statistics, expected 2")
    for i, (rx, encap) in enumerate(per_worker):
        if rx == 0 or encap == 0:
            problems.append(f"worker {i} forwarded nothing (rx_host {rx}, encap {encap}): the "
                            "traffic did not spread over both queues")
        if rx != encap:
            problems.append(f"worker {i}: rx_host {rx} != encap {encap}")
    for name in ("rx_host", "encap", "tx_fabric"):
        summed = sum(int(w[name]) for w in workers)
        if summed != total[name]:
            problems.append(f"{name}: total {total[name]} != sum over workers {summed}")
    if not (total["rx_host"] == total["encap"] == total["tx_fabric"] == sent == len(received)
            == doc["ports"]["host"]["ipackets"] == doc["ports"]["fabric"]["opackets"]):
        problems.append(f"sent {sent}, host port ipackets {doc['ports']['host']['ipackets']} "
                        f"(imissed {doc['ports']['host']['imissed']}), rx_host "
                        f"{total['rx_host']}, encap {total['encap']}, tx_fabric "
                        f"{total['tx_fabric']}, fabric port opackets "
                        f"{doc['ports']['fabric']['opackets']}, far end {len(received)}: "
                        "should all be equal")
    if total["drops_total"] != 0:
        problems.append(f"drops {total['drops_total']}: "
                        f"{ {k: v for k, v in total['drops'].items() if v} }")
    on_paths = sum(p["packets"] for p in doc["paths"])
    if on_paths != total["encap"]:
        problems.append(f"path counters sum to {on_paths}, encap {total['encap']}")
    for p in doc["mempools"]:
        if p["in_use"] != p["in_use_at_start"]:
            problems.append(f"mempool {p['name']}: {p['in_use']} mbufs in use at exit, "
                            f"{p['in_use_at_start']} when the workers started")
    # GetStats over the agent, after the traffic: one entry per worker, each counted.
    if api is None:
        problems.append(f"GetStats failed: {r.stderr.strip()}")
    else:
        api_workers = api.get("workers", [])
        api_encap = [int(w.get("encap", 0)) for w in api_workers]
        log(f"GetStats workers' encap: {api_encap}")
        if len(api_workers) != 2 or 0 in api_encap or sum(api_encap) != total["encap"]:
            problems.append(f"GetStats workers' encap {api_encap}, stats at exit "
                            f"{total['encap']}")
    frame_problems, versions = check_frames(received, traffic, churn.published)
    problems += frame_problems
    log(f"frames carried {versions} distinct published segment lists "
        f"({len(churn.published)} published)")
    if versions < 2:
        problems.append(f"the frames carried {versions} published list(s): the churn did not "
                        "reach the traffic")
    log(f"elapsed {time.monotonic() - started:.1f} s")
    if problems:
        log(out[-3000:])
        gwlib.fail("; ".join(problems[:12]))
    log(f"PASS: two workers forwarded {per_worker[0][1]} + {per_worker[1][1]} = {sent} frames "
        f"under {churn.applies} Applies, every frame with a published segment list")


if __name__ == "__main__":
    main()
