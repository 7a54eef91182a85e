# SPDX-License-Identifier: BSD-3-Clause
from scenlib import ECN_CE, ECN_ECT0, ECN_ECT1, ECN_NOT_ECT, decap, encap

SRH = ["fc00:0:2::d4", "fc00:0:21::e", "fc00:0:11::e"]
# Outer traffic class = inner DSCP 26 (0x68) | inner ECN, stated literally.
FABRIC_OUT = [encap(i, da="fc00:0:11::e", srh=SRH, segleft=2, last=2, tag=101,
                    tclass=0x68 | (i // 2)) for i in range(8)]


def egress(base):
    # RFC 6040 section 4.2, rows of gen.py's TABLE; the CE-over-not-ECT row (3) is dropped.
    return [decap(base + 0, ecn=ECN_CE),      # outer CE,     inner ECT(0) -> CE
            decap(base + 1, ecn=ECN_CE),      # outer CE,     inner ECT(1) -> CE
            decap(base + 2, ecn=ECN_CE),      # outer CE,     inner CE     -> CE
            decap(base + 4, ecn=ECN_ECT1),    # outer ECT(1), inner ECT(0) -> ECT(1)
            decap(base + 5, ecn=ECN_ECT1),    # outer ECT(0), inner ECT(1) -> ECT(1)
            decap(base + 6, ecn=ECN_ECT0),    # outer not-ECT, inner ECT(0) -> ECT(0)
            decap(base + 7, ecn=ECN_NOT_ECT)]  # outer ECT(0), inner not-ECT -> not-ECT


HOST_OUT = egress(0) + egress(8)
COUNTERS = {"encap": 8, "decap": 14, "inner_ce_marked": 4, "outer_ce_seen": 6,
            "decap_status.ecn_ce_on_not_ect": 2, "drops.decap_refused": 2}
