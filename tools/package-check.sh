#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Builds the Debian package from this tree (unless a .deb is given), installs it with dpkg,
# checks the installed gateway (srv6gw --version, man srv6gw, the unit with
# systemd-analyze verify, lintian) and removes it again, checking that nothing is left.
# Root only (dpkg -i). Usage: tools/package-check.sh [srv6gw_VERSION_ARCH.deb]
# The build copies the tree to build-deb/srv6gw (ignored by git): the .deb lands in build-deb/,
# not in the tree's parent, and under the same base folder as the tree's own build the
# compiles hit its ccache.
set -euo pipefail
cd "$(dirname "$0")/.."
[ "$(id -u)" -eq 0 ] || { echo "package-check: needs root (dpkg -i)"; exit 77; }
if dpkg-query -W -f='${Status}' srv6gw 2>/dev/null | grep -q "install ok installed"; then
  echo "package-check: srv6gw is already installed; remove it first"; exit 1
fi

deb="${1:-}"
if [ -z "$deb" ]; then
  work="$PWD/build-deb"
  rm -rf "$work"
  mkdir -p "$work/srv6gw"
  git ls-files -co --exclude-standard | grep -v '^build/' | tar -cf - -T - | tar -xf - -C "$work/srv6gw"
  start=$(date +%s)
  (cd "$work/srv6gw" && dpkg-buildpackage -b -us -uc) >"$work/build.log" 2>&1 ||
    { tail -40 "$work/build.log"; echo "package-check: dpkg-buildpackage failed ($work/build.log)"; exit 1; }
  echo "package-check: dpkg-buildpackage -b -us -uc took $(( $(date +%s) - start )) s"
  deb=$(ls "$work"/srv6gw_*.deb)
fi

echo "package-check: lintian $deb"
lintian --fail-on error,warning "$deb"

dpkg -i "$deb"
files=$(dpkg -L srv6gw | while read -r f; do [ -f "$f" ] && echo "$f"; done)
ver=$(/usr/bin/srv6gw --version)
echo "package-check: $ver"
[ "$ver" = "srv6gw $(dpkg-query -W -f='${Version}' srv6gw)" ] || { echo "version mismatch"; exit 1; }
man -P cat srv6gw 2>/dev/null | grep -q -- "--metrics-address" || { echo "man srv6gw: no page"; exit 1; }
for page in srv6gw-ctl srv6gw-pcap srv6gw-controller; do
  man -w "$page" >/dev/null || { echo "man $page: no page"; exit 1; }
done
out=$(systemd-analyze verify /lib/systemd/system/srv6gw.service 2>&1) ||
  { echo "$out"; exit 1; }
[ -z "$out" ] || { echo "systemd-analyze verify: $out"; exit 1; }
# The installed gateway runs from the installed paths (YANG module from /usr/share/srv6gw):
# the packaged demo configuration on two null ports for half a second.
/usr/bin/srv6gw -l 0-1 --no-pci --no-huge -m 256 --file-prefix "srv6gw-pkgcheck-$$" \
  --vdev net_null0 --vdev net_null1 --log-level lib.eal:warning -- \
  --config /usr/share/doc/srv6gw/examples/demo.json --host-port net_null0 \
  --fabric-port net_null1 --duration 0.5 --stats-interval 0 --no-agent >/dev/null ||
  { echo "package-check: the installed srv6gw did not run"; exit 1; }
rm -rf "/var/run/dpdk/srv6gw-pkgcheck-$$"
systemctl is-enabled srv6gw 2>/dev/null | grep -q enabled && { echo "unit enabled on install"; exit 1; }

dpkg --purge srv6gw
left=""
for f in $files; do [ -e "$f" ] && left="$left $f"; done
[ -z "$left" ] || { echo "package-check: left after purge:$left"; exit 1; }
[ ! -e /etc/srv6gw ] || { echo "package-check: /etc/srv6gw left after purge"; exit 1; }
echo "package-check: installed, checked and removed cleanly"
