# Sourced by the GPU machine's scripts (gpu_check.sh, tune_sweep.sh): cffi for the Python steps,
# from the pack's wheels when the machine lacks it.
# SPDX-License-Identifier: Apache-2.0
dest="${TL_UNPACK_DIR:-${TMPDIR:-/tmp}/tl-cuda}"
if ! python3 -c 'import cffi' 2>/dev/null && ls "$dest"/wheels/*.whl >/dev/null 2>&1; then
  for w in "$dest"/wheels/*.whl; do python3 -m zipfile -e "$w" "$dest/py"; done
  export PYTHONPATH="$dest/py${PYTHONPATH:+:$PYTHONPATH}"
fi
