"""The op library's memory-bound ops at the shapes and dtypes users bring, not only the table's.

Usage: PYTHONPATH=python TL_LIB_DIR=build/lib python bench/ops_shapes_bench.py [--device cpu]
[--reps 7] [--elements 16777216] [--only PREFIX,...] [--out bench/results/FILE.txt]

`ops_bench.py` times each op at one shape (rows of 1024 f32). This sweep times softmax,
layernorm, rmsnorm, sums along rows and columns, transpose and cumsum at rows of 768 (BERT and
GPT-2's width), 1000, 128 to 50257 (vocabularies), bf16 at three shapes, elementwise ops on flat,
broadcast and transposed operands, and cross-entropy over 32000 classes, each about 64 MiB of
f32 or its bf16 half (`--elements`). Every row alternates the op with a triad over arrays of as
many f32 on the same device, as ops_bench.py's rows do (ops_bench.Triad: 192 MiB at 16M;
medians of `--reps`), and prints `name_vs_triad: fraction` lines: a row far below its
neighbours is a shape the library handles badly (session 40 found softmax of rows of 768 at
0.11 and of 520 at 0.04). Bytes as the op needs them (inputs read once, outputs written once).
Each op's result after its timing is checked against its fp64 reference (tl.ops.reference): a
wrong one is marked on its line and fails the run. As in ops_bench.py, glibc keeps freed
blocks, so that an op's output is not fresh pages faulted in while its kernel runs.
"""
import os
import sys

if os.environ.get("MALLOC_MMAP_THRESHOLD_") is None and __name__ == "__main__":
    os.environ["MALLOC_MMAP_THRESHOLD_"] = str(1 << 30)
    os.environ["MALLOC_TRIM_THRESHOLD_"] = str(1 << 31)
    os.execv(sys.executable, [sys.executable] + sys.argv)

import argparse  # noqa: E402
import datetime  # noqa: E402
import importlib.util  # noqa: E402
import math  # noqa: E402
import pathlib  # noqa: E402
import platform  # noqa: E402

import numpy as np  # noqa: E402

import tl.ops as ops  # noqa: E402
from tl import bf16  # noqa: E402
from tl.ops import reference as ref  # noqa: E402

_spec = importlib.util.spec_from_file_location(
    "ops_bench", pathlib.Path(__file__).resolve().parent / "ops_bench.py")
ob = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(ob)

ELEMENTS = 16 * 2**20  # 64 MiB of f32 a row (--elements)
WIDTHS = (768, 1000, 4096, 8192, 32000, 50257, 256, 128)
BF16_WIDTHS = (1024, 4096, 768)


def cases(device, elements=ELEMENTS):
    """(name, op, its fp64 reference, bytes moved), built lazily per width so that one shape's
    arrays are alive at a time; about `elements` f32 (or bf16) elements a row."""
    rng = np.random.default_rng(0)

    def f(*s):
        return rng.standard_normal(s).astype(np.float32)

    for n in WIDTHS:
        x, w, b = f(max(1, elements // n), n), f(n), f(n)
        s = f"f32 {x.shape[0]}x{n}"
        yield from rows(s, x, w, b, device, f32=True)
    for n in BF16_WIDTHS:
        x = bf16.array(f(max(1, elements // n), n))
        w, b = bf16.array(f(n)), bf16.array(f(n))
        yield from rows(f"bf16 {x.shape[0]}x{n}", x, w, b, device, f32=False)
    x, y = f(elements), f(elements)
    yield ("add f32 flat", lambda: ops.add(x, y, device=device),
           lambda: ref.binary("add", x, y), 3 * x.nbytes)
    yield ("silu f32 flat", lambda: ops.silu(x, device=device),
           lambda: ref.activation("silu", x), 2 * x.nbytes)
    side = math.isqrt(elements)
    m, row = x[:side * side].reshape(side, side), f(side)
    yield (f"add f32 {side}x{side} + row", lambda: ops.add(m, row, device=device),
           lambda: ref.binary("add", m, row), 2 * m.nbytes)
    t = y[:side * side].reshape(side, side).T
    yield (f"add f32 transposed views {side}x{side}", lambda: ops.add(t, t, device=device),
           lambda: ref.binary("add", t, t), 2 * t.nbytes)
    del x, y, m, t
    logits = f(max(1, 4 * elements // 32000), 32000)  # 2048 x 32000 at 16M elements
    target = rng.integers(0, 32000, logits.shape[0]).astype(np.int32)
    yield (f"cross_entropy f32 {logits.shape[0]}x32000",
           lambda: ops.cross_entropy(logits, target, reduction="none", device=device),
           lambda: ref.cross_entropy(logits, target, "none"), logits.nbytes)


def rows(s, x, w, b, device, f32):
    """The row ops and reductions of one (rows, n) array `x` (named by `s`)."""
    yield (f"softmax {s}", lambda: ops.softmax(x, device=device), lambda: ref.softmax(x),
           2 * x.nbytes)
    yield (f"layernorm {s}", lambda: ops.layernorm(x, w, b, device=device),
           lambda: ref.layernorm(x, w, b), 2 * x.nbytes)
    yield (f"rmsnorm {s}", lambda: ops.rmsnorm(x, w, device=device),
           lambda: ref.rmsnorm(x, w), 2 * x.nbytes)
    yield (f"sum rows {s}", lambda: ops.sum(x, axis=-1, device=device),
           lambda: ref.reduce("sum", x, -1), x.nbytes)
    if f32:
        yield (f"sum columns {s}", lambda: ops.sum(x, axis=0, device=device),
               lambda: ref.reduce("sum", x, 0), x.nbytes)
        yield (f"cumsum {s}", lambda: ops.cumsum(x, axis=-1, device=device),
               lambda: ref.cumsum(x, -1), 2 * x.nbytes)
    else:
        yield (f"gelu {s}", lambda: ops.gelu(x, device=device),
               lambda: ref.activation("gelu", x), 2 * x.nbytes)
        yield (f"add {s}", lambda: ops.add(x, x, device=device),
               lambda: ref.binary("add", x, x), 3 * x.nbytes)
    yield (f"transpose {s}", lambda: ops.transpose(x, device=device), lambda: ref.transpose(x),
           2 * x.nbytes)


def wrong(got, want, name):
    """Why the op's result after the timing is wrong (None when it is right): a normwise error
    past 1e-4 (f32 rows; the sums and cumsums of n standard normals: 1e-4 relative to the norm
    of the result allows their n u growth at these widths) or 2e-2 (bf16, rounded outputs)."""
    got = ref.f64(got)
    if got.shape != want.shape:
        return f"shape {got.shape}, expected {want.shape}"
    bound = 2e-2 if "bf16" in name else 1e-4
    err = np.linalg.norm((got - want).ravel()) / max(np.linalg.norm(want.ravel()), 1e-30)
    return None if err <= bound else f"normwise error {err:.3g} > {bound:g}"


def line_key(name):
    return "".join(ch if ch.isalnum() else "_" for ch in name).strip("_") + "_vs_triad"


def main():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--device", default="cpu")
    p.add_argument("--reps", type=int, default=7)
    p.add_argument("--elements", type=int, default=ELEMENTS,
                   help="elements of each row's array (default 16M: 64 MiB of f32)")
    p.add_argument("--only", default="", help="comma-separated row name prefixes")
    p.add_argument("--out", help="also write the lines to this file")
    a = p.parse_args()
    lines = []

    def say(s):
        print(s, flush=True)
        lines.append(s)

    say(f"# bench/ops_shapes_bench.py {' '.join(sys.argv[1:])}")
    say(f"# {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC, "
        f"{platform.node()}, {os.cpu_count()} CPUs; device {a.device}; fraction = op GB/s / "
        "triad GB/s, medians of alternating timings")
    wanted = [w for w in a.only.split(",") if w]
    tri = ob.Triad(a.elements, a.device)
    bad = []
    for name, fn, want, nbytes in cases(a.device, a.elements):
        if wanted and not any(name.startswith(w) for w in wanted):
            continue
        fn()  # compile, tune
        ms, tms = ob.median_pair(lambda: ob.device_ms(fn), lambda: ob.device_ms(tri), a.reps)
        frac = (nbytes / ms) / (tri.bytes / tms)
        why = wrong(fn(), want(), name)  # the result, after the timing
        if why:
            bad.append(f"{name}: {why}")
        say(f"{line_key(name)}: {frac:.2f}  # {name}: {ms:.3f} ms, {nbytes / ms / 1e6:.1f} GB/s, "
            f"triad {tri.bytes / tms / 1e6:.1f} GB/s" + (f"; WRONG: {why}" if why else ""))
    if a.out:
        pathlib.Path(a.out).write_text("\n".join(lines) + "\n")
    if bad:
        raise SystemExit("ops_shapes_bench: wrong results: " + "; ".join(bad))


if __name__ == "__main__":
    main()
