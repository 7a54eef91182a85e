# SPDX-License-Identifier: BSD-3-Clause
# steering-miss drop: the three misses are dropped and counted by name; ARP still passes.
from scenlib import passed, steered

FABRIC_OUT = [steered(0, 0x14), passed("host", 4), steered(5, 0x14)]
HOST_OUT = []
COUNTERS = {"encap": 2, "passed_host_to_fabric": 1, "drops.steering_miss": 3,
            "parse_status.not_ip": 1}
