#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Fails when a tracked C++ file differs from what clang-format (the repo's .clang-format)
# would write, or lacks an SPDX line.
set -uo pipefail
cd "$(dirname "$0")/.."
command -v clang-format >/dev/null || { echo "skip: clang-format not installed"; exit 77; }
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  mapfile -t files < <(git ls-files '*.cpp' '*.hpp' '*.h' '*.cc')
else
  mapfile -t files < <(find lib apps tools tests -name '*.cpp' -o -name '*.hpp')
fi
status=0
if ! clang-format --dry-run -Werror "${files[@]}"; then status=1; fi
for f in "${files[@]}"; do
  head -3 "$f" | grep -q "SPDX-License-Identifier" || { echo "no SPDX line: $f"; status=1; }
done
echo "checked ${#files[@]} files"
exit $status
