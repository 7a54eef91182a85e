#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Builds srv6gw with gcc + AddressSanitizer + UndefinedBehaviorSanitizer into build-asan
# (-O1 -g1) and runs test suites there: by default unit and oracle (no root needed).
#
#   tools/sanitize.sh [--build DIR] [--suite S]... [--no-suite S]... [extra `meson test` args]
#
# Only what the selected tests need is built. CI (tools/test.sh) runs
# `--suite unit --suite integration --no-suite no-sanitizer`.
# Sanitizer settings (exported unless already set by the caller):
#   ASAN_OPTIONS   detect_leaks=1: LeakSanitizer on, and no leak suppression is needed: the
#                  EAL tests end with rte_eal_cleanup() (tests/unit/policy/eal_main.cpp) and
#                  DPDK's --no-huge memory is mmap()ed, which LSan does not track. A leak
#                  report therefore is ours and fails the test.
#   UBSAN_OPTIONS  halt_on_error=1: any undefined behaviour fails the test (gcc's UBSan
#                  otherwise prints and goes on). No suppression: DPDK's inline rte_hash_crc()
#                  loads the key 8 bytes at a time through a uint64_t pointer, which is
#                  aligned since policy::ExactKey is alignas(8).
# The data-path libraries see no sanitizer-specific code: the build options do all.
set -euo pipefail
cd "$(dirname "$0")/.."

build=build-asan
suites=()
no_suites=()
while [ $# -gt 0 ]; do
  case "$1" in
    --build) build="$2"; shift 2 ;;
    --build=*) build="${1#*=}"; shift ;;
    --suite) suites+=("$2"); shift 2 ;;
    --no-suite) no_suites+=("$2"); shift 2 ;;
    -h|--help) sed -n '3,21p' "$0"; exit 0 ;;
    *) break ;;
  esac
done
[ ${#suites[@]} -gt 0 ] || suites=(unit oracle)

if [ ! -f "$build/build.ninja" ]; then
  # -O1 -g1, not debugoptimized (-O2 -g): the sanitizers' usual level, and line tables are
  # all a report needs. A heavy gRPC file compiles in 16 s instead of 45-55 s, which took
  # this stage's build from ~990 s to about a third on the 2-core CI machine.
  meson setup "$build" -Db_sanitize=address,undefined -Db_lundef=false \
    -Doptimization=1 -Ddebug=false -Db_ndebug=false -Dc_args=-g1 -Dcpp_args=-g1 >"$build.setup.log" 2>&1 \
    || { cat "$build.setup.log"; echo "sanitize.sh: meson setup failed" >&2; exit 2; }
  rm -f "$build.setup.log"
fi
# Only what the selected suites run (the gRPC agent and benchmarks need not be built),
# read from the build's introspection once meson has regenerated it for the current tree.
ninja -C "$build" build.ninja >/dev/null
mapfile -t needed < <(/usr/bin/python3 - "$build" "${suites[*]}" "${no_suites[*]:-}" <<'PY'
import json, os, subprocess, sys
build = sys.argv[1]
want = {"srv6gw:" + s for s in sys.argv[2].split()}
unwanted = {"srv6gw:" + s for s in sys.argv[3].split()}
def introspect(what):
    return json.loads(subprocess.check_output(["meson", "introspect", what, build]))
ids = {d for t in introspect("--tests")
       if want & set(t["suite"]) and not unwanted & set(t["suite"]) for d in t["depends"]}
for target in introspect("--targets"):
    if target["id"] in ids:
        for f in target["filename"]:
            print(os.path.relpath(f, build))
PY
)
[ ${#needed[@]} -gt 0 ] || { echo "sanitize.sh: no test found in suites ${suites[*]}" >&2; exit 2; }
ninja -C "$build" -j2 "${needed[@]}"

export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:halt_on_error=1:abort_on_error=1:print_summary=1}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-halt_on_error=1:abort_on_error=1:print_stacktrace=1:print_summary=1}"
echo "sanitize.sh: ASAN_OPTIONS=$ASAN_OPTIONS"
echo "sanitize.sh: UBSAN_OPTIONS=$UBSAN_OPTIONS"

set +e
suite_args=()
for s in "${suites[@]}"; do suite_args+=(--suite "$s"); done
for s in "${no_suites[@]}"; do suite_args+=(--no-suite "$s"); done
meson test -C "$build" --no-rebuild --print-errorlogs --num-processes 2 "${suite_args[@]}" "$@"
rc=$?
set -e
# Sanitizer reports inside tests that still passed (e.g. a child process whose exit status
# the test ignores) would be easy to miss: search the log for them.
log="$build/meson-logs/testlog.txt"
if grep -qE 'ERROR: (AddressSanitizer|LeakSanitizer)|runtime error:' "$log"; then
  echo "sanitize.sh: sanitizer reports in $log:"
  grep -nE 'ERROR: (AddressSanitizer|LeakSanitizer)|runtime error:' "$log" | head -20
  rc=1
fi
exit "$rc"
