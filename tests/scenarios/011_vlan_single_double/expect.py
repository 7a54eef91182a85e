# SPDX-License-Identifier: BSD-3-Clause
# Encapsulated and decapsulated frames leave untagged (the gateway writes a fresh Ethernet
# header toward a routed port); frames it does not classify keep every tag.
from scenlib import decap, encap, passed

SRH = ["fc00:0:2::d4", "fc00:0:21::e", "fc00:0:11::e"]
FABRIC_OUT = [encap(0, da="fc00:0:11::e", srh=SRH, segleft=2, last=2, tag=101),
              encap(1, da="fc00:0:11::e", srh=SRH, segleft=2, last=2, tag=101),
              encap(2, da="fc00:0:11::e", srh=SRH, segleft=2, last=2, tag=101),
              passed("host", 3),
              passed("host", 4)]
HOST_OUT = [decap(0), decap(1), passed("fabric", 2)]
COUNTERS = {"encap": 3, "passed_host_to_fabric": 2, "parse_status.too_many_vlans": 1,
            "decap": 2, "passed_fabric_to_host": 1}
