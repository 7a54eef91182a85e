#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# README command 2: installs what is missing, builds, runs every test suite and ends with
# one line "N passed, N failed, N skipped" over all of them. Stages:
#   1. build/        gcc, every suite (meson test; extra arguments go to this stage only);
#   2. build-fuzz/   clang-14 libFuzzer targets, each run for FUZZ_SECONDS (tools/fuzz.sh);
#                    one result per target ("fuzz:<target>"), a crash fails it;
#   3. build-asan/   gcc with ASan + UBSan, the suites in SANITIZE_SUITES (default:
#                    "unit integration": the unit tests and the daemon on vdevs and in
#                    namespaces) (tools/sanitize.sh), minus the tests in suite
#                    'no-sanitizer' (each says why beside it in its meson.build: e.g.
#                    dumpcap, a DPDK secondary process, cannot map an ASan primary's memory;
#                    install-layout needs every target built). Names are "asan:<test>".
# Every stage's results are summed into the last line; any failure makes the exit code 1.
#
# Environment: FUZZ_SECONDS (default 30) per fuzz target; CI_FUZZ=0 / CI_SANITIZE=0 skip
# stage 2 / 3 (for a quick local run; CI runs all three).
set -uo pipefail
cd "$(dirname "$0")/.."
fuzz_seconds="${FUZZ_SECONDS:-30}"
t0=$(date +%s)
bash tools/setup.sh
bash tools/build.sh || { echo "build failed"; echo "0 passed, 1 failed, 0 skipped"; exit 1; }
echo "== stage 1: normal build, every suite ($(($(date +%s) - t0)) s so far)"
meson test -C build --print-errorlogs --num-processes 2 "$@"
rc=$?

results=(build/meson-logs/testlog.json)
rm -f build-fuzz/fuzz-results.jsonl build-asan/meson-logs/testlog.json
if [ "${CI_FUZZ:-1}" != 0 ]; then
  echo "== stage 2: libFuzzer targets, ${fuzz_seconds} s each ($(($(date +%s) - t0)) s so far)"
  bash tools/fuzz.sh --seconds "$fuzz_seconds" --results build-fuzz/fuzz-results.jsonl || rc=1
  results+=(build-fuzz/fuzz-results.jsonl)
fi
if [ "${CI_SANITIZE:-1}" != 0 ]; then
  sanitize_args=()
  for suite in ${SANITIZE_SUITES:-unit integration}; do sanitize_args+=(--suite "$suite"); done
  echo "== stage 3: ASan + UBSan build, suites: ${SANITIZE_SUITES:-unit integration} ($(($(date +%s) - t0)) s so far)"
  bash tools/sanitize.sh "${sanitize_args[@]}" --no-suite no-sanitizer || rc=1
  results+=(build-asan/meson-logs/testlog.json)
fi
echo "== all stages done in $(($(date +%s) - t0)) s"

/usr/bin/python3 - "${results[@]}" <<'PY' || rc=1
import json, os, sys
counts = {"passed": 0, "failed": 0, "skipped": 0}
prefix = {"build": "", "build-fuzz": "fuzz:", "build-asan": "asan:"}
for path in sys.argv[1:]:
    stage = prefix.get(path.split("/")[0], path + ":")
    if not os.path.exists(path):
        # A stage that produced no results (its build failed) counts as one failure.
        counts["failed"] += 1
        print(f"failed: {stage or 'build:'}no results ({path} missing)")
        continue
    with open(path) as f:
        for line in f:
            r = json.loads(line)
            s = r.get("result")
            name = stage + r["name"]
            if s in ("OK", "EXPECTEDFAIL"):
                counts["passed"] += 1
            elif s == "SKIP":
                counts["skipped"] += 1
                print(f"skipped: {name}")
            else:
                counts["failed"] += 1
                print(f"failed: {name} ({s})")
sys.stdout.flush()
print(f"{counts['passed']} passed, {counts['failed']} failed, {counts['skipped']} skipped")
sys.exit(1 if counts["failed"] else 0)
PY
exit $rc
