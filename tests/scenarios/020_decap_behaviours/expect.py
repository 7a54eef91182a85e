# SPDX-License-Identifier: BSD-3-Clause
# Decapsulated frames: the inner packet byte for byte (padding gone, ICRC valid), to the
# configured host MAC from the host port's MAC.
from scenlib import decap, passed

HOST_OUT = [decap(0), decap(1), decap(2), decap(3), decap(4), decap(5), decap(6), decap(7),
            passed("fabric", 12), decap(13), decap(14)]
FABRIC_OUT = []
COUNTERS = {"decap": 10, "decap_status.ok": 10, "decap_status.segments_left_nonzero": 1,
            "decap_status.bad_next_header": 3, "drops.decap_refused": 4,
            "passed_fabric_to_host": 1, "cnp_seen": 1}
