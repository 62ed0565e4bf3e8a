#!/usr/bin/env bash
# The main job: set up, build, then run the library kernels (vector add, GEMM, softmax) on the
# reference interpreter over random ragged shapes and print them against the fp64 references.
# SPDX-License-Identifier: Apache-2.0
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
"$root/ci/build.sh"
build="${TL_BUILD_DIR:-$root/build}"
echo "== library kernels on the reference interpreter vs fp64 references"
"$build/kernels/tl-check-kernels" --seed "${TL_SEED:-1}" --trials 3
echo "== tlc run: GEMM 100x70x45 from random inputs (seed 7), fp32 and fp64 modes"
"$build/compiler/tools/tlc/tlc" run "$root/kernels/tlir/gemm.tlir" --grid 4,3 --seed 7 \
  a=100x45 b=45x70 c=zeros:100x70
"$build/compiler/tools/tlc/tlc" run "$root/kernels/tlir/gemm.tlir" --grid 4,3 --seed 7 --reference \
  a=100x45 b=45x70 c=zeros:100x70
