# SPDX-License-Identifier: BSD-3-Clause
# Everything passes byte for byte, in order, both ways.
from scenlib import passed

FABRIC_OUT = [passed("host", i) for i in range(13)]
HOST_OUT = [passed("fabric", i) for i in range(16)]
COUNTERS = {"encap": 0, "decap": 0, "passed_host_to_fabric": 13, "passed_fabric_to_host": 16,
            # host side classification: ARP x3 + LLDP; ND x2 + TCP x2 + ICMP; UDP not 4791
            "parse_status.not_ip": 4, "parse_status.not_udp": 5, "parse_status.not_roce": 2,
            "parse_status.fragment": 2}
