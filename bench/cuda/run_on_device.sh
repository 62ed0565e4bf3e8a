#!/usr/bin/env bash
# Runs on the GPU machine: unpacks the archive bench/cuda/pack.sh made, points the loader at it,
# then prints tl-info and runs the cuda plugin's tests (and the HAL CTS on the cuda device).
# SPDX-License-Identifier: Apache-2.0
#
# usage: bench/cuda/run_on_device.sh [ARCHIVE] [-- COMMAND...]
#   ARCHIVE defaults to build/cuda-pack/tl-cuda.tar.xz; COMMAND, when given, runs instead of the
#   tests, with the same environment (e.g. -- tl-conform run --device cuda --profile core ...).
# Exits non-zero when a test fails; every step's output says which.
set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
archive="${1:-$root/build/cuda-pack/tl-cuda.tar.xz}"
shift || true
[ "${1:-}" = "--" ] && shift
dest="${TL_UNPACK_DIR:-${TMPDIR:-/tmp}/tl-cuda}"

rm -rf "$dest" && mkdir -p "$dest"
tar -C "$dest" -xJf "$archive" || { echo "run_on_device: cannot unpack $archive" >&2; exit 2; }
export LD_LIBRARY_PATH="$dest/lib:$dest/deps${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export PATH="$dest/bin:$PATH"
export TL_LIB_DIR="$dest/lib"           # the Python package's libraries
export TL_PLUGIN_CUDA="$dest/lib/libtl_plugin_cuda.so" # the plugin tests' dlopen path
export TL_PLUGIN_PATH=                  # only the plugins beside libtl_hal.so
head -2 "$dest/MANIFEST"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>&1 || true

if [ $# -gt 0 ]; then
  exec "$@"
fi

failed=()
step() {
  echo "=== $*"
  "$@" || failed+=("$1")
}
step tl-info
step tl_plugin_cuda_tests
# The device through the HAL with hand-written PTX: JIT, cubin, imports, asserts, copy bandwidth.
step tl_cuda_device_tests
step tl_nvptx_code_tests
step tl_hal_import_tests
# The CTS on every device; the cuda instances are the new ones.
step tl_hal_cts --gtest_brief=1
if ! python3 -c 'import cffi' 2>/dev/null && ls "$dest"/wheels/*.whl >/dev/null 2>&1; then
  for w in "$dest"/wheels/*.whl; do python3 -m zipfile -e "$w" "$dest/py"; done
  export PYTHONPATH="$dest/py${PYTHONPATH:+:$PYTHONPATH}"
fi
if python3 -c 'import cffi, numpy' 2>/dev/null; then
  # test_zero_copy's torch test runs TL kernels on torch CUDA tensors (needs the nvptx target).
  step python3 -m pytest -q -p no:cacheprovider "$root/python/tests/test_zero_copy.py"
else
  echo "=== python: cffi or numpy missing here, Python tests skipped"
fi
if [ ${#failed[@]} -gt 0 ]; then
  echo "run_on_device: FAILED: ${failed[*]}"
  exit 1
fi
echo "run_on_device: all passed"
