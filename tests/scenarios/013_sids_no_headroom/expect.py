# SPDX-License-Identifier: BSD-3-Clause
# 014_sids16_chained sends the same lists through a port with multi-segment TX.
from scenlib import encap

D4 = "fc00:0:2::d4"
SRH3 = [D4, "fc00:0:101::e", "fc00:0:100::e"]
FABRIC_OUT = [encap(0, da="fc00:0:100::e", srh=SRH3, segleft=2, last=2, tag=3),
              encap(5, da="fc00:0:100::e", srh=SRH3, segleft=2, last=2, tag=3)]
HOST_OUT = []
COUNTERS = {"encap": 2, "drops.no_headroom": 4, "chained_header": 0}
