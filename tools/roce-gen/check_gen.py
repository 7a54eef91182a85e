# SPDX-License-Identifier: BSD-3-Clause
"""Checks roce-gen output against dissectors nobody here wrote.

For a mixed workload (IPv4 + IPv6, every opcode, several sizes, with and without a VLAN tag,
interleaved ARP / ND / TCP / UDP frames) it verifies that:
  - tshark dissects every RoCE frame as InfiniBand with the opcode, DestQP, PSN, AckReq and
    RETH fields the manifest claims, and the non-RoCE frames as ARP / ICMPv6 NS / TCP SYN / UDP,
    with valid IPv4, TCP, UDP and ICMPv6 checksums (tshark's own checksum validation);
  - scapy (scapy.contrib.roce) parses every frame; scapy recomputes the same IPv4 header
    checksums and, for IPv4, the same ICRC;
  - the ICRC of EVERY RoCE frame matches an independent computation here (zlib.crc32 over
    8 x 0xff + the IP packet with the variant fields masked);
  - per-QP invariants hold: PSN +1 per packet, one UDP source port per QP, DF set, ECN/DSCP,
    CNP layout (BECN, 16 zero bytes), data length a multiple of 4 within the requested size;
  - runs are deterministic: same seed -> byte-identical pcap, other seed -> different pcap;
  - bad options are refused with a message naming the option.
Usage: check_gen.py ROCE_GEN_BINARY
"""

import collections
import csv
import os
import shutil
import socket
import struct
import subprocess
import sys
import tempfile
import zlib

try:
    from scapy.all import ARP, IP, IPv6, TCP, UDP, Ether, Dot1Q, ICMPv6ND_NS, rdpcap, raw
    from scapy.contrib import roce
    from scapy.packet import Packet, bind_layers
    from scapy.fields import XLongField, XIntField, IntField
except ImportError as e:
    print(f"SKIP: scapy is not installed ({e}); apt-get install python3-scapy")
    sys.exit(77)
if shutil.which("tshark") is None:
    print("SKIP: tshark is not installed; apt-get install tshark")
    sys.exit(77)

FAILURES = []


def check(cond, message):
    if not cond:
        FAILURES.append(message)
        if len(FAILURES) <= 40:
            print("FAIL:", message)


class RETH(Packet):
    """scapy 2.5 has no RETH layer."""
    name = "RETH"
    fields_desc = [XLongField("va", 0), XIntField("rkey", 0), IntField("dmalen", 0)]


for _op in (0x06, 0x0a, 0x0c):
    bind_layers(roce.BTH, RETH, opcode=_op)
for _op in (0x0d, 0x0f, 0x10):
    bind_layers(roce.BTH, roce.AETH, opcode=_op)

OPCODES = {
    "send-first": 0x00, "send-middle": 0x01, "send-last": 0x02, "send-only": 0x04,
    "write-first": 0x06, "write-middle": 0x07, "write-last": 0x08, "write-only": 0x0a,
    "read-request": 0x0c, "read-response-first": 0x0d, "read-response-middle": 0x0e,
    "read-response-last": 0x0f, "read-response-only": 0x10, "ack": 0x11, "cnp": 0x81,
}
RETH_OPS = {0x06, 0x0a, 0x0c}
AETH_OPS = {0x0d, 0x0f, 0x10, 0x11}
DATA_OPS = {0x00, 0x01, 0x02, 0x04, 0x06, 0x07, 0x08, 0x0a, 0x0d, 0x0e, 0x0f, 0x10}
ACKREQ_OPS = {0x02, 0x04, 0x08, 0x0a, 0x0c}


def expected_icrc(ip_bytes, v6):
    """RoCEv2 ICRC: CRC-32 over 8 bytes of 0xff + the IP packet with variant fields set to 1s."""
    b = bytearray(ip_bytes[:-4])
    if v6:
        b[0] |= 0x0f          # traffic class (low nibble of byte 0 + high nibble of byte 1)
        b[1] = b[2] = b[3] = 0xff  # ... and the flow label
        b[7] = 0xff           # hop limit
        udp = 40
    else:
        b[1] = 0xff           # TOS
        b[8] = 0xff           # TTL
        b[10] = b[11] = 0xff  # header checksum
        udp = (b[0] & 0x0f) * 4
    b[udp + 6] = b[udp + 7] = 0xff  # UDP checksum
    b[udp + 8 + 4] = 0xff           # BTH: FECN, BECN, reserved
    return zlib.crc32(b"\xff" * 8 + bytes(b)) & 0xffffffff


def run_gen(gen, out, *args, manifest=None):
    cmd = [gen, "-o", out] + list(args)
    if manifest:
        cmd += ["--manifest", manifest]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        print("roce-gen failed:", cmd, r.stderr)
        sys.exit(1)
    return r.stdout


def tshark_fields(pcap, fields):
    cmd = ["tshark", "-r", pcap, "-o", "ip.check_checksum:TRUE", "-o", "tcp.check_checksum:TRUE",
           "-o", "udp.check_checksum:TRUE", "-T", "fields", "-E", "separator=|",
           "-E", "occurrence=f"]
    for f in fields:
        cmd += ["-e", f]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        print("tshark failed:", r.stderr)
        sys.exit(1)
    rows = [line.split("|") for line in r.stdout.splitlines()]
    return [dict(zip(fields, row)) for row in rows]


def tshark_int(v):
    return int(v, 0) if v else None


def check_workload(gen, tmp, name, args, requested_sizes):
    pcap = os.path.join(tmp, name + ".pcap")
    manifest_path = os.path.join(tmp, name + ".csv")
    summary = run_gen(gen, pcap, *args, manifest=manifest_path)
    with open(manifest_path) as f:
        manifest = list(csv.DictReader(f))
    frames = rdpcap(pcap)
    count = int(args[args.index("--count") + 1])
    check(len(frames) == count, f"{name}: {len(frames)} frames in pcap, expected {count}")
    check(len(manifest) == count, f"{name}: {len(manifest)} manifest rows, expected {count}")

    # Summary line agrees with the manifest.
    by_name = collections.Counter(row["name"] for row in manifest)
    check(f" {count} packets," in summary, f"{name}: summary '{summary.strip()}'")
    for op, n in by_name.items():
        check(f" {op}={n}" in summary, f"{name}: summary lacks {op}={n}: {summary.strip()}")

    fields = ["frame.number", "frame.len", "frame.protocols", "infiniband.bth.opcode",
              "infiniband.bth.destqp", "infiniband.bth.psn", "infiniband.bth.a",
              "infiniband.bth.p_key", "infiniband.bth.padcnt", "infiniband.bth.m",
              "infiniband.reth.va", "infiniband.reth.r_key", "infiniband.reth.dmalen",
              "infiniband.aeth.msn", "infiniband.invariant.crc", "ip.checksum.status",
              "ip.flags.df", "ip.dsfield.dscp", "ip.dsfield.ecn", "ipv6.tclass.dscp",
              "ipv6.tclass.ecn", "ipv6.flow", "udp.srcport", "udp.dstport", "udp.checksum",
              "udp.checksum.status", "tcp.checksum.status", "tcp.flags.syn", "tcp.flags.ack",
              "icmpv6.type", "icmpv6.checksum.status", "arp.opcode", "vlan.id"]
    dissected = tshark_fields(pcap, fields)
    check(len(dissected) == count, f"{name}: tshark saw {len(dissected)} frames")

    psn_by_qp = {}
    sport_by_qp = {}
    rethva_by_qp = {}
    roce_frames = 0
    icrc_shown = 0
    for i, (pkt, row, t) in enumerate(zip(frames, manifest, dissected)):
        where = f"{name} frame {i + 1} ({row['name']})"
        data = raw(pkt)
        check(len(data) == int(row["len"]), f"{where}: length {len(data)} != {row['len']}")
        check(len(data) >= 60, f"{where}: shorter than the Ethernet minimum")
        if "--vlan" in args:
            check(pkt.haslayer(Dot1Q), f"{where}: VLAN tag missing")
            check(t["vlan.id"] == args[args.index("--vlan") + 1], f"{where}: VLAN id {t['vlan.id']}")
        v6 = row["family"] == "ipv6"
        if row["kind"] == "non-roce":
            check_non_roce(where, row, pkt, t, v6)
            continue
        roce_frames += 1
        op = OPCODES[row["name"]]
        qp = int(row["dest_qp"])
        psn = int(row["psn"])
        # tshark, field by field.
        check("infiniband" in t["frame.protocols"], f"{where}: tshark protocols {t['frame.protocols']}")
        check(tshark_int(t["infiniband.bth.opcode"]) == op, f"{where}: tshark opcode {t['infiniband.bth.opcode']}")
        check(tshark_int(t["infiniband.bth.destqp"]) == qp, f"{where}: tshark destqp {t['infiniband.bth.destqp']} != {qp}")
        check(tshark_int(t["infiniband.bth.psn"]) == psn, f"{where}: tshark psn {t['infiniband.bth.psn']} != {psn}")
        check(tshark_int(t["infiniband.bth.a"]) == (1 if op in ACKREQ_OPS else 0), f"{where}: AckReq {t['infiniband.bth.a']}")
        check(tshark_int(t["infiniband.bth.p_key"]) == 0xffff, f"{where}: P_Key {t['infiniband.bth.p_key']}")
        check(tshark_int(t["infiniband.bth.padcnt"]) == 0, f"{where}: pad count {t['infiniband.bth.padcnt']}")
        check(tshark_int(t["udp.dstport"]) == 4791, f"{where}: UDP port {t['udp.dstport']}")
        check(tshark_int(t["udp.checksum"]) == 0, f"{where}: UDP checksum {t['udp.checksum']} (RoCEv2 sends 0)")
        check(tshark_int(t["udp.srcport"]) == int(row["udp_sport"]), f"{where}: UDP sport")
        check(0xc000 <= int(row["udp_sport"]) <= 0xffff, f"{where}: UDP sport outside 0xc000..")
        if op in RETH_OPS:
            check(t["infiniband.reth.va"] != "" and t["infiniband.reth.dmalen"] != "",
                  f"{where}: tshark shows no RETH")
        else:
            check(t["infiniband.reth.va"] == "", f"{where}: unexpected RETH")
        if op in AETH_OPS:
            check(t["infiniband.aeth.msn"] != "", f"{where}: tshark shows no AETH")
        if v6:
            ecn, dscp = tshark_int(t["ipv6.tclass.ecn"]), tshark_int(t["ipv6.tclass.dscp"])
            check(tshark_int(t["ipv6.flow"]) not in (None, 0), f"{where}: zero flow label")
        else:
            ecn, dscp = tshark_int(t["ip.dsfield.ecn"]), tshark_int(t["ip.dsfield.dscp"])
            check(t["ip.flags.df"] in ("1", "True"), f"{where}: DF not set ({t['ip.flags.df']})")
            check(t["ip.checksum.status"] == "1", f"{where}: tshark IPv4 checksum status {t['ip.checksum.status']}")
        if op == 0x81:
            check((dscp, ecn) == (48, 0), f"{where}: CNP DSCP/ECN {dscp}/{ecn}, expected 48/0")
        else:
            check((dscp, ecn) == (26, 2), f"{where}: DSCP/ECN {dscp}/{ecn}, expected 26/ECT(0)")

        # scapy parse.
        check(pkt.haslayer(roce.BTH), f"{where}: scapy finds no BTH")
        bth = pkt[roce.BTH]
        check(bth.opcode == op and bth.dqpn == qp and bth.psn == psn,
              f"{where}: scapy BTH {bth.opcode:#x}/{bth.dqpn}/{bth.psn}")
        check(bth.migreq == 1 and bth.version == 0 and bth.padcount == 0, f"{where}: BTH flags")
        if op in RETH_OPS:
            check(pkt.haslayer(RETH), f"{where}: scapy finds no RETH")
            reth = pkt[RETH]
            check(tshark_int(t["infiniband.reth.va"]) == reth.va and
                  tshark_int(t["infiniband.reth.r_key"]) == reth.rkey and
                  tshark_int(t["infiniband.reth.dmalen"]) == reth.dmalen,
                  f"{where}: tshark and scapy disagree on the RETH")
            # VA advances by the DMA length of the previous request on the QP.
            if qp in rethva_by_qp:
                prev_va, prev_len = rethva_by_qp[qp]
                check(reth.va == prev_va + prev_len, f"{where}: VA {reth.va:#x} does not follow")
            rethva_by_qp[qp] = (reth.va, reth.dmalen)
        if op in AETH_OPS:
            check(pkt.haslayer(roce.AETH), f"{where}: scapy finds no AETH")

        ip_layer = pkt[IPv6] if v6 else pkt[IP]
        ip_bytes = raw(ip_layer)
        ip_len = (40 + ip_layer.plen) if v6 else ip_layer.len
        check(ip_len == len(ip_bytes), f"{where}: IP length {ip_len} != {len(ip_bytes)} bytes")
        udp = pkt[UDP]
        check(udp.len == len(ip_bytes) - (40 if v6 else 20), f"{where}: UDP length {udp.len}")

        # ICRC: independent computation for every frame, scapy's for IPv4.
        stored = struct.unpack("<I", ip_bytes[-4:])[0]
        want = expected_icrc(ip_bytes, v6)
        check(stored == want, f"{where}: ICRC {stored:#010x}, expected {want:#010x}")
        # tshark shows (without verifying) the ICRC unless it cannot dissect the transport
        # (CNPs, and zero-length sends that its RPC-over-RDMA heuristic claims).
        if t["infiniband.invariant.crc"]:
            icrc_shown += 1
            check(tshark_int(t["infiniband.invariant.crc"]) in (stored, struct.unpack(">I", ip_bytes[-4:])[0]),
                  f"{where}: tshark ICRC field {t['infiniband.invariant.crc']}")
        if not v6:
            rebuilt = pkt.copy()
            rebuilt[roce.BTH].icrc = None  # scapy recomputes it on build
            check(raw(rebuilt) == data, f"{where}: scapy computes a different IPv4 ICRC")
            rechk = IP(ip_bytes)
            orig = rechk.chksum
            rechk.chksum = None
            check(IP(raw(rechk)).chksum == orig, f"{where}: scapy recomputes IPv4 checksum differently")

        # Transport contents.
        bth_off = len(data) - len(ip_bytes) + (40 if v6 else 20) + 8
        hdr = 12 + (16 if op in RETH_OPS else 0) + (4 if op in AETH_OPS else 0)
        body = data[bth_off + hdr:len(data) - 4]
        if op == 0x81:
            check(bth.becn == 1 and bth.fecn == 0, f"{where}: CNP without BECN")
            check(body == b"\x00" * 16, f"{where}: CNP body {body.hex()}")
            check(psn == 0, f"{where}: CNP PSN {psn}")
            check(bth.ackreq == 0, f"{where}: CNP AckReq")
        else:
            check(bth.becn == 0 and bth.fecn == 0, f"{where}: FECN/BECN set on non-CNP")
            key = (qp,)
            if key in psn_by_qp:
                check(psn == (psn_by_qp[key] + 1) % (1 << 24),
                      f"{where}: PSN {psn} does not follow {psn_by_qp[key]}")
            psn_by_qp[key] = psn
        if op in DATA_OPS:
            check(len(body) % 4 == 0, f"{where}: data length {len(body)} not a multiple of 4")
            headers = len(data) - len(body)
            # The data is the most 4-byte units that fit one of the requested frame sizes.
            check(any(len(body) == max(0, (size - headers) // 4 * 4) for size in requested_sizes),
                  f"{where}: frame length {len(data)} not derived from sizes {requested_sizes}")
            if op == 0x0a:
                check(pkt[RETH].dmalen == len(body), f"{where}: write-only DMA length {pkt[RETH].dmalen} != {len(body)}")
        elif op not in RETH_OPS and op != 0x81:
            check(len(body) == 0, f"{where}: {len(body)} data bytes on a no-data opcode")
        if op == 0x0c:
            check(len(body) == 0, f"{where}: read request carries data")

        # One UDP source port per QP.
        sport_by_qp.setdefault(qp, int(row["udp_sport"]))
        check(sport_by_qp[qp] == int(row["udp_sport"]), f"{where}: QP {qp} changed source port")

    check(roce_frames > 0, f"{name}: no RoCE frames")
    check(icrc_shown >= roce_frames * 3 // 4, f"{name}: tshark showed only {icrc_shown} ICRCs")
    ports = set(sport_by_qp.values())
    check(len(ports) > len(sport_by_qp) // 2, f"{name}: too few distinct UDP source ports {len(ports)}")
    return pcap


def check_non_roce(where, row, pkt, t, v6):
    kind = row["name"]
    protos = t["frame.protocols"]
    check("infiniband" not in protos, f"{where}: non-RoCE frame dissected as InfiniBand")
    if kind == "arp-request":
        check(pkt.haslayer(ARP) and pkt[ARP].op == 1, f"{where}: not an ARP request")
        check(pkt[Ether].dst == "ff:ff:ff:ff:ff:ff", f"{where}: ARP not broadcast")
        check(t["arp.opcode"] == "1", f"{where}: tshark ARP opcode {t['arp.opcode']}")
    elif kind == "nd-solicit":
        check(pkt.haslayer(ICMPv6ND_NS), f"{where}: scapy finds no ND NS")
        check(t["icmpv6.type"] == "135", f"{where}: tshark ICMPv6 type {t['icmpv6.type']}")
        check(t["icmpv6.checksum.status"] == "1", f"{where}: ICMPv6 checksum status {t['icmpv6.checksum.status']}")
        ns = pkt[ICMPv6ND_NS]
        target = socket.inet_pton(socket.AF_INET6, ns.tgt)
        group = socket.inet_ntop(socket.AF_INET6, bytes.fromhex("ff0200000000000000000001ff") + target[13:])
        check(pkt[IPv6].dst == group, f"{where}: NS to {pkt[IPv6].dst}, not the solicited-node group {group}")
        check(pkt[Ether].dst == "33:33:" + ":".join(f"{b:02x}" for b in bytes([0xff]) + target[13:]),
              f"{where}: NS to MAC {pkt[Ether].dst}")
        check(pkt[IPv6].hlim == 255, f"{where}: ND hop limit {pkt[IPv6].hlim}")
    elif kind == "tcp-syn":
        check(pkt.haslayer(TCP) and pkt[TCP].flags == "S", f"{where}: not a TCP SYN")
        check(t["tcp.checksum.status"] == "1", f"{where}: TCP checksum status {t['tcp.checksum.status']}")
        check((pkt.haslayer(IPv6)) == v6, f"{where}: wrong family")
    elif kind == "udp-other":
        check(pkt.haslayer(UDP) and pkt[UDP].dport == 9, f"{where}: not UDP to port 9")
        check(t["udp.checksum.status"] == "1", f"{where}: UDP checksum status {t['udp.checksum.status']}")
    else:
        check(False, f"{where}: unknown non-RoCE kind {kind}")
    if pkt.haslayer(IP):
        check(t["ip.checksum.status"] == "1", f"{where}: IPv4 checksum status {t['ip.checksum.status']}")


def main():
    if len(sys.argv) != 2:
        print(__doc__)
        return 2
    gen = sys.argv[1]
    with tempfile.TemporaryDirectory(prefix="roce-gen-check-") as tmp:
        sizes = [64, 128, 576, 1024, 1500, 4096]
        mixed = ["--count", "900", "--seed", "7", "--hosts", "3", "--qps", "5",
                 "--family", "mixed", "--opcodes", "all", "--sizes", ",".join(map(str, sizes)),
                 "--non-roce-every", "9"]
        a = check_workload(gen, tmp, "mixed", mixed, sizes)
        tagged = ["--count", "300", "--seed", "8", "--hosts", "2", "--qps", "4",
                  "--family", "mixed", "--opcodes", "default", "--sizes", "imix",
                  "--vlan", "100", "--non-roce-every", "5"]
        check_workload(gen, tmp, "tagged", tagged, [64, 576, 1500])

        # Determinism.
        b = os.path.join(tmp, "again.pcap")
        run_gen(gen, b, *mixed)
        check(open(a, "rb").read() == open(b, "rb").read(), "same seed gave a different pcap")
        c = os.path.join(tmp, "other.pcap")
        other = list(mixed)
        other[other.index("--seed") + 1] = "8"
        run_gen(gen, c, *other)
        check(open(a, "rb").read() != open(c, "rb").read(), "different seed gave the same pcap")

        # Bad options are refused, naming the option.
        for bad, option in ((["--family", "ipv5"], "--family"), (["--opcodes", "write-lots"], "opcodes"),
                            (["--size", "20"], "sizes"), (["--vlan", "4095"], "--vlan"),
                            (["--hosts", "0"], "hosts"), (["--dscp", "64"], "--dscp"),
                            (["--src-base", "10.0.0.300"], "--src-base")):
            r = subprocess.run([gen, "-o", os.path.join(tmp, "bad.pcap")] + bad,
                               capture_output=True, text=True)
            check(r.returncode != 0 and option in r.stderr,
                  f"bad option {bad}: rc {r.returncode}, stderr '{r.stderr.strip()}'")

    if FAILURES:
        print(f"{len(FAILURES)} check(s) failed")
        return 1
    print("roce-gen output verified by tshark, scapy and an independent ICRC")
    return 0


if __name__ == "__main__":
    sys.exit(main())
