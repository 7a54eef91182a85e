#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
# Flow mode: 4096 QPs (half to an IPv4, half to an IPv6 destination), each seen twice: a
# SEND in a first pass over all QPs, then an ACK in a second pass in reverse order.
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from scenlib import OP_ACK, OP_SEND_ONLY, RoceTemplate, eth, gen_main  # noqa: E402

N_QPS = 4096
QP_BASE = 0x10000
send = {4: RoceTemplate(4, "10.0.1.2", 1, OP_SEND_ONLY, payload_len=0),
        6: RoceTemplate(6, "fd00:1::2", 1, OP_SEND_ONLY, payload_len=0)}
ack = {4: RoceTemplate(4, "10.0.1.2", 2, OP_ACK), 6: RoceTemplate(6, "fd00:1::2", 2, OP_ACK)}


def family(k):
    return 4 if k % 2 == 0 else 6


frames = [eth(send[family(k)].make(QP_BASE + k)) for k in range(N_QPS)]
frames += [eth(ack[family(k)].make(QP_BASE + k)) for k in reversed(range(N_QPS))]
gen_main(host_frames=frames)
