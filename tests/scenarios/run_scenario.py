#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
# Runs one packet scenario (tests/scenarios/NNN_name/) through the real srv6gw daemon and
# judges its output with tools the gateway's authors did not write:
#   1. gen.py regenerates send-host.pcap / send-fabric.pcap byte for byte (no hand edits);
#   2. srv6gw runs on net_pcap vdevs (rx_pcap = the send pcaps, tx_pcap = the outputs; the
#      fabric port may be net_ring0 for multi-segment TX, whose frames loop back into the
#      fabric RX and pass to the host port) with config.json, --until-idle, --stats-json;
#   3. every output frame is compared with its expectation (expect.py): tshark -T fields per
#      frame (Ethernet, outer IPv6, SRH, inner IP, UDP, BTH; the inner values against tshark
#      of the input frame), scapy for the inner bytes (equal to what was sent, ICRC valid,
#      IPv4 checksum valid), frame counts exact;
#   4. the daemon's final counters: those expect.py names, every drop reason it does not name
#      is zero, every non-ok parse/decap status is named.
#
#   run_scenario.py SCENARIO_DIR
#   run_scenario.py --check-registered SCENARIOS_DIR NAME...   (every folder is a meson test)
import functools
import importlib.util
import ipaddress
import json
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "integration"))
os.environ.setdefault("PYTHONDONTWRITEBYTECODE", "1")
sys.dont_write_bytecode = True

import gwlib  # noqa: E402
from pktlib import icrc_ok  # noqa: E402
from scapy.all import IP, IPv6, IPv6ExtHdrSegmentRouting  # noqa: E402

PYTHON = "/usr/bin/python3"

# tshark fields read from every output and input frame.
FIELDS = [
    "eth.dst", "eth.src", "eth.type", "vlan.id",
    "ipv6.src", "ipv6.dst", "ipv6.hlim", "ipv6.tclass", "ipv6.nxt", "ipv6.flow",
    "ipv6.routing.type", "ipv6.routing.nxt", "ipv6.routing.segleft",
    "ipv6.routing.srh.last_entry", "ipv6.routing.srh.tag", "ipv6.routing.srh.addr",
    "ip.src", "ip.dst", "ip.dsfield", "ip.dsfield.ecn", "ipv6.tclass.ecn", "ip.ttl",
    "udp.srcport", "udp.dstport",
    "infiniband.bth.opcode", "infiniband.bth.destqp", "infiniband.bth.psn",
]
HEX_NO_PREFIX = {"ipv6.routing.srh.tag"}
ADDRESSES = {"ipv6.src", "ipv6.dst", "ipv6.routing.srh.addr", "ip.src", "ip.dst"}
MACS = {"eth.dst", "eth.src"}
# Fields of the inner packet that encapsulation and decapsulation must leave alone.
INNER_FIELDS = ["ip.src", "ip.dst", "ip.dsfield", "ip.ttl", "udp.srcport", "udp.dstport",
                "infiniband.bth.opcode", "infiniband.bth.destqp", "infiniband.bth.psn"]


@functools.lru_cache(maxsize=65536)
def norm(field, value):
    if isinstance(value, int):
        return value
    if field in HEX_NO_PREFIX:
        return int(value, 16)
    if field in ADDRESSES:
        return str(ipaddress.ip_address(value))
    if field in MACS:
        return value.lower()
    try:
        return int(value, 0)
    except ValueError:
        return value


def tshark_many(pcaps, work):
    """tshark once over the frames of several pcaps (its start-up dominates a scenario's
    time): for each pcap, one dict per frame: field -> list of normalised occurrences."""
    from scenlib import write_pcap
    frames = [read_frames(p) for p in pcaps]
    merged = os.path.join(work, "all-frames.pcap")
    write_pcap(merged, [f for fs in frames for f in fs])
    cmd = ["tshark", "-n", "-r", merged, "-T", "fields", "-E", "separator=\t", "-E",
           "occurrence=a", "-E", "aggregator=|"]
    for f in FIELDS:
        cmd += ["-e", f]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    if r.returncode != 0:
        gwlib.fail(f"tshark failed on {merged}: {r.stderr}")
    rows = []
    for line in r.stdout.split("\n")[:-1]:
        cols = line.split("\t")
        cols += [""] * (len(FIELDS) - len(cols))
        rows.append({f: [norm(f, v) for v in c.split("|")] if c else [] for f, c in zip(FIELDS, cols)})
    gwlib.check(len(rows) == sum(len(fs) for fs in frames),
                f"tshark dissected {len(rows)} frames of {sum(len(fs) for fs in frames)}")
    out, k = [], 0
    for fs in frames:
        out.append(rows[k:k + len(fs)])
        k += len(fs)
    return out


def read_frames(pcap):
    if not os.path.exists(pcap):
        return []
    sys.path.insert(0, os.path.join(gwlib.SRC, "tests", "oracle"))
    from roce_lib import read_pcap
    return read_pcap(pcap)


# ---- byte-level views, written from the RFCs here (not the gateway's parser) -------------------
def l3_offset(frame):
    off, et = 12, int.from_bytes(frame[12:14], "big")
    while et in (0x8100, 0x88A8):
        off += 4
        et = int.from_bytes(frame[off:off + 2], "big")
    return off + 2


def ip_of(frame):
    """The IP packet of a frame (Ethernet padding cut)."""
    p = frame[l3_offset(frame):]
    if p[0] >> 4 == 4:
        return p[:int.from_bytes(p[2:4], "big")]
    return p[:40 + int.from_bytes(p[4:6], "big")]


def inner_of_srv6(frame):
    """Inner IP packet of an SRv6 frame: outer IPv6 and extension headers skipped."""
    p = ip_of(frame)
    nh, off = p[6], 40
    while nh in (0, 43, 60, 44):
        if nh == 44:
            nh, off = p[off], off + 8
        else:
            nh, off = p[off], off + (p[off + 1] + 1) * 8
    inner = p[off:]
    if inner[0] >> 4 == 4:
        return inner[:int.from_bytes(inner[2:4], "big")]
    return inner[:40 + int.from_bytes(inner[4:6], "big")]


def with_ecn(ip, ecn):
    """`ip` with its ECN field set; the IPv4 header checksum recomputed by scapy."""
    if ip[0] >> 4 == 4:
        p = IP(ip)
        p.tos = (p.tos & 0xFC) | ecn
        del p.chksum
        return bytes(p)
    b = bytearray(ip)
    b[1] = (b[1] & 0xCF) | ecn << 4
    return bytes(b)


def ipv4_checksum_ok(ip):
    p = IP(ip)
    stated = p.chksum
    del p.chksum
    return IP(bytes(p)).chksum == stated


class Run:
    """What the scenario's check(run) hook sees."""

    def __init__(self, sdir, work, stats, port_macs):
        self.dir = sdir
        self.work = work
        self.stats = stats
        self.total = stats["total"]
        self.port_macs = port_macs
        self.host_in = read_frames(os.path.join(sdir, "send-host.pcap"))
        self.fabric_in = read_frames(os.path.join(sdir, "send-fabric.pcap"))
        self.host_out = read_frames(os.path.join(work, "host-out.pcap"))
        self.fabric_out = read_frames(os.path.join(work, "fabric-out.pcap"))
        names = ["host_in", "fabric_in", "host_out", "fabric_out"]
        pcaps = [os.path.join(sdir, "send-host.pcap"), os.path.join(sdir, "send-fabric.pcap"),
                 os.path.join(work, "host-out.pcap"), os.path.join(work, "fabric-out.pcap")]
        self.rows = dict(zip(names, tshark_many(pcaps, work)))
        self.choice = {"host_out": {}, "fabric_out": {}}  # frame -> tag chosen among options
        self.sources = {"host_out": {}, "fabric_out": {}}  # frame -> input index

    @staticmethod
    def fail(msg):
        gwlib.fail(msg)

    @staticmethod
    def check(cond, msg):
        gwlib.check(cond, msg)


# ---- per-frame checks --------------------------------------------------------------------------
def eq_field(errors, row, field, expected, what):
    got = row[field]
    exp = [norm(field, v) for v in expected]
    if got != exp:
        errors.append(f"{what}: tshark {field} = {got}, expected {exp}")


def resolve_mac(spec, port_mac, input_frame, which):
    if spec == "port":
        return port_mac
    if spec == "input":
        b = input_frame[0:6] if which == "dst" else input_frame[6:12]
        return ":".join(f"{x:02x}" for x in b)
    return spec.lower()


def check_encap(run, e, out_frame, out_row, what):
    errors = []
    i = e["src_index"]
    if i >= len(run.host_in):
        return [f"{what}: expectation names host frame {i}, only {len(run.host_in)} sent"]
    src, srow = run.host_in[i], run.rows["host_in"][i]
    inner = ip_of(src)
    v4 = inner[0] >> 4 == 4
    proto = 4 if v4 else 41
    eq_field(errors, out_row, "eth.dst", [resolve_mac(e["eth_dst"], None, src, "dst")], what)
    eq_field(errors, out_row, "eth.src",
             [resolve_mac(e["eth_src"], run.port_macs["fabric"], src, "src")], what)
    eq_field(errors, out_row, "eth.type", [0x86DD], what)
    eq_field(errors, out_row, "vlan.id", [], what)
    inner_tc = srow["ip.dsfield"][0] if v4 else srow["ipv6.tclass"][0]
    tclass = e["tclass"] if e["tclass"] is not None else inner_tc
    eq_field(errors, out_row, "ipv6.src", [e["src"]] + srow["ipv6.src"], what)
    eq_field(errors, out_row, "ipv6.dst", [e["da"]] + srow["ipv6.dst"], what)
    eq_field(errors, out_row, "ipv6.hlim", [e["hlim"]] + srow["ipv6.hlim"], what)
    eq_field(errors, out_row, "ipv6.tclass", [tclass] + srow["ipv6.tclass"], what)
    eq_field(errors, out_row, "ipv6.nxt", [43 if e["srh"] is not None else proto] + srow["ipv6.nxt"],
             what)
    if not out_row["ipv6.flow"] or out_row["ipv6.flow"][0] == 0:
        errors.append(f"{what}: outer flow label is 0 (RFC 6437: set it from the inner flow)")
    if e["srh"] is not None:
        eq_field(errors, out_row, "ipv6.routing.type", [4], what)
        eq_field(errors, out_row, "ipv6.routing.nxt", [proto], what)
        eq_field(errors, out_row, "ipv6.routing.segleft", [e["segleft"]], what)
        eq_field(errors, out_row, "ipv6.routing.srh.last_entry", [e["last"]], what)
        eq_field(errors, out_row, "ipv6.routing.srh.tag", [e["tag"]], what)
        eq_field(errors, out_row, "ipv6.routing.srh.addr", e["srh"], what)
    else:
        eq_field(errors, out_row, "ipv6.routing.type", [], what)
    for f in INNER_FIELDS:
        eq_field(errors, out_row, f, srow[f], what)
    # scapy dissects the outer IPv6 header and the SRH (only those: dissecting the inner
    # packet too would cost a millisecond a frame); what follows them must be exactly what
    # the host sent, with a valid ICRC.
    outer = IPv6(out_frame[14:54])
    carried = out_frame[54:]
    if e["srh"] is not None:
        if outer.nh != 43 or len(carried) < 8:
            errors.append(f"{what}: scapy finds no SRH (next header {outer.nh})")
            return errors
        srh_len = (carried[1] + 1) * 8
        s = IPv6ExtHdrSegmentRouting(carried[:srh_len])
        carried = carried[srh_len:]
        if ([str(ipaddress.ip_address(a)) for a in s.addresses] !=
                [str(ipaddress.ip_address(a)) for a in e["srh"]] or s.segleft != e["segleft"] or
                s.lastentry != e["last"] or s.tag != e["tag"] or s.nh != proto):
            errors.append(f"{what}: scapy SRH {s.addresses} segleft {s.segleft} last {s.lastentry} "
                          f"tag {s.tag} next header {s.nh} disagrees")
    elif outer.nh != proto:
        errors.append(f"{what}: scapy outer next header {outer.nh}, expected {proto}")
    if carried != inner:
        errors.append(f"{what}: inner packet differs from host frame {i} "
                      f"({len(carried)} vs {len(inner)} bytes)")
    elif not icrc_ok(carried):
        errors.append(f"{what}: inner ICRC invalid")
    if len(out_frame) != 14 + 40 + outer.plen:
        errors.append(f"{what}: frame is {len(out_frame)} bytes, headers say {14 + 40 + outer.plen}")
    return errors


def check_decap(run, e, out_frame, out_row, what):
    errors = []
    i = e["src_index"]
    if i >= len(run.fabric_in):
        return [f"{what}: expectation names fabric frame {i}, only {len(run.fabric_in)} sent"]
    src, srow = run.fabric_in[i], run.rows["fabric_in"][i]
    inner = inner_of_srv6(src)
    expected = with_ecn(inner, e["ecn"]) if e["ecn"] is not None else inner
    v4 = inner[0] >> 4 == 4
    eq_field(errors, out_row, "eth.dst", [resolve_mac(e["eth_dst"], None, src, "dst")], what)
    eq_field(errors, out_row, "eth.src",
             [resolve_mac(e["eth_src"], run.port_macs["host"], src, "src")], what)
    eq_field(errors, out_row, "eth.type", [0x0800 if v4 else 0x86DD], what)
    eq_field(errors, out_row, "vlan.id", [], what)
    eq_field(errors, out_row, "ipv6.routing.type", [], what)
    n6 = 0 if v4 else 1  # the inner IPv6 is the input's last IPv6 header
    for f in ("ipv6.src", "ipv6.dst", "ipv6.hlim", "ipv6.nxt"):
        eq_field(errors, out_row, f, srow[f][len(srow[f]) - n6:], what)
    for f in ["udp.srcport", "udp.dstport", "infiniband.bth.opcode", "infiniband.bth.destqp",
              "infiniband.bth.psn", "ip.src", "ip.dst", "ip.ttl"]:
        eq_field(errors, out_row, f, srow[f], what)
    if e["ecn"] is not None:
        eq_field(errors, out_row, "ip.dsfield.ecn" if v4 else "ipv6.tclass.ecn", [e["ecn"]], what)
    got = out_frame[14:]
    if got != expected:
        errors.append(f"{what}: decapsulated packet differs from the inner of fabric frame {i}"
                      f"{' with ECN ' + str(e['ecn']) if e['ecn'] is not None else ''}")
    if not icrc_ok(got):
        errors.append(f"{what}: ICRC invalid after decapsulation")
    if v4 and not ipv4_checksum_ok(got):
        errors.append(f"{what}: IPv4 header checksum invalid")
    return errors


def check_passed(run, e, out_frame, out_row, what):
    src = (run.host_in if e["side"] == "host" else run.fabric_in)[e["src_index"]]
    if out_frame != src:
        return [f"{what}: not {e['side']} frame {e['src_index']} byte for byte "
                f"({len(out_frame)} vs {len(src)} bytes)"]
    return []


CHECKS = {"encap": check_encap, "decap": check_decap, "passed": check_passed}


def check_output(run, name, expectations):
    frames = run.host_out if name == "host_out" else run.fabric_out
    rows = run.rows[name]
    gwlib.check(len(rows) == len(frames), f"{name}: tshark sees {len(rows)} frames, scapy {len(frames)}")
    if len(frames) != len(expectations):
        gwlib.fail(f"{name}: {len(frames)} frames, expected {len(expectations)}")
    for k, (e, f, r) in enumerate(zip(expectations, frames, rows)):
        what = f"{name} frame {k}"
        if e["kind"] == "one_of":
            # Which segment list: tshark's outer destination and SRH tag name it; exactly one
            # option may match, and that one is then checked in full.
            da = r["ipv6.dst"][:1]
            tag = r["ipv6.routing.srh.tag"]
            cands = [o for o in e["options"]
                     if da == [norm("ipv6.dst", o["da"])] and
                     tag == ([] if o["srh"] is None else [o["tag"]])]
            if len(cands) != 1:
                gwlib.fail(f"{what}: outer destination {da} tag {tag} matches {len(cands)} of "
                           f"the allowed segment lists {[(o['da'], o['tag']) for o in e['options']]}")
            errors = CHECKS[cands[0]["kind"]](run, cands[0], f, r, what)
            if errors:
                gwlib.fail("\n  ".join(errors))
            run.choice[name][k] = cands[0]["tag"]
            run.sources[name][k] = cands[0]["src_index"]
            continue
        errors = CHECKS[e["kind"]](run, e, f, r, what)
        if errors:
            gwlib.fail("\n  ".join(errors))
        run.sources[name][k] = e["src_index"]
        if e["kind"] == "encap":
            run.choice[name][k] = e["tag"]


def counter(total, dotted):
    v = total
    for part in dotted.split("."):
        if part not in v:
            gwlib.fail(f"counter {dotted} does not exist in --stats-json")
        v = v[part]
    return v


def nonzero_counters(t):
    out = {k: v for k, v in t.items() if isinstance(v, int) and v and k not in ("busy_tsc",)}
    for table in ("drops", "parse_status", "decap_status"):
        out.update({f"{table}.{k}": v for k, v in t[table].items() if v})
    return out


def check_counters(run, expected, paths):
    t = run.total
    for name, want in expected.items():
        got = counter(t, name)
        gwlib.check(got == want, f"counter {name} = {got}, expected {want}")
    for reason, n in t["drops"].items():
        if f"drops.{reason}" not in expected:
            gwlib.check(n == 0, f"unexpected drops: {reason} = {n}")
    for table in ("parse_status", "decap_status"):
        for status, n in t[table].items():
            if status != "ok" and n and f"{table}.{status}" not in expected:
                gwlib.fail(f"{table}.{status} = {n}, not stated in expect.py")
    gwlib.check(t["drops_total"] == sum(t["drops"].values()), "drops_total is not the sum of drops")
    by_id = {p["path_id"]: p["packets"] for p in run.stats["paths"]}
    for pid, n in (paths or {}).items():
        gwlib.check(by_id.get(pid) == n, f"path {pid}: {by_id.get(pid)} packets counted, expected {n}")


def load_module(path, name):
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def start_gen(sdir, work):
    """gen.py into a scratch folder, in the background (it costs a scapy start-up)."""
    gen_dir = os.path.join(work, "gen")
    return gen_dir, subprocess.Popen([PYTHON, os.path.join(sdir, "gen.py"), gen_dir],
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                     env=dict(os.environ, PYTHONDONTWRITEBYTECODE="1"))


def check_reproducible(sdir, gen):
    gen_dir, proc = gen
    _, err = proc.communicate(timeout=300)
    gwlib.check(proc.returncode == 0, f"gen.py failed: {err}")
    made = sorted(f for f in os.listdir(gen_dir) if f.endswith(".pcap"))
    committed = sorted(f for f in os.listdir(sdir) if f.startswith("send-") and f.endswith(".pcap"))
    gwlib.check(made == committed, f"gen.py writes {made}, the folder holds {committed}")
    gwlib.check(made, "gen.py writes no pcap")
    for f in made:
        with open(os.path.join(gen_dir, f), "rb") as a, open(os.path.join(sdir, f), "rb") as b:
            gwlib.check(a.read() == b.read(), f"{f} differs from what gen.py writes: regenerate "
                        f"with /usr/bin/python3 {os.path.join(sdir, 'gen.py')}")


def run_scenario(sdir):
    t_start = time.time()
    sdir = os.path.abspath(sdir)
    name = os.path.basename(sdir)
    gwlib.need_tools("tshark")
    expect = load_module(os.path.join(sdir, "expect.py"), "expect_" + name)
    work = gwlib.workdir(name[:24])
    gen = start_gen(sdir, work)

    fabric_kind = getattr(expect, "FABRIC_PORT", "pcap")
    empty = os.path.join(work, "empty.pcap")
    from scenlib import write_pcap
    write_pcap(empty, [])

    def rx(side):
        p = os.path.join(sdir, f"send-{side}.pcap")
        return p if os.path.exists(p) else empty

    host_out = os.path.join(work, "host-out.pcap")
    fabric_out = os.path.join(work, "fabric-out.pcap")
    vdevs = [f"net_pcap0,rx_pcap={rx('host')},tx_pcap={host_out}"]
    if fabric_kind == "ring":
        vdevs.append("net_ring0")
    else:
        vdevs.append(f"net_pcap1,rx_pcap={rx('fabric')},tx_pcap={fabric_out}")
    prefix = gwlib.unique_prefix("sc" + name[:3])
    stats_json = os.path.join(work, "stats.json")
    eal = gwlib.eal_args(prefix, vdevs)
    app = ["--config", os.path.join(sdir, "config.json"), "--until-idle",
           str(getattr(expect, "UNTIL_IDLE_MS", 300)), "--stats-json", stats_json,
           "--stats-interval", "0"]
    rc, out, err = gwlib.run(eal, app, timeout=120)
    if rc != 0:
        print(out)
        print(err[-4000:])
        gwlib.fail(f"gateway exit code {rc}")
    check_reproducible(sdir, gen)
    with open(stats_json) as f:
        stats = json.load(f)
    macs = {side: stats["ports"][side]["mac"].lower() for side in ("host", "fabric")}
    run = Run(sdir, work, stats, macs)
    if fabric_kind == "ring":
        gwlib.check("multi-seg tx on" in err, "net_ring fabric port: multi-segment TX not enabled")

    t = run.total
    print("counters: " + json.dumps(nonzero_counters(t)), flush=True)
    gwlib.check(t["rx_host"] == len(run.host_in), f"rx_host {t['rx_host']} != {len(run.host_in)} sent")
    if fabric_kind != "ring":
        gwlib.check(t["rx_fabric"] == len(run.fabric_in),
                    f"rx_fabric {t['rx_fabric']} != {len(run.fabric_in)} sent")
        gwlib.check(t["tx_fabric"] == len(run.fabric_out), "tx_fabric counter != frames written")
    gwlib.check(t["tx_host"] == len(run.host_out), "tx_host counter != frames written")

    for out_name, attr in (("host_out", "HOST_OUT"), ("fabric_out", "FABRIC_OUT")):
        exp = getattr(expect, attr, None)
        if exp is not None:
            check_output(run, out_name, exp)
    check_counters(run, getattr(expect, "COUNTERS", {}), getattr(expect, "PATHS", None))
    if hasattr(expect, "check"):
        expect.check(run)
    print(f"{name}: host {len(run.host_in)} in / {len(run.host_out)} out, fabric "
          f"{len(run.fabric_in)} in / {len(run.fabric_out)} out, drops {t['drops_total']}: OK "
          f"({time.time() - t_start:.1f} s)")


def check_registered(scen_dir, names):
    present = sorted(d for d in os.listdir(scen_dir)
                     if os.path.isdir(os.path.join(scen_dir, d)) and d[:3].isdigit())
    missing = sorted(set(present) - set(names))
    gone = sorted(set(names) - set(present))
    gwlib.check(not missing, f"scenario folders not registered in meson.build: {missing}")
    gwlib.check(not gone, f"meson.build registers missing folders: {gone}")
    for d in present:
        for f in ("config.json", "gen.py", "expect.py"):
            gwlib.check(os.path.exists(os.path.join(scen_dir, d, f)), f"{d}/{f} is missing")
    print(f"{len(present)} scenarios, all registered")


if __name__ == "__main__":
    if len(sys.argv) >= 3 and sys.argv[1] == "--check-registered":
        check_registered(sys.argv[2], sys.argv[3:])
    elif len(sys.argv) == 2:
        run_scenario(sys.argv[1])
    else:
        print(__doc__ or "usage: run_scenario.py SCENARIO_DIR", file=sys.stderr)
        sys.exit(2)
