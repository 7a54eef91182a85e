# SPDX-License-Identifier: BSD-3-Clause
# Collectives on the emulated fabric (docs/design/fabric.md, "Collectives under DCQCN"): the 2-leaf
# leaf-spine of leafspine_lib with 2 hosts per leaf, each behind its own srv6gw, every spine
# uplink of both leaves shaped with ECN marking (as fabric_lib shapes L1's), and in every host
# roce-gen's closed-loop mode (one rank: DCQCN per QP, RC messages, go-back-N) beside roce-sink
# --rc (ACK/NAK, CNPs on CE).
#
#   hA1 ─ gA1 ─┐                 ┌─ S1 ─┐                 ┌─ gB1 ─ hB1
#              ├─ L1 ═ up1..3 ═══┼─ S2 ─┼═══ up1..3 ═ L2 ─┤
#   hA2 ─ gA2 ─┘                 └─ S3 ─┘                 └─ gB2 ─ hB2
#   ═ : leaf uplinks (L1 -> Si and L2 -> Si), 20 Mbit/s HTB + ECN marker
#
# Every gateway has one policy per other host: over the three spines for the far leaf (path
# ids 16 * host index + spine), straight to the neighbour's End.DX4 for the same leaf; the
# selection mode is the scheme under test; far-leaf paths are probed (end-probe SIDs) so that
# a cut link is taken out. Policies are pushed with srv6gw-ctl apply (no controller process).
import json
import os
import signal
import statistics
import subprocess
import tempfile
import time

import fabric_lib as fl
import leafspine_lib as ls
from fabric_lib import gwlib, rl

# The emulation's scale: an RNIC at 40 Gbit/s becomes a 40 Mbit/s paced sender, microseconds
# become milliseconds (docs/design/fabric.md has the DCQCN table).
LINE_MBIT = 40.0
DCQCN_SCALE = 1e-3
CNP_GAP_US = 50000  # the notification point's 50 us between CNPs per QP, scaled
WINDOW = 256  # unacknowledged packets per QP: above the bandwidth-delay product when the
#               loaded machine stretches the RTT to tens of milliseconds
DEST_QP_BASE = 0x100  # roce-gen --dest-qp-base: QP i toward rank p is 0x100 + p * QPs + i
# Path probes: every 20 ms, lost after 200 ms, 3 lost = down (a cut is seen within ~0.3 s).
# leafspine_lib's 5 ms / 50 ms flapped here: with four busy-polling gateways, the ranks and
# the sinks on two cores shared with other work (load 15-20), every gateway saw all its
# far-leaf paths "down" every few seconds (and the engine keeps only the last list in use).
PROBE = {"interval-us": 20000, "timeout-us": 200000, "loss-threshold": 3,
         "hold-down-us": 500000}
RTO_MS = 1000       # retransmission timeout: above the worst queueing delay (400 KB at 4 Mbit/s:
#                     0.8 s); NCCL sets an RNIC's to 4.096 us x 2^18 = 1.07 s


class CollectiveFabric(ls.LeafSpineFabric):
    def __init__(self, work, spines=3, hosts_per_leaf=2, link_mbit=20.0, mark_bytes=100000,
                 limit_bytes=400000):
        # Fabric's marker builder reads these four attributes.
        self.mark_bytes, self.limit_bytes, self._markers = mark_bytes, limit_bytes, {}
        self.traffic = []  # roce-gen / roce-sink processes of the run in progress
        self.controller = None  # leafspine_lib.Controller while the controller places
        self.spines_down = set()  # spines the controller's plan had down at the last look
        self.paths_out = []  # (gateway, policy, list) not in use when wait_paths_up gave up
        super().__init__(work, spines=spines, hosts_per_leaf=hosts_per_leaf, certs=None)
        self.link_mbit = {}
        self._shaped = set()
        for leaf in ("L1", "L2"):
            for i in range(1, spines + 1):
                self.shape(leaf, i, link_mbit)

    def cleanup(self):
        """The traffic processes first (a run cut short leaves ranks waiting at their
        barrier), then the gateways and namespaces."""
        while self.traffic:
            p = self.traffic.pop()
            if p.poll() is None:
                p.kill()
                p.wait()
        if self.controller is not None and self.controller.p.poll() is None:
            self.controller.p.kill()
            self.controller.p.wait()
        super().cleanup()

    def tc(self, role, args, check=True):
        return fl.sh(["ip", "netns", "exec", self.ns[role], "tc"] + args.split(), check=check)

    def _marker(self, rate_bps):
        return fl.Fabric._marker(self, rate_bps)

    def precompile(self, mbit):
        self._marker(int(mbit * 1e6))

    def shape(self, leaf, i, mbit):
        """Leaf `leaf`'s uplink to spine i: HTB at `mbit` with a 400 KB FIFO and the ECN marker
        in front (a rate change replaces the marker, then the class rate)."""
        dev, rate_bps = f"up{i}", int(mbit * 1e6)
        if (leaf, i) not in self._shaped:
            self._shaped.add((leaf, i))
            self.tc(leaf, f"qdisc add dev {dev} root handle 1: htb default 10")
            self.tc(leaf, f"class add dev {dev} parent 1: classid 1:10 htb rate {rate_bps}bit "
                          f"ceil {rate_bps}bit burst 3000 cburst 3000")
            self.tc(leaf, f"qdisc add dev {dev} parent 1:10 handle 10: bfifo "
                          f"limit {self.limit_bytes}")
            self.tc(leaf, f"qdisc add dev {dev} clsact")
            self.tc(leaf, f"filter add dev {dev} egress pref 1 handle 1 bpf da "
                          f"obj {self._marker(rate_bps)} sec classifier")
        else:
            self.tc(leaf, f"filter replace dev {dev} egress pref 1 handle 1 bpf da "
                          f"obj {self._marker(rate_bps)} sec classifier")
            self.tc(leaf, f"class change dev {dev} parent 1: classid 1:10 htb "
                          f"rate {rate_bps}bit ceil {rate_bps}bit burst 3000 cburst 3000")
        self.link_mbit[(leaf, i)] = mbit

    def uplink_drops(self):
        """{'L1-1': packets up1's FIFO dropped, ...} over both leaves."""
        out = {}
        for leaf, i in sorted(self._shaped):
            for q in json.loads(self.tc(leaf, f"-s -j qdisc show dev up{i}").stdout):
                if q.get("kind") == "bfifo":
                    out[f"{leaf}-{i}"] = q.get("drops", 0)
        return out

    def start(self, engine=False):
        """The four gateways, the engine on (with reflection, on the fabric's millisecond
        time scale: run.py's ENGINE_PARAMS) or off."""
        import run
        params = {"enabled": bool(engine), "reflect": True}
        params.update(run.ENGINE_PARAMS)
        self.start_gateways(engine_params=params, probe=PROBE)

    def push_policies(self, mode="flow", flowlet_gap_us=None, replace=False):
        """Every gateway's policies in `mode`; `replace`: also delete what else runs there
        (what the controller left: its policies, pinned rules and rule ids)."""
        spines = range(1, self.spines + 1)
        for g in self.gws:
            selection = {"mode": f"SELECTION_MODE_{mode.upper()}"}
            if flowlet_gap_us is not None:
                selection["flowlet_gap_us"] = flowlet_gap_us
            if mode == "balanced":
                selection["idle_gap_us"] = fl.BALANCED_IDLE_GAP_US
            changes = [{"upsert_local_sid": {"sid": g.dx4,
                                             "behavior": "LOCAL_SID_BEHAVIOR_END_DX4"}},
                       {"upsert_local_sid": {"sid": g.probe_sid,
                                             "behavior": "LOCAL_SID_BEHAVIOR_END_PROBE"}}]
            for n, h in enumerate(self.gws):
                if h is g:
                    continue
                if h.leaf == g.leaf:
                    lists = [{"name": "direct", "path_id": 16 * h.index, "weight": 1,
                              "sids": [h.dx4]}]
                else:
                    lists = [{"name": f"s{i}", "path_id": 16 * h.index + i, "weight": 1,
                              "sids": [ls.spine_sid(i), h.dx4]} for i in spines]
                name = f"to{h.host}"
                pol = {"name": name, "color": 1 + n, "selection": selection,
                       "segment_lists": lists}
                if h.leaf != g.leaf:
                    # Probes over each spine to the far gateway's end-probe SID: a cut path
                    # is taken out within timeout + 3 intervals (leafspine_lib.PROBE).
                    pol["probe_sid"] = h.probe_sid
                changes.append({"upsert_policy": pol})
                changes.append({"upsert_steering": {"id": 1 + n, "prefix": f"{h.address}/32",
                                                    "policy": name}})
            if replace:
                changes = self._replacing(g, changes)
            path = os.path.join(self.work, f"changes-{g.name}.json")
            with open(path, "w") as f:
                json.dump({"changes": changes}, f, indent=2)
            self.ctl(g, ["apply", "-f", path])

    def wait_paths_up(self, timeout_s=15):
        """Until every segment list of every gateway is in use (factor > 0: probes up, no
        engine exclusion). A new policy's probes go down before the far gateway runs its
        probe SID, and come back after the hold-down: without this wait a run right after
        a push or a repaired cut starts on whatever lists the probes left. Returns the
        seconds it took, or None at the timeout."""
        t0 = time.monotonic()
        while True:
            out = []
            for g in self.gws:
                doc = json.loads(self.ctl(g, ["--json", "stats"]).stdout)
                out += [(g.name, p["name"], x.get("segment_list")) for p in
                        doc.get("policies", []) for x in p.get("paths", [])
                        if float(x.get("factor", 0)) <= 0]
            if not out:
                return time.monotonic() - t0
            if time.monotonic() - t0 > timeout_s:
                self.paths_out = out
                return None
            time.sleep(0.1)

    def _replacing(self, g, changes):
        """`changes` with deletes of every object on g they do not upsert: stale rules
        first (a policy a rule steers to cannot go before the rule), stale policies and
        local SIDs last."""
        keep = {"policies": set(), "steering": set(), "local-sids": set()}
        for c in changes:
            for kind, (field, key) in {"policies": ("upsert_policy", "name"),
                                       "steering": ("upsert_steering", "id"),
                                       "local-sids": ("upsert_local_sid", "sid")}.items():
                if field in c:
                    keep[kind].add(str(c[field][key]))
        running = self.objects(g)
        first = [{"delete_steering": int(i)} for i in running["steering"]
                 if i not in keep["steering"]]
        last = [{"delete_policy": n} for n in running["policies"] if n not in keep["policies"]]
        last += [{"delete_local_sid": sid} for sid in running["local-sids"]
                 if sid not in keep["local-sids"]]
        return first + changes + last

    # -- the controller's placement --------------------------------------------------------
    def start_controller(self):
        """srv6gw-controller over this fabric (docs/design/controller.md): the topology with the
        shaped capacities (uplinks at their rate, hosts at the NIC's), every gateway probing
        its far-leaf paths as in push_policies, agents on unix sockets. Returns once every
        gateway runs the controller's plan (its objects replace whatever ran there)."""
        topo = os.path.join(self.work, "controller-topology.json")
        with open(topo, "w") as f:
            json.dump(self.topology_json(link_gbps=self.link_mbit[("L1", 1)] / 1000,
                                         host_gbps=LINE_MBIT / 1000), f, indent=2)
        gateways = os.path.join(self.work, "controller-gateways.json")
        with open(gateways, "w") as f:
            json.dump({"gateways": [{"name": g.host, "probe": g is self.gws[0]}
                                    for g in self.gws]}, f)
        state = os.path.join(self.work, f"controller-state-{time.monotonic_ns()}.json")
        self.controller = ls.Controller(self.work, topo, gateways, state)
        self.controller.ctl(["wait-synced", "--timeout", "60"])
        if self.wait_links() is None:
            rl.fail(f"spines {sorted(self.spines_down)} still down in the controller's plan "
                    f"15 s after its start:\n{self.controller.tail()}")

    def stop_controller(self):
        """The controller stopped; its objects stay on the gateways until replaced."""
        c, self.controller = self.controller, None
        if c is not None:
            c.stop()

    def collective_job(self, job_id, collective, nbytes, qps_per_peer):
        """The collective's flows as a controller job: one flow per QP that carries data
        (roce-gen's DestQP numbering: 0x100 + peer * qps_per_peer + i, the same number at
        both ends), with the bytes it carries per iteration. AlltoAll: every rank to every
        other; ring AllReduce: each rank to the next, 2(n-1) chunks."""
        n = len(self.gws)
        chunk = nbytes // n
        flows = []
        for r, g in enumerate(self.gws):
            if collective == "alltoall":
                peers, per_peer = [(r + k) % n for k in range(1, n)], chunk
            else:
                peers, per_peer = [(r + 1) % n], 2 * (n - 1) * chunk
            for p in peers:
                for i in range(qps_per_peer):
                    flows.append({"src_host": g.host, "dst_host": self.gws[p].host,
                                  "dest_qp": DEST_QP_BASE + p * qps_per_peer + i,
                                  "bytes": max(1, per_peer // qps_per_peer)})
        return {"job_id": job_id, "flows": flows}

    def submit_job(self, job):
        """Place `job` and wait until every gateway runs its pinned rules. Returns the
        controller's answer and the cross-leaf flows placed per spine {i: flows}."""
        path = os.path.join(self.work, f"job-{job['job_id']}.json")
        with open(path, "w") as f:
            json.dump(job, f)
        resp = json.loads(self.controller.ctl(["submit", "-f", path]).stdout)
        self.controller.ctl(["wait-synced", "--timeout", "60"])
        per_spine = {}
        for pl in resp.get("placements", []):
            for i in range(1, self.spines + 1):
                if any(f"S{i}" in link.split("--") for link in pl.get("links", [])):
                    per_spine[i] = per_spine.get(i, 0) + 1
        return resp, per_spine

    def cancel_job(self, job_id):
        self.controller.ctl(["cancel", job_id])
        self.controller.ctl(["wait-synced", "--timeout", "60"])

    def wait_links(self, down_spines=(), timeout_s=15):
        """Until the links the controller's plan has down (inferred from the gateways' probes)
        are exactly those of the spines `down_spines`, and every gateway runs that plan.
        Returns the seconds it took, or None at the timeout (the spines down then are in
        self.spines_down). Needed after a start too: the gateways begin probing a new plan's
        paths before the far gateways run its probe SIDs, and the controller takes the
        spines those probe-downs point at out until their probe-ups (hold-down 0.5 s)."""
        t0 = time.monotonic()
        want = set(down_spines)
        while True:
            links = self.controller.plan().get("links", [])
            self.spines_down = {i for i in range(1, self.spines + 1) for x in links
                                if not x.get("up", False) and f"S{i}" in x["link"].split("--")}
            if self.spines_down == want:
                self.controller.ctl(["wait-synced", "--timeout", "60"])
                return time.monotonic() - t0
            if time.monotonic() - t0 > timeout_s:
                return None
            time.sleep(0.05)

    # -- one collective run --------------------------------------------------------------
    def run_collective(self, collective="alltoall", nbytes=1 << 20, iterations=3,
                       qps_per_peer=1, dcqcn=True, timeout_s=120, seed=1):
        """Every host runs one rank (roce-gen closed loop) and roce-sink --rc. Returns the
        per-iteration completion times and the transport's and receivers' totals."""
        run_dir = tempfile.mkdtemp(prefix="coll-", dir=self.work)
        barrier = os.path.join(run_dir, "barrier")
        os.mkdir(barrier)
        ranks = ",".join(g.address for g in self.gws)
        sinks = []
        for g in self.gws:
            out = os.path.join(run_dir, f"sink-{g.host}.txt")
            summary = os.path.join(run_dir, f"sink-{g.host}.json")
            cmd = ["ip", "netns", "exec", self.ns[g.host], fl.SINK_BIN, "--iface", "eth0",
                   "--out", out, "--gw-mac", self.mac(g.name, "host0"), "--rc",
                   "--summary", summary, "--cnp-gap-us", str(CNP_GAP_US), "--bin-ms", "100"]
            p = subprocess.Popen(cmd, stderr=subprocess.PIPE, text=True)
            self.traffic.append(p)
            sinks.append({"p": p, "out": out, "summary": summary, "host": g.host})
        for s in sinks:
            deadline = time.monotonic() + 20
            while not os.path.exists(s["out"]):
                if s["p"].poll() is not None or time.monotonic() > deadline:
                    rl.fail(f"roce-sink in {s['host']} did not start: {s['p'].stderr.read()}")
                time.sleep(0.05)
        drops0 = self.uplink_drops()
        ends0 = self.spine_end_counters()
        gens = []
        for r, g in enumerate(self.gws):
            report = os.path.join(run_dir, f"gen-{g.host}.json")
            prefix = gwlib.unique_prefix(f"coll_{g.host}")
            cmd = ["ip", "netns", "exec", self.ns[g.host], fl.GEN_BIN, "-l", str(r % 2),
                   "--no-huge", "--no-shconf", "--file-prefix", prefix, "--no-pci", "-m", "256",
                   "--log-level", "lib.eal:warning", "--vdev", "net_af_packet0,iface=eth0",
                   "--", "--tx-port", "net_af_packet0", "--collective", collective,
                   "--ranks", ranks, "--rank", str(r), "--bytes", str(nbytes),
                   "--iterations", str(iterations), "--qps-per-peer", str(qps_per_peer),
                   "--line-rate-mbps", str(LINE_MBIT), "--dcqcn-scale", str(DCQCN_SCALE),
                   "--rto-ms", str(RTO_MS), "--window", str(WINDOW),
                   "--dest-qp-base", str(DEST_QP_BASE),
                   "--barrier-dir", barrier, "--size", "1024",
                   "--seed", str(seed), "--src-mac", self.mac(g.host, "eth0"),
                   "--dst-mac", self.mac(g.name, "host0"), "--report-json", report,
                   "--timeout", str(timeout_s), "--quiet"]
            if not dcqcn:
                cmd.append("--no-dcqcn")
            p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            self.traffic.append(p)
            gens.append({"p": p, "report": report, "host": g.host})
        reports = []
        for gen in gens:
            try:
                _, err = gen["p"].communicate(timeout=timeout_s + 60)
            except subprocess.TimeoutExpired:
                gen["p"].kill()
                gen["p"].communicate()
                err = "killed after the timeout"
            if gen["p"].returncode not in (0, 3) or not os.path.exists(gen["report"]):
                rl.fail(f"roce-gen in {gen['host']} exit {gen['p'].returncode}: {err[-2000:]}")
            with open(gen["report"]) as f:
                reports.append(json.load(f))
        time.sleep(0.3)  # the sinks' last answers
        sums = []
        for s in sinks:
            s["p"].send_signal(signal.SIGTERM)
            try:
                s["p"].wait(timeout=10)
            except subprocess.TimeoutExpired:
                s["p"].kill()
                s["p"].wait()
            with open(s["summary"]) as f:
                sums.append(json.load(f))
        self.traffic.clear()
        drops1 = self.uplink_drops()
        ends1 = self.spine_end_counters()
        res = summarise(reports, sums, nbytes, iterations)
        res["uplink_drops"] = {k: drops1.get(k, 0) - drops0.get(k, 0) for k in drops1}
        res["spine_packets"] = {i: ends1[i][0] - ends0.get(i, (0, 0))[0] for i in ends1}
        res["params"] = {"collective": collective, "bytes": nbytes, "iterations": iterations,
                         "qps_per_peer": qps_per_peer, "dcqcn": dcqcn, "line_mbit": LINE_MBIT,
                         "ranks": len(self.gws)}
        return res


def summarise(reports, sink_sums, nbytes, iterations):
    """CCT of iteration i: from the first rank's start of its first phase to the last rank's
    end of its last phase (phases are separated by the barrier)."""
    ppi = reports[0]["phases_per_iteration"]
    ccts = []
    for it in range(iterations):
        starts, dones = [], []
        for r in reports:
            ph = r["phases"][it * ppi:(it + 1) * ppi]
            if len(ph) < ppi or any(d == 0 for _, d in ph):
                starts = None
                break
            starts.append(ph[0][0])
            dones.append(ph[-1][1])
        if starts is None:
            break
        ccts.append((max(dones) - min(starts)) / 1e9)
    completed = all(r["completed"] for r in reports) and len(ccts) == iterations
    tot = {k: sum(r[k] for r in reports) for k in (
        "data_packets", "retransmitted", "acks", "naks", "nak_go_backs", "timeouts", "cnps",
        "rate_cuts", "messages_done", "bytes_done")}
    sink = {k: sum(s[k] for s in sink_sums) for k in (
        "frames", "ce", "late", "cnps", "acks", "naks", "duplicates", "accepted",
        "out_of_order_dropped")}
    busy = sum(ccts)
    res = {"completed": completed, "cct_s": [round(c, 4) for c in ccts], "sender": tot,
           "sink": sink}
    if ccts:
        srt = sorted(ccts)
        res["cct_median_s"] = round(statistics.median(ccts), 4)
        res["cct_p99_s"] = round(srt[min(len(srt) - 1, int(0.99 * len(srt)))], 4)
        res["cct_max_s"] = round(srt[-1], 4)
        # Goodput: payload every rank acknowledged, per second of collective time, per rank.
        res["goodput_mbit_per_rank"] = round(tot["bytes_done"] * 8 / busy / 1e6 / len(reports),
                                             3) if busy > 0 else 0.0
    res["retransmit_fraction"] = round(tot["retransmitted"] / tot["data_packets"], 4) \
        if tot["data_packets"] else 0.0
    res["reorder_fraction"] = round(sink["late"] / sink["frames"], 4) if sink["frames"] else 0.0
    return res


def fmt(res):
    s, k = res["sender"], res["sink"]
    return (f"CCT median {res.get('cct_median_s', float('nan')):.3f} s, p99 "
            f"{res.get('cct_p99_s', float('nan')):.3f} s ({res['cct_s']}), goodput "
            f"{res.get('goodput_mbit_per_rank', 0):.2f} Mbit/s per rank; data {s['data_packets']}, "
            f"retransmitted {s['retransmitted']} ({res['retransmit_fraction']:.3%}), NAKs "
            f"{k['naks']} sent / {s['naks']} received, timeouts {s['timeouts']}, CNPs {k['cnps']} "
            f"sent / {s['cnps']} received ({s['rate_cuts']} cuts), CE {k['ce']}, reordered "
            f"{k['late']} ({res['reorder_fraction']:.3%}), drops {res.get('uplink_drops')}, "
            f"spines {res.get('spine_packets')}")


def sim_topology(spines=3, hosts_per_leaf=2, link_mbit=20.0, host_mbit=LINE_MBIT):
    """This fabric for tools/fabricsim (lib/pathalg's topology format): hosts at the paced NIC
    rate, leaf-spine links at the shaped rate (a pathalg link has one capacity for both
    directions; here only the leaves' uplinks are shaped, but every spine-to-leaf direction
    carries only what the other leaf's shaped uplink let through, so the bound is the same)."""
    sw = [{"name": "L1", "role": "leaf"}, {"name": "L2", "role": "leaf"}] + \
        [{"name": f"S{i}", "role": "spine", "sid": ls.spine_sid(i)} for i in range(1, spines + 1)]
    hosts, links = [], []
    for side, leaf, net in (("A", "L1", 0), ("B", "L2", 1)):
        for k in range(1, hosts_per_leaf + 1):
            loc = f"fc00:{side.lower()}:{k}"
            hosts.append({"name": f"h{side}{k}", "address": f"10.0.{net}.{k}",
                          "gateway": {"source-address": f"{loc}::1", "locator": f"{loc}::/48",
                                      "decap-sid": f"{loc}::d4"}})
            links.append({"a": f"h{side}{k}", "b": leaf, "members": 1,
                          "member-gbps": str(host_mbit / 1000)})
    for i in range(1, spines + 1):
        for leaf in ("L1", "L2"):
            links.append({"a": leaf, "b": f"S{i}", "members": 1,
                          "member-gbps": str(link_mbit / 1000)})
    return {"srv6gw-topology:topology": {
        "name": f"emulated collective fabric: 2 leaves x {spines} spines x {hosts_per_leaf} hosts",
        "switches": {"switch": sw}, "hosts": {"host": hosts}, "links": {"link": links}}}
