#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# README command 1: installs what is missing, builds, and runs the srv6gw daemon on two
# net_pcap vdevs with the bundled traffic:
#   host port   (net_pcap0) receives config/examples/demo-host.pcap   (RoCEv2 from 4 hosts x 8 QPs,
#                           plus ARP/ND/TCP/UDP) and writes out/demo-to-host.pcap
#   fabric port (net_pcap1) receives config/examples/demo-fabric.pcap (the return traffic,
#                           SRv6-encapsulated toward our local SIDs) and writes
#                           out/demo-to-fabric.pcap
# The gateway stops once both ports have been idle for 300 ms, prints its final statistics
# (ports, worker, paths, drops by reason), and tshark decodes a few output packets.
# Runs without hugepages (--no-huge) and needs no NIC (--no-pci).
set -euo pipefail
cd "$(dirname "$0")/.."
repo="$(pwd)"

bash tools/setup.sh
# SRV6GW_BUILD_DIR: use (and update) another configured build directory instead of ./build.
if [ -n "${SRV6GW_BUILD_DIR:-}" ]; then
  build_dir="$(cd "$SRV6GW_BUILD_DIR" && pwd)"
  ninja -C "$build_dir" -j2 apps/srv6gw/srv6gw >/dev/null
else
  build_dir="$repo/build"
  bash tools/build.sh >/dev/null
fi
echo "demo: build ok"

gw="$build_dir/apps/srv6gw/srv6gw"
mkdir -p out
to_fabric="$repo/out/demo-to-fabric.pcap"
to_host="$repo/out/demo-to-host.pcap"
rm -f "$to_fabric" "$to_host"
prefix="srv6gw-demo-$$"
runtime_dir() {
  if [ "$(id -u)" -eq 0 ]; then echo "/var/run/dpdk/$1"; else echo "${XDG_RUNTIME_DIR:-/tmp}/dpdk/$1"; fi
}
trap 'rm -rf "$(runtime_dir "$prefix")"' EXIT

cmd=("$gw" -l 0-1 --no-pci --no-huge -m 512 --file-prefix "$prefix" --log-level lib.eal:warning
  --vdev "net_pcap0,rx_pcap=$repo/config/examples/demo-host.pcap,tx_pcap=$to_host"
  --vdev "net_pcap1,rx_pcap=$repo/config/examples/demo-fabric.pcap,tx_pcap=$to_fabric"
  -- --config "$repo/config/examples/demo.json" --until-idle 300 --stats-json "$repo/out/demo-stats.json"
  --agent-listen "unix:$repo/out/srv6gw-demo.sock" --agent-state none)
echo
echo "demo: ${cmd[*]}"
echo
"${cmd[@]}"

tshark_q() { tshark "$@" 2>/dev/null; }
echo
echo "demo: host -> fabric, first 8 frames of out/demo-to-fabric.pcap"
echo "      (outer DA, SRH segments left / last entry / tag, SRH segment list, inner destination, BTH opcode/destqp/psn)"
tshark_q -r "$to_fabric" -c 8 -T fields -E separator=' | ' \
  -e ipv6.dst -e ipv6.routing.segleft -e ipv6.routing.srh.last_entry -e ipv6.routing.srh.tag \
  -e ipv6.routing.srh.addr -e ip.dst -e infiniband.bth.opcode -e infiniband.bth.destqp \
  -e infiniband.bth.psn
echo
echo "demo: the first encapsulated frame with an SRH, as tshark dissects it"
first_srh=$(tshark_q -r "$to_fabric" -Y ipv6.routing.type==4 -T fields -e frame.number | head -1)
tshark_q -r "$to_fabric" -Y "frame.number==$first_srh" -O ipv6,infiniband |
  grep -v -e '^Frame ' -e '^    \[' | sed -n '1,60p'
echo
echo "demo: fabric -> host, out/demo-to-host.pcap (decapsulated: End.DX4 / End.DX6 / End.DT46)"
tshark_q -r "$to_host" -T fields -E separator=' | ' -e frame.number -e eth.dst -e ip.src -e ipv6.src \
  -e ip.dst -e ipv6.dst -e ip.dsfield.ecn -e infiniband.bth.opcode -e infiniband.bth.destqp \
  -e infiniband.bth.psn -e frame.protocols
echo
echo "demo: $(tshark_q -r "$to_fabric" -T fields -e frame.number | wc -l) frames to the fabric," \
  "$(tshark_q -r "$to_host" -T fields -e frame.number | wc -l) frames to the host;" \
  "final statistics as JSON in out/demo-stats.json"
