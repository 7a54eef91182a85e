#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""srv6gw under Pktgen-DPDK: RFC 2544 throughput (no-drop and partial-drop rate) of the gateway
and of dpdk-testpmd io as the device under test (DUT), in the same run, on the same rig.

Rig (one network namespace, two veth pairs, every port net_af_packet):

    pktgen port 0 (pg0) --veth-- gwh: DUT host port   | DUT fabric port: gwf --veth-- pg1 (pktgen port 1)

On real hardware the same: pktgen's two NIC ports cabled to the gateway's host and fabric ports
(see docs/design/pktgen.md).

Encap direction: pktgen replays a RoCEv2 pcap from roce-gen (`-s 0:FILE`) on port 0; the DUT
encapsulates (srv6gw) or forwards (testpmd io) toward port 1. Decap direction: pktgen replays on
port 1 (`-s 1:FILE`) the same traffic as it reaches this gateway from the fabric (srv6gw-pcap
encap toward the gateway's End.DX4/DX6 SID, segments left 0 as the last transit node leaves it);
the DUT decapsulates (srv6gw) or forwards (testpmd io) toward port 0. One pktgen and one DUT
serve both directions, one after the other. Pktgen runs tools/bench/pktgen/trials.lua, a
trial server: this script sends one trial (rate, length) at a time through a FIFO and reads
pktgen's port counters back; between trials it reads the DUT's counters over DPDK telemetry
(/ethdev/stats for both DUTs, /srv6gw/stats for the gateway), so every lost frame is placed:
dropped by the DUT, missed at its RX ring, or lost between the DUT and pktgen.

RFC 2544 throughput: a binary search on pktgen's rate (percent of the port's link speed) for the
highest rate with 0 frames lost (sent at port 0 minus received at port 1), each trial of fixed
length; then a second search for the highest rate with at most --partial-loss lost (0.5 %),
starting from what the first one learned. Frames sent per second of trial is the rate reported
(pktgen's own ceiling on this rig can be below the rate asked: the JSON keeps both).

After each srv6gw search, a sample of what arrives at pktgen's receiving port is captured
(dumpcap at a low rate) and checked with tshark. Encap: SRv6 encapsulation, the expected SID list
for each (destination, QP), the inner RoCEv2 packet byte-identical to the one sent and its ICRC
valid. Decap: plain RoCEv2 toward the host's MAC, the IP packet byte-identical to the one inside
the SRv6 frame sent, ICRC valid.

Pktgen is built from ../shared/tools/pktgen-dpdk-23.03.0.tar.gz (or --pktgen-tarball) into
--pktgen-build when PKTGEN (or --pktgen) does not name a pktgen binary. Root is needed (network
namespace, hugepages: pktgen's pools take about 1400 x 2 MB). The script raises
vm.nr_hugepages by what is missing and restores the previous value at exit (--keep-hugepages
leaves it). Exits 77 (skip) with the reason when root, namespaces, the pktgen build or the
hugepages cannot be had.
"""

import argparse
import atexit
import datetime
import fcntl
import glob
import json
import os
import platform
import re
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time
import zlib

SKIP = 77
HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.abspath(os.path.join(HERE, "..", "..", ".."))
DEFAULT_TARBALL = os.path.abspath(os.path.join(SRC, "..", "shared", "tools",
                                               "pktgen-dpdk-23.03.0.tar.gz"))
LUA = os.path.join(HERE, "trials.lua")

# Pktgen 23.03 creates five pools of 24,576 10 KB mbufs per port plus one for the replayed
# pcap: about 1,300 pages of 2 MB for two ports (measured), kept with a margin.
PKTGEN_PAGES = 1450
DUT_MEM_MB = 1024
MBUF_SIZE = 4864  # srv6gw's packet data room (4 KB frames in one segment), testpmd the same
GW_SOURCE = "fc00:0:1::1"
FAR_GW_SOURCE = "fc00:0:2::1"  # the far gateway that encapsulated the decap direction's frames
GW_DX_SID = {"ipv4": "fc00:0:1::d4", "ipv6": "fc00:0:1::d6"}  # this gateway's End.DX4 / DX6
GW_FABRIC_MAC = "02:00:00:00:0f:02"
NEXTHOP_MAC = "02:00:00:00:0f:01"
HOST_MAC = "02:00:00:00:00:01"

_children = []
_cleanups = []

# What each direction sends where: pktgen's sending and receiving ports, the DUT's ingress and
# egress ports (their names in dut_counters), the gateway counter of the frames it transformed,
# the veth tapped on the DUT's ingress and the one at pktgen's receiving port.
DIRECTIONS = {
    "encap": {"tx": 0, "rx": 1, "dut_in": "host", "dut_out": "fabric", "gw_counter": "encap",
              "tap_in": "gwh", "tap_out": "pg1"},
    "decap": {"tx": 1, "rx": 0, "dut_in": "fabric", "dut_out": "host", "gw_counter": "decap",
              "tap_in": "gwf", "tap_out": "pg0"},
}

def log(msg):
    print(f"[pktgen-bench {time.strftime('%H:%M:%S')}] {msg}", flush=True)


def die(msg, code=1):
    print(f"pktgen-bench: error: {msg}", file=sys.stderr, flush=True)
    sys.exit(code)


def skip(reason):
    print(f"SKIP: {reason}", flush=True)
    sys.exit(SKIP)


def _cleanup():
    for p in reversed(_children):
        if p.poll() is None:
            try:
                p.kill()
                p.wait(timeout=10)
            except (OSError, subprocess.TimeoutExpired):
                pass
    for fn in reversed(_cleanups):
        try:
            fn()
        except Exception as e:  # cleanup must go on
            print(f"pktgen-bench: cleanup: {e}", file=sys.stderr)


atexit.register(_cleanup)
signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))


def remove_eal_files(prefix):
    """A killed DPDK process leaves its runtime folder and hugepage files (the pages stay
    taken until the files go)."""
    shutil.rmtree(os.path.join("/var/run/dpdk", prefix), ignore_errors=True)
    for f in glob.glob(f"/dev/hugepages/{prefix}map_*"):
        try:
            os.unlink(f)
        except OSError:
            pass


def run(cmd, check=True, **kw):
    res = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if check and res.returncode != 0:
        die(f"{' '.join(cmd)} failed ({res.returncode}): {res.stderr.strip()}")
    return res


# ---------------------------------------------------------------------------------------------
# Pktgen binary


def ensure_pktgen(args):
    """Path of a pktgen binary: PKTGEN/--pktgen, else built from the tarball (cached)."""
    given = args.pktgen or os.environ.get("PKTGEN")
    if given:
        if not os.access(given, os.X_OK):
            die(f"PKTGEN={given} is not an executable")
        return given
    build = os.path.abspath(args.pktgen_build)
    binary = os.path.join(build, "build", "app", "pktgen")
    os.makedirs(build, exist_ok=True)
    with open(os.path.join(build, ".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # two runs sharing a build folder build it once
        if os.access(binary, os.X_OK):
            return binary
        if not os.path.exists(args.pktgen_tarball):
            skip(f"no pktgen: {args.pktgen_tarball} is missing (set PKTGEN to a pktgen binary)")
        if run(["pkg-config", "--exists", "lua5.3"], check=False).returncode != 0:
            skip("no pktgen: liblua5.3-dev is not installed (tools/setup.sh installs it)")
        cflags = run(["pkg-config", "--cflags", "libdpdk"], check=False)
        if cflags.returncode != 0:
            skip("no pktgen: libdpdk-dev is not installed")
        src = os.path.join(build, "src")
        shutil.rmtree(src, ignore_errors=True)
        os.makedirs(src)
        run(["tar", "-C", src, "--strip-components=1", "-xzf", args.pktgen_tarball])
        log(f"building pktgen from {args.pktgen_tarball} in {build}")
        t0 = time.monotonic()
        env = dict(os.environ, CFLAGS=cflags.stdout.strip())  # Lua lib needs the DPDK headers
        with open(os.path.join(build, "build.log"), "w") as blog:
            for cmd in (["meson", "setup", os.path.join(build, "build"), src,
                         "-Denable_lua=true", "-Dbuildtype=release"],
                        ["ninja", "-C", os.path.join(build, "build"), "app/pktgen"]):
                blog.write("+ " + " ".join(cmd) + "\n")
                blog.flush()
                r = subprocess.run(cmd, stdout=blog, stderr=subprocess.STDOUT, env=env)
                if r.returncode != 0:
                    skip(f"no pktgen: '{' '.join(cmd)}' failed, see {build}/build.log")
        log(f"pktgen built in {time.monotonic() - t0:.0f} s")
        return binary


# ---------------------------------------------------------------------------------------------
# Hugepages


def meminfo():
    with open("/proc/meminfo") as f:
        return {k: v.strip() for k, v in (line.split(":", 1) for line in f)}


def hugetlbfs_mounted():
    with open("/proc/mounts") as f:
        return any(len(line.split()) > 2 and line.split()[2] == "hugetlbfs" for line in f)


def ensure_hugepages(pages, keep):
    """Free 2 MB pages >= pages: raises vm.nr_hugepages by what is missing (restored at exit
    unless keep). Returns a description of what was done."""
    mi = meminfo()
    if mi.get("Hugepagesize") != "2048 kB":
        skip(f"hugepage size is {mi.get('Hugepagesize')}, this script reserves 2 MB pages")
    if not hugetlbfs_mounted():
        os.makedirs("/dev/hugepages", exist_ok=True)
        if run(["mount", "-t", "hugetlbfs", "nodev", "/dev/hugepages"], check=False).returncode:
            skip("hugetlbfs is not mounted and cannot be mounted on /dev/hugepages")
    free = int(mi["HugePages_Free"].split()[0])
    total = int(mi["HugePages_Total"].split()[0])
    if free >= pages:
        return {"raised_from": None, "free_before": free, "total": total}
    want = total + pages - free
    with open("/proc/sys/vm/nr_hugepages", "w") as f:
        f.write(str(want))
    got_free = int(meminfo()["HugePages_Free"].split()[0])
    got_total = int(meminfo()["HugePages_Total"].split()[0])

    added = int(meminfo()["HugePages_Total"].split()[0]) - total

    def restore():
        # Give back only what this run added (another program may have changed it since).
        now = int(meminfo()["HugePages_Total"].split()[0])
        with open("/proc/sys/vm/nr_hugepages", "w") as f:
            f.write(str(max(now - added, 0)))
        log(f"vm.nr_hugepages back to {max(now - added, 0)} (-{added})")

    if not keep:
        _cleanups.append(restore)
    if got_free < pages:
        skip(f"hugepages: {pages} free 2 MB pages needed for pktgen's pools, only {got_free} "
             f"after raising vm.nr_hugepages to {want} (memory too fragmented or too small)")
    log(f"vm.nr_hugepages raised {total} -> {got_total} ({pages} free pages for pktgen)"
        + ("" if keep else "; restored at exit"))
    return {"raised_from": total, "raised_to": got_total, "free_before": free, "total": got_total}


# ---------------------------------------------------------------------------------------------
# Rig: one namespace, two veth pairs


class Rig:
    def __init__(self, name, mtu):
        self.ns = name
        self.ifs = {"tester_tx": "pg0", "dut_host": "gwh", "dut_fabric": "gwf", "tester_rx": "pg1"}
        r = run(["ip", "netns", "add", self.ns], check=False)
        if r.returncode != 0:
            skip(f"cannot create a network namespace: {r.stderr.strip()}")
        _cleanups.append(lambda: run(["ip", "netns", "del", self.ns], check=False))
        for a, b in (("pg0", "gwh"), ("gwf", "pg1")):
            run(["ip", "-n", self.ns, "link", "add", a, "type", "veth", "peer", "name", b])
        for d in ("pg0", "gwh", "gwf", "pg1"):
            # No IPv6 on the veths: no router solicitation, MLD or ND of the kernel's own that
            # the receiving port would count as frames the DUT delivered.
            run(["ip", "netns", "exec", self.ns, "sysctl", "-qw",
                 f"net.ipv6.conf.{d}.disable_ipv6=1"])
            run(["ip", "-n", self.ns, "link", "set", d, "mtu", str(mtu), "up"])

    def cmd(self, argv):
        return ["ip", "netns", "exec", self.ns] + argv


def af_packet(idx, iface, frame_room, frames):
    # framesz must hold the largest frame (af_packet's default 2048 cuts 4 KB frames); the
    # kernel wants blocks of whole pages.
    return (f"net_af_packet{idx},iface={iface},qpairs=1,framesz={frame_room},"
            f"blocksz={-(-frame_room // 4096) * 4096},framecnt={frames}")


# ---------------------------------------------------------------------------------------------
# Telemetry (the DUT's own counters)


def telemetry(prefix, command, timeout=5.0):
    path = os.path.join("/var/run/dpdk", prefix, "dpdk_telemetry.v2")
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET) as s:
            s.settimeout(timeout)
            s.connect(path)
            s.recv(1024)
            s.send(command.encode())
            reply = json.loads(s.recv(1 << 20).decode())
            return reply.get(command.split(",")[0])
    except (OSError, ValueError):
        return None


def dut_counters(dut):
    """Cumulative counters of the DUT: both ports' ethdev stats; for srv6gw its totals."""
    c = {}
    for port, name in ((0, "host"), (1, "fabric")):
        st = telemetry(dut.prefix, f"/ethdev/stats,{port}") or {}
        for k in ("ipackets", "opackets", "imissed", "ierrors", "oerrors", "rx_nombuf"):
            c[f"{name}_{k}"] = int(st.get(k, 0))
    if dut.kind == "srv6gw":
        st = telemetry(dut.prefix, "/srv6gw/stats") or {}
        for k, v in st.items():
            if isinstance(v, int):
                c[f"gw_{k}"] = v
            elif isinstance(v, dict):
                for k2, v2 in v.items():
                    if isinstance(v2, int):
                        c[f"gw_{k}_{k2}"] = v2
    return c


def diff(a, b):
    return {k: b.get(k, 0) - a.get(k, 0) for k in b}


# ---------------------------------------------------------------------------------------------
# DUTs


class Dut:
    def __init__(self, kind, rig, args, work, tag, config=None, frame_room=2048):
        self.kind, self.rig, self.work = kind, rig, work
        self.prefix = f"srv6gw_pgb_{kind}_{tag}_{os.getpid()}"
        self.log = os.path.join(work, f"{kind}-{tag}.log")
        self.stats_json = os.path.join(work, f"{kind}-{tag}-stats.json")
        mem = ["-m", str(DUT_MEM_MB)] if args.dut_hugepages else ["--no-huge", "-m",
                                                                   str(DUT_MEM_MB)]
        # Main lcore on the second CPU, the forwarding/worker lcore on the first: pktgen's
        # port lcore is the second CPU (its main lcore sleeps in the CLI).
        eal = ["-l", args.dut_lcores, "--main-lcore", args.dut_lcores.split(",")[0],
               "--no-pci", "--file-prefix", self.prefix, "--log-level", "lib.eal:warning"] + mem
        # The same rings for both DUTs. Deep by default: on a shared machine the DUT's
        # forwarding lcore is not alone on its CPU (a NIC's DUT has a core to itself), and a
        # ring that outlasts a scheduling gap keeps the search measuring forwarding.
        eal += ["--vdev", af_packet(0, "gwh", frame_room, args.dut_ring_frames),
                "--vdev", af_packet(1, "gwf", frame_room, args.dut_ring_frames)]
        if kind == "srv6gw":
            app = [args.srv6gw] + eal + ["--", "--config", config, "--stats-interval", "0",
                                         "--stats-json", self.stats_json, "--log-level", "warn",
                                         "--no-agent"]
        else:
            stdbuf = shutil.which("stdbuf")
            app = ([stdbuf, "-oL"] if stdbuf else []) + [args.testpmd] + eal + [
                "--", "--forward-mode=io", "--auto-start", "--nb-cores=1", "--rxq=1", "--txq=1",
                f"--total-num-mbufs={args.dut_mbufs}", f"--mbuf-size={MBUF_SIZE}"]
        self.command = rig.cmd(app)
        self.proc = None

    def start(self):
        log(f"  DUT {self.kind}: {' '.join(self.command)}")
        out = open(self.log, "w")
        out.write("+ " + " ".join(self.command) + "\n")
        out.flush()
        self.proc = subprocess.Popen(self.command, stdin=subprocess.PIPE, stdout=out,
                                     stderr=subprocess.STDOUT)
        _children.append(self.proc)
        _cleanups.append(lambda: remove_eal_files(self.prefix))
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                die(f"{self.kind} exited ({self.proc.returncode}) during start, see {self.log}")
            ready = telemetry(self.prefix, "/ethdev/list")
            if ready and (self.kind != "srv6gw" or telemetry(self.prefix, "/srv6gw/stats")):
                if self.kind == "testpmd" or os.path.getsize(self.log) >= 0:
                    time.sleep(1.0)  # workers polling
                    return
            time.sleep(0.2)
        die(f"{self.kind} did not answer telemetry within 120 s, see {self.log}")

    def stop(self):
        if self.proc is None or self.proc.poll() is not None:
            return
        t0 = time.monotonic()
        if self.kind == "testpmd":
            try:
                self.proc.stdin.write(b"\n")
                self.proc.stdin.flush()
            except OSError:
                pass
        else:
            self.proc.send_signal(signal.SIGINT)
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        log(f"  DUT {self.kind} stopped in {time.monotonic() - t0:.1f} s")


# ---------------------------------------------------------------------------------------------
# Pktgen as a trial server


class Pktgen:
    def __init__(self, binary, rig, args, work, pcaps, jumbo, tag):
        self.work = work
        self.prefix = f"srv6gw_pgb_pktgen_{tag}_{os.getpid()}"
        self.cmds = os.path.join(work, f"pktgen-{tag}.cmds")
        self.results = os.path.join(work, f"pktgen-{tag}.results")
        self.log = os.path.join(work, f"pktgen-{tag}.log")
        if os.path.exists(self.cmds):  # a --workdir used before
            os.unlink(self.cmds)
        os.mkfifo(self.cmds)
        open(self.results, "w").close()
        room = 10240 if jumbo else 2048
        eal = ["-l", args.pktgen_lcores, "--no-pci", "--file-prefix", self.prefix,
               "--log-level", "lib.eal:warning",
               # Deeper rings on the tester's side: pktgen serves both ports from one lcore,
               # and frames its RX ring cannot take are the tester's loss, not the DUT's. Both
               # ports receive (port 1 in the encap direction, port 0 in the decap one).
               # (Fewer of the jumbo frames: each takes a 12 KB block of kernel memory.)
               "--vdev", af_packet(0, "pg0", room, 8192 if room <= 2048 else 4096),
               "--vdev", af_packet(1, "pg1", room, 8192 if room <= 2048 else 4096)]
        lcore = args.pktgen_lcores.split(",")[1]
        # -T: text screen, -P: promiscuous (the DUT's frames carry its next-hop MAC), one lcore
        # for both ports; port P replays pcaps[P] (port 0: host traffic, port 1: fabric traffic).
        app = ["-T", "-P", "-m", f"{lcore}.[0-1]"]
        for port, pcap in sorted(pcaps.items()):
            app += ["-s", f"{port}:{pcap}"]
        app += ["-f", LUA]
        if jumbo:
            app.insert(0, "-j")
        self.command = rig.cmd([binary] + eal + ["--"] + app)
        self.offset = 0
        self.proc = None
        self.fifo = None

    def start(self, timeout=180):
        env = dict(os.environ, PKTGEN_BENCH_CMDS=self.cmds, PKTGEN_BENCH_RESULTS=self.results)
        log(f"  pktgen: {' '.join(self.command)}")
        out = open(self.log, "wb")
        t0 = time.monotonic()
        self.proc = subprocess.Popen(self.command, stdin=subprocess.DEVNULL, stdout=out,
                                     stderr=subprocess.STDOUT, env=env)
        _children.append(self.proc)
        _cleanups.append(lambda: remove_eal_files(self.prefix))
        self._wait_line("ready", timeout)
        # Opening for writing blocks until the Lua side opens the FIFO for reading.
        self.fifo = open(self.cmds, "w")
        self.startup_s = time.monotonic() - t0
        log(f"  pktgen ready in {self.startup_s:.1f} s")

    def _wait_line(self, prefix, timeout):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with open(self.results) as f:
                f.seek(self.offset)
                data = f.read()
            if "\n" in data:
                line, _ = data.split("\n", 1)
                self.offset += len(line) + 1
                if line.startswith("error"):
                    die(f"pktgen trial script: {line}")
                if line.startswith(prefix):
                    return line
            if self.proc.poll() is not None:
                die(f"pktgen exited ({self.proc.returncode}), see {self.log}")
            time.sleep(0.05)
        die(f"pktgen gave no '{prefix}' within {timeout} s, see {self.log}")

    def trial(self, rate, ms, tx=0, rx=1):
        self.fifo.write(f"trial {rate:.4f} {ms} {tx} {rx}\n")
        self.fifo.flush()
        line = self._wait_line("result", ms / 1000 + 60)
        return {k: (int(v) if re.fullmatch(r"-?\d+", v) else float(v))
                for k, v in re.findall(r"(\w+)=(\S+)", line)}

    def quit(self):
        if self.fifo:
            try:
                self.fifo.write("quit\n")
                self.fifo.close()
            except OSError:
                pass
            self.fifo = None
        t0 = time.monotonic()
        if self.proc and self.proc.poll() is None:
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        log(f"  pktgen quit in {time.monotonic() - t0:.1f} s")


# ---------------------------------------------------------------------------------------------
# Traffic and the gateway's configuration


def read_pcap(path):
    with open(path, "rb") as f:
        data = f.read()
    magic = data[:4]
    if magic in (b"\xd4\xc3\xb2\xa1", b"\x4d\x3c\xb2\xa1"):
        endian = "<"
    elif magic in (b"\xa1\xb2\xc3\xd4", b"\xa1\xb2\x3c\x4d"):
        endian = ">"
    else:
        die(f"{path}: not a classic pcap file (magic {magic.hex()})")
    frames, off = [], 24
    while off + 16 <= len(data):
        _, _, incl, _ = struct.unpack(endian + "IIII", data[off:off + 16])
        frames.append(data[off + 16:off + 16 + incl])
        off += 16 + incl
    return frames


def roce_of(frame, off=14, etype=None):
    """(family, destination text, DestQP, IP packet bytes) of a RoCEv2 frame at off, or None."""
    if etype is None:
        etype = struct.unpack_from(">H", frame, 12)[0]
    if etype == 0x0800 and len(frame) >= off + 20:
        ihl = (frame[off] & 0x0F) * 4
        tot = struct.unpack_from(">H", frame, off + 2)[0]
        if frame[off + 9] != 17:
            return None
        fam, dst, udp, end = "ipv4", ".".join(str(b) for b in frame[off + 16:off + 20]), off + ihl, off + tot
    elif etype == 0x86DD and len(frame) >= off + 40:
        if frame[off + 6] != 17:
            return None
        words = struct.unpack_from(">8H", frame, off + 24)
        fam, dst = "ipv6", ":".join(f"{w:x}" for w in words)
        udp, end = off + 40, off + 40 + struct.unpack_from(">H", frame, off + 4)[0]
    else:
        return None
    if len(frame) < udp + 20 or struct.unpack_from(">H", frame, udp + 2)[0] != 4791:
        return None
    bth = udp + 8
    qp = (frame[bth + 5] << 16) | (frame[bth + 6] << 8) | frame[bth + 7]
    return fam, dst, qp, bytes(frame[off:end])


def icrc_valid(ip):
    """RoCEv2 ICRC: CRC-32 over 8 x 0xff + the IP packet with its variant fields set to ones."""
    b = bytearray(ip)
    if b[0] >> 4 == 4:
        b[1] = 0xFF
        b[8] = 0xFF
        b[10:12] = b"\xff\xff"
        udp = (b[0] & 0x0F) * 4
    else:
        b[0:4] = bytes([0x6F, 0xFF, 0xFF, 0xFF])  # version kept, traffic class + flow label
        b[7] = 0xFF
        udp = 40
    b[udp + 6:udp + 8] = b"\xff\xff"
    b[udp + 8 + 4] = 0xFF
    crc = zlib.crc32(b"\xff" * 8 + bytes(b[:-4])) & 0xFFFFFFFF
    return int.from_bytes(ip[-4:], "little") == crc


def sid_list(policy_index, sids):
    """Segment list of policy N: sids SIDs, the last one the far gateway's End.DX4/DX6."""
    out = [f"fc00:0:{0x100 * (policy_index + 1) + h + 1:x}::e" for h in range(sids - 1)]
    return out + ["fc00:0:2::d4"]


def make_config(path, flows, sids, steering, policies, mbufs, pcap_frames):
    """One policy per segment list, each flow (destination, QP) steered by an exact rule to
    policy (flow index mod policies), filler rules up to `steering` entries: the SID list each
    QP must carry is known exactly. Same hash-table level as run.py's N-entry points."""
    pols = [{"name": f"p{i}", "color": i + 1, "endpoint": "fc00:0:2::1", "encap": "encaps",
             "segment-list": [{"name": "path0", "path-id": 100 + i, "weight": 1,
                               "sid": sid_list(i, sids)}]} for i in range(policies)]
    if steering < len(flows):
        die(f"--steering {steering} < {len(flows)} flows in the traffic")
    rules, expect = [], {}
    for i, (fam, dst, qp) in enumerate(flows):
        rules.append({"id": i + 1, "exact": {"destination": dst, "dest-qp": qp},
                      "policy": f"p{i % policies}"})
        expect[(dst, qp)] = sid_list(i % policies, sids)
    i = 0
    while len(rules) < steering:
        a = (10 << 24) | (64 << 16) | (i >> 4)
        rules.append({"id": len(rules) + 1,
                      "exact": {"destination": f"{a >> 24}.{(a >> 16) & 255}.{(a >> 8) & 255}."
                                               f"{a & 255}", "dest-qp": 0x1000 + (i & 15)},
                      "policy": "p0"})
        i += 1
    cfg = {"srv6gw:gateway": {
        "ports": {"host": "net_af_packet0", "fabric": "net_af_packet1", "queues": 1,
                  "mbufs": mbufs, "fabric-nexthop-mac": NEXTHOP_MAC, "host-mac": HOST_MAC},
        "source-address": GW_SOURCE,
        "hop-limit": 64,
        "actions": {"steering-miss": "drop", "non-roce": "drop", "fabric-non-sid": "drop"},
        "stats-interval-ms": 0,
        "capacities": {"exact-entries": max(len(rules), 1024), "max-sids": 16},
        "policies": {"policy": pols},
        "steering": {"rule": rules},
        "local-sids": {"local-sid": [{"sid": "fc00:0:1::d4", "behavior": "end-dx4"},
                                     {"sid": "fc00:0:1::d6", "behavior": "end-dx6"}]},
    }}
    with open(path, "w") as f:
        json.dump(cfg, f, separators=(",", ":"))
    return expect


def write_pcap(path, frames):
    """Classic pcap (microseconds, Ethernet), every frame stamped 0: pktgen replays in order."""
    with open(path, "wb") as f:
        f.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1))
        for fr in frames:
            f.write(struct.pack("<IIII", 0, 0, len(fr), len(fr)))
            f.write(fr)


def make_decap_pcap(args, host_pcap, out, fam):
    """The host traffic as it reaches this gateway from the fabric. srv6gw-pcap encapsulates
    every frame as the far gateway would (--sids SIDs, the last one this gateway's End.DX4 or
    End.DX6 SID); each frame then gets what the last transit End node leaves it: outer
    destination = the last SID, segments left 0. The inner packets are host_pcap's."""
    sids = [f"fc00:0:{0x200 + h + 1:x}::e" for h in range(args.sids - 1)] + [GW_DX_SID[fam]]
    sent = out + ".first-segment.pcap"
    run([args.srv6gw_pcap, "encap", "--in", host_pcap, "--out", sent, "--sids", ",".join(sids),
         "--source", FAR_GW_SOURCE, "--dst-mac", GW_FABRIC_MAC, "--src-mac", NEXTHOP_MAC])
    frames = []
    for fr in read_pcap(sent):
        fr = bytearray(fr)
        if len(fr) < 14 + 40 + 24 or fr[12:14] != b"\x86\xdd" or fr[14 + 6] != 43:
            die(f"{sent}: srv6gw-pcap wrote a frame without an SRH ({len(fr)} B)")
        srh = 14 + 40
        fr[srh + 3] = 0                          # segments left 0
        fr[14 + 24:14 + 40] = fr[srh + 8:srh + 24]  # destination: Segment List[0], the last SID
        frames.append(bytes(fr))
    os.unlink(sent)
    write_pcap(out, frames)
    return len(frames)


# ---------------------------------------------------------------------------------------------
# RFC 2544 search


class Search:
    """Trials of one DUT under one pktgen; every trial is kept (rate asked, frames sent and
    received, the DUT's counters)."""

    def __init__(self, pg, dut, args, frame_bytes, direction):
        self.pg, self.dut, self.args = pg, dut, args
        self.frame_bytes = frame_bytes
        self.direction = direction
        self.dir = DIRECTIONS[direction]
        self.trials = []

    def trial(self, rate):
        ms = int(self.args.trial_seconds * 1000)
        t0 = time.monotonic()
        before = dut_counters(self.dut)
        t1 = time.monotonic()
        r = self.pg.trial(rate, ms, self.dir["tx"], self.dir["rx"])
        t2 = time.monotonic()
        after = dut_counters(self.dut)
        t3 = time.monotonic()
        d = diff(before, after)
        sent, got = r["tx_opackets"], r["rx_ipackets"]
        lost = sent - got
        secs = r.get("seconds") or ms / 1000.0  # the delay asked can stretch under load
        t = {"rate_pct": round(rate, 4), "seconds": secs, "sent": sent, "received": got,
             "lost": lost, "loss": (lost / sent) if sent else 0.0,
             "offered_mpps": sent / secs / 1e6, "delivered_mpps": got / secs / 1e6,
             "offered_gbps": r["tx_obytes"] * 8 / secs / 1e9,
             "delivered_gbps": r["rx_ibytes"] * 8 / secs / 1e9,
             "pktgen": r, "dut": d,
             "wall_s": {"dut_counters": round(t1 - t0 + t3 - t2, 2), "pktgen": round(t2 - t1, 2)}}
        # Where the lost frames went, by the DUT's own counters: its ingress port's RX and its
        # egress port's TX (host -> fabric for encap, fabric -> host for decap).
        t["direction"] = self.direction
        t["dut_rx"] = d.get(self.dir["dut_in"] + "_ipackets", 0)
        t["dut_tx"] = d.get(self.dir["dut_out"] + "_opackets", 0)
        t["dut_missed"] = d.get(self.dir["dut_in"] + "_imissed", 0)
        if lost < 0:
            # More received than sent: pktgen's counters were not final (see trials.lua). Not
            # a pass: the search treats it as a trial with loss, and it is reported.
            t["loss"] = 1.0
            t["counters_inconsistent"] = True
        # Where lost frames went: never taken in by the DUT (its RX ring was full), dropped
        # inside it, or sent by it and not taken in by pktgen (pktgen's RX ring was full).
        t["lost_before_dut"] = max(sent - t["dut_rx"], 0)
        t["lost_in_dut"] = max(t["dut_rx"] - t["dut_tx"], 0)
        t["lost_after_dut"] = max(t["dut_tx"] - got, 0)
        if self.dut.kind == "srv6gw":
            t["gw_counter"] = self.dir["gw_counter"]  # encap or decap
            t["gw_count"] = d.get("gw_" + t["gw_counter"], 0)
            t["gw_drops"] = d.get("gw_drops_total", 0)
        self.trials.append(t)
        log(f"    {self.dut.kind:8s} {self.direction} rate {rate:7.3f}%: sent {sent} received "
            f"{got} lost {lost} ({100 * t['loss']:.3f}%: {t['lost_before_dut']} before the DUT, "
            f"{t['lost_in_dut']} in it, {t['lost_after_dut']} after it) | DUT "
            f"{self.dir['dut_in']} rx {t['dut_rx']} missed {t['dut_missed']} "
            f"{self.dir['dut_out']} tx {t['dut_tx']}"
            + (f" {t['gw_counter']} {t['gw_count']} drops {t['gw_drops']}" if "gw_count" in t
               else "")
            + " | "
            f"{t['offered_mpps']:.4f} Mpps offered (wall {t['wall_s']})")
        return t

    def bounds(self):
        """Two opening trials: a low rate (frames per percent of pktgen's rate on this rig) and
        the highest rate asked (pktgen's own ceiling here). The searches then run between 0 and
        the rate that offers a little more than that ceiling: asking pktgen for more than it
        can send only repeats the ceiling trial."""
        a = self.args
        cal = self.trial(a.calibration_rate)
        top = self.trial(a.max_rate)
        per_pct = cal["offered_mpps"] / a.calibration_rate
        hi = a.max_rate
        if per_pct > 0 and top["offered_mpps"] > 0:
            hi = min(a.max_rate, 1.1 * top["offered_mpps"] / per_pct)
        self.tester_ceiling_mpps = top["offered_mpps"]
        self.search_top = hi
        return [cal, top]

    def search(self, max_loss, known):
        """Highest rate with loss <= max_loss: binary search on pktgen's rate between what the
        trials so far bracket, until the interval is narrower than --precision (relative)."""
        ok = [t for t in known if t["loss"] <= max_loss]
        bad = [t for t in known if t["loss"] > max_loss]
        best = max(ok, key=lambda t: t["offered_mpps"], default=None)
        top = next((t for t in known if t["rate_pct"] == self.args.max_rate), None)
        if top is not None and top["loss"] <= max_loss:
            return top, (f"loss within {max_loss:.1%} at the highest rate pktgen can offer "
                         f"here: the tester, not the DUT, limits")
        lo = max((t["rate_pct"] for t in ok), default=0.0)
        hi = min([t["rate_pct"] for t in bad if t["rate_pct"] > lo] + [self.search_top])
        n = 0
        while (hi - lo) > self.args.precision * hi and n < self.args.max_trials:
            mid = (lo + hi) / 2
            t = self.trial(mid)
            known.append(t)
            n += 1
            if t["loss"] <= max_loss:
                lo = mid
                if best is None or t["offered_mpps"] > best["offered_mpps"]:
                    best = t
            else:
                hi = mid
        return best, None


def summarize(best, frame_bytes):
    if best is None:
        return {"mpps": 0.0, "gbps": 0.0, "rate_pct": 0.0}
    return {"mpps": round(best["offered_mpps"], 4), "gbps": round(best["offered_gbps"], 4),
            "rate_pct": best["rate_pct"], "loss": best["loss"], "sent": best["sent"],
            "received": best["received"], "dut_rx": best["dut_rx"], "dut_tx": best["dut_tx"]}


def cross_check(dut_kind, trials, tol):
    """At every trial without loss, pktgen's counters and the DUT's agree: sent = received by
    the DUT's ingress port = sent by its egress port = received by pktgen (srv6gw: = its encap
    or decap count).
    Trials with loss need no agreement: where the frames went is recorded (split)."""
    problems = []
    for t in trials:
        if t.get("counters_inconsistent"):
            problems.append(f"{dut_kind} {t['direction']} at {t['rate_pct']}%: pktgen counted "
                            f"{t['received']} "
                            f"received for {t['sent']} sent (its counters were not final)")
            continue
        if t["lost"] != 0:
            continue
        counts = {"pktgen sent": t["sent"], "DUT rx": t["dut_rx"], "DUT tx": t["dut_tx"],
                  "pktgen received": t["received"]}
        if "gw_count" in t:
            counts[f"gateway {t['gw_counter']}"] = t["gw_count"]
        if max(counts.values()) - min(counts.values()) > tol:
            problems.append(f"{dut_kind} {t['direction']} at {t['rate_pct']}% without loss, "
                            "counters disagree: "
                            + ", ".join(f"{k} {v}" for k, v in counts.items()))
    return problems


# ---------------------------------------------------------------------------------------------
# Correctness sample under the tester


def capture_sample(rig, pg, args, work, tag, count, direction):
    """dumpcap on pktgen's receiving veth (pg1 for encap, pg0 for decap) and on the DUT's
    ingress veth (gwh, gwf: what enters the DUT) while pktgen sends at a low rate. Both taps
    stamp frames with the same kernel clock: the pair gives a latency through the DUT."""
    paths, procs, cmds = [], [], []
    dumpcap = shutil.which("dumpcap") or "/usr/bin/dumpcap"
    d = DIRECTIONS[direction]
    for iface in (d["tap_out"], d["tap_in"]):
        path = os.path.join(work, f"sample-{tag}-{iface}.pcap")
        cmd = rig.cmd([dumpcap, "-q", "-P", "-i", iface, "-c", str(count), "-w", path])
        p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        _children.append(p)
        paths.append(path)
        procs.append(p)
        cmds.append(" ".join(cmd))
    # dumpcap writes its file header once it captures: wait for both (bounded; a loaded
    # machine took more than the 1.5 s this once slept).
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and not all(
            os.path.exists(f) and os.path.getsize(f) > 0 for f in paths):
        if any(p.poll() is not None for p in procs):
            break
        time.sleep(0.1)
    time.sleep(0.3)
    trial = pg.trial(args.sample_rate, int(args.sample_seconds * 1000), d["tx"], d["rx"])
    errors = []
    for p, path, cmd in zip(procs, paths, cmds):
        try:
            p.wait(timeout=10)
        except subprocess.TimeoutExpired:
            p.send_signal(signal.SIGINT)
            p.wait(timeout=10)
        if not os.path.exists(path):
            errors.append(f"'{cmd}' wrote no file (exit {p.returncode}): "
                          f"{p.stderr.read().strip()}")
    return paths[0], paths[1], trial, cmds, errors


def read_pcap_times(path):
    """(timestamp in seconds, frame) of a classic pcap (micro- or nanosecond magic)."""
    with open(path, "rb") as f:
        data = f.read()
    magic = data[:4]
    endian = "<" if magic in (b"\xd4\xc3\xb2\xa1", b"\x4d\x3c\xb2\xa1") else ">"
    frac = 1e-9 if magic in (b"\x4d\x3c\xb2\xa1", b"\xa1\xb2\x3c\x4d") else 1e-6
    out, off = [], 24
    while off + 16 <= len(data):
        ts_s, ts_f, incl, _ = struct.unpack(endian + "IIII", data[off:off + 16])
        out.append((ts_s + ts_f * frac, data[off + 16:off + 16 + incl]))
        off += 16 + incl
    return out


def roce_key(frame):
    """(destination, DestQP, PSN) of a RoCEv2 frame, plain or inside SRv6 (IPv6 + SRH)."""
    off, etype = 14, struct.unpack_from(">H", frame, 12)[0]
    if etype == 0x86DD and len(frame) > 14 + 41 and frame[14 + 6] == 43:
        nxt = frame[14 + 40]
        off = 14 + 40 + 8 + 8 * frame[14 + 40 + 1]
        etype = 0x0800 if nxt == 4 else 0x86DD if nxt == 41 else 0
    r = roce_of(frame, off, etype)
    if r is None:
        return None
    ip = r[3]
    udp = (ip[0] & 0x0F) * 4 if ip[0] >> 4 == 4 else 40
    psn = int.from_bytes(ip[udp + 8 + 9:udp + 8 + 12], "big")
    return r[0], r[1], r[2], psn


def latency_through_dut(in_pcap, out_pcap):
    """One-way latency of frames matched by (destination, QP, PSN) between the tap on the DUT's
    host veth and the tap on pktgen's receiving veth: the DUT's RX ring wait, its processing
    and its TX into the kernel. Microseconds: count, min, median, p99, max."""
    # pktgen replays the pcap in a loop: the same key comes back once per loop, so each frame
    # out is matched to the latest frame in with its key (the loop lasts far longer than the
    # latency at a low rate).
    seen = {}
    for ts, fr in read_pcap_times(in_pcap):
        k = roce_key(fr)
        if k is not None:
            seen.setdefault(k, []).append(ts)
    lat = []
    for ts, fr in read_pcap_times(out_pcap):
        before = [t for t in seen.get(roce_key(fr), []) if t <= ts]
        if before:
            lat.append((ts - before[-1]) * 1e6)
    if not lat:
        return {"frames": 0}
    lat.sort()
    pick = lambda q: round(lat[min(len(lat) - 1, int(q * len(lat)))], 1)  # noqa: E731
    return {"frames": len(lat), "min_us": round(lat[0], 1), "median_us": pick(0.5),
            "p99_us": pick(0.99), "max_us": round(lat[-1], 1)}


def tshark_rows(path, fields):
    """tshark's fields of every frame of path, one list per frame (every occurrence of a field
    joined with '|'); (rows, None) or ([], the error)."""
    cmd = ["tshark", "-r", path, "-T", "fields", "-E", "occurrence=a", "-E", "aggregator=|"]
    for f in fields:
        cmd += ["-e", f]
    res = run(cmd, check=False, timeout=300)
    if res.returncode != 0:
        return [], f"tshark failed: {res.stderr.strip()}"
    return [line.split("\t") for line in res.stdout.splitlines()], None


def check_sample(path, sent_pcap, expect, sids):
    """tshark: SRv6 encapsulated, SID list per (destination, QP); bytes: inner packet as sent,
    ICRC valid. Returns (frames checked, problems)."""
    sent = {}
    for fr in read_pcap(sent_pcap):
        r = roce_of(fr)
        if r:
            sent[r[3]] = r
    fields = ["frame.number", "frame.protocols", "ipv6.routing.type", "ipv6.routing.segleft",
              "ipv6.routing.srh.addr", "ipv6.dst", "ip.dst", "infiniband.bth.destqp",
              "infiniband.invariant.crc"]
    rows, err = tshark_rows(path, fields)
    if err:
        return 0, [err]
    frames = read_pcap(path)
    problems = []
    if not rows:
        problems.append("no frame captured at pktgen's receiving port")
    for row, fr in zip(rows, frames):
        if len(problems) > 20:
            problems.append("... (more)")
            break
        if len(row) < len(fields):
            row += [""] * (len(fields) - len(row))
        num, protos, rtype, segleft, srh, v6dst, v4dst, qp, crc = row
        where = f"frame {num}"
        if not protos.startswith("eth:ethertype:ipv6:ipv6.routing:"):
            problems.append(f"{where}: not SRv6 encapsulated ({protos})")
            continue
        if rtype != "4":
            problems.append(f"{where}: routing header type {rtype}, not SRH (4)")
            continue
        addrs = srh.split("|")
        outer_dst = v6dst.split("|")[0]
        # Inner packet: after outer IPv6 (40) + SRH (8 + 16 x segments).
        srh_len = 8 + 8 * fr[14 + 40 + 1]
        inner_off = 14 + 40 + srh_len
        nxt = fr[14 + 40]
        r = roce_of(fr, inner_off, 0x0800 if nxt == 4 else 0x86DD if nxt == 41 else 0)
        if r is None:
            problems.append(f"{where}: inner packet is not RoCEv2 (next header {nxt})")
            continue
        fam, dst, dqp, ip = r
        if qp and int(qp.split("|")[0], 0) != dqp:
            problems.append(f"{where}: tshark DestQP {qp} != {dqp}")
        want = expect.get((dst, dqp))
        if want is None:
            problems.append(f"{where}: ({dst}, QP {dqp}) is not a flow of the traffic")
        else:
            if addrs != list(reversed(want)):
                problems.append(f"{where}: ({dst}, QP {dqp}) SID list {addrs[::-1]}, "
                                f"expected {want}")
            if outer_dst != want[0] or segleft != str(len(want) - 1):
                problems.append(f"{where}: outer destination {outer_dst} segments left "
                                f"{segleft}, expected {want[0]} / {len(want) - 1}")
        if ip not in sent:
            problems.append(f"{where}: inner packet of ({dst}, QP {dqp}) differs from every "
                            f"packet sent")
        if not icrc_valid(ip):
            problems.append(f"{where}: ICRC invalid")
        elif crc and int(crc.split("|")[-1], 16) != int.from_bytes(ip[-4:], "big"):
            problems.append(f"{where}: tshark ICRC {crc} != the packet's last 4 bytes")
    return len(rows), problems


def check_decap_sample(path, sent_pcap):
    """tshark: plain RoCEv2 (no SRv6 left) toward the host's MAC; bytes: the IP packet is one
    that was inside an SRv6 frame sent, ICRC valid. Returns (frames checked, problems)."""
    inner = set()
    for fr in read_pcap(sent_pcap):
        off = 14 + 40 + 8 + 8 * fr[14 + 40 + 1]
        nxt = fr[14 + 40]
        r = roce_of(fr, off, 0x0800 if nxt == 4 else 0x86DD if nxt == 41 else 0)
        if r:
            inner.add(r[3])
    fields = ["frame.number", "frame.protocols", "eth.dst", "infiniband.bth.destqp",
              "infiniband.invariant.crc"]
    rows, err = tshark_rows(path, fields)
    if err:
        return 0, [err]
    problems = [] if rows else ["no frame captured at pktgen's receiving port"]
    for row, fr in zip(rows, read_pcap(path)):
        if len(problems) > 20:
            problems.append("... (more)")
            break
        row += [""] * (len(fields) - len(row))
        num, protos, dst_mac, qp, crc = row
        where = f"frame {num}"
        if not protos.startswith(("eth:ethertype:ip:udp:infiniband",
                                  "eth:ethertype:ipv6:udp:infiniband")):
            problems.append(f"{where}: not a plain RoCEv2 frame ({protos})")
            continue
        if dst_mac.lower() != HOST_MAC:
            problems.append(f"{where}: destination MAC {dst_mac}, expected the host's {HOST_MAC}")
        r = roce_of(fr)
        if r is None:
            problems.append(f"{where}: not RoCEv2 by bytes")
            continue
        fam, dst, dqp, ip = r
        if qp and int(qp.split("|")[0], 0) != dqp:
            problems.append(f"{where}: tshark DestQP {qp} != {dqp}")
        if ip not in inner:
            problems.append(f"{where}: ({dst}, QP {dqp}) differs from every packet sent inside "
                            f"SRv6")
        if not icrc_valid(ip):
            problems.append(f"{where}: ICRC invalid")
        elif crc and int(crc.split("|")[-1], 16) != int.from_bytes(ip[-4:], "big"):
            problems.append(f"{where}: tshark ICRC {crc} != the packet's last 4 bytes")
    return len(rows), problems


# ---------------------------------------------------------------------------------------------
# Output


def write_plot(results, png, work):
    gp = shutil.which("gnuplot")
    if not gp:
        log("gnuplot not found (tools/setup.sh installs gnuplot-nox): no plot")
        return False
    plots = []
    for i, pt in enumerate(results["points"]):
        for kind in ("testpmd", "srv6gw"):
            if kind not in pt["duts"]:
                continue
            dat = os.path.join(work, f"plot-{i}-{kind}.dat")
            with open(dat, "w") as f:
                for t in sorted(pt["duts"][kind]["trials"], key=lambda t: t["offered_mpps"]):
                    f.write(f"{t['offered_mpps'] * 1000:.3f} {t['delivered_mpps'] * 1000:.3f}\n")
            plots.append((pt["name"], kind, dat, DIRECTIONS[pt.get("direction", "encap")]))
    if not plots:
        return False
    names = sorted({p[0] for p in plots}, key=[p[0] for p in plots].index)
    lines = [f"set terminal pngcairo size 1400,{480 * ((len(names) + 1) // 2)} font ',10' "
             f"noenhanced", f"set output '{png}'",
             f"set multiplot layout {(len(names) + 1) // 2},{min(len(names), 2)} title "
             f"'Pktgen-DPDK RFC 2544 trials: offered vs delivered (net_af_packet on veth)'",
             "set grid", "set key top left"]
    for name in names:
        mine = [p for p in plots if p[0] == name]
        # The decap direction sends on port 1 and receives on port 0.
        dr = mine[0][3]
        lines.append(f"set xlabel 'offered kpps (pktgen port {dr['tx']})'")
        lines.append(f"set ylabel 'delivered kpps (pktgen port {dr['rx']})'")
        parts = ["x title 'no loss' dt 2 lc rgb '#999999'"]
        for _, kind, dat, _ in mine:
            color = "#7f7f7f" if kind == "testpmd" else "#1f77b4"
            label = "testpmd io" if kind == "testpmd" else "srv6gw"
            parts.append(f"'{dat}' using 1:2 with linespoints pt 7 lc rgb '{color}' "
                         f"title '{label}'")
        lines.append(f"set title '{name}'")
        lines.append("plot " + ", ".join(parts))
    lines.append("unset multiplot")
    res = subprocess.run([gp], input="\n".join(lines) + "\n", capture_output=True, text=True)
    if res.returncode != 0:
        log(f"gnuplot failed: {res.stderr.strip()}")
        return False
    return True


def table(results):
    L = ["| point | DUT | no-drop Mpps | no-drop Gbit/s | 0.5 % loss Mpps | 0.5 % loss Gbit/s "
         "| srv6gw / testpmd (no-drop) | latency median / p99 us | trials | note |",
         "|---|---|---:|---:|---:|---:|---:|---:|---:|---|"]
    for pt in results["points"]:
        for kind in ("testpmd", "srv6gw"):
            d = pt["duts"].get(kind)
            if not d:
                continue
            la = d.get("latency", {})
            lat = f"{la['median_us']:.0f} / {la['p99_us']:.0f}" if la.get("frames") else "n/a"
            ratio = f"{pt['ratio_no_drop']:.3f}" if kind == "srv6gw" and pt.get(
                "ratio_no_drop") is not None else ""
            L.append(f"| {pt['name']} | {'testpmd io' if kind == 'testpmd' else 'srv6gw'} | "
                     f"{d['no_drop']['mpps']:.4f} | {d['no_drop']['gbps']:.3f} | "
                     f"{d['partial_drop']['mpps']:.4f} | {d['partial_drop']['gbps']:.3f} | "
                     f"{ratio} | {lat} | {len(d['trials'])} | {d.get('note') or ''} |")
    return "\n".join(L)


# ---------------------------------------------------------------------------------------------


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    b = os.path.join(SRC, "build")
    ap.add_argument("--build-dir", default=b)
    ap.add_argument("--srv6gw")
    ap.add_argument("--roce-gen")
    ap.add_argument("--srv6gw-pcap", help="srv6gw-pcap (makes the decap direction's traffic)")
    ap.add_argument("--directions", type=lambda s: s.split(","), default=["encap", "decap"],
                    help="encap (pktgen port 0 -> host port), decap (port 1 -> fabric port)")
    ap.add_argument("--testpmd", default=shutil.which("dpdk-testpmd") or "dpdk-testpmd")
    ap.add_argument("--pktgen", help="pktgen binary (default: $PKTGEN, else built)")
    ap.add_argument("--pktgen-tarball", default=DEFAULT_TARBALL)
    ap.add_argument("--pktgen-build", help="where pktgen is built (default BUILD/pktgen-dpdk)")
    ap.add_argument("--out", default=os.path.join(SRC, "bench-results", "pktgen"))
    ap.add_argument("--workdir", help="pcaps, configs, logs (default: temporary, removed)")
    ap.add_argument("--smoke", action="store_true",
                    help="CI: one low-rate trial through srv6gw, counters and sample checked")
    ap.add_argument("--frames", type=lambda s: [int(x) for x in s.split(",")], default=[1024])
    ap.add_argument("--families", type=lambda s: s.split(","), default=["ipv4"])
    ap.add_argument("--sids", type=int, default=3)
    ap.add_argument("--steering", type=int, default=65536)
    ap.add_argument("--policies", type=int, default=4, help="segment lists (one per policy)")
    ap.add_argument("--hosts", type=int, default=16)
    ap.add_argument("--qps", type=int, default=64)
    ap.add_argument("--pcap-frames", type=int, default=4096)
    ap.add_argument("--duts", type=lambda s: s.split(","), default=["testpmd", "srv6gw"])
    ap.add_argument("--trial-seconds", type=float, default=3.0)
    ap.add_argument("--precision", type=float, default=0.04, help="stop when the search "
                    "interval is narrower than this fraction of its upper end")
    ap.add_argument("--calibration-rate", type=float, default=1.0,
                    help="rate percent of the opening low-rate trial")
    ap.add_argument("--max-rate", type=float, default=100.0)
    ap.add_argument("--max-trials", type=int, default=9)
    ap.add_argument("--partial-loss", type=float, default=0.005)
    ap.add_argument("--sample-rate", type=float, default=0.2)
    ap.add_argument("--sample-seconds", type=float, default=1.0)
    ap.add_argument("--sample-frames", type=int, default=500)
    ap.add_argument("--pktgen-lcores", default="0,1", help="EAL -l: main, port lcore")
    ap.add_argument("--dut-lcores", default="1,0", help="main lcore, forwarding lcore")
    ap.add_argument("--dut-hugepages", action="store_true",
                    help="DUTs on hugepages too (default --no-huge: pktgen's pools need most)")
    ap.add_argument("--dut-mbufs", type=int, default=16384)
    ap.add_argument("--dut-ring-frames", type=int, default=4096,
                    help="net_af_packet ring size (frames) of the DUT's ports")
    ap.add_argument("--keep-hugepages", action="store_true",
                    help="leave vm.nr_hugepages raised at exit")
    ap.add_argument("--tolerance", type=int, default=0,
                    help="frames pktgen and the DUT's counters may disagree by")
    return ap.parse_args()


def main():
    args = parse_args()
    t_start = time.monotonic()
    bd = args.build_dir
    args.srv6gw = os.path.abspath(args.srv6gw or os.path.join(bd, "apps", "srv6gw", "srv6gw"))
    args.roce_gen = os.path.abspath(args.roce_gen or os.path.join(bd, "tools", "roce-gen",
                                                                  "roce-gen"))
    args.srv6gw_pcap = os.path.abspath(args.srv6gw_pcap or os.path.join(
        bd, "apps", "srv6gw-pcap", "srv6gw-pcap"))
    for dr in args.directions:
        if dr not in DIRECTIONS:
            die(f"--directions: unknown direction '{dr}' (encap, decap)")
    args.pktgen_build = args.pktgen_build or os.path.join(bd, "pktgen-dpdk")
    if args.smoke:
        args.duts = ["srv6gw"]
        args.frames, args.families = [1024], ["ipv4"]
        args.hosts, args.qps, args.pcap_frames, args.steering = 4, 16, 256, 1024
        args.sample_frames = 200
        args.trial_seconds = 1.0
    for exe in (args.srv6gw, args.roce_gen) + (
            (args.srv6gw_pcap,) if "decap" in args.directions else ()):
        if not os.access(exe, os.X_OK):
            die(f"{exe} is not built")
    if os.geteuid() != 0:
        skip("needs root (network namespace with veth pairs, hugepages for pktgen)")
    for tool in ("tshark", "dumpcap") + (("dpdk-testpmd",) if "testpmd" in args.duts else ()):
        if not shutil.which(tool) and not (tool == "dpdk-testpmd" and os.access(args.testpmd,
                                                                                  os.X_OK)):
            skip(f"{tool} is not installed (tools/setup.sh installs it)")
    pktgen_bin = ensure_pktgen(args)
    pages = PKTGEN_PAGES + (len(args.duts) * DUT_MEM_MB // 2 if args.dut_hugepages else 0)
    huge = ensure_hugepages(pages, args.keep_hugepages)

    work = args.workdir or tempfile.mkdtemp(prefix="srv6gw-pktgen-")
    os.makedirs(work, exist_ok=True)
    if not args.workdir:
        _cleanups.insert(0, lambda: shutil.rmtree(work, ignore_errors=True))
    os.makedirs(args.out, exist_ok=True)
    if max(args.frames) > 1514:
        # Pktgen 23.03 cuts pcap frames to 1514 B unless started with -j, and -j sets MTU 9216
        # on its ports: net_af_packet (max frame 1518 B) and net_tap (1522 B) of DPDK 22.11
        # refuse it, net_pcap and net_memif have no MTU operation, and pktgen stops when the
        # MTU cannot be set. On NIC ports -j works (docs/design/pktgen.md).
        die(f"frames of {max(args.frames)} B: pktgen needs -j (jumbo) for frames above 1514 B, "
            f"and no kernel-facing DPDK 22.11 port takes the MTU 9216 that -j sets (af_packet "
            f"max frame 1518 B, tap 1522 B, pcap and memif cannot set an MTU); this rig runs up "
            f"to 1514 B, NIC ports run 4 KB")
    jumbo = False
    rig = Rig(f"srv6gwpg{os.getpid()}", 9000 if jumbo else 1500)

    results = {"generated": datetime.datetime.now(datetime.timezone.utc).isoformat(
        timespec="seconds"), "tool": "tools/bench/pktgen/pktgen_bench.py",
        "command": " ".join([sys.executable] + sys.argv),
        "machine": {"hostname": platform.node(), "kernel": platform.release(),
                    "cpus": os.cpu_count(), "loadavg_at_start": open("/proc/loadavg").read()
                    .split()[:3], "hugepages": huge},
        "pktgen": pktgen_bin, "rig": "one namespace, veth pairs pg0-gwh and gwf-pg1, "
        "net_af_packet on every port", "settings": {
            k: getattr(args, k) for k in ("trial_seconds", "precision", "max_rate", "max_trials",
                                          "partial_loss", "sids", "steering", "policies",
                                          "hosts", "qps", "pcap_frames", "pktgen_lcores",
                                          "dut_lcores", "dut_hugepages",
                                          "dut_ring_frames", "directions")},
        "points": [], "problems": []}
    for size in args.frames:
        for fam in args.families:
            base = f"{size}B {fam} {args.sids}sid {args.steering} rules"
            tag = f"{size}{fam[-1]}"
            log(f"traffic {base}")
            pcap = os.path.join(work, f"host-{tag}.pcap")
            run([args.roce_gen, "-q", "-o", pcap, "--hosts", str(args.hosts), "--qps",
                 str(args.qps), "--count", str(args.pcap_frames), "--size", str(size),
                 "--family", fam, "--opcodes", "write-middle", "--seed", "7",
                 "--dst-mac", HOST_MAC])
            flows = sorted({roce_of(f)[:3] for f in read_pcap(pcap) if roce_of(f)})
            pcaps = {0: pcap}
            if "decap" in args.directions:
                pcaps[1] = os.path.join(work, f"fabric-{tag}.pcap")
                n = make_decap_pcap(args, pcap, pcaps[1], fam)
                log(f"  decap traffic: {n} SRv6 frames toward {GW_DX_SID[fam]} ({pcaps[1]})")
            config = os.path.join(work, f"gateway-{tag}.json")
            expect = make_config(config, flows, args.sids, args.steering, args.policies,
                                 8191 + args.dut_mbufs, args.pcap_frames)
            room = 8192 if size > 1514 else 2048
            pg = Pktgen(pktgen_bin, rig, args, work, pcaps, size > 1514, tag)
            pg.start()
            pts = {dr: {"name": f"{base} {dr}", "direction": dr, "frame_bytes": size,
                        "family": fam, "flows": len(flows),
                        "pktgen_command": " ".join(pg.command),
                        "pktgen_startup_s": round(pg.startup_s, 1), "duts": {}}
                   for dr in args.directions}
            for kind in args.duts:
                # One DUT serves both directions, one after the other.
                dut = Dut(kind, rig, args, work, tag, config, room)
                dut.start()
                for dr in args.directions:
                    log(f"point {pts[dr]['name']}, DUT {kind}")
                    s = Search(pg, dut, args, size, dr)
                    d = {"command": " ".join(dut.command)}
                    if args.smoke:
                        # A second, slower trial only when the first lost frames before the
                        # gateway (its RX ring overflowed while a busy machine kept its lcore
                        # off the CPU); what the gateway took in must always come out.
                        t = s.trial(args.sample_rate)
                        if t["lost"] and t["lost"] == t["lost_before_dut"]:
                            log(f"  {t['lost']} frames lost before the gateway: once more at "
                                f"half the rate")
                            s.trial(args.sample_rate / 2)
                        d["trials"] = s.trials
                    else:
                        known = s.bounds()
                        nd, note = s.search(0.0, known)
                        pd, note2 = s.search(args.partial_loss, known)
                        # The partial-drop search can find a higher rate without loss than
                        # the no-drop search's last bracket (each stops after --max-trials):
                        # every loss-free trial counts for the no-drop rate.
                        nd = max([t for t in s.trials if t["loss"] == 0.0] + ([nd] if nd else []),
                                 key=lambda t: t["offered_mpps"], default=None)
                        d.update({"no_drop": summarize(nd, size),
                                  "partial_drop": summarize(pd, size), "note": note or note2,
                                  "tester_ceiling_mpps": round(s.tester_ceiling_mpps, 4),
                                  "trials": s.trials})
                        log(f"  {kind} {dr}: no-drop {d['no_drop']['mpps']:.4f} Mpps, "
                            f"{args.partial_loss * 100:g} % loss "
                            f"{d['partial_drop']['mpps']:.4f} Mpps")
                    problems = cross_check(kind, s.trials, args.tolerance)
                    spath, inpath, strial, scmds, serrors = capture_sample(
                        rig, pg, args, work, f"{kind}-{tag}-{dr}", args.sample_frames, dr)
                    if serrors:
                        problems += [f"sample ({dr}): {e}" for e in serrors]
                        d["problems"] = problems
                        results["problems"] += problems
                        pts[dr]["duts"][kind] = d
                        continue
                    d["latency"] = latency_through_dut(inpath, spath)
                    d["latency"]["rate_pct"] = args.sample_rate
                    log(f"  latency through {kind} ({dr}) at {args.sample_rate} %: "
                        f"{d['latency']}")
                    if kind == "srv6gw":
                        if dr == "encap":
                            n, sp = check_sample(spath, pcap, expect, args.sids)
                        else:
                            n, sp = check_decap_sample(spath, pcaps[1])
                        d["sample"] = {"frames_checked": n, "problems": sp, "commands": scmds,
                                       "trial": strial}
                        problems += [f"sample ({dr}): {p}" for p in sp]
                        log(f"  sample ({dr}): {n} frames at pktgen's port "
                            f"{DIRECTIONS[dr]['rx']} checked with tshark, {len(sp)} problem(s)")
                    d["problems"] = problems
                    results["problems"] += problems
                    pts[dr]["duts"][kind] = d
                dut.stop()
                if kind == "srv6gw" and os.path.exists(dut.stats_json):
                    with open(dut.stats_json) as f:
                        at_exit = json.load(f)  # both directions' totals
                    for dr in args.directions:
                        pts[dr]["duts"][kind]["gateway_stats_at_exit"] = at_exit
            pg.quit()
            for dr in args.directions:
                pt = pts[dr]
                if "srv6gw" in pt["duts"] and "testpmd" in pt["duts"] and not args.smoke:
                    a = pt["duts"]["srv6gw"]["no_drop"]["mpps"]
                    b = pt["duts"]["testpmd"]["no_drop"]["mpps"]
                    pt["ratio_no_drop"] = a / b if b else None
                    a = pt["duts"]["srv6gw"]["partial_drop"]["mpps"]
                    b = pt["duts"]["testpmd"]["partial_drop"]["mpps"]
                    pt["ratio_partial_drop"] = a / b if b else None
                results["points"].append(pt)

    results["machine"]["loadavg_at_end"] = open("/proc/loadavg").read().split()[:3]
    results["elapsed_s"] = round(time.monotonic() - t_start, 1)
    results["latency"] = (
        "pktgen's own latency measurement does not apply: its latency frames are plain UDP with "
        "its signature, not RoCEv2, so the gateway drops them (non-roce: drop) or, with "
        "non-roce: pass, forwards them unencapsulated -- not the encapsulation path; roce-gen "
        "does not timestamp either. duts[].latency instead: RoCEv2 frames matched by "
        "(destination, QP, PSN) between a tap on the DUT's host veth and one on pktgen's "
        "receiving veth (same kernel clock), at the sample rate.")
    out_json = os.path.join(args.out, "results.json")
    with open(out_json, "w") as f:
        json.dump(results, f, indent=1)
    log(f"wrote {out_json}")
    if args.smoke:
        for pt in results["points"]:
            trials = pt["duts"]["srv6gw"]["trials"]
            dr = DIRECTIONS[pt["direction"]]
            for t in trials:
                log(f"smoke {pt['direction']}: pktgen sent {t['sent']}, received "
                    f"{t['received']}; gateway {dr['dut_in']} rx {t['dut_rx']}, "
                    f"{t['gw_counter']} {t['gw_count']}, {dr['dut_out']} tx {t['dut_tx']}, "
                    f"dropped {t['gw_drops']}")
                if t["sent"] == 0:
                    results["problems"].append(f"{pt['direction']}: pktgen sent no frame")
                if t["lost_in_dut"] or t["gw_drops"] or t["lost_after_dut"]:
                    results["problems"].append(
                        f"{pt['direction']} at {t['rate_pct']} %: {t['lost_in_dut']} frames "
                        f"lost in the gateway ({t['gw_drops']} counted drops), "
                        f"{t['lost_after_dut']} between it and pktgen")
            if all(t["lost"] for t in trials):
                results["problems"].append(
                    f"{pt['direction']}: every trial lost frames: " + "; ".join(
                        f"{t['rate_pct']} %: sent {t['sent']}, received {t['received']}"
                        for t in trials))
    else:
        png = os.path.join(args.out, "pktgen.png")
        write_plot(results, png, work)
        md = table(results)
        with open(os.path.join(args.out, "table.md"), "w") as f:
            f.write(md + "\n")
        print(md)
    if results["problems"]:
        for p in results["problems"]:
            print(f"PROBLEM: {p}", flush=True)
        sys.exit(1)
    log(f"done in {results['elapsed_s']} s")


if __name__ == "__main__":
    main()
