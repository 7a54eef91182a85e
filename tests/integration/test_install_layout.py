#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
# issue 19, the CI part of acceptance 3 (the package itself: tools/package-check.sh, a
# separate stage): `meson install` into a scratch DESTDIR puts the daemon, the tools, the
# systemd unit with its settings and hugepage helper, the configuration, the YANG modules and
# the man pages at their FHS places, and the man page documents every option of --help.
import json
import os
import subprocess
import sys

import gwlib

build = sys.argv[1]
dest = gwlib.workdir("install")
res = subprocess.run(["meson", "install", "-C", build, "--no-rebuild", "--destdir", dest,
                      "--quiet"], capture_output=True, text=True, timeout=120)
gwlib.check(res.returncode == 0, f"meson install: {res.stdout}{res.stderr}")
introspect = subprocess.run(["meson", "introspect", build, "--buildoptions"],
                            capture_output=True, text=True, timeout=60).stdout
opts = {o["name"]: o["value"] for o in json.loads(introspect)}
p = dest + opts["prefix"]
etc = dest + ("/etc" if opts["prefix"] == "/usr" else os.path.join(opts["prefix"], opts["sysconfdir"]))
expected = [
    f"{p}/{opts['bindir']}/srv6gw", f"{p}/{opts['bindir']}/srv6gw-ctl",
    f"{p}/{opts['bindir']}/srv6gw-pcap",
    f"{p}/{opts['libexecdir']}/srv6gw/srv6gw-hugepages",
    f"{etc}/srv6gw/srv6gw.json", f"{etc}/srv6gw/srv6gw.env",
    f"{p}/{opts['datadir']}/srv6gw/yang/srv6gw.yang",
    f"{p}/{opts['datadir']}/doc/srv6gw/examples/demo.json",
    f"{p}/{opts['mandir']}/man8/srv6gw.8", f"{p}/{opts['mandir']}/man1/srv6gw-pcap.1",
]
units = [os.path.join(d, f) for d, _, fs in os.walk(dest) for f in fs if f == "srv6gw.service"]
gwlib.check(len(units) == 1 and "/lib/systemd/system/" in units[0], f"unit: {units}")
for f in expected:
    gwlib.check(os.path.isfile(f), f"not installed: {f[len(dest):]}")
gwlib.check(os.access(expected[3], os.X_OK), "srv6gw-hugepages is not executable")

# The man page is generated from --help: every option there is in the page.
helptext = subprocess.run([gwlib.BIN, "--help"], capture_output=True, text=True, timeout=30).stdout
with open(f"{p}/{opts['mandir']}/man8/srv6gw.8") as f:
    page = f.read().replace("\\-", "-")
options = {o for o in helptext.split() if o.startswith("--")}
gwlib.check("--metrics-address" in options, "--metrics-address not in --help")
missing = sorted(o for o in options if o.rstrip(",") not in page)
gwlib.check(not missing, f"options of --help missing from srv6gw.8: {missing}")
print(f"install-layout: {len(expected) + 1} files at their places, srv6gw.8 has all "
      f"{len(options)} options of --help")
