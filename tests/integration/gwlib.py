# SPDX-License-Identifier: BSD-3-Clause
# Helpers of the integration suite: where the gateway binary and the examples are, running
# srv6gw with a unique EAL file prefix (and cleaning up after it), skipping with exit 77,
# hugepage checks, tshark field extraction.
import atexit
import glob
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

SKIP = 77
SRC = os.environ.get("SRV6GW_SRC") or os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
BIN = os.environ.get("SRV6GW_BIN") or os.path.join(SRC, "build", "apps", "srv6gw", "srv6gw")
EXAMPLES = os.path.join(SRC, "config", "examples")
DEMO_JSON = os.path.join(EXAMPLES, "demo.json")
DEMO_HOST_PCAP = os.path.join(EXAMPLES, "demo-host.pcap")
DEMO_FABRIC_PCAP = os.path.join(EXAMPLES, "demo-fabric.pcap")

_procs = []
_prefixes = []


def fail(msg):
    print(f"FAIL: {msg}", flush=True)
    sys.exit(1)


def skip(reason):
    print(f"SKIP: {reason}", flush=True)
    sys.exit(SKIP)


def check(cond, msg):
    if not cond:
        fail(msg)


def need_tools(*names):
    for n in names:
        if shutil.which(n) is None:
            skip(f"{n} is not installed (tools/setup.sh installs it)")
    if not os.access(BIN, os.X_OK):
        fail(f"gateway binary {BIN} missing")


def free_hugepages_mb():
    """Free 2 MB hugepages in MB, 0 when hugetlbfs is not mounted."""
    try:
        with open("/proc/mounts") as f:
            if not any(line.split()[2] == "hugetlbfs" for line in f if len(line.split()) > 2):
                return 0
        with open("/proc/meminfo") as f:
            info = dict(line.split(":", 1) for line in f)
        pages = int(info["HugePages_Free"].split()[0])
        size_kb = int(info["Hugepagesize"].split()[0])
        return pages * size_kb // 1024
    except (OSError, KeyError, ValueError):
        return 0


def asan_build(binary=None):
    """True when the gateway binary links AddressSanitizer (tools/sanitize.sh builds): tests
    then allow for its slowdown and memory quarantine where they measure time or memory."""
    try:
        out = subprocess.run(["ldd", binary or BIN], capture_output=True, text=True,
                             timeout=30).stdout
    except (OSError, subprocess.SubprocessError):
        return False
    return "libasan" in out


def need_hugepages(mb):
    if os.geteuid() != 0:
        skip("needs root for hugepages (secondary DPDK processes attach through them)")
    free = free_hugepages_mb()
    if free < mb:
        skip(f"needs {mb} MB of free hugepages, {free} MB free (tools/setup.sh reserves them)")


def runtime_dir(prefix):
    base = os.environ.get("RUNTIME_DIRECTORY") or ("/var/run" if os.geteuid() == 0 else
                                                  os.environ.get("XDG_RUNTIME_DIR", "/tmp"))
    return os.path.join(base, "dpdk", prefix)


def _cleanup_prefix(prefix):
    shutil.rmtree(runtime_dir(prefix), ignore_errors=True)
    for f in glob.glob(f"/dev/hugepages/{prefix}map_*"):
        try:
            os.unlink(f)
        except OSError:
            pass


def unique_prefix(name):
    prefix = f"srv6gw_it_{name}_{os.getpid()}"
    _prefixes.append(prefix)
    _cleanup_prefix(prefix)
    return prefix


def _cleanup():
    for p in _procs:
        if p.poll() is None:
            p.kill()
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                pass
    for prefix in _prefixes:
        _cleanup_prefix(prefix)


atexit.register(_cleanup)


def _on_sigterm(signum, _frame):
    # meson's timeout: say where the test hung before exiting (roce_lib is on the path of
    # every test that needs the report: those using network namespaces).
    try:
        import roce_lib
        roce_lib.report_hang(signum)
    except ImportError:
        pass
    sys.exit(1)


signal.signal(signal.SIGTERM, _on_sigterm)


def workdir(name):
    d = tempfile.mkdtemp(prefix=f"srv6gw-it-{name}-")
    atexit.register(shutil.rmtree, d, True)
    return d


def eal_args(prefix, vdevs, hugepages=False, mem_mb=512):
    args = ["-l", "0-1", "--no-pci", "--file-prefix", prefix, "--log-level", "lib.eal:warning"]
    if hugepages:
        args += ["-m", str(mem_mb)]
    else:
        # --no-huge implies legacy memory, which --in-memory refuses: a unique file prefix
        # keeps concurrent runs apart instead.
        args += ["--no-huge", "-m", str(mem_mb)]
    for v in vdevs:
        args += ["--vdev", v]
    return args


def start(eal, app, stdout=subprocess.PIPE, stderr=subprocess.PIPE):
    # Tests run side by side: without agent options of its own, a gateway would take the
    # default agent socket (and state file) that another test's gateway holds.
    if not any(a.startswith("--agent") or a == "--no-agent" for a in app):
        app = app + ["--no-agent"]
    cmd = [BIN] + eal + ["--"] + app
    print("+ " + " ".join(cmd), flush=True)
    p = subprocess.Popen(cmd, stdout=stdout, stderr=stderr, text=True)
    _procs.append(p)
    return p


def run(eal, app, timeout=60):
    p = start(eal, app)
    try:
        out, err = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        p.kill()
        out, err = p.communicate()
        print(out, err)
        fail(f"gateway did not exit within {timeout} s")
    return p.returncode, out, err


def wait_for_file(path, timeout):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if os.path.exists(path):
            return True
        time.sleep(0.05)
    return False


def telemetry_socket(prefix):
    return os.path.join(runtime_dir(prefix), "dpdk_telemetry.v2")


def telemetry_query(prefix, command, timeout=5.0):
    """One DPDK telemetry command over the v2 socket (what dpdk-telemetry.py does);
    returns the decoded reply value, or None when the gateway does not answer."""
    import json
    import socket
    path = telemetry_socket(prefix)
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET) as s:
            s.settimeout(timeout)
            s.connect(path)
            s.recv(1024)  # greeting: version, pid, max output length
            s.send(command.encode())
            reply = json.loads(s.recv(1 << 20).decode())
            return reply.get(command.split(",")[0])
    except (OSError, ValueError):
        return None


def wait_forwarding(prefix, timeout=30):
    """True once the gateway's workers have received packets. The telemetry socket appears
    during EAL init, before ports, pdump and workers are up: secondary processes such as
    dpdk-dumpcap must not attach before this."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        stats = telemetry_query(prefix, "/srv6gw/stats")
        if isinstance(stats, dict) and (stats.get("rx_host", 0) or stats.get("rx_fabric", 0)):
            return True
        time.sleep(0.1)
    return False


def tshark_fields(pcap, fields, display_filter=None):
    """One list of field values per frame (multi-valued fields joined by ',')."""
    cmd = ["tshark", "-r", pcap, "-T", "fields", "-E", "occurrence=a", "-E", "aggregator=,"]
    if display_filter:
        cmd += ["-Y", display_filter]
    for f in fields:
        cmd += ["-e", f]
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    if res.returncode != 0:
        fail(f"tshark failed on {pcap}: {res.stderr}")
    rows = []
    for line in res.stdout.splitlines():
        rows.append(line.split("\t"))
    return rows


def pcap_count(pcap):
    return len(tshark_fields(pcap, ["frame.number"]))


def start_logged(name, work, eal, app, enter=None, timeout=30):
    """Starts the daemon with stdout and stderr in files of `work` (<name>-stdout.txt,
    <name>-stderr.txt), inside `enter` when given (a context manager such as
    netns_lib.open_in_netns(ns): the process is created there, where its net_af_packet vdevs
    find their interfaces), and waits until its worker polls. Fails with the daemon's stderr
    if it does not get there within `timeout` s. Returns {"p", "err", "out"}."""
    import contextlib
    err_path = os.path.join(work, f"{name}-stderr.txt")
    out_path = os.path.join(work, f"{name}-stdout.txt")
    err_f, out_f = open(err_path, "w"), open(out_path, "w")
    with enter if enter is not None else contextlib.nullcontext():
        p = start(eal, app, stdout=out_f, stderr=err_f)
    err_f.close()
    out_f.close()
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with open(err_path) as f:
            err = f.read()
        if "worker 0 on lcore" in err:
            time.sleep(0.3)  # the worker's first RX burst
            return {"p": p, "err": err_path, "out": out_path}
        if p.poll() is not None:
            break
        time.sleep(0.1)
    with open(err_path) as f:
        fail(f"gateway {name} did not start (exit code {p.poll()}):\n{f.read()[-3000:]}")


def stop_checked(g, stats_json, timeout=20):
    """SIGTERM to a start_logged() daemon; fails unless it exits 0 within `timeout` s.
    Returns (its --stats-json document, stdout, stderr)."""
    g["p"].send_signal(signal.SIGTERM)
    try:
        rc = g["p"].wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        g["p"].kill()
        g["p"].wait()
        fail(f"a gateway did not stop within {timeout} s of SIGTERM")
    with open(g["err"]) as f:
        err = f.read()
    with open(g["out"]) as f:
        out = f.read()
    if rc != 0:
        fail(f"gateway exit code {rc}:\n{err[-3000:]}")
    with open(stats_json) as f:
        return json.load(f), out, err


def start_on_interfaces(name, work, enter, config, ifaces, eal_extra=(), app_extra=(),
                        lcores=None, qpairs=1, timeout=30):
    """The daemon on Linux interfaces, as the kernel-peer tests run it: one net_af_packet
    vdev per name of `ifaces`, in order (net_af_packet0, 1, ...: host, fabric, the next
    rail's host, ...), started inside `enter` (netns_lib.open_in_netns(ns), where the
    interfaces are). Writes `config` to <work>/<name>.json, the stats to
    <work>/<name>-stats.json. `qpairs`: queues of each port (the configuration's must
    match). `lcores` replaces "-l 0-1" with "--lcores LCORES"; `eal_extra`
    and `app_extra` are added to the EAL and the daemon's arguments. Returns start_logged()'s
    dict with "stats", "config" and "prefix" (the EAL file prefix) added; stop it with
    stop_checked(g, g["stats"])."""
    cfg_path = os.path.join(work, f"{name}.json")
    with open(cfg_path, "w") as f:
        json.dump(config, f, indent=2)
    stats = os.path.join(work, f"{name}-stats.json")
    prefix = unique_prefix(name.replace("-", "_"))
    eal = eal_args(prefix, [f"net_af_packet{i},iface={iface},qpairs={qpairs}"
                            for i, iface in enumerate(ifaces)])
    if lcores is not None:
        at = eal.index("-l")
        eal[at:at + 2] = ["--lcores", lcores]
    eal += list(eal_extra)
    g = start_logged(name, work, eal, ["--config", cfg_path, "--stats-json", stats] +
                     list(app_extra), enter=enter, timeout=timeout)
    g.update({"stats": stats, "config": cfg_path, "prefix": prefix})
    return g


CTL = os.environ.get("SRV6GW_CTL") or os.path.join(os.path.dirname(BIN), "..", "srv6gw-ctl",
                                                    "srv6gw-ctl")


def write_roce_writes_pcap(path, dst="10.0.8.7", count=64):
    """`count` RoCEv2 RDMA WRITE middle frames 10.0.0.1 -> `dst` (DestQP 0x4D2, one QP, PSNs
    0..count-1, 64 B payload) from the host RNIC's MAC to the gateway's host port: the host
    traffic of the daemon tests that spray one flow over a policy's lists."""
    import struct
    try:
        from scapy.all import IP, UDP, Ether, Raw, wrpcap
    except ImportError:
        skip("python3-scapy is not installed")

    def bth(psn):
        return struct.pack("!BBHB", 0x04, 0x40, 0xFFFF, 0) + (0x4D2).to_bytes(3, "big") + \
            bytes([0x80]) + psn.to_bytes(3, "big")
    wrpcap(path, [Ether(src="02:00:00:00:00:01", dst="02:00:00:00:01:01") /
                  IP(src="10.0.0.1", dst=dst, ttl=64) /
                  UDP(sport=49153, dport=4791, chksum=0) / Raw(bth(psn) + bytes(64) + bytes(4))
                  for psn in range(count)])


class AgentGateway:
    """The daemon with its gRPC agent on a unix socket, host port replaying `host_pcap`
    forever, fabric port net_null; its output is collected; ctl() runs srv6gw-ctl."""

    def __init__(self, name, work, config, host_pcap, agent_state="none"):
        import threading
        self.name = name
        self.sock = os.path.join(work, f"{name}.sock")
        self.stats_json = os.path.join(work, f"{name}-stats.json")
        eal = eal_args(unique_prefix(name), [
            f"net_pcap0,rx_pcap={host_pcap},infinite_rx=1", "net_null0,no-rx=1"])
        self.proc = start(eal, [
            "--config", config, "--host-port", "net_pcap0", "--fabric-port", "net_null0",
            "--stats-interval", "0", "--stats-json", self.stats_json,
            "--agent-listen", "unix:" + self.sock, "--agent-state", agent_state],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        self.log = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        deadline = time.time() + 30
        while time.time() < deadline:
            if self.proc.poll() is not None:
                self._reader.join(5)
                self.fail(f"gateway exited with {self.proc.returncode} at start")
            if os.path.exists(self.sock) and \
                    self.ctl("health", expect=None).stdout.strip() == "SERVING":
                return
            time.sleep(0.05)
        self.fail("agent not SERVING within 30 s")

    def _read(self):
        for line in self.proc.stdout:
            self.log.append(line)

    def fail(self, msg):
        print("".join(self.log[-60:]), flush=True)
        fail(f"{self.name}: {msg}")

    def ctl(self, *args, expect=0):
        r = subprocess.run([CTL, "--socket", self.sock, "--timeout", "10"] + list(args),
                           capture_output=True, text=True, timeout=60)
        if expect is not None and r.returncode != expect:
            self.fail(f"srv6gw-ctl {' '.join(args)}: exit {r.returncode} (expected {expect})\n"
                      f"stdout: {r.stdout}\nstderr: {r.stderr}")
        return r

    def stop(self):
        """SIGTERM; fails unless the daemon exits 0 within 20 s. Returns its stats JSON."""
        self.proc.send_signal(signal.SIGTERM)
        try:
            rc = self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.fail("did not exit within 20 s of SIGTERM")
        self._reader.join(5)
        if rc != 0:
            self.fail(f"exit code {rc}")
        with open(self.stats_json) as f:
            import json
            return json.load(f)
