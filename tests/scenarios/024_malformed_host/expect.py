# SPDX-License-Identifier: BSD-3-Clause
from scenlib import encap, passed

SRH = ["fc00:0:2::d4", "fc00:0:21::e", "fc00:0:11::e"]
FABRIC_OUT = [encap(0, da="fc00:0:11::e", srh=SRH, segleft=2, last=2, tag=101),
              passed("host", 16),
              encap(17, da="fc00:0:11::e", srh=SRH, segleft=2, last=2, tag=101)]
HOST_OUT = []
COUNTERS = {"encap": 2, "passed_host_to_fabric": 1, "drops.malformed": 15,
            "parse_status.truncated_eth": 1, "parse_status.truncated_vlan": 1,
            "parse_status.truncated_ipv4": 1, "parse_status.bad_ipv4_version": 1,
            "parse_status.bad_ipv4_ihl": 1, "parse_status.bad_ipv4_length": 1,
            "parse_status.truncated_ipv6": 1, "parse_status.bad_ipv6_version": 1,
            "parse_status.bad_ipv6_length": 1, "parse_status.truncated_ext": 1,
            "parse_status.truncated_udp": 1, "parse_status.bad_udp_length": 2,
            "parse_status.truncated_bth": 1, "parse_status.bad_bth_tver": 1,
            "parse_status.ext_chain_too_long": 1}
