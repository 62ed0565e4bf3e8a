# Per-launch cost of kernel[grid](x) from Python for an empty kernel: the full path against the
# fast path (tl/fastlaunch.py), on the cpu device with a numpy array or on cuda with a torch tensor.
# SPDX-License-Identifier: Apache-2.0
"""Usage: launch_overhead.py [--device cpu|cuda] [--reps N] [--profile]

Prints, per path (full: TL_FAST_LAUNCH=0's path; fast: a plan's in Python; fast_c: a plan's hot
case in C, the default where _tl_launch is built), microseconds per launch:
- `launch_<dev>_<path>_us`: REPS launches then one synchronize (cuda: queued on torch's stream);
- `launch_<dev>_<path>_python_us`: the same with the HAL's tl_stream_launch and
  tl_stream_synchronize replaced by no-ops, i.e. the Python side alone (the imports of buffers
  stay real). On the cpu device the launch itself (~100 us: a thread-pool dispatch and wait)
  hides the Python side, so this line is the one to compare there.
`--profile` prints cProfile's top functions of the fast path.
"""
import argparse
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
import numpy as np  # noqa: E402

import tl  # noqa: E402
import tl.fastlaunch  # noqa: E402
import tl.runtime  # noqa: E402
from tl._ffi import ffi  # noqa: E402


@tl.kernel
def empty(x: tl.tensor):
    pass


class _NoLaunchHal:
    """The HAL library with launch and synchronize as no-ops (every other function real)."""

    def __init__(self, lib):
        for name in dir(lib):
            if name.startswith(("tl_status", "tl_buffer", "tl_stream", "tl_event", "tl_device")):
                setattr(self, name, getattr(lib, name))
        self.tl_stream_launch = lambda *a: ffi.NULL
        self.tl_stream_synchronize = lambda *a: ffi.NULL


def per_launch(x, reps, sync):
    best = float("inf")
    for _ in range(3):
        t0 = time.perf_counter()
        for _ in range(reps):
            empty[(1,)](x)
        sync()
        best = min(best, (time.perf_counter() - t0) / reps)
    return best * 1e6


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--reps", type=int, default=2000)
    ap.add_argument("--profile", action="store_true")
    opt = ap.parse_args()
    if opt.device.startswith("cuda"):
        import torch
        x = torch.empty(1, device=opt.device)
        sync = torch.cuda.synchronize
    else:
        x = np.zeros(1, np.float32)
        sync = lambda: None  # noqa: E731 (cpu launches with host arrays are synchronous)
    dev = opt.device.split(":")[0]
    real_hal = tl.runtime.hal()
    use_c, tl.fastlaunch.USE_C = tl.fastlaunch.USE_C, False  # the Python plans first
    for stub in (False, True):
        for fast in (False, True):
            tl.fastlaunch.ENABLED = fast
            empty._plans = []
            if stub:
                lib = _NoLaunchHal(real_hal)
                tl.runtime.hal = tl.fastlaunch.hal = lambda: lib  # noqa: E731
            empty[(1,)](x)  # compiles (once), makes the plan
            sync()
            before = dict(empty.launch_counts)
            us = per_launch(x, opt.reps, sync)
            took = empty.launch_counts["fast"] - before["fast"]
            path = "fast" if fast else "full"
            if fast and took != 3 * opt.reps:
                print(f"launch_overhead: FAILED the fast path took {took} of {3 * opt.reps}")
                return 1
            print(f"launch_{dev}_{path}{'_python' if stub else ''}_us: {us:.2f}")
            tl.runtime.hal = tl.fastlaunch.hal = lambda: real_hal  # noqa: E731
    if tl.fastlaunch.C is not None and dev == "cuda":  # plans in C (python/ext/tl_launch.c)
        tl.fastlaunch.ENABLED, tl.fastlaunch.USE_C, empty._plans = True, True, []
        empty[(1,)](x)
        print(f"launch_{dev}_fast_c_us: {per_launch(x, opt.reps, sync):.2f}")
    tl.fastlaunch.USE_C = use_c
    if opt.profile:
        import cProfile
        import pstats
        tl.fastlaunch.ENABLED = True
        empty[(1,)](x)
        cProfile.runctx("for _ in range(reps): empty[(1,)](x)", globals(),
                        {"empty": empty, "x": x, "reps": opt.reps}, "/tmp/tl-launch.prof")
        sync()
        pstats.Stats("/tmp/tl-launch.prof").sort_stats("tottime").print_stats(12)
    return 0


if __name__ == "__main__":
    sys.exit(main())
