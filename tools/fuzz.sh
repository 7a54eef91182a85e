#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Builds the libFuzzer targets of tests/fuzz with clang-14 + ASan + UBSan into build-fuzz and
# runs each one for a while, one at a time (the machine is shared), starting from its committed
# seed corpus (new inputs go to a scratch directory in the build tree). Prints per target the executions run and "ok" or "crash"; exits
# non-zero on any crash, leak, timeout or out-of-memory, with the input saved under
# tests/fuzz/crashes/<target>/ (replay it with build*/tests/fuzz/<target>-replay FILE, and
# once fixed move it to tests/fuzz/regressions/<target>/ so every build replays it).
#
#   tools/fuzz.sh [--seconds N] [--build DIR] [--results FILE] [TARGET...]
#
# --results FILE: one JSON line per target ({"name", "result": "OK"/"FAIL", "executions",
# "seconds"}), the format of meson's testlog.json, so that tools/test.sh can sum it in.
# Needs clang-14 and libclang-rt-14-dev (tools/setup.sh installs them).
set -euo pipefail
cd "$(dirname "$0")/.."

seconds=60
build=build-fuzz
results=""
all_targets=(fuzz_parse fuzz_decap fuzz_template fuzz_encap_roundtrip fuzz_config fuzz_apply_request)
targets=()
while [ $# -gt 0 ]; do
  case "$1" in
    --seconds) seconds="$2"; shift 2 ;;
    --seconds=*) seconds="${1#*=}"; shift ;;
    --build) build="$2"; shift 2 ;;
    --build=*) build="${1#*=}"; shift ;;
    --results) results="$2"; shift 2 ;;
    --results=*) results="${1#*=}"; shift ;;
    -h|--help) sed -n '3,15p' "$0"; exit 0 ;;
    fuzz_*) targets+=("$1"); shift ;;
    *) echo "fuzz.sh: unknown argument '$1' (targets: ${all_targets[*]})" >&2; exit 2 ;;
  esac
done
[ ${#targets[@]} -gt 0 ] || targets=("${all_targets[@]}")
case "$seconds" in ''|*[!0-9]*) echo "fuzz.sh: --seconds wants a whole number" >&2; exit 2 ;; esac

for tool in clang-14 clang++-14; do
  command -v "$tool" >/dev/null || { echo "fuzz.sh: $tool missing (bash tools/setup.sh)" >&2; exit 2; }
done

# -fsanitize=fuzzer-no-link gives the libraries the coverage instrumentation libFuzzer steers
# by (the targets themselves link with -fsanitize=fuzzer); UBSan findings abort instead of
# printing and going on, so that libFuzzer saves the input.
if [ ! -f "$build/build.ninja" ]; then
  CC=clang-14 CXX=clang++-14 meson setup "$build" \
    -Dfuzz=true -Db_sanitize=address,undefined -Db_lundef=false -Dbuildtype=debugoptimized \
    -Dcpp_args="-fsanitize=fuzzer-no-link -fno-sanitize-recover=undefined" \
    -Dc_args="-fsanitize=fuzzer-no-link -fno-sanitize-recover=undefined" >"$build.setup.log" 2>&1 \
    || { cat "$build.setup.log"; echo "fuzz.sh: meson setup failed" >&2; exit 2; }
  rm -f "$build.setup.log"
fi
ninja_targets=()
for t in "${targets[@]}"; do ninja_targets+=("tests/fuzz/$t"); done
if ! ninja -C "$build" -j2 "${ninja_targets[@]}"; then
  echo "fuzz.sh: build failed (is 'fuzz' in the suite list of tests/meson.build?)" >&2
  exit 2
fi
if [ -n "$results" ]; then
  mkdir -p "$(dirname "$results")"
  : >"$results"
fi

export ASAN_OPTIONS="detect_leaks=1:allocator_may_return_null=1:${ASAN_OPTIONS:-}"
export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1:${UBSAN_OPTIONS:-}"
export SRV6GW_YANG_DIR="$PWD/config/yang"
failed=0
summary=()
for t in "${targets[@]}"; do
  work="$build/fuzz-work/$t"
  rm -rf "$work"
  mkdir -p "$work/corpus" "$work/artifacts"
  # New inputs go to the scratch corpus (first directory); the committed seeds stay as they are.
  extra=()
  [ -f "tests/fuzz/$t.dict" ] && extra+=("-dict=tests/fuzz/$t.dict")
  log="$work/fuzz.log"
  echo "== $t: ${seconds}s"
  set +e
  "$build/tests/fuzz/$t" "$work/corpus" "tests/fuzz/corpus/$t" \
    -max_total_time="$seconds" -max_len=9100 -timeout=25 -rss_limit_mb=2048 \
    -print_final_stats=1 -artifact_prefix="$work/artifacts/" "${extra[@]}" >"$log" 2>&1
  rc=$?
  set -e
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1 || true)
  cov=$( (grep -Eo 'cov: [0-9]+' "$log" || true) | tail -1 | cut -d' ' -f2)
  # libFuzzer also saves inputs slower than -report_slow_units (10 s) as slow-unit-*: on a
  # loaded shared machine that is the scheduler, not a bug (a real hang is a timeout-* after
  # -timeout=25 s and a non-zero exit). Reported, not failed.
  slow=$(find "$work/artifacts" -type f -name 'slow-unit-*' | wc -l)
  [ "$slow" -eq 0 ] || echo "   $slow slow input(s) (> 10 s, not a failure): $work/artifacts/"
  found=$(find "$work/artifacts" -type f ! -name 'slow-unit-*' | wc -l)
  if [ "$rc" -eq 0 ] && [ "$found" -eq 0 ]; then
    verdict=ok
  else
    verdict=crash
    failed=1
    mkdir -p "tests/fuzz/crashes/$t"
    for a in "$work"/artifacts/{crash,leak,timeout,oom}-*; do
      [ -e "$a" ] && cp "$a" "tests/fuzz/crashes/$t/" && echo "   saved tests/fuzz/crashes/$t/$(basename "$a")"
    done
    (grep -E 'ERROR: |runtime error|invariant violated|SUMMARY' "$log" || true) | head -5 | sed 's/^/   /'
    echo "   full log: $log"
  fi
  line="$t: $verdict, ${execs:-0} executions (limit ${seconds}s), coverage ${cov:-?} edges"
  echo "$line"
  if [ -n "$results" ]; then
    printf '{"name": "%s", "result": "%s", "executions": %s, "seconds": %s}\n' "$t" \
      "$([ "$verdict" = ok ] && echo OK || echo FAIL)" "${execs:-0}" "$seconds" >>"$results"
  fi
  summary+=("$line")
done
echo "== summary"
printf '%s\n' "${summary[@]}"
exit "$failed"
