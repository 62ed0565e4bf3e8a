# Randomized cases of the op library: for each family, shapes (ragged and size-1 dimensions),
# axes, dtypes, layouts (transposed and strided views of the same values) and options drawn per
# case, each result against its fp64 reference with the tolerance table's bound, on every device.
# The other test files pin the cases their authors thought of; these draw the ones users bring.
# TL_OPS_RANDOM=CASES:SEED sets the cases per family and device (default 4:1, the CI run); a
# long run is `TL_OPS_RANDOM=500:7 pytest python/tests/test_ops_random.py -x` (bench/README.md
# records such runs). A failure names the drawn case; it reruns alone with the same CASES:SEED
# and its pytest id.
# SPDX-License-Identifier: Apache-2.0
import math
import os
import zlib

import numpy as np
import pytest

import tl.ops as ops
from tl.ops import reference as ref
from ops_util import DEVICES, check, make


def _setting():
    text = os.environ.get("TL_OPS_RANDOM", "4:1")
    try:
        cases, seed = (int(v) for v in text.split(":"))
    except ValueError:
        raise ValueError(f"TL_OPS_RANDOM: expected CASES:SEED (two integers), got {text!r}")
    return cases, seed


CASES, SEED = _setting()
# Dimensions drawn: 1, small primes, around the block sizes (16, 64, 128, 1024, 4096) and past.
DIMS = (1, 2, 3, 5, 7, 16, 17, 31, 64, 65, 100, 128, 129, 257, 1000, 1024, 1030, 4100)
# Elements per input: the simulator is slow.
CAP = {"cpu": 400_000, "npusim": 60_000, "cuda": 400_000}

pytestmark = [pytest.mark.parametrize("device", DEVICES),
              pytest.mark.parametrize("case", range(CASES))]


def draw(family, case):
    """The generator of one case: the same draws for the same (SEED, family, case)."""
    return np.random.default_rng([SEED, zlib.crc32(family.encode()), case])


def shape(r, rank, cap, dims=DIMS):
    """A shape of `rank` dimensions drawn from `dims`, at most `cap` elements."""
    while True:
        s = tuple(int(r.choice(dims)) for _ in range(rank))
        if math.prod(s) <= cap:
            return s


def laid_out(r, x):
    """x's values in a layout drawn: contiguous, its last two axes transposed in memory, or
    every other element of a wider array along one axis. (name, array)"""
    if x.ndim == 0:
        return "contiguous", x
    kind = r.choice(["contiguous", "transposed", "strided"] if x.ndim >= 2
                    else ["contiguous", "strided"])
    if kind == "transposed":
        return kind, np.swapaxes(np.ascontiguousarray(np.swapaxes(x, -1, -2)), -1, -2)
    if kind == "strided":
        axis = int(r.integers(x.ndim))
        wide = list(x.shape)
        wide[axis] *= 2
        base = np.zeros(wide, x.dtype)
        view = base[tuple(slice(None, None, 2) if d == axis else slice(None)
                          for d in range(x.ndim))]
        view[...] = x
        return f"strided along {axis}", view
    return kind, x


def describe(**kw):
    return ", ".join(f"{k}={v}" for k, v in kw.items())


REDUCE_TOL = {"sum": "reduce_sum", "mean": "reduce_mean", "var": "reduce_var",
              "max": "reduce_max", "min": "reduce_min"}
# The kit's sum bounds are for well-conditioned inputs: positive values for sums and means.
REDUCE_RANGE = {"sum": (0.5, 2.0), "mean": (0.5, 2.0), "var": (-3.0, 2.0), "max": (-3.0, 3.0),
                "min": (-3.0, 3.0), "argmax": (-3.0, 3.0)}


def test_random_reduce(case, device):
    # Catches a reduction that breaks for a shape, axis or layout no fixed test has: the wrong
    # axis, padding lanes counted, blocks of rows or columns misplaced, a split reduction
    # combined wrongly, a view's strides ignored.
    r = draw("reduce", case)
    op = str(r.choice(list(REDUCE_RANGE)))
    dtype = str(r.choice(["f32", "bf16", "f16"] if op in ("max", "min", "argmax")
                         else ["f32", "bf16"]))
    x = make(r, shape(r, int(r.integers(1, 5)), CAP[device]), dtype, *REDUCE_RANGE[op])
    axis = int(r.integers(-x.ndim, x.ndim))
    correction = int(r.integers(2)) if op == "var" and x.shape[axis] > 1 else 0
    layout, xv = laid_out(r, x)
    what = describe(op=op, dtype=dtype, shape=x.shape, axis=axis, layout=layout,
                    correction=correction)
    got = ops.reduce(op, xv, axis, correction=correction, device=device)
    if op == "argmax":
        want = ref.f64(x).argmax(axis)
        assert got.dtype == np.int32, what
        np.testing.assert_array_equal(got, want, err_msg=what)
        return
    check(got, ref.reduce(op, x, axis, correction=correction), REDUCE_TOL[op], dtype,
          n=x.shape[axis], name=what)


def test_random_cumsum(case, device):
    # Catches: a scan's carry lost between chunks or row blocks, the wrong axis, a view's
    # strides ignored.
    r = draw("cumsum", case)
    dtype = str(r.choice(["f32", "bf16"]))
    x = make(r, shape(r, int(r.integers(1, 4)), CAP[device]), dtype, 0.5, 2.0)
    axis = int(r.integers(-x.ndim, x.ndim))
    layout, xv = laid_out(r, x)
    what = describe(dtype=dtype, shape=x.shape, axis=axis, layout=layout)
    check(ops.cumsum(xv, axis, device=device), ref.cumsum(x, axis), "scan_sum", dtype,
          n=x.shape[axis], name=what)


def test_random_softmax(case, device):
    # Catches: rows wider than a block (the online max and sum across chunks), the padding of a
    # ragged row in the sum, another axis's moved copy put back wrongly.
    r = draw("softmax", case)
    op = str(r.choice(["softmax", "log_softmax"]))
    dtype = str(r.choice(["f32", "bf16", "f16"]))
    x = make(r, shape(r, int(r.integers(1, 4)), CAP[device]), dtype, normal=True)
    axis = int(r.integers(-x.ndim, x.ndim))
    layout, xv = laid_out(r, x)
    what = describe(op=op, dtype=dtype, shape=x.shape, axis=axis, layout=layout)
    got = getattr(ops, op)(xv, axis, device=device)
    check(got, getattr(ref, op)(x, axis), "softmax", dtype, n=x.shape[axis], name=what)


def test_random_norm(case, device):
    # Catches: a ragged row's padding in the mean or variance, weight or bias applied to the
    # wrong column or missing, rows wider than a block.
    r = draw("norm", case)
    op = str(r.choice(["layernorm", "rmsnorm"]))
    dtype = str(r.choice(["f32", "bf16"]))
    x = make(r, shape(r, int(r.integers(1, 4)), CAP[device]), dtype, -2.0, 3.0)
    n = x.shape[-1]
    w = make(r, (n,), dtype, 0.5, 1.5) if r.integers(2) else None
    b = make(r, (n,), dtype, -1.0, 1.0) if op == "layernorm" and r.integers(2) else None
    layout, xv = laid_out(r, x)
    what = describe(op=op, dtype=dtype, shape=x.shape, layout=layout, weight=w is not None,
                    bias=b is not None)
    if op == "layernorm":
        got, want = ops.layernorm(xv, w, b, device=device), ref.layernorm(x, w, b)
    else:
        got, want = ops.rmsnorm(xv, w, device=device), ref.rmsnorm(x, w)
    # cond: x - mean cancels where a row's spread is small against its values (a row of two
    # close values: the mean's rounding, |x| u, over sigma), so the terms are |x| / sigma
    xd = ref.f64(x)
    mean = 0.0 if op == "rmsnorm" else xd.mean(-1, keepdims=True)
    sigma = np.sqrt(((xd - mean) ** 2).mean(-1, keepdims=True) + (1e-5 if op == "layernorm"
                                                                 else 1e-6))
    terms = (np.abs(xd) + np.abs(mean)) / sigma * (1.0 if w is None else np.abs(ref.f64(w)))
    check(got, want, "norm", dtype, n=n, ref_abs=terms + (0 if b is None else np.abs(ref.f64(b))),
          name=what)


def test_random_gemm(case, device):
    # Catches: ragged M, N, K against every tile size, transposed operands, a batch's stride,
    # the epilogue (bias, activation, residual, alpha) in the wrong order, a split K summed
    # wrongly.
    r = draw("gemm", case)
    dtype = str(r.choice(["f32", "bf16", "f16"]))
    cap = CAP[device] // 4
    m, k, n = shape(r, 3, cap, DIMS[:-1])
    while m * k > cap or k * n > cap or m * n > cap:
        m, k, n = shape(r, 3, cap, DIMS[:-1])
    batch = () if r.integers(2) else (int(r.integers(1, 4)),)
    a = make(r, batch + (m, k), dtype)
    b = make(r, (batch if r.integers(2) else ()) + (k, n), dtype)
    kw = {}
    if r.integers(2):
        kw["bias"] = make(r, (n,), dtype)
    if r.integers(2):
        kw["activation"] = str(r.choice(["relu", "gelu", "gelu_tanh", "silu", "sigmoid",
                                         "tanh"]))
    if r.integers(2):
        kw["residual"] = make(r, np.broadcast_shapes(a.shape[:-1] + (n,),
                                                     b.shape[:-2] + (m, n)), dtype)
    if r.integers(2):
        kw["alpha"] = float(r.choice([0.5, -2.0]))
    split = [None, 1, int(r.integers(2, 6))][int(r.integers(3))]
    la, av = laid_out(r, a)
    lb, bv = laid_out(r, b)
    what = describe(dtype=dtype, a=a.shape, b=b.shape, layouts=(la, lb), split_k=split,
                    **{key: (v.shape if hasattr(v, "shape") else v) for key, v in kw.items()})
    got = ops.gemm(av, bv, device=device, split_k=split, **kw)
    rkw = {("activation_" if key == "activation" else key): v for key, v in kw.items()}
    want = ref.gemm(a, b, **rkw)
    ref_abs = np.abs(ref.f64(a)) @ np.abs(ref.f64(b))
    check(got, want, "gemm" if kw else "dot", dtype, n=k, ref_abs=ref_abs, name=what)


BINARY_TOL = {"add": "add", "sub": "sub", "mul": "mul", "div": "div"}


def test_random_binary(case, device):
    # Catches: numpy broadcasting (a size-1 or missing dimension on either side) read with the
    # wrong strides, a view's strides ignored, ragged edges.
    r = draw("binary", case)
    op = str(r.choice(list(BINARY_TOL)))
    dtype = str(r.choice(["f32", "bf16", "f16"]))
    full = shape(r, int(r.integers(1, 5)), CAP[device])

    def side():
        s = [1 if r.integers(3) == 0 else d for d in full]
        return tuple(s[int(r.integers(len(s) + 1)):] if r.integers(2) else s)
    xs, ys = side(), side()
    x = make(r, xs, dtype, -2.0, 2.0)
    y = make(r, ys, dtype, 0.5, 2.0) if op == "div" else make(r, ys, dtype, -2.0, 2.0)
    lx, xv = laid_out(r, x)
    what = describe(op=op, dtype=dtype, x=xs, y=ys, layout=lx)
    check(ops.binary(op, xv, y, device=device), ref.binary(op, x, y), BINARY_TOL[op], dtype,
          name=what)


ACT_TOL = {"relu": "relu", "gelu": "gelu", "gelu_tanh": "gelu", "silu": "silu",
           "sigmoid": "sigmoid", "tanh": "tanh", "leaky_relu": "leaky_relu"}


def test_random_activation(case, device):
    # Catches: an activation wrong for a shape or layout (ragged last block, a strided view).
    r = draw("activation", case)
    act = str(r.choice(list(ACT_TOL)))
    dtype = str(r.choice(["f32", "bf16"]))
    x = make(r, shape(r, int(r.integers(1, 5)), CAP[device]), dtype, -5.0, 5.0)
    layout, xv = laid_out(r, x)
    what = describe(act=act, dtype=dtype, shape=x.shape, layout=layout)
    check(ops.activation(act, xv, alpha=0.05, device=device),
          ref.activation(act, x, alpha=0.05), ACT_TOL[act], dtype, name=what)


def test_random_transpose_and_concat(case, device):
    # Catches: a tile of the transpose misplaced at a ragged edge, a concat piece written at the
    # wrong offset or with another piece's strides. Both move data: compared exactly.
    r = draw("data", case)
    dtype = str(r.choice(["f32", "bf16", "f16"]))
    x = make(r, shape(r, int(r.integers(2, 5)), CAP[device]), dtype)
    layout, xv = laid_out(r, x)
    got = ops.transpose(xv, device=device)
    np.testing.assert_array_equal(got, np.swapaxes(x, -1, -2),
                                  err_msg=describe(op="transpose", dtype=dtype, shape=x.shape,
                                                   layout=layout))
    axis = int(r.integers(-x.ndim, x.ndim))
    pieces = [x]
    for _ in range(int(r.integers(0, 3))):
        s = list(x.shape)
        s[axis] = int(r.choice(DIMS[:8]))
        pieces.append(make(r, tuple(s), dtype))
    views = [laid_out(r, p)[1] for p in pieces]
    got = ops.concat(views, axis, device=device)
    np.testing.assert_array_equal(got, np.concatenate(pieces, axis),
                                  err_msg=describe(op="concat", dtype=dtype, axis=axis,
                                                   shapes=[p.shape for p in pieces]))


def test_random_attention(case, device):
    # Catches: query or key counts ragged against the blocks, grouped heads mapped to the wrong
    # kv head, the causal mask with S != T, a head dimension's padding.
    r = draw("attention", case)
    dtype = str(r.choice(["f32", "bf16"]))
    hkv = int(r.choice([1, 2]))
    h = hkv * int(r.choice([1, 2, 3]))
    d = int(r.choice([8, 24, 64, 128]))
    cap = CAP[device] // (4 * h * d)
    s, t = shape(r, 2, max(cap, 1) ** 2, (1, 2, 5, 17, 37, 64, 100, 129, 200, 300))
    s, t = min(s, max(cap, 1)), min(t, max(cap, 1))
    bsz = int(r.integers(1, 3))
    causal = bool(r.integers(2))
    q = make(r, (bsz, h, s, d), dtype, normal=True)
    k = make(r, (bsz, hkv, t, d), dtype, normal=True)
    v = make(r, (bsz, hkv, t, d), dtype, normal=True)
    what = describe(dtype=dtype, q=q.shape, k=k.shape, causal=causal)
    got = ops.attention(q, k, v, causal=causal, device=device)
    want = ref.attention(q, k, v, causal=causal)
    ref_abs = ref.attention(q, k, np.abs(ref.f64(v)), causal=causal)
    check(got, want, "attention", dtype, n=t, ref_abs=ref_abs, name=what)


def test_random_gemv_and_topk(case, device):
    # gemv: ragged rows and columns against its tiles, a transposed or strided matrix, the
    # bias and alpha. topk: k against ragged rows, ties (bf16 draws many) to the lowest index.
    r = draw("gemv_topk", case)
    dtype = str(r.choice(["f32", "bf16"]))
    m, k = shape(r, 2, CAP[device])
    a = make(r, (m, k), dtype)
    x = make(r, (k,), dtype)
    bias = make(r, (m,), dtype) if r.integers(2) else None
    alpha = float(r.choice([1.0, 0.5]))
    layout, av = laid_out(r, a)
    what = describe(op="gemv", dtype=dtype, a=a.shape, layout=layout, bias=bias is not None,
                    alpha=alpha)
    want = ref.gemv(a, x, bias=bias, alpha=alpha)
    check(ops.gemv(av, x, bias=bias, alpha=alpha, device=device), want, "gemm", dtype, n=k,
          ref_abs=np.abs(ref.f64(a)) @ np.abs(ref.f64(x)) * abs(alpha)
          + (0 if bias is None else np.abs(ref.f64(bias))), name=what)
    kk = int(r.integers(1, min(k, 64) + 1))
    values, indices = ops.topk(av, kk, device=device)
    want_idx = np.argsort(-ref.f64(a), axis=1, kind="stable")[:, :kk]
    what = describe(op="topk", dtype=dtype, x=a.shape, k=kk, layout=layout)
    np.testing.assert_array_equal(indices, want_idx, err_msg=what)
    np.testing.assert_array_equal(ref.f64(values), np.take_along_axis(ref.f64(a), want_idx, 1),
                                  err_msg=what)


def test_random_embedding_rope_cross_entropy(case, device):
    # embedding: ids of any shape (repeats, the last row), a strided table. RoPE: ragged
    # sequence and half widths. cross-entropy: classes past a block, ignored targets.
    r = draw("transformer", case)
    dtype = str(r.choice(["f32", "bf16"]))
    vocab, d = shape(r, 2, CAP[device] // 2)
    table = make(r, (vocab, d), dtype)
    ids = r.integers(0, vocab, shape(r, int(r.integers(1, 3)), 2000, DIMS[:10]))
    layout, tv = laid_out(r, table)
    got = ops.embedding(tv, ids, device=device)
    np.testing.assert_array_equal(got, table[ids], err_msg=describe(
        op="embedding", dtype=dtype, table=table.shape, ids=ids.shape, layout=layout))
    d2 = 2 * int(r.choice([1, 4, 5, 32, 64, 150]))
    s = int(r.choice([1, 7, 64, 129, 300]))
    lead = shape(r, int(r.integers(0, 3)), max(1, CAP[device] // (s * d2)), DIMS[:6])
    x = make(r, lead + (s, d2), dtype, normal=True)
    cos, sin = ops.rope_tables(s, d2, dtype=dtype)
    check(ops.rope(x, cos, sin, device=device), ref.rope(x, cos, sin), "rope", dtype,
          name=describe(op="rope", dtype=dtype, x=x.shape))
    rows, classes = shape(r, 2, CAP[device])
    logits = make(r, (rows, classes), dtype, -10, 10)
    target = r.integers(0, classes, rows)
    target[r.random(rows) < 0.2] = -100
    what = describe(op="cross_entropy", dtype=dtype, logits=logits.shape,
                    ignored=int((target == -100).sum()))
    per_row = ops.cross_entropy(logits, target, reduction="none", device=device)
    # cond: a row's loss is logsumexp - the target's logit, which cancels where the target
    # dominates (two classes, the loss 0.007 of logits near 10): the terms are their sizes
    ld = ref.f64(logits)
    lse = ld.max(1) + np.log(np.exp(ld - ld.max(1, keepdims=True)).sum(1))
    terms = np.where(target == -100, 0.0,
                     np.abs(lse) + np.abs(np.take_along_axis(ld, np.maximum(target, 0)[:, None],
                                                             1)[:, 0]))
    check(per_row, ref.cross_entropy(logits, target, "none"), "softmax", "f32", n=classes,
          ref_abs=terms, name=what)
    if (target != -100).any():
        mean = ops.cross_entropy(logits, target, device=device)
        check(np.float32([mean]), [ref.cross_entropy(logits, target)], "softmax", "f32",
              n=classes + rows, ref_abs=[terms.sum() / (target != -100).sum()], name=what)


def test_random_pool_and_conv(case, device):
    # Pooling and conv2d: windows, strides, padding, dilation and groups drawn against ragged
    # planes (a window past the edge, a stride that skips the last column).
    r = draw("pool_conv", case)
    dtype = str(r.choice(["f32", "bf16"]))
    n, ch = int(r.integers(1, 3)), int(r.choice([1, 2, 3, 4, 6, 8]))
    h, w = (int(v) for v in r.integers(3, 30, 2))
    x = make(r, (n, ch, h, w), dtype, normal=True)
    kh, kw = (int(v) for v in r.integers(1, 4, 2))
    stride = (int(r.integers(1, 3)), int(r.integers(1, 3)))
    pad = (int(r.integers(0, kh // 2 + 1)), int(r.integers(0, kw // 2 + 1)))
    mode = str(r.choice(["max", "avg"]))
    what = describe(op=f"{mode}_pool2d", dtype=dtype, x=x.shape, k=(kh, kw), stride=stride,
                    padding=pad)
    got = getattr(ops, f"{mode}_pool2d")(x, (kh, kw), stride, pad, device=device)
    check(got, ref.pool2d(mode, x, (kh, kw), stride, pad),
          "reduce_max" if mode == "max" else "reduce_mean", dtype, n=kh * kw, name=what)
    groups = int(r.choice([g for g in (1, 2, ch) if ch % g == 0]))
    oc = groups * int(r.integers(1, 4))
    dil = (int(r.integers(1, 3)), int(r.integers(1, 3)))
    if (kh - 1) * dil[0] + 1 > h + 2 * pad[0] or (kw - 1) * dil[1] + 1 > w + 2 * pad[1]:
        dil = (1, 1)
    wt = make(r, (oc, ch // groups, kh, kw), dtype)
    b = make(r, (oc,), dtype)
    what = describe(op="conv2d", dtype=dtype, x=x.shape, w=wt.shape, stride=stride, padding=pad,
                    dilation=dil, groups=groups)
    got = ops.conv2d(x, wt, b, stride=stride, padding=pad, dilation=dil, groups=groups,
                     activation="relu", device=device)
    want = ref.conv2d(x, wt, b, stride, pad, "relu", dilation=dil, groups=groups)
    ref_abs = ref.conv2d(np.abs(ref.f64(x)), np.abs(ref.f64(wt)), np.abs(ref.f64(b)), stride,
                         pad, dilation=dil, groups=groups)
    check(got, want, "gemm", dtype, n=wt.shape[1] * kh * kw, ref_abs=ref_abs, name=what)


def test_random_backward(case, device):
    # The backward kernels on drawn shapes: softmax's (a row sum over ragged rows), the norms'
    # (dweight summed over rows), attention's (grouped heads, causal with S != T).
    r = draw("backward", case)
    dtype = str(r.choice(["f32", "bf16"]))
    rows, n = shape(r, 2, CAP[device])
    x = make(r, (rows, n), dtype, -3, 3)
    dy = make(r, (rows, n), dtype)
    log = bool(r.integers(2))
    y = ops.log_softmax(x) if log else ops.softmax(x)
    yd, gd = ref.f64(y), np.abs(ref.f64(dy))
    check(ops.softmax_backward(y, dy, log=log, device=device),
          ref.softmax_backward(y, dy, log), "backward", dtype, n=n,
          ref_abs=(np.exp(yd) if log else np.abs(yd)) * gd.sum(-1, keepdims=True) + gd,
          name=describe(op="softmax_backward", log=log, dtype=dtype, shape=x.shape))
    rms = bool(r.integers(2))
    w = make(r, (n,), dtype, 0.5, 1.5)
    if rms:
        _, stats = ops.rmsnorm(x, w, return_stats=True, device=device)
        dx, dw = ops.rmsnorm_backward(dy, x, w, stats, device=device)
    else:
        _, stats = ops.layernorm(x, w, make(r, (n,), dtype), return_stats=True, device=device)
        dx, dw, _ = ops.layernorm_backward(dy, x, w, stats, device=device)
    want = ref.norm_backward(dy, x, w, 1e-6 if rms else 1e-5, rms=rms)
    what = describe(op="rmsnorm_backward" if rms else "layernorm_backward", dtype=dtype,
                    shape=x.shape)
    xd = ref.f64(x)
    mean = 0.0 if rms else xd.mean(1, keepdims=True)
    rstd = 1 / np.sqrt(((xd - mean) ** 2).mean(1, keepdims=True) + (1e-6 if rms else 1e-5))
    # xhat's terms: x - mean cancels where a row's spread is small against its values (as in
    # the forward's test)
    xt = (np.abs(xd) + np.abs(mean)) * rstd
    # dx = rstd (g - mean(g) - xhat mean(g xhat)), g = dy w: its terms (a row of one or two
    # columns cancels to about eps / x^2 of them)
    g = gd * np.abs(ref.f64(w))
    dx_terms = rstd * (g + (0 if rms else g.mean(1, keepdims=True))
                       + xt * (g * xt).mean(1, keepdims=True))
    # n: the row's sum and the half dozen roundings around it (rstd, xhat, the products, the
    # subtraction), which a row of one column leaves as the whole error
    check(dx, want[0], "backward", dtype, n=n + 6, ref_abs=dx_terms, name=what)
    check(dw, want[1], "backward", "f32", n=rows, ref_abs=(gd * xt).sum(0), name=what)
    hkv = int(r.choice([1, 2]))
    h, d = hkv * int(r.choice([1, 2])), int(r.choice([8, 24, 64]))
    s, t = (int(v) for v in r.choice([1, 5, 17, 37, 64, 100], 2))
    causal = bool(r.integers(2))
    q = make(r, (1, h, s, d), dtype, normal=True)
    k = make(r, (1, hkv, t, d), dtype, normal=True)
    v = make(r, (1, hkv, t, d), dtype, normal=True)
    do = make(r, (1, h, s, d), dtype, normal=True)
    out, lse = ops.attention(q, k, v, causal=causal, return_lse=True, device=device)
    got = ops.attention_backward(do, q, k, v, out, lse, causal=causal, device=device)
    want = ref.attention_backward(do, q, k, v, causal=causal)
    terms = ref.attention_backward_terms(do, q, k, v, causal=causal)
    for name, g, wnt, a in zip(("dq", "dk", "dv"), got, want, terms):
        what = describe(op=f"attention_backward {name}", dtype=dtype, q=q.shape, k=k.shape,
                        causal=causal)
        if not np.linalg.norm(wnt):
            # One key (t = 1): P = 1, so dS = P (dP - rowsum(dP P)) = 0 and dq = dk = 0 exactly,
            # computed as the difference of two equal sums: bounded by their terms.
            err = np.linalg.norm(ref.f64(g) - wnt)
            assert err <= 4 * d * 2.0 ** -24 * np.linalg.norm(a), f"{what}: {err:.3g}"
            continue
        check(g, wnt, "backward", dtype, n=max(t, d), ref_abs=a, name=what)
