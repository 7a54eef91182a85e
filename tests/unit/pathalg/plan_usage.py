#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""srv6gw-plan's command line errors: exit 2 (like srv6gw-ctl, srv6gw-pcap and roce-gen, not
CLI11's own codes) with the offending option named; --help exits 0."""
import subprocess
import sys

plan = sys.argv[1]
failures = []


def run(*args):
    return subprocess.run([plan, *args], capture_output=True, text=True, timeout=30)


for args, named in [
    (["--bogus"], "--bogus"),
    (["topo.json", "--encap", "nope"], "--encap"),
    (["topo.json", "--max-paths", "0"], "--max-paths"),
    (["generate", "--bogus-gen"], "--bogus-gen"),
]:
    res = run(*args)
    if res.returncode != 2:
        failures.append(f"{args}: exit {res.returncode}, expected 2 ({res.stderr.strip()})")
    elif named not in res.stderr:
        failures.append(f"{args}: the error does not name {named}: {res.stderr.strip()}")

res = run("--help")
if res.returncode != 0 or "--flows" not in res.stdout:
    failures.append(f"--help: exit {res.returncode}, usage not printed")
# A bad input (not a bad command line) keeps its own code.
res = run("/nonexistent/topology.json")
if res.returncode != 1:
    failures.append(f"missing topology file: exit {res.returncode}, expected 1")

for f in failures:
    print("FAIL:", f)
print("ok" if not failures else f"{len(failures)} failures")
sys.exit(1 if failures else 0)
