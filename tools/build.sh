#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Configures (once) and builds srv6gw into ./build. Idempotent.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ ! -f build/build.ninja ]; then
  meson setup build >/dev/null
fi
ninja -C build
