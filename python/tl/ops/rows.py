# Ops along the rows of a (rows, n) view, any n: softmax, log_softmax, layernorm, rmsnorm.
# Several rows per program; columns in chunks of BLOCK (one chunk when n <= BLOCK, then the row
# is read once: ONE_PASS).
# SPDX-License-Identifier: Apache-2.0
import math
import numbers

import numpy as np

import tl

from . import _common as c

MAX_BLOCK = 4096  # columns held at once; wider rows loop
MIN_CHUNK = 512  # the narrowest chunk of a wider row that divides it (row_tiles)

# Rows per program (at most ELEMS // BLOCK, ELEMS the device's `row_elements`), chosen per
# device by tl.autotune. Measured (bench/ops_bench.py, rows of 1024): on cpu one row per
# program streams best (softmax 0.42 -> 0.60, layernorm 0.36 -> 0.70 of the triad; the next
# row's prefetch and fewer broadcast lanes). On cpu only one row is tried (session 12, 2 vCPUs
# at load 10-16: BM = 1 at or below BM = 8 in every alternating pair, e.g. layernorm 53 vs 88
# ms, but the two timed at launch differ by less than the noise, and the autotuner had kept 8
# for softmax: 74.7 vs 73.3 ms, then 85 ms against 50-62). On npusim eight rows were 3-5x
# faster than one (fewer, larger DMA transfers), and 64 faster again: each vector command pays
# the pipeline's 8 cycles, 25 % of a 256-column subtraction over 8 rows (4096 x 1024 f32,
# session 25: softmax 0.167 -> 0.153 ms, layernorm 0.143 -> 0.122, rmsnorm 0.115 -> 0.080).
ROW_CONFIGS = [tl.Config({"BM": 1}), tl.Config({"BM": 8}),
               tl.Config({"BM": 1}, targets="llvm-cpu"),
               tl.Config({"BM": 8}, targets="tnpu"), tl.Config({"BM": 64}, targets="tnpu")]


def rows_per_program(bm, block, elements):
    """The rows a program of the row kernels takes: BM, capped at `elements` elements (the
    kernels' ELEMS)."""
    return min(bm, max(1, elements // block))


@tl.autotune(configs=ROW_CONFIGS, key=["x"])
@tl.kernel
def softmax_kernel(x: tl.tensor, out: tl.tensor, LOG: tl.constexpr, ONE_PASS: tl.constexpr,
                   BM: tl.constexpr, BLOCK: tl.constexpr, RECIP: tl.constexpr = False,
                   ELEMS: tl.constexpr = 8192):
    """Row softmax (LOG: log-softmax) with an online max and sum over chunks, in f32; a
    program per min(BM, ELEMS / BLOCK) rows (rows_per_program). RECIP (ONE_PASS): the
    exponentials times 1 / sum instead of divided by the sum (_common.TUNING
    "softmax_reciprocal": on the tnpu a division is 4 vector passes, a multiplication 1; one
    more rounding per element, within the softmax tolerance's n u)."""
    R = min(BM, max(1, ELEMS // BLOCK))
    r0 = tl.program_id(0) * R
    n = x.shape[1]
    if ONE_PASS:
        # a wider row would be cut at BLOCK columns: wrong, not slow (the generated one-pass
        # specializations are called by name, from C too)
        tl.device_assert(n <= BLOCK, "softmax_kernel ONE_PASS: the rows are wider than BLOCK")
        v = tl.load(x + (r0, 0), (R, BLOCK), other=-float("inf")).to(tl.float32)
        m = tl.max(v, axis=1)
        e = tl.exp(v - m[:, None])
        s = tl.sum(e, axis=1)
        if LOG:  # (v - m) - log(s): m + log(s) rounds log(s) to m's ulp (see below)
            tl.store(out + (r0, 0), (v - m[:, None]) - tl.log(s)[:, None])
        elif RECIP:
            tl.store(out + (r0, 0), e * (1.0 / s)[:, None])
        else:
            tl.store(out + (r0, 0), e / s[:, None])
    else:
        m = tl.full((R,), -float("inf"), tl.float32)
        s = tl.zeros((R,), tl.float32)
        for k in tl.range(0, n, BLOCK):
            v = tl.load(x + (r0, k), (R, BLOCK), other=-float("inf")).to(tl.float32)
            m_new = tl.maximum(m, tl.max(v, axis=1))
            s = s * tl.exp(m - m_new) + tl.sum(tl.exp(v - m_new[:, None]), axis=1)
            m = m_new
        # v - m is exact near the maximum; m + log(s) (the log-sum-exp) would round log(s) to
        # m's ulp: rows around 1e6 lost 0.03 of every log-softmax and 3% of every softmax.
        ls = tl.log(s)
        for k in tl.range(0, n, BLOCK):
            v = tl.load(x + (r0, k), (R, BLOCK)).to(tl.float32)
            if LOG:
                tl.store(out + (r0, k), (v - m[:, None]) - ls[:, None])
            else:
                tl.store(out + (r0, k), tl.exp((v - m[:, None]) - ls[:, None]))


@tl.autotune(configs=ROW_CONFIGS, key=["x"])
@tl.kernel
def norm_kernel(x: tl.tensor, w: tl.tensor, b: tl.tensor, out: tl.tensor, stats: tl.tensor,
                eps: tl.float32, RMS: tl.constexpr, HAS_W: tl.constexpr, HAS_B: tl.constexpr,
                ONE_PASS: tl.constexpr, BM: tl.constexpr, BLOCK: tl.constexpr,
                EVEN: tl.constexpr = False, FMA: tl.constexpr = False,
                ELEMS: tl.constexpr = 8192):
    """LayerNorm (two-pass mean and variance) or RMSNorm (RMS) of each row, in f32; stats
    (rows, 2) gets the mean (0 for RMSNorm) and 1/sigma of each row, for the backward.
    ONE_PASS (rows of at most BLOCK): the row is read once and kept. EVEN (n a multiple of
    BLOCK): no column past the row's end, so no mask (on cpu the mask cost 2/3 of the time).
    FMA (ONE_PASS, weight and bias): y * w + b as one fma (_common.TUNING "norm_fma": one
    vector pass instead of two on the tnpu; one rounding fewer).
    A program per min(BM, ELEMS / BLOCK) rows (rows_per_program)."""
    R = min(BM, max(1, ELEMS // BLOCK))
    r0 = tl.program_id(0) * R
    n = x.shape[1]
    if ONE_PASS:
        v = tl.load(x + (r0, 0), (R, BLOCK)).to(tl.float32)
        mean = tl.zeros((R,), tl.float32)
        d = v  # RMSNorm: no subtraction of the zero mean (a vector pass on the tnpu)
        if not RMS:
            mean = tl.sum(v, axis=1) / n
            d = v - mean[:, None]
        if not EVEN:
            d = tl.where((tl.arange(0, BLOCK) < n)[None, :], d, 0.0)
        rstd = tl.rsqrt(tl.sum(d * d, axis=1) / n + eps)
        y = d * rstd[:, None]
        if HAS_W and HAS_B and FMA:
            y = tl.fma(y, tl.load(w + (0,), (BLOCK,)).to(tl.float32)[None, :],
                       tl.load(b + (0,), (BLOCK,)).to(tl.float32)[None, :])
        else:
            if HAS_W:
                y = y * tl.load(w + (0,), (BLOCK,)).to(tl.float32)[None, :]
            if HAS_B:
                y = y + tl.load(b + (0,), (BLOCK,)).to(tl.float32)[None, :]
        tl.store(out + (r0, 0), y)
    else:
        mean = tl.zeros((R,), tl.float32)
        if not RMS:
            acc = tl.zeros((R,), tl.float32)
            for k in tl.range(0, n, BLOCK):
                acc = acc + tl.sum(tl.load(x + (r0, k), (R, BLOCK)).to(tl.float32), axis=1)
            mean = acc / n
        sq = tl.zeros((R,), tl.float32)
        for k in tl.range(0, n, BLOCK):
            v = tl.load(x + (r0, k), (R, BLOCK)).to(tl.float32)
            d = v - mean[:, None]
            if not EVEN:
                d = tl.where(((k + tl.arange(0, BLOCK)) < n)[None, :], d, 0.0)
            sq = sq + tl.sum(d * d, axis=1)
        rstd = tl.rsqrt(sq / n + eps)
        for k in tl.range(0, n, BLOCK):
            v = tl.load(x + (r0, k), (R, BLOCK)).to(tl.float32)
            y = (v - mean[:, None]) * rstd[:, None]
            if HAS_W:
                y = y * tl.load(w + (k,), (BLOCK,)).to(tl.float32)[None, :]
            if HAS_B:
                y = y + tl.load(b + (k,), (BLOCK,)).to(tl.float32)[None, :]
            tl.store(out + (r0, k), y)
    tl.store(stats + (r0, 0), tl.reshape(mean, (R, 1)))
    tl.store(stats + (r0, 1), tl.reshape(rstd, (R, 1)))


def row_tiles(rows, n, elements=8192, multiple=0, widest=MAX_BLOCK):
    """(BM, BLOCK, ONE_PASS) for rows of width n: up to MAX_BLOCK columns, `elements` elements
    (the device's `row_elements`, _common.TUNING); BLOCK = n where n is a multiple of
    `multiple` (the device's `row_block_multiple`) and at most MAX_BLOCK, or at most `widest`
    (the device's `row_one_pass_widest`); a wider such row in chunks that divide it (at least
    MIN_CHUNK: no ragged last chunk, so no mask on every chunk: layernorm on llvm-cpu, one
    process, three rounds, session 42: 524 x 32000 f32 in 4000-wide chunks 7.2-8.9 -> 6.3-6.7
    ms, 333 x 50304 7.2-7.9 -> 5.7-5.9); else a power of two."""
    if multiple and n % multiple == 0 and n > MAX_BLOCK:
        if n <= widest:
            return 1, n, True
        for block in range(MAX_BLOCK - MAX_BLOCK % multiple, MIN_CHUNK - 1, -multiple):
            if n % block == 0:
                return 1, block, False
    block = c.tile_width(n, 16, MAX_BLOCK, multiple)
    return (c.pow2(rows, 1, max(1, elements // block) if n <= block else 1), block,
            n <= block)


def _softmax(op, x, axis, device):
    x = c.float_array(op, "x", x, min_ndim=1)
    axis = c.axis_index(op, axis, x.ndim)
    if axis != x.ndim - 1:
        # Another axis: the op on a transposed copy, moved back.
        return np.moveaxis(_softmax(op, np.ascontiguousarray(np.moveaxis(x, axis, -1)), -1,
                                    device), -1, axis)
    out = c.empty(x.shape, x)
    if out.size == 0:
        return out
    x2, o2 = c.rows_view(x), c.rows_view(out)
    _, block, one = row_tiles(*x2.shape, multiple=c.tuned("row_block_multiple", device),
                              widest=c.tuned("row_one_pass_widest", device))
    elems = c.tuned("row_elements", device)
    grid = lambda meta: (  # noqa: E731
        tl.cdiv(x2.shape[0], rows_per_program(meta["BM"], block, elems)),)
    # Through c.device_args, as c.launch does (tl.torch's CUDA tensors replace their stand-ins).
    softmax_kernel[grid](*c.device_args(x2, o2), device=device or "cpu", LOG=op == "log_softmax",
                         ONE_PASS=one, BLOCK=block,
                         RECIP=c.tuned("softmax_reciprocal", device), ELEMS=elems)
    return out


def softmax(x, axis=-1, *, device=None):
    """exp(x - max) / sum(exp(x - max)) along `axis`, computed in f32."""
    return _softmax("softmax", x, axis, device)


def log_softmax(x, axis=-1, *, device=None):
    """x - logsumexp(x) along `axis`, computed in f32."""
    return _softmax("log_softmax", x, axis, device)


def _norm(op, x, weight, bias, eps, device, return_stats):
    x = c.float_array(op, "x", x, min_ndim=1)
    n = x.shape[-1]
    def param(name, p):  # as an array (a list, the other byte order: converted), checked
        if p is None:
            return None
        p = c.float_array(op, name, p, ndim=1)
        if p.shape != (n,):
            c.fail(op, name, f"expected shape ({n},) (x's last dimension), got {p.shape}")
        return p
    weight, bias = param("weight", weight), param("bias", bias)
    c.same_dtype(op, "x", x, weight=weight, bias=bias)
    if not (isinstance(eps, numbers.Real) and not isinstance(eps, (bool, np.bool_))
            and eps >= 0 and math.isfinite(eps)):
        c.fail(op, "eps", f"expected a finite number >= 0, got {eps!r}")
    out = c.empty(x.shape, x)
    x2, o2 = c.rows_view(x), c.rows_view(out)
    stats = c.zeros((x2.shape[0], 2), np.float32)
    if out.size:
        # layernorm keeps its wide rows in chunks: its one pass holds the centred row as well
        # (llvm-cpu, 2048 x 8192 f32: 4.0 -> 4.5-5.3 ms; 682 x 24576 4.6 -> 4.8)
        _, block, one = row_tiles(*x2.shape, multiple=c.tuned("row_block_multiple", device),
                                  widest=c.tuned("row_one_pass_widest", device)
                                  if op == "rmsnorm" else MAX_BLOCK)
        elems = c.tuned("row_elements", device)
        dummy = x2[0, :1]
        grid = lambda meta: (  # noqa: E731
            tl.cdiv(x2.shape[0], rows_per_program(meta["BM"], block, elems)),)
        norm_kernel[grid](*c.device_args(x2, dummy if weight is None else weight,
                                          dummy if bias is None else bias, o2, stats,
                                          float(eps)),
                          device=device or "cpu", RMS=op == "rmsnorm", HAS_W=weight is not None,
                          HAS_B=bias is not None, ONE_PASS=one, BLOCK=block, EVEN=n % block == 0,
                          FMA=c.tuned("norm_fma", device), ELEMS=elems)
    return (out, stats) if return_stats else out


def layernorm(x, weight=None, bias=None, eps=1e-5, *, device=None, return_stats=False):
    """(x - mean) / sqrt(var + eps) * weight + bias over the last axis (var: biased, as torch).
    return_stats: also (rows, 2) float32 of each row's mean and 1/sqrt(var + eps)."""
    return _norm("layernorm", x, weight, bias, eps, device, return_stats)


def rmsnorm(x, weight=None, eps=1e-6, *, device=None, return_stats=False):
    """x / sqrt(mean(x^2) + eps) * weight over the last axis."""
    return _norm("rmsnorm", x, weight, None, eps, device, return_stats)
