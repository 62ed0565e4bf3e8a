"""tl.ops.attention on the cuda device at each query x key block size: the error against the
fp64 reference and the time, so the nvptx entry of _common.TUNING["attention_blocks"] is
chosen by measurement (`name: value` lines; run by gpu_check.sh's `attention` step)."""
# SPDX-License-Identifier: Apache-2.0
import math
import sys
import time

import numpy as np

import tl
from tl.ops import _common, reference
from tl.ops import transformer


def run(blocks, q, k, v, causal):
    _common.TUNING["attention_blocks"]["nvptx"] = blocks
    out = transformer.attention(q, k, v, causal=causal, device="cuda")
    best = math.inf
    for _ in range(3):
        t0 = time.perf_counter()
        transformer.attention(q, k, v, causal=causal, device="cuda")
        best = min(best, time.perf_counter() - t0)
    return out, best


def main():
    rng = np.random.default_rng(7)
    failures = 0
    for d, s, causal in ((64, 197, False), (64, 1024, True), (128, 300, False), (128, 1024, False)):
        q = rng.standard_normal((2, 4, s, d)).astype(np.float32)
        k = rng.standard_normal((2, 2, s, d)).astype(np.float32)
        v = rng.standard_normal((2, 2, s, d)).astype(np.float32)
        ref = reference.attention(q.astype(np.float64), k.astype(np.float64),
                                  v.astype(np.float64), causal=causal)
        for blocks in ((32, 32), (64, 64), (128, 128) if d <= 64 else (64, 32), None):
            shape = f"{blocks[0]}x{blocks[1]}" if blocks else "generic"
            name = f"attention_d{d}_s{s}{'_causal' if causal else ''}_{shape}"
            try:
                out, secs = run(blocks, q, k, v, causal)
            except Exception as e:  # a block size that does not compile is a finding, not a stop
                print(f"{name}: error {str(e).splitlines()[0][:200]}")
                failures += 1
                continue
            err = float(np.abs(out - ref).max() / max(np.abs(ref).max(), 1e-30))
            ok = err < 1e-5
            failures += not ok
            print(f"{name}_max_rel_err: {err:.3e}{'' if ok else '  WRONG'}")
            print(f"{name}_ms: {secs * 1e3:.3f}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
