#!/usr/bin/env python3
"""conv2d on ResNet-50's layer shapes against PyTorch (oneDNN on cpu, cuDNN on cuda), in the
same process, alternating, each checked against PyTorch first.

PYTHONPATH=python TL_LIB_DIR=build/lib python bench/conv_bench.py [--device cpu] [--batch 8]
[--reps 7] [--forms chosen,gathered] [--out bench/results/FILE.txt]

--forms times each shape in the forms named: `chosen` (what tl.ops.conv2d picks on the device)
and `gathered` (the gathered-patch kernel alone: conv2d_shift off through
_common.tuning_override), so that a change of the choice is measured against the other form in
the same run. Prints a table and
`name: value` lines (PyTorch's time over TL's: above 1, TL is faster).
"""
# SPDX-License-Identifier: Apache-2.0
import argparse
import os
import platform
import statistics
import sys
import time

import numpy as np

from tl import ops
from tl.ops import _common as c

try:
    import torch
    import torch.nn.functional as F
except ImportError:  # the anchor is PyTorch's conv2d
    torch = None

# (C, OC, H = W, window, stride, padding): ResNet-50's distinct convolutions at 224 x 224
SHAPES = [(3, 64, 224, 7, 2, 3), (64, 64, 56, 1, 1, 0), (64, 64, 56, 3, 1, 1),
          (64, 256, 56, 1, 1, 0), (128, 128, 56, 3, 2, 1), (128, 128, 28, 3, 1, 1),
          (256, 512, 56, 1, 2, 0), (256, 256, 28, 3, 2, 1), (256, 256, 14, 3, 1, 1),
          (512, 512, 14, 3, 2, 1), (512, 512, 7, 3, 1, 1), (512, 2048, 7, 1, 1, 0)]


def timed(fn, sync):
    t0 = time.perf_counter()
    fn()
    sync()
    return (time.perf_counter() - t0) * 1e3


def main():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--device", default="cpu")
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--reps", type=int, default=7)
    p.add_argument("--forms", default="chosen,gathered")
    p.add_argument("--out")
    a = p.parse_args()
    if torch is None:
        raise SystemExit("conv_bench: PyTorch is the anchor; install torch")
    forms = [f for f in a.forms.split(",") if f]
    if any(f not in ("chosen", "gathered") for f in forms):
        raise SystemExit(f"conv_bench: --forms takes chosen and gathered, got {a.forms!r}")
    tdev = "cuda" if a.device == "cuda" else "cpu"
    if tdev == "cuda":
        torch.backends.cudnn.allow_tf32 = False  # f32 against f32
        sync = torch.cuda.synchronize
    else:
        torch.set_num_threads(c.compute_units(a.device))
        sync = lambda: None  # noqa: E731
    lines = []

    def say(s=""):
        print(s, flush=True)
        lines.append(s)
    say(f"# bench/conv_bench.py {' '.join(sys.argv[1:])}")
    say(f"# {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, {platform.node()}, "
        f"{os.cpu_count()} CPUs, load {' '.join(f'{v:.2f}' for v in os.getloadavg())}; "
        f"PyTorch {torch.__version__}, {torch.get_num_threads()} threads")
    say()
    say("| shape (N x C x H x W, OC, window, stride) | " + " | ".join(
        f"{f} ms | {f} vs PyTorch" for f in forms) + " | PyTorch ms | GFLOP |")
    say("| --- | " + " | ".join("--- | ---" for _ in forms) + " | --- | --- |")
    rng = np.random.default_rng(0)
    results = {}
    for ch, oc, hw, k, st, pad in SHAPES:
        x = rng.standard_normal((a.batch, ch, hw, hw), np.float32)
        w = (rng.standard_normal((oc, ch, k, k), np.float32) / np.sqrt(ch * k * k)).astype(np.float32)
        tx, tw = torch.from_numpy(x).to(tdev), torch.from_numpy(w).to(tdev)
        want = F.conv2d(tx, tw, stride=st, padding=pad)
        ref = want.cpu().numpy()
        runs = {}
        for f in forms:
            # the gathered form: the shift form's tuning entry off; the chosen: the table's
            overrides = {"conv2d_shift": False} if f == "gathered" else {}

            def run(overrides=overrides):
                with c.tuning_override(**overrides):
                    return ops.conv2d(x, w, stride=st, padding=pad, device=a.device)
            got = run()
            err = np.abs(got - ref).max() / np.abs(ref).max()
            if not err < 1e-4:
                raise SystemExit(f"conv_bench: {f} form wrong for {(ch, oc, hw, k, st)} "
                                 f"(relative error {err:.2e})")
            runs[f] = run
        times = {f: [] for f in forms}
        t_torch = []
        for _ in range(a.reps):
            for f, run in runs.items():
                times[f].append(timed(run, sync))
            t_torch.append(timed(lambda: F.conv2d(tx, tw, stride=st, padding=pad), sync))
        tm = statistics.median(t_torch)
        name = f"{a.batch}x{ch}x{hw}x{hw} {oc} {k}x{k} s{st}"
        cells = []
        for f in forms:
            ms = statistics.median(times[f])
            results[f"conv_{a.batch}x{ch}x{hw}_{oc}_k{k}s{st}_{f}_vs_pytorch"] = tm / ms
            cells.append(f"{ms:.3f} | {tm / ms:.2f}")
        flops = 2.0 * want.numel() * ch * k * k
        say(f"| {name} | " + " | ".join(cells) + f" | {tm:.3f} | {flops / 1e9:.2f} |")
    say()
    for key, r in results.items():
        say(f"{key}: {r:.3f}")
    if a.out:
        with open(a.out, "w") as fh:
            fh.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    if "MALLOC_MMAP_THRESHOLD_" not in os.environ:  # outputs from a warm heap (ops_bench.py)
        os.environ.update(MALLOC_MMAP_THRESHOLD_="1073741824",
                          MALLOC_TRIM_THRESHOLD_="2147483648")
        os.execv(sys.executable, [sys.executable] + sys.argv)
    main()
