# tl.torch: the tl.ops library as PyTorch custom ops (torch.ops.tl.*), zero-copy on CPU and
# CUDA tensors, with fake kernels for torch.compile and autograd where TL has the gradient.
# SPDX-License-Identifier: Apache-2.0
"""``import tl.torch`` registers every ``tl.ops`` op as ``torch.ops.tl.<name>``.

CPU tensors run on the TL ``cpu`` device in place (``tl.torch.device("npusim")`` for the
simulator), CUDA tensors on TL's ``cuda`` device on torch's current stream; outputs are torch
tensors on the inputs' device. Ops with several results return them all (``layernorm`` and
``rmsnorm``: ``(y, stats)``, ``attention``: ``(out, lse)``); the functions below return the
first, as torch's own do.

>>> import torch, tl.torch
>>> x = torch.tensor([[1.0, 2.0, 3.0]])
>>> torch.ops.tl.softmax(x).double().round(decimals=4).tolist()
[[0.09, 0.2447, 0.6652]]
>>> w = torch.ones(3, requires_grad=True)
>>> tl.torch.layernorm(x, w).sum().backward()      # by tl.ops.layernorm_backward
>>> w.grad.double().round(decimals=3).tolist()
[-1.225, 0.0, 1.225]
"""
try:
    import torch
except ImportError as e:  # pragma: no cover - the message is the point
    raise ImportError("tl.torch needs PyTorch (pip install -r ci/requirements-torch.txt)") from e

from . import autograd, library
from .library import NAMES, device, emulate_cuda  # noqa: F401

autograd.register()
DIFFERENTIABLE = autograd.DIFFERENTIABLE
ops = torch.ops.tl


def layernorm(x, weight=None, bias=None, eps=1e-5):
    """torch.nn.functional.layer_norm over the last axis, by tl's kernels."""
    return ops.layernorm(x, weight, bias, eps)[0]


def rmsnorm(x, weight=None, eps=1e-6):
    return ops.rmsnorm(x, weight, eps)[0]


def attention(q, k, v, causal=False, scale=None, key_lengths=None, key_mask=None):
    """Scaled dot-product attention, q (B, H, S, D), k and v (B, Hkv, T, D); key_lengths (B,)
    integers: keys at or past them masked; key_mask (B, T) bool: True where a key may be
    attended (the inverse of nn.MultiheadAttention's key_padding_mask); a query with no key
    left gets zeros."""
    return ops.attention(q, k, v, causal, scale, key_lengths, key_mask)[0]


def swiglu(gate, up=None):
    """silu(gate) * up; one tensor: its halves along the last axis (views, no copy)."""
    if up is None:
        gate, up = gate.chunk(2, dim=-1)
    return ops.swiglu(gate, up)


def linear(x, weight, bias=None, activation="none"):
    """x @ weight.T + bias as torch.nn.functional.linear (weight (out, in): a transposed view)."""
    return ops.gemm(x, weight.mT, bias, activation)


def rope_tables(seq_len, dim, base=10000.0, dtype=torch.float32):
    """cos, sin (seq_len, dim/2) for ops.rope, as torch tensors (computed in float64)."""
    from ..ops import rope_tables as tables
    cos, sin = tables(seq_len, dim, base, "f32")
    return torch.from_numpy(cos).to(dtype), torch.from_numpy(sin).to(dtype)
