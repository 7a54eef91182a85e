# SPDX-License-Identifier: BSD-3-Clause
# steering-miss pass: a miss leaves byte for byte, VLAN tag included.
from scenlib import passed, steered

FABRIC_OUT = [steered(0, 0x14), passed("host", 1), passed("host", 2), passed("host", 3),
              passed("host", 4), steered(5, 0x14)]
HOST_OUT = []
COUNTERS = {"encap": 2, "passed_host_to_fabric": 4, "parse_status.not_ip": 1}
