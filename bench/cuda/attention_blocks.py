"""tl.ops.attention on the cuda device at each query x key block size: the error against the
fp64 reference and the time, so the nvptx entry of _common.TUNING["attention_blocks"] is
chosen by measurement (`name: value` lines; run by gpu_check.sh's `attention` step). Times are
the kernels' device time (HAL events, ops_bench.device_ms), best of 3: the host copies of the
numpy inputs are not the kernel's."""
# SPDX-License-Identifier: Apache-2.0
import math
import os
import sys

import numpy as np

import tl
from tl.ops import _common, reference
from tl.ops import transformer

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from ops_bench import device_ms  # noqa: E402


SHIPPED = (_common.TUNING["attention_blocks"]["nvptx"],
           _common.TUNING["attention_blocks_many"]["nvptx"])


def run(blocks, q, k, v, causal):
    """blocks: (BM, BN) for every grid, None for the generic choice, "tuned" for the shipped
    TUNING (attention_blocks, and attention_blocks_many where the grid is large)."""
    (_common.TUNING["attention_blocks"]["nvptx"],
     _common.TUNING["attention_blocks_many"]["nvptx"]) = (
        SHIPPED if blocks == "tuned" else (blocks, None))
    out = transformer.attention(q, k, v, causal=causal, device="cuda")
    best = min(device_ms(lambda: transformer.attention(q, k, v, causal=causal, device="cuda"))
               for _ in range(3))
    return out, best / 1e3


def main():
    rng = np.random.default_rng(7)
    failures = 0
    # (head dim, sequence, causal, heads): the last two at ops_bench's size (S = 2048, 16 heads)
    for d, s, causal, h in ((64, 197, False, 4), (64, 1024, True, 4), (128, 300, False, 4),
                            (128, 1024, False, 4), (64, 2048, False, 16), (128, 2048, False, 16)):
        q = rng.standard_normal((1 if h == 16 else 2, h, s, d)).astype(np.float32)
        k = rng.standard_normal((q.shape[0], h // 2, s, d)).astype(np.float32)
        v = rng.standard_normal((q.shape[0], h // 2, s, d)).astype(np.float32)
        ref = reference.attention(q.astype(np.float64), k.astype(np.float64),
                                  v.astype(np.float64), causal=causal)
        for blocks in ((32, 32), (64, 64), (128, 64), (64, 128) if d <= 64 else (64, 32),
                       (128, 128) if d <= 64 else (32, 64), None, "tuned"):
            shape = blocks if isinstance(blocks, str) else (
                f"{blocks[0]}x{blocks[1]}" if blocks else "generic")
            name = f"attention_d{d}_s{s}_h{h}{'_causal' if causal else ''}_{shape}"
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
            flops = 4.0 * q.shape[0] * h * s * s * d / (2 if causal else 1)
            print(f"{name}_ms: {secs * 1e3:.3f}")
            print(f"{name}_tflops: {flops / secs / 1e12:.2f}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
