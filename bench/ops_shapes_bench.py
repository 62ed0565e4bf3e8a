"""The op library's memory-bound ops at the shapes and dtypes users bring, not only the table's.

Usage: PYTHONPATH=python TL_LIB_DIR=build/lib python bench/ops_shapes_bench.py [--device cpu]
[--reps 7] [--only PREFIX,...] [--out bench/results/FILE.txt]

`ops_bench.py` times each op at one shape (rows of 1024 f32). This sweep times softmax,
layernorm, rmsnorm, sums along rows and columns, transpose and cumsum at rows of 768 (BERT and
GPT-2's width), 1000, 128 to 50257 (vocabularies), bf16 at three shapes, elementwise ops on flat,
broadcast and transposed operands, and cross-entropy over 32000 classes, each about 64 MiB of
f32 (or its bf16 half). Every row alternates the op with a triad over arrays of 16M f32 on the
same device, as ops_bench.py's rows of that many elements do (ops_bench.Triad: 192 MiB; medians
of `--reps`), and prints `name: fraction of the triad` lines: a
row far below its neighbours is a shape the library handles badly (session 40 found softmax of
rows of 768 at 0.11 and of 520 at 0.04). Bytes as the op needs them (inputs read once, outputs
written once). As in ops_bench.py, glibc keeps freed blocks, so that an op's output is not
fresh pages faulted in while its kernel runs.
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
import pathlib  # noqa: E402
import platform  # noqa: E402

import numpy as np  # noqa: E402

import tl.ops as ops  # noqa: E402
from tl import bf16  # noqa: E402

_spec = importlib.util.spec_from_file_location(
    "ops_bench", pathlib.Path(__file__).resolve().parent / "ops_bench.py")
ob = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(ob)

ELEMENTS = 16 * 2**20  # 64 MiB of f32
WIDTHS = (768, 1000, 4096, 8192, 32000, 50257, 256, 128)
BF16_WIDTHS = (1024, 4096, 768)


def cases(device):
    """(name, op, bytes moved): built lazily per width so that one shape's arrays are alive at
    a time."""
    rng = np.random.default_rng(0)

    def f(*s):
        return rng.standard_normal(s).astype(np.float32)

    def d(fn):
        return lambda: fn(device=device)

    for n in WIDTHS:
        x, w, b = f(ELEMENTS // n, n), f(n), f(n)
        s = f"f32 {x.shape[0]}x{n}"
        yield f"softmax {s}", d(lambda device: ops.softmax(x, device=device)), 2 * x.nbytes
        yield f"layernorm {s}", d(lambda device: ops.layernorm(x, w, b, device=device)), \
            2 * x.nbytes
        yield f"rmsnorm {s}", d(lambda device: ops.rmsnorm(x, w, device=device)), 2 * x.nbytes
        yield f"sum rows {s}", d(lambda device: ops.sum(x, axis=-1, device=device)), x.nbytes
        yield f"sum columns {s}", d(lambda device: ops.sum(x, axis=0, device=device)), x.nbytes
        yield f"transpose {s}", d(lambda device: ops.transpose(x, device=device)), 2 * x.nbytes
        yield f"cumsum {s}", d(lambda device: ops.cumsum(x, axis=-1, device=device)), 2 * x.nbytes
    for n in BF16_WIDTHS:
        x = bf16.array(f(ELEMENTS // n, n))
        w, b = bf16.array(f(n)), bf16.array(f(n))
        s = f"bf16 {x.shape[0]}x{n}"
        yield f"softmax {s}", d(lambda device: ops.softmax(x, device=device)), 2 * x.nbytes
        yield f"layernorm {s}", d(lambda device: ops.layernorm(x, w, b, device=device)), \
            2 * x.nbytes
        yield f"rmsnorm {s}", d(lambda device: ops.rmsnorm(x, w, device=device)), 2 * x.nbytes
        yield f"gelu {s}", d(lambda device: ops.gelu(x, device=device)), 2 * x.nbytes
        yield f"add {s}", d(lambda device: ops.add(x, x, device=device)), 3 * x.nbytes
        yield f"sum rows {s}", d(lambda device: ops.sum(x, axis=-1, device=device)), x.nbytes
        yield f"transpose {s}", d(lambda device: ops.transpose(x, device=device)), 2 * x.nbytes
    x, y = f(ELEMENTS), f(ELEMENTS)
    yield "add f32 flat 16M", d(lambda device: ops.add(x, y, device=device)), 3 * x.nbytes
    yield "silu f32 flat 16M", d(lambda device: ops.silu(x, device=device)), 2 * x.nbytes
    m, row = x.reshape(4096, 4096), f(4096)
    yield "add f32 4096x4096 + row", d(lambda device: ops.add(m, row, device=device)), \
        2 * m.nbytes
    t = y.reshape(4096, 4096).T
    yield "add f32 transposed views 4096x4096", d(lambda device: ops.add(t, t, device=device)), \
        2 * t.nbytes
    del x, y, m, t
    logits = f(2048, 32000)
    target = rng.integers(0, 32000, 2048).astype(np.int32)
    yield "cross_entropy f32 2048x32000", d(
        lambda device: ops.cross_entropy(logits, target, device=device)), logits.nbytes


def line_key(name):
    return "".join(ch if ch.isalnum() else "_" for ch in name).strip("_") + "_vs_triad"


def main():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--device", default="cpu")
    p.add_argument("--reps", type=int, default=7)
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
    tri = ob.Triad(ELEMENTS, a.device)
    for name, fn, nbytes in cases(a.device):
        if wanted and not any(name.startswith(w) for w in wanted):
            continue
        fn()  # compile, tune
        ms, tms = ob.median_pair(lambda: ob.device_ms(fn), lambda: ob.device_ms(tri), a.reps)
        frac = (nbytes / ms) / (tri.bytes / tms)
        say(f"{line_key(name)}: {frac:.2f}  # {name}: {ms:.3f} ms, {nbytes / ms / 1e6:.1f} GB/s, "
            f"triad {tri.bytes / tms / 1e6:.1f} GB/s")
    if a.out:
        pathlib.Path(a.out).write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
