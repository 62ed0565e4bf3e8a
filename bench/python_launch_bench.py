# Launch overhead from Python: an empty kernel (and a small vector add) on the CPU device.
# SPDX-License-Identifier: Apache-2.0
"""Prints `name: value` lines. Run: TL_LIB_DIR=build/lib PYTHONPATH=python .venv/bin/python
bench/python_launch_bench.py [--device cpu] [--iters N]."""
import argparse
import pathlib
import sys
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "python"))

import numpy as np  # noqa: E402

import tl  # noqa: E402


@tl.kernel
def empty():
    pass


@tl.kernel
def vadd(x: tl.tensor, y: tl.tensor, z: tl.tensor, BLOCK: tl.constexpr):
    i = tl.program_id(0) * BLOCK
    tl.store(z + (i,), tl.load(x + (i,), (BLOCK,)) + tl.load(y + (i,), (BLOCK,)))


def per_call_us(fn, iters):
    fn()  # compile and warm up
    best = float("inf")
    for _ in range(5):
        t0 = time.perf_counter()
        for _ in range(iters):
            fn()
        best = min(best, (time.perf_counter() - t0) / iters)
    return best * 1e6


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--device", default="cpu")
    p.add_argument("--iters", type=int, default=2000)
    a = p.parse_args()
    launch = empty[(1,)]
    print(f"device: {a.device}")
    print(f"python_empty_kernel_launch_us: "
          f"{per_call_us(lambda: launch(device=a.device), a.iters):.2f}")
    x = np.ones(1024, np.float32)
    z = np.empty_like(x)
    add = vadd[(4,)]
    print(f"python_vadd_1024_launch_us: "
          f"{per_call_us(lambda: add(x, x, z, BLOCK=256, device=a.device), a.iters // 4):.2f}")
    t0 = time.perf_counter()
    tl.kernel(vadd.fn).ir(x, x, z, BLOCK=128)
    print(f"python_trace_vadd_ms: {(time.perf_counter() - t0) * 1e3:.2f}")


if __name__ == "__main__":
    main()
