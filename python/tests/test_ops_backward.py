# tl.ops backward kernels against fp64 gradients (analytic, from the same inputs).
# SPDX-License-Identifier: Apache-2.0
import numpy as np
import pytest

import tl.ops as ops
from tl.ops import reference as ref
from tl.ops.backward import GRAD_ACTIVATIONS
from ops_util import DEVICES, DTYPES, check, key_masks, make

pytestmark = pytest.mark.parametrize("device", DEVICES)
rng = np.random.default_rng(23)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("act", GRAD_ACTIVATIONS)
def test_activation_backward(act, dtype, device):
    # Catches: a wrong derivative (gelu's x phi(x) term, silu's s (1 + x (1 - s))), dy not
    # multiplied in, ragged edges.
    x, dy = make(rng, (37, 100), dtype, -4, 4), make(rng, (37, 100), dtype)
    got = ops.activation_backward(act, x, dy, alpha=0.05, device=device)
    check(got, ref.f64(dy) * ref.activation_grad(act, x, 0.05), "backward", dtype, n=1)


def test_gelu_backward_in_the_lower_tail(device):
    # Catches: Phi as 1/2 + erf / 2 (cancels for x < 0: 1e-5 normwise over [-3, -9]) or phi's
    # e^(-x^2 / 2) of the rounded x^2 (half its rounding, relative: up to 1.9e-6 where x^2 is just
    # past 64; the 68 x of [-8.1, -8] whose x^2 rounds most), with the tail alone carrying the
    # norm.
    near = np.unique(np.linspace(-8.1, -8.0, 200001).astype(np.float32))
    x2 = near.astype(np.float64) ** 2
    worst = near[np.argsort(np.abs((near * near).astype(np.float64) - x2) / x2)[-68:]]
    for x in (np.linspace(-3.0, -9.0, 68).astype(np.float32), worst):
        x = x.reshape(4, 17)
        dy = np.ones_like(x)
        got = ops.activation_backward("gelu", x, dy, device=device)
        check(got, ref.f64(dy) * ref.activation_grad("gelu", x, 0.01), "backward", "f32", n=1)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(37, 100), (3, 5000), (5, 384)])  # 384: row_block_multiple
@pytest.mark.parametrize("log", [False, True])
def test_softmax_backward(log, shape, dtype, device):
    # Catches: the row sum of dy y missing or taken over the padded width, the log form's
    # exp(y), chunks past the first (5000 columns).
    x = make(rng, shape, dtype, -5, 5)
    y = ops.log_softmax(x) if log else ops.softmax(x)
    dy = make(rng, shape, dtype)
    got = ops.softmax_backward(y, dy, log=log, device=device)
    want = ref.softmax_backward(y, dy, log)
    yd, gd = ref.f64(y), np.abs(ref.f64(dy))
    ref_abs = (np.exp(yd) if log else np.abs(yd)) * gd.sum(-1, keepdims=True) + gd
    check(got, want, "backward", dtype, n=shape[-1], ref_abs=ref_abs)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("rows, n", [(37, 100), (37, 384), (3, 5000)])
@pytest.mark.parametrize("rms", [False, True])
def test_norm_backward(rms, rows, n, dtype, device):
    # Catches: the mean(g) term kept for rmsnorm or dropped for layernorm, the xhat term,
    # dweight / dbias summed over columns instead of rows, stats misread; 384 is the tile's own
    # width on llvm-cpu, 5000 rows in chunks (the sums across chunks, the last one ragged).
    x = make(rng, (rows, n), dtype, -2, 3)
    w = make(rng, (n,), dtype, 0.5, 1.5)
    dy = make(rng, (rows, n), dtype)
    if rms:
        _, stats = ops.rmsnorm(x, w, return_stats=True, device=device)
        dx, dw = ops.rmsnorm_backward(dy, x, w, stats, device=device)
        db = None
    else:
        _, stats = ops.layernorm(x, w, make(rng, (n,), dtype), return_stats=True,
                                 device=device)
        dx, dw, db = ops.layernorm_backward(dy, x, w, stats, device=device)
    want = ref.norm_backward(dy, x, w, 1e-6 if rms else 1e-5, rms=rms)
    check(dx, want[0], "backward", dtype, n=n)
    check(dw, want[1], "backward", "f32", n=rows,
          ref_abs=np.abs(ref.f64(dy)).sum(0) * 3)  # |xhat| <= ~3 here
    if db is not None:
        check(db, want[2], "backward", "f32", n=rows, ref_abs=np.abs(ref.f64(dy)).sum(0))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_cross_entropy_backward(reduction, dtype, device):
    # Catches: the one-hot at the wrong class, ignored rows given a gradient, the mean's count
    # including ignored rows, the per-row gradient of 'none' ignored; 1000 classes: the tile's
    # own width on llvm-cpu (row_block_multiple).
    classes = {"sum": 5000, "mean": 1000, "none": 100}[reduction]
    logits = make(rng, (37, classes), dtype, -5, 5)
    target = rng.integers(0, logits.shape[1], 37)
    target[[0, 9]] = -100
    grad = rng.uniform(0.5, 2, 37).astype(np.float32) if reduction == "none" else 2.0
    got = ops.cross_entropy_backward(logits, target, grad, reduction=reduction, device=device)
    want = ref.cross_entropy_backward(logits, target, grad, reduction)
    check(got, want, "backward", dtype, n=logits.shape[1])


@pytest.mark.parametrize("dtype", DTYPES)
def test_embedding_backward(dtype, device):
    # Catches: repeated ids overwriting instead of adding (10 ids over 36 rows), columns past
    # one block (300 > 256).
    ids = rng.integers(0, 10, (4, 9))
    dout = make(rng, (4, 9, 300), dtype)
    got = ops.embedding_backward(dout, ids, 10, device=device)
    want = ref.embedding_backward(dout, ids, 10)
    check(got, want, "backward", "f32", n=36,
          ref_abs=ref.embedding_backward(np.abs(ref.f64(dout)), ids, 10))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("causal", [False, True])
def test_attention_backward(causal, dtype, device):
    # Catches: P recomputed without the forward's lse, the delta term, dk / dv of grouped
    # queries not summed over the group (4 query heads on 2 kv heads), causal blocks skipped
    # wrongly (keys past the diagonal, 45 keys for 37 queries), the scale missing in dq or dk.
    q = make(rng, (2, 4, 37, 24), dtype, normal=True)
    k = make(rng, (2, 2, 45, 24), dtype, normal=True)
    v = make(rng, (2, 2, 45, 24), dtype, normal=True)
    do = make(rng, (2, 4, 37, 24), dtype, normal=True)
    out, lse = ops.attention(q, k, v, causal=causal, return_lse=True, device=device)
    s = ref.f64(q) @ np.swapaxes(np.repeat(ref.f64(k), 2, 1), -1, -2) / np.sqrt(24)
    if causal:
        s = np.where(np.tril(np.ones(s.shape[-2:], bool)), s, -np.inf)
    m = s.max(-1, keepdims=True)
    check(lse, (m + np.log(np.exp(s - m).sum(-1, keepdims=True)))[..., 0], "softmax", "f32",
          n=45)
    got = ops.attention_backward(do, q, k, v, out, lse, causal=causal, device=device)
    want = ref.attention_backward(do, q, k, v, causal=causal)
    # cond: the same gradients from absolute values bound each result's terms.
    absd = ref.attention_backward(np.abs(ref.f64(do)), np.abs(ref.f64(q)), np.abs(ref.f64(k)),
                                  np.abs(ref.f64(v)), causal=causal)
    for name, g, w, a in zip(("dq", "dk", "dv"), got, want, absd):
        check(g, w, "backward", dtype, n=45, ref_abs=np.abs(a) + np.abs(w), name=name)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("causal", [False, True])
def test_attention_backward_key_lengths(causal, dtype, device):
    # Catches: gradients flowing to keys at or past a batch entry's length (their dk, dv must
    # be exactly 0), the length of another batch entry applied, NaN from the no-key rows
    # (length 0: lse -inf; dq, dk, dv of that entry exactly 0), a length of 1 and of T.
    lengths = [0, 1, 45, 23]
    q = make(rng, (4, 4, 37, 24), dtype, normal=True)
    k = make(rng, (4, 2, 45, 24), dtype, normal=True)
    v = make(rng, (4, 2, 45, 24), dtype, normal=True)
    do = make(rng, (4, 4, 37, 24), dtype, normal=True)
    out, lse = ops.attention(q, k, v, causal=causal, return_lse=True, key_lengths=lengths,
                             device=device)
    got = ops.attention_backward(do, q, k, v, out, lse, causal=causal, key_lengths=lengths,
                                 device=device)
    want = ref.attention_backward(do, q, k, v, causal=causal, key_lengths=lengths)
    absd = ref.attention_backward(np.abs(ref.f64(do)), np.abs(ref.f64(q)), np.abs(ref.f64(k)),
                                  np.abs(ref.f64(v)), causal=causal, key_lengths=lengths)
    for name, g, w, a in zip(("dq", "dk", "dv"), got, want, absd):
        check(g, w, "backward", dtype, n=45, ref_abs=np.abs(a) + np.abs(w), name=name)
        assert not np.any(ref.f64(g[0])), f"{name}: length 0 must give zero gradients"
    for grad in got[1:]:
        g = ref.f64(grad)
        assert not np.any(g[1, :, 1:]) and not np.any(g[3, :, 23:]), "keys past the length"


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("causal", [False, True])
def test_attention_backward_key_mask(causal, dtype, device):
    # Catches: gradients flowing to masked keys (left padding: dk, dv of the first 25 keys of
    # entry 1 must be exactly 0; a random pattern in entry 3), another entry's mask row, NaN
    # from the all-masked entry 0 (dq, dk, dv exactly 0), the mask ignored in dq or in dkv.
    q = make(rng, (4, 4, 37, 24), dtype, normal=True)
    k = make(rng, (4, 2, 45, 24), dtype, normal=True)
    v = make(rng, (4, 2, 45, 24), dtype, normal=True)
    do = make(rng, (4, 4, 37, 24), dtype, normal=True)
    mask = key_masks(4, 45, rng)
    out, lse = ops.attention(q, k, v, causal=causal, return_lse=True, key_mask=mask,
                             device=device)
    got = ops.attention_backward(do, q, k, v, out, lse, causal=causal, key_mask=mask,
                                 device=device)
    want = ref.attention_backward(do, q, k, v, causal=causal, key_mask=mask)
    absd = ref.attention_backward(np.abs(ref.f64(do)), np.abs(ref.f64(q)), np.abs(ref.f64(k)),
                                  np.abs(ref.f64(v)), causal=causal, key_mask=mask)
    for name, g, w, a in zip(("dq", "dk", "dv"), got, want, absd):
        check(g, w, "backward", dtype, n=45, ref_abs=np.abs(a) + np.abs(w), name=name)
        assert not np.any(ref.f64(g[0])), f"{name}: no key must give zero gradients"
    for grad in got[1:]:
        g = ref.f64(grad)
        assert not np.any(g[1, :, :25]) and not np.any(g[3][:, ~mask[3]]), "masked keys"
