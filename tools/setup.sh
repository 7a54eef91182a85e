#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Installs every Debian package srv6gw and its tests need, idempotently and without
# questions, and reserves hugepages where the machine allows it (root only).
set -euo pipefail

packages=(
  dpdk dpdk-dev libdpdk-dev
  meson ninja-build pkg-config g++ clang-14 libclang-rt-14-dev clang-format
  libgrpc++-dev protobuf-compiler-grpc protobuf-compiler libprotobuf-dev
  help2man libyang2-dev libyang2-tools libspdlog-dev libgtest-dev libgmock-dev libibverbs-dev
  tshark tcpdump tcpreplay python3-scapy python3-grpcio iproute2 procps openssl
  gnuplot-nox libbpf-dev liblua5.3-dev
  prometheus prometheus-cpp-dev libsystemd-dev systemd
  debhelper dpkg-dev lintian man-db
  libpcap-dev zlib1g-dev libcli11-dev libabsl-dev nlohmann-json3-dev
  etcd-server etcd-client golang-etcd-server-dev golang-github-gogo-protobuf-dev
  golang-github-grpc-ecosystem-grpc-gateway-dev
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

sudo_cmd=()
if [ "$(id -u)" -ne 0 ]; then sudo_cmd=(sudo); fi

if [ "${#missing[@]}" -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  # tshark asks whether non-root users may capture; answer it up front.
  echo "wireshark-common wireshark-common/install-setuid boolean false" | "${sudo_cmd[@]}" debconf-set-selections
  "${sudo_cmd[@]}" apt-get update -qq
  "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
else
  echo "setup: all ${#packages[@]} packages present"
fi

# Hugepages help benchmarks and let secondary DPDK tools (telemetry, dumpcap) attach. Tests
# do not need them (they use --no-huge --in-memory), so failure here is only reported.
if [ "$(id -u)" -eq 0 ]; then
  if ! mountpoint -q /dev/hugepages 2>/dev/null; then
    mkdir -p /dev/hugepages
    mount -t hugetlbfs nodev /dev/hugepages 2>/dev/null || echo "setup: cannot mount hugetlbfs (continuing without hugepages)"
  fi
  cur=$(cat /proc/sys/vm/nr_hugepages 2>/dev/null || echo 0)
  if [ "$cur" -lt 512 ]; then
    echo 512 >/proc/sys/vm/nr_hugepages 2>/dev/null || true
  fi
  echo "setup: hugepages 2M reserved: $(cat /proc/sys/vm/nr_hugepages 2>/dev/null || echo 0)"
else
  echo "setup: not root, hugepages left as they are"
fi
