# SPDX-License-Identifier: BSD-3-Clause
# Path ids: 0x16 ::/0, 0x17 /16, 0x14 /64, 0x18 /120, 0x19 /128.
from scenlib import passed, steered

FABRIC_OUT = [steered(0, 0x19), steered(1, 0x18), steered(2, 0x18), steered(3, 0x14),
              steered(4, 0x14), steered(5, 0x17), steered(6, 0x16), passed("host", 7)]
HOST_OUT = []
COUNTERS = {"encap": 7, "passed_host_to_fabric": 1}
PATHS = {0x16: 1, 0x17: 1, 0x14: 2, 0x18: 2, 0x19: 1}
