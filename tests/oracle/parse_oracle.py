#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
# Classification of well-formed and malformed frames (srv6gw-pcap parse), with the expected
# fields read from the scapy packets that were generated, and the tool's refusal of bad
# command lines and bad files: clear message, non-zero exit, no crash.
#
# usage: parse_oracle.py SRV6GW_PCAP
import os
import sys
import tempfile

sys.dont_write_bytecode = True  # keep the source tree clean
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import roce_lib as rl  # noqa: E402
from roce_lib import BTH, IP, IPv6, TCP, UDP, Dot1Q, Ether, Raw, fail, log  # noqa: E402
from scapy.all import IPv6ExtHdrDestOpt, IPv6ExtHdrFragment  # noqa: E402

ETH = Ether(dst="02:00:00:00:00:02", src="02:00:00:00:00:01")


def eth(ethertype):
    e = ETH.copy()
    e.type = ethertype
    return bytes(e)


def roce4(**ip_kw):
    return bytes(IP(src="10.0.0.1", dst="10.0.1.2", **ip_kw) / UDP(sport=1000, dport=4791) /
                 BTH(opcode=4, dqpn=5, psn=6) / Raw(b"p" * 16))


def roce6(*ext):
    p = IPv6(src="fd00::1", dst="fd00:1::2")
    for e in ext:
        p = p / e
    return bytes(p / UDP(sport=1000, dport=4791) / BTH(opcode=4, dqpn=5, psn=6) / Raw(b"p" * 16))


def malformed_frames():
    """(name, frame, expected reason). Each breaks exactly one rule named by its reason."""
    v4 = roce4()
    v6 = roce6()
    cases = [
        ("10-byte frame", eth(0x0800)[:10], "truncated_eth"),
        ("VLAN tag cut short", eth(0x8100) + b"\x00", "truncated_vlan"),
        ("three stacked tags", bytes(ETH / Dot1Q(vlan=1) / Dot1Q(vlan=2) / Dot1Q(vlan=3) /
                                     IP(src="10.0.0.1", dst="10.0.1.2") /
                                     UDP(dport=4791) / BTH() / Raw(b"x" * 16)),
         "too_many_vlans"),
        ("ARP", bytes(rl.passthrough_frames()[0]), "not_ip"),
        ("IPv4 header cut at 10 bytes", eth(0x0800) + v4[:10], "truncated_ipv4"),
        ("version 6 under ethertype 0x0800", eth(0x0800) + bytes([0x65]) + v4[1:],
         "bad_ipv4_version"),
        ("IHL 4", eth(0x0800) + bytes([0x44]) + v4[1:], "bad_ipv4_ihl"),
        ("IPv4 total length beyond the frame",
         eth(0x0800) + v4[:2] + (len(v4) + 50).to_bytes(2, "big") + v4[4:], "bad_ipv4_length"),
        ("IPv4 total length shorter than the header",
         eth(0x0800) + v4[:2] + (12).to_bytes(2, "big") + v4[4:], "bad_ipv4_length"),
        ("IPv6 header cut at 30 bytes", eth(0x86DD) + v6[:30], "truncated_ipv6"),
        ("version 4 under ethertype 0x86DD", eth(0x86DD) + bytes([0x40 | (v6[0] & 0xF)]) +
         v6[1:], "bad_ipv6_version"),
        ("IPv6 payload length beyond the frame",
         eth(0x86DD) + v6[:4] + (len(v6)).to_bytes(2, "big") + v6[6:], "bad_ipv6_length"),
        ("hop-by-hop header longer than the payload",
         eth(0x86DD) + _ext_overrun(), "truncated_ext"),
        ("nine destination-options headers",
         eth(0x86DD) + roce6(*[IPv6ExtHdrDestOpt() for _ in range(9)]), "ext_chain_too_long"),
        ("IPv4 fragment (MF)", eth(0x0800) + roce4(flags="MF"), "fragment"),
        ("IPv4 fragment (offset)", eth(0x0800) + roce4(frag=100), "fragment"),
        ("IPv6 fragment header", eth(0x86DD) + roce6(IPv6ExtHdrFragment(m=1)), "fragment"),
        ("TCP", bytes(ETH / IP(src="10.0.0.1", dst="10.0.1.2") / TCP(dport=4791)), "not_udp"),
        ("UDP to port 53", bytes(ETH / IP(src="10.0.0.1", dst="10.0.1.2") / UDP(dport=53) /
                                 Raw(b"x" * 30)), "not_roce"),
        ("UDP header cut short", eth(0x0800) + _ipv4_with_payload(b"\x03\xe8\x12\xb7"),
         "truncated_udp"),
        ("UDP length 4", eth(0x0800) + _ipv4_with_payload(
            (1000).to_bytes(2, "big") + (4791).to_bytes(2, "big") + (4).to_bytes(2, "big") +
            b"\x00\x00" + b"\x00" * 20), "bad_udp_length"),
        ("UDP length beyond the IP payload", eth(0x0800) + _ipv4_with_payload(
            (1000).to_bytes(2, "big") + (4791).to_bytes(2, "big") + (200).to_bytes(2, "big") +
            b"\x00\x00" + b"\x00" * 20), "bad_udp_length"),
        ("BTH without room for the ICRC", bytes(ETH / IP(src="10.0.0.1", dst="10.0.1.2") /
                                                 UDP(sport=1, dport=4791) / Raw(b"\x04" * 14)),
         "truncated_bth"),
        ("BTH transport version 1", bytes(ETH / IP(src="10.0.0.1", dst="10.0.1.2") /
                                          UDP(sport=1, dport=4791) /
                                          BTH(opcode=4, version=1) / Raw(b"x" * 8)),
         "bad_bth_tver"),
    ]
    return cases


def _ipv4_with_payload(payload):
    p = IP(src="10.0.0.1", dst="10.0.1.2", proto=17) / Raw(payload)
    return bytes(p)


def _ext_overrun():
    """IPv6 whose hop-by-hop header claims 8*(1+20) bytes while 24 bytes of payload follow."""
    b = bytearray(bytes(IPv6(src="fd00::1", dst="fd00:1::2", nh=0, plen=24)))
    b += bytes([17, 20]) + b"\x01\x04\x00\x00\x00\x00" + b"\x00" * 16
    return bytes(b)


def parse_lines(stdout):
    lines = {}
    for line in stdout.splitlines():
        head, _, rest = line.partition(" ")
        if head.isdigit():
            fields = rest.split()
            info = {"status": fields[0]}
            for kv in fields[1:]:
                k, _, v = kv.partition("=")
                info[k] = v
            lines[int(head)] = info
    return lines


def check_classification(tool, tmp):
    cases = malformed_frames()
    samples = rl.roce_samples(big=False)
    corrupt = bytearray(samples[0].ip)
    corrupt[-1] ^= 0x5A
    samples_icrc = [(s, "valid") for s in samples]
    bad = rl.Sample("ipv4-bad-icrc", rl.frame(bytes(corrupt)), bytes(corrupt))
    samples_icrc.append((bad, "bad"))
    frames = [c[1] for c in cases] + [s.frame for s, _ in samples_icrc]
    pcap = os.path.join(tmp, "parse.pcap")
    rl.write_pcap(pcap, frames)
    r = rl.run([tool, "parse", "--in", pcap])
    lines = parse_lines(r.stdout)
    if len(lines) != len(frames):
        fail(f"parse printed {len(lines)} classification lines for {len(frames)} frames\n"
             f"{r.stdout}")
    errors = []
    for i, (name, _, reason) in enumerate(cases, start=1):
        got = lines[i]["status"]
        if got != reason:
            errors.append(f"  frame {i} '{name}': {got}, expected {reason}")
        else:
            log(f"ok parse: {name} -> {reason}")
    base = len(cases)
    for j, (s, icrc_state) in enumerate(samples_icrc, start=base + 1):
        info = lines[j]
        p = Ether(s.frame)
        ip = p[IP] if s.family == 4 else p[IPv6]
        tos = ip.tos if s.family == 4 else ip.tc
        want = {
            "status": "ok", "family": f"ipv{s.family}", "src": ip.src, "dst": ip.dst,
            "vlans": "1" if Dot1Q in p else "0", "sport": str(p[UDP].sport),
            "qp": str(p[BTH].dqpn), "opcode": str(p[BTH].opcode), "psn": str(p[BTH].psn),
            "ecn": str(tos & 3), "dscp": str(tos >> 2),
            "cnp": "1" if p[BTH].opcode == rl.OP_CNP else "0", "icrc": icrc_state,
        }
        diff = {k: (info.get(k), v) for k, v in want.items() if info.get(k) != v}
        if diff:
            errors.append(f"  frame {j} {s.name}: (got, expected) {diff}")
    if errors:
        fail("classification differs:\n" + "\n".join(errors) + f"\ntool output:\n{r.stdout}")
    log(f"ok parse: {len(samples_icrc)} RoCE frames, fields equal to scapy's")


def check_cli(tool, tmp):
    good = os.path.join(tmp, "good.pcap")
    rl.write_pcap(good, [s.frame for s in rl.roce_samples(big=False)[:2]])
    out = os.path.join(tmp, "out.pcap")
    not_pcap = os.path.join(tmp, "not.pcap")
    with open(not_pcap, "wb") as f:
        f.write(b"this is not a capture file at all, just text\n")
    truncated = os.path.join(tmp, "truncated.pcap")
    with open(good, "rb") as f:
        data = f.read()
    with open(truncated, "wb") as f:
        f.write(data[:-10])
    enc = [tool, "encap", "--out", out, "--source", "fc00::1"]
    usid_sids = "fc00:0:100::,fc00:0:200::"
    # (name, argv, expected exit code, text the message must contain)
    cases = [
        ("no command", [tool], 2, "missing command"),
        ("unknown command", [tool, "fly"], 2, "fly"),
        ("bad SID", enc + ["--in", good, "--sids", "fc00:1::e,fc00::zz"], 2, "fc00::zz"),
        ("17 SIDs", enc + ["--in", good, "--sids", ",".join(f"fc00:{i + 1:x}::e"
                                                            for i in range(17))], 2,
         "too_many_sids"),
        ("usid SIDs from two blocks", enc + ["--in", good, "--mode", "usid", "--sids",
                                             "fc00:0:100::,fc01:0:200::"], 2,
         "sid_not_in_block"),
        ("usid SID with bits after the uSID", enc + ["--in", good, "--mode", "usid", "--sids",
                                                     "fc00:0:100::,fc00:0:200:1::"], 2,
         "sid_not_usid"),
        ("usid length 12", enc + ["--in", good, "--mode", "usid", "--sids", usid_sids,
                                  "--usid-len", "12"], 2, "bad_usid_format"),
        ("unknown mode", enc + ["--in", good, "--sids", "fc00::e", "--mode", "fast"], 2, "fast"),
        ("missing --source", [tool, "encap", "--in", good, "--out", out, "--sids", "fc00::e"],
         2, "--source"),
        ("bad MAC", enc + ["--in", good, "--sids", "fc00::e", "--dst-mac", "02:00:00"], 2,
         "02:00:00"),
        ("hop limit 300", enc + ["--in", good, "--sids", "fc00::e", "--hop-limit", "300"], 2,
         "300"),
        ("decap option on encap", enc + ["--in", good, "--sids", "fc00::e", "--behavior",
                                         "dx4"], 2, "--behavior"),
        ("bad behavior", [tool, "decap", "--in", good, "--out", out, "--behavior", "dx9"], 2,
         "dx9"),
        ("missing input", [tool, "parse", "--in", os.path.join(tmp, "absent.pcap")], 1,
         "absent.pcap"),
        ("not a pcap", [tool, "parse", "--in", not_pcap], 1, "not.pcap"),
        ("truncated pcap", [tool, "parse", "--in", truncated], 1, "truncated.pcap"),
        ("unwritable output", [tool, "decap", "--in", good, "--out",
                               os.path.join(tmp, "no", "such", "dir", "o.pcap")], 1, "o.pcap"),
    ]
    errors = []
    for name, argv, code, text in cases:
        r = rl.run(argv, check=False)
        if r.returncode != code or text not in r.stderr:
            errors.append(f"  {name}: exit {r.returncode} (expected {code}), stderr "
                          f"{r.stderr.strip()[:300]!r} (expected to mention {text!r})")
        else:
            log(f"ok cli: {name} -> exit {code}: {r.stderr.splitlines()[0]}")
    if errors:
        fail("command-line handling:\n" + "\n".join(errors))


def main():
    tool = rl.tool_path(sys.argv[1])
    with tempfile.TemporaryDirectory(prefix="srv6gw-parse-") as tmp:
        check_classification(tool, tmp)
        check_cli(tool, tmp)


if __name__ == "__main__":
    rl.main_wrapper(main)
