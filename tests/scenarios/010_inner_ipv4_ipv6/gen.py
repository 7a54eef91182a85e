#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
# IPv4 and IPv6 inner packets of every BTH shape (SEND, WRITE with RETH, READ request, ACK
# with AETH, CNP, a 4 KB WRITE) through one H.Encaps policy of three SIDs.
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from scenlib import (OP_ACK, OP_CNP, OP_READ_REQUEST, OP_SEND_ONLY, OP_WRITE_FIRST,  # noqa: E402
                     OP_WRITE_ONLY, eth, gen_main, roce4, roce6)

KINDS = [  # opcode, payload, TOS
    (OP_SEND_ONLY, 64, 0x6A), (OP_WRITE_FIRST, 1024, 0x6A), (OP_READ_REQUEST, 0, 0xBA),
    (OP_ACK, 0, 0x00), (OP_CNP, 0, 0xC2), (OP_WRITE_ONLY, 4096, 0x69)]
frames = []
for k, (op, size, tos) in enumerate(KINDS):
    frames.append(eth(roce4("10.0.1.2", qp=0x300 + k, psn=100 + k, opcode=op, tos=tos,
                            payload_len=size, sport=50000 + k)))
for k, (op, size, tos) in enumerate(KINDS):
    frames.append(eth(roce6("fd00:1::2", qp=0x300 + k, psn=200 + k, opcode=op, tos=tos,
                            payload_len=size, sport=50000 + k, flow_label=0x12345 + k)))
# The same flow again (same addresses, UDP source port, QP): same outer flow label.
frames.append(eth(roce4("10.0.1.2", qp=0x300, psn=101, sport=50000)))
frames.append(eth(roce6("fd00:1::2", qp=0x300, psn=201, sport=50000, flow_label=0x12345)))
gen_main(host_frames=frames)
