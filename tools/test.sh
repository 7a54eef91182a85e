#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# README command 2: installs what is missing, builds, runs every test suite and ends with
# one line "N passed, N failed, N skipped" over all of them.
set -uo pipefail
cd "$(dirname "$0")/.."
bash tools/setup.sh
bash tools/build.sh || { echo "build failed"; echo "0 passed, 1 failed"; exit 1; }
meson test -C build --print-errorlogs --num-processes 2 "$@"
rc=$?
/usr/bin/python3 - build/meson-logs/testlog.json <<'PY'
import json, sys
counts = {"passed": 0, "failed": 0, "skipped": 0}
with open(sys.argv[1]) as f:
    for line in f:
        r = json.loads(line)
        s = r.get("result")
        if s in ("OK", "EXPECTEDFAIL"):
            counts["passed"] += 1
        elif s == "SKIP":
            counts["skipped"] += 1
            print(f"skipped: {r['name']}")
        else:
            counts["failed"] += 1
            print(f"failed: {r['name']} ({s})")
print(f"{counts['passed']} passed, {counts['failed']} failed, {counts['skipped']} skipped")
PY
exit $rc
