#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Writes the bundled demo traffic config/examples/demo-host.pcap: what hosts send toward the
# fabric through the gateway. 4 local hosts (10.0.0.1-4, fd00::1-4) x 8 QPs talking to 4
# remote hosts (10.0.1.1-4, fd00:1::1-4), QPs alternating IPv4/IPv6, the default opcode mix
# (sends, writes, reads, ACKs, CNPs), 1024-byte data frames, and every 50th frame an ARP / ND
# / TCP SYN / UDP frame for pass-through. Fixed seed: rerunning gives the same bytes (a test
# checks it).
# Usage: make-demo-traffic.sh [ROCE_GEN_BINARY [OUTPUT]]
set -euo pipefail
repo="$(cd "$(dirname "$0")/../.." && pwd)"
roce_gen="${1:-$repo/build/tools/roce-gen/roce-gen}"
output="${2:-$repo/config/examples/demo-host.pcap}"
if [ ! -x "$roce_gen" ]; then
  echo "make-demo-traffic.sh: $roce_gen not found; build first (tools/build.sh)" >&2
  exit 1
fi
exec "$roce_gen" --output "$output" \
  --count 2000 --seed 2024 \
  --hosts 4 --qps 8 --family mixed \
  --src-base 10.0.0.1 --src-base fd00:0::1 \
  --dst-base 10.0.1.1 --dst-base fd00:1::1 \
  --src-mac 02:00:00:00:00:01 --dst-mac 02:00:00:00:01:01 \
  --opcodes default --size 1024 --dscp 26 \
  --non-roce-every 50
