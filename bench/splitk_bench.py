# Split-K GEMM (tl.ops.gemm's split_k) against the unsplit GEMM, same run, same device.
# SPDX-License-Identifier: Apache-2.0
"""``python bench/splitk_bench.py [--device cpu|npusim] [--reps N]``: for small outputs with a
long K (where tl.ops.gemm chooses split-K by itself, `linear.splitk_choice`), the device time
of gemm(split_k=1) (the anchor: every program walks all of K) and of the automatic split (the
partials kernel plus the reduction, both counted), medians of alternating runs, f32; also
numpy's matmul (OpenBLAS) on the host for scale. Prints one line per shape and the load."""
import argparse
import statistics
import time

import numpy as np

import tl.ops as ops
from tl.ops import linear

from ops_bench import device_ms  # every launch of a call, summed (HAL events)


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--device", default="cpu")
    p.add_argument("--reps", type=int, default=5)
    p.add_argument("--shapes", default="3x70x5000,8x64x16384,1x128x32768,64x64x8192")
    a = p.parse_args()
    rng = np.random.default_rng(0)
    print(f"splitk_bench: device {a.device}, f32, load {open('/proc/loadavg').read().split()[:3]}")
    print("M x N x K | split | unsplit ms | split ms | speedup | numpy ms | max |diff|")
    for shape in a.shapes.split(","):
        m, n, k = (int(v) for v in shape.split("x"))
        x = rng.uniform(-1, 1, (m, k)).astype(np.float32)
        w = rng.uniform(-1, 1, (k, n)).astype(np.float32)
        s = linear.splitk_choice(1, m, n, k)
        one = lambda: ops.gemm(x, w, split_k=1, device=a.device)  # noqa: E731
        auto = lambda: ops.gemm(x, w, device=a.device)  # noqa: E731
        diff = float(np.abs(one() - auto()).max())  # also compiles both
        t1, ts = [], []
        for _ in range(a.reps):
            t1.append(device_ms(one))
            ts.append(device_ms(auto))
        t0 = time.perf_counter()
        for _ in range(a.reps):
            x @ w
        npm = (time.perf_counter() - t0) * 1e3 / a.reps
        u, sp = statistics.median(t1), statistics.median(ts)
        print(f"{m}x{n}x{k} | {s} | {u:.3f} | {sp:.3f} | {u / sp:.2f} | {npm:.3f} | {diff:.1e}")
    print(f"splitk_bench: load after {open('/proc/loadavg').read().split()[:3]}")


if __name__ == "__main__":
    main()
