# SPDX-License-Identifier: BSD-3-Clause
# Network-namespace chains for the interop suite: namespaces joined by veth pairs, static
# neighbours (no ARP/ND races), raw AF_PACKET sockets opened inside a namespace, and cleanup
# that runs however the test ends. Namespace names carry the PID so parallel runs never meet.
import atexit
import ctypes
import json
import os
import signal
import socket
import subprocess
import sys
import time

sys.dont_write_bytecode = True  # keep the source tree clean
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "oracle"))
import roce_lib as rl  # noqa: E402

SKIP = 77
CLONE_NEWNET = 0x40000000
ETH_P_ALL = 0x0003
PACKET_OUTGOING = 4

_libc = ctypes.CDLL(None, use_errno=True)


def skip(reason):
    print(f"SKIP: {reason}", flush=True)
    sys.exit(SKIP)


def sh(cmd, check=True):
    """Runs a command (list or string); on failure raises CheckFailed with its output."""
    if isinstance(cmd, str):
        cmd = cmd.split()
    r = subprocess.run(cmd, capture_output=True, text=True)
    if check and r.returncode != 0:
        rl.fail(f"command failed ({r.returncode}): {' '.join(cmd)}\n{r.stderr.strip()}")
    return r


def require_root_and_netns():
    if os.geteuid() != 0:
        skip("needs root (network namespaces, veth, seg6local routes)")
    probe = f"s6probe{os.getpid()}"
    r = subprocess.run(["ip", "netns", "add", probe], capture_output=True, text=True)
    if r.returncode != 0:
        skip(f"cannot create a network namespace: {r.stderr.strip()}")
    subprocess.run(["ip", "netns", "del", probe], capture_output=True)


class Chain:
    """Namespaces ns[0] - ns[1] - ... - ns[n-1]. In namespace k the interface toward k-1 is
    'lft0' and toward k+1 is 'rgt0'. Link k (between k and k+1) has fc00:f<k>::1/64 and
    10.(100+k).0.1/24 on the left end, ::2 and .2 on the right end."""

    def __init__(self, roles):
        self.pid = os.getpid()
        self.roles = roles
        self.ns = {role: f"s6{role}{self.pid}" for role in roles}
        self.created = []
        atexit.register(self.cleanup)
        for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            signal.signal(sig, self._on_signal)
        for role in roles:
            sh(["ip", "netns", "add", self.ns[role]])
            self.created.append(self.ns[role])
            self.ip(role, "link set lo up")
            # No duplicate-address detection: addresses are usable at once.
            self.sysctl(role, "net.ipv6.conf.default.accept_dad", 0)
            self.sysctl(role, "net.ipv6.conf.all.accept_dad", 0)
        for k in range(len(roles) - 1):
            left, right = roles[k], roles[k + 1]
            sh(["ip", "-n", self.ns[left], "link", "add", "rgt0", "type", "veth", "peer", "name",
                "lft0", "netns", self.ns[right]])
            self.ip(left, "link set dev rgt0 up")
            self.ip(right, "link set dev lft0 up")
            self.ip(left, f"-6 addr add fc00:f{k}::1/64 dev rgt0 nodad")
            self.ip(right, f"-6 addr add fc00:f{k}::2/64 dev lft0 nodad")
            self.ip(left, f"addr add 10.{100 + k}.0.1/24 dev rgt0")
            self.ip(right, f"addr add 10.{100 + k}.0.2/24 dev lft0")
        # Static neighbours on every link: the first packet is never queued behind ARP/ND.
        for k in range(len(roles) - 1):
            left, right = roles[k], roles[k + 1]
            lmac, rmac = self.mac(left, "rgt0"), self.mac(right, "lft0")
            self.neigh(left, "rgt0", f"fc00:f{k}::2", rmac)
            self.neigh(left, "rgt0", f"10.{100 + k}.0.2", rmac)
            self.neigh(right, "lft0", f"fc00:f{k}::1", lmac)
            self.neigh(right, "lft0", f"10.{100 + k}.0.1", lmac)

    def _on_signal(self, signum, _frame):
        if signum == signal.SIGTERM:  # meson's timeout: say where the test hung
            rl.report_hang(signum)
        self.cleanup()
        sys.exit(128 + signum)

    def cleanup(self):
        while self.created:
            ns = self.created.pop()
            subprocess.run(["ip", "netns", "del", ns], capture_output=True)

    def ip(self, role, args, check=True):
        return sh(["ip", "-n", self.ns[role]] + args.split(), check=check)

    def sysctl(self, role, key, value):
        sh(["ip", "netns", "exec", self.ns[role], "sysctl", "-qw", f"{key}={value}"])

    def mac(self, role, dev):
        r = self.ip(role, f"-j link show dev {dev}")
        return json.loads(r.stdout)[0]["address"]

    def neigh(self, role, dev, addr, mac):
        self.ip(role, f"neigh replace {addr} lladdr {mac} dev {dev} nud permanent")

    def forwarding(self, role):
        for key, value in (("net.ipv4.ip_forward", 1), ("net.ipv6.conf.all.forwarding", 1),
                           ("net.ipv4.conf.all.rp_filter", 0),
                           ("net.ipv4.conf.default.rp_filter", 0),
                           ("net.ipv6.conf.all.seg6_enabled", 1),
                           ("net.ipv6.conf.default.seg6_enabled", 1)):
            self.sysctl(role, key, value)
        for dev in ("lft0", "rgt0"):
            r = sh(["ip", "-n", self.ns[role], "link", "show", dev], check=False)
            if r.returncode == 0:
                self.sysctl(role, f"net.ipv4.conf.{dev}.rp_filter", 0)
                self.sysctl(role, f"net.ipv6.conf.{dev}.seg6_enabled", 1)

    def route_packets(self, role, prefix):
        """Packets counted by a seg6local route created with 'count' (ip -s)."""
        r = self.ip(role, f"-s -6 route show {prefix}")
        words = r.stdout.split()
        for i, w in enumerate(words):
            if w == "packets" and i + 1 < len(words):
                return int(words[i + 1])
        rl.fail(f"no packet counter on route {prefix} in {role}:\n{r.stdout}")


class open_in_netns:
    """Context: the calling thread enters a namespace and comes back on exit. Sockets opened
    inside stay in that namespace."""

    def __init__(self, ns_name):
        self.path = f"/var/run/netns/{ns_name}"

    def __enter__(self):
        self.home = os.open("/proc/thread-self/ns/net", os.O_RDONLY)
        fd = os.open(self.path, os.O_RDONLY)
        try:
            if _libc.setns(fd, CLONE_NEWNET) != 0:
                rl.fail(f"setns {self.path}: {os.strerror(ctypes.get_errno())}")
        finally:
            os.close(fd)
        return self

    def __exit__(self, *exc):
        try:
            if _libc.setns(self.home, CLONE_NEWNET) != 0:
                raise OSError(ctypes.get_errno(), "setns back home")
        finally:
            os.close(self.home)


def packet_socket(ns_name, dev):
    with open_in_netns(ns_name):
        s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
        s.bind((dev, ETH_P_ALL))
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
    return s


def drain(sock):
    sock.setblocking(False)
    try:
        while True:
            sock.recv(65535)
    except BlockingIOError:
        pass
    sock.setblocking(True)


def capture(sock, want, match, timeout=5.0):
    """Incoming frames for which match(frame) is true, until `want` of them or timeout."""
    got = []
    deadline = time.monotonic() + timeout
    while len(got) < want:
        left = deadline - time.monotonic()
        if left <= 0:
            break
        sock.settimeout(left)
        try:
            data, addr = sock.recvfrom(65535)
        except socket.timeout:
            break
        if addr[2] == PACKET_OUTGOING:
            continue
        if match(data):
            got.append(data)
    # A little longer: anything extra (duplicates) must be noticed too.
    sock.settimeout(0.2)
    try:
        while True:
            data, addr = sock.recvfrom(65535)
            if addr[2] != PACKET_OUTGOING and match(data):
                got.append(data)
    except socket.timeout:
        pass
    return got


def is_roce_ip(ip: bytes) -> bool:
    """An IPv4/IPv6 packet (no extension headers) carrying UDP to 4791."""
    if not ip:
        return False
    if ip[0] >> 4 == 4 and len(ip) >= 28:
        ihl = (ip[0] & 0xF) * 4
        return ip[9] == 17 and int.from_bytes(ip[ihl + 2:ihl + 4], "big") == rl.ROCE_PORT
    if ip[0] >> 4 == 6 and len(ip) >= 48:
        return ip[6] == 17 and int.from_bytes(ip[42:44], "big") == rl.ROCE_PORT
    return False


def plain_roce_frame(frame: bytes) -> bool:
    et = frame[12:14]
    return et in (b"\x08\x00", b"\x86\xdd") and is_roce_ip(frame[14:])


def same_modulo_ttl(sent: bytes, got: bytes, hops: int):
    """None when `got` is `sent` forwarded `hops` times (TTL/hop limit lowered, IPv4 checksum
    redone), else a description of the difference."""
    if len(sent) != len(got):
        return rl.hexdiff(sent, got, "sent", "received")
    a, b = bytearray(sent), bytearray(got)
    if sent[0] >> 4 == 4:
        ttl_at, mask = 8, (8, 10, 11)
    else:
        ttl_at, mask = 7, (7,)
    if a[ttl_at] - b[ttl_at] != hops:
        return f"TTL/hop limit {a[ttl_at]} -> {b[ttl_at]}, expected a decrement of {hops}"
    if sent[0] >> 4 == 4:
        from scapy.all import IP
        p = IP(bytes(b))
        cs = p.chksum
        del p.chksum
        if IP(bytes(p)).chksum != cs:
            return "IPv4 header checksum wrong after forwarding"
    for i in mask:
        a[i] = b[i] = 0
    if a != b:
        return rl.hexdiff(bytes(a), bytes(b), "sent", "received")
    return None
