#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
# Oracle: the encapsulation of segment lists srv6gw-plan generates is byte for byte what
# srv6gw-pcap (the gateway's packet core, offline) writes for the same SIDs, source and path
# id, in every encap mode; and the SIDs of the --headers listing are those of the Apply JSON.
# Usage: pcap_oracle.py SRV6GW_PLAN SRV6GW_PCAP TOPOLOGY
import json
import os
import subprocess
import sys
import tempfile

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                "integration"))
import gwlib  # noqa: E402

try:
    from scapy.all import rdpcap
except ImportError:
    gwlib.skip("python3-scapy is not installed")

plan, pcap_tool, topology = sys.argv[1:4]
work = tempfile.mkdtemp(prefix="pathalg-pcap-")
host_in = os.path.join(work, "in.pcap")
gwlib.write_roce_writes_pcap(host_in, dst="10.0.0.100", count=1)
SOURCE = "fc00:0:1000::1"  # h0's gateway in the generated addressing
checked = 0
for mode in ("usid", "encaps", "encaps-red"):
    lines = subprocess.run([plan, topology, "--gateway", "h0", "--encap", mode, "--headers", "-q"],
                           capture_output=True, text=True, check=True).stdout.splitlines()
    apply = json.loads(subprocess.run([plan, topology, "--gateway", "h0", "--encap", mode, "-q"],
                                      capture_output=True, text=True, check=True).stdout)
    sids_by_id = {sl["path_id"]: sl["sids"] for c in apply["changes"] if "upsert_policy" in c
                  for sl in c["upsert_policy"]["segment_lists"]}
    if len(lines) != len(sids_by_id):
        gwlib.fail(f"{mode}: {len(lines)} header lines, {len(sids_by_id)} lists in the Apply")
    # A same-leaf list, multi-spine lists, a backup (longest), spread over the destinations.
    picks = [lines[0]] + lines[len(lines) // 3::max(1, len(lines) // 7)]
    picks.append(max(lines, key=lambda l: l.split()[3].count(",")))
    for line in picks:
        policy, name, path_id, sids, hexbytes = line.split()
        if sids.split(",") != sids_by_id[int(path_id)]:
            gwlib.fail(f"{mode} {policy}/{name}: --headers SIDs {sids} differ from the Apply's")
        out = os.path.join(work, f"out-{mode}-{path_id}.pcap")
        cmd = [pcap_tool, "encap", "--in", host_in, "--out", out, "--sids", sids,
               "--source", SOURCE, "--mode", mode, "--tag", path_id]
        if mode == "usid":
            cmd += ["--usid-block", "32", "--usid-len", "16"]
        r = subprocess.run(cmd, capture_output=True, text=True)
        if r.returncode != 0:
            gwlib.fail(f"srv6gw-pcap {' '.join(cmd)}: {r.stderr}")
        frames = rdpcap(out)
        if len(frames) != 1:
            gwlib.fail(f"srv6gw-pcap wrote {len(frames)} frames")
        ours = bytes.fromhex(hexbytes)
        theirs = bytes(frames[0])[14:14 + len(ours)]
        # Bytes 0..5 (traffic class, flow label, payload length) are per packet.
        if ours[6:] != theirs[6:]:
            gwlib.fail(f"{mode} {policy}/{name} ({sids}): header differs\n"
                       f"plan {ours.hex()}\npcap {theirs.hex()}")
        checked += 1
        print(f"ok {mode} {policy}/{name} path {path_id}: {len(ours)} header bytes equal")
print(f"{checked} segment lists: srv6gw-plan's headers equal srv6gw-pcap's")
