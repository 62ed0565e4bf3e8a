#!/usr/bin/env python3
# tl.ops on a device: each op's device time (HAL events: wall time on cpu, simulated time on
# npusim) against its roofline bound from the device's declared peaks, and on cpu against numpy
# (OpenBLAS for GEMM) in the same run. Prints a Markdown table.
# SPDX-License-Identifier: Apache-2.0
"""Usage: PYTHONPATH=python TL_LIB_DIR=build/lib python bench/ops_bench.py [--device cpu]
[--scale 1.0]. Bytes are counted as the op needs them (inputs read once, outputs written once),
FLOPs as 2 M N K for GEMM; the bound is max(bytes / peak bandwidth, flops / peak FLOP/s)."""
import argparse
import time

import numpy as np

import tl
import tl.ops as ops
from tl import jit, runtime

_times = []
_run = jit.Kernel.run


def _timed_run(self, grid, *args, _timed=False, **kwargs):
    ms = _run(self, grid, *args, _timed=True, **kwargs)
    if not _timed:
        _times.append(ms)
    return ms if _timed else None


def device_ms(fn, reps):
    """The least device time of `reps` calls of fn (every launch of one call summed)."""
    fn()  # trace, compile, autotune
    jit.Kernel.run = _timed_run
    try:
        best = float("inf")
        for _ in range(reps):
            _times.clear()
            fn()
            best = min(best, sum(_times))
    finally:
        jit.Kernel.run = _run
    return best


def host_ms(fn, reps):
    best = float("inf")
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        best = min(best, (time.perf_counter() - t0) * 1e3)
    return best


def cases(scale, gemm=None, seq=None, heads=8):
    rng = np.random.default_rng(0)
    f = lambda *s: rng.standard_normal(s).astype(np.float32)  # noqa: E731
    n = int(4096 * scale)
    x, y = f(n, 1024), f(n, 1024)
    w, b = f(1024), f(1024)
    m = int(512 * scale) or 64
    gemms = []  # --gemm N,...: N x N x N each; else (m, 512) x 512^2
    for g in gemm or [None]:
        gm, gk = (g, g) if g else (m, 512)
        a, bb = f(gm, gk), f(gk, gk)
        gemms.append(("gemm %d" % gk if not g else "gemm %d^3" % g,
                      lambda d, a=a, bb=bb: ops.gemm(a, bb, device=d), lambda a=a, bb=bb: a @ bb,
                      4 * (a.size + bb.size + gm * gk), 2 * gm * gk * gk))
    s = seq or m  # --seq S: attention's sequence length
    q, k, v = f(1, heads, s, 64), f(1, heads, s, 64), f(1, heads, s, 64)
    e = x.size * 4
    return [
        ("add", lambda d: ops.add(x, y, device=d), lambda: x + y, 3 * e, 0),
        ("gelu", lambda d: ops.gelu(x, device=d), None, 2 * e, 0),
        ("softmax", lambda d: ops.softmax(x, device=d),
         lambda: np.exp(x - x.max(1, keepdims=True)), 2 * e, 0),
        ("layernorm", lambda d: ops.layernorm(x, w, b, device=d), None, 2 * e, 0),
        ("sum (rows)", lambda d: ops.sum(x, device=d), lambda: x.sum(1), e, 0),
        *gemms,
        ("attention B=1 H=%d S=%d D=64" % (heads, s), lambda d: ops.attention(q, k, v, device=d),
         None, 4 * 4 * q.size, 4 * heads * s * s * 64),
    ]


def tnpu_gemm_anchor(device, n, reps):
    """Device ms of the library's hand-written f32 TNPU GEMM (kernels/tlir/gemm_f32_tnpu.tlir,
    K <= 1024) on n x n x n: the same-run anchor of tl.ops' GEMM on npusim."""
    import pathlib
    path = pathlib.Path(__file__).resolve().parents[1] / "kernels/tlir/gemm_f32_tnpu.tlir"
    rng = np.random.default_rng(1)
    a, b = (rng.standard_normal((n, n)).astype(np.float32) for _ in range(2))
    c = np.zeros((n, n), np.float32)
    dev = runtime.device(device)
    exe = dev.load(jit.compile_ir(path.read_text(), "tnpu"))
    code = tl.float32.code
    args = [("tensor", a, code), ("tensor", b, code), ("tensor", c, code)]
    grid = ((n + 1023) // 1024, (n + 255) // 256, 1)
    ms = min(dev.launch(exe, grid, args, {2}, timed=True) for _ in range(reps))
    err = np.abs(c - a @ b).max() / np.abs(a).sum(1).max()
    if not err < 1e-4:
        raise SystemExit(f"ops_bench: the anchor gemm_f32_tnpu.tlir is wrong (error {err:.2e})")
    return ms


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--device", default="cpu")
    p.add_argument("--scale", type=float, default=1.0)
    p.add_argument("--reps", type=int, default=5)
    p.add_argument("--gemm", type=lambda v: [int(x) for x in v.split(",")],
                   help="GEMMs of N x N by N x N, comma-separated (default: 512 scale x 512 by "
                   "512 x 512)")
    p.add_argument("--seq", type=int, help="attention's sequence length (default: 512 scale)")
    p.add_argument("--heads", type=int, default=8, help="attention's heads")
    p.add_argument("--only", help="comma-separated op names (the table's first words) to run")
    a = p.parse_args()
    info = runtime.device(a.device).info
    bw, flops = info["peak_bandwidth"], info["peak_flops"][tl.float32.code]
    print(f"device {a.device} ({info['name']}): peak {bw / 1e9:.1f} GB/s, "
          f"{flops / 1e9:.1f} GFLOP/s f32{' (simulated time)' if info['simulated_time'] else ''}")
    print(f"sizes: elementwise and row ops ({int(4096 * a.scale)}, 1024) f32; "
          f"reps {a.reps} (least device time)")
    print("| op | device ms | GB/s | GFLOP/s | fraction of roofline | numpy ms |")
    print("| --- | --- | --- | --- | --- | --- |")
    only = a.only.split(",") if a.only else None
    for name, fn, ref, nbytes, nflops in cases(a.scale, a.gemm, a.seq, a.heads):
        if only and name.split()[0] not in only:
            continue
        ms = device_ms(lambda: fn(a.device), a.reps)
        bound = max(nbytes / bw if bw else 0, nflops / flops if flops and nflops else 0)
        frac = bound / (ms / 1e3) if ms > 0 else 0
        ref_ms = f"{host_ms(ref, a.reps):.3f}" if ref and a.device == "cpu" else "-"
        print(f"| {name} | {ms:.3f} | {nbytes / ms / 1e6:.1f} | "
              f"{nflops / ms / 1e6 if nflops else 0:.1f} | {frac:.2f} | {ref_ms} |")
        g = int(name[5:-2]) if name.startswith("gemm") and name.endswith("^3") else 0
        if 0 < g <= 1024 and info["target"] == "tnpu":
            ams = tnpu_gemm_anchor(a.device, g, a.reps)
            af = 2 * g ** 3
            print(f"| anchor: gemm_f32_tnpu.tlir {g}^3 (hand-written) | {ams:.3f} | "
                  f"{nbytes / ams / 1e6:.1f} | {af / ams / 1e6:.1f} | "
                  f"{max(nbytes / bw, af / flops) / (ams / 1e3):.2f} | - |")


if __name__ == "__main__":
    main()
