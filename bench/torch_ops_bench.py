# tl.torch's cost over tl.ops: the same op through torch.ops.tl on CPU tensors and through the
# numpy host function, with PyTorch's own op as the anchor, measured in one run.
# SPDX-License-Identifier: Apache-2.0
"""Prints `name: value` lines (µs per call, best of --repeat medians). Run:
TL_LIB_DIR=build/lib PYTHONPATH=python .venv/bin/python bench/torch_ops_bench.py
Sizes: softmax and layernorm of (rows, cols) f32; gemm of (n, n) @ (n, n) f32."""
import argparse
import pathlib
import statistics
import sys
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "python"))

import torch  # noqa: E402

import tl.ops as ops  # noqa: E402
import tl.torch  # noqa: E402,F401

T = torch.ops.tl
F = torch.nn.functional


def per_call_us(fn, iters, repeat):
    fn()  # compile, tune and warm up
    fn()
    best = float("inf")
    for _ in range(repeat):
        times = []
        for _ in range(iters):
            t = time.perf_counter()
            fn()
            times.append(time.perf_counter() - t)
        best = min(best, statistics.median(times))
    return best * 1e6


def cases():
    for rows, cols in ((64, 64), (2048, 1024)):
        x = torch.randn(rows, cols)
        xn = x.numpy()
        yield (f"softmax_{rows}x{cols}", lambda x=x: T.softmax(x), lambda xn=xn: ops.softmax(xn),
               lambda x=x: torch.softmax(x, -1))
        w, b = torch.randn(cols), torch.randn(cols)
        wn, bn = w.numpy(), b.numpy()
        yield (f"layernorm_{rows}x{cols}", lambda x=x, w=w, b=b: T.layernorm(x, w, b),
               lambda: ops.layernorm(xn, wn, bn), lambda x=x: F.layer_norm(x, (cols,), w, b))
    for n in (64, 512):
        a, c = torch.randn(n, n), torch.randn(n, n)
        an, cn = a.numpy(), c.numpy()
        yield (f"gemm_{n}", lambda a=a, c=c: T.gemm(a, c), lambda an=an, cn=cn: ops.gemm(an, cn),
               lambda a=a, c=c: a @ c)


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--iters", type=int, default=50)
    p.add_argument("--repeat", type=int, default=3)
    args = p.parse_args()
    print(f"torch: {torch.__version__}, threads: {torch.get_num_threads()}")
    for name, via_torch, via_numpy, anchor in cases():
        t_torch = per_call_us(via_torch, args.iters, args.repeat)
        t_numpy = per_call_us(via_numpy, args.iters, args.repeat)
        t_anchor = per_call_us(anchor, args.iters, args.repeat)
        print(f"{name}_tl_torch_us: {t_torch:.1f}")
        print(f"{name}_tl_ops_numpy_us: {t_numpy:.1f}")
        print(f"{name}_torch_native_us: {t_anchor:.1f}")
        print(f"{name}_tl_torch_overhead_us: {t_torch - t_numpy:.1f}")


if __name__ == "__main__":
    main()
