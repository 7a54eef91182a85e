#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
# Encapsulation checked by oracles we did not write: scapy generates RoCEv2 input (valid ICRC),
# srv6gw-pcap encapsulates it, then tshark and scapy dissect the output. Expected headers come
# from RFC 8754/8986/9800 (roce_lib.Expected), never from the packet core.
#
# usage: encap_oracle.py SRV6GW_PCAP
import ipaddress
import os
import sys
import tempfile

sys.dont_write_bytecode = True  # keep the source tree clean
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import roce_lib as rl  # noqa: E402
from roce_lib import IP, IPv6, Ether, fail, log  # noqa: E402
from scapy.all import IPv6ExtHdrSegmentRouting  # noqa: E402

SOURCE = "fc00:ffff::1"
FULL_SIDS = [f"fc00:{i + 1:x}::e" for i in range(16)]
USIDS = [f"fc00:0:{(i + 1) * 0x100:x}::" for i in range(8)]  # F3216: block fc00:0, uSID N00

# name, mode, sids, extra options, expected tag, expected hop limit
CASES = [
    ("encaps-1", "encaps", FULL_SIDS[:1], [], 0, 64),
    ("encaps-3", "encaps", FULL_SIDS[:3], ["--tag", "7"], 7, 64),
    ("encaps-16", "encaps", FULL_SIDS, ["--tag", "4660", "--hop-limit", "33"], 4660, 33),
    ("encaps-red-1", "encaps-red", FULL_SIDS[:1], [], None, 64),
    ("encaps-red-3", "encaps-red", FULL_SIDS[:3], ["--tag", "300"], 300, 64),
    ("usid-8", "usid", USIDS, ["--usid-block", "32", "--usid-len", "16", "--tag", "9"], 9, 64),
    ("usid-3", "usid", USIDS[:3], [], None, 64),
    ("usid-6", "usid", USIDS[:6], [], None, 64),  # one full container
    ("usid-7-f4816", "usid", [f"fc00:0:1:{(i + 1) * 0x100:x}::" for i in range(7)],
     ["--usid-block", "48", "--usid-len", "16", "--tag", "2"], 2, 64),  # 5 per container
]

TSHARK_FIELDS = [
    "frame.protocols", "eth.type", "ipv6.src", "ipv6.dst", "ipv6.nxt", "ipv6.plen", "ipv6.hlim",
    "ipv6.tclass", "ipv6.flow", "ipv6.routing.type", "ipv6.routing.segleft",
    "ipv6.routing.srh.last_entry", "ipv6.routing.srh.flags", "ipv6.routing.srh.tag",
    "ipv6.routing.srh.addr", "ipv6.routing.nxt", "ipv6.routing.len", "ip.src", "ip.dst",
    "ip.dsfield", "infiniband.bth.opcode", "infiniband.bth.destqp", "infiniband.bth.psn",
    "infiniband.bth.a", "infiniband.reth.va", "infiniband.reth.r_key", "infiniband.reth.dmalen",
]
BTH_FIELDS = ["infiniband.bth.opcode", "infiniband.bth.destqp", "infiniband.bth.psn",
              "infiniband.bth.a", "infiniband.reth.va", "infiniband.reth.r_key",
              "infiniband.reth.dmalen"]


def inner_tos(ip: bytes) -> int:
    if ip[0] >> 4 == 4:
        return ip[1]
    return ((ip[0] & 0x0F) << 4) | (ip[1] >> 4)


def check_tshark(case, sample, row, in_row, expected, tag, hop_limit):
    where = f"{case} / {sample.name} (tshark)"
    ctx = f"\n  tshark row: {row}"
    if row["eth.type"][:1] != ["0x86dd"]:
        fail(f"{where}: outer ethertype {row['eth.type']}, expected 0x86dd{ctx}")
    if row["ipv6.src"][:1] != [SOURCE]:
        fail(f"{where}: outer source {row['ipv6.src'][:1]}, expected {SOURCE}{ctx}")
    if row["ipv6.dst"][:1] != [expected.destination]:
        fail(f"{where}: outer destination {row['ipv6.dst'][:1]}, expected "
             f"{expected.destination}{ctx}")
    inner_proto = 4 if sample.family == 4 else 41
    outer_nxt = rl.num(row["ipv6.nxt"][0])
    if expected.srh is None:
        if outer_nxt != inner_proto or row["ipv6.routing.type"]:
            fail(f"{where}: expected no SRH and next header {inner_proto}, got next header "
                 f"{outer_nxt}, routing {row['ipv6.routing.type']}{ctx}")
    else:
        if outer_nxt != 43:
            fail(f"{where}: outer next header {outer_nxt}, expected 43 (routing){ctx}")
        got = {
            "type": row["ipv6.routing.type"], "segleft": row["ipv6.routing.segleft"],
            "last_entry": row["ipv6.routing.srh.last_entry"],
            "flags": row["ipv6.routing.srh.flags"],
            "tag": [int(t, 16) for t in row["ipv6.routing.srh.tag"]],
            "addr": row["ipv6.routing.srh.addr"], "nxt": row["ipv6.routing.nxt"],
            "len": row["ipv6.routing.len"],
        }
        want = {
            "type": ["4"], "segleft": [str(expected.segments_left)],
            "last_entry": [str(expected.last_entry)], "flags": ["0x00"], "tag": [tag],
            "addr": expected.srh, "nxt": [str(inner_proto)], "len": [str(2 * len(expected.srh))],
        }
        for k in want:
            if got[k] != want[k]:
                fail(f"{where}: SRH {k} = {got[k]}, expected {want[k]}{ctx}")
    tclass = rl.num(row["ipv6.tclass"][0])
    if tclass != inner_tos(sample.ip):
        fail(f"{where}: outer traffic class 0x{tclass:02x}, inner DSCP/ECN is "
             f"0x{inner_tos(sample.ip):02x} (RFC 6040 normal mode copies both){ctx}")
    flow = rl.num(row["ipv6.flow"][0])
    if flow == 0:
        fail(f"{where}: outer flow label is 0 (must carry the inner flow's entropy){ctx}")
    if rl.num(row["ipv6.hlim"][0]) != hop_limit:
        fail(f"{where}: outer hop limit {row['ipv6.hlim'][0]}, expected {hop_limit}{ctx}")
    srh_len = 0 if expected.srh is None else 8 + 16 * len(expected.srh)
    if rl.num(row["ipv6.plen"][0]) != srh_len + len(sample.ip):
        fail(f"{where}: outer payload length {row['ipv6.plen'][0]}, expected "
             f"{srh_len + len(sample.ip)}{ctx}")
    protos = row["frame.protocols"][0].split(":")
    want_protos = ["eth", "ethertype", "ipv6"] + (["ipv6.routing"] if expected.srh else []) + \
        ["ip" if sample.family == 4 else "ipv6", "udp", "infiniband"]
    if protos[:len(want_protos)] != want_protos:
        fail(f"{where}: protocols {protos}, expected to start with {want_protos}{ctx}")
    for f in BTH_FIELDS:
        if row[f] != in_row[f]:
            fail(f"{where}: inner {f} = {row[f]} after encap, {in_row[f]} before{ctx}")
    if not row["infiniband.bth.opcode"]:
        fail(f"{where}: tshark found no BTH in the output{ctx}")
    return flow


def check_scapy(case, sample, out, expected, tag, hop_limit, macs):
    where = f"{case} / {sample.name} (scapy)"
    eth = Ether(out)
    if eth.type != 0x86DD:
        fail(f"{where}: ethertype 0x{eth.type:04x}")
    if macs is not None and (eth.dst, eth.src) != macs:
        fail(f"{where}: MACs {eth.dst} {eth.src}, expected {macs}")
    if macs is None:
        in_eth = Ether(sample.frame)
        if (eth.dst, eth.src) != (in_eth.dst, in_eth.src):
            fail(f"{where}: MACs not kept: {eth.dst} {eth.src} vs {in_eth.dst} {in_eth.src}")
    outer = eth[IPv6]
    if outer.src != SOURCE or outer.dst != expected.destination or outer.hlim != hop_limit:
        fail(f"{where}: outer {outer.src} -> {outer.dst} hlim {outer.hlim}")
    if expected.srh is None:
        inner_bytes = bytes(outer.payload)
        if outer.haslayer(IPv6ExtHdrSegmentRouting):
            fail(f"{where}: unexpected SRH")
    else:
        srh = outer[IPv6ExtHdrSegmentRouting]
        got = (srh.type, srh.segleft, srh.lastentry, srh.tag, srh.len,
               [str(ipaddress.IPv6Address(a)) for a in srh.addresses])
        want = (4, expected.segments_left, expected.last_entry, tag, 2 * len(expected.srh),
                expected.srh)
        if got != want:
            fail(f"{where}: SRH (type, segleft, last entry, tag, len, addresses) = {got}, "
                 f"expected {want}")
        inner_bytes = bytes(srh.payload)
    if inner_bytes != sample.ip:
        fail(f"{where}: inner packet changed by encapsulation\n" +
             rl.hexdiff(sample.ip, inner_bytes, "input", "output"))
    inner_cls = IP if sample.family == 4 else IPv6
    if not isinstance(outer.payload if expected.srh is None else
                      outer[IPv6ExtHdrSegmentRouting].payload, inner_cls):
        fail(f"{where}: scapy does not see an {inner_cls.__name__} after the outer headers")
    if not rl.icrc_valid(inner_bytes):
        fail(f"{where}: ICRC of the carried packet is not valid")
    # Nothing after the inner packet (Ethernet padding must not be carried into the tunnel).
    srh_len = 0 if expected.srh is None else 8 + 16 * len(expected.srh)
    if len(out) != 14 + 40 + srh_len + len(sample.ip):
        fail(f"{where}: frame length {len(out)}, expected {14 + 40 + srh_len + len(sample.ip)}")


def main():
    tool = rl.tool_path(sys.argv[1])
    samples = rl.roce_samples()
    # One padded frame: the gateway must carry the IP packet, not the Ethernet padding.
    small = rl.roce_ip_packet(4, "10.0.0.1", "10.0.1.2", rl.OP_ACK, qp=0x77, psn=1, tos=0x02,
                              sport=50001)
    samples.append(rl.Sample("ipv4-padded-ack", rl.frame(small, padding=12), small))
    # The same flow again (same addresses, source port, QP; other PSN): same flow label.
    again = rl.roce_ip_packet(4, "10.0.0.1", "10.0.1.2", rl.OP_ACK, qp=0x77, psn=2, tos=0x02,
                              sport=50001)
    samples.append(rl.Sample("ipv4-same-flow-ack", rl.frame(again), again))
    passthrough = rl.passthrough_frames()
    # Pass-through frames interleaved: input order must be kept.
    frames, kinds = [], []
    for i, s in enumerate(samples):
        frames.append(s.frame)
        kinds.append(s)
        if i % 5 == 2 and passthrough:
            frames.append(passthrough[0])
            kinds.append(passthrough.pop(0))
    for p in passthrough:
        frames.append(p)
        kinds.append(p)

    with tempfile.TemporaryDirectory(prefix="srv6gw-oracle-") as tmp:
        in_pcap = os.path.join(tmp, "in.pcap")
        rl.write_pcap(in_pcap, frames)
        in_rows = rl.tshark_fields(in_pcap, TSHARK_FIELDS)
        if len(in_rows) != len(frames):
            fail(f"tshark read {len(in_rows)} of {len(frames)} input frames")
        for s, r in zip(kinds, in_rows):
            if isinstance(s, rl.Sample) and not r["infiniband.bth.opcode"]:
                fail(f"input {s.name}: tshark does not see RoCE in the generated frame")
        n_roce = sum(isinstance(k, rl.Sample) for k in kinds)

        for case, mode, sids, extra, tag, hop_limit in CASES:
            out_pcap = os.path.join(tmp, f"{case}.pcap")
            macs = None
            cmd = [tool, "encap", "--in", in_pcap, "--out", out_pcap, "--sids", ",".join(sids),
                   "--source", SOURCE, "--mode", mode] + extra
            if case.endswith("3"):
                macs = ("02:aa:bb:cc:dd:01", "02:aa:bb:cc:dd:02")
                cmd += ["--dst-mac", macs[0], "--src-mac", macs[1]]
            r = rl.run(cmd)
            if f"encapsulated {n_roce}," not in r.stdout:
                fail(f"{case}: tool reports\n{r.stdout}\nexpected 'encapsulated {n_roce},'")
            block = int(extra[extra.index("--usid-block") + 1]) if "--usid-block" in extra else 32
            ulen = int(extra[extra.index("--usid-len") + 1]) if "--usid-len" in extra else 16
            expected = rl.Expected(mode, sids, block, ulen)
            want_tag = tag if tag is not None else 0
            out_frames = rl.read_pcap(out_pcap)
            if len(out_frames) != len(frames):
                fail(f"{case}: {len(out_frames)} frames out, {len(frames)} in")
            rows = rl.tshark_fields(out_pcap, TSHARK_FIELDS)
            labels = {}
            for k, out, row, in_row in zip(kinds, out_frames, rows, in_rows):
                if not isinstance(k, rl.Sample):
                    if out != k:
                        fail(f"{case}: pass-through frame changed\n" + rl.hexdiff(k, out))
                    continue
                flow = check_tshark(case, k, row, in_row, expected, want_tag, hop_limit)
                check_scapy(case, k, out, expected, want_tag, hop_limit, macs)
                labels[k.name] = flow
            if labels["ipv4-padded-ack"] != labels["ipv4-same-flow-ack"]:
                fail(f"{case}: two packets of one flow got flow labels "
                     f"{labels['ipv4-padded-ack']:#x} and {labels['ipv4-same-flow-ack']:#x}")
            if len(set(labels.values())) < len(labels) // 2:
                fail(f"{case}: {len(labels)} flows share only {len(set(labels.values()))} "
                     f"flow labels: the outer header lost the flows' entropy")
            desc = "no SRH" if expected.srh is None else \
                f"SRH segleft {expected.segments_left} entries {len(expected.srh)}"
            log(f"ok {case}: {n_roce} RoCE frames, DA {expected.destination}, {desc}, "
                f"{len(frames) - n_roce} passed unchanged")


if __name__ == "__main__":
    rl.main_wrapper(main)
