# SPDX-License-Identifier: BSD-3-Clause
# Path ids: 0x14 plain prefix, 0x20 DSCP-qualified prefix, 0x11 plain exact,
# 0x21 DSCP-qualified exact.
from scenlib import steered

FABRIC_OUT = [steered(0, 0x14), steered(1, 0x20), steered(2, 0x20), steered(3, 0x11),
              steered(4, 0x21), steered(5, 0x20), steered(6, 0x20), steered(7, 0x14)]
HOST_OUT = []
COUNTERS = {"encap": 8}
PATHS = {0x14: 2, 0x20: 4, 0x11: 1, 0x21: 1}
