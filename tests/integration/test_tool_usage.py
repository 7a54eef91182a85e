#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Every command-line tool answers a bad command line the same way: exit 2, the offending
option or word named on stderr; --help prints its usage on stdout and exits 0. (CLI11 has
exit codes of its own, 105 for a bad option, 109 for an extra argument: a tool that passes
them through breaks scripts that test for 2.) Needs no root, EAL or ports: every case is
refused, or answered, before anything starts.

usage: test_tool_usage.py NAME=PATH...   (srv6gw, srv6gw-ctl, srv6gw-pcap, srv6gw-plan,
                                          srv6gw-controller, roce-gen; others are ignored)"""
import subprocess
import sys

# name -> (bad command lines with the word the error must name, --help command line, a word
# its usage text holds)
CASES = {
    "srv6gw": ([(["--", "--bogus"], "--bogus"),
                (["--", "--config"], "--config"),
                (["--", "--config", "x.json", "--stats-interval", "soon"], "--stats-interval")],
               ["--", "--help"], "--config"),
    "srv6gw-ctl": ([(["--bogus"], "--bogus"),
                    (["no-such-command"], "no-such-command"),
                    (["state", "--bogus"], "--bogus"),
                    (["apply"], "-f")],
                   ["--help"], "apply"),
    "srv6gw-pcap": ([(["--bogus"], "--bogus"),
                     (["no-such-command"], "no-such-command"),
                     (["parse", "--bogus"], "--bogus"),
                     (["parse", "--in", "x.pcap", "--bogus"], "--bogus")],
                    ["--help"], "parse"),
    "srv6gw-plan": ([(["--bogus"], "--bogus"),
                     (["topo.json", "--max-paths", "0"], "--max-paths"),
                     (["generate", "--bogus-gen"], "--bogus-gen")],
                    ["--help"], "--flows"),
    "srv6gw-controller": ([(["--bogus"], "--bogus"),
                           (["run", "--bogus"], "--bogus"),
                           (["run", "--topology"], "--topology"),
                           (["ctl", "no-such-verb"], "no-such-verb")],
                          ["--help"], "wait-synced"),
    "roce-gen": ([(["--bogus"], "--bogus"),
                  (["--count", "many"], "--count")],
                 ["--help"], "--count"),
}


def run(path, args):
    return subprocess.run([path, *args], capture_output=True, text=True, timeout=60,
                          stdin=subprocess.DEVNULL)


def main():
    tools = dict(a.split("=", 1) for a in sys.argv[1:])
    missing = sorted(set(CASES) - set(tools))
    if missing:
        # The build leaves out a tool whose dependencies are absent (meson options).
        print(f"not built here, not checked: {', '.join(missing)}", flush=True)
    failures = []
    for name, path in sorted(tools.items()):
        if name not in CASES:
            continue
        bad, help_args, help_word = CASES[name]
        for args, word in bad:
            r = run(path, args)
            shown = f"{name} {' '.join(args)}"
            if r.returncode != 2:
                failures.append(f"{shown}: exit {r.returncode}, expected 2 "
                                f"(stderr: {r.stderr.strip()[-300:]!r})")
            elif word not in r.stderr:
                failures.append(f"{shown}: stderr does not name {word}: {r.stderr.strip()[-300:]!r}")
            else:
                print(f"ok  {shown}: exit 2, names {word}", flush=True)
        r = run(path, help_args)
        shown = f"{name} {' '.join(help_args)}"
        if r.returncode != 0 or help_word not in r.stdout:
            failures.append(f"{shown}: exit {r.returncode}, usage with {help_word!r} "
                            f"{'printed' if help_word in r.stdout else 'not on stdout'}")
        else:
            print(f"ok  {shown}: exit 0, usage on stdout", flush=True)
    for f in failures:
        print("FAIL:", f, flush=True)
    print("ok" if not failures else f"{len(failures)} failures", flush=True)
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
