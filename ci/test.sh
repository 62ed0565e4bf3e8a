#!/usr/bin/env bash
# Every test: set up, build, run ctest (unit tests, lit/FileCheck suites, kernel checks, SystemC
# smoke test), then the parser fuzzer for a bounded time (TL_FUZZ_SECONDS, default 60).
# SPDX-License-Identifier: Apache-2.0
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
"$root/ci/build.sh"
build="${TL_BUILD_DIR:-$root/build}"
ctest --test-dir "$build" --output-on-failure -j "${TL_JOBS:-$(nproc)}"
"$root/ci/fuzz.sh" "${TL_FUZZ_SECONDS:-60}"
