#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
# srv6gw-pcap writes what the gateway writes (issue 18): with engine/path-id-in-source and
# engine/source-entropy-bits 8 on, the gateway (net_pcap) encapsulates 48 RoCEv2 flows over two
# policies, one without an SRH (H.Encaps.Red, one SID: the path id rides in the source) and
# one with (H.Encaps, two SIDs: the path id in the SRH Tag); srv6gw-pcap encap with
# --path-id-in-source --source-entropy-bits 8 and the same SIDs, source, mode and tag gives
# byte-for-byte the same frames. The flows' outer sources must differ (the entropy is there,
# so the comparison can fail when the tool ignores it).
# Usage: test_pcap_matches_gateway.py SRV6GW_PCAP
import json
import os
import subprocess
import sys

sys.dont_write_bytecode = True  # keep the source tree clean
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "oracle"))
import gwlib  # noqa: E402

try:
    import roce_lib as rl  # noqa: E402
    from scapy.all import Ether, IPv6, rdpcap, wrpcap  # noqa: E402
except ImportError:
    gwlib.skip("python3-scapy is not installed")

PCAP_TOOL = sys.argv[1]
SOURCE, BITS = "fc00:a::", 8
NEXTHOP = "02:00:00:00:03:03"
POLICIES = {  # steered prefix -> (policy, mode, SIDs, path id)
    "10.0.1.0/24": ("no-srh", "encaps-red", ["fc00:1::d4"], 7),
    "10.0.2.0/24": ("srh", "encaps", ["fc00:2::1", "fc00:3::d4"], 9),
}
FLOWS = 24  # per policy


def main():
    work = gwlib.workdir("pcap-matches-gateway")
    inputs = {}
    for prefix in POLICIES:
        net = prefix.rsplit(".", 1)[0]
        inputs[prefix] = [rl.frame(rl.roce_ip_packet(4, "10.0.0.1", f"{net}.{1 + i % 5}",
                                                     rl.OP_SEND_ONLY, qp=0x100 + i, psn=i,
                                                     tos=26 << 2 | 2, sport=49152 + 7 * i))
                          for i in range(FLOWS)]
    host_in = os.path.join(work, "host-in.pcap")
    wrpcap(host_in, [Ether(f) for fs in inputs.values() for f in fs])
    cfg = {"srv6gw:gateway": {
        "ports": {"host": "net_pcap0", "fabric": "net_pcap1", "mbufs": 4095,
                  "fabric-nexthop-mac": NEXTHOP},
        "source-address": SOURCE,
        "engine": {"path-id-in-source": True, "source-entropy-bits": BITS},
        "stats-interval-ms": 0,
        "policies": {"policy": [
            {"name": name, "encap": mode,
             "segment-list": [{"name": "l", "path-id": pid, "sid": sids}]}
            for name, mode, sids, pid in POLICIES.values()]},
        "steering": {"rule": [{"id": i + 1, "prefix": prefix, "policy": p[0]}
                              for i, (prefix, p) in enumerate(POLICIES.items())]},
    }}
    cfg_path = os.path.join(work, "gateway.json")
    with open(cfg_path, "w") as f:
        json.dump(cfg, f)
    empty = os.path.join(work, "empty.pcap")
    wrpcap(empty, [])
    fab_out = os.path.join(work, "fabric-out.pcap")
    eal = gwlib.eal_args(gwlib.unique_prefix("pcap_matches"),
                         [f"net_pcap0,rx_pcap={host_in},tx_pcap={work}/host-out.pcap",
                          f"net_pcap1,rx_pcap={empty},tx_pcap={fab_out}"])
    rc, _, err = gwlib.run(eal, ["--config", cfg_path, "--until-idle", "300"], timeout=120)
    gwlib.check(rc == 0, f"gateway exit code {rc}:\n{err[-2000:]}")
    gateway = [bytes(p) for p in rdpcap(fab_out)]
    gwlib.check(len(gateway) == 2 * FLOWS, f"gateway sent {len(gateway)} frames")
    src_mac = ":".join(f"{b:02x}" for b in gateway[0][6:12])

    tool = []
    for prefix, (name, mode, sids, pid) in POLICIES.items():
        tin, tout = os.path.join(work, f"{name}-in.pcap"), os.path.join(work, f"{name}-out.pcap")
        wrpcap(tin, [Ether(f) for f in inputs[prefix]])
        r = subprocess.run([PCAP_TOOL, "encap", "--in", tin, "--out", tout, "--sids",
                            ",".join(sids), "--source", SOURCE, "--mode", mode, "--tag", str(pid),
                            "--path-id-in-source", "--source-entropy-bits", str(BITS),
                            "--dst-mac", NEXTHOP, "--src-mac", src_mac],
                           capture_output=True, text=True, timeout=60)
        gwlib.check(r.returncode == 0, f"srv6gw-pcap ({name}): {r.returncode}\n{r.stderr}")
        print(r.stdout.strip())
        tool += [bytes(p) for p in rdpcap(tout)]
    for i, (g, t) in enumerate(zip(gateway, tool)):
        gwlib.check(g == t, f"frame {i}: gateway and srv6gw-pcap differ:\n  gateway "
                            f"{g[:80].hex()}\n  tool    {t[:80].hex()}")
    gwlib.check(len(tool) == len(gateway), f"srv6gw-pcap wrote {len(tool)} frames")
    sources = {IPv6(g[14:]).src for g in gateway}
    gwlib.check(len(sources) > FLOWS // 2, f"only {len(sources)} outer sources: no entropy?")
    no_srh_tags = {IPv6(g[14:]).src.split(":")[-1] for g in gateway[:FLOWS]}
    gwlib.check(no_srh_tags == {"7"}, f"path id in the source of the SRH-less frames: "
                                      f"{no_srh_tags}")
    print(f"pcap-matches-gateway: {len(gateway)} frames byte-identical, {len(sources)} outer "
          f"sources, path id 7 in the source without an SRH: OK")


main()
