# SPDX-License-Identifier: BSD-3-Clause
# Path ids: 0x11 exact, 0x12 dst-any-QP, 0x13 QP range, 0x14 prefix (scenlib.steered).
from scenlib import steered

FABRIC_OUT = [
    steered(0, 0x11),
    steered(1, 0x12),
    steered(2, 0x11),
    steered(3, 0x13),
    steered(4, 0x13),
    steered(5, 0x14),
    steered(6, 0x14),
]
HOST_OUT = []
COUNTERS = {"encap": 7, "parse_status.ok": 7}
PATHS = {0x11: 2, 0x12: 1, 0x13: 2, 0x14: 2}
