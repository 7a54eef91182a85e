# SPDX-License-Identifier: BSD-3-Clause
# Every frame: outer IPv6 fc00:0:1::1 -> fc00:0:11::e, SRH [d4, 21::e, 11::e] (segments left
# 2, last entry 2, tag 101), next header 4 or 41, traffic class copied from the inner, inner
# bytes unchanged with a valid ICRC. tshark must see the inner BTH through the SRH.
from scenlib import encap

SRH = ["fc00:0:2::d4", "fc00:0:21::e", "fc00:0:11::e"]
FABRIC_OUT = [encap(i, da="fc00:0:11::e", srh=SRH, segleft=2, last=2, tag=101)
              for i in range(14)]
HOST_OUT = []
COUNTERS = {"encap": 14, "cnp_seen": 2}
PATHS = {101: 14}


def check(run):
    # RFC 6437 / DESIGN: the outer flow label hashes the inner flow (addresses, UDP source
    # port, DestQP): equal for the same flow, spread across flows.
    labels = [r["ipv6.flow"][0] for r in run.rows["fabric_out"]]
    run.check(labels[12] == labels[0], f"IPv4 flow repeated: flow label {labels[12]:#x} != {labels[0]:#x}")
    run.check(labels[13] == labels[6], f"IPv6 flow repeated: flow label {labels[13]:#x} != {labels[6]:#x}")
    run.check(len(set(labels[:12])) == 12, f"12 flows share {len(set(labels[:12]))} flow labels")
