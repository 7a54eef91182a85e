# SPDX-License-Identifier: BSD-3-Clause
from scenlib import decap, passed

HOST_OUT = [decap(0), passed("fabric", 11), decap(12), decap(13), decap(14)]
FABRIC_OUT = []
COUNTERS = {"decap": 4, "passed_fabric_to_host": 1, "drops.decap_refused": 8,
            "drops.malformed": 2, "parse_status.truncated_eth": 1,
            "parse_status.truncated_vlan": 1, "decap_status.ok": 4,
            "decap_status.bad_outer_length": 1, "decap_status.srh_inconsistent": 2,
            "decap_status.truncated_ext": 1, "decap_status.truncated_inner": 1,
            "decap_status.outer_fragment": 1, "decap_status.ext_chain_too_long": 1,
            "decap_status.bad_next_header": 1}
