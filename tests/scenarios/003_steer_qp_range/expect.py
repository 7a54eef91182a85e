# SPDX-License-Identifier: BSD-3-Clause
# Path ids: 0x13 QP range, 0x14 prefix, 0x15 QP range of destination 10.0.1.7.
from scenlib import steered

FABRIC_OUT = [steered(0, 0x13), steered(1, 0x13), steered(2, 0x14), steered(3, 0x14),
              steered(4, 0x15), steered(5, 0x14), steered(6, 0x13), steered(7, 0x13),
              steered(8, 0x14)]
HOST_OUT = []
COUNTERS = {"encap": 9}
PATHS = {0x13: 4, 0x14: 4, 0x15: 1}
