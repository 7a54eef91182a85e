#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The controller's fan-out on etcd at 1,024 and 4,096 emulated gateways (docs/design/controller.md):
# starts one etcd member on loopback and srv6gw-gateway-standin in a temporary folder, runs
# build/tests/controller/bench-controller-ha for each size, stops both.
#   bash tools/gateway-standin/bench-ha.sh [BUILD_DIR] [SIZES...]
set -euo pipefail
build=${1:-build}
shift || true
sizes=("$@")
[ ${#sizes[@]} -gt 0 ] || sizes=(1024 4096)
command -v etcd >/dev/null || { echo "bench-ha: etcd is not installed (etcd-server)"; exit 1; }
work=$(mktemp -d /tmp/srv6gw-bench-ha-XXXXXX)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
port() { /usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
cport=$(port)
pport=$(port)
etcd --name n1 --data-dir "$work/etcd" --log-level warn \
  --listen-client-urls "http://127.0.0.1:$cport" --advertise-client-urls "http://127.0.0.1:$cport" \
  --listen-peer-urls "http://127.0.0.1:$pport" --initial-advertise-peer-urls "http://127.0.0.1:$pport" \
  --initial-cluster "n1=http://127.0.0.1:$pport" >"$work/etcd.log" 2>&1 &
pids+=($!)
"$build/tools/gateway-standin/srv6gw-gateway-standin" --listen "unix:$work/gw.sock" \
  --apply-delay-ms 2000 --slow g7 >"$work/standin.log" 2>&1 &
pids+=($!)
sleep 2
for n in "${sizes[@]}"; do
  "$build/tests/controller/bench-controller-ha" --etcd "127.0.0.1:$cport" \
    --standin "unix:$work/gw.sock" --gateways "$n" --policies 16 --concurrency 32 --slow g7
done
