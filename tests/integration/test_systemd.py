#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
# issue 19, acceptance 2: dist/systemd/srv6gw.service passes `systemd-analyze verify` (with
# the binaries of this build in place of the installed ones), and the daemon, started with
# NOTIFY_SOCKET on a socket this test listens on and a watchdog period, sends READY=1 once it
# forwards, WATCHDOG=1 from its control loop, and STOPPING=1 when told to stop.
import os
import socket
import subprocess
import time

import gwlib

gwlib.need_tools("systemd-analyze")
work = gwlib.workdir("systemd")

with open(os.path.join(gwlib.SRC, "dist", "systemd", "srv6gw.service")) as f:
    unit = f.read()
for installed, here in (("/usr/bin/srv6gw", gwlib.BIN),
                        ("/usr/libexec/srv6gw/srv6gw-hugepages",
                         os.path.join(gwlib.SRC, "dist", "srv6gw-hugepages"))):
    gwlib.check(installed in unit, f"{installed} not in the unit")
    unit = unit.replace(installed, here)
unit_path = os.path.join(work, "srv6gw.service")
with open(unit_path, "w") as f:
    f.write(unit)
# --man=no: the man page is checked where it is installed (the package test).
res = subprocess.run(["systemd-analyze", "verify", "--man=no", unit_path], capture_output=True,
                     text=True, timeout=60)
gwlib.check(res.returncode == 0 and not (res.stdout + res.stderr).strip(),
            f"systemd-analyze verify: rc {res.returncode}: {res.stdout}{res.stderr}")
print("systemd-analyze verify: clean")

sock_path = os.path.join(work, "notify.sock")
sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
sock.bind(sock_path)
sock.settimeout(1.0)

prefix = gwlib.unique_prefix("systemd")
eal = gwlib.eal_args(prefix, [
    f"net_pcap0,rx_pcap={gwlib.DEMO_HOST_PCAP},infinite_rx=1",
    "net_null0,no-rx=1",
])
env = dict(os.environ, NOTIFY_SOCKET=sock_path, WATCHDOG_USEC="400000")
cmd = [gwlib.BIN] + eal + ["--", "--config", gwlib.DEMO_JSON, "--host-port", "net_pcap0",
                           "--fabric-port", "net_null0", "--stats-interval", "0",
                           "--duration", "60", "--no-agent"]
gw = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
gwlib._procs.append(gw)

messages = []


def receive_until(pred, timeout, what):
    deadline = time.time() + timeout
    while not pred():
        gwlib.check(time.time() < deadline, f"no {what} within {timeout} s: got {messages}")
        try:
            messages.append(sock.recv(4096).decode())
        except socket.timeout:
            gwlib.check(gw.poll() is None, f"gateway exited ({gw.returncode}) before {what}")


def count(word):
    return sum(m.split("\n").count(word) for m in messages)


receive_until(lambda: count("READY=1") == 1, 60, "READY=1")
ready = next(m for m in messages if "READY=1" in m)
gwlib.check("STATUS=forwarding net_pcap0 <-> net_null0" in ready, f"status: {ready}")
receive_until(lambda: count("WATCHDOG=1") >= 3, 30, "three WATCHDOG=1")
gw.terminate()
receive_until(lambda: count("STOPPING=1") == 1, 30, "STOPPING=1")
_, err = gw.communicate(timeout=30)
gwlib.check(gw.returncode == 0, f"gateway exit code {gw.returncode}: {err[-2000:]}")
gwlib.check(count("READY=1") == 1, f"READY=1 sent more than once: {messages}")
print(f"systemd: READY=1, {count('WATCHDOG=1')} x WATCHDOG=1, STOPPING=1 received")
