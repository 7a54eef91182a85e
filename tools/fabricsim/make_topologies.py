#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
# Writes the simulator's own topology files (lib/pathalg's format, YANG srv6gw-topology):
#   topologies/leafspine-16.json    4 leaves x 4 spines x 4 hosts, 400G hosts, LAGs of 2 x 200G
#                                   (non-blocking like the paper's fabric; fabricsim-smoke)
#   topologies/emulated-3spine.json the emulated fabric of docs/design/fabric.md: hA - leafA - spine1..3
#                                   - leafB - hB, leafA's uplinks 20 Mbit/s (the HTB shapers),
#                                   everything else unshaped (veth: 10 Gbit/s here)
# The 128-GPU and fat-tree examples come from lib/pathalg (config/examples).
import json
import os

HERE = os.path.dirname(os.path.abspath(__file__))


def host(name, address, n):
    return {"name": name, "address": address,
            "gateway": {"source-address": f"fc00:a:{n:x}::1", "locator": f"fc00:a:{n:x}::/48",
                        "decap-sid": f"fc00:a:{n:x}::d46"}}


def switch(name, role, n):
    return {"name": name, "role": role, "sid": f"fc00:5:{n:x}::e"}


def link(a, b, gbps, members=1):
    return {"a": a, "b": b, "members": members, "member-gbps": str(gbps)}


def topology(name, switches, hosts, links):
    return {"srv6gw-topology:topology": {"name": name, "switches": {"switch": switches},
                                         "hosts": {"host": hosts}, "links": {"link": links}}}


def leaf_spine(leaves, spines, hosts_per_leaf, lag_members, member_gbps, host_gbps):
    sw = [switch(f"leaf{i}", "leaf", 0x100 + i) for i in range(leaves)]
    sw += [switch(f"spine{j}", "spine", 0x200 + j) for j in range(spines)]
    hs, ln = [], []
    for i in range(leaves):
        for k in range(hosts_per_leaf):
            n = i * hosts_per_leaf + k
            hs.append(host(f"h{n}", f"10.{i}.0.{k + 1}", n + 1))
            ln.append(link(f"h{n}", f"leaf{i}", host_gbps))
        for j in range(spines):
            ln.append(link(f"leaf{i}", f"spine{j}", member_gbps, lag_members))
    return topology(f"leaf-spine {leaves}x{spines}x{hosts_per_leaf}", sw, hs, ln)


def emulated():
    sw = [switch("leafA", "leaf", 0x10), switch("leafB", "leaf", 0x11)]
    sw += [switch(f"spine{i}", "spine", i) for i in (1, 2, 3)]
    hs = [host("hA", "10.0.0.1", 0xa), host("hB", "10.0.1.1", 0xb)]
    ln = [link("hA", "leafA", 10), link("hB", "leafB", 10)]
    for i in (1, 2, 3):
        ln.append(link("leafA", f"spine{i}", 0.02))
        ln.append(link(f"spine{i}", "leafB", 10))
    return topology("emulated fabric (tools/fabric)", sw, hs, ln)


def main():
    out = os.path.join(HERE, "topologies")
    os.makedirs(out, exist_ok=True)
    for name, t in (("leafspine-16.json", leaf_spine(4, 4, 4, 2, 200, 400)),
                    ("emulated-3spine.json", emulated())):
        with open(os.path.join(out, name), "w") as f:
            json.dump(t, f, indent=1)
            f.write("\n")


if __name__ == "__main__":
    main()
