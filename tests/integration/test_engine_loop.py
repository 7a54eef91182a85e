#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
# The congestion loop between two srv6gw daemons back to back (issue 5, acceptance 2):
#
#   ha --veth-- [gateway A] --veth-- fab --veth-- [gateway B] --veth-- hb
#
# Host ha sends RoCEv2 WRITEs (ECT(0)) to hb; A sprays them (packet mode) over three segment
# lists a, b, c (path ids 1, 2, 3), each ending at one of B's End.DX4 SIDs. The "fabric" is a
# bridge in namespace fab (a test hook: tc pedit is not available everywhere) that sets CE on
# every packet whose SRH Tag is 2 (path b). B decapsulates
# (RFC 6040 carries CE to the inner header), remembers "A's path 2 saw CE toward hb", and
# when hb answers with a CNP (a responder thread plays the RNIC: one CNP per CE-marked packet)
# B writes 0x8002 into that CNP's SRH Tag. A's engine blames exactly path b: b's share of the
# spray drops, a and c take it over evenly. Printed: share before/after, the reaction time
# from the first CNP A's worker saw to the new weights in force, and the engine time.
#
# With --no-reflect (acceptance 3, test engine-loop-fallback) B does not cooperate
# (engine/reflect false): its CNPs carry its own path id. A then blames the lists that carried
# traffic toward the CNP's sender in the last 5-10 ms, in proportion to the packets each
# carried. A sprays nothing there (flow mode) and ha talks to 24 hosts behind B, so each host
# pair sits on one list: the pairs on b are blamed on b, b's weight drops and only those
# flows move (a weight change keeps every other flow where it is).
#
# Needs root and network namespaces (exits 77 otherwise).
import multiprocessing
import os
import socket
import struct
import sys
import threading
import time

sys.dont_write_bytecode = True  # keep the source tree clean
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "interop"))
import gwlib  # noqa: E402
import netns_lib as nl  # noqa: E402
from netns_lib import rl  # noqa: E402

HOST_A, HOST_B = "10.0.0.1", "10.0.1.1"
REFLECT = "--no-reflect" not in sys.argv
HOSTS_B = [HOST_B] if REFLECT else [f"10.0.1.{i}" for i in range(1, 25)]
B_SIDS = {"a": "fc00:b::d1", "b": "fc00:b::d2", "c": "fc00:b::d3"}
PATH_IDS = {"a": 1, "b": 2, "c": 3}
A_SID = "fc00:a::d4"
RATE_PPS = 2000
LATE_S = 4e-3  # the emulated host does not answer a CE mark older than this
PHASE1, PHASE2 = 600, 4000


def log(msg):
    print(msg, flush=True)


def config_a(nexthop_mac, host_mac):
    return {"srv6gw:gateway": {
        "ports": {"host": "net_af_packet0", "fabric": "net_af_packet1", "queues": 1,
                  "mbufs": 4095, "fabric-nexthop-mac": nexthop_mac, "host-mac": host_mac},
        "source-address": "fc00:a::1",
        # The hold-down must exceed the loop's feedback delay (docs/design/engine.md): the Python
        # host answers CE milliseconds late and, on a loaded machine, only now and then; with
        # the 5 ms default b recovered between two CNPs and its backoff never engaged.
        "engine": {"hold-down-us": 50000},
        "actions": {"steering-miss": "drop", "non-roce": "drop", "fabric-non-sid": "drop"},
        "stats-interval-ms": 0,
        "policies": {"policy": [{
            "name": "toB", "selection": {"mode": "packet" if REFLECT else "flow"},
            "segment-list": [{"name": n, "path-id": PATH_IDS[n], "weight": 1,
                              "sid": [B_SIDS[n]]} for n in ("a", "b", "c")]}]},
        "steering": {"rule": [{"id": 1, "prefix": "10.0.1.0/24", "policy": "toB"}]},
        "local-sids": {"local-sid": [{"sid": A_SID, "behavior": "end-dx4"}]},
    }}


def config_b(nexthop_mac, host_mac):
    return {"srv6gw:gateway": {
        "ports": {"host": "net_af_packet0", "fabric": "net_af_packet1", "queues": 1,
                  "mbufs": 4095, "fabric-nexthop-mac": nexthop_mac, "host-mac": host_mac},
        "source-address": "fc00:b::1",
        "engine": {"reflect": REFLECT},
        "actions": {"steering-miss": "drop", "non-roce": "drop", "fabric-non-sid": "drop"},
        "stats-interval-ms": 0,
        "policies": {"policy": [{
            "name": "toA", "selection": {"mode": "flow"},
            "segment-list": [{"name": "r", "path-id": 100, "weight": 1, "sid": [A_SID]}]}]},
        "steering": {"rule": [{"id": 1, "prefix": "10.0.0.0/24", "policy": "toA"}]},
        "local-sids": {"local-sid": [{"sid": s, "behavior": "end-dx4"}
                                     for s in B_SIDS.values()]},
    }}


def start_gateway(chain, role, work, name, config, host_if, fabric_if, main_lcore):
    # --main-lcore: the two gateways' workers on different cores
    return gwlib.start_on_interfaces(name, work, nl.open_in_netns(chain.ns[role]), config,
                                     [host_if, fabric_if],
                                     eal_extra=["--main-lcore", str(main_lcore)])


def stop_gateway(g):
    return gwlib.stop_checked(g, g["stats"], timeout=20)


def srh_tag(frame):
    """SRH Tag of an SRv6 frame (outer IPv6 + SRH right after it), else None."""
    if len(frame) < 14 + 48 or frame[12:14] != b"\x86\xdd" or frame[14 + 6] != 43:
        return None
    return struct.unpack("!H", frame[14 + 46:14 + 48])[0]


def inner_ipv4(frame):
    """Inner IPv4 packet of a plain (decapsulated) frame."""
    if frame[12:14] != b"\x08\x00":
        return None
    return frame[14:]


def main():
    gwlib.need_tools("ip")
    nl.require_root_and_netns()
    work = gwlib.workdir("engine-loop")
    chain = nl.Chain(["ha", "gwa", "fab", "gwb", "hb"])
    gws = []
    try:
        for role in ("gwa", "fab", "gwb"):
            for dev in ("lft0", "rgt0"):
                chain.ip(role, f"addr flush dev {dev}")
                chain.sysctl(role, f"net.ipv6.conf.{dev}.disable_ipv6", 1)
        macs = {"ha": chain.mac("ha", "rgt0"), "gwa_h": chain.mac("gwa", "lft0"),
                "gwa_f": chain.mac("gwa", "rgt0"), "gwb_f": chain.mac("gwb", "lft0"),
                "fab_l": chain.mac("fab", "lft0"), "fab_r": chain.mac("fab", "rgt0"),
                "gwb_h": chain.mac("gwb", "rgt0"), "hb": chain.mac("hb", "lft0")}
        gws.append(start_gateway(chain, "gwa", work, "A", config_a(macs["fab_l"], macs["ha"]),
                                 "lft0", "rgt0", 0))
        gws.append(start_gateway(chain, "gwb", work, "B", config_b(macs["fab_r"], macs["hb"]),
                                 "rgt0", "lft0", 1))
        tx_a = nl.packet_socket(chain.ns["ha"], "rgt0")
        fab_l = nl.packet_socket(chain.ns["fab"], "lft0")  # toward A
        fab_r = nl.packet_socket(chain.ns["fab"], "rgt0")  # toward B
        hb_sock = nl.packet_socket(chain.ns["hb"], "lft0")
        rx_a = nl.packet_socket(chain.ns["ha"], "rgt0")

        # The CE-marking bridge and the emulated host run in processes of their own (forked,
        # sockets inherited): with threads they shared one interpreter lock with the sender
        # and the other bridge, and on a loaded machine the host answered CE tens of
        # milliseconds late, longer than any attribution window.
        mp = multiprocessing.get_context("fork")
        stop = mp.Event()
        respond = mp.Event()
        first_cnp = mp.Value("d", 0.0)
        cnps_sent = mp.Value("q", 0)
        answer_delay = mp.Value("d", 0.0)  # sum of the ages of the CE marks answered
        cnps_late = mp.Value("q", 0)  # CE marks the host saw too late to answer
        bridged = mp.Value("q", 0, lock=False)  # A's frames the bridge forwarded (one writer)
        ready = [mp.Event(), mp.Event()]  # each process is in its loop
        tags_queue = mp.Queue()
        cnps_back = [0]

        def fabric_a_to_b():
            # The congested path: CE on every frame A sends on path b; all frames counted.
            # The CE-marked frame carries its marking time (monotonic, system-wide) in its
            # payload's last 8 bytes so that the host can report how late it answers.
            tags = []
            os.nice(-10)  # the "fabric" forwards promptly even on a loaded machine
            fab_l.settimeout(0.1)
            ready[0].set()
            while not stop.is_set():
                try:
                    data, addr = fab_l.recvfrom(65535)
                except socket.timeout:
                    continue
                if addr[2] == 4:  # PACKET_OUTGOING: our own transmission
                    continue
                t = srh_tag(data)
                if t in (1, 2, 3):
                    now = time.monotonic()
                    tags.append((now, t))
                    bridged.value += 1
                    if t == 2:
                        data = bytearray(data)
                        data[15] |= 0x30  # outer ECN (bits 4-5 of the second byte) = CE
                        data[-12:-4] = struct.pack("!d", now)  # before the ICRC
                        data = bytes(data)
                fab_r.send(data)
            tags_queue.put(tags)

        def fabric_b_to_a():
            fab_r.settimeout(0.1)
            while not stop.is_set():
                try:
                    data, addr = fab_r.recvfrom(65535)
                except socket.timeout:
                    continue
                if addr[2] != 4:
                    fab_l.send(data)

        def responder():
            # An RNIC answers CE within microseconds or (rate limited) not at all; it never
            # answers a backlog. A mark older than LATE_S (this process fell behind on a
            # loaded machine) is dropped and counted, not answered late.
            os.nice(-10)
            hb_sock.settimeout(0.1)
            ready[1].set()
            while not stop.is_set():
                try:
                    data, addr = hb_sock.recvfrom(65535)
                except socket.timeout:
                    continue
                ip = inner_ipv4(data)
                if ip is None or addr[2] == 4 or not nl.is_roce_ip(ip):  # 4: PACKET_OUTGOING
                    continue
                if (ip[1] & 3) != 3 or not respond.is_set():
                    continue
                age = time.monotonic() - struct.unpack("!d", ip[-12:-4])[0]
                if age > LATE_S:
                    with cnps_sent.get_lock():
                        cnps_late.value += 1
                    continue
                # The receiving host answers for itself: the CE-marked packet's destination.
                src = ".".join(str(b) for b in ip[16:20])
                cnp = rl.roce_ip_packet(4, src, HOST_A, rl.OP_CNP, 0x100, 0, tos=0x02)
                hb_sock.send(rl.frame(cnp, dst_mac=macs["gwb_h"], src_mac=macs["hb"]))
                now = time.monotonic()
                if first_cnp.value == 0.0:
                    first_cnp.value = now
                with cnps_sent.get_lock():
                    cnps_sent.value += 1
                    answer_delay.value += max(0.0, age)

        def cnp_sink():
            rx_a.settimeout(0.1)
            while not stop.is_set():
                try:
                    data, addr = rx_a.recvfrom(65535)
                except socket.timeout:
                    continue
                ip = inner_ipv4(data)
                if ip is not None and addr[2] != 4 and nl.is_roce_ip(ip):
                    ihl = (ip[0] & 0xF) * 4
                    if ip[ihl + 8] == rl.OP_CNP:
                        cnps_back[0] += 1

        procs = [mp.Process(target=f, daemon=True) for f in (fabric_a_to_b, responder)]
        for p in procs:  # forked before any thread of ours starts
            p.start()
        threads = [threading.Thread(target=f, daemon=True) for f in (fabric_b_to_a, cnp_sink)]
        for t in threads:
            t.start()
        for r in ready:
            if not r.wait(30):
                rl.fail("the bridge or the emulated host did not start within 30 s")

        frames = [rl.frame(rl.roce_ip_packet(4, HOST_A, HOSTS_B[i % len(HOSTS_B)],
                                             rl.OP_WRITE_ONLY, 0x4242, i, tos=0x02,
                                             payload_len=256),
                           dst_mac=macs["gwa_h"], src_mac=macs["ha"])
                  for i in range(2 * 24)]

        def send(n):
            period = 1.0 / RATE_PPS
            t0 = time.monotonic()
            for i in range(n):
                tx_a.send(frames[i % len(frames)])
                delay = t0 + (i + 1) * period - time.monotonic()
                if delay > 0:
                    time.sleep(delay)

        send(PHASE1)  # CE is marked, but nobody answers yet: shares stay equal
        time.sleep(0.3)
        # Phases are told apart by the bridge's clock: let it catch up on phase 1 first.
        deadline = time.monotonic() + 10
        while bridged.value < PHASE1 * 0.95 and time.monotonic() < deadline:
            time.sleep(0.05)
        t_phase2 = time.monotonic()
        respond.set()
        send(PHASE2)
        time.sleep(0.5)
        stop.set()
        tags = tags_queue.get(timeout=30)
        for p in procs:
            p.join(10)
        for t in threads:
            t.join(10)
        cnps_sent = [cnps_sent.value]
        delay_ms = answer_delay.value / max(cnps_sent[0], 1) * 1e3

        stats_a, out_a, err_a = stop_gateway(gws[0])
        stats_b, out_b, err_b = stop_gateway(gws[1])
        gws.clear()

        def shares(sample):
            n = len(sample)
            return {k: sum(1 for _, t in sample if t == k) / max(n, 1) for k in (1, 2, 3)}, n

        before = [x for x in tags if x[0] < t_phase2]
        after_all = [x for x in tags if x[0] >= t_phase2]
        after = after_all[len(after_all) // 2:]  # the second half: the loop has settled
        sb, nb = shares(before)
        sa, na = shares(after)
        eng_a, eng_b = stats_a.get("engine", {}), stats_b.get("engine", {})
        log(f"fabric frames from A: before {nb} {fmt(sb)}; after {na} {fmt(sa)}")
        log(f"emulated host: answered CE marks {delay_ms:.2f} ms old on average; "
            f"{cnps_late.value} marks seen later than {LATE_S * 1e3:.0f} ms not answered")
        log(f"CNPs: hb sent {cnps_sent[0]}, ha received {cnps_back[0]}; B reflected "
            f"{eng_b.get('cnp_sent_reflected')} of {eng_b.get('cnp_sent')}; A attributed "
            f"{eng_a.get('cnp_reflected')} reflected, {eng_a.get('cnp_fallback')} fallback")
        log(f"A's engine: decisions {eng_a.get('decisions')}, publications "
            f"{eng_a.get('publications')}, CNPs unattributed {eng_a.get('cnp_unattributed')}")
        log("A's paths: " + ", ".join(
            f"{p['segment_list']}: evidence {p['evidence']} factor {p['factor']:.3f}"
            for p in eng_a.get("paths", [])))
        log(f"reaction (first CNP seen by A's worker -> new weights in force): last "
            f"{eng_a.get('last_reaction_ns', 0) / 1e3:.1f} us, max "
            f"{eng_a.get('max_reaction_ns', 0) / 1e3:.1f} us; engine time last "
            f"{eng_a.get('last_engine_ns', 0) / 1e3:.1f} us, max "
            f"{eng_a.get('max_engine_ns', 0) / 1e3:.1f} us")
        for line in err_a.splitlines():
            if "engine:" in line:
                log("A: " + line)
                break

        problems = []
        paths = {p["segment_list"]: p for p in eng_a.get("paths", [])}
        evidence = {k: paths.get(k, {}).get("evidence", 0) for k in ("a", "b", "c")}
        if nb < PHASE1 * 0.8 or na < PHASE2 * 0.3:
            problems.append(f"too few frames captured ({nb} before, {na} after)")
        if cnps_sent[0] == 0:
            problems.append("hb never saw a CE-marked packet (CE marking or RFC 6040 failed)")
        if REFLECT:
            for k in (1, 2, 3):
                if abs(sb[k] - 1 / 3) > 0.05:
                    problems.append(f"before: share of path {k} is {sb[k]:.3f}, not 1/3")
            if not eng_b.get("cnp_sent_reflected"):
                problems.append("B reflected no path id into a CNP")
            if not eng_a.get("cnp_reflected"):
                problems.append("A attributed no reflected CNP")
            if eng_a.get("cnp_fallback", 0) > eng_a.get("cnp_reflected", 0):
                problems.append("most CNPs fell back instead of carrying the reflected path id")
            # Reflected CNPs name b alone; only the odd late CNP (past the reflection window)
            # falls back to blaming all three lists a third each.
            for k in ("a", "c"):
                if evidence[k] * 4 > evidence["b"]:
                    problems.append(f"path {k} was blamed like b: {evidence}")
            if sa[2] >= 0.2:
                problems.append(f"after: share of path b is {sa[2]:.3f} (was {sb[2]:.3f})")
            if abs(sa[1] - sa[3]) > 0.1 or sa[1] < 0.38 or sa[3] < 0.38:
                problems.append(f"after: a and c should share b's traffic evenly: {fmt(sa)}")
        else:
            if eng_b.get("cnp_sent_reflected"):
                problems.append("B reflected although engine/reflect is false")
            if eng_a.get("cnp_reflected"):
                problems.append("A saw reflected CNPs from a peer that does not reflect")
            if not eng_a.get("cnp_fallback"):
                problems.append("A attributed no CNP by the fallback")
            if sb[2] < 0.1:
                problems.append(f"before: too few flows on b ({fmt(sb)}) for this test")
            # The blame follows the packets each list carried toward the CNP's sender in the
            # last 5-10 ms: a late CNP of a flow that just left b still lands mostly on b.
            if evidence["b"] <= evidence["a"] + evidence["c"]:
                problems.append(f"the fallback did not blame mostly b: {evidence}")
            # Loose on purpose (a loaded 2-core machine, Python hosts): b loses a good part
            # of its share.
            if sa[2] > sb[2] * 0.6:
                problems.append(f"after: share of path b is {sa[2]:.3f} (was {sb[2]:.3f})")
            # Lists the engine did not blame keep their flows (a weight change moves only the
            # flows it must), so they keep their share or gain. That holds for a list only
            # while its own evidence is small: when the emulated host answers so late that a
            # CNP arrives after its flow left b (a loaded machine: answers tens of ms late),
            # the fallback rightly blames the list the flow is on now, that list's weight
            # drops too, and flows move off it. Then the check would test the machine's
            # load, not the engine, and is skipped with the evidence printed.
            # Tolerance: one and a half flows. b recovers in steps and is cut again while
            # congested; each factor-only rebuild moves the fewest flows for its own step, but
            # across a sequence of steps a flow of a or c can end up on b for a while.
            flow_share = 1 / len(HOSTS_B)
            blamed_elsewhere = evidence["a"] + evidence["c"]
            if blamed_elsewhere * 8 <= evidence["b"]:
                for k in (1, 3):
                    if sa[k] < sb[k] - 1.5 * flow_share:
                        problems.append(f"after: path {'abc'[k - 1]} lost share: {sb[k]:.3f} "
                                        f"-> {sa[k]:.3f} (evidence {evidence})")
            else:
                log(f"not checked: a and c keep their share (late CNPs blamed them too: "
                    f"evidence {evidence})")
        # Engine time is printed, not asserted: here two busy-polling workers and four Python
        # threads share two cores, so the main lcore is preempted at times (the uncontended
        # figure is in test-engine-feedback-loop).
        if problems:
            log(err_a[-3000:])
            rl.fail("\n".join(problems))
        log("ok")
    finally:
        for g in gws:
            if g["p"].poll() is None:
                g["p"].kill()
                g["p"].wait()
        chain.cleanup()


def fmt(s):
    return "{" + ", ".join(f"{'abc'[k - 1]}: {v:.3f}" for k, v in s.items()) + "}"


if __name__ == "__main__":
    rl.main_wrapper(main)
