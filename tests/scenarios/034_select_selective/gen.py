#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
# Selective mode, spray-opcodes [7] (RC RDMA WRITE middle): two QPs write (first, 9 middles,
# last; four times) while eight other QPs send SEND-only messages and one READ request per
# write, all interleaved.
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from scenlib import (OP_READ_REQUEST, OP_SEND_ONLY, OP_WRITE_FIRST, OP_WRITE_LAST,  # noqa: E402
                     OP_WRITE_MIDDLE, eth, gen_main, roce4, roce6)

frames = []
psn = {}


def pkt(k, opcode, size=256):
    qp = 0x700 + k
    psn[qp] = psn.get(qp, 0) + 1
    if k % 2 == 0:
        return eth(roce4("10.0.1.2", qp=qp, psn=psn[qp], opcode=opcode, payload_len=size))
    return eth(roce6("fd00:1::2", qp=qp, psn=psn[qp], opcode=opcode, payload_len=size))


for message in range(4):
    for writer in (0, 1):
        frames.append(pkt(writer, OP_WRITE_FIRST))
    for m in range(9):
        for writer in (0, 1):
            frames.append(pkt(writer, OP_WRITE_MIDDLE))
        frames.append(pkt(2 + (message * 9 + m) % 8, OP_SEND_ONLY, 64))
    for writer in (0, 1):
        frames.append(pkt(writer, OP_WRITE_LAST))
        frames.append(pkt(writer, OP_READ_REQUEST, 0))
gen_main(host_frames=frames)
