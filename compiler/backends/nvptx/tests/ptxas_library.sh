#!/usr/bin/env bash
# Every library kernel (kernels/tlir) and every conformance corpus kernel compiles for nvptx and
# its PTX assembles with ptxas for sm_80 and sm_90a; the tnpu-tuned GEMMs (tiles too large for one
# GPU block: registers per thread, shared memory) must fail with the located error that says so.
# SPDX-License-Identifier: Apache-2.0
# Usage: ptxas_library.sh <tlc> <source root>
set -euo pipefail
tlc=$1 root=$2
cuda=${TL_CUDA_PATH:-/usr/local/cuda}
ptxas=$cuda/bin/ptxas
if [ ! -x "$ptxas" ]; then
  echo "SKIP: no ptxas at $ptxas (install the CUDA toolkit or set TL_CUDA_PATH)"
  exit 77
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
count=0
for f in "$root"/kernels/tlir/*.tlir "$root"/conformance/corpus/*.tlir; do
  name=$(basename "$f" .tlir)
  for arch in sm_80 sm_90a; do
    if [[ $name == gemm_tnpu || $name == gemm_f32_tnpu ]]; then
      if "$tlc" compile --target nvptx --target-option arch=$arch "$f" -o "$work/x.tlx" 2>"$work/err"; then
        echo "FAIL: $name compiled for nvptx; expected the shared-memory error"; exit 1
      fi
      grep -qE "bytes of shared memory to change layout|operands need [0-9]+ bytes of shared memory|elements on each of" "$work/err" || { cat "$work/err"; exit 1; }
      continue
    fi
    "$tlc" compile --target nvptx --target-option arch=$arch "$f" -o "$work/x.tlx" \
      --emit-ptx "$work/$name.$arch.ptx"
    "$ptxas" -arch=$arch "$work/$name.$arch.ptx" -o "$work/$name.$arch.cubin"
    count=$((count + 1))
  done
done
echo "ptxas: $count kernel files assembled for sm_80 and sm_90a"
