#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
# Malformed-traffic corpus through the real daemon on net_pcap vdevs (issue 8): thousands of
# broken, odd and oversized frames from the host and from the fabric, each class with the
# outcome it must have (encapsulated, decapsulated, passed, or dropped under a named reason),
# stated here from the header layouts (RFC 791/8200/768/8754, IBTA BTH), not from the parser.
#
# Host side (RoCEv2 toward steered destinations), IPv4 and IPv6:
#   truncation at every byte offset (length fields as sent, and fixed up to the cut);
#   IHL 0..4, IHL beyond the total length, total length < 20, IPv4 options (valid: encap);
#   UDP length 0 / < 8 / beyond the IP payload, UDP with no payload to 4791; BTH TVer 1..15;
#   IPv4 MF / offset and IPv6 fragment headers; 1, 2 and 3 VLAN tags;
#   IPv6 extension chains: 8 (the walk's bound: classified), 9, 40 and 150 headers,
#   hop-by-hop repeated (loop-like), a header length overrunning the packet, No Next Header;
#   9000 B and 4 KB frames.
# Fabric side (SRv6 toward our End.DX4 SID): truncation at every byte offset (as sent and
# with the outer payload length fixed up); SRH segments left 1..255 over last entry 2,
# Hdr Ext Len 0..5 (below the segment list) and overrunning; outer fragments; extension
# chains before the SRH; 1, 2, 3 VLAN tags; 9000 B and 4 KB SRv6 frames.
#
# Checks: exit code 0 (no crash), every counter named in the expectations exact, every other
# drop reason and parse/decap status 0, received = encap/decap + passed + drops, TX counters
# equal the frames written, and every mempool's in-use count back at its value from before
# the workers started (no mbuf leaked on any path, jumbo chains included).
import json
import os
import struct
import sys
from collections import Counter

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "scenarios"))
import gwlib  # noqa: E402
from scenlib import (LEAF_MAC, TPID_8021AD, TPID_8021Q, eth, fab,  # noqa: E402
                     roce4, roce6, srv6, write_pcap)
from scapy.all import (IP, IPOption_NOP, IPv6, IPv6ExtHdrDestOpt, IPv6ExtHdrFragment,  # noqa: E402
                       IPv6ExtHdrHopByHop, IPv6ExtHdrSegmentRouting, Raw, UDP, raw)

DX4 = "fc00:0:1::d4"
SRH = [DX4, "fc00:0:11::e", "fc00:0:21::e"]
JUMBO = 9000  # bytes of IP packet in the jumbo frames

CONFIG = {
    "srv6gw:gateway": {
        "ports": {"host": "net_pcap0", "fabric": "net_pcap1", "queues": 1, "mbufs": 4095,
                  "fabric-nexthop-mac": LEAF_MAC, "host-mac": "02:00:00:00:00:01"},
        "source-address": "fc00:0:1::1",
        "hop-limit": 64,
        # Host frames that are not RoCEv2 pass (a bump in the wire must not break the host);
        # fabric frames not for our SIDs are dropped so that they are counted by name.
        "actions": {"steering-miss": "pass", "non-roce": "pass", "fabric-non-sid": "drop"},
        "stats-interval-ms": 0,
        "policies": {"policy": [{"name": "rack2", "encap": "encaps", "segment-list": [
            {"name": "via-spine1", "path-id": 101,
             "sid": ["fc00:0:11::e", "fc00:0:21::e", "fc00:0:2::d4"]}]}]},
        "steering": {"rule": [{"id": 1, "prefix": "10.0.1.0/24", "policy": "rack2"},
                              {"id": 2, "prefix": "fd00:1::/64", "policy": "rack2"}]},
        "local-sids": {"local-sid": [{"sid": DX4, "behavior": "end-dx4"}]},
    }
}


def be16(v):
    return struct.pack("!H", v)


def patch(b, off, data):
    b = bytearray(b)
    b[off:off + len(data)] = data
    return bytes(b)


def ipv4_checksum(hdr):
    hdr = bytearray(hdr)
    hdr[10:12] = b"\0\0"
    s = sum(struct.unpack(f"!{len(hdr) // 2}H", bytes(hdr)))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return be16(~s & 0xFFFF)


def fix4(ip):
    """IPv4 header checksum recomputed (the gateway does not check it, a real host would)."""
    ihl = (ip[0] & 0xF) * 4
    if len(ip) < ihl or ihl < 20:
        return ip
    return patch(ip, 10, ipv4_checksum(ip[:ihl]))


class Corpus:
    """Frames and, per frame, the counters it must move: ("encap",), ("pass", status) or
    ("drop", reason, status) on the host side; ("decap",), ("drop", reason, status) on the
    fabric side."""

    def __init__(self):
        self.frames = []
        self.expect = Counter()
        self.classes = Counter()

    def add(self, cls, frame, *counters):
        self.frames.append(bytes(frame))
        self.classes[cls] += 1
        for c in counters:
            self.expect[c] += 1


def host_corpus():
    c = Corpus()
    good4 = roce4("10.0.1.2", qp=0x10, psn=1, payload_len=64)
    good6 = roce6("fd00:1::2", qp=0x10, psn=2, payload_len=64)
    encap = ("encap",)
    mal = "drops.malformed"

    def malformed(status):
        return (mal, f"parse_status.{status}")

    def passed(status):
        return ("passed_host_to_fabric", f"parse_status.{status}")

    c.add("good", eth(good4), *encap)
    c.add("good", eth(good6), *encap)

    # Truncation at every byte offset, length fields as sent.
    f4, f6 = eth(good4), eth(good6)
    for n in range(len(f4)):
        st = "truncated_eth" if n < 14 else "truncated_ipv4" if n < 34 else "bad_ipv4_length"
        c.add("trunc4", f4[:n], *malformed(st))
    for n in range(len(f6)):
        st = "truncated_eth" if n < 14 else "truncated_ipv6" if n < 54 else "bad_ipv6_length"
        c.add("trunc6", f6[:n], *malformed(st))
    # Truncation with the IP length fixed up to the cut (UDP length as sent), then with both.
    for n in range(20, len(good4)):
        ip = fix4(patch(good4[:n], 2, be16(n)))
        st = "truncated_udp" if n - 20 < 8 else "bad_udp_length"
        c.add("cut4-iplen", eth(ip), *malformed(st))
        ip2 = patch(ip, 24, be16(n - 20)) if n - 20 >= 8 else ip
        udp_payload = n - 28
        if n - 20 < 8:
            c.add("cut4-both", eth(ip2), *malformed("truncated_udp"))
        elif udp_payload < 16:  # BTH (12) + ICRC (4)
            c.add("cut4-both", eth(ip2), *malformed("truncated_bth"))
        else:
            c.add("cut4-both", eth(ip2), "encap")
    for n in range(40, len(good6)):
        ip = patch(good6[:n], 4, be16(n - 40))
        st = "truncated_udp" if n - 40 < 8 else "bad_udp_length"
        c.add("cut6-iplen", eth(ip), *malformed(st))
        if n - 40 >= 8:
            ip = patch(ip, 44, be16(n - 40))
            if n - 48 < 16:
                c.add("cut6-both", eth(ip), *malformed("truncated_bth"))
            else:
                c.add("cut6-both", eth(ip), "encap")

    # IPv4 header fields.
    for ihl in range(5):
        c.add("ihl<5", eth(fix4(patch(good4, 0, bytes([0x40 | ihl])))), *malformed("bad_ipv4_ihl"))
    small = roce4("10.0.1.2", qp=0x11, payload_len=0)  # 20 + 8 + 12 + 4 = 44 B
    # IHL 15 (60 B) over a 44 B packet: the frame (Ethernet padding after the packet) holds
    # 60 B, the total length does not; then a frame that does not hold 60 B either.
    c.add("ihl>len", eth(fix4(patch(small, 0, b"\x4f")) + bytes(20)), *malformed("bad_ipv4_length"))
    c.add("ihl>frame", eth(fix4(patch(small, 0, b"\x4f"))), *malformed("truncated_ipv4"))
    for tl in (0, 1, 19):
        c.add("totlen<20", eth(fix4(patch(good4, 2, be16(tl)))), *malformed("bad_ipv4_length"))
    with_opts = raw(IP(src="10.0.0.1", dst="10.0.1.2", proto=17, options=[IPOption_NOP()] * 4) /
                    Raw(good4[20:]))
    c.add("ipv4-options", eth(with_opts), *encap)

    # UDP lengths and empty UDP.
    for ul in (0, 1, 7):
        c.add("udp-len<8", eth(patch(good4, 24, be16(ul))), *malformed("bad_udp_length"))
    c.add("udp-len>ip", eth(patch(good4, 24, be16(len(good4) - 20 + 1))),
          *malformed("bad_udp_length"))
    empty4 = raw(IP(src="10.0.0.1", dst="10.0.1.2") / UDP(sport=49152, dport=4791))
    empty6 = raw(IPv6(src="fd00::1", dst="fd00:1::2") / UDP(sport=49152, dport=4791))
    c.add("udp-empty", eth(empty4), *malformed("truncated_bth"))
    c.add("udp-empty", eth(empty6), *malformed("truncated_bth"))
    c.add("udp-empty-other-port",
          eth(raw(IP(src="10.0.0.1", dst="10.0.1.2") / UDP(sport=1, dport=9))), *passed("not_roce"))

    # BTH transport header version (byte 1 of BTH, low nibble).
    for tver in range(1, 16):
        c.add("bth-tver", eth(patch(good4, 28 + 1, bytes([tver]))), *malformed("bad_bth_tver"))
        c.add("bth-tver", eth(patch(good6, 48 + 1, bytes([tver]))), *malformed("bad_bth_tver"))

    # Fragments: never RoCEv2, never reassembled: pass-through.
    c.add("frag4", eth(fix4(patch(good4, 6, b"\x20\x00"))), *passed("fragment"))   # MF
    c.add("frag4", eth(fix4(patch(good4, 6, b"\x00\x10"))), *passed("fragment"))   # offset
    frag6 = raw(IPv6(src="fd00::1", dst="fd00:1::2") / IPv6ExtHdrFragment(nh=17, offset=0, m=1) /
                Raw(good6[40:]))
    c.add("frag6", eth(frag6), *passed("fragment"))
    frag6b = raw(IPv6(src="fd00::1", dst="fd00:1::2") / IPv6ExtHdrFragment(nh=17, offset=8, m=0) /
                 Raw(good6[40:]))
    c.add("frag6", eth(frag6b), *passed("fragment"))

    # VLAN stacks: one or two tags are classified; three pass untouched.
    c.add("vlan1", eth(good4, tags=[(TPID_8021Q, 10)]), *encap)
    c.add("vlan2", eth(good6, tags=[(TPID_8021AD, 20), (TPID_8021Q, 10)]), *encap)
    c.add("vlan3", eth(good4, tags=[(TPID_8021AD, 1), (TPID_8021Q, 2), (TPID_8021Q, 3)]),
          *passed("too_many_vlans"))

    # IPv6 extension-header chains before UDP.
    def chain6(n, hdr=IPv6ExtHdrDestOpt, payload=good6[40:]):
        pkt = IPv6(src="fd00::1", dst="fd00:1::2")
        for _ in range(n):
            pkt = pkt / hdr()
        pkt.lastlayer().nh = 17
        return raw(pkt / Raw(payload))
    c.add("ext-8", eth(chain6(8)), *encap)  # at the walk's bound: still RoCEv2
    for n in (9, 40, 150):
        c.add(f"ext-{n}", eth(chain6(n)), *passed("ext_chain_too_long"))
    c.add("ext-hbh-loop", eth(chain6(30, IPv6ExtHdrHopByHop)), *passed("ext_chain_too_long"))
    overrun = patch(chain6(2), 40 + 1, b"\xff")  # first header claims 2048 B
    c.add("ext-overrun", eth(overrun), *malformed("truncated_ext"))
    c.add("ext-no-next", eth(raw(IPv6(src="fd00::1", dst="fd00:1::2") /
                                 IPv6ExtHdrDestOpt(nh=59) / Raw(bytes(16)))), *passed("not_udp"))

    # Big frames: 4 KB (the RoCE MTU the mempool is sized for) is encapsulated; 9 KB frames do
    # not fit one mbuf segment.
    big4 = roce4("10.0.1.2", qp=0x12, payload_len=4096)
    c.add("4k", eth(big4), *encap)
    jumbo4 = roce4("10.0.1.2", qp=0x13, payload_len=JUMBO - 20 - 8 - 16)
    jumbo6 = roce6("fd00:1::2", qp=0x13, payload_len=JUMBO - 40 - 8 - 16)
    c.add("jumbo", eth(jumbo4), *JUMBO_HOST)
    c.add("jumbo", eth(jumbo6), *JUMBO_HOST)
    c.add("good", eth(good4), *encap)
    return c


def fabric_corpus():
    c = Corpus()
    inner = roce4("10.0.0.1", src="10.0.1.2", qp=0x41, psn=1, payload_len=32)
    good = srv6(inner, DX4, SRH, tag=201)  # 40 + 56 (SRH, 3 SIDs) + inner
    srh_len = 8 + 16 * len(SRH)
    decap = ("decap",)

    def refused(status):
        return ("drops.decap_refused", f"decap_status.{status}")

    c.add("good", fab(good), *decap)
    frame = fab(good)
    for n in range(len(frame)):
        if n < 14:
            c.add("trunc", frame[:n], "drops.malformed", "parse_status.truncated_eth")
        elif n < 54:  # no whole IPv6 header: no SID to look up
            c.add("trunc", frame[:n], "drops.non_sid_dropped")
        else:
            c.add("trunc", frame[:n], *refused("bad_outer_length"))
    for n in range(40, len(good)):
        pkt = patch(good[:n], 4, be16(n - 40))
        p = n - 40
        if p < srh_len:
            c.add("cut-fixed", fab(pkt), *refused("truncated_ext"))
        else:
            c.add("cut-fixed", fab(pkt), *refused("truncated_inner"))

    # SRH fields: segments left over last entry (2); Hdr Ext Len below the list / overrunning.
    for sl in range(1, 256):
        # RFC 8754 4.3.1.1: Segments Left up to Last Entry + 1 is a valid SRH.
        st = "segments_left_nonzero" if sl <= 3 else "srh_inconsistent"
        c.add("srh-segleft", fab(patch(good, 40 + 3, bytes([sl]))), *refused(st))
    for hl in range(0, 6):
        c.add("srh-len<list", fab(patch(good, 40 + 1, bytes([hl]))), *refused("srh_inconsistent"))
    for hl in (20, 100, 255):
        c.add("srh-len-overrun", fab(patch(good, 40 + 1, bytes([hl]))), *refused("truncated_ext"))

    outer = IPv6(src="fc00:0:2::1", dst=DX4, hlim=63)
    srh = IPv6ExtHdrSegmentRouting(nh=4, addresses=SRH, segleft=0, tag=201)
    for off, m in ((1, 0), (0, 1), (100, 1)):
        pkt = raw(outer / IPv6ExtHdrFragment(nh=43, offset=off, m=m, id=9) / srh / Raw(inner))
        c.add("outer-frag", fab(pkt), *refused("outer_fragment"))

    def chain(n, hdr=IPv6ExtHdrDestOpt):
        pkt = outer.copy()
        for _ in range(n):
            pkt = pkt / hdr()
        pkt.lastlayer().nh = 43
        return raw(pkt / srh / Raw(inner))
    c.add("ext-1", fab(chain(1)), *decap)
    for n in (9, 40, 150):
        c.add(f"ext-{n}", fab(chain(n)), *refused("ext_chain_too_long"))
    c.add("ext-hbh-loop", fab(chain(30, IPv6ExtHdrHopByHop)), *refused("ext_chain_too_long"))

    c.add("vlan1", fab(good, tags=[(TPID_8021Q, 10)]), *decap)
    c.add("vlan2", fab(good, tags=[(TPID_8021AD, 20), (TPID_8021Q, 10)]), *decap)
    # A third tag hides the IPv6 ethertype: not ours, dropped by the fabric-non-sid action.
    c.add("vlan3", fab(good, tags=[(TPID_8021AD, 1), (TPID_8021Q, 2), (TPID_8021Q, 3)]),
          "drops.non_sid_dropped")

    big_inner = roce4("10.0.0.1", src="10.0.1.2", qp=0x42, payload_len=4096)
    c.add("4k", fab(srv6(big_inner, DX4, SRH, tag=201)), *decap)
    jumbo_inner = roce4("10.0.0.1", src="10.0.1.2", qp=0x43,
                        payload_len=JUMBO - 40 - srh_len - 20 - 8 - 16)
    c.add("jumbo", fab(srv6(jumbo_inner, DX4, SRH, tag=201)), *JUMBO_FABRIC)
    c.add("good", fab(good), *decap)
    return c


# 9 KB frames arrive as mbuf chains (net_pcap scatters what exceeds one segment; a NIC would
# drop them at its 4 KB-RoCE MTU): headers are read from the first segment only, so the
# gateway drops them unparsed, as oversize, and frees the whole chain.
JUMBO_HOST = ("drops.oversize",)
JUMBO_FABRIC = ("drops.oversize",)


def pcap_count(path):
    n = 0
    with open(path, "rb") as f:
        f.read(24)
        while True:
            h = f.read(16)
            if len(h) < 16:
                return n
            f.seek(struct.unpack("<IIII", h)[2], 1)
            n += 1


def run_side(side, corpus, work):
    empty = os.path.join(work, "empty.pcap")
    write_pcap(empty, [])
    send = os.path.join(work, f"send-{side}.pcap")
    write_pcap(send, corpus.frames)
    host_out = os.path.join(work, f"{side}-host-out.pcap")
    fabric_out = os.path.join(work, f"{side}-fabric-out.pcap")
    cfg = os.path.join(work, "config.json")
    with open(cfg, "w") as f:
        json.dump(CONFIG, f)
    vdevs = [f"net_pcap0,rx_pcap={send if side == 'host' else empty},tx_pcap={host_out}",
             f"net_pcap1,rx_pcap={send if side == 'fabric' else empty},tx_pcap={fabric_out}"]
    stats_json = os.path.join(work, f"{side}-stats.json")
    prefix = gwlib.unique_prefix("mal" + side[0])
    rc, out, err = gwlib.run(gwlib.eal_args(prefix, vdevs),
                             ["--config", cfg, "--until-idle", "500", "--stats-json", stats_json,
                              "--stats-interval", "0"], timeout=180)
    if rc != 0:
        print(out)
        print(err[-4000:])
        gwlib.fail(f"{side} corpus: gateway exit code {rc}")
    with open(stats_json) as f:
        stats = json.load(f)
    t = stats["total"]
    n = len(corpus.frames)
    print(f"{side}: {n} frames in {len(corpus.classes)} classes: "
          + ", ".join(f"{k} {v}" for k, v in sorted(corpus.classes.items())), flush=True)
    failures = []

    def value(dotted):
        v = t
        for part in dotted.split("."):
            v = v[part]
        return v

    for name, want in sorted(corpus.expect.items()):
        got = value(name)
        print(f"  {name:40} expected {want:6} got {got:6}", flush=True)
        if got != want:
            failures.append(f"{name}: expected {want}, got {got}")
    for group in ("drops", "parse_status", "decap_status"):
        for k, v in t[group].items():
            if k != "ok" and v and f"{group}.{k}" not in corpus.expect:
                failures.append(f"{group}.{k} = {v}, expected 0")
    rx = t["rx_host"] if side == "host" else t["rx_fabric"]
    if rx != n:
        failures.append(f"rx_{side} {rx} != {n} frames sent")
    handled = t["encap"] + t["decap"] + t["passed_host_to_fabric"] + t["passed_fabric_to_host"] \
        + t["drops_total"]
    if handled != rx:
        failures.append(f"received {rx} != encap + decap + passed + drops = {handled}")
    for port, out_pcap in (("tx_host", host_out), ("tx_fabric", fabric_out)):
        if t[port] != pcap_count(out_pcap):
            failures.append(f"{port} {t[port]} != {pcap_count(out_pcap)} frames written")
    for p in stats["mempools"]:
        print(f"  mempool {p['name']}: {p['in_use']} in use at exit, {p['in_use_at_start']} "
              f"before the workers started (of {p['size']})", flush=True)
        if p["in_use"] != p["in_use_at_start"]:
            failures.append(f"mempool {p['name']}: {p['in_use']} mbufs in use at exit, "
                            f"{p['in_use_at_start']} at start: leak")
    if not stats["mempools"]:
        failures.append("stats JSON lists no mempool")
    if "AddressSanitizer" in err or "runtime error:" in err:
        print(err[-4000:])
        failures.append("sanitizer report in the gateway's stderr")
    return failures


def main():
    gwlib.need_tools()
    work = gwlib.workdir("malformed")
    failures = []
    for side, corpus in (("host", host_corpus()), ("fabric", fabric_corpus())):
        failures += [f"{side}: {f}" for f in run_side(side, corpus, work)]
    if failures:
        gwlib.fail("; ".join(failures))
    print("PASS: every malformed class counted under its reason, no crash, no mbuf leaked")


if __name__ == "__main__":
    main()
