# A transformer block (embedding, layernorm, attention with RoPE and grouped heads, rmsnorm,
# SwiGLU MLP, residuals, cross-entropy) forward and backward built from tl.ops, against the same
# block in float64 numpy; and a short SGD run whose losses follow float64's.
# SPDX-License-Identifier: Apache-2.0
import numpy as np
import pytest

import tl.ops as ops
from tl.ops import reference as ref
from ops_util import DEVICES

on_devices = pytest.mark.parametrize("device", DEVICES)

B, S, D, H, HKV, F, V = 2, 16, 32, 4, 2, 48, 40
DH = D // H


class TL:
    """The primitives on a device through tl.ops (f32)."""

    def __init__(self, device):
        self.d = device

    def embed(self, e, ids):
        return ops.embedding(e, ids, device=self.d)

    def embed_bw(self, dy, ids):
        return ops.embedding_backward(dy, ids, V, device=self.d)

    def mm(self, a, b, res=None):
        return ops.gemm(a, b, residual=res, device=self.d)

    def add(self, a, b):
        return ops.add(a, b, device=self.d)

    def ln(self, x, g, b):
        y, st = ops.layernorm(x, g, b, return_stats=True, device=self.d)
        return y, (x, g, st)

    def ln_bw(self, dy, c):
        return ops.layernorm_backward(dy, *c, device=self.d)

    def rms(self, x, g):
        y, st = ops.rmsnorm(x, g, return_stats=True, device=self.d)
        return y, (x, g, st)

    def rms_bw(self, dy, c):
        return ops.rmsnorm_backward(dy, *c, device=self.d)

    def rope(self, x, cos, sin):
        return ops.rope(np.ascontiguousarray(x), cos, sin, device=self.d)

    def attn(self, q, k, v):
        o, lse = ops.attention(q, k, v, causal=True, return_lse=True, device=self.d)
        return o, (q, k, v, o, lse)

    def attn_bw(self, do, c):
        return ops.attention_backward(np.ascontiguousarray(do), *c, causal=True, device=self.d)

    def swiglu(self, g, u):
        return ops.swiglu(g, u, device=self.d)

    def swiglu_bw(self, dy, g, u):
        return (ops.activation_backward("silu", g, ops.mul(dy, u, device=self.d),
                                        device=self.d),
                ops.mul(dy, ops.silu(g, device=self.d), device=self.d))

    def ce(self, logits, t):
        return float(ops.cross_entropy(logits, t, device=self.d))

    def ce_bw(self, logits, t):
        return ops.cross_entropy_backward(logits, t, device=self.d)


class F64:
    """The same primitives in float64 numpy (tl.ops.reference)."""

    def embed(self, e, ids):
        return e[ids]

    def embed_bw(self, dy, ids):
        return ref.embedding_backward(dy, ids, V)

    def mm(self, a, b, res=None):
        return a @ b + (res if res is not None else 0)

    def add(self, a, b):
        return a + b

    def ln(self, x, g, b):
        return ref.layernorm(x, g, b), (x, g)

    def ln_bw(self, dy, c):
        return ref.norm_backward(dy, *c, 1e-5)

    def rms(self, x, g):
        return ref.rmsnorm(x, g), (x, g)

    def rms_bw(self, dy, c):
        return ref.norm_backward(dy, *c, 1e-6, rms=True)[:2]

    def rope(self, x, cos, sin):
        return ref.rope(x, cos, sin)

    def attn(self, q, k, v):
        return ref.attention(q, k, v, causal=True), (q, k, v)

    def attn_bw(self, do, c):
        return ref.attention_backward(do, *c, causal=True)

    def swiglu(self, g, u):
        return ref.silu(g) * u

    def swiglu_bw(self, dy, g, u):
        return dy * u * ref.activation_grad("silu", g), dy * ref.silu(g)

    def ce(self, logits, t):
        return float(ref.cross_entropy(logits, t))

    def ce_bw(self, logits, t):
        return ref.cross_entropy_backward(logits, t)


def params(rng):
    n = lambda *s, scale=1.0: rng.standard_normal(s).astype(np.float32) * scale  # noqa: E731
    return {"E": n(V, D), "g1": 1 + n(D, scale=0.1), "b1": n(D, scale=0.1),
            "Wq": n(D, D, scale=D ** -0.5), "Wk": n(D, HKV * DH, scale=D ** -0.5),
            "Wv": n(D, HKV * DH, scale=D ** -0.5), "Wo": n(D, D, scale=D ** -0.5),
            "g2": 1 + n(D, scale=0.1), "Wup": n(D, 2 * F, scale=D ** -0.5),
            "Wdn": n(F, D, scale=F ** -0.5), "Wout": n(D, V, scale=D ** -0.5)}


def heads(t, n):  # (B S, n DH) -> (B, n, S, DH)
    return np.ascontiguousarray(t.reshape(B, S, n, DH).transpose(0, 2, 1, 3))


def tokens(t):  # (B, n, S, DH) -> (B S, n DH)
    return np.ascontiguousarray(t.transpose(0, 2, 1, 3).reshape(B * S, -1))


def step(P, p, ids, target, cos, sin):
    """The block's loss and the gradient of every parameter, through the primitives P."""
    x0 = P.embed(p["E"], ids).reshape(B * S, D)
    h, c1 = P.ln(x0, p["g1"], p["b1"])
    q, k, v = heads(P.mm(h, p["Wq"]), H), heads(P.mm(h, p["Wk"]), HKV), heads(P.mm(h, p["Wv"]),
                                                                              HKV)
    a, ca = P.attn(P.rope(q, cos, sin), P.rope(k, cos, sin), v)
    a2 = tokens(a)
    x1 = P.mm(a2, p["Wo"], x0)
    h2, c2 = P.rms(x1, p["g2"])
    gu = P.mm(h2, p["Wup"])
    gate, up = gu[:, :F], gu[:, F:]
    m = P.swiglu(gate, up)
    x2 = P.mm(m, p["Wdn"], x1)
    logits = P.mm(x2, p["Wout"])
    loss = P.ce(logits, target)

    g = {}
    dlogits = P.ce_bw(logits, target)
    g["Wout"], dx2 = P.mm(x2.T, dlogits), P.mm(dlogits, p["Wout"].T)
    g["Wdn"], dm = P.mm(m.T, dx2), P.mm(dx2, p["Wdn"].T)
    dgate, dup = P.swiglu_bw(dm, gate, up)
    dgu = np.concatenate([dgate, dup], axis=1)
    g["Wup"], dh2 = P.mm(h2.T, dgu), P.mm(dgu, p["Wup"].T)
    dx1n, g["g2"] = P.rms_bw(dh2, c2)
    dx1 = P.add(dx2, dx1n)
    g["Wo"], da2 = P.mm(a2.T, dx1), P.mm(dx1, p["Wo"].T)
    dqr, dkr, dv = P.attn_bw(heads(da2, H), ca)
    dq, dk, dv = tokens(P.rope(dqr, cos, -sin)), tokens(P.rope(dkr, cos, -sin)), tokens(dv)
    g["Wq"], g["Wk"], g["Wv"] = P.mm(h.T, dq), P.mm(h.T, dk), P.mm(h.T, dv)
    dh = P.mm(dv, p["Wv"].T, P.mm(dk, p["Wk"].T, P.mm(dq, p["Wq"].T)))
    dx0n, g["g1"], g["b1"] = P.ln_bw(dh, c1)
    g["E"] = P.embed_bw(P.add(dx1, dx0n).reshape(B, S, D), ids)
    return loss, g


def data(seed):
    rng = np.random.default_rng(seed)
    ids, target = rng.integers(0, V, (B, S)), rng.integers(0, V, B * S)
    cos, sin = ops.rope_tables(S, DH)
    return params(rng), ids, target, cos, sin


# Twenty-odd f32 ops chained, each within the fp32 contract (1e-6) or the classical n u cond
# bound: the block's loss and gradients within 2e-5 normwise of float64's.
BOUND = 2e-5


@on_devices
def test_block_forward_backward_matches_float64(device):
    # Catches: a wrong gradient anywhere in the chain (each parameter compared), a residual
    # gradient dropped, RoPE's backward (the rotation by -angle), grouped-head kv gradients.
    p, ids, target, cos, sin = data(1)
    loss, grads = step(TL(device), p, ids, target, cos, sin)
    p64 = {k: v.astype(np.float64) for k, v in p.items()}
    loss64, grads64 = step(F64(), p64, ids, target, cos.astype(np.float64),
                           sin.astype(np.float64))
    assert abs(loss - loss64) <= BOUND * abs(loss64)
    for name, g64 in grads64.items():
        got = np.asarray(grads[name], np.float64)
        err = np.linalg.norm(got - g64) / np.linalg.norm(g64)
        assert err <= BOUND, f"gradient of {name}: normwise error {err:.3g}"


@on_devices
def test_sgd_losses_follow_float64(device):
    # Catches: gradients that are right in one step but drift (an update applied to a copy),
    # a loss that does not go down.
    p, ids, target, cos, sin = data(2)
    p64 = {k: v.astype(np.float64) for k, v in p.items()}
    cos64, sin64 = cos.astype(np.float64), sin.astype(np.float64)
    losses, losses64 = [], []
    for _ in range(5):
        loss, g = step(TL(device), p, ids, target, cos, sin)
        loss64, g64 = step(F64(), p64, ids, target, cos64, sin64)
        losses.append(loss)
        losses64.append(loss64)
        p = {k: (v - 0.5 * g[k]).astype(np.float32) for k, v in p.items()}
        p64 = {k: v - 0.5 * g64[k] for k, v in p64.items()}
    assert losses64[-1] < 0.9 * losses64[0], losses64
    np.testing.assert_allclose(losses, losses64, rtol=BOUND * 5)


def test_float64_block_gradients_match_finite_differences():
    # Catches: a wrong chain in `step` itself (shared by both sides of the tests above): RoPE's
    # backward sign, a residual gradient dropped, kv heads not summed; central differences of
    # the float64 loss at two entries of every parameter.
    p, ids, target, cos, sin = data(3)
    p = {k: v.astype(np.float64) for k, v in p.items()}
    cos, sin = cos.astype(np.float64), sin.astype(np.float64)
    _, g = step(F64(), p, ids, target, cos, sin)
    rng = np.random.default_rng(4)
    for name, w in p.items():
        for _ in range(2):
            i = tuple(rng.integers(0, n) for n in w.shape)
            if name == "E":
                i = (int(ids[0, 0]), i[1])  # a row that is looked up
            old, eps = w[i], 1e-6
            w[i] = old + eps
            up = step(F64(), p, ids, target, cos, sin)[0]
            w[i] = old - eps
            down = step(F64(), p, ids, target, cos, sin)[0]
            w[i] = old
            fd = (up - down) / (2 * eps)
            assert abs(fd - g[name][i]) <= 1e-6 + 1e-5 * abs(fd), (name, i, fd, g[name][i])
