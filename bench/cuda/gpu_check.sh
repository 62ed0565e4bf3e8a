#!/usr/bin/env bash
# On the GPU machine, inside run_on_device.sh's environment: the cuda device's tests, then
# tl-conform's suites on the cuda device and the Python tests on every device, each bounded in
# time, with their outputs under $OUT. Prints `name: value` lines and a last line naming failures.
# SPDX-License-Identifier: Apache-2.0
# usage: bench/cuda/run_on_device.sh ARCHIVE -- bench/cuda/gpu_check.sh [suite...]
#   suites: tests conform-compiler conform-precision conform-core conform-bandwidth python
#   zero-copy bench launch staging ncu compile ops torch attention opsbench
#   (default: tests conform-compiler conform-precision python)
set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
out=${OUT:-/tmp/tl-gpu-out}
mkdir -p "$out"
steps=("$@")
[ ${#steps[@]} -eq 0 ] && steps=(tests conform-compiler conform-precision python)
failed=()
source "$root/bench/cuda/python_env.sh" # cffi from the pack's wheels where missing
conform() { # suite name, extra args
  local name=$1
  shift
  timeout ${TL_CONFORM_TIMEOUT:-360} tl-conform run --device cuda --out "$out/$name" --jobs 8 \
    --data-dir "$root/conformance/data" --corpus-dir "$root/conformance/corpus" \
    --source-dir "$root" --cts "$(command -v tl_hal_cts)" "$@" >"$out/$name.log" 2>&1
  local rc=$?
  tail -n 25 "$out/$name.log"
  grep -h '"status": "fail"\|"status":"fail"' "$out/$name/results.jsonl" 2>/dev/null | head -40 \
    >"$out/$name.failures"
  echo "$name: rc $rc, $(wc -l <"$out/$name.failures") failures listed in $name.failures"
  [ $rc -eq 0 ] || failed+=("$name")
}
for s in "${steps[@]}"; do
  echo "=== $s"
  case $s in
  tests)
    for t in tl-info tl_plugin_cuda_tests tl_cuda_device_tests tl_nvptx_code_tests \
             tl_hal_import_tests "tl_hal_cts --gtest_brief=1"; do
      timeout 300 $t >"$out/$(echo $t | cut -d' ' -f1).log" 2>&1 || failed+=("$t")
      tail -n 5 "$out/$(echo $t | cut -d' ' -f1).log"
    done
    ;;
  conform-compiler) conform conform-compiler --suite compiler --profile core ;;
  conform-precision) conform conform-precision --suite precision --profile core ;;
  conform-core) conform conform-core --profile core ;;
  conform-bandwidth) conform conform-bandwidth --suite bandwidth --profile full ;;
  staging) # host copies for staging chunk sizes (MiB):copy threads
    for cfg in ${TL_STAGING_CONFIGS:-8:8 32:8 32:16 64:16}; do
      (export TL_CUDA_STAGING_MIB=${cfg%:*} TL_CUDA_COPY_THREADS=${cfg#*:}
       conform "staging-${cfg/:/-}" --suite bandwidth --profile full --filter 'bandwidth.h2d*' \
         --filter 'bandwidth.d2h*' >/dev/null
       echo "staging $cfg:"; grep -h "achieved" "$out/staging-${cfg/:/-}.log" | sort -u)
    done
    ;;
  ncu) # where the row kernels' time goes (hardware counters; clocks left alone)
    (cd "$root" && timeout 120 ncu --clock-control none --section SpeedOfLight \
      --section Occupancy --section WarpStateStats -k 'regex:softmax|layernorm' \
      python3 bench/cuda/ncu_rows.py >"$out/ncu.log" 2>&1)
    grep -E "^  [a-z]|Duration|Throughput|Occupancy|Registers Per|Block Size|Stall|Cycles Per" \
      "$out/ncu.log" | head -60
    ;;
  compile) # cold compile of the GEMM kernels to cubins: each the first compile of a fresh process
    (cd "$root" && timeout 300 python3 bench/cuda/cold_compile.py --runs 5 2>"$out/compile.log")
    ;;
  launch)
    timeout 120 tl_cuda_launch_bench >"$out/launch.log" 2>&1 || failed+=(launch)
    cat "$out/launch.log"
    ;;
  ops) # the op library's tests (python/tests/test_ops_*.py) on the cuda device; TL_OPS_K: a
    # further pytest -k expression
    (cd "$root" && timeout ${TL_OPS_TIMEOUT:-500} python3 -m pytest -q -p no:cacheprovider -rf \
      python/tests -k "test_ops_ and cuda${TL_OPS_K:+ and ($TL_OPS_K)}" >"$out/ops.log" 2>&1)
    rc=$?
    tail -n 40 "$out/ops.log"
    [ $rc -eq 0 ] || failed+=(ops)
    ;;
  attention) # tl.ops.attention at each block size: error against fp64 and time
    (cd "$root" && PYTHONPATH="$root/python${PYTHONPATH:+:$PYTHONPATH}" timeout 300 python3 bench/cuda/attention_blocks.py >"$out/attention.log" 2>&1)
    rc=$?
    cat "$out/attention.log"
    [ $rc -eq 0 ] || failed+=(attention)
    ;;
  torch) # tl.torch on torch CUDA tensors (python/tests/test_torch_*.py, the cases named
    # cuda): every op against its host function, autograd and the transformer block and
    # training run against PyTorch's, torch.compile. Needs torch with CUDA (2.11 there).
    (cd "$root" && timeout ${TL_TORCH_TIMEOUT:-400} python3 -m pytest -q -p no:cacheprovider -rs \
      python/tests/test_torch_ops.py python/tests/test_torch_autograd.py \
      python/tests/test_torch_model.py -k "cuda and not npusim and not emulated and not cuda_path" \
      >"$out/torch.log" 2>&1)
    rc=$?
    tail -n 40 "$out/torch.log"
    [ $rc -eq 0 ] || failed+=(torch)
    ;;
  python)
    (cd "$root" && timeout "${TL_PYTHON_TIMEOUT:-420}" python3 -m pytest -q -p no:cacheprovider \
      --ignore-glob='*/test_torch_*.py' python/tests -k cuda >"$out/python.log" 2>&1 ||
      false)
    rc=$?
    tail -n 30 "$out/python.log"
    [ $rc -eq 0 ] || failed+=(python)
    ;;
  zero-copy) # torch tensors in and out, asynchronous launches on torch's stream
    (cd "$root" && timeout 120 python3 -m pytest -q -p no:cacheprovider \
      python/tests/test_zero_copy.py >"$out/zero-copy.log" 2>&1)
    rc=$?
    tail -n 15 "$out/zero-copy.log"
    [ $rc -eq 0 ] || failed+=(zero-copy)
    ;;
  opsbench) # the op library's benchmark table on cuda (bench/ops_bench.py; 512 MiB rows)
    (cd "$root" && PYTHONPATH="$root/python${PYTHONPATH:+:$PYTHONPATH}" timeout ${TL_OPSBENCH_TIMEOUT:-420} \
      python3 bench/ops_bench.py --device cuda ${TL_OPSBENCH_ARGS:---scale 8 --reps 5 --gemm 2048,4096 --seq 2048 --heads 16} \
      --out "$out/ops-cuda.txt" >"$out/opsbench.log" 2>&1)
    rc=$?
    tail -n 45 "$out/opsbench.log"
    [ $rc -eq 0 ] || failed+=(opsbench)
    ;;
  bench)
    (cd "$root" && PYTHONPATH="${PYTHONPATH:-}" timeout 300 python3 bench/cuda/bench_rows.py \
      >"$out/bench.log" 2>&1)
    rc=$?
    cat "$out/bench.log" | tail -n 40
    [ $rc -eq 0 ] || failed+=(bench)
    ;;
  *) echo "unknown step $s"; failed+=("$s") ;;
  esac
done
echo "gpu_check: ${failed[*]:-all passed}"
[ ${#failed[@]} -eq 0 ]
