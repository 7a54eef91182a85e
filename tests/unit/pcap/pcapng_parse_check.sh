#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# srv6gw-pcap parse gives the same lines for a pcapng file (as dumpcap and tshark write) as
# for the same frames in classic pcap: editcap converts, both outputs are compared line by line.
# Usage: pcapng_parse_check.sh SRV6GW_PCAP EDITCAP SAMPLE.pcap
set -euo pipefail
tool=$1 editcap=$2 sample=$3
work=$(mktemp -d /tmp/srv6gw-pcapng-XXXXXX)
trap 'rm -rf "$work"' EXIT

"$editcap" -F pcapng "$sample" "$work/sample.pcapng"
# Nanosecond pcap too (editcap -F nsecpcap): the third timestamp form the reader takes.
"$editcap" -F nsecpcap "$sample" "$work/sample-ns.pcap"
head -c 4 "$work/sample.pcapng" | od -An -tx1 | grep -q "0a 0d 0d 0a" ||
  { echo "FAIL: editcap did not write pcapng"; exit 1; }

"$tool" parse --in "$sample" >"$work/pcap.txt"
"$tool" parse --in "$work/sample.pcapng" >"$work/pcapng.txt"
"$tool" parse --in "$work/sample-ns.pcap" >"$work/nsec.txt"
frames=$(grep -c ' ok \| not_' "$work/pcap.txt" || true)
[ "$frames" -gt 0 ] || { echo "FAIL: no frame lines for $sample"; cat "$work/pcap.txt"; exit 1; }
diff -u "$work/pcap.txt" "$work/pcapng.txt" || { echo "FAIL: pcapng parse differs"; exit 1; }
diff -u "$work/pcap.txt" "$work/nsec.txt" || { echo "FAIL: nanosecond pcap parse differs"; exit 1; }

# Encapsulating from pcapng writes the same pcap as from pcap.
"$tool" encap --in "$sample" --out "$work/a.pcap" --sids fc00:0:1::e,fc00:0:2::d4 \
  --source fc00:0:9::1 >/dev/null
"$tool" encap --in "$work/sample.pcapng" --out "$work/b.pcap" --sids fc00:0:1::e,fc00:0:2::d4 \
  --source fc00:0:9::1 >/dev/null
cmp "$work/a.pcap" "$work/b.pcap" || { echo "FAIL: encap output differs"; exit 1; }
echo "ok: $frames frames parse alike from pcap, pcapng and nanosecond pcap; encap output identical"
