# A transformer block (embedding, layernorm, RoPE, grouped-query causal attention, rmsnorm,
# SwiGLU MLP, residuals, cross-entropy) as a torch.nn.Module built from tl.torch ops, against
# the same module built from PyTorch's own ops: forward and every parameter's gradient, and a
# short SGD training run whose losses follow PyTorch's, on cpu, npusim and cuda.
# SPDX-License-Identifier: Apache-2.0
import pytest

from torch_util import devices, host, on, to, torch

import tl.torch
from tl.testing import tolerances

F = torch.nn.functional
T = torch.ops.tl

B, S, D, H, HKV, FF, V = 2, 16, 32, 4, 2, 48, 40
DH = D // H
# Twenty-odd f32 ops chained (tl's and PyTorch's alike), each within the table's f32 bound for
# its op (the fp32 contract, 1e-6 normwise, where n u cond is below it): the loss and each
# gradient within twenty of those of float64's (PyTorch's f32 block must pass it too).
BOUND = 20 * tolerances.lookup("backward", "f32").normwise


class TLOps:
    """The block's primitives from tl.torch."""
    embedding = staticmethod(T.embedding)
    layernorm = staticmethod(lambda x, w, b: tl.torch.layernorm(x, w, b))
    rmsnorm = staticmethod(lambda x, w: tl.torch.rmsnorm(x, w))
    linear = staticmethod(lambda x, w, res=None: T.gemm(x, w, None, "none", res))
    rope = staticmethod(T.rope)
    attention = staticmethod(lambda q, k, v: tl.torch.attention(q, k, v, True))
    swiglu = staticmethod(T.swiglu)
    add = staticmethod(T.add)
    cross_entropy = staticmethod(T.cross_entropy)


def _rope(x, cos, sin):
    h = x.shape[-1] // 2
    x1, x2 = x[..., :h], x[..., h:]
    return torch.cat([x1 * cos - x2 * sin, x2 * cos + x1 * sin], -1)


class TorchOps:
    """The same primitives from PyTorch."""
    embedding = staticmethod(lambda e, ids: F.embedding(ids, e))
    layernorm = staticmethod(lambda x, w, b: F.layer_norm(x, (x.shape[-1],), w, b))
    rmsnorm = staticmethod(lambda x, w: F.rms_norm(x, (x.shape[-1],), w, 1e-6))
    linear = staticmethod(lambda x, w, res=None: x @ w if res is None else x @ w + res)
    rope = staticmethod(lambda x, cos, sin: _rope(x, cos.to(x.dtype), sin.to(x.dtype)))
    attention = staticmethod(lambda q, k, v: F.scaled_dot_product_attention(
        q, k, v, is_causal=True, enable_gqa=True))
    swiglu = staticmethod(lambda g, u: F.silu(g) * u)
    add = staticmethod(torch.add)
    cross_entropy = staticmethod(F.cross_entropy)


class Block(torch.nn.Module):
    """Embedding, a pre-norm attention block and a SwiGLU MLP block, the output projection."""

    def __init__(self, P, params):
        super().__init__()
        self.P = P
        self.p = torch.nn.ParameterDict({k: torch.nn.Parameter(v.clone())
                                         for k, v in params.items()})

    def forward(self, ids, target, cos, sin):
        P, p = self.P, self.p
        heads = lambda t, n: t.reshape(B, S, n, DH).transpose(1, 2).contiguous()  # noqa: E731
        x0 = P.embedding(p["E"], ids).reshape(B * S, D)
        h = P.layernorm(x0, p["g1"], p["b1"])
        q = P.rope(heads(P.linear(h, p["Wq"]), H), cos, sin)
        k = P.rope(heads(P.linear(h, p["Wk"]), HKV), cos, sin)
        a = P.attention(q, k, heads(P.linear(h, p["Wv"]), HKV))
        x1 = P.linear(a.transpose(1, 2).reshape(B * S, D), p["Wo"], x0)
        gu = P.linear(P.rmsnorm(x1, p["g2"]), p["Wup"])
        x2 = P.linear(P.swiglu(gu[:, :FF], gu[:, FF:]), p["Wdn"], x1)
        return P.cross_entropy(P.linear(x2, p["Wout"]), target)


def _data(seed):
    g = torch.Generator().manual_seed(seed)
    n = lambda *s, scale=1.0: torch.randn(*s, generator=g) * scale  # noqa: E731
    params = {"E": n(V, D), "g1": 1 + n(D, scale=0.1), "b1": n(D, scale=0.1),
              "Wq": n(D, D, scale=D ** -0.5), "Wk": n(D, HKV * DH, scale=D ** -0.5),
              "Wv": n(D, HKV * DH, scale=D ** -0.5), "Wo": n(D, D, scale=D ** -0.5),
              "g2": 1 + n(D, scale=0.1), "Wup": n(D, 2 * FF, scale=D ** -0.5),
              "Wdn": n(FF, D, scale=FF ** -0.5), "Wout": n(D, V, scale=D ** -0.5)}
    ids, target = torch.randint(0, V, (B, S), generator=g), torch.randint(0, V, (B * S,),
                                                                            generator=g)
    cos, sin = tl.torch.rope_tables(S, DH)
    return params, ids, target, cos, sin


def _loss_and_grads(P, params, ids, target, cos, sin, dtype=torch.float32, device="cpu"):
    m = Block(P, {k: v.to(dtype) for k, v in params.items()})
    m = m.to("cuda") if device == "cuda" else m
    loss = m(*to(device, (ids, target, cos.to(dtype), sin.to(dtype))))
    loss.backward()
    return host(loss), {k: host(v.grad) for k, v in m.p.items()}


def _rel(a, b):
    return float((a.double() - b.double()).norm() / b.double().norm())


def _check(loss, grads, loss64, grads64, what):
    __tracebackhide__ = True
    assert _rel(loss, loss64) <= BOUND, f"{what}: loss {loss} vs float64's {loss64}"
    for name, g64 in grads64.items():
        err = _rel(grads[name], g64)
        assert err <= BOUND, f"{what}: gradient of {name}: normwise error {err:.3g} > {BOUND}"


@pytest.mark.parametrize("device", devices("cpu", "npusim", "cuda", "emulated-cuda"))
def test_block_matches_torch(device):
    # Catches: any wrong gradient in the chain (each parameter compared): a residual gradient
    # dropped, RoPE's backward, grouped-query kv gradients not summed, the SwiGLU halves'
    # gradients swapped, GEMM's transposed-operand gradients, the mean's scaling.
    data = _data(1)
    with on(device):
        loss, grads = _loss_and_grads(TLOps, *data, device=device)
    loss64, grads64 = _loss_and_grads(TorchOps, *data, dtype=torch.float64)
    _check(loss, grads, loss64, grads64, f"tl block on {device}")
    loss32, grads32 = _loss_and_grads(TorchOps, *data)
    _check(loss32, grads32, loss64, grads64, "torch f32 block")  # the bound is fair


def test_wrong_gradient_scale_fails_the_check():
    # The check itself: one gradient off by 1e-4 relative fails it.
    data = _data(1)
    loss, grads = _loss_and_grads(TLOps, *data)
    loss64, grads64 = _loss_and_grads(TorchOps, *data, dtype=torch.float64)
    grads["Wdn"] = grads["Wdn"] * (1 + 1e-4)
    with pytest.raises(AssertionError, match="gradient of Wdn"):
        _check(loss, grads, loss64, grads64, "scaled")


def _train(P, data, steps, dtype=torch.float32, device="cpu"):
    params, ids, target, cos, sin = data
    m = Block(P, {k: v.to(dtype) for k, v in params.items()})
    m = m.to("cuda") if device == "cuda" else m
    opt = torch.optim.SGD(m.parameters(), lr=0.3)
    args = to(device, (ids, target, cos.to(dtype), sin.to(dtype)))
    losses = []
    for _ in range(steps):
        opt.zero_grad()
        loss = m(*args)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses


@pytest.mark.parametrize("device", devices())
def test_training_losses_follow_torch(device):
    # Catches: gradients right at the first step but drifting (an update lost, a stale saved
    # tensor), a loss that does not go down; each step's loss within the bound of PyTorch's
    # float64 run (5 steps: errors compound, the bound allows 5x).
    data = _data(2)
    with on(device):
        losses = _train(TLOps, data, 5, device=device)
    want = _train(TorchOps, data, 5, torch.float64)
    assert all(b < a for a, b in zip(want, want[1:])) and want[-1] < 0.5 * want[0], want
    for i, (got, w) in enumerate(zip(losses, want)):
        assert abs(got - w) <= 5 * BOUND * abs(w), f"step {i}: loss {got} vs {w}"
    torch32 = _train(TorchOps, data, 5)
    assert all(abs(a - w) <= 5 * BOUND * abs(w) for a, w in zip(torch32, want))
