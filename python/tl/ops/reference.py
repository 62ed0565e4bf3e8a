# fp64 numpy references of the tl.ops ops: the same math in float64 from the kernels' inputs
# (bf16 arrays widened exactly), to compare with tl.testing.assert_close.
# SPDX-License-Identifier: Apache-2.0
"""References in float64.

>>> import numpy as np
>>> from tl.ops import reference
>>> reference.silu(np.float32([0.0])).tolist()
[0.0]
"""
import math

import numpy as np

from .. import bf16, fp8


def f64(a):
    """`a` as float64 (bf16 and fp8 arrays through their values, not their bits)."""
    a = np.asarray(a)
    if fp8.is_fp8(a):
        return fp8.to_float32(a).astype(np.float64)
    return bf16.to_float32(a).astype(np.float64) if bf16.is_bf16(a) else a.astype(np.float64)


_erfc = np.vectorize(math.erfc, otypes=[np.float64])


def ndtr(x):
    """Phi(x) = erfc(-x / sqrt 2) / 2 in float64: relatively accurate in the lower tail, where
    1/2 + erf(x / sqrt 2) / 2 cancels (to 0 below x = -8.3 in float64)."""
    return 0.5 * _erfc(-f64(x) / math.sqrt(2))


def activation(act, x, alpha=0.01):
    x = f64(x)
    if act == "relu":
        return np.maximum(x, 0)
    if act == "gelu":
        return x * ndtr(x)
    if act == "gelu_tanh":
        return 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)))
    if act == "silu":
        return x / (1 + np.exp(-x))
    if act == "sigmoid":
        return 1 / (1 + np.exp(-x))
    if act == "tanh":
        return np.tanh(x)
    if act == "leaky_relu":
        return np.where(x >= 0, x, alpha * x)
    assert act == "none", act
    return x


def silu(x):
    return activation("silu", x)


def binary(op, x, y):
    x, y = f64(x), f64(y)
    return {"add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.divide,
            "swiglu": lambda a, b: activation("silu", a) * b,
            "geglu": lambda a, b: activation("gelu", a) * b}[op](x, y)


def softmax(x, axis=-1):
    x = f64(x)
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def log_softmax(x, axis=-1):
    x = f64(x)
    m = x.max(axis=axis, keepdims=True)
    return x - m - np.log(np.exp(x - m).sum(axis=axis, keepdims=True))


def layernorm(x, weight=None, bias=None, eps=1e-5):
    x = f64(x)
    y = (x - x.mean(-1, keepdims=True)) / np.sqrt(x.var(-1, keepdims=True) + eps)
    y = y * f64(weight) if weight is not None else y
    return y + f64(bias) if bias is not None else y


def rmsnorm(x, weight=None, eps=1e-6):
    x = f64(x)
    y = x / np.sqrt((x * x).mean(-1, keepdims=True) + eps)
    return y * f64(weight) if weight is not None else y


def reduce(op, x, axis=-1, correction=0):
    x = f64(x)
    if op == "var":
        return x.var(axis=axis, ddof=correction)
    return getattr(np, op)(x, axis=axis)


def cumsum(x, axis=-1):
    return np.cumsum(f64(x), axis=axis)


def gemm(a, b, bias=None, activation_="none", residual=None, alpha=1.0):
    r = alpha * (f64(a) @ f64(b))
    if bias is not None:
        r = r + f64(bias)
    r = activation(activation_, r)
    return r + f64(residual) if residual is not None else r


def gemv(a, x, bias=None, alpha=1.0):
    r = alpha * (f64(a) @ f64(x))
    return r + f64(bias) if bias is not None else r


def transpose(x):
    return np.swapaxes(f64(x), -1, -2)


def rope(x, cos, sin):
    x, cos, sin = f64(x), f64(cos), f64(sin)
    h = x.shape[-1] // 2
    x1, x2 = x[..., :h], x[..., h:]
    return np.concatenate([x1 * cos - x2 * sin, x2 * cos + x1 * sin], axis=-1)


def embedding(table, ids):
    return f64(table)[np.asarray(ids)]


def cross_entropy(logits, target, reduction="mean", ignore_index=-100):
    x = f64(logits)
    target = np.asarray(target)
    keep = target != ignore_index
    m = x.max(1)
    lse = m + np.log(np.exp(x - m[:, None]).sum(1))
    picked = x[np.arange(x.shape[0]), np.where(keep, target, 0)]
    loss = np.where(keep, lse - picked, 0.0)
    if reduction == "none":
        return loss
    if reduction == "sum":
        return loss.sum()
    return loss.sum() / keep.sum() if keep.any() else np.nan  # none counted: torch's NaN


def attention_mask(b, s, t, causal=False, key_lengths=None, key_mask=None):
    """(B, 1, S, T) bool: key j visible to query i (causal: j <= i; key_lengths: j < len[b];
    key_mask (B, T): key_mask[b, j] true)."""
    ok = np.ones((b, 1, s, t), bool)
    if causal:
        ok &= np.tril(np.ones((s, t), bool))
    if key_lengths is not None:
        ok &= (np.arange(t)[None, :] < np.asarray(key_lengths)[:, None])[:, None, None, :]
    if key_mask is not None:
        ok &= (np.asarray(key_mask) != 0)[:, None, None, :]
    return ok


def masked_softmax(s, ok):
    """softmax over the visible scores; a row with none visible is all zeros (FlashAttention's
    convention, which tl.ops.attention follows)."""
    s = np.where(ok, s, -np.inf)
    m = s.max(-1, keepdims=True)
    e = np.where(ok, np.exp(s - np.where(np.isfinite(m), m, 0)), 0.0)
    tot = e.sum(-1, keepdims=True)
    return np.where(tot > 0, e / np.where(tot > 0, tot, 1), 0.0)


def attention(q, k, v, causal=False, scale=None, key_lengths=None, key_mask=None):
    q, k, v = f64(q), f64(k), f64(v)
    group = q.shape[1] // k.shape[1]
    k, v = np.repeat(k, group, axis=1), np.repeat(v, group, axis=1)
    scale = 1 / math.sqrt(q.shape[-1]) if scale is None else scale
    s = q @ np.swapaxes(k, -1, -2) * scale
    if key_lengths is not None or key_mask is not None:
        ok = attention_mask(q.shape[0], s.shape[-2], s.shape[-1], causal, key_lengths, key_mask)
        return masked_softmax(s, ok) @ v
    if causal:
        s = np.where(np.tril(np.ones(s.shape[-2:], bool)), s, -np.inf)
    return softmax(s) @ v


def attention_lse(q, k, causal=False, scale=None, key_lengths=None, key_mask=None):
    """Each query's log-sum-exp of its visible scores (B, H, S); -inf where none is visible."""
    q, k = f64(q), f64(k)
    k = np.repeat(k, q.shape[1] // k.shape[1], axis=1)
    scale = 1 / math.sqrt(q.shape[-1]) if scale is None else scale
    s = q @ np.swapaxes(k, -1, -2) * scale
    ok = attention_mask(q.shape[0], s.shape[-2], s.shape[-1], causal, key_lengths, key_mask)
    s = np.where(ok, s, -np.inf)
    m = s.max(-1)
    mm = np.where(np.isfinite(m), m, 0)
    with np.errstate(divide="ignore"):
        return mm + np.log(np.where(ok, np.exp(s - mm[..., None]), 0).sum(-1))


# ---- backward ------------------------------------------------------------------------------------

def activation_grad(act, x, alpha=0.01):
    """d act(x) / dx in float64."""
    x = f64(x)
    if act == "relu":
        return (x > 0).astype(np.float64)
    if act == "gelu":
        return ndtr(x) + x * np.exp(-x * x / 2) / math.sqrt(2 * math.pi)
    if act == "gelu_tanh":
        k = math.sqrt(2 / math.pi)
        t = np.tanh(k * (x + 0.044715 * x ** 3))
        return 0.5 * (1 + t) + 0.5 * x * (1 - t * t) * k * (1 + 3 * 0.044715 * x * x)
    if act in ("silu", "sigmoid"):
        s = 1 / (1 + np.exp(-x))
        return s * (1 + x * (1 - s)) if act == "silu" else s * (1 - s)
    if act == "tanh":
        return 1 - np.tanh(x) ** 2
    assert act == "leaky_relu", act
    return np.where(x >= 0, 1.0, alpha)


def softmax_backward(y, dy, log=False):
    y, dy = f64(y), f64(dy)
    if log:
        return dy - np.exp(y) * dy.sum(-1, keepdims=True)
    return y * (dy - (dy * y).sum(-1, keepdims=True))


def norm_backward(dy, x, weight, eps, rms=False):
    """(dx, dweight, dbias) of layernorm (rmsnorm: rms=True) in float64."""
    dy, x, w = f64(dy), f64(x), f64(weight)
    mean = 0 if rms else x.mean(-1, keepdims=True)
    var = (x * x).mean(-1, keepdims=True) if rms else x.var(-1, keepdims=True)
    rstd = 1 / np.sqrt(var + eps)
    xh = (x - mean) * rstd
    g = dy * w
    d = g - xh * (g * xh).mean(-1, keepdims=True)
    if not rms:
        d = d - g.mean(-1, keepdims=True)
    axes = tuple(range(x.ndim - 1))
    return d * rstd, (dy * xh).sum(axes), dy.sum(axes)


def cross_entropy_backward(logits, target, grad=1.0, reduction="mean", ignore_index=-100):
    x = f64(logits)
    target = np.asarray(target)
    keep = target != ignore_index
    p = softmax(x)
    p[np.arange(x.shape[0])[keep], target[keep]] -= 1
    if reduction == "none":
        scale = np.broadcast_to(np.asarray(grad, np.float64), target.shape)
    else:
        scale = np.full(target.shape, grad / (max(int(keep.sum()), 1) if reduction == "mean"
                                              else 1))
    return p * np.where(keep, scale, 0)[:, None]


def embedding_backward(dout, ids, num_embeddings):
    dout = f64(dout)
    out = np.zeros((num_embeddings, dout.shape[-1]))
    np.add.at(out, np.asarray(ids).reshape(-1), dout.reshape(-1, dout.shape[-1]))
    return out


def _attention_backward(do, q, k, v, causal, scale, key_lengths, key_mask, terms):
    do, q, k, v = f64(do), f64(q), f64(k), f64(v)
    group = q.shape[1] // k.shape[1]
    ke, ve = np.repeat(k, group, axis=1), np.repeat(v, group, axis=1)
    scale = 1 / math.sqrt(q.shape[-1]) if scale is None else scale
    s = q @ np.swapaxes(ke, -1, -2) * scale
    if key_lengths is not None or key_mask is not None:
        p = masked_softmax(s, attention_mask(q.shape[0], s.shape[-2], s.shape[-1], causal,
                                             key_lengths, key_mask))
    else:
        if causal:
            s = np.where(np.tril(np.ones(s.shape[-2:], bool)), s, -np.inf)
        p = softmax(s)
    if terms:  # magnitudes: every product and sum below taken of absolute values
        do, q, ke, ve = np.abs(do), np.abs(q), np.abs(ke), np.abs(ve)
        ds = p * (do @ np.swapaxes(ve, -1, -2) + (do * (p @ ve)).sum(-1, keepdims=True))
    else:
        dp = do @ np.swapaxes(ve, -1, -2)
        ds = p * (dp - (dp * p).sum(-1, keepdims=True))
    dv = np.swapaxes(p, -1, -2) @ do
    dq = ds @ ke * scale
    dk = np.swapaxes(ds, -1, -2) @ q * scale
    b, h = q.shape[:2]
    fold = lambda a: a.reshape(b, h // group, group, *a.shape[2:]).sum(2)  # noqa: E731
    return dq, fold(dk), fold(dv)


def attention_backward(do, q, k, v, causal=False, scale=None, key_lengths=None, key_mask=None):
    """(dq, dk, dv) in float64; dk, dv summed over the query heads sharing a kv head."""
    return _attention_backward(do, q, k, v, causal, scale, key_lengths, key_mask, False)


def attention_backward_terms(do, q, k, v, causal=False, scale=None, key_lengths=None,
                             key_mask=None):
    """The size of the terms each of attention_backward's results sums (a cond for its error
    bound), in float64: with P the forward's probabilities, |dS| <= P (|do| |v|^T +
    rowsum(|do| (P |v|))), then |dS| |k|, |dS|^T |q| and P^T |do|. The results themselves
    cancel (dP - rowsum(dP P): with one key dq and dk are 0 exactly), so they bound nothing."""
    return _attention_backward(do, q, k, v, causal, scale, key_lengths, key_mask, True)


def quant_scale(x, qmax, axis):
    """The kernels' scales (float32) of x's rows (axis 0), columns (axis 1) or whole (None,
    shape (1,)): max|x| / qmax in float32, 1 where max|x| is 0 (NaN propagates)."""
    a = np.abs(f64(x).astype(np.float32))
    amax = a.max(1) if axis == 0 else a.max(0) if axis == 1 else a.max().reshape(1)
    return np.where(amax == 0, np.float32(1), amax / np.float32(qmax)).astype(np.float32)


def quantize(x, qmax, axis=0, fmt=None):
    """(q, scale) of symmetric scaled quantization as the kernels do it, step by step in float32
    (x times 1 / scale, the reciprocal and the product each rounded to f32, a scale below 2^-100
    and x lifted by 2^64 first as the kernel does (exact, so that the reciprocal does not
    overflow); clamped to [-qmax, qmax], NaN kept), then rounded to nearest even: to int8
    (NaN -> 0) when `fmt` is None, else to fp8 format `fmt` (tl.fp8's encoder, whose rounding
    the tests check against its own exhaustive decode)."""
    x32 = f64(x).astype(np.float32)
    scale = quant_scale(x, qmax, axis)
    s = scale[:, None] if axis == 0 else scale[None, :] if axis == 1 else scale[0]
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        lift = np.where(s < np.float32(2.0**-100), np.float32(2.0**64), np.float32(1))
        inv = (np.float32(1) / (s * lift)).astype(np.float32)
        v = np.clip((x32 * lift * inv).astype(np.float32), np.float32(-qmax), np.float32(qmax))
    if fmt is None:
        return np.where(np.isnan(v), 0, np.rint(v)).astype(np.int8), scale
    return fp8.array(v, fmt), scale


def quantize_int8(x, axis=0):
    """(q, scale) of symmetric int8 quantization (per row by default)."""
    return quantize(x, 127.0, axis)


def pool2d(mode, x, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
           count_include_pad=True):
    """torch's max_pool2d / avg_pool2d in float64, window by window: the padding is -inf for max
    and zeros for avg, whose divisor counts the window's positions inside the padded input
    (count_include_pad) or inside x."""
    from .data import pool_output_size
    x = f64(x)
    pair = lambda v: (v, v) if isinstance(v, int) else tuple(v)  # noqa: E731
    (kh, kw), (ph, pw), (dh, dw) = pair(kernel_size), pair(padding), pair(dilation)
    sh, sw = (kh, kw) if stride is None else pair(stride)
    h, w = x.shape[2:]
    oh = pool_output_size(h, kh, sh, ph, dh, ceil_mode)
    ow = pool_output_size(w, kw, sw, pw, dw, ceil_mode)
    out = np.empty(x.shape[:2] + (oh, ow))
    for i in range(oh):
        for j in range(ow):
            rows = [i * sh - ph + a * dh for a in range(kh)]
            cols = [j * sw - pw + b * dw for b in range(kw)]
            r_in = [r for r in rows if 0 <= r < h]
            c_in = [q for q in cols if 0 <= q < w]
            win = x[:, :, r_in][:, :, :, c_in]
            if mode == "max":
                out[:, :, i, j] = win.max((2, 3))
            else:
                if count_include_pad:
                    count = sum(r < h + ph for r in rows) * sum(q < w + pw for q in cols)
                else:
                    count = len(r_in) * len(c_in)
                out[:, :, i, j] = win.sum((2, 3)) / count
    return out


def conv2d(x, weight, bias=None, stride=1, padding=0, activation_="none", dilation=1,
           groups=1):
    """Cross-correlation in float64 by explicit windows (torch's conv2d: weight (OC, C/groups,
    KH, KW), dilation, groups)."""
    x, w = f64(x), f64(weight)
    sh, sw = (stride, stride) if isinstance(stride, int) else stride
    ph, pw = (padding, padding) if isinstance(padding, int) else padding
    dh, dw = (dilation, dilation) if isinstance(dilation, int) else dilation
    x = np.pad(x, ((0, 0), (0, 0), (ph, ph), (pw, pw)))
    oc, cg, kh, kw = w.shape
    og = oc // groups
    oh = (x.shape[2] - dh * (kh - 1) - 1) // sh + 1
    ow = (x.shape[3] - dw * (kw - 1) - 1) // sw + 1
    out = np.zeros((x.shape[0], oc, oh, ow))
    for g in range(groups):
        xg, wg = x[:, g * cg:(g + 1) * cg], w[g * og:(g + 1) * og]
        for i in range(kh):
            for j in range(kw):
                r, q = i * dh, j * dw
                patch = xg[:, :, r:r + sh * (oh - 1) + 1:sh, q:q + sw * (ow - 1) + 1:sw]
                out[:, g * og:(g + 1) * og] += np.einsum("nchw,oc->nohw", patch, wg[:, :, i, j])
    if bias is not None:
        out += f64(bias)[None, :, None, None]
    return activation(activation_, out)


def gemm_int8(a, b):
    """The exact int8 GEMM: int64 sums."""
    return np.asarray(a).astype(np.int64) @ np.asarray(b).astype(np.int64)


def qgemm_f32(acc, scale_a, scale_b):
    """The dequantizing epilogue as the kernel rounds it, in float32: acc (exact) rounded to
    f32, times scale_a[row], then times scale_b[col] (each product rounded)."""
    r = np.asarray(acc).astype(np.float32) * np.broadcast_to(scale_a, (len(acc),))[:, None]
    return (r * np.broadcast_to(scale_b, (np.shape(acc)[1],))[None, :]).astype(np.float32)


def qgemm(a, b, scale_a, scale_b, bias=None, act="none"):
    """activation(a @ b * scale_a[row] * scale_b[col] + bias) in float64 (a, b: int8 or fp8)."""
    acc = f64(a) @ f64(b)
    r = acc * f64(scale_a).reshape(-1)[:, None] * f64(scale_b).reshape(-1)[None, :]
    if bias is not None:
        r = r + f64(bias)[None, :]
    return activation(act, r)
