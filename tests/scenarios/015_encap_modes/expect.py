# SPDX-License-Identifier: BSD-3-Clause
# Expected headers from RFC 8986 (H.Encaps / H.Encaps.Red) and RFC 9800 (NEXT-C-SID
# containers carried as a reduced segment list), addresses written out.
from scenlib import encap


def both(qp_index, **kw):
    return [encap(2 * qp_index, **kw), encap(2 * qp_index + 1, **kw)]


FABRIC_OUT = (
    # QP 0x21 encaps, 1 SID: an SRH with the single SID, segments left 0
    both(0, da="fc00:0:2::d4", srh=["fc00:0:2::d4"], segleft=0, last=0, tag=0x21)
    # QP 0x22 encaps-red, 1 SID: no SRH, next header 4 / 41
    + both(1, da="fc00:0:2::d4")
    # QP 0x23 encaps-red, 3 SIDs: the first SID only in the DA, SRH of the other two
    + both(2, da="fc00:0:11::e", srh=["fc00:0:2::d4", "fc00:0:21::e"], segleft=2, last=1,
           tag=0x23)
    # QP 0x24 uSID 32/16, 4 micro-SIDs: one container, no SRH
    + both(3, da="fc00:0:11:21:2:d6::")
    # QP 0x25 uSID 32/16, 8 micro-SIDs: 6 in the first container (DA), 2 in the second (SRH)
    + both(4, da="fc00:0:11:21:31:41:32:22", srh=["fc00:0:2:d4::"], segleft=1, last=0,
           tag=0x25)
    # QP 0x26 uSID 48/16 (block fc00:0:bb), 3 micro-SIDs: one container
    + both(5, da="fc00:0:bb:11:21:2::")
)
HOST_OUT = []
COUNTERS = {"encap": 12}
PATHS = {0x21: 2, 0x22: 2, 0x23: 2, 0x24: 2, 0x25: 2, 0x26: 2}
