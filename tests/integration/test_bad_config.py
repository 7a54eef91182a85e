#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
# (d) A bad configuration stops srv6gw before it touches DPDK: non-zero exit, and stderr names
# the offending node by its path in the YANG tree and says why. Also bad command lines.
import copy
import json
import os
import subprocess

import gwlib

gwlib.need_tools()
work = gwlib.workdir("badcfg")
with open(gwlib.DEMO_JSON) as f:
    demo = json.load(f)


def variant(name, mutate):
    cfg = copy.deepcopy(demo)
    mutate(cfg["srv6gw:gateway"])
    path = os.path.join(work, name + ".json")
    with open(path, "w") as f:
        json.dump(cfg, f)
    return path


def gateway(args, timeout=30):
    # EAL arguments that would fail if EAL were ever initialised (no such vdev driver): a bad
    # config must be refused before that.
    cmd = [gwlib.BIN, "--no-huge", "--no-pci", "--vdev", "net_nosuchdriver0", "--"] + args
    print("+ " + " ".join(cmd), flush=True)
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)


def sid_list(n):
    return [f"fc00:0:{i + 1:x}::e" for i in range(n)]


cases = [
    # (name, mutation, text that must appear in stderr: the node path, and a word of the reason)
    ("hop-limit", lambda g: g.__setitem__("hop-limit", 300),
     ["/srv6gw:gateway/hop-limit", "300"]),
    ("unknown-policy", lambda g: g["steering"]["rule"][0].__setitem__("policy", "no-such-policy"),
     ["/srv6gw:gateway/steering/rule[id='10']/policy", "no-such-policy"]),
    ("17-sids", lambda g: g["policies"]["policy"][0]["segment-list"][0].__setitem__("sid", sid_list(17)),
     ["/srv6gw:gateway/policies/policy[name='rack1-v4']/segment-list[name='via-spine1']/sid"]),
    ("duplicate-path-id",
     lambda g: g["policies"]["policy"][0]["segment-list"][1].__setitem__("path-id", 101),
     ["segment-list[name='via-spine2']/path-id", "101"]),
    ("bad-sid", lambda g: g["policies"]["policy"][0]["segment-list"][0].__setitem__("sid", ["fc00::zz"]),
     ["segment-list[name='via-spine1']/sid", "fc00::zz"]),
]

for name, mutate, expect in cases:
    res = gateway(["--config", variant(name, mutate)])
    print(res.stderr.strip())
    gwlib.check(res.returncode != 0, f"{name}: exit code 0 for a bad config")
    for text in expect:
        gwlib.check(text in res.stderr, f"{name}: stderr does not contain {text!r}")
    gwlib.check("bad configuration" in res.stderr, f"{name}: no 'bad configuration' line")
    gwlib.check("EAL:" not in res.stderr, f"{name}: EAL was initialised before the config check")
    gwlib.check("final statistics" not in res.stdout, f"{name}: gateway ran anyway")

malformed = os.path.join(work, "malformed.json")
with open(malformed, "w") as f:
    f.write('{"srv6gw:gateway": {"hop-limit": ')
res = gateway(["--config", malformed])
print(res.stderr.strip())
gwlib.check(res.returncode != 0 and malformed in res.stderr, "malformed JSON not refused by name")

missing = os.path.join(work, "does-not-exist.json")
res = gateway(["--config", missing])
print(res.stderr.strip())
gwlib.check(res.returncode != 0 and missing in res.stderr, "missing file not refused by name")

# Command-line errors: usage exit code 2 and what is wrong.
for args, text in [([], "--config FILE is required"),
                   (["--config", gwlib.DEMO_JSON, "--frobnicate"], "not expected: --frobnicate"),
                   (["--config", gwlib.DEMO_JSON, "--stats-interval", "soon"], "--stats-interval"),
                   (["--config", gwlib.DEMO_JSON, "--log-level", "loud"], "--log-level")]:
    res = gateway(args)
    print(res.stderr.strip())
    gwlib.check(res.returncode == 2, f"{args}: exit {res.returncode}, expected 2")
    gwlib.check(text in res.stderr, f"{args}: stderr does not say {text!r}")

res = gateway(["--help"])
gwlib.check(res.returncode == 0 and "--config FILE" in res.stdout, "--help does not print usage")
print("bad config: all refused with their node path")
