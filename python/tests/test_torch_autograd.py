# tl.torch autograd: each differentiable op's forward and input gradients in f32 (TL's kernels
# compute in f32) against PyTorch's own ops in float64, under the kit's tolerance table; PyTorch's
# own f32 result must pass the same bound (the bound is fair, not loose).
# SPDX-License-Identifier: Apache-2.0
import pytest

from torch_util import devices, host, on, to, torch

import tl.torch
from tl.testing import assert_close

F = torch.nn.functional
T = torch.ops.tl


def _rand(g, *shape, lo=None):
    t = torch.randn(*shape, generator=g)
    return t.abs() + lo if lo is not None else t


def _rope_ref(x, cos, sin):
    h = x.shape[-1] // 2
    x1, x2 = x[..., :h], x[..., h:]
    return torch.cat([x1 * cos - x2 * sin, x2 * cos + x1 * sin], -1)


def _gqa(q, k, v, causal):
    return F.scaled_dot_product_attention(q, k, v, is_causal=causal, enable_gqa=True)


def _gqa_mask(q, k, v, causal, key_mask):
    """torch's attention with a boolean attn_mask (True: attend) from the (B, T) key mask."""
    s, t = q.shape[2], k.shape[2]
    ok = key_mask[:, None, None, :].clone()
    if causal:
        ok = ok & torch.ones(s, t, dtype=torch.bool).tril()
    return F.scaled_dot_product_attention(q, k, v, attn_mask=ok.to(q.device), enable_gqa=True)


def _gqa_lengths(q, k, v, causal, lengths):
    """torch's attention with keys at or past lengths[b] masked (a boolean attn_mask)."""
    s, t = q.shape[2], k.shape[2]
    ok = torch.arange(t)[None, None, None, :] < lengths[:, None, None, None]
    if causal:
        ok = ok & torch.ones(s, t, dtype=torch.bool).tril()
    return F.scaled_dot_product_attention(q, k, v, attn_mask=ok.to(q.device), enable_gqa=True)


# name: (inputs (shapes, or tensors made from the generator), tl function, torch function,
#        [(tolerance entry, n) for the output, then for each input's gradient])
def _cases(g):
    x, y, w, b = _rand(g, 37, 100), _rand(g, 37, 100), _rand(g, 100), _rand(g, 100)
    tgt = torch.randint(0, 100, (37,), generator=g)
    tgt[[2, 30]] = -100
    q, k, v = _rand(g, 2, 4, 37, 24), _rand(g, 2, 2, 45, 24), _rand(g, 2, 2, 45, 24)
    cos, sin = tl.torch.rope_tables(37, 24)
    ids = torch.randint(0, 10, (4, 9), generator=g)
    lens = torch.tensor([45, 20], dtype=torch.int32)
    # key masks (True: attend) that no length can give: left padding (the first 25 of 45 keys
    # masked) and a random pattern; causal: key 0 kept (torch's no-key rows are NaN) with a
    # hole (keys 5 to 20) and a random pattern
    mg = torch.Generator().manual_seed(18)
    left = torch.ones(2, 45, dtype=torch.bool)
    left[0, :25] = False
    left[1] = torch.rand(45, generator=mg) < 0.5
    left[1, 44] = True
    hole = torch.ones(2, 45, dtype=torch.bool)
    hole[0, 5:21] = False
    hole[1] = torch.rand(45, generator=mg) < 0.5
    hole[:, 0] = True
    e1, bw = [("backward", 1)], ("backward", 37)
    c = {
        "add (row broadcast)": ([x, w], T.add, torch.add, [("add", 1), ("add", 1), bw]),
        "sub": ([x, y], T.sub, torch.sub, [("sub", 1)] + e1 * 2),
        "mul (row broadcast)": ([x, w], T.mul, torch.mul, [("mul", 1)] + e1 + [bw]),
        "div": ([x, _rand(g, 37, 100, lo=0.5)], T.div, torch.div, [("div", 1), ("backward", 2),
                                                                   ("backward", 3)]),
        "relu": ([x], T.relu, F.relu, [("relu", 1)] + e1),
        "silu": ([x], T.silu, F.silu, [("silu", 1)] + e1),
        "sigmoid": ([x], T.sigmoid, torch.sigmoid, [("sigmoid", 1)] + e1),
        "tanh": ([x], T.tanh, torch.tanh, [("tanh", 1)] + e1),
        "gelu": ([x], T.gelu, F.gelu, [("gelu", 1)] + e1),
        "gelu tanh": ([x], lambda x: T.gelu(x, "tanh"), lambda x: F.gelu(x, approximate="tanh"),
                      [("gelu", 1)] + e1),
        "leaky_relu": ([x], lambda x: T.leaky_relu(x, 0.2), lambda x: F.leaky_relu(x, 0.2),
                       [("leaky_relu", 1)] + e1),
        "swiglu": ([x, y], T.swiglu, lambda a, b: F.silu(a) * b, [("glu", 1)] + e1 * 2),
        "geglu": ([x, y], T.geglu, lambda a, b: F.gelu(a) * b, [("glu", 1)] + e1 * 2),
        # the gate broadcast (a row): its gradient taken at the product's shape, summed back
        # (activation_backward had been given the row and a gradient of the product's shape)
        "swiglu (gate broadcast)": ([w, x], T.swiglu, lambda a, b: F.silu(a) * b,
                                    [("glu", 1), bw, e1[0]]),
        "geglu (gate broadcast)": ([w, x], T.geglu, lambda a, b: F.gelu(a) * b,
                                   [("glu", 1), bw, e1[0]]),
        "softmax": ([x], T.softmax, lambda x: torch.softmax(x, -1),
                    [("softmax", 100), ("backward", 100)]),
        "softmax axis 0": ([x], lambda x: T.softmax(x, 0), lambda x: torch.softmax(x, 0),
                           [("softmax", 37), ("backward", 37)]),
        "log_softmax": ([x], T.log_softmax, lambda x: torch.log_softmax(x, -1),
                        [("softmax", 100), ("backward", 100)]),
        "layernorm": ([x, w, b], lambda x, w, b: tl.torch.layernorm(x, w, b),
                      lambda x, w, b: F.layer_norm(x, (100,), w, b),
                      [("norm", 100), ("backward", 100), bw, bw]),
        "rmsnorm": ([x, w], lambda x, w: tl.torch.rmsnorm(x, w),
                    lambda x, w: F.rms_norm(x, (100,), w, 1e-6),
                    [("norm", 100), ("backward", 100), bw]),
        "gemm bias gelu residual": (
            [_rand(g, 3, 37, 24), _rand(g, 24, 40), _rand(g, 40), _rand(g, 3, 37, 40)],
            lambda a, b, c, r: T.gemm(a, b, c, "gelu", r, 0.5),
            lambda a, b, c, r: F.gelu(0.5 * (a @ b) + c) + r,
            [("gemm", 24), ("gemm", 40), ("gemm", 111), ("backward", 111), ("add", 1)]),
        "gemm transposed, batched b": (
            [_rand(g, 24, 37).mT, _rand(g, 3, 24, 40)],
            T.gemm, torch.matmul, [("gemm", 24), ("gemm", 120), ("gemm", 37)]),
        "linear (weight (out, in), bias)": (
            [_rand(g, 37, 24), _rand(g, 40, 24), _rand(g, 40)], tl.torch.linear, F.linear,
            [("gemm", 24), ("gemm", 40), ("gemm", 37), ("backward", 37)]),
        "swiglu one tensor": ([_rand(g, 37, 100)], tl.torch.swiglu,
                              lambda t: F.silu(t[:, :50]) * t[:, 50:], [("glu", 1), e1[0]]),
        "rope": ([_rand(g, 2, 3, 37, 24)], lambda x: T.rope(x, cos.to(x.device), sin.to(x.device)),
                 lambda x: _rope_ref(x, cos.to(x.dtype), sin.to(x.dtype)),
                 [("rope", 1), ("rope", 1)]),
        "embedding": ([_rand(g, 10, 30)], lambda t: T.embedding(t, ids.to(t.device)),
                      lambda t: F.embedding(ids, t), [("gather", 1), ("backward", 36)]),
        "cross_entropy": ([x], lambda x: T.cross_entropy(x, tgt.to(x.device)),
                          lambda x: F.cross_entropy(x, tgt), [("softmax", 100), ("backward", 100)]),
        "cross_entropy sum": ([x], lambda x: T.cross_entropy(x, tgt.to(x.device), "sum"),
                              lambda x: F.cross_entropy(x, tgt, reduction="sum"),
                              [("softmax", 3700), ("backward", 100)]),
        "attention causal gqa": ([q, k, v], lambda q, k, v: tl.torch.attention(q, k, v, True),
                                 lambda q, k, v: _gqa(q, k, v, True),
                                 [("attention", 45)] + [("backward", 45)] * 3),
        "attention": ([q, k, v], lambda q, k, v: tl.torch.attention(q, k, v),
                      lambda q, k, v: _gqa(q, k, v, False),
                      [("attention", 45)] + [("backward", 45)] * 3),
        # key_lengths 45 (all) and 20: torch's masked rows are NaN, so no length 0 here
        # (test_ops_backward.py checks the no-key rows against the fp64 reference)
        "attention key_lengths causal gqa": (
            [q, k, v], lambda q, k, v: tl.torch.attention(q, k, v, True, None,
                                                          lens.to(q.device)),
            lambda q, k, v: _gqa_lengths(q, k, v, True, lens),
            [("attention", 45)] + [("backward", 45)] * 3),
        "attention key_lengths": (
            [q, k, v], lambda q, k, v: tl.torch.attention(q, k, v, False, None,
                                                          lens.to(q.device)),
            lambda q, k, v: _gqa_lengths(q, k, v, False, lens),
            [("attention", 45)] + [("backward", 45)] * 3),
        "attention key_mask left padding gqa": (
            [q, k, v], lambda q, k, v: tl.torch.attention(q, k, v, False, None, None,
                                                          left.to(q.device)),
            lambda q, k, v: _gqa_mask(q, k, v, False, left),
            [("attention", 45)] + [("backward", 45)] * 3),
        "attention key_mask causal gqa": (
            [q, k, v], lambda q, k, v: tl.torch.attention(q, k, v, True, None, None,
                                                          hole.to(q.device)),
            lambda q, k, v: _gqa_mask(q, k, v, True, hole),
            [("attention", 45)] + [("backward", 45)] * 3),
        "gemm split-K bias relu": (
            [_rand(g, 3, 2100), _rand(g, 2100, 40), _rand(g, 40)],
            lambda a, b, c: T.gemm(a, b, c, "relu", None, 1.0, 6),
            lambda a, b, c: F.relu(a @ b + c),
            [("gemm", 2100), ("gemm", 40), ("gemm", 40), ("backward", 3)]),
        "transpose": ([_rand(g, 3, 37, 24)], T.transpose, lambda x: x.mT.contiguous(),
                      [("gather", 1), ("gather", 1)]),
    }
    return c


CASES = _cases(torch.Generator().manual_seed(7))


def _run(fn, inputs, seed):
    """fn's output and each input's gradient for a random output gradient."""
    leaves = [t.detach().requires_grad_() for t in inputs]
    out = fn(*leaves)
    go = torch.randn(out.shape, generator=torch.Generator().manual_seed(seed)).to(out.dtype)
    grads = torch.autograd.grad(out, leaves, go.to(out.device))
    return [host(out)] + [host(gr) for gr in grads]


def _check(got, want, tols, what):
    __tracebackhide__ = True
    for i, (gt, wt, (op, n)) in enumerate(zip(got, want, tols)):
        name = f"{what}: {'output' if i == 0 else f'gradient of input {i - 1}'}"
        assert_close(gt.double().numpy(), wt.numpy(), op=op, dtype="f32", n=n, name=name)


@pytest.mark.parametrize("device", devices("cpu", "npusim", "cuda", "emulated-cuda"))
@pytest.mark.parametrize("name", list(CASES))
def test_gradients_match_torch(name, device):
    # Catches: a wrong gradient formula or scaling (the 1/N of a mean, alpha in GEMM's
    # backward, attention's scale), a gradient given to the wrong input, a broadcast input's
    # gradient not summed back to its shape, the activation's derivative missing in a GEMM
    # epilogue's backward, RoPE's backward rotating the wrong way.
    inputs, tl_fn, torch_fn, tols = CASES[name]
    want = _run(torch_fn, [t.double() for t in inputs], 1)
    with on(device):
        got = _run(tl_fn, to(device, inputs), 1)
    assert len(got) == len(tols) and all(gt.dtype == torch.float32 for gt in got)
    _check(got, want, tols, f"tl {name}")
    _check(_run(torch_fn, inputs, 1), want, tols, f"torch f32 {name}")  # the bound is fair


def test_wrong_gradient_scale_fails():
    # The check itself: a gradient off by a factor 1 + 1e-4 (a mean's count off by one in
    # ten thousand) fails the table's bound.
    inputs, tl_fn, torch_fn, tols = CASES["cross_entropy"]
    want = _run(torch_fn, [t.double() for t in inputs], 1)
    got = _run(tl_fn, inputs, 1)
    got[1] = got[1] * (1 + 1e-4)
    with pytest.raises(AssertionError):
        _check(got, want, tols, "scaled")


def test_norm_without_weight_and_bias():
    # No weight or bias: the backward uses a weight of ones, returns no parameter gradients.
    x, r = torch.randn(5, 33, requires_grad=True), torch.randn(5, 33)
    (gx,) = torch.autograd.grad(tl.torch.layernorm(x), x, r)
    xr = x.detach().double().requires_grad_()
    (wx,) = torch.autograd.grad(F.layer_norm(xr, (33,)), xr, r.double())
    assert_close(gx.numpy(), wx.numpy(), op="backward", dtype="f32", n=33)


def test_ops_without_gradient_say_so():
    # A reduction (no backward kernel): torch's own error at backward, not a wrong gradient.
    x = torch.randn(4, 5, requires_grad=True)
    with pytest.raises(RuntimeError, match=r"tl.sum: no gradient \(tl ops with autograd: add"):
        T.sum(x, 0).sum().backward()
    assert "sum" not in tl.torch.DIFFERENTIABLE and "gemm" in tl.torch.DIFFERENTIABLE


def test_second_outputs_have_no_gradient():
    # The norms' stats and attention's lse have no backward: marked so, torch raises on a
    # gradient through them. Catches: their gradient silently zero (d mean / dx is 1/n).
    x = torch.randn(3, 5, requires_grad=True)
    _, stats = T.layernorm(x)
    q, k, v = (torch.randn(1, 1, n, 4, requires_grad=True) for n in (3, 5, 5))
    _, lse = T.attention(q, k, v)
    for out, inputs in ((stats, x), (lse, q)):
        assert not out.requires_grad
        with pytest.raises(RuntimeError, match="does not require grad"):
            torch.autograd.grad(out.sum(), inputs)


def test_softmax_axis_and_cross_entropy_reduction_checked():
    # Catches: an axis past the rank taken modulo it (softmax over another axis, no error) and
    # an unknown reduction computed as 'mean' (its error only at backward).
    x = torch.randn(2, 3)
    for axis in (2, -3):
        with pytest.raises(tl.ops.OpError, match="argument 'axis'"):
            T.softmax(x, axis)
        with pytest.raises(tl.ops.OpError, match="argument 'axis'"):
            T.log_softmax(x, axis)
    with pytest.raises(tl.ops.OpError, match="argument 'reduction': expected 'mean', 'sum'"):
        T.cross_entropy(torch.randn(3, 4), torch.tensor([1, 2, 3]), "avg")
