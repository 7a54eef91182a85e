#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
# Jumbo frames through the daemon on net_pcap (issue 18, acceptance 3). With host-mtu 9000 and
# fabric-mtu 9100, 9000-byte RoCEv2 IP packets go through encapsulation and decapsulation
# byte-exact. The packet mbufs hold 4736 B after the headroom, so net_pcap delivers every
# such frame as a chain of two segments (eth_pcap_rx_jumbo): each one is a chained input.
# One host packet above the host MTU and one fabric packet whose outer IPv6 packet exceeds the
# fabric MTU are dropped as too_big. Both output pcaps must hold exactly what the packets
# become, read back from chained mbufs by net_pcap's TX (multi-segment TX).
import json
import logging
import os

import gwlib

logging.getLogger("scapy.runtime").setLevel(logging.ERROR)
from scapy.all import IP, UDP, Ether, IPv6, IPv6ExtHdrSegmentRouting, Raw, rdpcap, wrpcap  # noqa: E402

gwlib.need_tools()
work = gwlib.workdir("jumbo")
prefix = gwlib.unique_prefix("jumbo")

HOST_MAC = "02:00:00:00:04:04"
NEXTHOP_MAC = "02:00:00:00:03:03"
SID = "fc00:0:2::1"          # the policy's one SID (H.Encaps: an SRH of one entry)
OUR_DX4 = "fc00:0:1::d4"     # our End.DX4 local SID
SOURCE = "fc00:0:1::1"
HOST_MTU, FABRIC_MTU = 9000, 9100
ENCAP = 40 + 8 + 16          # outer IPv6 + SRH with one SID


def roce_ip(ip_len, seq, src="10.0.0.1", dst="10.0.1.1"):
    """An IPv4 RoCEv2 RDMA WRITE-only packet of ip_len bytes (BTH, payload, zero ICRC)."""
    payload_len = ip_len - 20 - 8 - 12 - 4
    bth = bytes([0x0A, 0x00, 0xFF, 0xFF, 0x00, 0x00, 0x01, 0x23, 0x80]) + seq.to_bytes(3, "big")
    payload = bytes((seq + i * 7) & 0xFF for i in range(payload_len))
    pkt = IP(src=src, dst=dst, tos=26 << 2, flags="DF") / UDP(sport=49152 + seq, dport=4791) / \
        Raw(bth + payload + b"\0\0\0\0")
    raw = bytes(pkt)
    assert len(raw) == ip_len, len(raw)
    return raw


config = {"srv6gw:gateway": {
    "ports": {"host": "net_pcap0", "fabric": "net_pcap1", "queues": 1, "mbufs": 4095,
              "fabric-nexthop-mac": NEXTHOP_MAC, "host-mac": HOST_MAC,
              "host-mtu": HOST_MTU, "fabric-mtu": FABRIC_MTU},
    "source-address": SOURCE,
    "actions": {"steering-miss": "drop", "non-roce": "drop", "fabric-non-sid": "drop"},
    "stats-interval-ms": 0,
    "policies": {"policy": [{"name": "jumbo", "encap": "encaps", "segment-list": [
        {"name": "one", "path-id": 5, "sid": [SID]}]}]},
    "steering": {"rule": [{"id": 1, "prefix": "10.0.1.0/24", "policy": "jumbo"}]},
    "local-sids": {"local-sid": [{"sid": OUR_DX4, "behavior": "end-dx4"}]},
}}
cfg_path = os.path.join(work, "jumbo.json")
with open(cfg_path, "w") as f:
    json.dump(config, f)

# Host side: four 9000-byte packets (the host MTU), one of 9001 (too_big).
host_ips = [roce_ip(HOST_MTU, seq) for seq in range(4)]
host_in = [Ether(src="02:00:00:00:00:01", dst="02:00:00:00:00:02") / IP(ip) for ip in host_ips]
host_in.append(Ether(src="02:00:00:00:00:01", dst="02:00:00:00:00:02") /
               IP(roce_ip(HOST_MTU + 1, 9)))
# Fabric side: four encapsulated 9000-byte packets to our End.DX4 SID (outer 9064 bytes), one
# whose outer packet is 9101 bytes (above the fabric MTU: too_big).
fab_ips = [roce_ip(HOST_MTU, 100 + seq, src="10.0.1.1", dst="10.0.0.1") for seq in range(4)]


def fabric_frame(inner):
    return (Ether(src=NEXTHOP_MAC, dst="02:00:00:00:00:09") /
            IPv6(src="fc00:0:9::1", dst=OUR_DX4, nh=43, hlim=60) /
            IPv6ExtHdrSegmentRouting(addresses=[OUR_DX4], segleft=0, lastentry=0, nh=4) /
            IP(inner))


fab_in = [fabric_frame(ip) for ip in fab_ips]
fab_in.append(fabric_frame(roce_ip(FABRIC_MTU + 1 - ENCAP, 200, src="10.0.1.1", dst="10.0.0.1")))
assert len(bytes(fab_in[0])) == 14 + ENCAP + HOST_MTU
host_pcap, fab_pcap = os.path.join(work, "host-in.pcap"), os.path.join(work, "fabric-in.pcap")
host_out, fab_out = os.path.join(work, "host-out.pcap"), os.path.join(work, "fabric-out.pcap")
wrpcap(host_pcap, host_in)
wrpcap(fab_pcap, fab_in)

stats_json = os.path.join(work, "stats.json")
eal = gwlib.eal_args(prefix, [f"net_pcap0,rx_pcap={host_pcap},tx_pcap={host_out}",
                              f"net_pcap1,rx_pcap={fab_pcap},tx_pcap={fab_out}"])
rc, so, se = gwlib.run(eal, ["--config", cfg_path, "--until-idle", "300",
                             "--stats-json", stats_json], timeout=120)
print(se[-1500:])
gwlib.check(rc == 0, f"exit code {rc}")
with open(stats_json) as f:
    tot = json.load(f)["total"]

# Encapsulated: the outer header as configured, the inner packet byte for byte.
got = rdpcap(fab_out)
gwlib.check(len(got) == 4, f"fabric side sent {len(got)} frames, expected 4")
for i, (frame, ip) in enumerate(zip(got, host_ips)):
    raw = bytes(frame)
    gwlib.check(len(raw) == 14 + ENCAP + HOST_MTU, f"encap {i}: {len(raw)}-byte frame")
    gwlib.check(frame[Ether].dst == NEXTHOP_MAC, f"encap {i}: destination MAC {frame[Ether].dst}")
    gwlib.check(frame[IPv6].src == SOURCE and frame[IPv6].dst == SID,
                f"encap {i}: outer {frame[IPv6].src} -> {frame[IPv6].dst}")
    gwlib.check(frame[IPv6].plen == ENCAP - 40 + HOST_MTU, f"encap {i}: payload length "
                f"{frame[IPv6].plen}")
    gwlib.check(frame[IPv6ExtHdrSegmentRouting].tag == 5, f"encap {i}: SRH tag")
    gwlib.check(raw[14 + ENCAP:] == ip, f"encap {i}: inner packet not byte-exact")

# Decapsulated: the configured host MAC and the inner packet byte for byte.
got = rdpcap(host_out)
gwlib.check(len(got) == 4, f"host side sent {len(got)} frames, expected 4")
for i, (frame, ip) in enumerate(zip(got, fab_ips)):
    raw = bytes(frame)
    gwlib.check(frame[Ether].dst == HOST_MAC and frame[Ether].type == 0x0800,
                f"decap {i}: Ethernet {frame[Ether].dst} type {frame[Ether].type:#x}")
    gwlib.check(raw[14:] == ip, f"decap {i}: inner packet not byte-exact ({len(raw)} bytes)")

drops = {k: v for k, v in tot["drops"].items() if v}
gwlib.check(drops == {"too_big": 2}, f"drops {drops}, expected too_big 2")
gwlib.check(tot["encap"] == 4 and tot["decap"] == 4, f"encap {tot['encap']} decap {tot['decap']}")
# Every 9000-byte frame arrived as a chain; the two too_big ones too.
gwlib.check(tot["chained_in"] == 10, f"chained_in {tot['chained_in']}, expected 10")
print(f"ok: 4 + 4 jumbo frames byte-exact through encap and decap from chained mbufs, "
      f"drops {drops}")
