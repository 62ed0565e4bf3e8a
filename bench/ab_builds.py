#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Two builds of TL, op by op, in alternating processes, from the caches a triad leaves.

On a shared 2-vCPU host one op's time moved 10-20 % between minutes, more than most changes
being measured (bench/README.md, session 33); two builds run in turns (old, new, old, new, ...)
see the same host. Each process times every op `--reps` times, each call after a triad over
3 x 64 MiB (as bench/ops_bench.py does: nothing of the last call is left in the caches), and
prints its medians; the summary is the median over processes per build, old / new, and the range.

Usage:
  python bench/ab_builds.py --old /tmp/worktree --new . [--rounds 6] [--reps 11] [--ops a,b]
Each root needs its build (build/lib) and python/. An old commit builds fast in a worktree:
  git worktree add /tmp/old COMMIT && CCACHE_BASEDIR=/ cmake -S /tmp/old -B /tmp/old/build -G Ninja
  -DCMAKE_BUILD_TYPE=RelWithDebInfo && ninja -C /tmp/old/build
"""
import argparse
import collections
import os
import statistics
import subprocess
import sys

import numpy as np

ROWS, COLS = 16384, 1024  # the memory table's size (bench/ops_bench.py)
NAMES = ("add", "relu", "silu", "gelu", "gelu_tanh", "swiglu", "softmax", "log_softmax",
         "rmsnorm", "layernorm", "sum", "sum_columns", "max", "mean", "var", "argmax", "cumsum",
         "quantize", "rope", "gemv", "transpose")


def calls(ops):
    """The ops of the memory table this tool times, by name, on arrays of the table's sizes."""
    rng = np.random.default_rng(0)
    x = rng.standard_normal((ROWS, COLS)).astype(np.float32)
    y = rng.standard_normal((ROWS, COLS)).astype(np.float32)
    w = np.ones(COLS, np.float32)
    xr = rng.standard_normal((ROWS // 2048, 16, 2048, 64)).astype(np.float32)
    cos, sin = ops.rope_tables(2048, 64)
    table = {
        "add": lambda: ops.add(x, y), "relu": lambda: ops.relu(x), "silu": lambda: ops.silu(x),
        "gelu": lambda: ops.gelu(x), "gelu_tanh": lambda: ops.gelu(x, approximate="tanh"),
        "swiglu": lambda: ops.swiglu(x, y), "softmax": lambda: ops.softmax(x),
        "log_softmax": lambda: ops.log_softmax(x), "rmsnorm": lambda: ops.rmsnorm(x, w),
        "layernorm": lambda: ops.layernorm(x, w, w),
        "sum": lambda: ops.sum(x, axis=1), "sum_columns": lambda: ops.sum(x, axis=0),
        "max": lambda: ops.max(x, axis=1), "mean": lambda: ops.mean(x, axis=1),
        "var": lambda: ops.var(x, axis=1), "argmax": lambda: ops.argmax(x, axis=1),
        "cumsum": lambda: ops.cumsum(x, axis=1), "quantize": lambda: ops.quantize_int8(x),
        "rope": lambda: ops.rope(xr, cos, sin), "gemv": lambda: ops.gemv(x, w),
        "transpose": lambda: ops.transpose(x),
    }
    assert set(table) == set(NAMES)
    return table


def time_ops(names, reps):
    """In this process (run by main with a root's python/ and build/lib): `op ms` lines."""
    sys.path.insert(0, os.path.join(os.getcwd(), "bench"))
    import ops_bench as ob
    import tl.ops as ops
    table = calls(ops)
    triad = ob.Triad(3 * (1 << 22), "cpu")  # 3 arrays of 48 MiB
    for name in names:
        fn = table[name]
        fn()  # trace, compile, autotune, touch the output
        ms, _ = ob.median_pair(lambda: ob.device_ms(fn), lambda: ob.device_ms(triad), reps)
        print(name, ms, flush=True)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--old", required=True, help="root of the first build")
    p.add_argument("--new", default=".", help="root of the second build")
    p.add_argument("--rounds", type=int, default=6)
    p.add_argument("--reps", type=int, default=11)
    p.add_argument("--ops", default="softmax,log_softmax,silu,gelu,quantize,var,relu")
    p.add_argument("--time", action="store_true", help=argparse.SUPPRESS)  # a child process
    a = p.parse_args()
    names = a.ops.split(",")
    if a.time:
        return time_ops(names, a.reps)
    unknown = [n for n in names if n not in NAMES]
    if unknown:
        sys.exit(f"ab_builds: unknown op {', '.join(unknown)}; known: {', '.join(NAMES)}")
    env = dict(os.environ, TL_CACHE_DIR="", MALLOC_MMAP_THRESHOLD_=str(1 << 30),
               MALLOC_TRIM_THRESHOLD_=str(1 << 31))
    times = collections.defaultdict(lambda: collections.defaultdict(list))
    for r in range(a.rounds):
        for label, root in (("old", a.old), ("new", a.new)):
            root = os.path.abspath(root)
            env["PYTHONPATH"] = os.path.join(root, "python")
            env["TL_LIB_DIR"] = os.path.join(root, "build", "lib")
            out = subprocess.run([sys.executable, os.path.abspath(__file__), "--old", a.old,
                                  "--time", "--reps", str(a.reps), "--ops", a.ops],
                                 cwd=root, env=env, capture_output=True, text=True)
            if out.returncode != 0:
                sys.exit(f"ab_builds: the {label} build failed:\n{out.stderr[-2000:]}")
            for line in out.stdout.split("\n"):
                if line.strip():
                    name, ms = line.split()
                    times[name][label].append(float(ms))
        print(f"round {r + 1} of {a.rounds}", file=sys.stderr)
    for name in names:
        old, new = times[name]["old"], times[name]["new"]
        mo, mn = statistics.median(old), statistics.median(new)
        print(f"{name}: old {mo:.3f} ms [{min(old):.2f}-{max(old):.2f}], new {mn:.3f} ms "
              f"[{min(new):.2f}-{max(new):.2f}], old/new {mo / mn:.2f}")


if __name__ == "__main__":
    main()
