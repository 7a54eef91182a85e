# SPDX-License-Identifier: BSD-3-Clause
from scenlib import encap

FABRIC_PORT = "ring"
D4 = "fc00:0:2::d4"
S16 = ["fc00:0:%x::e" % (0x100 + i) for i in range(15)] + [D4]
R16 = ["fc00:0:%x::e" % (0x200 + i) for i in range(15)] + [D4]
S6 = S16[:5] + [D4]
S3 = S16[:2] + [D4]


def sid16(i):
    return encap(i, da=S16[0], srh=S16[::-1], segleft=15, last=15, tag=16)


HOST_OUT = [
    sid16(0), sid16(1), sid16(2),
    encap(3, da=R16[0], srh=R16[:0:-1], segleft=15, last=14, tag=17),  # reduced: 15 in the SRH
    encap(4, da=S6[0], srh=S6[::-1], segleft=5, last=5, tag=6),
    encap(5, da=S3[0], srh=S3[::-1], segleft=2, last=2, tag=3),
]
COUNTERS = {"encap": 6, "chained_header": 5, "passed_fabric_to_host": 6, "rx_fabric": 6,
            "tx_fabric": 6}
PATHS = {16: 3, 17: 1, 6: 1, 3: 1}
