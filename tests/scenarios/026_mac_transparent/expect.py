# SPDX-License-Identifier: BSD-3-Clause
from scenlib import decap, encap

SRH = ["fc00:0:2::d4", "fc00:0:21::e", "fc00:0:11::e"]
FABRIC_OUT = [encap(i, da="fc00:0:11::e", srh=SRH, segleft=2, last=2, tag=101,
                    eth_dst="input", eth_src="input") for i in range(2)]
HOST_OUT = [decap(0, eth_dst="input", eth_src="input"),
            decap(1, eth_dst="input", eth_src="input")]
COUNTERS = {"encap": 2, "decap": 2}
