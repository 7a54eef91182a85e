#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
# Inputs of the callgrind A/B in docs/design/vlan-jumbo.md: pipeline-bench configurations
# without and with fabric-vlan (1 LPM rule, 4 segment lists of 3 SIDs, flow mode) and 512
# 1 KB RoCEv2 IPv4 frames per direction (fabric: H.Encaps to our End.DX4; also 802.1Q-tagged).
# Writes into the current directory.
import json
from scapy.all import IP, UDP, Dot1Q, Ether, IPv6, IPv6ExtHdrSegmentRouting, Raw, wrpcap
def cfg(vlan):
    g = {"ports": {"host": "h", "fabric": "f", "fabric-nexthop-mac": "02:00:00:00:03:03",
                   "host-mac": "02:00:00:00:04:04"},
         "source-address": "fc00:0:1::1",
         "policies": {"policy": [{"name": "p", "segment-list": [
             {"name": f"l{i}", "path-id": i + 1, "sid": ["fc00:0:2::1", f"fc00:0:{3+i}::1", "fc00:0:9::d4"]}
             for i in range(4)]}]},
         "steering": {"rule": [{"id": 1, "prefix": "10.0.0.0/8", "policy": "p"}]},
         "local-sids": {"local-sid": [{"sid": "fc00:0:1::d4", "behavior": "end-dx4"}]}}
    if vlan:
        g["ports"]["fabric-vlan"] = {"id": 100}
    return {"srv6gw:gateway": g}
json.dump(cfg(False), open("untagged.json", "w"))
json.dump(cfg(True), open("tagged.json", "w"))
host, fab = [], []
for i in range(512):
    bth = bytes([0x0A, 0, 0xFF, 0xFF, 0, 0, (i >> 8) & 0xFF, i & 0xFF, 0x80, 0, 0, i & 0xFF])
    ip = IP(src=f"10.0.{i % 64}.1", dst=f"10.1.{i % 32}.2", tos=(26 << 2) | 2) / UDP(sport=49152 + i % 97, dport=4791) / Raw(bth + bytes(1024 - 20 - 8 - 12 - 4) + b"\0\0\0\0")
    host.append(Ether(src="02:00:00:00:00:01", dst="02:00:00:00:00:02") / ip)
    fab.append(Ether(src="02:00:00:00:03:03", dst="02:00:00:00:00:09") / IPv6(src="fc00:0:9::1", dst="fc00:0:1::d4", nh=43) /
               IPv6ExtHdrSegmentRouting(addresses=["fc00:0:1::d4"], segleft=0, lastentry=0, nh=4) / ip)
wrpcap("host-1024.pcap", host)
wrpcap("fabric-1024.pcap", fab)
tagged = []
for p in fab:
    e = p[Ether]
    tagged.append(Ether(src=e.src, dst=e.dst) / Dot1Q(vlan=100, prio=3) / e.payload)
wrpcap("fabric-tagged-1024.pcap", tagged)
