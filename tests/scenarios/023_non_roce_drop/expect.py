# SPDX-License-Identifier: BSD-3-Clause
from scenlib import decap, encap

SRH = ["fc00:0:2::d4", "fc00:0:21::e", "fc00:0:11::e"]
FABRIC_OUT = [encap(1, da="fc00:0:11::e", srh=SRH, segleft=2, last=2, tag=101),
              encap(4, da="fc00:0:11::e", srh=SRH, segleft=2, last=2, tag=101)]
HOST_OUT = [decap(0)]
COUNTERS = {"encap": 2, "decap": 1, "drops.non_roce_dropped": 3, "drops.non_sid_dropped": 2,
            "passed_host_to_fabric": 0, "passed_fabric_to_host": 0,
            "parse_status.not_ip": 1, "parse_status.not_udp": 1, "parse_status.not_roce": 1}
