#!/usr/bin/env python3
"""tl.ops.gemm against numpy's OpenBLAS SGEMM in process CPU time (not wall time), one thread
each, alternating: on the shared development VM (2 vCPUs, load 10-17 from other builds) wall
time mostly measures the scheduler, while CPU time counts only the cycles each GEMM ran (the
neighbours still share the caches and DRAM). Prints per size the medians of --reps calls, ms
of CPU time, and OpenBLAS's / TL's ratio. A companion to ops_bench.py for before/after pairs of
a code-generator change (run it once per build, alternating the builds), not its replacement.

  PYTHONPATH=python TL_LIB_DIR=build/lib python bench/gemm_cputime.py --sizes 1024,2048
"""
import os
import sys

for _v in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE"):
    os.environ.pop(_v, None)
os.environ["TL_CPU_THREADS"] = os.environ["OPENBLAS_NUM_THREADS"] = "1"
os.environ.setdefault("OPENBLAS_THREAD_TIMEOUT", "4")

import argparse  # noqa: E402
import statistics  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402

from tl import ops  # noqa: E402


def cpu_ms(fn):
    t = time.process_time()
    fn()
    return (time.process_time() - t) * 1e3


def main():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--sizes", default="512,1024,2048", help="M = N = K")
    p.add_argument("--reps", type=int, default=7)
    a = p.parse_args()
    print(f"# {os.uname().nodename}, load {os.getloadavg()}, 1 thread each, CPU-time medians "
          f"of {a.reps}")
    rng = np.random.default_rng(0)
    for n in (int(s) for s in a.sizes.split(",")):
        x = rng.standard_normal((n, n), np.float32)
        y = rng.standard_normal((n, n), np.float32)
        got = ops.gemm(x, y, device="cpu")  # trace, compile, autotune
        want = x @ y
        err = float(np.abs(got - want).max() / np.abs(want).max())
        if err > 1e-4:
            sys.exit(f"gemm_cputime: gemm {n} is wrong (relative error {err:.2e})")
        tl_ms, blas_ms = [], []
        for _ in range(a.reps):
            tl_ms.append(cpu_ms(lambda: ops.gemm(x, y, device="cpu")))
            blas_ms.append(cpu_ms(lambda: x @ y))
        t, b = statistics.median(tl_ms), statistics.median(blas_ms)
        print(f"gemm {n}: TL {t:.1f} ms ({2 * n**3 / t / 1e6:.1f} GFLOP/s), OpenBLAS {b:.1f} ms, "
              f"ratio {b / t:.3f}", flush=True)
    print(f"# load {os.getloadavg()} at the end")


if __name__ == "__main__":
    main()
