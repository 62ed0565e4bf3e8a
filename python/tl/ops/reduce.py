# Reductions and scans along one axis of any rank: the array as an (outer, n, inner) view (no
# copy), one program per (outer index, block of BI inner columns), n in chunks of BN.
# SPDX-License-Identifier: Apache-2.0
import builtins
import math

import numpy as np

import tl

from . import _common as c

REDUCTIONS = ("sum", "mean", "max", "min", "argmax", "var")


@tl.func
def chunk(x, o, k, i0, BN: tl.constexpr, BI: tl.constexpr, ROWS: tl.constexpr, other=None):
    """The (BN, BI) chunk of x at reduced index k and column i0: of the (outer, n, inner) view,
    or with ROWS of the (1, rows, n) view (BI whole rows, loaded as rows and transposed)."""
    if ROWS:
        return tl.trans(tl.reshape(tl.load(x + (o, i0, k), (1, BI, BN), other=other), (BI, BN)))
    return tl.reshape(tl.load(x + (o, k, i0), (1, BN, BI), other=other), (BN, BI))


@tl.func
def row_var(v, mean, n, correction, BN: tl.constexpr, FULL: tl.constexpr):
    """sum((v - mean)^2) / (n - correction) along the rows of v (R, BN) about their means
    (R,); without FULL the padding lanes past n (0 - mean) are kept out of the squares."""
    d = v - mean[:, None]
    if not FULL:
        d = tl.where((tl.arange(0, BN) < n)[None, :], d, 0.0)
    return tl.sum(d * d, axis=1) / (n - correction)


@tl.kernel
def reduce_kernel(x: tl.tensor, out: tl.tensor, scale: tl.float32, correction: tl.float32,
                  OP: tl.constexpr, BN: tl.constexpr, BI: tl.constexpr,
                  ROWS: tl.constexpr = False, ONE: tl.constexpr = False,
                  FULL: tl.constexpr = False, DOT_MEAN: tl.constexpr = False,
                  ROW_LOOP: tl.constexpr = False):
    """out[o, i] = OP over k of x[o, k, i]; sums in f32 (mean: times `scale` = 1/n; var: two
    passes, sum((x - mean)^2) / (n - correction)); argmax: the first index of the maximum.
    ROWS (a reduction along the last axis): x is the (1, rows, n) view and out (1, rows); a
    program reduces BI whole rows, so each load is BI contiguous rows instead of one row's
    (BN, 1) column (the TNPU's column sums then use BI lanes, not one: _common.TUNING).
    ONE (with ROWS): n fits one chunk (n <= BN), BI whole rows reduced along the rows without a
    loop: the tnpu runs a kernel without loops persistent, the next program's load overlapping
    this one's reduction and store. FULL (with ONE, var): n == BN, so no lane past the row is
    masked out of the squares (the select is a vector pass: npusim var of 4096 x 1024 f32 0.103
    -> 0.084 ms). DOT_MEAN (with ONE, var): the rows' sums for the mean as a dot with a column
    of ones, on the matrix unit beside the vector unit's squares (_common.TUNING's
    var_mean_dot). ROW_LOOP (with ONE, var): the BI rows one after the other, each row's
    squares read from the cache its sum just filled (_common.TUNING's var_row_loop)."""
    if ROWS:  # the blocks of rows along grid axis 0 (a GPU's y axis stops at 65535 programs)
        o = 0
        i0 = tl.program_id(0) * BI
    else:
        o = tl.program_id(0)
        i0 = tl.program_id(1) * BI
    n = x.shape[2] if ROWS else x.shape[1]
    if ONE and OP == "var" and ROW_LOOP:
        for i in tl.range(0, BI, 1):
            v = tl.reshape(tl.load(x + (o, i0 + i, 0), (1, 1, BN), other=0.0),
                           (1, BN)).to(tl.float32)
            r = row_var(v, tl.sum(v, axis=1) * scale, n, correction, BN, FULL)
            tl.store(out + (o, i0 + i), tl.reshape(r, (1, 1)))
        return
    if ONE:
        pad = float("inf") if OP == "min" else -float("inf") if OP in ("max", "argmax") else 0.0
        # (BI, BN): whole rows, reduced along axis 1 (the backend picks the row form)
        v = tl.reshape(tl.load(x + (o, i0, 0), (1, BI, BN), other=pad), (BI, BN)).to(tl.float32)
        if OP in ("sum", "mean", "var"):
            if OP == "var" and DOT_MEAN:
                r = tl.reshape(tl.dot(v, tl.full((BN, 1), 1.0, tl.float32)), (BI,))
            else:
                r = tl.sum(v, axis=1)
            if OP != "sum":
                r = r * scale
            if OP == "var":
                r = row_var(v, r, n, correction, BN, FULL)
        elif OP == "min":
            r = tl.min(v, axis=1)
        elif OP == "max":
            r = tl.max(v, axis=1)
        else:
            r = tl.argmax(v, axis=1)
    elif OP in ("sum", "mean", "var"):
        acc = tl.zeros((BI,), tl.float32)
        for k in tl.range(0, n, BN):
            acc = acc + tl.sum(chunk(x, o, k, i0, BN, BI, ROWS).to(tl.float32), axis=0)
        r = acc
        if OP != "sum":
            r = acc * scale
        if OP == "var":
            sq = tl.zeros((BI,), tl.float32)
            for k in tl.range(0, n, BN):
                v = chunk(x, o, k, i0, BN, BI, ROWS).to(tl.float32)
                d = tl.where(((k + tl.arange(0, BN)) < n)[:, None], v - r[None, :], 0.0)
                sq = sq + tl.sum(d * d, axis=0)
            r = sq / (n - correction)
    elif OP == "min":
        r = tl.full((BI,), float("inf"), tl.float32)
        for k in tl.range(0, n, BN):
            v = chunk(x, o, k, i0, BN, BI, ROWS, float("inf"))
            r = tl.minimum(r, tl.min(v.to(tl.float32), axis=0))
    else:
        r = tl.full((BI,), -float("inf"), tl.float32)
        best = tl.zeros((BI,), tl.int32)
        for k in tl.range(0, n, BN):
            v = chunk(x, o, k, i0, BN, BI, ROWS, -float("inf")).to(tl.float32)
            m = tl.max(v, axis=0)
            if OP == "argmax":  # a later chunk wins only with a larger value, or the first
                # NaN (the largest value; m > r is false for it): the first index
                later = (m > r) | ((m != m) & (r == r))
                best = tl.where(later, k + tl.argmax(v, axis=0), best)
            r = tl.maximum(r, m)
        if OP == "argmax":
            r = best
    tl.store(out + (o, i0), tl.reshape(r, (1, BI)))


@tl.kernel
def reduce_part_kernel(x: tl.tensor, part: tl.tensor, index: tl.tensor, mean: tl.tensor,
                       span: tl.int32, OP: tl.constexpr, BN: tl.constexpr, BI: tl.constexpr):
    """Stage one of a split reduction along the middle axis of x (outer, n, inner): program
    (o, j, s) reduces rows [s span, (s + 1) span) of columns [j BI, (j + 1) BI) into
    part[o, s, :] (f32): sum (sum, mean, var's first pass), max, min, argmax (the maximum, and
    its first row to index[o, s, :] (i32)), sq (sum((x - mean)^2) around mean[o, :], var's
    second pass). span is a multiple of BN, so no chunk straddles two programs; rows past n
    load the op's neutral value (a block wholly past n gives it). Stage two is reduce_kernel
    along part's middle axis (argmax: argmax_combine_kernel)."""
    o = tl.program_id(0)
    i0 = tl.program_id(1) * BI
    s = tl.program_id(2)
    lo = s * span
    n = x.shape[1]
    if OP == "sum" or OP == "sq":
        r = tl.zeros((BI,), tl.float32)
        if OP == "sq":
            mu = tl.reshape(tl.load(mean + (o, i0), (1, BI)), (BI,))
        for k in tl.range(lo, lo + span, BN):
            v = chunk(x, o, k, i0, BN, BI, False).to(tl.float32)
            if OP == "sq":
                d = tl.where(((k + tl.arange(0, BN)) < n)[:, None], v - mu[None, :], 0.0)
                v = d * d
            r = r + tl.sum(v, axis=0)
    elif OP == "min":
        r = tl.full((BI,), float("inf"), tl.float32)
        for k in tl.range(lo, lo + span, BN):
            r = tl.minimum(r, tl.min(chunk(x, o, k, i0, BN, BI, False, float("inf"))
                                     .to(tl.float32), axis=0))
    else:
        r = tl.full((BI,), -float("inf"), tl.float32)
        best = tl.zeros((BI,), tl.int32) + lo
        for k in tl.range(lo, lo + span, BN):
            v = chunk(x, o, k, i0, BN, BI, False, -float("inf")).to(tl.float32)
            m = tl.max(v, axis=0)
            if OP == "argmax":  # a later chunk wins only with a larger value, or the first
                # NaN (the largest value; m > r is false for it): the first index
                later = (m > r) | ((m != m) & (r == r))
                best = tl.where(later, k + tl.argmax(v, axis=0), best)
            r = tl.maximum(r, m)
        if OP == "argmax":
            tl.store(index + (o, s, i0), tl.reshape(best, (1, 1, BI)))
    tl.store(part + (o, s, i0), tl.reshape(r, (1, 1, BI)))


@tl.kernel
def argmax_combine_kernel(part: tl.tensor, index: tl.tensor, out: tl.tensor, BS: tl.constexpr,
                          BI: tl.constexpr):
    """Stage two of a split argmax: out[o, i] = index[o, s, i] of the first block s holding
    the largest part[o, s, i] (blocks are in row order, so the first maximal row overall).
    All S blocks in one tile (S <= BS)."""
    o = tl.program_id(0)
    i0 = tl.program_id(1) * BI
    v = tl.reshape(tl.load(part + (o, 0, i0), (1, BS, BI), other=-float("inf")), (BS, BI))
    rows = tl.reshape(tl.load(index + (o, 0, i0), (1, BS, BI)), (BS, BI))
    pick = tl.argmax(v, axis=0)
    hit = tl.arange(0, BS)[:, None] == pick[None, :]
    tl.store(out + (o, i0), tl.reshape(tl.sum(tl.where(hit, rows, 0), axis=0), (1, BI)))


@tl.func
def two_sum(a, b):
    """(a + b rounded, its rounding error) exactly (Knuth's TwoSum: six additions, any
    magnitudes): a scan's carry over many chunks is one chain of additions, and its error had
    grown with their count (a 4M-element f32 cumsum at 1.5e-6 normwise, over the 1e-6
    contract)."""
    s = a + b
    bb = s - a
    # (an infinite or NaN sum has no finite error: 0, so the sum stays inf, not NaN)
    return s, tl.where(tl.abs(s) < float("inf"), (a - (s - bb)) + (b - bb), 0.0)


@tl.func
def row_scan(v, BI: tl.constexpr, BN: tl.constexpr, CHAIN: tl.constexpr):
    """The running sums along the rows of v (BI, BN), f32, no serial chain longer than CHAIN
    (0: BN): each row as segments of CHAIN scanned on their own (rows of a (BI BN / CHAIN,
    CHAIN) view: the same memory), plus the sum of the segments before it."""
    if CHAIN == 0 or CHAIN >= BN:
        return tl.cumsum(v, 1)
    SEGS = BN // CHAIN
    s = tl.cumsum(tl.reshape(v, (BI * SEGS, CHAIN)), 1)
    run = tl.cumsum(tl.reshape(s[:, CHAIN - 1], (BI, SEGS)), 1)  # through each segment
    # segment j starts from run[:, j - 1], selected, not run - the segment's sum (an inf
    # input would make that inf - inf = NaN where the prefix sums are inf)
    seg = tl.arange(0, SEGS)[None, :]
    before = tl.zeros((BI, SEGS), tl.float32)
    for j in tl.static_range(1, SEGS):
        before = tl.where(seg == j, run[:, j - 1][:, None], before)
    return tl.reshape(s + tl.reshape(before, (BI * SEGS,))[:, None], (BI, BN))


@tl.kernel
def cumsum_kernel(x: tl.tensor, out: tl.tensor, BN: tl.constexpr, BI: tl.constexpr,
                  RELOAD: tl.constexpr = False, ROWS: tl.constexpr = False,
                  ONE: tl.constexpr = False, MX: tl.constexpr = False,
                  CHAIN: tl.constexpr = 0):
    """out[o, :, i] = running sum over k of x[o, k, i], in f32, chunk after chunk. RELOAD:
    the chunk is loaded again for the carry's sum (from the caches), so that the scan's load,
    used once, reads the tensor in place (llvm-cpu: a load used twice is copied first).
    ROWS (a scan along the last axis): x and out are (1, rows, n) views, a program scans BI
    whole rows along the row (the tnpu's v.cumsum per row, 64 lanes busy, where a (BN, 1) column
    is a transpose and a scan of one row at a time: _common.TUNING's scan_rows); ONE: n fits
    one chunk (n <= BN), no loop, so the tnpu runs the kernel persistent (the next rows' load
    overlapping this scan and store).
    MX (with ROWS; n <= BN, BN a multiple of 128): the scan on the matrix unit. Each row's
    128-element chunks times an upper-triangular 128 x 128 matrix of ones, the running sums
    within each chunk (the unit adds in order, one rounding a step: the serial scan), plus
    the chunk's carry, the sum of the chunks before it (the chunks' sums, the running sums'
    last column, then a scan of BI x BN / 128 of them, on the vector unit). Program p takes row
    blocks p, p + programs, ... so the triangle is built once a program. (Tried on npusim: the
    chunk sums as a ones row times the chunks' transpose on the matrix unit, and the carries as
    the dot's accumulator, a broadcast: both slower.) Every element is multiplied by the
    triangle's zeros too, so a non-finite input (inf x 0 = NaN) or a sum that overflows would
    poison the chunk: the host takes MX only where every prefix sum is finite (cumsum's
    scan_matrix_ok)."""
    o = tl.program_id(0)
    i0 = tl.program_id(1) * BI
    if ROWS and MX:
        tl.static_assert(BN % 128 == 0, "cumsum_kernel: MX takes rows in chunks of 128")
        k = tl.arange(0, 128)
        tri = tl.where(k[:, None] <= k[None, :], 1.0, 0.0).to(x.dtype)
        for r0 in tl.range(i0, x.shape[1], tl.num_programs(1) * BI):
            v = tl.reshape(tl.load(x + (o, r0, 0), (1, BI, BN)), (BI * (BN // 128), 128))
            run = tl.dot(v, tri)
            # each chunk's sum: its running sum's last column (a strided copy on the tnpu,
            # where a row sum was a transpose and a column fold of the whole block)
            sums = tl.reshape(run[:, 127], (BI, BN // 128))
            carry = tl.reshape(tl.cumsum(sums, 1) - sums, (BI * (BN // 128),))
            tl.store(out + (o, r0, 0), tl.reshape(run + carry[:, None], (1, BI, BN)))
    elif ROWS:
        if ONE:
            v = tl.reshape(tl.load(x + (o, i0, 0), (1, BI, BN)), (BI, BN)).to(tl.float32)
            tl.store(out + (o, i0, 0), tl.reshape(row_scan(v, BI, BN, CHAIN), (1, BI, BN)))
        else:
            run = tl.zeros((BI,), tl.float32)
            err = tl.zeros((BI,), tl.float32)  # run's rounding errors (two_sum), added back
            for k in tl.range(0, x.shape[2], BN):
                v = tl.reshape(tl.load(x + (o, i0, k), (1, BI, BN)), (BI, BN)).to(tl.float32)
                # the chunk's sum is its scan's last column (lanes past the row load 0): v read
                # once, so llvm-cpu scans it in place (a load used twice is copied first)
                s = row_scan(v, BI, BN, CHAIN)
                tl.store(out + (o, i0, k), tl.reshape(s + (run + err)[:, None], (1, BI, BN)))
                run, e = two_sum(run, s[:, BN - 1])
                err = err + e
    else:
        carry = tl.zeros((BI,), tl.float32)
        err = tl.zeros((BI,), tl.float32)  # carry's rounding errors (two_sum), added back
        for k in tl.range(0, x.shape[1], BN):
            v = tl.reshape(tl.load(x + (o, k, i0), (1, BN, BI)), (BN, BI)).to(tl.float32)
            tl.store(out + (o, k, i0),
                     tl.reshape(tl.cumsum(v, 0) + (carry + err)[None, :], (1, BN, BI)))
            if RELOAD:
                v = tl.reshape(tl.load(x + (o, k, i0), (1, BN, BI)), (BN, BI)).to(tl.float32)
            carry, e = two_sum(carry, tl.sum(v, axis=0))
            err = err + e


def axis_tiles(n, inner, max_inner=64, elements=4096, multiple=0):
    """(BN, BI): up to `max_inner` inner columns (the device's `axis_inner`, _common.TUNING),
    `elements` per chunk (the device's `axis_elements`; a row when inner is 1); BI = inner where
    it is a multiple of `multiple` (the device's `row_block_multiple`) up to max_inner."""
    bi = c.tile_width(inner, 1, max_inner, multiple)
    return c.pow2(n, 16, builtins.max(16, elements // bi)), bi


def axis_choice(n, inner, device):
    """axis_tiles with `device`'s tuning."""
    return axis_tiles(n, inner, c.tuned("axis_inner", device), c.tuned("axis_elements", device),
                      c.tuned("row_block_multiple", device))


# A split reduction has at most this many row blocks (argmax_combine_kernel holds them in one
# tile).
MAX_SPLIT = 256


def split_choice(outer, n, inner, bn, bi, device, split=None):
    """(blocks, span): the rows of a reduction along a middle axis in `blocks` blocks of `span`
    rows (a multiple of bn). split None: TUNING["axis_split"] programs per compute unit, when
    the (outer, inner / bi) grid has fewer (a column sum of 16384 x 1024 is 16 programs of 64
    columns); an int: that many blocks (at most one per chunk of bn rows)."""
    if split is None:
        per = c.tuned("axis_split", device)
        have = outer * tl.cdiv(inner, bi)
        want = per * c.compute_units(device)
        split = tl.cdiv(want, have) if per and have < want else 1
    elif not (isinstance(split, int) and split >= 1):
        c.fail("reduce", "split", f"expected a positive integer or None, got {split!r}")
    split = builtins.min(split, tl.cdiv(n, bn), MAX_SPLIT)
    span = tl.cdiv(tl.cdiv(n, split), bn) * bn
    return tl.cdiv(n, span), span


def reduce_split(op, x3, out, blocks, span, bn, bi, correction, device):
    """op along x3's middle axis in two stages: reduce_part_kernel's partials per block of
    `span` rows (f32, (outer, blocks, inner)), then those reduced by reduce_kernel (blocks
    added in order: the same bits every run) or argmax_combine_kernel; var: the mean so, then
    the squared deviations around it so."""
    outer, n, inner = x3.shape
    part = c.empty((outer, blocks, inner), np.float32)
    index = c.empty((outer, blocks, inner) if op == "argmax" else (1, 1, 1), np.int32)
    grid = (outer, tl.cdiv(inner, bi), blocks)
    cbn, cbi = axis_choice(blocks, inner, device)

    def combine(kind, dst, scale):
        c.launch(reduce_kernel, (outer, tl.cdiv(inner, cbi)), part, dst.reshape(outer, inner),
                 scale, 0.0, device=device, OP=kind, BN=cbn, BI=cbi)

    first = "sum" if op in ("mean", "var") else op
    c.launch(reduce_part_kernel, grid, x3, part, index, part, span, device=device, OP=first,
             BN=bn, BI=bi)
    if op == "argmax":
        bs = c.pow2(blocks, 16)
        abi = c.pow2(inner, 1, builtins.max(1, 4096 // bs))
        c.launch(argmax_combine_kernel, (outer, tl.cdiv(inner, abi)), part, index,
                 out.reshape(outer, inner), device=device, BS=bs, BI=abi)
    elif op != "var":
        combine("mean" if op == "mean" else op, out, 1.0 / n)
    else:
        mean = c.empty((outer, inner), np.float32)
        combine("mean", mean, 1.0 / n)
        c.launch(reduce_part_kernel, grid, x3, part, index, mean, span, device=device, OP="sq",
                 BN=bn, BI=bi)
        denom = n - correction
        combine("mean", out, 1.0 / denom if denom else float("inf"))
    return out


def reduce(op, x, axis=-1, *, correction=0, split=None, device=None):
    """OP of x along `axis` (one axis; the result drops it; None: over every element, as
    numpy's, argmax then indexing x.ravel()). sum, mean, max, min, var keep x's
    dtype (computed in f32); argmax gives int32. var: sum((x - mean)^2) / max(n - correction, 0).
    Along an axis other than the last, the rows may be split into blocks reduced by separate
    programs and then combined (deterministically): `split` blocks, or None for the device's
    choice (split_choice)."""
    if op not in REDUCTIONS:
        c.fail("reduce", "op", f"unknown reduction '{op}' (one of {', '.join(REDUCTIONS)})")
    x = c.float_array(op, "x", x, min_ndim=0 if axis is None else 1)
    if axis is None:  # over every element, as numpy's (argmax: the index into x.ravel())
        x, axis = x.reshape(-1), 0
    x3, axis = c.axis_view(x, axis, op)
    outer, n, inner = x3.shape
    # n - correction below 0 divides by 0, as numpy's and torch's max(n - correction, 0)
    correction = builtins.min(c.number(op, "correction", correction), float(n))
    shape = x.shape[:axis] + x.shape[axis + 1:]
    if n == 0:  # as numpy and torch: the empty sum is 0, the mean and var of nothing NaN
        if op in ("max", "min", "argmax"):
            c.fail(op, "x", f"reduction over an empty axis {axis} (shape {x.shape}): {op} of "
                   "no elements has no value (numpy and torch raise too)")
        return c.full(shape, 0.0 if op == "sum" else math.nan, x)
    out = c.empty(shape, np.int32 if op == "argmax" else x)
    rows = c.tuned("reduce_rows", device) if inner == 1 else 0
    if rows and x.dtype.itemsize == 2 and c.tuned("reduce_rows_narrow", device):
        rows = c.tuned("reduce_rows_narrow", device)  # bf16 / f16: held widened on llvm-cpu
    if inner == 1 and not rows and n <= c.tuned("reduce_row_elements", device):
        rows = 1  # one whole row a program (ONE below)
    if out.size and rows:
        # Along the last axis: `rows` whole rows per program (ROWS), n in chunks of BN.
        if c.tuned("reduce_rows_whole", device) and n > 65536 // rows:
            rows = 1 << builtins.max(0, (65536 // n).bit_length() - 1)  # rows of one chunk
        bn = c.tile_width(n, 16, builtins.max(16, 65536 // rows),
                          c.tuned("row_block_multiple", device))
        c.launch(reduce_kernel, (tl.cdiv(outer, rows), 1), x3.reshape(1, outer, n),
                 out.reshape(1, outer), 1.0 / n, float(correction), device=device, OP=op,
                 BN=bn, BI=rows, ROWS=True, ONE=n <= bn,
                 FULL=op == "var" and n == bn,  # (ROWS is tnpu tuning: reduce_rows)
                 DOT_MEAN=op == "var" and n <= bn and c.tuned("var_mean_dot", device),
                 ROW_LOOP=op == "var" and n <= bn and c.tuned("var_row_loop", device))
    elif out.size:
        bn, bi = axis_choice(n, inner, device)
        blocks, span = split_choice(outer, n, inner, bn, bi, device, split)
        if blocks > 1:
            return reduce_split(op, x3, out, blocks, span, bn, bi, correction, device)
        c.launch(reduce_kernel, (outer, tl.cdiv(inner, bi)), x3, out.reshape(outer, inner),
                 1.0 / n, float(correction), device=device, OP=op, BN=bn, BI=bi)
    return out


def sum(x, axis=-1, *, device=None):  # noqa: A001 - the op's name
    return reduce("sum", x, axis, device=device)


def mean(x, axis=-1, *, device=None):
    return reduce("mean", x, axis, device=device)


def max(x, axis=-1, *, device=None):  # noqa: A001
    return reduce("max", x, axis, device=device)


def min(x, axis=-1, *, device=None):  # noqa: A001
    return reduce("min", x, axis, device=device)


def argmax(x, axis=-1, *, device=None):
    return reduce("argmax", x, axis, device=device)


def var(x, axis=-1, *, correction=0, device=None):
    return reduce("var", x, axis, correction=correction, device=device)


# cumsum_kernel's MX takes rows of at most this many elements (one chunk loop: the rows' carry
# scan stays a small tile)
SCAN_MATRIX_MAX = 1024
# The longest chain of serial additions a scan's chunk runs (vector scans; the matrix form's is
# 128): f32 running sums of 1030 values in [0.5, 2) in chunks of 1024 came to 1.03e-6 normwise
# of the fp64 prefix sums, over the contract's 1e-6; chunks of 512 to at most 2.3e-7 (30 draws)
SCAN_CHAIN = 512


def scan_matrix_ok(x3, n):
    """Whether every running sum along x3's rows of n is finite (every input finite and n
    times the largest magnitude below float32's largest): cumsum_kernel's MX multiplies each
    element by zeros too, so it may take only such inputs."""
    a = c.bf16.to_float32(x3) if c.bf16.is_bf16(x3) else x3
    return bool(float(np.abs(a).max()) * n < float(np.finfo(np.float32).max))


def cumsum(x, axis=-1, *, device=None):
    """Running sum along `axis` (None: of x.ravel(), as numpy's), computed in f32, in x's
    dtype."""
    x = c.float_array("cumsum", "x", x, min_ndim=0 if axis is None else 1)
    if axis is None:
        x, axis = x.reshape(-1), 0
    x3, _ = c.axis_view(x, axis, "cumsum")
    out = c.empty(x.shape, x)
    outer, n, inner = x3.shape
    rows = c.tuned("scan_rows", device) if inner == 1 else 0
    block = c.tuned("scan_matrix", device) if rows else 0
    if out.size and block and n <= SCAN_MATRIX_MAX and scan_matrix_ok(x3, n):
        # Along the last axis on the matrix unit (cumsum_kernel's MX): rows of BN (chunks of
        # 128) in blocks of about `block` elements, one program a compute unit looping over them
        bn = c.pow2(n, 128)
        bi = builtins.max(1, block // bn)
        programs = builtins.min(c.compute_units(device), tl.cdiv(outer, bi))
        c.launch(cumsum_kernel, (1, programs), x3.reshape(1, outer, n),
                 out.reshape(1, outer, n), device=device, BN=bn, BI=bi, ROWS=True, MX=True)
    elif out.size and rows:
        # Along the last axis: `rows` whole rows per program (ROWS), n in chunks of BN, each
        # row of a chunk scanned in segments of at most the target's scan_chain (row_scan).
        bn = c.tile_width(n, 16, builtins.min(SCAN_ROW_MAX, builtins.max(16, 65536 // rows)),
                          c.tuned("row_block_multiple", device))
        chain = c.tuned("scan_chain", device)
        c.launch(cumsum_kernel, (1, tl.cdiv(outer, rows)), x3.reshape(1, outer, n),
                 out.reshape(1, outer, n), device=device, BN=bn, BI=rows, ROWS=True,
                 ONE=n <= bn, CHAIN=chain if 0 < chain < bn else 0)
    elif out.size:
        bn, bi = axis_tiles(x3.shape[1], x3.shape[2])
        c.launch(cumsum_kernel, (x3.shape[0], tl.cdiv(x3.shape[2], bi)), x3,
                 out.reshape(x3.shape), device=device, BN=builtins.min(bn, SCAN_CHAIN), BI=bi,
                 RELOAD=c.tuned("scan_reload", device))
    return out


SCAN_ROW_MAX = 1024  # cumsum along rows: columns a chunk, at most

TOPK_BLOCK = 4096  # a row, or a segment of one, is held in one tile


@tl.kernel
def topk_kernel(x: tl.tensor, values: tl.tensor, indices: tl.tensor, K: tl.constexpr,
                BM: tl.constexpr, BLOCK: tl.constexpr):
    """The K largest of each row (rows of at most BLOCK), largest first, the lowest index first
    among equals: K rounds, each taking out its winner (the lowest live column holding the live
    maximum, so that -inf values are taken in turn, never twice, and padding never); NaN ranks
    above every number, as in torch.topk."""
    r0 = tl.program_id(0) * BM
    v = tl.load(x + (r0, 0), (BM, BLOCK), other=-float("inf")).to(tl.float32)
    cols = tl.arange(0, BLOCK)
    live = tl.zeros((BM, BLOCK), tl.int32) + cols[None, :] < x.shape[1]
    for i in tl.range(0, K):  # a loop: K may be thousands
        m = tl.max(tl.where(live, v, -float("inf")), axis=1)
        # max propagates NaN: a NaN row maximum is taken at the lowest live NaN (as torch,
        # NaN above every number).
        hit = live & ((v == m[:, None]) | ((m != m)[:, None] & (v != v)))
        j = tl.min(tl.where(hit, cols[None, :], BLOCK), axis=1)
        tl.store(values + (r0, i), tl.reshape(m, (BM, 1)))
        tl.store(indices + (r0, i), tl.reshape(j, (BM, 1)))
        live = live & (cols[None, :] != j[:, None])


@tl.kernel
def topk_segments_kernel(x: tl.tensor, index: tl.tensor, values: tl.tensor, indices: tl.tensor,
                         K: tl.constexpr, BM: tl.constexpr, BLOCK: tl.constexpr,
                         GATHER: tl.constexpr):
    """Rows longer than a tile: the K largest of each BLOCK-wide segment s of each row (as
    topk_kernel) to values[:, s K:(s + 1) K], their columns (with GATHER: index[row, column],
    the original columns of a row of candidates) to indices. Segment s's candidates precede
    segment s + 1's, so among equal values the lower original index stays first."""
    r0 = tl.program_id(0) * BM
    c0 = tl.program_id(1) * BLOCK
    v = tl.load(x + (r0, c0), (BM, BLOCK), other=-float("inf")).to(tl.float32)
    cols = tl.arange(0, BLOCK)
    rows = r0 + tl.arange(0, BM)
    live = tl.zeros((BM, BLOCK), tl.int32) + (c0 + cols)[None, :] < x.shape[1]
    for i in tl.range(0, K):  # a loop: K may be thousands
        m = tl.max(tl.where(live, v, -float("inf")), axis=1)
        # max propagates NaN: a NaN row maximum is taken at the lowest live NaN (as torch,
        # NaN above every number).
        hit = live & ((v == m[:, None]) | ((m != m)[:, None] & (v != v)))
        j = tl.min(tl.where(hit, cols[None, :], BLOCK), axis=1)
        out = tl.program_id(1) * K + i
        tl.store(values + (r0, out), tl.reshape(m, (BM, 1)))
        if GATHER:
            src = tl.gather(index, (rows, c0 + j), mask=(rows < x.shape[0]) & (j < BLOCK))
        else:
            src = c0 + j
        tl.store(indices + (r0, out), tl.reshape(src, (BM, 1)))
        live = live & (cols[None, :] != j[:, None])


def topk(x, k, *, device=None):
    """(values, indices) of the k largest elements of each row of x (..., n), largest first,
    ties to the lowest index; values in x's dtype, indices int32; k <= 4096, and k <= 2048 for
    rows longer than 4096, which go in rounds: each 4096-wide segment's k largest, then the k
    largest of those candidates, until one tile holds them."""
    op = "topk"
    x = c.float_array(op, "x", x, min_ndim=1)
    n = x.shape[-1]
    # Rows longer than a tile go in rounds, each keeping k of every TOPK_BLOCK-wide segment: a
    # round shortens a row by the factor k / TOPK_BLOCK, so k is at most half a segment there
    # (k = 4096 never shortened a row: the rounds ran forever; 4000 took 43 rounds at 8193).
    most = n if n <= TOPK_BLOCK else TOPK_BLOCK // 2
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or not 0 <= k <= most:
        longer = f" for rows longer than {TOPK_BLOCK}" if n > TOPK_BLOCK else ""
        c.fail(op, "k", f"expected an integer in [0, {most}]{longer}, got {k!r}")  # 0: as torch
    k = int(k)
    values = c.empty(x.shape[:-1] + (k,), x)
    indices = c.empty(x.shape[:-1] + (k,), np.int32)
    if not values.size:
        return values, indices
    x2, v2, i2 = c.rows_view(x), c.rows_view(values), c.rows_view(indices)
    rows = x2.shape[0]
    if n <= TOPK_BLOCK:
        block = c.pow2(n, 16)
        bm = c.pow2(rows, 1, builtins.max(1, 4096 // block))
        c.launch(topk_kernel, (tl.cdiv(rows, bm),), x2, v2, i2, device=device, K=k, BM=bm,
                 BLOCK=block)
        return values, indices
    # Rounds over segments; each shortens a row to (segments - 1) k + min(k, last segment's
    # width) live candidates (k <= 2048, 4096 < n: at least halves it), values kept in x's dtype (the
    # kernels compute in f32 and round once: exact for candidates, which are x's elements).
    cur, cur_idx, width, gather = x2, x2, n, False
    while True:
        segments = -(-width // TOPK_BLOCK)
        last = segments == 1
        out_v = v2 if last else c.empty((rows, segments * k), x)
        out_i = i2 if last else c.empty((rows, segments * k), np.int32)
        c.launch(topk_segments_kernel, (rows, segments), cur, cur_idx, out_v, out_i,
                 device=device, K=k, BM=1, BLOCK=TOPK_BLOCK, GATHER=gather)
        if last:
            return values, indices
        width = (segments - 1) * k + builtins.min(k, width - (segments - 1) * TOPK_BLOCK)
        cur, cur_idx, gather = out_v[:, :width], out_i[:, :width], True
