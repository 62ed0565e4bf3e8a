#!/usr/bin/env bash
# The main job: set up, build, run the library kernels (vector add, GEMM, softmax) on the
# reference interpreter against the fp64 references, then run the certification kit tl-conform
# on the simulated NPU (npusim) and on the CPU device, printing each verdict and fp32 error table.
# SPDX-License-Identifier: Apache-2.0
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
"$root/ci/build.sh"
build="${TL_BUILD_DIR:-$root/build}"
echo "== library kernels on the reference interpreter vs fp64 references"
"$build/kernels/tl-check-kernels" --seed "${TL_SEED:-1}" --trials 3
echo "== tlc run: GEMM 100x70x45 from random inputs (seed 7), fp32 and fp64 modes"
"$build/tools/tlc/tlc" run "$root/kernels/tlir/gemm.tlir" --grid 4,3 --seed 7 \
  a=100x45 b=45x70 c=zeros:100x70
"$build/tools/tlc/tlc" run "$root/kernels/tlir/gemm.tlir" --grid 4,3 --seed 7 --reference \
  a=100x45 b=45x70 c=zeros:100x70
echo "== tlc run --device cpu: the same GEMM as native code through the HAL"
"$build/tools/tlc/tlc" run --device cpu "$root/kernels/tlir/gemm.tlir" --grid 4,3 --seed 7 \
  a=100x45 b=45x70 c=zeros:100x70
# Exit status 1 means "not certified" (the report says which tests fail and why). The simulated
# NPU's time is simulated, so its run is deterministic: the job fails unless it is certified.
# The cpu device's timing suites move with the host, so there only a tool error (2) fails it.
# npusim is certified under npu-core (core with f64 and i64 exempted by name: no 64-bit datapath).
for device in npusim cpu; do
  profile=core
  [ "$device" = npusim ] && profile=npu-core
  echo "== tl-conform run --device $device --profile $profile"
  out="${TL_CONFORM_OUT:-$build}/conformance-$device"
  rm -rf "$out"
  status=0
  "$build/conformance/tl-conform" run --device "$device" --profile "$profile" --jobs 2 --out "$out" \
    | grep -v '^  fail (expected)' || status=${PIPESTATUS[0]}
  echo "reports: $out/report.html, $out/results.json, $out/junit.xml"
  echo "== $device: fp32 errors against the fp64 references"
  "$root/.venv/bin/python" "$root/ci/fp32_table.py" "$out"
  if [ "$device" = npusim ] && [ "$status" -ne 0 ]; then
    echo "main: npusim is not certified (status $status)" >&2
    exit 1
  fi
  [ "$status" -le 1 ] || exit "$status"
done
