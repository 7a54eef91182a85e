#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
# The gRPC agent inside the real daemon (issue 4, acceptance 2): srv6gw on net_pcap vdevs, its
# agent on a unix socket, driven by srv6gw-ctl while RoCEv2 traffic flows.
#
# Traffic: the host port reads a named pipe (rx_pcap=FIFO) that this script feeds at a steady
# rate, one RoCEv2 packet per PSN 0, 1, 2, ...: traffic flows for as long as the test wants,
# at a rate whose output tshark reads in a second, and every packet is identifiable, so that
# "no loss, no mix" is checked packet by packet (an infinite_rx replay would write millions of
# identical packets per second to the output pcap). The fabric port writes a pcap (tx_pcap).
#
#   run 1: demo.json (no rule for 10.0.9.0/24: the traffic passes unchanged); push a policy and
#          a steering rule (SIDs A, path 901), then change the policy (SIDs B, path 902) while
#          packets flow; SIGTERM. Output: pass* A* B* in PSN order, each packet exactly one
#          of them, no PSN missing or repeated, byte-exact inner packets; final stats rx = tx,
#          no drop.
#   run 2: same state file, fresh output: every packet, the first one included, carries B;
#          the generation is the same; a stale --expected-generation, an invalid change and a
#          dry run change nothing (the traffic never shows their SIDs).
#   both:  the agent socket is a socket of mode 0660 or stricter.
import json
import os
import signal
import stat
import struct
import subprocess
import sys
import threading
import time
import zlib

import gwlib

CTL = os.environ.get("SRV6GW_CTL") or os.path.join(os.path.dirname(gwlib.BIN), "..", "srv6gw-ctl",
                                                   "srv6gw-ctl")
gwlib.need_tools("tshark")
if not os.access(CTL, os.X_OK):
    gwlib.fail(f"srv6gw-ctl {CTL} missing (SRV6GW_CTL)")
try:
    from scapy.all import IP, UDP, Ether, Raw  # noqa: E402
except ImportError:
    gwlib.skip("python3-scapy is not installed")

work = gwlib.workdir("agentd")
sock = os.path.join(work, "agent.sock")
state = os.path.join(work, "state.json")
CONN = ["--socket", sock, "--timeout", "10"]

with open(gwlib.DEMO_JSON) as f:
    DEMO = json.load(f)["srv6gw:gateway"]
GW_SOURCE = DEMO["source-address"]
NEXTHOP_MAC = DEMO["ports"]["fabric-nexthop-mac"]

# ---- the pushed objects --------------------------------------------------------------------
POLICY = "it-agent"
SIDS_A = ["fc00:0:91::e", "fc00:0:92::e", "fc00:0:9::d4"]
SIDS_B = ["fc00:0:93::e", "fc00:0:9::d4"]
SIDS_C = ["fc00:0:94::e", "fc00:0:95::e", "fc00:0:9::d4"]  # never allowed to take effect
PATH = {"A": 901, "B": 902, "C": 903}
SIDS = {"A": SIDS_A, "B": SIDS_B, "C": SIDS_C}


def policy_change(which):
    return {"upsert_policy": {
        "name": POLICY, "color": 90, "endpoint": "10.0.9.7",
        "segment_lists": [{"name": f"via-{which}", "path_id": PATH[which], "sids": SIDS[which]}]}}


STEERING = {"upsert_steering": {"id": 900, "prefix": "10.0.9.0/24", "policy": POLICY}}


def changes_file(name, changes):
    path = os.path.join(work, name)
    with open(path, "w") as f:
        json.dump({"changes": changes}, f)
    return path


def ctl(*args, expect=0):
    r = subprocess.run([CTL] + CONN + list(args), capture_output=True, text=True, timeout=60)
    if r.returncode != expect:
        gwlib.fail(f"srv6gw-ctl {' '.join(args)}: exit {r.returncode} (expected {expect})\n"
                   f"stdout: {r.stdout}\nstderr: {r.stderr}")
    return r


def ctl_json(*args):
    return json.loads(ctl("--json", *args).stdout)


# ---- traffic: RoCEv2 RC SEND packets, PSN = sequence number -------------------------------
PAYLOAD = bytes(range(64))
DQPN = 0x4D2


def icrc(ip_packet: bytes) -> bytes:
    """RoCEv2 ICRC (IBTA Annex A17) of an IPv4 packet whose last 4 bytes are the ICRC."""
    b = bytearray(ip_packet[:-4])
    b[1] = 0xFF  # TOS
    b[8] = 0xFF  # TTL
    b[10:12] = b"\xff\xff"  # header checksum
    udp = (b[0] & 0xF) * 4
    b[udp + 6:udp + 8] = b"\xff\xff"  # UDP checksum
    b[udp + 12] = 0xFF  # BTH reserved byte after the P_Key
    return zlib.crc32(b"\xff" * 8 + bytes(b)).to_bytes(4, "little")


def bth(psn):
    # opcode 4 (RC SEND only), M=1, P_Key 0xffff, reserved, dest QP, AckReq, PSN
    return struct.pack("!BBHB", 0x04, 0x40, 0xFFFF, 0) + DQPN.to_bytes(3, "big") + \
        bytes([0x80]) + psn.to_bytes(3, "big")


TEMPLATE = bytes(Ether(src="02:00:00:00:00:01", dst="02:00:00:00:01:01") /
                 IP(src="10.0.0.1", dst="10.0.9.7", ttl=64, flags="DF") /
                 UDP(sport=49153, dport=4791, chksum=0) /
                 Raw(bth(0) + PAYLOAD + b"\0\0\0\0"))
BTH_AT = 14 + 20 + 8


def frame(psn):
    f = bytearray(TEMPLATE)
    f[BTH_AT + 9:BTH_AT + 12] = psn.to_bytes(3, "big")
    f[-4:] = icrc(bytes(f[14:]))
    return bytes(f)


class PipeTraffic:
    """Writes a pcap stream into a FIFO the gateway's rx_pcap reads: 16 packets every 4 ms
    until stop(). `written` counts the packets whose write() returned (in the pipe), `begun`
    those whose write() may have started: a packet at or after not_yet_begun() read at time T is
    written to the pipe after T."""

    def __init__(self, path):
        self.path = path
        os.mkfifo(path)
        self.written = 0
        self.begun = 0
        self.frames = []
        self.error = None
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def count(self):
        with self._lock:
            return self.written

    def not_yet_begun(self):
        with self._lock:
            return self.begun

    def _run(self):
        try:
            # Blocks until the gateway opens the pipe (net_pcap probe, during EAL init).
            with open(self.path, "wb", buffering=0) as out:
                out.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1))
                psn = 0
                while not self._stop.is_set():
                    chunk = b""
                    for _ in range(16):
                        f = frame(psn)
                        self.frames.append(f)
                        now = time.time()
                        chunk += struct.pack("<IIII", int(now), int(now % 1 * 1e6), len(f),
                                             len(f)) + f
                        psn += 1
                    with self._lock:
                        self.begun = psn
                    out.write(chunk)
                    with self._lock:
                        self.written = psn
                    time.sleep(0.004)
        except OSError as e:  # the gateway died: reported by the main thread
            self.error = e

    def stop(self):
        self._stop.set()
        self._thread.join(10)
        gwlib.check(not self._thread.is_alive(), "traffic writer did not stop")
        gwlib.check(self.error is None, f"writing traffic to the gateway failed: {self.error}")


def read_pcap(path):
    with open(path, "rb") as f:
        data = f.read()
    magic = struct.unpack("<I", data[:4])[0]
    gwlib.check(magic in (0xA1B2C3D4, 0xA1B23C4D), f"{path}: not a little-endian pcap")
    frames, off = [], 24
    while off + 16 <= len(data):
        _, _, caplen, length = struct.unpack("<IIII", data[off:off + 16])
        gwlib.check(caplen == length, f"{path}: frame {len(frames)} truncated")
        frames.append(data[off + 16:off + 16 + caplen])
        off += 16 + caplen
    gwlib.check(off == len(data), f"{path}: trailing bytes")
    return frames


# ---- one gateway run ------------------------------------------------------------------------
class Gateway:
    def __init__(self, name):
        self.name = name
        self.prefix = gwlib.unique_prefix(name)
        self.out = os.path.join(work, f"{name}-fabric-out.pcap")
        self.stats_json = os.path.join(work, f"{name}-stats.json")
        self.traffic = PipeTraffic(os.path.join(work, f"{name}-host-in.pipe"))
        eal = gwlib.eal_args(self.prefix, [
            f"net_pcap0,rx_pcap={self.traffic.path}",
            f"net_pcap1,tx_pcap={self.out}",
        ])
        self.proc = gwlib.start(eal, [
            "--config", gwlib.DEMO_JSON, "--host-port", "net_pcap0", "--fabric-port", "net_pcap1",
            "--stats-interval", "0", "--stats-json", self.stats_json,
            "--agent-listen", "unix:" + sock, "--agent-state", state], stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT)
        self.log = []
        self._reader = threading.Thread(target=self._read_log, daemon=True)
        self._reader.start()
        self.wait_serving()

    def _read_log(self):
        for line in self.proc.stdout:
            self.log.append(line)

    def dump_log(self):
        print("".join(self.log[-60:]), flush=True)

    def wait_serving(self):
        deadline = time.time() + 30
        while time.time() < deadline:
            if self.proc.poll() is not None:
                self._reader.join(5)
                self.dump_log()
                gwlib.fail(f"{self.name}: gateway exited with {self.proc.returncode} at start")
            if os.path.exists(sock):
                r = subprocess.run([CTL, "--socket", sock, "--timeout", "2", "health"],
                                   capture_output=True, text=True, timeout=30)
                if r.returncode == 0 and r.stdout.strip() == "SERVING":
                    return
            time.sleep(0.05)
        self.dump_log()
        gwlib.fail(f"{self.name}: agent not SERVING on {sock} within 30 s")

    def rx_host(self):
        """Packets the workers received (DPDK telemetry); None when the gateway does not
        answer this time."""
        s = gwlib.telemetry_query(self.prefix, "/srv6gw/stats")
        return s["rx_host"] if isinstance(s, dict) else None

    def wait_rx(self, n, timeout=20):
        deadline = time.time() + timeout
        while time.time() < deadline:
            got = self.rx_host()
            if got is not None and got >= n:
                return got
            time.sleep(0.02)
        self.dump_log()
        gwlib.fail(f"{self.name}: the gateway received {self.rx_host()} of {n} packets in time")

    def stop(self):
        """Ends the traffic, lets the gateway take every packet, SIGTERM; returns its stats."""
        self.traffic.stop()
        sent = self.traffic.written
        self.wait_rx(sent)
        self.proc.send_signal(signal.SIGTERM)
        try:
            rc = self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            gwlib.fail(f"{self.name}: gateway did not exit within 20 s of SIGTERM")
        self._reader.join(5)
        log = "".join(self.log)
        if rc != 0:
            self.dump_log()
        gwlib.check(rc == 0, f"{self.name}: exit code {rc} after SIGTERM")
        gwlib.check("stop requested by signal" in log, f"{self.name}: stop not logged")
        with open(self.stats_json) as f:
            stats = json.load(f)
        tot = stats["total"]
        drops = {k: v for k, v in tot["drops"].items() if v}
        print(f"{self.name}: {sent} packets sent; rx_host {tot['rx_host']} tx_fabric "
              f"{tot['tx_fabric']} encap {tot['encap']} passed {tot['passed_host_to_fabric']} "
              f"drops {drops}", flush=True)
        # No loss: everything the pipe carried was received, sent to the fabric, nothing dropped.
        gwlib.check(tot["rx_host"] == sent and tot["rx_fabric"] == 0,
                    f"{self.name}: received {tot['rx_host']} of {sent}")
        gwlib.check(tot["drops_total"] == 0 and not drops, f"{self.name}: drops {drops}")
        gwlib.check(tot["tx_fabric"] == sent and tot["tx_host"] == 0,
                    f"{self.name}: {tot['tx_fabric']} sent to the fabric of {sent}")
        gwlib.check(tot["encap"] + tot["passed_host_to_fabric"] == sent,
                    f"{self.name}: encap {tot['encap']} + pass {tot['passed_host_to_fabric']}")
        port = stats["ports"]["fabric"]
        gwlib.check(port["opackets"] == sent and port["oerrors"] == 0,
                    f"{self.name}: fabric port {port}")
        gwlib.check(stats["ports"]["host"]["ipackets"] == sent, f"{self.name}: host port")
        return stats, log

    def check_socket(self):
        st = os.stat(sock)
        gwlib.check(stat.S_ISSOCK(st.st_mode), f"{sock} is not a socket")
        mode = stat.S_IMODE(st.st_mode)
        gwlib.check(mode & ~0o660 == 0, f"agent socket mode {oct(mode)}: wider than 0660")
        print(f"{self.name}: agent socket mode {oct(mode)}", flush=True)


# ---- output oracle: tshark dissects, raw bytes compared -------------------------------------
def classify(name, out, traffic, stats):
    """Per output frame: 'pass', 'A', 'B' or 'C' (which SIDs it carries), in PSN order."""
    frames = traffic.frames[:traffic.written]
    rows = gwlib.tshark_fields(out, ["infiniband.bth.psn", "infiniband.bth.destqp", "ipv6.src",
                                     "ipv6.dst", "ipv6.routing.srh.tag",
                                     "ipv6.routing.segleft", "ipv6.routing.srh.addr", "ip.dst"])
    gwlib.check(len(rows) == len(frames) == gwlib.pcap_count(out),
                f"{name}: {len(rows)} frames in {out}, {len(frames)} sent")
    raw = read_pcap(out)
    gwlib.check(len(raw) == len(frames), f"{name}: pcap reader sees {len(raw)} frames")
    fabric_mac = bytes.fromhex(stats["ports"]["fabric"]["mac"].replace(":", ""))
    nexthop = bytes.fromhex(NEXTHOP_MAC.replace(":", ""))
    phases = []
    for i, (row, got) in enumerate(zip(rows, raw)):
        psn, qp, src6, dst6, tag, segleft, addrs, dst4 = row
        gwlib.check(psn == str(i), f"{name}: frame {i} has PSN {psn}: lost, repeated or reordered")
        gwlib.check(int(qp, 0) == DQPN and dst4 == "10.0.9.7", f"{name}: frame {i}: {row}")
        if not src6:
            gwlib.check(got == frames[i], f"{name}: frame {i} passed but not byte for byte")
            phases.append("pass")
            continue
        seg_list = addrs.split(",")  # SRH order: Segment List[0] (the last SID) first
        which = [k for k, v in SIDS.items() if seg_list == list(reversed(v))]
        gwlib.check(len(which) == 1, f"{name}: frame {i} carries segment list {seg_list}")
        k = which[0]
        gwlib.check(int(tag, 16) == PATH[k] and int(segleft) == len(SIDS[k]) - 1 and
                    dst6 == SIDS[k][0] and src6 == GW_SOURCE,
                    f"{name}: frame {i} SRH of {k} inconsistent: {row}")
        srh = 8 + 16 * len(SIDS[k])
        gwlib.check(got[:6] == nexthop and got[6:12] == fabric_mac and got[12:14] == b"\x86\xdd",
                    f"{name}: frame {i} Ethernet header {got[:14].hex()}")
        gwlib.check(got[14 + 40 + srh:] == frames[i][14:],
                    f"{name}: frame {i}: the inner packet is not the host's packet byte for byte")
        phases.append(k)
    return phases


def runs(phases):
    out = []
    for p in phases:
        if not out or out[-1][0] != p:
            out.append([p, 0])
        out[-1][1] += 1
    return out


# =============================================================================================
t_start = time.time()

# ---- run 1 ------------------------------------------------------------------------------------
gw = Gateway("run1")
gw.check_socket()
st = ctl_json("state")
gwlib.check(st["generation"] == "0" and st["policies"] == 3, f"fresh state: {st}")

# Traffic passes unchanged until the push.
rx_before_a = gw.wait_rx(400)
t0 = gw.traffic.count()
r = ctl_json("apply", "-f", changes_file("a.json", [policy_change("A"), STEERING]),
             "--expected-generation", "0")
after_a = gw.traffic.not_yet_begun()
gwlib.check(r["generation"] == "1" and r["counts"]["policies_upserted"] == 1 and
            r["counts"]["steering_upserted"] == 1, f"apply A: {r}")
print(f"run1: push A at packets {t0}..{after_a} (gateway had received {rx_before_a})", flush=True)

pols = ctl_json("list", "policies")
gwlib.check(pols["generation"] == "1", f"list policies generation: {pols['generation']}")
mine = [p for p in pols["policies"] if p["name"] == POLICY]
gwlib.check(len(mine) == 1 and mine[0]["segment_lists"][0]["sids"] == SIDS_A and
            mine[0]["segment_lists"][0]["path_id"] == PATH["A"], f"listed policy: {mine}")
gwlib.check(sorted(p["name"] for p in pols["policies"]) ==
            sorted([POLICY] + [p["name"] for p in DEMO["policies"]["policy"]]), "policy names")
rules = ctl_json("list", "steering", "--policy", POLICY)["rules"]
gwlib.check([x["id"] for x in rules] == [900] and rules[0]["prefix"] == "10.0.9.0/24",
            f"listed steering: {rules}")
table = ctl("list", "policies").stdout
gwlib.check(POLICY in table and "4 policies at generation 1" in table, table)

# Policy change mid-traffic.
rx_before_b = gw.wait_rx(after_a + 400)
t1 = gw.traffic.count()
r = ctl_json("apply", "-f", changes_file("b.json", [policy_change("B")]),
             "--expected-generation", "1")
after_b = gw.traffic.not_yet_begun()
gwlib.check(r["generation"] == "2", f"apply B: {r}")
print(f"run1: push B at packets {t1}..{after_b} (gateway had received {rx_before_b})", flush=True)
shown = ctl("show", "policy", POLICY).stdout
gwlib.check(" ".join(SIDS_B) in shown, f"show policy after B:\n{shown}")
gw.wait_rx(after_b + 400)

stats1, _ = gw.stop()
phases = classify("run1", gw.out, gw.traffic, stats1)
seq = runs(phases)
print(f"run1: output runs {seq}", flush=True)
gwlib.check([k for k, _ in seq] == ["pass", "A", "B"],
            f"run1: expected pass, then A, then B, each once; got {seq}")
# Bursts already received before a push was asked for (less one burst in flight) kept the old
# treatment; every packet written after a push was acknowledged got the new one.
slack = 64
first_a = phases.index("A")
first_b = phases.index("B")
gwlib.check(first_a >= rx_before_a - slack, f"run1: A from packet {first_a}, but the gateway "
            f"had received {rx_before_a} before the push")
gwlib.check(first_a <= after_a, f"run1: A only from packet {first_a}, acknowledged at {after_a}")
gwlib.check(first_b >= rx_before_b - slack, f"run1: B from packet {first_b}, received "
            f"{rx_before_b} before the change")
gwlib.check(first_b <= after_b, f"run1: B only from packet {first_b}, acknowledged at {after_b}")
# The change replaced segment list via-A (path 901) by via-B (path 902): the final per-path
# counters are those of via-B since it exists, and match the output.
paths = {p["path_id"]: p["packets"] for p in stats1["paths"]}
gwlib.check(paths.get(PATH["B"]) == phases.count("B") and PATH["A"] not in paths,
            f"run1: final path counters {paths}")
gwlib.check(stats1["total"]["encap"] == phases.count("A") + phases.count("B"),
            "run1: encap counter vs output")
with open(state) as f:
    saved = json.load(f)
gwlib.check(saved["generation"] == 2, f"state file generation {saved['generation']}")
saved_pol = [p for p in saved["config"]["srv6gw:gateway"]["policies"]["policy"]
             if p["name"] == POLICY]
gwlib.check(saved_pol and saved_pol[0]["segment-list"][0]["sid"] == SIDS_B,
            f"state file policy {saved_pol}")

# ---- run 2: restart restores, refusals change nothing -------------------------------------
gw = Gateway("run2")
gw.check_socket()
log = "".join(gw.log)
gwlib.check("restored generation 2" in log, "run2: restore not logged")
pols = ctl_json("list", "policies")
mine = [p for p in pols["policies"] if p["name"] == POLICY]
gwlib.check(pols["generation"] == "2" and len(mine) == 1 and
            mine[0]["segment_lists"][0]["sids"] == SIDS_B, f"run2: restored policies {pols}")
rules = ctl_json("list", "steering", "--policy", POLICY)["rules"]
gwlib.check([x["id"] for x in rules] == [900], f"run2: restored steering {rules}")
gw.wait_rx(200)

c_file = changes_file("c.json", [policy_change("C")])
r = ctl("apply", "-f", c_file, "--expected-generation", "1", expect=1)
gwlib.check("FAILED_PRECONDITION" in r.stderr and "running generation is 2" in r.stderr,
            f"stale generation: {r.stderr}")
r = ctl("apply", "-f", c_file, "--dry-run")
gwlib.check("dry run" in r.stdout and "at generation 2" in r.stdout, f"dry run: {r.stdout}")
bad = policy_change("C")
bad["upsert_policy"]["segment_lists"][0]["sids"] = ["fc00:0:94::e", "fc00::zz"]
r = ctl("apply", "-f", changes_file("bad.json", [bad]), expect=1)
gwlib.check("INVALID_ARGUMENT: changes[0].upsert_policy.segment_lists[0].sids[1]" in r.stderr,
            f"invalid change: {r.stderr}")
st = ctl_json("state")
gwlib.check(st["generation"] == "2" and st["policies"] == 4, f"run2: state after refusals {st}")
shown = ctl("show", "policy", POLICY).stdout
gwlib.check(" ".join(SIDS_B) in shown and SIDS_C[0] not in shown, shown)
gw.wait_rx(gw.traffic.count() + 200)

stats2, _ = gw.stop()
phases = classify("run2", gw.out, gw.traffic, stats2)
seq = runs(phases)
print(f"run2: output runs {seq}", flush=True)
gwlib.check([k for k, _ in seq] == ["B"], f"run2: every packet must carry B; got {seq}")
with open(state) as f:
    gwlib.check(json.load(f)["generation"] == 2, "run2: the refusals rewrote the state file")

took = time.time() - t_start
print(f"agent-daemon: push, change mid-traffic, restart restore: ok in {took:.1f} s", flush=True)
sys.exit(0)
