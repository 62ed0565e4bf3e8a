#!/usr/bin/env python3
# tl.ops quantization on a device against anchors measured in the same run: the int8 and fp8
# GEMMs against tl.ops.gemm in f32 and OpenBLAS SGEMM (numpy) at the same size; quantize and
# dequantize (int8, fp8) against the STREAM triad on the same device (ops_bench.py's Triad: the
# memory roofline). Prints a Markdown table and `name: value` lines; --out writes both.
# SPDX-License-Identifier: Apache-2.0
"""Usage: PYTHONPATH=python TL_LIB_DIR=build/lib python bench/quant_bench.py [--device cpu]
[--gemm 512,1024] [--rows 4096] [--reps 5] [--out bench/results/FILE.txt].

FLOPs (integer or float operations alike) are 2 M N K; bytes as the op needs them: quantize
reads x once and writes q and the scales (the kernels read x twice: once for the scales), so
4 + 1 bytes per f32 element; dequantize reads q and writes f32 (1 + 4). Every row times the op
and its anchor alternately (`--reps` times each) and reports medians (device time of every
launch the op makes, HAL events), so that a shared host's load weighs on both alike."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ops_bench as ob  # noqa: E402  (sets OpenBLAS's environment before numpy loads)

import argparse  # noqa: E402
import datetime  # noqa: E402
import platform  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402

import tl  # noqa: E402
import tl.ops as ops  # noqa: E402
from tl import runtime  # noqa: E402


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--device", default="cpu")
    p.add_argument("--gemm", default="512,1024", help="GEMM sizes M = N = K")
    p.add_argument("--rows", type=int, default=4096, help="quantize: rows x 1024 f32")
    p.add_argument("--reps", type=int, default=5)
    p.add_argument("--out")
    a = p.parse_args()
    lines = []

    def say(s=""):
        print(s, flush=True)
        lines.append(s)

    fp8 = bool((runtime.device(a.device).info["supported_dtypes"] >> tl.float8e4m3.code) & 1)
    rng = np.random.default_rng(18)
    say(f"# tl.ops quantization on {a.device}, {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC")
    say(f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cores; "
        f"load average before: {ob.load()}; OpenBLAS: {ob.openblas()}")
    say()
    say("| op | size | ms | GOP/s or GB/s | anchor | anchor ms | ratio (anchor ms / op ms) |")
    say("| --- | --- | --- | --- | --- | --- | --- |")
    results = {}
    for n in (int(s) for s in a.gemm.split(",") if s):
        x = rng.standard_normal((n, n)).astype(np.float32)
        w = rng.standard_normal((n, n)).astype(np.float32)
        qa, sa = ops.quantize_int8(x, device=a.device)
        qb, sb = ops.quantize_int8(w, axis=1, device=a.device)
        exact = qa.astype(np.int64) @ qb.astype(np.int64)
        got = ops.gemm_int8(qa, qb, out_dtype="i32", device=a.device)  # warm-up, tuning
        if not np.array_equal(got, exact):
            raise SystemExit(f"quant_bench: gemm_int8 {n} is wrong")
        ops.gemm(x, w, device=a.device)
        flops = 2.0 * n ** 3
        f32 = lambda: ob.device_ms(lambda: ops.gemm(x, w, device=a.device))  # noqa: E731
        rows = [("gemm_int8 i32", lambda: ops.gemm_int8(qa, qb, out_dtype="i32",
                                                         device=a.device)),
                ("gemm_int8 dequant f32", lambda: ops.gemm_int8(qa, qb, scale_a=sa, scale_b=sb,
                                                                device=a.device))]
        if fp8:
            q8a, s8a = ops.quantize_fp8(x, device=a.device)
            q8b, s8b = ops.quantize_fp8(w, axis=1, device=a.device)
            rows.append(("gemm_fp8 e4m3 f32", lambda: ops.gemm_fp8(
                q8a, q8b, scale_a=s8a, scale_b=s8b, device=a.device)))
        for name, fn in rows:
            fn()
            ms, ams = ob.median_pair(lambda: ob.device_ms(fn), f32, a.reps)
            say(f"| {name} | {n}^3 | {ms:.3f} | {flops / ms / 1e6:.1f} | tl.ops.gemm f32 | "
                f"{ams:.3f} | {ams / ms:.2f} |")
            results[f"{name.replace(' ', '_')}_{n}_vs_f32_gemm"] = ams / ms
        if a.device == "cpu":
            ms, bms = ob.median_pair(lambda: ob.device_ms(rows[0][1]),
                                     lambda: ob.host_ms(lambda: x @ w), a.reps)
            say(f"| gemm_int8 i32 | {n}^3 | {ms:.3f} | {flops / ms / 1e6:.1f} | OpenBLAS SGEMM | "
                f"{bms:.3f} | {bms / ms:.2f} |")
            results[f"gemm_int8_i32_{n}_vs_openblas"] = bms / ms
    m, k = a.rows, 1024
    x = rng.standard_normal((m, k)).astype(np.float32)
    triad = ob.Triad(m * k, a.device)
    tms = lambda: ob.device_ms(triad)  # noqa: E731
    qi, si = ops.quantize_int8(x, device=a.device)
    rows = [("quantize_int8 per row", lambda: ops.quantize_int8(x, device=a.device), 5),
            ("quantize_int8 per column", lambda: ops.quantize_int8(x, axis=1, device=a.device),
             5),
            ("dequantize_int8", lambda: ops.dequantize_int8(qi, si, device=a.device), 5)]
    if fp8:
        q8, s8 = ops.quantize_fp8(x, device=a.device)
        rows += [("quantize_fp8 e4m3 per row", lambda: ops.quantize_fp8(x, device=a.device), 5),
                 ("quantize_fp8 e4m3 per tensor",
                  lambda: ops.quantize_fp8(x, axis=None, device=a.device), 5),
                 ("dequantize_fp8", lambda: ops.dequantize_fp8(q8, s8, device=a.device), 5)]
    for name, fn, per in rows:
        fn()
        ms, ams = ob.median_pair(lambda: ob.device_ms(fn), tms, a.reps)
        gbs = per * m * k / ms / 1e6
        tgbs = triad.bytes / ams / 1e6
        say(f"| {name} | {m}x{k} f32 | {ms:.3f} | {gbs:.1f} GB/s | triad {tgbs:.1f} GB/s | "
            f"{ams:.3f} | {gbs / tgbs:.2f} of the triad |")
        results[f"{name.replace(' ', '_')}_vs_triad"] = gbs / tgbs
    say()
    say(f"load average after: {ob.load()}")
    for k_, v in results.items():
        say(f"{k_}: {v:.3f}")
    if a.out:
        with open(a.out, "w") as f:
            f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    t0 = time.time()
    main()
    print(f"quant_bench: {time.time() - t0:.0f} s", file=sys.stderr)
