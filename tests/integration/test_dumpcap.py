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
gw_log_path = os.path.join(work, "gateway.log")
gw_log = open(gw_log_path, "w")
p = gwlib.start(eal, ["--config", gwlib.DEMO_JSON, "--host-port", "net_pcap0",
                      "--fabric-port", "net_null0", "--stats-interval", "0", "--duration", "90"],
                stdout=gw_log, stderr=subprocess.STDOUT)


def gateway_alive(when):
    """Fails with the gateway's own output if it is no longer running."""
    if p.poll() is not None:
        gw_log.flush()
        with open(gw_log_path) as f:
            print(f.read()[-3000:])
        gwlib.check(False, f"the gateway exited ({p.returncode}) {when}")

gwlib.check(gwlib.wait_for_file(gwlib.telemetry_socket(prefix), 30), "gateway did not start")
gwlib.check(gwlib.wait_forwarding(prefix, 30), "gateway did not start forwarding")

WANT = 200


def capture(port, name):
    out = f"{work}/{name}.pcapng"
    cmd = ["dpdk-dumpcap", f"--file-prefix={prefix}", "-i", port, "-c", str(WANT), "-a",
           "duration:30", "-w", out]
    print("+ " + " ".join(cmd), flush=True)
    # A secondary process attaches to the primary's memory and multi-process socket; now and
    # then, on a busy machine, that attach fails inside dpdk-dumpcap's EAL init (its address
    # space already holds something where the primary's memory is, or the request to the
    # primary fails) while the gateway runs on unharmed. That is retried, twice at most and
    # said so; a gateway that stopped or a capture that ran and came back short is not.
    for attempt in range(3):
        gateway_alive(f"before the capture on {port}")
        res = subprocess.run(cmd, capture_output=True, text=True, timeout=90)
        print(res.stdout[-500:], res.stderr[-1500:])
        gateway_alive(f"during the capture on {port}")
        attach_failed = res.returncode != 0 and "Packets captured" not in res.stdout and any(
            m in res.stderr for m in ("EAL: Error - exiting", "Cannot init memory",
                                      "Failed to request vdev", "Cannot reserve"))
        if not attach_failed:
            break
        print(f"dpdk-dumpcap could not attach to the gateway (attempt {attempt + 1}); "
              "the gateway is still running: retrying", flush=True)
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
