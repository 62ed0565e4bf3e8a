#!/usr/bin/env bash
# Builds the .tlir fuzzers with clang-19 (libFuzzer + ASan + UBSan) and runs each for a bounded
# time on the seed corpus (the library kernels and the compiler's .tlir tests): the parser (and
# interpreter) target, then the whole compiler (passes, llvm-cpu and tnpu code generation).
# SPDX-License-Identifier: Apache-2.0
# Usage: ci/fuzz.sh [seconds]   (default 60; TL_FUZZ_SECONDS also works)
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
seconds=${1:-${TL_FUZZ_SECONDS:-60}}
build="$root/build-fuzz"
cmake -S "$root" -B "$build" -G Ninja -DTL_FUZZ=ON -DBUILD_TESTING=OFF \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_C_COMPILER=clang-19 -DCMAKE_CXX_COMPILER=clang++-19 >/dev/null
ninja -C "$build" tlir_parse_fuzzer tlir_compile_fuzzer
corpus="$build/corpus"
mkdir -p "$corpus"
cp "$root"/kernels/tlir/*.tlir "$corpus"/
find "$root/compiler" -name '*.tlir' -exec cp {} "$corpus"/ \;
# -timeout catches hangs; -rss_limit_mb catches runaway allocation. Each target keeps its own
# working corpus (new inputs it finds), seeded from the tree.
for target in tlir_parse_fuzzer tlir_compile_fuzzer; do
  work="$build/corpus-$target"
  mkdir -p "$work"
  "$build/compiler/fuzz/$target" "$work" "$corpus" -max_total_time="$seconds" -timeout=20 \
    -rss_limit_mb=4096 -max_len=8192 -print_final_stats=1 \
    -artifact_prefix="$build/crash-$target-" 2>&1 | tail -n 40
  echo "fuzz: $target: no crash in ${seconds}s"
done
