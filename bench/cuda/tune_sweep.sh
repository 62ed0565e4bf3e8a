#!/usr/bin/env bash
# The cuda rows below 0.8 of the triad (bench/README.md), each timed under a grid of its
# tl.ops tuning entries (bench/ops_bench.py --tune): the data for nvptx's TUNING choices.
# Run on the GPU machine through run_on_device.sh, as gpu_check.sh's steps are:
#   bench/cuda/run_on_device.sh PACK -- bash bench/cuda/tune_sweep.sh
# Arguments replace the sweeps below, each "ROW PREFIX|--tune NAME=[...] ...".
# Each sweep's table goes to $OUT/sweep-N.txt; the tail of each is printed.
# SPDX-License-Identifier: Apache-2.0
set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
out=${OUT:-/tmp/tl-gpu-out}
mkdir -p "$out"
source "$root/bench/cuda/python_env.sh" # cffi from the pack's wheels where missing
sweeps=(
  "sum (columns)|--tune axis_inner=[64,128,256] --tune axis_elements=[4096,16384] --tune axis_split=[2,4,8]"
  "gemv|--tune gemv_block_k=[256,512,1024] --tune gemv_elements=[4096,8192,16384]"
  "cumsum|--tune scan_rows=[1,2,4,8,16]"
  "quantize|--tune quantize_row_elements=[1024,2048,4096,8192,16384]"
  "embedding|--tune embedding_block=[(4096,256),(2048,1024),(4096,1024),(8192,512),(16384,256)]"
  "transpose|--tune transpose_block=[(64,64),(32,32),(32,128),(64,128),(128,64)]"
)
[ $# -gt 0 ] && sweeps=("$@")
rc=0
for i in "${!sweeps[@]}"; do
  only=${sweeps[$i]%%|*}
  read -r -a tune <<<"${sweeps[$i]#*|}"
  (cd "$root" && PYTHONPATH="$root/python${PYTHONPATH:+:$PYTHONPATH}" timeout 300 \
    python3 bench/ops_bench.py --device cuda --scale 8 --reps 5 --gemm "" --conv "" \
      --head-dims "" --only "$only" "${tune[@]}" --out "$out/sweep-$i.txt" \
      >"$out/sweep-$i.log" 2>&1) || { echo "sweep $i ($only) failed"; tail -5 "$out/sweep-$i.log"; rc=1; }
  grep "_vs_anchor" "$out/sweep-$i.txt" 2>/dev/null
done
exit $rc
