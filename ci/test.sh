#!/usr/bin/env bash
# Every test: set up, build, run ctest (unit tests, lit/FileCheck suites, kernel checks, SystemC
# smoke test), then the parser fuzzer for a bounded time (TL_FUZZ_SECONDS, default 60), then the
# ASan+UBSan subset (ci/sanitize.sh asan --subset: format, HAL, plugins, soak; TL_CI_SANITIZE=0 skips).
# SPDX-License-Identifier: Apache-2.0
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
"$root/ci/build.sh"
build="${TL_BUILD_DIR:-$root/build}"
ctest --test-dir "$build" --output-on-failure -j "${TL_JOBS:-$(nproc)}"
"$root/ci/fuzz.sh" "${TL_FUZZ_SECONDS:-60}"
if [ "${TL_CI_SANITIZE:-1}" != 0 ]; then
  "$root/ci/sanitize.sh" asan --subset
fi
