#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
# (c) dpdk-dumpcap captures on a running gateway, with no preload or other trick: the
# gateway calls rte_pdump_init() and creates its pools with explicit "ring_mp_mc" ops (the
# packaged testpmd captures nothing here: DPDK bug 1073, mempool ops index mismatch).
# Captures the host port (RoCEv2 as the hosts send it) and the fabric port (our SRv6 output).
# Needs hugepages and root: dumpcap is a secondary process sharing the gateway's memory.
import atexit
import os
import shutil
import subprocess
import tempfile

import gwlib

gwlib.need_tools("dpdk-dumpcap", "tshark")
gwlib.need_hugepages(400)
work = gwlib.workdir("dumpcap")
prefix = gwlib.unique_prefix("dumpcap")
# DPDK 22.11 hands a vdev's arguments to secondary processes cut to 64 bytes
# (RTE_DEV_NAME_MAX_LEN): from a deep checkout, "infinite_rx=1" lost its value and
# dpdk-dumpcap crashed in net_pcap's argument parser. Keep the arguments short.
short_dir = tempfile.mkdtemp(prefix="sgd", dir="/tmp")
short_pcap = os.path.join(short_dir, "h.pcap")
shutil.copyfile(gwlib.DEMO_HOST_PCAP, short_pcap)
atexit.register(shutil.rmtree, short_dir, True)
eal = gwlib.eal_args(prefix, [
    f"net_pcap0,rx_pcap={short_pcap},infinite_rx=1",
    "net_null0,no-rx=1",
], hugepages=True, mem_mb=256)
p = gwlib.start(eal, ["--config", gwlib.DEMO_JSON, "--host-port", "net_pcap0",
                      "--fabric-port", "net_null0", "--stats-interval", "0", "--duration", "90"],
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
gwlib.check(gwlib.wait_for_file(gwlib.telemetry_socket(prefix), 30), "gateway did not start")
gwlib.check(gwlib.wait_forwarding(prefix, 30), "gateway did not start forwarding")

WANT = 200


def capture(port, name):
    out = f"{work}/{name}.pcapng"
    cmd = ["dpdk-dumpcap", f"--file-prefix={prefix}", "-i", port, "-c", str(WANT), "-a",
           "duration:30", "-w", out]
    print("+ " + " ".join(cmd), flush=True)
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=90)
    print(res.stdout[-500:], res.stderr[-1500:])
    gwlib.check(res.returncode == 0, f"dpdk-dumpcap on {port} exited {res.returncode}")
    rows = gwlib.tshark_fields(out, ["frame.protocols", "ipv6.routing.srh.tag", "ipv6.dst",
                                     "infiniband.bth.opcode"])
    gwlib.check(len(rows) >= WANT, f"{port}: captured {len(rows)} packets, wanted {WANT}")
    return rows


host_rows = capture("net_pcap0", "host")
roce = [r for r in host_rows if "infiniband" in r[0]]
gwlib.check(len(roce) >= WANT * 9 // 10, f"host capture: only {len(roce)} RoCE frames")
gwlib.check(not any("ipv6.routing" in r[0] for r in host_rows), "host side shows SRv6")

fabric_rows = capture("net_null0", "fabric")
srv6 = [r for r in fabric_rows if r[2].startswith("fc00:")]
with_srh = [r for r in fabric_rows if r[1]]
gwlib.check(len(srv6) >= WANT * 9 // 10,
            f"fabric capture: {len(srv6)} of {len(fabric_rows)} frames are SRv6-encapsulated")
gwlib.check(with_srh, "fabric capture: no frame with an SRH")
gwlib.check(all("infiniband" in r[0] for r in srv6), "fabric capture: inner RoCE not dissected")

p.terminate()
gwlib.check(p.wait(timeout=20) == 0, "gateway did not exit cleanly")
print(f"dumpcap: {len(host_rows)} host frames and {len(fabric_rows)} fabric frames captured "
      f"({len(with_srh)} with SRH)")
