#!/usr/bin/env bash
# Fails when a tracked C or C++ file differs from what clang-format (.clang-format: LLVM base,
# 100 columns) makes of it; prints the files. Fix with: git ls-files '*.c' '*.cpp' '*.h' '*.hpp'
# | xargs clang-format -i
# SPDX-License-Identifier: Apache-2.0
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
# The version ci/setup.sh installs (Debian's clang-format): another version formats differently.
clang_format=$(command -v clang-format || true)
if [ -z "$clang_format" ]; then
  echo "check_format: clang-format not found (ci/setup.sh installs Debian's clang-format)" >&2
  exit 1
fi
bad=()
while IFS= read -r f; do
  "$clang_format" --dry-run -Werror "$f" >/dev/null 2>&1 || bad+=("$f")
done < <(git ls-files '*.c' '*.cpp' '*.h' '*.hpp')
if [ "${#bad[@]}" -gt 0 ]; then
  printf 'check_format: not clang-formatted: %s\n' "${bad[@]}"
  exit 1
fi
echo "check_format: every C/C++ file is clang-formatted"
