#!/usr/bin/env bash
# Sets up dependencies (ci/setup.sh) and configures and builds TL into build/.
# SPDX-License-Identifier: Apache-2.0
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
"$root/ci/setup.sh"
build="${TL_BUILD_DIR:-$root/build}"
jobs="${TL_JOBS:-$(nproc)}"
if [ ! -f "$build/build.ninja" ]; then
  cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo
fi
ninja -C "$build" -j "$jobs"
