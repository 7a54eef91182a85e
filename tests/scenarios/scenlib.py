# SPDX-License-Identifier: BSD-3-Clause
# Shared vocabulary of the packet scenarios (tests/scenarios/NNN_name/):
#  - for gen.py: RoCEv2 IP packets (tests/oracle/roce_lib.py: scapy, ICRC from the IBTA
#    specification), Ethernet frames with 0..n VLAN tags, SRv6 frames as a remote gateway or
#    the kernel would send them to our local SIDs, and a deterministic pcap writer;
#  - for expect.py: the expected output frames (encap / decap / passed) and counters, stated
#    in the terms run_scenario.py checks with tshark and scapy.
# Nothing here comes from the gateway's own code.
import logging
import os
import struct
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(SRC, "tests", "oracle"))

logging.getLogger("scapy.runtime").setLevel(logging.ERROR)
from roce_lib import (OP_ACK, OP_CNP, OP_READ_REQUEST, OP_SEND_ONLY,  # noqa: E402,F401
                      OP_WRITE_FIRST, OP_WRITE_ONLY, icrc, icrc_valid, roce_ip_packet)
from scapy.all import (IPv6, IPv6ExtHdrDestOpt, IPv6ExtHdrSegmentRouting, Raw,  # noqa: E402
                       raw)

# BTH opcodes (IBTA 9.2, RC) not named in roce_lib.
OP_SEND_FIRST = 0x00
OP_SEND_MIDDLE = 0x01
OP_SEND_LAST = 0x02
OP_WRITE_MIDDLE = 0x07
OP_WRITE_LAST = 0x08

ECN_NOT_ECT, ECN_ECT1, ECN_ECT0, ECN_CE = 0, 1, 2, 3
DSCP26 = 26 << 2  # RoCE data traffic class (AF31) as most fabrics configure it

# Ethernet addresses of the scenarios' world.
HOST_RNIC_MAC = "02:00:00:00:00:01"  # the GPU server's RNIC on the host port
HOST_GW_MAC = "02:00:00:00:00:02"  # what the RNIC addresses: its default gateway (the leaf)
LEAF_MAC = "02:00:00:00:0f:01"  # the leaf switch behind the fabric port
REMOTE_GW_MAC = "02:00:00:00:0f:02"  # source MAC of frames the fabric sends us
GW_FABRIC_MAC = "02:00:00:00:0e:01"  # what the leaf addresses frames for the gateway to

TPID_8021Q = 0x8100
TPID_8021AD = 0x88A8

# ------------------------------------------------------------------------------------------
# Frames


def eth(payload: bytes, dst=HOST_GW_MAC, src=HOST_RNIC_MAC, tags=(), ethertype=None) -> bytes:
    """Ethernet frame: `tags` is a sequence of (TPID, TCI), outermost first; the ethertype
    follows the IP version of `payload` unless given."""
    if ethertype is None:
        ethertype = 0x0800 if payload[0] >> 4 == 4 else 0x86DD
    out = bytes.fromhex(dst.replace(":", "")) + bytes.fromhex(src.replace(":", ""))
    for tpid, tci in tags:
        out += struct.pack("!HH", tpid, tci)
    return out + struct.pack("!H", ethertype) + payload


def fab(payload: bytes, tags=()) -> bytes:
    """A frame the leaf sends to the gateway's fabric port."""
    return eth(payload, dst=GW_FABRIC_MAC, src=LEAF_MAC, tags=tags)


def roce4(dst, qp, psn=1, opcode=OP_SEND_ONLY, src="10.0.0.1", tos=DSCP26 | ECN_ECT0, **kw):
    """RoCEv2 over IPv4, IP bytes with a valid ICRC."""
    return roce_ip_packet(4, src, dst, opcode, qp, psn, tos=tos, **kw)


def roce6(dst, qp, psn=1, opcode=OP_SEND_ONLY, src="fd00::1", tos=DSCP26 | ECN_ECT0, **kw):
    """RoCEv2 over IPv6, IP bytes with a valid ICRC (scapy writes 0 for IPv6: roce_lib fixes)."""
    return roce_ip_packet(6, src, dst, opcode, qp, psn, tos=tos, **kw)


def _udp_checksum(ip: bytes, udp_off: int) -> int:
    """RFC 768 / RFC 8200 8.1 UDP checksum of the datagram at udp_off (its field zeroed)."""
    udp = bytearray(ip[udp_off:])
    udp[6:8] = b"\0\0"
    if ip[0] >> 4 == 4:
        pseudo = ip[12:20] + struct.pack("!BBH", 0, 17, len(udp))
    else:
        pseudo = ip[8:40] + struct.pack("!IxxxB", len(udp), 17)
    data = pseudo + bytes(udp) + (b"\0" if len(udp) % 2 else b"")
    total = sum(struct.unpack(f"!{len(data) // 2}H", data))
    while total >> 16:
        total = (total & 0xFFFF) + (total >> 16)
    return (~total & 0xFFFF) or 0xFFFF


class RoceTemplate:
    """Many RoCEv2 packets that differ only in DestQP, fast: scapy builds the packet once
    (roce_ip_packet), each copy gets its QP patched, then the ICRC (IBTA A17, roce_lib) and
    the UDP checksum recomputed. The first copies are compared with scapy-built ones."""

    def __init__(self, family, dst, psn, opcode, **kw):
        self.args = (family, dst, psn, opcode, kw)
        self.base = roce_ip_packet(family, kw.pop("src", "10.0.0.1" if family == 4 else
                                                  "fd00::1"), dst, opcode, 0, psn, **kw)
        self.udp = (self.base[0] & 0xF) * 4 if family == 4 else 40
        self.checked = 0

    def make(self, qp):
        b = bytearray(self.base)
        bth = self.udp + 8
        b[bth + 5:bth + 8] = qp.to_bytes(3, "big")
        b[-4:] = icrc(bytes(b)).to_bytes(4, "little")
        b[self.udp + 6:self.udp + 8] = _udp_checksum(bytes(b), self.udp).to_bytes(2, "big")
        out = bytes(b)
        if self.checked < 3:  # the shortcut must give what scapy gives
            family, dst, psn, opcode, kw = self.args
            ref = roce_ip_packet(family, kw.get("src", "10.0.0.1" if family == 4 else "fd00::1"),
                                 dst, opcode, qp, psn,
                                 **{k: v for k, v in kw.items() if k != "src"})
            assert out == ref, f"RoceTemplate differs from roce_ip_packet for QP {qp:#x}"
            self.checked += 1
        return out


def srv6(inner: bytes, da: str, srh=None, segleft=0, tag=0, src="fc00:0:2::1", tc=None,
         hlim=63, dest_opts=False, last_entry=None, flow_label=0x5A5A5) -> bytes:
    """Outer IPv6 (+ an SRH when `srh` lists addresses, Segment List[0] first) around the
    inner IP packet, as a remote RFC 8986 headend sends it. tc defaults to the inner DSCP/ECN
    (RFC 6040 normal mode at the remote encapsulator)."""
    inner_v4 = inner[0] >> 4 == 4
    nh_inner = 4 if inner_v4 else 41
    if tc is None:
        tc = inner[1] if inner_v4 else ((inner[0] & 0xF) << 4 | inner[1] >> 4)
    outer = IPv6(src=src, dst=da, tc=tc, fl=flow_label, hlim=hlim)
    chain = outer
    if dest_opts:
        chain = chain / IPv6ExtHdrDestOpt(nh=43 if srh is not None else nh_inner)
    if srh is not None:
        s = IPv6ExtHdrSegmentRouting(nh=nh_inner, addresses=list(srh), segleft=segleft, tag=tag)
        if last_entry is not None:
            s.lastentry = last_entry
        chain = chain / s
    else:
        if not dest_opts:
            outer.nh = nh_inner
    return raw(chain / Raw(inner))


# ------------------------------------------------------------------------------------------
# Deterministic pcap output


def write_pcap(path, frames, t0_us=1_700_000_000_000_000, step_us=1):
    """Classic pcap (microseconds, little endian, Ethernet), fixed timestamps: the same
    frames always give the same bytes."""
    with open(path, "wb") as f:
        f.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1))
        for i, data in enumerate(frames):
            ts = t0_us + i * step_us
            f.write(struct.pack("<IIII", ts // 1_000_000, ts % 1_000_000, len(data), len(data)))
            f.write(data)


def gen_main(host_frames=None, fabric_frames=None):
    """Entry point of every gen.py: writes send-host.pcap / send-fabric.pcap into the
    directory given as argv[1] (default: the scenario folder itself)."""
    outdir = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(
        sys.modules["__main__"].__file__))
    os.makedirs(outdir, exist_ok=True)
    if host_frames is not None:
        write_pcap(os.path.join(outdir, "send-host.pcap"), host_frames)
    if fabric_frames is not None:
        write_pcap(os.path.join(outdir, "send-fabric.pcap"), fabric_frames)


# ------------------------------------------------------------------------------------------
# Expectations (expect.py). Each output frame is one of:
#   encap(host=i, ...)   the RoCEv2 packet of input host frame i, encapsulated;
#   decap(fabric=i, ...) the inner packet of input fabric frame i, decapsulated;
#   passed(side, i)      input frame i of side "host"/"fabric", byte for byte.
# MAC values: a literal address, "port" (the gateway's own port MAC, from --stats-json) or
# "input" (the addresses of the input frame: transparent mode).

GW_SOURCE = "fc00:0:1::1"


def encap(host, da, srh=None, segleft=None, last=None, tag=None, src=GW_SOURCE, hlim=64,
          tclass=None, eth_dst=LEAF_MAC, eth_src="port"):
    """H.Encaps(.Red): outer IPv6 to `da`; `srh` the SRH segment list as on the wire
    (Segment List[0] first) or None for no SRH; tclass None = copied from the inner."""
    if srh is not None:
        assert segleft is not None and last is not None and tag is not None
    return {"kind": "encap", "src_index": host, "da": da, "srh": srh, "segleft": segleft,
            "last": last, "tag": tag, "src": src, "hlim": hlim, "tclass": tclass,
            "eth_dst": eth_dst, "eth_src": eth_src}


def decap(fabric, ecn=None, eth_dst=HOST_RNIC_MAC, eth_src="port"):
    """Decapsulation of fabric frame `fabric`: the inner IP packet, its ECN field set to
    `ecn` when given (RFC 6040 egress), everything else identical."""
    return {"kind": "decap", "src_index": fabric, "ecn": ecn, "eth_dst": eth_dst,
            "eth_src": eth_src}


def passed(side, index):
    return {"kind": "passed", "side": side, "src_index": index}


def steered(host, tag, **kw):
    """The steering scenarios' convention: the policy whose path-id is T (hex) goes via
    fc00:0:aT::e to fc00:0:2::d4 with H.Encaps, so the outer destination and the SRH Tag
    both name the policy that matched."""
    first = f"fc00:0:a{tag:x}::e"
    return encap(host, da=first, srh=["fc00:0:2::d4", first], segleft=1, last=1, tag=tag, **kw)


def one_of(*options):
    """Any one of these encapsulations (path selection decides which): the frame must match
    exactly one of them in full; run.choice[output][frame] records the tag it took."""
    return {"kind": "one_of", "options": list(options)}


def cycles_exact(seq, weights):
    """Smooth weighted round robin is exact to the weights over each cycle: every aligned
    window of sum(weights) choices holds each tag exactly its weight times, and in every
    prefix each tag is within one choice of its share. Returns an error string or None."""
    total = sum(weights.values())
    for start in range(0, len(seq) - len(seq) % total, total):
        window = seq[start:start + total]
        counts = {t: window.count(t) for t in weights}
        if counts != weights:
            return f"cycle at {start}: {counts}, weights {weights}"
    seen = {t: 0 for t in weights}
    for k, t in enumerate(seq, 1):
        if t not in seen:
            return f"choice {k - 1}: tag {t} is not one of {list(weights)}"
        seen[t] += 1
        for q, w in weights.items():
            if abs(seen[q] - k * w / total) > 1.0 + 1e-9:
                return f"after {k} choices tag {q} has {seen[q]}, share {k * w / total:.2f}"
    return None
