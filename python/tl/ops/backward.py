# Backward kernels for training: activations, softmax / log_softmax, layernorm and rmsnorm
# (input, weight and bias gradients), cross-entropy (logits gradient) and embedding (table
# gradient). Each is one @tl.kernel computing in f32, like the forward ops.
# SPDX-License-Identifier: Apache-2.0
import numpy as np

import tl

from . import _common as c
from .activations import activate
from .elementwise import _launch_2d
from .rows import row_tiles
from .transformer import cross_entropy_tiles

GRAD_ACTIVATIONS = ("relu", "gelu", "gelu_tanh", "silu", "sigmoid", "tanh", "leaky_relu")


@tl.func
def activate_grad(x, ACT: tl.constexpr, alpha=0.01):
    """d ACT(x) / dx for an f32 tile x."""
    if ACT == "relu":
        g = tl.where(x > 0.0, 1.0, 0.0)
    elif ACT == "gelu":  # Phi(x) + x phi(x), both relatively accurate in the lower tail: Phi
        # as ndtr (1/2 + erf / 2 cancels there), phi = e^(-x^2 / 2) / sqrt(2 pi) with x^2 = h + l
        # split exactly, e^(-h / 2) (1 - l / 2) (e^(-h / 2) alone: 1.9e-6 off where x^2 rounds
        # by half an ulp just past 64)
        h = x * x
        g = tl.ndtr(x) + x * (0.3989422804014327 * tl.exp(-0.5 * h)) * (
            1.0 - 0.5 * tl.fma(x, x, -h))
    elif ACT == "gelu_tanh":
        u = 0.7978845608028654 * (x + 0.044715 * x * x * x)
        t = tl.tanh(u)
        g = 0.5 * (1.0 + t) + 0.5 * x * (1.0 - t * t) * 0.7978845608028654 * (
            1.0 + 3.0 * 0.044715 * x * x)
    elif ACT == "silu":
        s = tl.sigmoid(x)
        g = s * (1.0 + x * (1.0 - s))
    elif ACT == "sigmoid":
        s = tl.sigmoid(x)
        g = s * (1.0 - s)
    elif ACT == "tanh":
        t = tl.tanh(x)
        g = 1.0 - t * t
    else:
        tl.static_assert(ACT == "leaky_relu", f"no gradient for activation '{ACT}'")
        g = tl.where(x >= 0.0, 1.0, alpha)
    return g


@tl.kernel
def activation_grad_kernel(x: tl.tensor, dy: tl.tensor, dx: tl.tensor, alpha: tl.float32,
                           ACT: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr):
    """dx = dy * ACT'(x) on (rows, cols) views."""
    m0 = tl.program_id(0) * BM
    n0 = tl.program_id(1) * BN
    v = tl.load(x + (m0, n0), (BM, BN)).to(tl.float32)
    g = tl.load(dy + (m0, n0), (BM, BN)).to(tl.float32)
    tl.store(dx + (m0, n0), g * activate_grad(v, ACT, alpha))


@tl.kernel
def softmax_grad_kernel(y: tl.tensor, dy: tl.tensor, dx: tl.tensor, LOG: tl.constexpr,
                        BM: tl.constexpr, BLOCK: tl.constexpr):
    """From the forward's output y: softmax dx = y (dy - sum(dy y)); log_softmax dx = dy -
    exp(y) sum(dy). Two passes over chunks of the row."""
    r0 = tl.program_id(0) * BM
    n = y.shape[1]
    acc = tl.zeros((BM,), tl.float32)
    for k in tl.range(0, n, BLOCK):
        g = tl.load(dy + (r0, k), (BM, BLOCK)).to(tl.float32)
        if LOG:
            acc = acc + tl.sum(g, axis=1)
        else:
            acc = acc + tl.sum(g * tl.load(y + (r0, k), (BM, BLOCK)).to(tl.float32), axis=1)
    for k in tl.range(0, n, BLOCK):
        g = tl.load(dy + (r0, k), (BM, BLOCK)).to(tl.float32)
        v = tl.load(y + (r0, k), (BM, BLOCK)).to(tl.float32)
        if LOG:
            tl.store(dx + (r0, k), g - tl.exp(v) * acc[:, None])
        else:
            tl.store(dx + (r0, k), v * (g - acc[:, None]))


@tl.kernel
def norm_grad_kernel(x: tl.tensor, w: tl.tensor, dy: tl.tensor, stats: tl.tensor, dx: tl.tensor,
                     RMS: tl.constexpr, BM: tl.constexpr, BLOCK: tl.constexpr):
    """dx of layernorm (rmsnorm: RMS) per row from the forward's stats (mean, 1/sigma):
    xhat = (x - mean) rstd, g = dy w, dx = rstd (g - mean(g) - xhat mean(g xhat)); rmsnorm
    drops the mean(g) term."""
    r0 = tl.program_id(0) * BM
    n = x.shape[1]
    mean = tl.reshape(tl.load(stats + (r0, 0), (BM, 1)), (BM,))
    rstd = tl.reshape(tl.load(stats + (r0, 1), (BM, 1)), (BM,))
    sg = tl.zeros((BM,), tl.float32)
    sgx = tl.zeros((BM,), tl.float32)
    for k in tl.range(0, n, BLOCK):
        xh = (tl.load(x + (r0, k), (BM, BLOCK)).to(tl.float32) - mean[:, None]) * rstd[:, None]
        g = (tl.load(dy + (r0, k), (BM, BLOCK)).to(tl.float32)
             * tl.load(w + (k,), (BLOCK,)).to(tl.float32)[None, :])
        sg = sg + tl.sum(g, axis=1)
        sgx = sgx + tl.sum(g * xh, axis=1)
    sg = sg / n
    sgx = sgx / n
    for k in tl.range(0, n, BLOCK):
        xh = (tl.load(x + (r0, k), (BM, BLOCK)).to(tl.float32) - mean[:, None]) * rstd[:, None]
        g = (tl.load(dy + (r0, k), (BM, BLOCK)).to(tl.float32)
             * tl.load(w + (k,), (BLOCK,)).to(tl.float32)[None, :])
        d = g - xh * sgx[:, None]
        if not RMS:
            d = d - sg[:, None]
        tl.store(dx + (r0, k), d * rstd[:, None])


@tl.kernel
def norm_param_grad_kernel(x: tl.tensor, dy: tl.tensor, stats: tl.tensor, dw: tl.tensor,
                           db: tl.tensor, BR: tl.constexpr, BC: tl.constexpr):
    """dw = sum over rows of dy xhat, db = sum of dy, for BC columns per program (rows in blocks
    of BR, summed in order: deterministic)."""
    c0 = tl.program_id(0) * BC
    rows = x.shape[0]
    aw = tl.zeros((BC,), tl.float32)
    ab = tl.zeros((BC,), tl.float32)
    for r in tl.range(0, rows, BR):
        mean = tl.reshape(tl.load(stats + (r, 0), (BR, 1)), (BR,))
        rstd = tl.reshape(tl.load(stats + (r, 1), (BR, 1)), (BR,))
        xh = (tl.load(x + (r, c0), (BR, BC)).to(tl.float32) - mean[:, None]) * rstd[:, None]
        g = tl.load(dy + (r, c0), (BR, BC)).to(tl.float32)
        aw = aw + tl.sum(g * xh, axis=0)
        ab = ab + tl.sum(g, axis=0)
    tl.store(dw + (c0,), aw)
    tl.store(db + (c0,), ab)


@tl.kernel
def cross_entropy_grad_kernel(logits: tl.tensor, target: tl.tensor, scale: tl.tensor,
                              dlogits: tl.tensor, ignore_index: tl.int32, BM: tl.constexpr,
                              BLOCK: tl.constexpr):
    """dlogits[i] = (softmax(logits[i]) - onehot(target[i])) * scale[i]; 0 for ignored rows."""
    r0 = tl.program_id(0) * BM
    n = logits.shape[0]
    nc = logits.shape[1]
    rows = r0 + tl.arange(0, BM)
    m = tl.full((BM,), -float("inf"), tl.float32)
    s = tl.zeros((BM,), tl.float32)
    for k in tl.range(0, nc, BLOCK):
        v = tl.load(logits + (r0, k), (BM, BLOCK), other=-float("inf")).to(tl.float32)
        m_new = tl.maximum(m, tl.max(v, axis=1))
        s = s * tl.exp(m - m_new) + tl.sum(tl.exp(v - m_new[:, None]), axis=1)
        m = m_new
    ls = tl.log(s)  # from v - m, not added to m (as rows.softmax_kernel: exact near the max)
    t = tl.gather(target, (rows,), mask=rows < n)
    sc = tl.where(t != ignore_index, tl.load(scale + (r0,), (BM,)).to(tl.float32), 0.0)
    for k in tl.range(0, nc, BLOCK):
        v = tl.load(logits + (r0, k), (BM, BLOCK)).to(tl.float32)
        cols = k + tl.arange(0, BLOCK)
        hot = tl.where(cols[None, :] == t[:, None], 1.0, 0.0)
        p = tl.exp((v - m[:, None]) - ls[:, None])
        tl.store(dlogits + (r0, k), (p - hot) * sc[:, None])


@tl.kernel
def embedding_grad_kernel(dout: tl.tensor, ids: tl.tensor, dtable: tl.tensor, BR: tl.constexpr,
                          BD: tl.constexpr):
    """dtable[ids[i]] += dout[i] (f32 atomic adds: rows with the same id sum in any order)."""
    r0 = tl.program_id(0) * BR
    n = ids.shape[0]
    d = dtable.shape[1]
    rows = r0 + tl.arange(0, BR)
    idx = tl.gather(ids, (rows,), mask=rows < n)
    for k in tl.range(0, d, BD):
        cols = k + tl.arange(0, BD)
        mask = (rows < n)[:, None] & (cols < d)[None, :]
        g = tl.load(dout + (r0, k), (BR, BD)).to(tl.float32)
        tl.atomic_add(dtable, (idx[:, None], cols[None, :]), g, mask=mask)


def _same_shape(op, name, a, ref_name, ref):
    if a.shape != ref.shape:
        c.fail(op, name, f"expected {ref_name}'s shape {ref.shape}, got {a.shape}")


def activation_backward(act, x, dy, *, alpha=0.01, device=None):
    """dx = dy * act'(x) for the forward's input x."""
    op = f"{act}_backward"
    if act not in GRAD_ACTIVATIONS:
        c.fail("activation_backward", "act", f"no gradient for '{act}' (one of "
               f"{', '.join(GRAD_ACTIVATIONS)})")
    x = c.float_array(op, "x", x)
    dy = c.float_array(op, "dy", dy)
    _same_shape(op, "dy", dy, "x", x)
    c.same_dtype(op, "x", x, dy=dy)
    dx = c.empty(x.shape, x)
    if dx.size:
        o2 = c.rows_view(dx)
        _launch_2d(activation_grad_kernel, o2, (c.rows_view(x), c.rows_view(dy), o2,
                                                c.number(op, "alpha", alpha)), device,
                   ACT=act)
    return dx


def softmax_backward(y, dy, *, log=False, device=None):
    """The input gradient of softmax (log_softmax: log=True) along the last axis, from the
    forward's output y and the output gradient dy."""
    op = "log_softmax_backward" if log else "softmax_backward"
    y = c.float_array(op, "y", y, min_ndim=1)
    dy = c.float_array(op, "dy", dy)
    _same_shape(op, "dy", dy, "y", y)
    c.same_dtype(op, "y", y, dy=dy)
    dx = c.empty(y.shape, y)
    if dx.size:
        y2 = c.rows_view(y)
        bm, block, _ = row_tiles(*y2.shape, c.tuned("row_elements", device),
                                 c.tuned("row_block_multiple", device))
        c.launch(softmax_grad_kernel, (tl.cdiv(y2.shape[0], bm),), y2, c.rows_view(dy),
                 c.rows_view(dx), device=device, LOG=bool(log), BM=bm, BLOCK=block)
    return dx


def _norm_backward(op, dy, x, weight, stats, device, rms):
    x = c.float_array(op, "x", x, min_ndim=1)
    dy = c.float_array(op, "dy", dy)
    _same_shape(op, "dy", dy, "x", x)
    n = x.shape[-1]
    weight = c.float_array(op, "weight", weight, ndim=1)
    if weight.shape != (n,):
        c.fail(op, "weight", f"expected shape ({n},), got {weight.shape}")
    c.same_dtype(op, "x", x, dy=dy, weight=weight)
    x2, dy2 = c.rows_view(x), c.rows_view(dy)
    stats = np.asarray(stats)
    if stats.shape != (x2.shape[0], 2) or stats.dtype != np.float32:
        c.fail(op, "stats", f"expected float32 ({x2.shape[0]}, 2) from the forward's "
               f"return_stats, got {stats.dtype} {stats.shape}")
    dx = c.empty(x.shape, x)
    dw, db = c.zeros(n, np.float32), c.zeros(n, np.float32)
    if dx.size:
        bm, block, _ = row_tiles(*x2.shape, c.tuned("row_elements", device),
                                 c.tuned("row_block_multiple", device))
        c.launch(norm_grad_kernel, (tl.cdiv(x2.shape[0], bm),), x2, weight, dy2, stats,
                 c.rows_view(dx), device=device, RMS=rms, BM=bm, BLOCK=block)
        bc = c.pow2(n, 16, 64)
        c.launch(norm_param_grad_kernel, (tl.cdiv(n, bc),), x2, dy2, stats, dw, db,
                 device=device, BR=c.pow2(x2.shape[0], 1, 64), BC=bc)
    return dx, dw, db


def layernorm_backward(dy, x, weight, stats, *, device=None):
    """(dx, dweight, dbias) of layernorm(x, weight, bias) given dy and the forward's stats
    (`layernorm(..., return_stats=True)`); dweight and dbias are float32."""
    return _norm_backward("layernorm_backward", dy, x, weight, stats, device, False)


def rmsnorm_backward(dy, x, weight, stats, *, device=None):
    """(dx, dweight) of rmsnorm(x, weight) given dy and the forward's stats."""
    dx, dw, _ = _norm_backward("rmsnorm_backward", dy, x, weight, stats, device, True)
    return dx, dw


def cross_entropy_backward(logits, target, grad=1.0, *, reduction="mean", ignore_index=-100,
                           device=None):
    """d loss / d logits for cross_entropy(logits, target, reduction=...) times `grad` (the
    loss's gradient: a number for 'mean' and 'sum', an (N,) array for 'none')."""
    op = "cross_entropy_backward"
    logits = c.float_array(op, "logits", logits, ndim=2)
    target = c.index_array(op, "target", target)
    if target.shape != logits.shape[:1]:
        c.fail(op, "target", f"expected shape ({logits.shape[0]},), got {target.shape}")
    if reduction not in ("mean", "sum", "none"):
        c.fail(op, "reduction", f"expected 'mean', 'sum' or 'none', got {reduction!r}")
    ignore = c.ignore_index(op, ignore_index)
    valid = target != ignore_index
    if reduction == "none":
        scale = np.broadcast_to(np.asarray(grad, np.float32), target.shape)
    else:
        count = max(int(valid.sum()), 1) if reduction == "mean" else 1
        scale = np.full(target.shape, float(grad) / count, np.float32)
    dlogits = c.empty(logits.shape, logits)
    if logits.size:
        bm, block = cross_entropy_tiles(logits.shape, device)
        c.launch(cross_entropy_grad_kernel, (tl.cdiv(logits.shape[0], bm),), logits,
                 np.ascontiguousarray(target), np.ascontiguousarray(scale), dlogits,
                 ignore, device=device, BM=bm, BLOCK=block)
    return dlogits


def embedding_backward(dout, ids, num_embeddings, *, device=None):
    """d table for embedding(table, ids) given dout (ids.shape + (D,)): float32 (V, D) with
    every id's rows of dout summed."""
    op = "embedding_backward"
    dout = c.float_array(op, "dout", dout, min_ndim=1)
    ids = c.index_array(op, "ids", ids, bound=num_embeddings)
    if dout.shape[:-1] != ids.shape:
        c.fail(op, "dout", f"expected ids' shape {ids.shape} + (D,), got {dout.shape}")
    d = dout.shape[-1]
    dtable = c.zeros((num_embeddings, d), np.float32)
    if ids.size and d:
        flat = np.ascontiguousarray(ids.reshape(-1))
        bd = c.pow2(d, 16, 256)
        br = c.pow2(flat.size, 1, max(1, 4096 // bd))
        c.launch(embedding_grad_kernel, (tl.cdiv(flat.size, br),), dout.reshape(flat.size, d),
                 flat, dtable, device=device, BR=br, BD=bd)
    return dtable


@tl.kernel
def attention_delta_kernel(o: tl.tensor, do: tl.tensor, delta: tl.tensor, BM: tl.constexpr,
                           BD: tl.constexpr):
    """delta[bh, i] = sum_d o[bh, i, d] do[bh, i, d] (the backward's row correction)."""
    m0 = tl.program_id(0) * BM
    bh = tl.program_id(1)
    a = tl.reshape(tl.load(o + (bh, m0, 0), (1, BM, BD)), (BM, BD)).to(tl.float32)
    b = tl.reshape(tl.load(do + (bh, m0, 0), (1, BM, BD)), (BM, BD)).to(tl.float32)
    tl.store(delta + (bh, m0), tl.reshape(tl.sum(a * b, axis=1), (1, BM)))


@tl.func
def _probs(tq, tk, lse_rows, rows, cols, s_len, t_len, scale, kl, km, CAUSAL: tl.constexpr,
           HAS_LEN: tl.constexpr, HAS_MASK: tl.constexpr):
    """P of a (query block, key block): exp(q k^T scale - lse), 0 outside the sequences and,
    causal, above the diagonal; HAS_LEN: 0 at keys at or past kl (1,), the batch entry's key
    length (a query with no key left has lse = -inf and every P 0: its gradients are 0);
    HAS_MASK: 0 at keys whose mask km (1, BN) is 0."""
    ok = (rows < s_len)[:, None] & (cols < t_len)[None, :]
    if CAUSAL:
        ok = ok & (cols[None, :] <= rows[:, None])
    if HAS_LEN:
        ok = ok & (cols[None, :] < kl[:, None])
    if HAS_MASK:
        ok = ok & (km != 0)
    sc = tl.dot(tq, tl.trans(tk)) * scale
    return tl.where(ok, tl.exp(sc - lse_rows[:, None]), 0.0)


@tl.kernel
def attention_dq_kernel(q: tl.tensor, k: tl.tensor, v: tl.tensor, do: tl.tensor,
                        lse: tl.tensor, delta: tl.tensor, dq: tl.tensor, scale: tl.float32,
                        group: tl.int32, klen: tl.tensor, heads: tl.int32,
                        CAUSAL: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr,
                        BD: tl.constexpr, HAS_LEN: tl.constexpr = False,
                        HAS_MASK: tl.constexpr = False):
    """dq = (P * (dO V^T - delta)) K scale for BM queries of one head, keys in blocks of BN.
    klen: the key lengths (B,) with HAS_LEN, the key mask (B, T) int32 with HAS_MASK."""
    m0 = tl.program_id(0) * BM
    bh = tl.program_id(1)
    hk = bh // group  # b H + h over group is b Hkv + h / group (H is a multiple of group)
    s_len = q.shape[1]
    t_len = k.shape[1]
    rows = m0 + tl.arange(0, BM)
    tq = tl.reshape(tl.load(q + (bh, m0, 0), (1, BM, BD)), (BM, BD)).to(tl.float32)
    tdo = tl.reshape(tl.load(do + (bh, m0, 0), (1, BM, BD)), (BM, BD)).to(tl.float32)
    lr = tl.reshape(tl.load(lse + (bh, m0), (1, BM)), (BM,))
    dl = tl.reshape(tl.load(delta + (bh, m0), (1, BM)), (BM,))
    acc = tl.zeros((BM, BD), tl.float32)
    kl = tl.zeros((1,), tl.int32)
    if HAS_LEN:
        kl = tl.load(klen + (bh // heads,), (1,))
    hi = t_len
    if CAUSAL:
        hi = tl.minimum(t_len, m0 + BM)
    for n0 in tl.range(0, hi, BN):
        tk = tl.reshape(tl.load(k + (hk, n0, 0), (1, BN, BD)), (BN, BD)).to(tl.float32)
        tv = tl.reshape(tl.load(v + (hk, n0, 0), (1, BN, BD)), (BN, BD)).to(tl.float32)
        km = kl  # unread without HAS_MASK
        if HAS_MASK:
            km = tl.load(klen + (bh // heads, n0), (1, BN))
        p = _probs(tq, tk, lr, rows, n0 + tl.arange(0, BN), s_len, t_len, scale, kl, km, CAUSAL,
                   HAS_LEN, HAS_MASK)
        ds = p * (tl.dot(tdo, tl.trans(tv)) - dl[:, None])
        acc = tl.dot(ds, tk, acc=acc)
    tl.store(dq + (bh, m0, 0), tl.reshape(acc * scale, (1, BM, BD)))


@tl.kernel
def attention_dkv_kernel(q: tl.tensor, k: tl.tensor, v: tl.tensor, do: tl.tensor,
                         lse: tl.tensor, delta: tl.tensor, dk: tl.tensor, dv: tl.tensor,
                         scale: tl.float32, group: tl.int32, klen: tl.tensor,
                         heads: tl.int32, CAUSAL: tl.constexpr, BM: tl.constexpr,
                         BN: tl.constexpr, BD: tl.constexpr, HAS_LEN: tl.constexpr = False,
                         HAS_MASK: tl.constexpr = False):
    """For BN keys and one query head: dv = P^T dO and dk = (P * (dO V^T - delta))^T Q scale,
    queries in blocks of BM. dk, dv: (B H, T, D) f32, per query head (the host sums the heads
    that share a kv head: no atomics, and few scalars for the TNPU's registers)."""
    n0 = tl.program_id(0) * BN
    bh = tl.program_id(1)
    hk = bh // group  # b H + h over group is b Hkv + h / group (H is a multiple of group)
    s_len = q.shape[1]
    cols = n0 + tl.arange(0, BN)
    tk = tl.reshape(tl.load(k + (hk, n0, 0), (1, BN, BD)), (BN, BD)).to(tl.float32)
    tv = tl.reshape(tl.load(v + (hk, n0, 0), (1, BN, BD)), (BN, BD)).to(tl.float32)
    adk = tl.zeros((BN, BD), tl.float32)
    adv = tl.zeros((BN, BD), tl.float32)
    kl = tl.zeros((1,), tl.int32)
    if HAS_LEN:
        kl = tl.load(klen + (bh // heads,), (1,))
    km = kl  # unread without HAS_MASK
    if HAS_MASK:
        km = tl.load(klen + (bh // heads, n0), (1, BN))
    lo = 0
    if CAUSAL:
        lo = (n0 // BM) * BM  # queries before the block's first key see none of it
    for m0 in tl.range(lo, s_len, BM):
        rows = m0 + tl.arange(0, BM)
        tq = tl.reshape(tl.load(q + (bh, m0, 0), (1, BM, BD)), (BM, BD)).to(tl.float32)
        tdo = tl.reshape(tl.load(do + (bh, m0, 0), (1, BM, BD)), (BM, BD)).to(tl.float32)
        lr = tl.reshape(tl.load(lse + (bh, m0), (1, BM)), (BM,))
        dl = tl.reshape(tl.load(delta + (bh, m0), (1, BM)), (BM,))
        p = _probs(tq, tk, lr, rows, cols, s_len, k.shape[1], scale, kl, km, CAUSAL, HAS_LEN,
                   HAS_MASK)
        adv = tl.dot(tl.trans(p), tdo, acc=adv)
        ds = p * (tl.dot(tdo, tl.trans(tv)) - dl[:, None])
        adk = tl.dot(tl.trans(ds), tq, acc=adk)
    tl.store(dk + (bh, n0, 0), tl.reshape(adk * scale, (1, BN, BD)))
    tl.store(dv + (bh, n0, 0), tl.reshape(adv, (1, BN, BD)))


def attention_backward(do, q, k, v, out, lse, *, causal=False, scale=None, device=None,
                       key_lengths=None, key_mask=None):
    """(dq, dk, dv) of attention(q, k, v, causal=, scale=, key_lengths= or key_mask=) given
    the output gradient do, the forward's output and its log-sum-exp (`attention(...,
    return_lse=True)`).
    Shapes as the forward's; dk and dv sum over the query heads that share a kv head. Keys at
    or past key_lengths (or False in key_mask) get zero gradients, as do the queries left
    with no key."""
    from .transformer import MAX_HEAD_DIM
    import math
    op = "attention_backward"
    q = c.float_array(op, "q", q, ndim=4)
    k = c.float_array(op, "k", k, ndim=4)
    v = c.float_array(op, "v", v, ndim=4)
    out = c.float_array(op, "out", out, ndim=4)
    do = c.float_array(op, "do", do, ndim=4)
    c.same_dtype(op, "q", q, k=k, v=v, out=out, do=do)
    bq, h, s, d = q.shape
    if k.shape[0] != bq or k.shape[3] != d or k.shape[1] == 0 or h % k.shape[1]:
        c.fail(op, "k", f"expected shape ({bq}, Hkv, T, {d}) with Hkv dividing {h}, got "
               f"{k.shape}")
    if v.shape != k.shape:
        c.fail(op, "v", f"expected k's shape {k.shape}, got {v.shape}")
    _same_shape(op, "out", out, "q", q)
    _same_shape(op, "do", do, "q", q)
    lse = np.asarray(lse)
    if lse.shape != (bq, h, s) or lse.dtype != np.float32:
        c.fail(op, "lse", f"expected float32 {(bq, h, s)} from attention(..., return_lse=True), "
               f"got {lse.dtype} {lse.shape}")
    if d > MAX_HEAD_DIM:
        c.fail(op, "q", f"head dimension {d} is above {MAX_HEAD_DIM}")
    hk, t = k.shape[1], k.shape[2]
    dq = c.empty(q.shape, q)
    if q.size == 0:  # no query (S = 0, or no head): no gradient reaches the keys
        return dq, c.zeros(k.shape, k), c.zeros(v.shape, v)
    if t == 0:
        c.fail(op, "k", "no keys (T = 0)")  # as the forward
    from .transformer import padding_masks
    kl, has_len, has_mask = padding_masks(op, key_lengths, key_mask, bq, t)
    lens = (kl, h)
    scale = 1.0 / math.sqrt(d) if scale is None else c.number(op, "scale", scale)
    bd = c.pow2(d, 16)
    bm = bn = 32 if bd <= 64 else 16
    q3, o3, do3 = (a.reshape(bq * h, s, d) for a in (q, out, do))
    k3, v3 = k.reshape(bq * hk, t, d), v.reshape(bq * hk, t, d)
    lse2 = lse.reshape(bq * h, s)
    delta = c.empty((bq * h, s), np.float32)
    c.launch(attention_delta_kernel, (tl.cdiv(s, bm), bq * h), o3, do3, delta, device=device,
             BM=bm, BD=bd)
    c.launch(attention_dq_kernel, (tl.cdiv(s, bm), bq * h), q3, k3, v3, do3, lse2, delta,
             dq.reshape(bq * h, s, d), scale, h // hk, *lens, device=device,
             CAUSAL=bool(causal), BM=bm, BN=bn, BD=bd, HAS_LEN=has_len, HAS_MASK=has_mask)
    dk_h, dv_h = (c.empty((bq * h, t, d), np.float32) for _ in range(2))
    c.launch(attention_dkv_kernel, (tl.cdiv(t, bn), bq * h), q3, k3, v3, do3, lse2, delta,
             dk_h, dv_h, scale, h // hk, *lens, device=device, CAUSAL=bool(causal), BM=bm,
             BN=bn, BD=bd, HAS_LEN=has_len, HAS_MASK=has_mask)
    # Each kv head's gradient: the sum over the query heads sharing it (tl.ops.sum, in order).
    from .reduce import reduce as _reduce
    grads = []
    for part in (dk_h, dv_h):
        g = _reduce("sum", part.reshape(bq, hk, h // hk, t, d), 2, device=device)
        grads.append(g if c.dtype_name(k) == "f32" else _to_dtype(g, k))
    return dq, grads[0], grads[1]


def _to_dtype(a, like):
    """float32 `a` rounded to `like`'s dtype (bf16 through tl.bf16; under tl.torch on CUDA
    tensors, by torch on the device: `a` is a stand-in there, its values not on the host)."""
    from .. import bf16
    hook = c.HOOK.get()
    if hook is not None and hook.mode != "cpu":
        return hook.cast(a, like.dtype)
    return bf16.array(a) if c.dtype_name(like) == "bf16" else a.astype(like.dtype)
