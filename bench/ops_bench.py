#!/usr/bin/env python3
# tl.ops on a device against anchors measured in the same run: each memory-bound op against a
# STREAM triad run through the same device (the memory roofline), GEMM against OpenBLAS SGEMM
# at the same size, attention against the GEMM's fraction of the FLOP peak; numpy's time for the
# same op beside each, and PyTorch's op on the same device (cpu; cuda: cuBLAS SGEMM for GEMM)
# where installed; where the kit has the device's datasheet (npusim, cuda), each op's roofline
# bound from its figures and the op's fraction of it, beside the fraction of the declared memory
# peak. Prints a Markdown table and `name: value` lines; --out writes both.
# SPDX-License-Identifier: Apache-2.0
"""Usage: PYTHONPATH=python TL_LIB_DIR=build/lib python bench/ops_bench.py [--device cpu]
[--scale 1.0] [--reps 7] [--rounds N] [--only NAME,...] [--datasheet FILE]
[--out bench/results/FILE.txt].

Bytes are counted as the op needs them (inputs read once, outputs written once; STREAM's count
for the triad: 12 bytes per element), FLOPs as 2 M N K for GEMM and 4 B H S^2 D for attention.
Every row times the op and its anchor alternately (`--reps` times each) and reports medians, so
that the neighbours' load on a shared host weighs on both alike; the memory-bound and GEMM rows
do so in `--rounds` rounds over all their rows and report the round of the median fraction
(every round's in the last column), so that a slow spell of the host weighs on one round of each
row. Rows move between runs too (a large shared L3's state): compare runs, not rows of one.

The triad `a = b + s c` is a TL kernel on the same device (same worker threads, same launch
path): a one-line loop that the llvm-cpu backend fuses into one vector loop with non-temporal
stores past 32 MiB, which is what a C STREAM triad compiled with -O3 does (bench/HISTORY.md:
TL's vector add measured 1.0-1.2x the C triad of cpu_kernels_bench). No op can stream its bytes
faster than the triad streams its own, so op GB/s / triad GB/s is the fraction of the memory
roofline. The datasheet's roofline (tl-conform's, conformance/src/suite_ops.cpp) bounds an op by
the largest of its bytes at the memory bandwidth, its FLOPs at the f32 peak and its vector
unit's time (vector operations and exponentials at their rates, added: one unit runs both),
with the vector work per element from tl.ops.cases.WORK, the counts the kit's cases use.
OpenBLAS is numpy's BLAS (scipy-openblas; its core type and threads are printed), run
with OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE removed from the environment before it loads."""
import os
import sys

# Before numpy (and its OpenBLAS) loads: this machine's profile pins OpenBLAS to a generic core,
# which is not the library as users run it. glibc's malloc: keep freed blocks (no mmap per large
# array), so that an op's output is not fresh pages faulted in while the kernel runs; the same
# for the anchors (numpy allocates its results the same way).
for _v in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE"):
    os.environ.pop(_v, None)
# OpenBLAS's workers sleep right after a call instead of spinning ~0.1 s on the core the next
# row's TL run needs (as bench-cpu does; bench/CMakeLists.txt says what it did there).
os.environ.setdefault("OPENBLAS_THREAD_TIMEOUT", "4")
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")  # the same for PyTorch's OpenMP workers
# --threads N: the cpu device's workers and OpenBLAS's threads alike (set before either starts).
for _i, _a in enumerate(sys.argv):
    if _a.startswith("--threads"):
        _n = _a.split("=", 1)[1] if "=" in _a else sys.argv[_i + 1]
        os.environ["TL_CPU_THREADS"] = os.environ["OPENBLAS_NUM_THREADS"] = _n
if os.environ.get("MALLOC_MMAP_THRESHOLD_") is None and __name__ == "__main__":
    os.environ["MALLOC_MMAP_THRESHOLD_"] = str(1 << 30)
    os.environ["MALLOC_TRIM_THRESHOLD_"] = str(1 << 31)
    os.execv(sys.executable, [sys.executable] + sys.argv)

import argparse  # noqa: E402
import ctypes  # noqa: E402
import datetime  # noqa: E402
import glob  # noqa: E402
import math  # noqa: E402
import platform  # noqa: E402
import statistics  # noqa: E402
import time  # noqa: E402

import json  # noqa: E402
import pathlib  # noqa: E402

import numpy as np  # noqa: E402

try:  # PyTorch's CPU ops: the anchors for softmax, the norms and attention, if installed
    import torch  # noqa: E402
    import torch.nn.functional as F  # noqa: E402
except ImportError:
    torch = None

import tl  # noqa: E402
import tl.ops as ops  # noqa: E402
from tl.ops import reference  # noqa: E402
from tl.ops.cases import work  # noqa: E402
from tl import jit, runtime  # noqa: E402

_times = []
_run = jit.Kernel.run


def _timed_run(self, grid, *args, _timed=False, **kwargs):
    ms = _run(self, grid, *args, _timed=True, **kwargs)
    if not _timed:
        _times.append(ms)
    return ms if _timed else None


def device_ms(fn):
    """The device time of one call of fn: every launch it makes, summed (HAL events)."""
    jit.Kernel.run = _timed_run
    try:
        _times.clear()
        fn()
        return sum(_times)
    finally:
        jit.Kernel.run = _run


def host_ms(fn):
    t0 = time.perf_counter()
    fn()
    return (time.perf_counter() - t0) * 1e3


@tl.kernel
def triad_kernel(b: tl.tensor, c: tl.tensor, a: tl.tensor, s: tl.float32, BLOCK: tl.constexpr):
    """a = b + s c (STREAM's triad)."""
    i = tl.program_id(0) * BLOCK
    tl.store(a + (i,), tl.load(b + (i,), (BLOCK,)) + s * tl.load(c + (i,), (BLOCK,)))


class Triad:
    """The memory roofline: a triad over arrays of `n` f32 on `device`."""

    BLOCK = 8192  # what vector_add_cpu.tlir uses (bench/HISTORY.md's sweep)

    def __init__(self, n, device):
        # 64-byte aligned (numpy's own large arrays start 16 bytes past a page): llvm-cpu streams
        # `a` with non-temporal stores only from aligned blocks, as STREAM's triad does
        self.b, self.c, self.a = (ops._common.aligned_empty(n, np.float32) for _ in range(3))
        self.b[:], self.c[:], self.a[:] = 1.0, 2.0, 0.0
        self.device, self.bytes = device, 12 * n
        self()  # compile, touch the pages
        if not np.array_equal(self.a[:: n // 7 + 1], np.full(len(self.a[:: n // 7 + 1]), 7.0)):
            raise SystemExit("ops_bench: the triad computed a wrong result")

    def __call__(self):
        triad_kernel[(tl.cdiv(self.a.size, self.BLOCK),)](self.b, self.c, self.a, 3.0,
                                                          device=self.device, BLOCK=self.BLOCK)


def torch_device(device):
    """PyTorch's device for ours: "cpu", "cuda" where torch has CUDA; else None (no anchor)."""
    if torch is None:
        return None
    if device == "cpu":
        return "cpu"
    if device == "cuda" and torch.cuda.is_available():
        torch.backends.cuda.matmul.allow_tf32 = False  # f32 against f32: cuBLAS SGEMM
        torch.backends.cudnn.allow_tf32 = False
        return "cuda"
    return None


def torch_ms(fn, tdev):
    """PyTorch's time for fn: the host clock on cpu, CUDA events around it on cuda."""
    if tdev != "cuda":
        return host_ms(fn)
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    fn()
    end.record()
    end.synchronize()
    return start.elapsed_time(end)


def torch_cases(x, y, w, bias, tdev):
    """PyTorch's op for the rows that have one, on `tdev` (cpu: zero-copy views of the same
    arrays; cuda: copies on the GPU)."""
    if tdev is None:
        return {}
    tx, ty, tw, tb = (torch.from_numpy(a).to(tdev) for a in (x, y, w, bias))
    return {"add": lambda: tx + ty, "gelu (erf)": lambda: F.gelu(tx),
            "gelu (tanh)": lambda: F.gelu(tx, approximate="tanh"), "silu": lambda: F.silu(tx),
            "swiglu": lambda: F.silu(tx) * ty, "softmax": lambda: torch.softmax(tx, -1),
            "log_softmax": lambda: torch.log_softmax(tx, -1),
            "layernorm": lambda: F.layer_norm(tx, (tx.shape[-1],), tw, tb),
            "rmsnorm": lambda: F.rms_norm(tx, (tx.shape[-1],), tw, 1e-6),
            "sum (rows)": lambda: tx.sum(1), "sum (columns)": lambda: tx.sum(0),
            "max (rows)": lambda: tx.amax(1), "cumsum (rows)": lambda: torch.cumsum(tx, 1),
            "mean (rows)": lambda: tx.mean(1), "var (rows)": lambda: tx.var(1, correction=0),
            "argmax (rows)": lambda: tx.argmax(1), "gemv": lambda: tx @ tw,
            "transpose": lambda: tx.t().contiguous()}


def memory_cases(scale, rng, tdev):
    """(name, op(device), numpy or None, bytes, vector work, PyTorch or None): each
    memory-bound op family on about 64 MiB inputs (rows of 1024: the width of a small
    transformer's hidden state); the vector work from tl.ops.cases.work, as the kit counts it
    (data movement: none)."""
    f = lambda *s: rng.standard_normal(s).astype(np.float32)  # noqa: E731
    rows = max(64, int(16384 * scale))
    x, y = f(rows, 1024), f(rows, 1024)
    w, bias = f(1024), f(1024)
    e, n = x.nbytes, x.size
    none = (0, 0, 0)
    # concat: two halves into one array of x's size (two arrays: the second read of one array
    # came from the caches, concat read 1.1-1.3x the triad until session 34)
    xs, xs2 = f(rows // 2, 1024), f(rows // 2, 1024)
    s_len = 2048
    xr = f(max(1, rows // s_len), 16, s_len, 64)[..., :64]  # (B, H, S, D): rows x 1024 floats
    cos, sin = ops.rope_tables(s_len, 64)
    table = f(32000, 1024)[: max(64, rows)]  # a vocabulary's rows, gathered
    ids = rng.integers(0, table.shape[0], rows).astype(np.int32)
    xc, xc2 = np.ascontiguousarray(x[:, :512]), np.ascontiguousarray(y[:, 512:])

    def np_softmax():
        m = x.max(1, keepdims=True)
        z = np.exp(x - m)
        return z / z.sum(1, keepdims=True)

    def np_log_softmax():
        z = x - x.max(1, keepdims=True)
        return z - np.log(np.exp(z).sum(1, keepdims=True))

    def np_layernorm():
        mu = x.mean(1, keepdims=True)
        d = x - mu
        return d / np.sqrt((d * d).mean(1, keepdims=True) + 1e-5) * w + bias

    def np_rmsnorm():
        return x / np.sqrt((x * x).mean(1, keepdims=True) + 1e-6) * w

    def np_rope():
        h = xr.shape[-1] // 2
        a, b = xr[..., :h], xr[..., h:]
        return np.concatenate([a * cos - b * sin, b * cos + a * sin], -1)

    def np_quantize():
        s = np.abs(x).max(1, keepdims=True) / 127
        return np.rint(x / s).astype(np.int8), s

    # quantize int8: the row's absmax, then the scaled quantization (one kernel or two)
    quant = tuple(a + b for a, b in zip(work("absmax", n), work("quantize", n)))
    tc = torch_cases(x, y, w, bias, tdev)
    return [r + (tc.get(r[0]),) for r in [
        ("add", lambda d: ops.add(x, y, device=d), lambda: x + y, 3 * e, work("add", n)),
        ("gelu (erf)", lambda d: ops.gelu(x, device=d), None, 2 * e, work("gelu", n)),
        ("gelu (tanh)", lambda d: ops.gelu(x, approximate="tanh", device=d), None, 2 * e,
         work("gelu_tanh", n)),
        ("silu", lambda d: ops.silu(x, device=d), lambda: x / (1 + np.exp(-x)), 2 * e,
         work("silu", n)),
        ("swiglu", lambda d: ops.swiglu(x, y, device=d), None, 3 * e, work("swiglu", n)),
        ("softmax", lambda d: ops.softmax(x, device=d), np_softmax, 2 * e, work("softmax", n)),
        ("log_softmax", lambda d: ops.log_softmax(x, device=d), np_log_softmax, 2 * e,
         work("log_softmax", n)),
        ("layernorm", lambda d: ops.layernorm(x, w, bias, device=d), np_layernorm, 2 * e,
         work("layernorm", n)),
        ("rmsnorm", lambda d: ops.rmsnorm(x, w, device=d), np_rmsnorm, 2 * e,
         work("rmsnorm", n)),
        ("sum (rows)", lambda d: ops.sum(x, device=d), lambda: x.sum(1), e, work("sum", n)),
        ("sum (columns)", lambda d: ops.sum(x, axis=0, device=d), lambda: x.sum(0), e,
         work("sum", n)),
        ("max (rows)", lambda d: ops.max(x, device=d), lambda: x.max(1), e, work("max", n)),
        ("mean (rows)", lambda d: ops.mean(x, device=d), lambda: x.mean(1), e, work("mean", n)),
        ("var (rows)", lambda d: ops.var(x, device=d), lambda: x.var(1), e, work("var", n)),
        ("argmax (rows)", lambda d: ops.argmax(x, device=d), lambda: x.argmax(1), e,
         work("argmax", n)),
        ("gemv", lambda d: ops.gemv(x, w, device=d), lambda: x @ w, e + w.nbytes + rows * 4,
         (2 * n, 0, 0)),
        ("cumsum (rows)", lambda d: ops.cumsum(x, device=d), lambda: np.cumsum(x, 1), 2 * e,
         work("cumsum", n)),
        ("transpose", lambda d: ops.transpose(x, device=d),
         lambda: np.ascontiguousarray(x.T), 2 * e, none),
        ("rope S=2048 D=64", lambda d: ops.rope(xr, cos, sin, device=d), np_rope,
         2 * xr.nbytes + cos.nbytes + sin.nbytes, work("rope", xr.size)),
        ("embedding", lambda d: ops.embedding(table, ids, device=d), lambda: table[ids],
         2 * rows * 1024 * 4 + ids.nbytes, none),
        ("concat", lambda d: ops.concat([xs, xs2], device=d),
         lambda: np.concatenate([xs, xs2]), 4 * xs.nbytes, none),
        ("concat (columns)", lambda d: ops.concat([xc, xc2], axis=1, device=d),
         lambda: np.concatenate([xc, xc2], 1), 4 * xc.nbytes, none),
        ("quantize int8", lambda d: ops.quantize_int8(x, device=d), np_quantize,
         e + e // 4 + rows * 4, quant),
    ]]


DATASHEETS = pathlib.Path(__file__).resolve().parents[1] / "conformance/data/datasheets"


def datasheet(device, name, path=None):
    """(figures, why not): the kit's datasheet of `device`, as tl-conform picks it, when it
    declares the device named `name` (a GPU's instance suffix " (cuda:N)" aside): `path`, else
    the data/datasheets/<device>-<model>.json that declares it (cuda: an H100 beside the
    H200's cuda.json), else data/datasheets/<device>.json; figures None and the reason
    otherwise."""
    model = name[:name.rfind(f" ({device}:")] if name.endswith(")") and \
        f" ({device}:" in name else name
    if path is None:
        for candidate in sorted(DATASHEETS.glob(f"{device}-*.json")):
            if json.loads(candidate.read_text()).get("device") in (name, model):
                path = candidate
                break
    path = pathlib.Path(path) if path else DATASHEETS / f"{device}.json"
    if not path.is_file():
        return None, f"no datasheet {os.path.relpath(path, DATASHEETS.parents[2])}"
    sheet = json.loads(path.read_text())
    if sheet.get("device") not in (name, model):
        return None, f"{path} is for {sheet.get('device')}, the device is {name}"
    sheet["path"] = str(path)
    return sheet, ""


def roofline(sheet, nbytes, flops=0.0, vwork=(0, 0, 0)):
    """(seconds, resource): the least time the work needs on the datasheet's figures, and what
    bounds it ("memory", "compute" or "vector"), as tl-conform's roofline draws it: the
    largest of the bytes at the memory bandwidth, the FLOPs at the f32 peak and the vector
    unit's time, its simple operations, exponentials and special functions (vwork, as
    tl.ops.cases.work counts them) added: one unit runs them all; special functions at the
    exponentials' rate where the datasheet declares none of their own; a datasheet without
    vector rates has no vector bound. Ties go to memory, as there."""
    vops, exps, specials = vwork
    times = {"memory": nbytes / sheet["memory_bandwidth_bytes_per_s"],
             "compute": flops / sheet["peak_flops"]["f32"], "vector": 0.0}
    if sheet.get("vector_ops_per_s"):
        times["vector"] += vops / sheet["vector_ops_per_s"]
    if sheet.get("exp_ops_per_s"):
        times["vector"] += exps / sheet["exp_ops_per_s"]
    special_rate = sheet.get("special_ops_per_s", sheet.get("exp_ops_per_s"))
    if special_rate:
        times["vector"] += specials / special_rate
    resource = max(times, key=times.get)  # the first of equals: memory
    return times[resource], resource


def bound_cells(sheet, ms, nbytes, flops=0.0, vwork=(0, 0, 0)):
    """The table's roofline cells ("vector 0.123" ms, fraction) and the fraction (None
    without a datasheet)."""
    if sheet is None:
        return "- | -", None
    s, resource = roofline(sheet, nbytes, flops, vwork)
    frac = s * 1e3 / ms
    return f"{resource} {s * 1e3:.4g} | {frac:.2f}", frac


def median_pair(op, anchor, reps):
    """Medians of `reps` alternating timings of op and anchor (ms)."""
    a, b = [], []
    for _ in range(reps):
        a.append(op())
        b.append(anchor())
    return statistics.median(a), statistics.median(b)


def median_round(pairs, nbytes, anchor_bytes):
    """(op ms, anchor ms, fractions): of rounds' (op ms, anchor ms) medians moving `nbytes` and
    `anchor_bytes`, the round of the median fraction (the lower one of an even count), so that
    the row's times and fraction come from one round; and every round's fraction, ascending."""
    fracs = sorted((nbytes * t / (anchor_bytes * ms), ms, t) for ms, t in pairs)
    _, ms, t = fracs[(len(fracs) - 1) // 2]
    return ms, t, [f for f, _, _ in fracs]


def openblas():
    """(core name, threads) of numpy's OpenBLAS, read from the loaded library."""
    libs = glob.glob(os.path.join(os.path.dirname(np.__file__) + ".libs", "libscipy_openblas*"))
    if not libs:
        return "unknown", 0
    lib = ctypes.CDLL(libs[0])
    for suffix in ("64_", ""):
        name = getattr(lib, f"scipy_openblas_get_corename{suffix}", None)
        if name is not None:
            name.restype = ctypes.c_char_p
            return name().decode(), getattr(lib, f"scipy_openblas_get_num_threads{suffix}")()
    return "unknown", 0


def load():
    return " ".join(open("/proc/loadavg").read().split()[:3])


def last_level_cache():
    """The host's largest data cache in bytes, as Linux reports it (a VM's: the host's shared
    L3, neighbours' lines in it), or 0 where none is listed."""
    import glob
    sizes = [0]
    for f in glob.glob("/sys/devices/system/cpu/cpu0/cache/index*/size"):
        kind = open(os.path.join(os.path.dirname(f), "type")).read().strip()
        text = open(f).read().strip()
        if kind != "Instruction" and text[:-1].isdigit():
            sizes.append(int(text[:-1]) << {"K": 10, "M": 20, "G": 30}.get(text[-1], 0))
    return max(sizes)


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
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--device", default="cpu")
    p.add_argument("--scale", type=float, default=1.0, help="memory-bound sizes (1: 64 MiB)")
    p.add_argument("--reps", type=int, default=7)
    p.add_argument("--rounds", type=int, help="memory-bound and GEMM rows: rounds over them, "
                   "each row's figures from its median round (default: 3 on cpu, 1 elsewhere)")
    p.add_argument("--only", default="", help="comma-separated row names (prefixes)")
    p.add_argument("--gemm", default="512,1024,2048", help="GEMM sizes M = N = K")
    p.add_argument("--conv", help="conv2d's N, C, H = W (3 x 3, padding 1: C -> C channels at "
                   "stride 1, and C -> 2C at stride 2; default 8,64,56, none on simulated "
                   "devices; empty: none)")
    p.add_argument("--seq", type=int, default=2048, help="attention's sequence length")
    p.add_argument("--head-dims", default="64", help="attention's head dimensions D")
    p.add_argument("--heads", type=int, default=8,
                   help="attention's heads (npusim: 2 simulate S = 2048 in minutes)")
    p.add_argument("--threads", type=int, help="cpu worker and OpenBLAS threads (default: all)")
    p.add_argument("--datasheet", help="the device's datasheet (default: tl-conform's, "
                   "conformance/data/datasheets/DEVICE.json)")
    p.add_argument("--tune", action="append", default=[], metavar="NAME=[V, ...]",
                   help="time the memory-bound rows under each of these values of the "
                   "tl.ops tuning entry NAME (a Python list; repeatable: every combination), "
                   "each row named with its values")
    p.add_argument("--out", help="also write the table and the lines to this file")
    a = p.parse_args()
    sweep = tune_sweep(a.tune, p.error)
    if a.rounds is None:
        a.rounds = 3 if a.device == "cpu" else 1
    if a.rounds < 1 or a.reps < 1:
        p.error("--rounds and --reps take 1 or more")
    lines = []

    def say(s=""):
        print(s, flush=True)
        lines.append(s)

    def wanted(name):
        return not a.only or any(name.startswith(w) for w in a.only.split(","))

    info = runtime.device(a.device).info
    cpu = a.device == "cpu"
    tdev = torch_device(a.device)  # PyTorch's op on the same device, where it has one
    peak = info["peak_flops"][tl.float32.code]
    if a.threads and cpu:  # the declared peak counts every core
        peak *= min(1.0, a.threads / info["compute_units"])
    core, blas_threads = openblas() if cpu else ("-", 0)
    say(f"# bench/ops_bench.py {' '.join(sys.argv[1:])}")
    say(f"# {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC, {platform.node()}"
        f", {os.cpu_count()} CPUs, load {load()} at the start")
    say(f"device {a.device} ({info['name']}): {info['compute_units']} compute units, declared "
        f"peaks {info['peak_bandwidth'] / 1e9:.1f} GB/s (copy measured at open), "
        f"{peak / 1e9:.1f} GFLOP/s f32" + (f" on {a.threads} thread(s)" if a.threads else "")
        + (" (simulated time)" if info["simulated_time"] else ""))
    if tdev == "cuda":
        say(f"anchors: triad on the device; PyTorch {torch.__version__} on "
            f"{torch.cuda.get_device_name()} (CUDA events; TF32 off)")
    if cpu:
        tinfo = "not installed"
        if torch is not None:
            torch.set_num_threads(a.threads or info["compute_units"])
            tinfo = f"{torch.__version__}, {torch.get_num_threads()} threads"
        say(f"anchors: triad on the device; OpenBLAS {core}, {blas_threads} threads (numpy's); "
            f"PyTorch {tinfo}")
    if cpu and (llc := last_level_cache()):
        # STREAM's rule: each array at least 4x the caches, or the triad and the ops read
        # partly from the cache (session 34's and 35's Xeon, L3 480 MiB: the triad read 33-47
        # GB/s at 64 MiB from run to run, 34-37 at 512 MiB)
        arrays = max(64, int(16384 * a.scale)) * 1024 * 4
        say(f"memory rows: {arrays / 2**20:.0f} MiB arrays, last-level cache "
            f"{llc / 2**20:.0f} MiB" + ("" if arrays >= 4 * llc else
                                        f" (under 4x it: partly cache-served; --scale "
                                        f"{-(-4 * llc // (16384 * 1024 * 4))} for DRAM)"))
    sheet, why = datasheet(a.device, info["name"], a.datasheet)
    if sheet:
        say(f"roofline: {os.path.relpath(sheet['path'], DATASHEETS.parents[2])}: memory "
            f"{sheet['memory_bandwidth_bytes_per_s'] / 1e9:.1f} GB/s, f32 "
            f"{sheet['peak_flops']['f32'] / 1e9:.1f} GFLOP/s, vector "
            f"{sheet.get('vector_ops_per_s', 0) / 1e9:.1f} Gop/s, exp "
            f"{sheet.get('exp_ops_per_s', 0) / 1e9:.1f} G/s, special functions "
            f"{sheet.get('special_ops_per_s', sheet.get('exp_ops_per_s', 0)) / 1e9:.1f} G/s; "
            "the bound column names the "
            "resource and its time, the next the op's fraction of it")
    else:
        say(f"roofline: none ({why})")
    rng = np.random.default_rng(0)
    results, rooflines = {}, {}

    # Memory-bound ops against the triad, in rounds: every row once a round, so that a slow
    # spell of the shared host falls on one round of each row, not on all of one row's timings,
    # and the last column shows how far a row moves within the run. (Session 36's Xeon: the
    # rounds of a row agreed to 0.01-0.05; between processes minutes apart whole groups of rows
    # moved together by up to 0.3, softmax 0.59-0.99: the state of the L3 it shares with other
    # tenants, which rounds within one run do not average out.)
    rows = memory_cases(a.scale, rng, tdev)
    triad = Triad(rows[0][3] // 12, a.device)  # add's element count: x's
    timed = []
    for (name, fn, ref, nbytes, vwork, tref), combo in (
            (r, combo) for r in rows for combo in sweep):
        if not wanted(name):
            continue
        if combo:  # the row under these tuning values, as its own row
            name += " [" + " ".join(f"{k}={v!r}" for k, v in combo.items()) + "]"
            fn = (lambda f, tv: lambda d: _tuned(f, d, tv))(fn, combo)
            ref = tref = None
        fn(a.device)  # trace, compile, autotune; first touch of the output pages
        timed.append((name, fn, ref, nbytes, vwork, tref, []))
    for _ in range(a.rounds):
        for name, fn, *_, pairs in timed:
            pairs.append(median_pair(lambda: device_ms(lambda: fn(a.device)),
                                     lambda: device_ms(triad), a.reps))
    say()
    say("| op | MiB moved | device ms | GB/s | triad GB/s | vs triad | vs declared peak "
        "| bound ms | vs bound | numpy ms | PyTorch ms | rounds: vs triad |")
    say("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for name, fn, ref, nbytes, vwork, tref, pairs in timed:
        ms, tms, fracs = median_round(pairs, nbytes, triad.bytes)
        # numpy and PyTorch each timed after a triad too, from the same cold caches as the op:
        # back to back, a run found up to half of its 64 MiB input in the 32 MiB L3 the last
        # run left (Zen 4 host: a hand-written C row sum 1.28 ms after itself, 1.9 after the
        # triad or any other 192 MiB read; session 27)
        ref_ms = median_pair(lambda: host_ms(ref), lambda: device_ms(triad), a.reps)[0] \
            if ref and cpu else None
        t_ms = None
        if tref and tdev:
            tref()  # warm-up (CUDA: the kernel's first load)
            t_ms = median_pair(lambda: torch_ms(tref, tdev), lambda: device_ms(triad),
                               a.reps)[0]
        gbs, tgbs = nbytes / ms / 1e6, triad.bytes / tms / 1e6
        results[name] = gbs / tgbs
        cells, rooflines[name] = bound_cells(sheet, ms, nbytes, vwork=vwork)
        say(f"| {name} | {nbytes / 2**20:.0f} | {ms:.3f} | {gbs:.1f} | {tgbs:.1f} | "
            f"{gbs / tgbs:.2f} | {gbs * 1e9 / info['peak_bandwidth']:.2f} | {cells} | "
            f"{'-' if ref_ms is None else f'{ref_ms:.3f}'} | "
            f"{'-' if t_ms is None else f'{t_ms:.3f}'} | "
            f"{' '.join(f'{f:.2f}' for f in fracs)} |")

    # GEMM against OpenBLAS, attention against the GEMM's fraction of the peak. GEMM in rounds
    # too (session 36's Xeon: right after OpenBLAS, one round of 21 runs in eight took TL's 512^3
    # at its one-thread time, 2.0 ms against 1.1)
    say()
    say("| op | device ms | GFLOP/s | fraction of peak | bound ms | vs bound | anchor ms "
        "| vs anchor | PyTorch ms | rounds: vs anchor |")
    say("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    gemm_frac, gemms = {}, []
    for n in (int(s) for s in a.gemm.split(",") if s):
        if not wanted(f"gemm {n}"):
            continue
        x, y = rng.standard_normal((n, n), np.float32), rng.standard_normal((n, n), np.float32)
        got = ops.gemm(x, y, device=a.device)
        err = np.abs(got - x @ y).max() / np.abs(x @ y).max()
        if not err < 1e-4:
            raise SystemExit(f"ops_bench: gemm {n} is wrong (relative error {err:.2e})")
        gemms.append((n, x, y, []))
    for _ in range(a.rounds):
        for n, x, y, pairs in gemms:
            pairs.append(median_pair(lambda: device_ms(lambda: ops.gemm(x, y, device=a.device)),
                                     lambda: host_ms(lambda: x @ y) if cpu else 0.0, a.reps))
    for n, x, y, pairs in gemms:
        name = f"gemm {n}"
        ms, bms, fracs = median_round(pairs, 1, 1)  # the anchor's time over TL's
        flops = 2.0 * n ** 3
        gemm_frac[n] = flops / (ms / 1e3) / peak
        results[name] = bms / ms if cpu else gemm_frac[n]
        label = name + (" (vs OpenBLAS)" if cpu else " (PyTorch: cuBLAS SGEMM, no TF32)"
                        if tdev == "cuda" else "")
        tms = "-"
        # the anchor's cells: OpenBLAS on cpu, cuBLAS on cuda, none elsewhere
        anchor = f"{bms:.3f} | {bms / ms:.2f}" if cpu else "- | -"
        if tdev:
            tx, ty = torch.from_numpy(x).to(tdev), torch.from_numpy(y).to(tdev)
            tx @ ty  # warm-up
            t_ms = statistics.median(torch_ms(lambda: tx @ ty, tdev) for _ in range(a.reps))
            tms = f"{t_ms:.3f}"
            if tdev == "cuda":  # cuBLAS SGEMM: the anchor on cuda
                results[name + " (PyTorch)"] = t_ms / ms
                anchor = f"{t_ms:.3f} | {t_ms / ms:.2f}"
        # a plain product: no elementwise work
        cells, rooflines[name] = bound_cells(sheet, ms, 3 * x.nbytes, flops)
        rounds = " ".join(f"{f:.2f}" for f in fracs) if cpu else "-"
        say(f"| {label} | {ms:.3f} | {flops / ms / 1e6:.1f} | {gemm_frac[n]:.2f} | {cells} | "
            f"{anchor} | {tms} | {rounds} |")
    if not cpu and a.device == "npusim" and wanted("gemm") and a.gemm:
        # The same-run anchor of the tnpu GEMM: the hand-written kernel (K <= 1024).
        n = 1024
        ms = tnpu_gemm_anchor(a.device, n, a.reps)
        frac = 2.0 * n ** 3 / (ms / 1e3) / peak
        results[f"gemm_f32_tnpu.tlir {n}"] = frac
        cells, _ = bound_cells(sheet, ms, 3 * 4 * n * n, 2.0 * n ** 3)
        say(f"| gemm_f32_tnpu.tlir {n} (hand-written anchor) | {ms:.3f} | "
            f"{2.0 * n ** 3 / ms / 1e6:.1f} | {frac:.2f} | {cells} | - | - | - | - |")
    if a.conv is None:  # 1.85 GFLOP: minutes of simulated time
        a.conv = "" if info["simulated_time"] else "8,64,56"
    if a.conv and wanted("conv2d"):
        for stride in (1, 2):
            conv_row(a, stride, rng, tdev, peak, results, say, sheet, rooflines)
    s = a.seq
    for d in (int(x) for x in a.head_dims.split(",") if x):
        attention_row(a, s, d, rng, cpu, tdev, peak, gemm_frac, results, say, wanted, sheet,
                      rooflines)

    say()
    say(f"# load {load()} at the end; medians of {a.reps} alternating runs per row and round "
        f"({a.rounds} round(s) of the memory-bound and GEMM rows)")
    for name, r in results.items():
        say(f"{line_key(name)}_vs_anchor: {r:.3f}")
    for name, r in rooflines.items():
        if r is not None:
            say(f"{line_key(name)}_vs_roofline: {r:.3f}")
    # The attention bar: its fraction of its own roofline (the vector unit bounds it on
    # the tnpu) against the largest GEMM's fraction of its roofline, both from this run.
    gemms = [n for n in rooflines if n.startswith("gemm ") and rooflines[n] is not None]
    for name, r in rooflines.items():
        if name.startswith("attention") and r is not None and gemms:
            big = max(gemms, key=lambda n: int(n.split()[1]))
            say(f"{line_key(name)}_roofline_vs_{line_key(big)}_roofline: "
                f"{r / rooflines[big]:.3f}")
    if a.out:
        with open(a.out, "w") as fh:
            fh.write("\n".join(lines) + "\n")


def line_key(name):
    """A row's name as a `name: value` line's key ("sum (rows)" -> "sum_rows", "sum (columns)
    [axis_split=4]" -> "sum_columns_axis_split4")."""
    name = name.replace(" [", "_").replace("]", "").replace("'", "").replace(", ", "x")
    return (name.replace(" (", "_").replace(")", "").replace("(", "").replace(" ", "_")
            .replace("=", ""))


def tune_sweep(specs, error):
    """The combinations of --tune's values: [{}] without any; each NAME must be a tl.ops
    tuning entry and its values a non-empty Python list."""
    import ast
    import itertools
    names, values = [], []
    for spec in specs:
        name, _, text = spec.partition("=")
        if name not in ops._common.TUNING:
            error(f"--tune {spec}: no tuning entry '{name}' (entries: "
                  f"{', '.join(sorted(ops._common.TUNING))})")
        try:
            vals = ast.literal_eval(text)
        except (ValueError, SyntaxError):
            vals = None
        if not isinstance(vals, list) or not vals:
            error(f"--tune {spec}: expected NAME=[value, ...], a non-empty Python list")
        names.append(name)
        values.append(vals)
    return [dict(zip(names, combo)) for combo in itertools.product(*values)]


def _tuned(fn, device, values):
    with ops._common.tuning_override(**values):
        return fn(device)


def conv_row(a, stride, rng, tdev, peak, results, say, sheet, rooflines):
    """conv2d 3 x 3 of N x C x H x H images, padding 1: C -> C channels at stride 1, C -> 2C at
    stride 2 (a ResNet stage's first layer), against PyTorch's (oneDNN on cpu, cuDNN on cuda)
    where it runs on the device; checked against it (or the fp64 reference) first."""
    n, ch, hw = (int(v) for v in a.conv.split(","))
    oc = ch * stride
    name = f"conv2d {n}x{ch}x{hw}x{hw} 3x3" + ("" if stride == 1 else f" s{stride} to {oc}")
    x = rng.standard_normal((n, ch, hw, hw), np.float32)
    w = rng.standard_normal((oc, ch, 3, 3), np.float32) / 24
    got = ops.conv2d(x, w, stride=stride, padding=1, device=a.device)
    if tdev:
        tx, tw = torch.from_numpy(x).to(tdev), torch.from_numpy(w).to(tdev)
        want = F.conv2d(tx, tw, stride=stride, padding=1).cpu().numpy()
    else:
        want = reference.conv2d(x, w, None, stride, 1)
    err = np.abs(got - want).max() / np.abs(want).max()
    if not err < 1e-4:
        raise SystemExit(f"ops_bench: {name} is wrong (relative error {err:.2e})")
    flops = 2.0 * got.size * ch * 9
    ms = statistics.median(
        device_ms(lambda: ops.conv2d(x, w, stride=stride, padding=1, device=a.device))
        for _ in range(a.reps))
    tms, ratio = "-", "-"
    if tdev:
        F.conv2d(tx, tw, stride=stride, padding=1)  # warm-up
        t_ms = statistics.median(
            torch_ms(lambda: F.conv2d(tx, tw, stride=stride, padding=1), tdev)
            for _ in range(a.reps))
        results[name + " (PyTorch)"] = t_ms / ms
        tms, ratio = f"{t_ms:.3f}", f"{t_ms / ms:.2f}"
    # x, w read once, out written once
    cells, rooflines[name] = bound_cells(sheet, ms, x.nbytes + w.nbytes + got.nbytes, flops)
    say(f"| {name} (anchor: PyTorch) | {ms:.3f} | {flops / ms / 1e6:.1f} | "
        f"{flops / (ms / 1e3) / peak:.2f} | {cells} | {tms} | {ratio} | {tms} | - |")


def attention_row(a, s, d, rng, cpu, tdev, peak, gemm_frac, results, say, wanted, sheet,
                  rooflines):
    """Attention forward at S = s, head dim d, against the largest GEMM's fraction of the peak."""
    name = f"attention S={s}" + ("" if d == 64 else f" D={d}")
    if wanted(name):
        bh = a.heads
        q, k, v = (rng.standard_normal((1, bh, s, d), np.float32) for _ in range(3))

        def np_attention():
            sc = q[0] @ k[0].transpose(0, 2, 1) / math.sqrt(d)
            p_ = np.exp(sc - sc.max(-1, keepdims=True))
            return (p_ / p_.sum(-1, keepdims=True)) @ v[0]
        got = ops.attention(q, k, v, device=a.device)
        err = np.abs(got[0] - np_attention()).max()
        if not err < 1e-4:
            raise SystemExit(f"ops_bench: attention is wrong (max error {err:.2e})")
        ms, nms = median_pair(lambda: device_ms(lambda: ops.attention(q, k, v, device=a.device)),
                              lambda: host_ms(np_attention) if cpu else 0.0, a.reps)
        flops = 4.0 * bh * s * s * d
        frac = flops / (ms / 1e3) / peak
        # Against the largest GEMM's fraction (2048^3: the closest in FLOPs and in run time;
        # small GEMMs swing most with the neighbours' load).
        big = gemm_frac[max(gemm_frac)] if gemm_frac else 0
        results[name] = frac / big if big else 0
        tms = "-"
        if tdev:
            tq, tk, tv = (torch.from_numpy(t).to(tdev) for t in (q, k, v))
            F.scaled_dot_product_attention(tq, tk, tv)  # warm-up
            tms = statistics.median(torch_ms(lambda: F.scaled_dot_product_attention(tq, tk, tv),
                                             tdev) for _ in range(a.reps))
            results[name + " (PyTorch)"] = tms / ms
            tms = f"{tms:.3f}"
        # q, k, v read once, out written once; the softmax's work per query-key pair
        cells, rooflines[name] = bound_cells(sheet, ms, 4 * q.nbytes, flops,
                                             work("attention", bh * s * s))
        say(f"| attention S={s} D={d} H={bh} (vs the largest GEMM's fraction; anchor ms: "
            f"numpy) | {ms:.3f} | {flops / ms / 1e6:.1f} | {frac:.2f} | {cells} | "
            f"{f'{nms:.3f}' if cpu else '-'} | {results[name]:.2f} | {tms} | - |")


if __name__ == "__main__":
    main()
