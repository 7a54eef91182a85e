# SPDX-License-Identifier: BSD-3-Clause
# Shared helpers of the oracle and interop suites: RoCEv2 packets built by scapy (with a valid
# ICRC for IPv4 and IPv6), an ICRC computed independently of the packet core, expected SRv6
# headers derived from the RFCs (not from our code), running srv6gw-pcap and tshark.
import ipaddress
import os
import struct
import subprocess
import sys
import zlib

import logging

logging.getLogger("scapy.runtime").setLevel(logging.ERROR)

from scapy.all import (ARP, Dot1Q, Ether, IP, IPv6, Packet, Raw, TCP, UDP,  # noqa: E402
                       bind_layers)
from scapy.contrib.roce import AETH, BTH, cnp  # noqa: E402
from scapy.fields import IntField, XIntField, XLongField  # noqa: E402

ROCE_PORT = 4791


class RETH(Packet):
    """RDMA Extended Transport Header (IBTA 9.3.3): scapy 2.5 has none."""
    name = "RETH"
    fields_desc = [XLongField("va", 0), XIntField("rkey", 0), IntField("dlen", 0)]


# RC and UC RDMA WRITE first/only and RC READ request carry a RETH right after the BTH.
for _op in (0x06, 0x0A, 0x0C, 0x26, 0x2A):
    bind_layers(BTH, RETH, opcode=_op)

OP_SEND_ONLY = 0x04
OP_WRITE_FIRST = 0x06
OP_WRITE_ONLY = 0x0A
OP_READ_REQUEST = 0x0C
OP_ACK = 0x11
OP_CNP = 0x81


class CheckFailed(Exception):
    pass


def fail(msg):
    raise CheckFailed(msg)


def hexdiff(a: bytes, b: bytes, label_a="expected", label_b="got") -> str:
    """Readable first difference of two byte strings, with 16 bytes of context."""
    n = min(len(a), len(b))
    first = next((i for i in range(n) if a[i] != b[i]), n)
    lo = max(0, first - 8)
    lines = [f"lengths {label_a}={len(a)} {label_b}={len(b)}, first difference at byte {first}",
             f"  {label_a:>8} [{lo}:]: {a[lo:first + 16].hex(' ')}",
             f"  {label_b:>8} [{lo}:]: {b[lo:first + 16].hex(' ')}"]
    return "\n".join(lines)


# ---------------------------------------------------------------------------------------------
# ICRC (IBTA Annex A17), computed here from the specification, independent of lib/net/icrc.


def _masked(ip_packet: bytes) -> bytes:
    b = bytearray(ip_packet[:-4])
    version = b[0] >> 4
    if version == 6:
        b[0] |= 0x0F  # traffic class (high nibble in byte 0, low nibble in byte 1)
        b[1:4] = b"\xff\xff\xff"  # rest of traffic class + flow label
        b[7] = 0xFF  # hop limit
        udp = 40
    elif version == 4:
        b[1] = 0xFF  # TOS
        b[8] = 0xFF  # TTL
        b[10:12] = b"\xff\xff"  # header checksum
        udp = (b[0] & 0x0F) * 4
    else:
        raise ValueError(f"not an IP packet (version {version})")
    b[udp + 6:udp + 8] = b"\xff\xff"  # UDP checksum
    b[udp + 8 + 4] = 0xFF  # BTH FECN/BECN/reserved byte after P_Key
    return bytes(b)


def icrc(ip_packet: bytes) -> int:
    """ICRC of an IP packet that ends with its 4-byte ICRC field."""
    return zlib.crc32(b"\xff" * 8 + _masked(ip_packet)) & 0xFFFFFFFF


def icrc_valid(ip_packet: bytes) -> bool:
    return int.from_bytes(ip_packet[-4:], "little") == icrc(ip_packet)


def _with_icrc(ip_pkt):
    """Bytes of a scapy IP/UDP/BTH packet with a correct ICRC and a UDP checksum over it."""
    raw = bytearray(bytes(ip_pkt))
    value = icrc(bytes(raw))
    if isinstance(ip_pkt, IP):
        # scapy computes the IPv4 ICRC itself: a second oracle that must agree with ours.
        if int.from_bytes(raw[-4:], "little") != value:
            fail(f"scapy ICRC {raw[-4:].hex()} != zlib ICRC {value:08x} for {ip_pkt.summary()}")
        return bytes(raw)
    raw[-4:] = value.to_bytes(4, "little")
    reparsed = IPv6(bytes(raw))
    del reparsed[UDP].chksum  # the UDP checksum covers the ICRC: recompute it
    out = bytes(reparsed)
    if not icrc_valid(out):
        fail("ICRC lost when rebuilding the UDP checksum")
    return out


# ---------------------------------------------------------------------------------------------
# RoCEv2 packets


def roce_ip_packet(family, src, dst, opcode, qp, psn, tos=0, sport=49152, payload_len=64,
                   ttl=64, flow_label=0, ackreq=0, fecn=0, becn=0):
    """One RoCEv2 IP packet (bytes, from the IP header, ending with a valid ICRC)."""
    if family == 4:
        ip = IP(src=src, dst=dst, tos=tos, ttl=ttl, flags="DF", id=0x1000 + (psn & 0xFFF))
    else:
        ip = IPv6(src=src, dst=dst, tc=tos, fl=flow_label, hlim=ttl)
    udp = UDP(sport=sport, dport=ROCE_PORT)
    payload = Raw(bytes((i * 7 + psn) & 0xFF for i in range(payload_len)))
    if opcode == OP_CNP:
        roce = cnp(qp)
        roce[BTH].psn = psn
    elif opcode == OP_ACK:
        roce = BTH(opcode=opcode, dqpn=qp, psn=psn, fecn=fecn, becn=becn) / \
            AETH(syndrome=0x1F, msn=psn)
    elif opcode in (OP_WRITE_FIRST, OP_WRITE_ONLY):
        roce = BTH(opcode=opcode, dqpn=qp, psn=psn, ackreq=ackreq, fecn=fecn, becn=becn) / \
            RETH(va=0x7F0000001000 + psn * 4096, rkey=0x1234 + qp, dlen=payload_len) / payload
    elif opcode == OP_READ_REQUEST:
        roce = BTH(opcode=opcode, dqpn=qp, psn=psn, ackreq=1) / \
            RETH(va=0x7F0000200000, rkey=0xBEEF, dlen=65536)
    else:
        roce = BTH(opcode=opcode, dqpn=qp, psn=psn, ackreq=ackreq, fecn=fecn, becn=becn) / \
            payload
    return _with_icrc(ip / udp / roce)


def frame(ip_bytes: bytes, dst_mac="02:00:00:00:00:02", src_mac="02:00:00:00:00:01", vlan=None,
          padding=0):
    """Ethernet frame around IP bytes, optionally with an 802.1Q tag and trailing padding."""
    ethertype = 0x0800 if ip_bytes[0] >> 4 == 4 else 0x86DD
    if vlan is None:
        eth = Ether(dst=dst_mac, src=src_mac, type=ethertype)
    else:
        eth = Ether(dst=dst_mac, src=src_mac, type=0x8100) / Dot1Q(vlan=vlan, prio=3,
                                                                   type=ethertype)
    return bytes(eth) + ip_bytes + b"\x00" * padding


class Sample:
    """A generated frame and the IP packet inside it (what encapsulation must carry)."""

    def __init__(self, name, frame_bytes, ip_bytes):
        self.name = name
        self.frame = frame_bytes
        self.ip = ip_bytes

    @property
    def family(self):
        return self.ip[0] >> 4


def roce_samples(v4_src="10.0.0.1", v4_dst="10.0.1.2", v6_src="fd00:0::1", v6_dst="fd00:1::2",
                 vlans=(None, 100), big=True):
    """RC SEND-only, WRITE first/only (RETH), READ request (RETH), ACK (AETH), CNP; IPv4 and
    IPv6; with and without VLAN; a spread of DSCP/ECN values, QPs and source ports."""
    samples = []
    kinds = [
        ("send-only", OP_SEND_ONLY, 0x68 | 0x2, 64),  # DSCP 26, ECT(0)
        ("write-first", OP_WRITE_FIRST, 0x68 | 0x1, 1024),  # ECT(1)
        ("write-only", OP_WRITE_ONLY, 0x68 | 0x3, 200),  # CE
        ("read-request", OP_READ_REQUEST, 0xB8 | 0x2, 0),  # DSCP 46
        ("ack", OP_ACK, 0x00, 0),  # not-ECT
        ("cnp", OP_CNP, 0xC0 | 0x2, 0),  # DSCP 48 (CNP priority)
    ]
    if big:
        kinds.append(("write-first-4k", OP_WRITE_FIRST, 0x68 | 0x2, 4096))
    seq = 0
    for family in (4, 6):
        src, dst = (v4_src, v4_dst) if family == 4 else (v6_src, v6_dst)
        for vlan in vlans:
            for name, op, tos, plen in kinds:
                seq += 1
                # Every third PSN near the 24-bit wrap.
                psn = (0xFFFFF0 + seq) & 0xFFFFFF if seq % 3 == 0 else seq * 97
                ip = roce_ip_packet(family, src, dst, op, qp=0x000100 + seq * 0x1011, psn=psn,
                                    tos=tos,
                                    sport=49152 + seq * 13, payload_len=plen,
                                    flow_label=0x12345 if seq % 2 else 0, ackreq=seq % 2)
                label = f"ipv{family}-{'vlan' if vlan is not None else 'untagged'}-{name}"
                samples.append(Sample(label, frame(ip, vlan=vlan), ip))
    return samples


def passthrough_frames():
    """Frames that are not RoCEv2: an encapsulating gateway must leave them alone."""
    return [
        bytes(Ether(dst="ff:ff:ff:ff:ff:ff", src="02:00:00:00:00:01") /
              ARP(psrc="10.0.0.1", pdst="10.0.0.2")),
        bytes(Ether(dst="02:00:00:00:00:02", src="02:00:00:00:00:01") /
              IP(src="10.0.0.1", dst="10.0.1.2") / TCP(sport=40000, dport=22, flags="S")),
        bytes(Ether(dst="02:00:00:00:00:02", src="02:00:00:00:00:01") /
              IPv6(src="fd00::1", dst="fd00:1::2") / UDP(sport=5353, dport=53) / Raw(b"q" * 20)),
    ]


def write_pcap(path, frames, timestamps=None):
    """Classic pcap, microsecond, little-endian, Ethernet: the frames byte for byte."""
    with open(path, "wb") as f:
        f.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1))
        for i, data in enumerate(frames):
            ts = timestamps[i] if timestamps else 1_700_000_000_000_000 + i
            f.write(struct.pack("<IIII", ts // 1_000_000, ts % 1_000_000, len(data), len(data)))
            f.write(data)


def read_pcap(path):
    """Frames of a classic pcap file (either byte order, micro- or nanosecond)."""
    with open(path, "rb") as f:
        data = f.read()
    if len(data) < 24:
        fail(f"{path}: not a pcap file ({len(data)} bytes)")
    magic_le = struct.unpack("<I", data[:4])[0]
    if magic_le in (0xA1B2C3D4, 0xA1B23C4D):
        endian = "<"
    elif struct.unpack(">I", data[:4])[0] in (0xA1B2C3D4, 0xA1B23C4D):
        endian = ">"
    else:
        fail(f"{path}: bad pcap magic {data[:4].hex()}")
    linktype = struct.unpack(endian + "I", data[20:24])[0]
    if linktype != 1:
        fail(f"{path}: link type {linktype}, expected Ethernet")
    frames, off = [], 24
    while off < len(data):
        if off + 16 > len(data):
            fail(f"{path}: truncated record header at {off}")
        _, _, incl, _ = struct.unpack(endian + "IIII", data[off:off + 16])
        off += 16
        if off + incl > len(data):
            fail(f"{path}: truncated record at {off}")
        frames.append(data[off:off + incl])
        off += incl
    return frames


# ---------------------------------------------------------------------------------------------
# Expected SRv6 encapsulation, from RFC 8754 / 8986 / 9800


def usid_containers(sids, block_bits=32, usid_bits=16):
    """NEXT-C-SID: pack block|uSID SIDs into containers block|uSID1|uSID2|...|0."""
    block_bytes, usid_bytes = block_bits // 8, usid_bits // 8
    per_container = (16 - block_bytes) // usid_bytes
    raw = [ipaddress.IPv6Address(s).packed for s in sids]
    block = raw[0][:block_bytes]
    usids = [r[block_bytes:block_bytes + usid_bytes] for r in raw]
    containers = []
    for i in range(0, len(usids), per_container):
        body = b"".join(usids[i:i + per_container])
        containers.append(str(ipaddress.IPv6Address(block + body + b"\x00" * (16 - block_bytes -
                                                                            len(body)))))
    return containers


class Expected:
    """Outer destination and SRH (or none) a mode must produce for a path."""

    def __init__(self, mode, sids, block_bits=32, usid_bits=16):
        path = usid_containers(sids, block_bits, usid_bits) if mode == "usid" else list(sids)
        self.destination = path[0]
        reduced = mode in ("encaps-red", "usid")
        if reduced and len(path) == 1:
            self.srh = None  # H.Encaps.Red with one segment: no SRH
        else:
            listed = path[1:] if reduced else path
            # Segment List[0] is the last segment: list order is the path reversed.
            self.srh = [str(ipaddress.IPv6Address(a)) for a in reversed(listed)]
            self.segments_left = len(path) - 1
            self.last_entry = len(listed) - 1


# ---------------------------------------------------------------------------------------------
# Tools


def run(cmd, check=True, **kw):
    r = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if check and r.returncode != 0:
        fail(f"command failed ({r.returncode}): {' '.join(map(str, cmd))}\n"
             f"stdout:\n{r.stdout}\nstderr:\n{r.stderr}")
    return r


def tshark_fields(path, fields):
    """One dict per frame: field -> list of occurrences (tshark 'all occurrences')."""
    cmd = ["tshark", "-n", "-r", path, "-T", "fields", "-E", "separator=\t", "-E",
           "occurrence=a", "-E", "aggregator=|"]
    for f in fields:
        cmd += ["-e", f]
    r = run(cmd)
    rows = []
    for line in r.stdout.splitlines():
        cols = line.split("\t")
        cols += [""] * (len(fields) - len(cols))
        rows.append({f: ([v for v in c.split("|")] if c else []) for f, c in zip(fields, cols)})
    return rows


def num(text):
    return int(text, 0)


def log(msg):
    print(msg, flush=True)


def report_hang(signum):
    """What a test was doing when it was told to stop (meson sends SIGTERM at its timeout):
    every Python thread's stack, and for each process below this one its state, kernel wait
    channel and kernel stack, so that a hang in CI can be read from the log afterwards."""
    import faulthandler
    print(f"== signal {signum}: Python stacks of pid {os.getpid()}", file=sys.stderr, flush=True)
    faulthandler.dump_traceback(file=sys.stderr, all_threads=True)
    children = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat") as f:
                stat = f.read()
        except OSError:
            continue
        fields = stat[stat.rfind(")") + 2:].split()
        children.setdefault(int(fields[1]), []).append((int(d), fields[0], stat))
    todo = [os.getpid()]
    while todo:
        for pid, state, stat in children.get(todo.pop(), []):
            todo.append(pid)
            info = []
            for what in ("wchan", "stack", "cmdline"):
                try:
                    with open(f"/proc/{pid}/{what}", "rb") as f:
                        info.append(f.read().replace(b"\0", b" ").decode(errors="replace").strip())
                except OSError:
                    info.append("?")
            print(f"== pid {pid} state {state} wchan {info[0]}: {info[2][:200]}\n{info[1]}",
                  file=sys.stderr, flush=True)


def main_wrapper(fn):
    try:
        fn()
    except CheckFailed as e:
        print(f"FAIL: {e}", file=sys.stderr, flush=True)
        sys.exit(1)
    sys.exit(0)


def tool_path(arg):
    p = os.path.abspath(arg)
    if not os.access(p, os.X_OK):
        print(f"srv6gw-pcap not found or not executable: {p}", file=sys.stderr)
        sys.exit(1)
    return p
