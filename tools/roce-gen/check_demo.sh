#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The bundled config/examples/demo-host.pcap is provably what make-demo-traffic.sh produces:
# regenerate it into a temporary directory and compare byte for byte.
# Usage: check_demo.sh ROCE_GEN_BINARY BUNDLED_PCAP
set -euo pipefail
roce_gen="$1"
bundled="$2"
here="$(cd "$(dirname "$0")" && pwd)"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
if [ ! -f "$bundled" ]; then
  echo "FAIL: bundled pcap $bundled is missing (run tools/roce-gen/make-demo-traffic.sh)"
  exit 1
fi
"$here/make-demo-traffic.sh" "$roce_gen" "$tmp/demo-host.pcap"
if cmp "$bundled" "$tmp/demo-host.pcap"; then
  echo "OK: $bundled is reproducible ($(stat -c %s "$bundled") bytes)"
else
  echo "FAIL: regenerated demo traffic differs from $bundled; rerun make-demo-traffic.sh" \
    "if the generator changed on purpose"
  exit 1
fi
