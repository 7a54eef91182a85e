# SPDX-License-Identifier: BSD-3-Clause
from scenlib import encap

D4 = "fc00:0:2::d4"
S = ["fc00:0:100::e", "fc00:0:101::e", "fc00:0:102::e", "fc00:0:103::e", "fc00:0:104::e"]
USID6 = "fc00:0:11:21:31:41:2:d4"  # block fc00:0 + micro-SIDs 11 21 31 41 2 d4 (RFC 9800)


def one(i):
    return encap(i, da=D4, srh=[D4], segleft=0, last=0, tag=1)


def three(i):
    return encap(i, da=S[0], srh=[D4, S[1], S[0]], segleft=2, last=2, tag=3)


def five(i):
    return encap(i, da=S[0], srh=[D4, S[3], S[2], S[1], S[0]], segleft=4, last=4, tag=5)


def six_reduced(i):  # H.Encaps.Red: the first SID only in the destination address
    return encap(i, da=S[0], srh=[D4, S[4], S[3], S[2], S[1]], segleft=5, last=4, tag=6)


def usid(i):  # one container: no SRH at all
    return encap(i, da=USID6)


FABRIC_OUT = [one(0), one(1), three(2), three(3), five(4), five(5), six_reduced(6),
              six_reduced(7), usid(8), usid(9), five(10), six_reduced(11)]
HOST_OUT = []
COUNTERS = {"encap": 12, "chained_header": 0}
PATHS = {1: 2, 3: 2, 5: 3, 6: 3, 7: 2}
