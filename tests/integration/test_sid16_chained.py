#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
# 16 SIDs through the real DPDK path: 318 B of headers do not fit the 128 B mbuf headroom, so
# the pipeline chains a header mbuf, which needs RTE_ETH_TX_OFFLOAD_MULTI_SEGS on the fabric
# port. net_ring offers it and loops what the fabric port sends back into its RX; those frames
# are not for our SIDs and pass (fabric-non-sid: pass) to the host port, whose net_pcap writes
# them. So the host-side output holds every encapsulated frame, read back from a chained mbuf.
import ipaddress
import json
import logging
import os

import gwlib
from pktlib import icrc_ok, ip_bytes, is_roce

logging.getLogger("scapy.runtime").setLevel(logging.ERROR)
from scapy.all import IP, IPv6, IPv6ExtHdrSegmentRouting, rdpcap  # noqa: E402

gwlib.need_tools()
work = gwlib.workdir("sid16")
prefix = gwlib.unique_prefix("sid16")
with open(gwlib.DEMO_JSON) as f:
    cfg = json.load(f)
g = cfg["srv6gw:gateway"]
SIDS = [f"fc00:0:{0x11 + i:x}::e" for i in range(15)] + ["fc00:0:2::d4"]
rack1 = next(p for p in g["policies"]["policy"] if p["name"] == "rack1-v4")
gwlib.check(rack1.get("encap", "encaps") == "encaps", "demo.json: rack1-v4 is expected to be encaps")
rack1["segment-list"][0]["sid"] = SIDS
for sl in rack1["segment-list"][1:]:
    sl["weight"] = 0  # every rack1-v4 packet takes the 16-SID list
tag = rack1["segment-list"][0]["path-id"]
cfg_path = os.path.join(work, "sid16.json")
with open(cfg_path, "w") as f:
    json.dump(cfg, f)

out = os.path.join(work, "host-out.pcap")
stats_json = os.path.join(work, "stats.json")
eal = gwlib.eal_args(prefix, [f"net_pcap0,rx_pcap={gwlib.DEMO_HOST_PCAP},tx_pcap={out}",
                              "net_ring0"])
rc, so, se = gwlib.run(eal, ["--config", cfg_path, "--host-port", "net_pcap0",
                             "--fabric-port", "net_ring0", "--until-idle", "300",
                             "--stats-json", stats_json], timeout=120)
print(so)
print(se[-2000:])
gwlib.check(rc == 0, f"exit code {rc}")
gwlib.check("multi-seg tx on" in se, "net_ring fabric port: multi-segment TX not enabled")
with open(stats_json) as f:
    stats = json.load(f)

inp = rdpcap(gwlib.DEMO_HOST_PCAP)
got = rdpcap(out)
gwlib.check(len(got) == len(inp), f"{len(got)} frames came back for {len(inp)}")
long_frames = 0
for i, (src, dst) in enumerate(zip(inp, got)):
    if not (is_roce(src) and IP in src and IPv6ExtHdrSegmentRouting in dst and
            dst[IPv6ExtHdrSegmentRouting].tag == tag):
        continue
    long_frames += 1
    srh = dst[IPv6ExtHdrSegmentRouting]
    gwlib.check(dst[IPv6].dst == SIDS[0], f"frame {i}: outer DA {dst[IPv6].dst}")
    gwlib.check([str(ipaddress.IPv6Address(a)) for a in srh.addresses] == list(reversed(SIDS)),
                f"frame {i}: SRH list {srh.addresses}")
    gwlib.check(srh.segleft == 15 and srh.lastentry == 15 and srh.len == 32,
                f"frame {i}: segleft {srh.segleft} last {srh.lastentry} len {srh.len}")
    gwlib.check(bytes(srh.payload) == ip_bytes(src), f"frame {i}: inner packet changed")
    gwlib.check(icrc_ok(bytes(srh.payload)), f"frame {i}: ICRC")

# tshark agrees: 16 addresses, segments left 15.
rows = gwlib.tshark_fields(out, ["ipv6.routing.segleft", "ipv6.routing.srh.addr"],
                           "ipv6.routing.segleft == 15")
gwlib.check(len(rows) == long_frames and all(len(r[1].split(",")) == 16 for r in rows),
            f"tshark: {len(rows)} frames with 16 SIDs, scapy {long_frames}")
tot = stats["total"]
path = next(p for p in stats["paths"] if p["path_id"] == tag)
gwlib.check(long_frames > 0 and path["packets"] == long_frames,
            f"path {tag}: {path['packets']} counted, {long_frames} seen")
gwlib.check(tot["chained_header"] == long_frames,
            f"chained_header {tot['chained_header']} != {long_frames} frames of 16 SIDs")
gwlib.check(tot["drops_total"] == 0, f"drops {tot['drops']}")
print(f"16 SIDs: {long_frames} frames encapsulated through a chained header segment, all intact")
