#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Checks the YANG module and the JSON examples with yanglint, libyang's own command line
# tool, independently of our loader:
#   - the module compiles;
#   - every config/examples/*.json is valid instance data;
#   - every invalid example whose sidecar says "layer: yang" is refused by yanglint, at the
#     path the sidecar names; "layer: semantic" ones are valid YANG (refused only by
#     validate()), so the sidecar's claim about which layer catches them stays true.
# Usage: yanglint_check.sh YANG_DIR EXAMPLES_DIR INVALID_DIR
set -u
yang_dir=$1 examples_dir=$2 invalid_dir=$3

if ! command -v yanglint >/dev/null 2>&1; then
  echo "SKIP: yanglint not installed (Debian package libyang2-tools)"
  exit 77
fi

module="$yang_dir/srv6gw.yang"
passed=0 failed=0
pass() { passed=$((passed + 1)); echo "ok   $1"; }
fail() { failed=$((failed + 1)); echo "FAIL $1"; }

# -D -D: only the modules given (and libyang's built-ins such as ietf-inet-types), nothing
# picked up from the working directory.
lint() { yanglint -D -D -p "$yang_dir" "$@" 2>&1; }

if out=$(lint "$module"); then pass "module $module"; else fail "module $module: $out"; fi

shopt -s nullglob
examples=("$examples_dir"/*.json)
if [ ${#examples[@]} -eq 0 ]; then fail "no examples in $examples_dir"; fi
for f in "${examples[@]}"; do
  # Data validation in yanglint 2.1: schema file(s) then data file(s); the data type
  # defaults to "data" (a complete datastore), so mandatory nodes are checked too.
  if out=$(lint "$module" "$f"); then pass "example $f"; else fail "example $f: $out"; fi
done

invalids=("$invalid_dir"/*.json)
if [ ${#invalids[@]} -eq 0 ]; then fail "no invalid examples in $invalid_dir"; fi
for f in "${invalids[@]}"; do
  expect="${f%.json}.expect"
  layer=$(sed -n 's/^layer: //p' "$expect")
  path=$(sed -n 's/^path: //p' "$expect")
  out=$(lint "$module" "$f")
  rc=$?
  case "$layer" in
    yang)
      if [ $rc -eq 0 ]; then
        fail "invalid $f: yanglint accepted it"
      elif ! grep -qF "Data location \"$path\"" <<<"$out"; then
        fail "invalid $f: yanglint refused it, but not at $path: $out"
      else
        pass "invalid $f refused at $path"
      fi
      ;;
    semantic)
      if [ $rc -eq 0 ]; then pass "semantic $f is valid YANG"; else fail "semantic $f: $out"; fi
      ;;
    *) fail "$expect: no layer line" ;;
  esac
done

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
