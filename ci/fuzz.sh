#!/usr/bin/env bash
# Builds every libFuzzer target with clang-19 (libFuzzer + ASan + UBSan) into build-fuzz/ and runs
# each for a bounded time on its seed corpus from the tree: the .tlir parser and the whole
# compiler, the executable container and the tnpu blob, the .npy reader, the chip config, TNPU
# program files and assembler text, tl-conform's package and results-log readers, and the HAL C
# API on the cpu device (which needs the regular build's cpu plugin: ci/build.sh first).
# SPDX-License-Identifier: Apache-2.0
# Usage: ci/fuzz.sh [seconds] [target...]   (seconds: the compile target's; the others get half;
#        default 60, TL_FUZZ_SECONDS also works; no target: all of them)
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
seconds=${1:-${TL_FUZZ_SECONDS:-60}}
shift || true
build="$root/build-fuzz"
export TL_PLUGIN_PATH="${TL_BUILD_DIR:-$root/build}/lib/libtl_plugin_cpu.so"
cmake -S "$root" -B "$build" -G Ninja -DTL_FUZZ=ON -DBUILD_TESTING=OFF \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_C_COMPILER=clang-19 -DCMAKE_CXX_COMPILER=clang++-19 >/dev/null

# name, folder of its binary (under build-fuzz), seed files or folders (globs), seconds, the
# largest input (the certification package seed is 100 KB).
half=$(((seconds + 1) / 2))
targets=(
  "tlir_parse_fuzzer|compiler/fuzz|kernels/tlir compiler/**/*.tlir|$half|8192"
  "tlir_compile_fuzzer|compiler/fuzz|kernels/tlir compiler/**/*.tlir|$seconds|8192"
  "tlx_fuzzer|format/executable/fuzz|format/executable/fuzz/seeds|$half|8192"
  "tnpu_code_fuzzer|format/tnpu/fuzz|format/executable/fuzz/seeds|$half|8192"
  "npy_fuzzer|support/fuzz|support/fuzz/seeds|$half|8192"
  "chip_config_fuzzer|sim/config/fuzz|sim/configs sim/config/fuzz/seeds sim/config/fuzz/regressions|$half|8192"
  "tnpu_binary_fuzzer|sim/isa/fuzz|sim/isa/fuzz/seeds|$half|8192"
  "tnpu_asm_fuzzer|sim/isa/fuzz|sim/tests/programs|$half|8192"
  "conform_package_fuzzer|conformance/src/fuzz|conformance/src/fuzz/seeds|$half|262144"
  "conform_log_fuzzer|conformance/src/fuzz|conformance/src/fuzz/seeds conformance/src/fuzz/regressions|$half|65536"
  "hal_api_fuzzer|hal/fuzz|hal/fuzz/seeds|$half|8192"
)
wanted=("$@")
selected=()
for t in "${targets[@]}"; do
  name=${t%%|*}
  if [ ${#wanted[@]} -eq 0 ] || [[ " ${wanted[*]} " == *" $name "* ]]; then
    selected+=("$t")
  fi
done
[ ${#selected[@]} -gt 0 ] || { echo "fuzz: no such target: ${wanted[*]}" >&2; exit 1; }
ninja -C "$build" $(for t in "${selected[@]}"; do echo "${t%%|*}"; done)

shopt -s globstar nullglob
# -timeout catches hangs; -rss_limit_mb catches runaway allocation. Each target keeps its own
# working corpus (new inputs it finds) in build-fuzz/corpus-<target>, seeded from the tree.
for t in "${selected[@]}"; do
  IFS='|' read -r name dir seeds secs max_len <<<"$t"
  corpus="$build/seeds-$name"
  rm -rf "$corpus"
  mkdir -p "$corpus"
  for s in $seeds; do
    for f in "$root"/$s; do
      if [ -d "$f" ]; then cp "$f"/* "$corpus"/ 2>/dev/null || true; else cp "$f" "$corpus"/; fi
    done
  done
  work="$build/corpus-$name"
  mkdir -p "$work"
  # -timeout: a hang is over 60 s (the 64K-element library tiles take ~16 s through nvptx's O3
  # and ptxas for two architectures, several times that under ASan on a loaded machine).
  "$build/$dir/$name" "$work" "$corpus" -max_total_time="$secs" -timeout=60 \
    -rss_limit_mb=4096 -max_len="$max_len" -print_final_stats=1 \
    -artifact_prefix="$build/crash-$name-" 2>&1 | tail -n 14
  echo "fuzz: $name: no crash in ${secs}s"
done
