# Autograd for the tl custom ops that have backward kernels (activations, GLUs, softmax, norms,
# cross-entropy, embedding, attention) or whose backward is other tl ops (GEMM: two GEMMs;
# elementwise arithmetic; RoPE: the rotation by -angle; transpose). Every gradient is computed
# by tl ops, so it runs on the forward's device.
# SPDX-License-Identifier: Apache-2.0
import torch

from . import library

tl = torch.ops.tl


def _device(ctx, inputs):
    """The TL device the forward ran on, for the backward ops (device= argument is last)."""
    dev = inputs[-1]
    tensors = list(library._tensors(inputs))
    if dev is None and tensors and tensors[0].device.type == "cpu":
        dev = library._DEVICE.get()
    ctx.dev = dev


def _register(name, backward, setup):
    torch.library.register_autograd(f"tl::{name}", backward, setup_context=setup, lib=library.LIB)


def reduce_to(g, shape, dev):
    """g summed (by tl's sum) down to `shape`, the shape it was broadcast from."""
    shape = tuple(shape)
    if tuple(g.shape) == shape:
        return g
    lead = g.dim() - len(shape)
    if lead:
        g = tl.sum(g.reshape((-1,) + tuple(g.shape[lead:])), 0, device=dev)
    for i, n in enumerate(shape):
        if n == 1 and g.shape[i] != 1:
            g = tl.sum(g, i, device=dev).unsqueeze(i)
    return g


def _neg(g, dev):
    return tl.mul(g, g.new_full((), -1.0), device=dev)


# --- elementwise --------------------------------------------------------------------------

def _save_xy(ctx, inputs, output):
    _device(ctx, inputs)
    ctx.save_for_backward(inputs[0], inputs[1])


def _binary_grad(name):
    def backward(ctx, g):
        x, y = ctx.saved_tensors
        dev = ctx.dev
        if name == "add":
            dx, dy = g, g
        elif name == "sub":
            dx, dy = g, _neg(g, dev)
        elif name == "mul":
            dx, dy = tl.mul(g, y, device=dev), tl.mul(g, x, device=dev)
        else:  # div: d/dy (x / y) = -(x / y) / y
            dx = tl.div(g, y, device=dev)
            dy = _neg(tl.div(tl.mul(dx, x, device=dev), y, device=dev), dev)
        return reduce_to(dx, x.shape, dev), reduce_to(dy, y.shape, dev), None
    return backward


def _save_x(ctx, inputs, output):
    _device(ctx, inputs)
    ctx.save_for_backward(inputs[0])
    ctx.args = inputs[1:-1]


def _activation_grad(name):
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        alpha = 0.01
        act = name
        if name == "gelu":
            act = "gelu_tanh" if ctx.args[0] == "tanh" else "gelu"
        elif name == "leaky_relu":
            alpha = ctx.args[0]
        dx = tl.activation_backward(act, x, g, alpha, device=ctx.dev)
        return (dx,) + (None,) * (len(ctx.args) + 1)
    return backward


def _glu_grad(act, fwd):
    def backward(ctx, g):
        gate, up = ctx.saved_tensors
        dev = ctx.dev
        # gate at the gradient's shape: a broadcast gate's derivative is taken per element of
        # the product, then summed back (activation_backward wants x and dy of one shape)
        dgate = tl.activation_backward(act, gate.expand(g.shape), tl.mul(g, up, device=dev),
                                       device=dev)
        dup = tl.mul(g, fwd(gate, device=dev), device=dev)
        return reduce_to(dgate, gate.shape, dev), reduce_to(dup, up.shape, dev), None
    return backward


# --- rows ---------------------------------------------------------------------------------

def _save_softmax(ctx, inputs, output):
    _device(ctx, inputs)
    ctx.axis = inputs[1]
    ctx.save_for_backward(output)


def _softmax_grad(log):
    def backward(ctx, g):
        (y,) = ctx.saved_tensors
        axis = ctx.axis % y.dim()
        if axis == y.dim() - 1:
            return tl.softmax_backward(y, g, log, device=ctx.dev), None, None
        ym, gm = (t.movedim(axis, -1).contiguous() for t in (y, g))
        dx = tl.softmax_backward(ym, gm, log, device=ctx.dev)
        return dx.movedim(-1, axis).contiguous(), None, None
    return backward


def _save_norm(ctx, inputs, output):
    _device(ctx, inputs)
    ctx.mark_non_differentiable(output[1])  # the stats: no gradient (not a silent zero)
    x, weight = inputs[0], inputs[1]
    ctx.has_bias = len(inputs) == 5 and inputs[2] is not None
    ctx.has_weight = weight is not None
    ctx.save_for_backward(x, weight if weight is not None else x.new_ones(x.shape[-1]),
                          output[1])


def _norm_grad(rms):
    def backward(ctx, gy, gstats):
        x, weight, stats = ctx.saved_tensors
        if rms:
            dx, dw = tl.rmsnorm_backward(gy, x, weight, stats, device=ctx.dev)
            return dx, dw.to(weight.dtype) if ctx.has_weight else None, None, None
        dx, dw, db = tl.layernorm_backward(gy, x, weight, stats, device=ctx.dev)
        return (dx, dw.to(weight.dtype) if ctx.has_weight else None,
                db.to(weight.dtype) if ctx.has_bias else None, None, None)
    return backward


# --- GEMM ---------------------------------------------------------------------------------

def _save_gemm(ctx, inputs, output):
    _device(ctx, inputs)
    a, b, bias, act, residual, alpha = inputs[:6]
    ctx.act, ctx.alpha = act, alpha
    ctx.split_k = inputs[6] if len(inputs) > 7 else None
    ctx.has_bias, ctx.has_res = bias is not None, residual is not None
    ctx.save_for_backward(a, b, bias)


def _gemm_grad(ctx, g):
    a, b, bias = ctx.saved_tensors
    dev, alpha = ctx.dev, ctx.alpha
    dres = g if ctx.has_res else None  # the residual is added after the activation
    if ctx.act != "none":  # the pre-activation, recomputed (one more GEMM, no stored copy)
        pre = tl.gemm(a, b, bias, "none", None, alpha, ctx.split_k, device=dev)
        g = tl.activation_backward(ctx.act, pre, g, device=dev)
    if a.dim() == 3 and b.dim() == 2:  # b shared by the batch: db over every row of a
        k, n = b.shape
        db = tl.gemm(a.reshape(-1, k).mT, g.reshape(-1, n), alpha=alpha, device=dev)
    else:
        db = tl.gemm(a.mT, g, alpha=alpha, device=dev)
    da = tl.gemm(g, b.mT, alpha=alpha, device=dev)
    dbias = None
    if ctx.has_bias:
        dbias = tl.sum(g.reshape(-1, g.shape[-1]), 0, device=dev)
    return (reduce_to(da, a.shape, dev), reduce_to(db, b.shape, dev), dbias, None,
            dres, None, None, None)


# --- transformer --------------------------------------------------------------------------

def _save_rope(ctx, inputs, output):
    _device(ctx, inputs)
    ctx.save_for_backward(inputs[1], inputs[2])


def _rope_grad(ctx, g):
    cos, sin = ctx.saved_tensors  # the inverse rotation: by -angle
    return tl.rope(g, cos, _neg(sin, ctx.dev), device=ctx.dev), None, None, None


def _save_embedding(ctx, inputs, output):
    _device(ctx, inputs)
    ctx.rows, ctx.dtype = inputs[0].shape[0], inputs[0].dtype
    ctx.save_for_backward(inputs[1])


def _embedding_grad(ctx, g):
    (ids,) = ctx.saved_tensors
    dtable = tl.embedding_backward(g, ids, ctx.rows, device=ctx.dev)
    return dtable.to(ctx.dtype), None, None


def _save_ce(ctx, inputs, output):
    _device(ctx, inputs)
    ctx.reduction, ctx.ignore_index = inputs[2], inputs[3]
    ctx.save_for_backward(inputs[0], inputs[1])


def _ce_grad(ctx, g):
    logits, target = ctx.saved_tensors
    d = tl.cross_entropy_backward(logits, target, g, ctx.reduction, ctx.ignore_index,
                                  device=ctx.dev)
    return d, None, None, None, None


def _save_attention(ctx, inputs, output):
    _device(ctx, inputs)
    ctx.mark_non_differentiable(output[1])  # lse: no gradient (not a silent zero)
    ctx.causal, ctx.scale, ctx.key_lengths, ctx.key_mask = inputs[3:7]
    ctx.save_for_backward(inputs[0], inputs[1], inputs[2], output[0], output[1])


def _attention_grad(ctx, g, glse):
    q, k, v, out, lse = ctx.saved_tensors
    dq, dk, dv = tl.attention_backward(g.contiguous(), q, k, v, out, lse, ctx.causal, ctx.scale,
                                       ctx.key_lengths, ctx.key_mask, device=ctx.dev)
    return dq, dk, dv, None, None, None, None, None


def _save_none(ctx, inputs, output):
    _device(ctx, inputs)


def _transpose_grad(ctx, g):
    return tl.transpose(g, device=ctx.dev), None


def _no_gradient(name):
    def backward(ctx, *grads):
        raise RuntimeError(f"tl.{name}: no gradient (tl ops with autograd: "
                           f"{', '.join(DIFFERENTIABLE)})")
    return backward


def register():
    for name in library.NAMES:
        if name not in DIFFERENTIABLE:
            _register(name, _no_gradient(name), _save_none)
    for name in ("add", "sub", "mul", "div"):
        _register(name, _binary_grad(name), _save_xy)
    for name in ("relu", "silu", "sigmoid", "tanh", "gelu", "leaky_relu"):
        _register(name, _activation_grad(name), _save_x)
    _register("swiglu", _glu_grad("silu", tl.silu), _save_xy)
    _register("geglu", _glu_grad("gelu", tl.gelu), _save_xy)
    _register("softmax", _softmax_grad(False), _save_softmax)
    _register("log_softmax", _softmax_grad(True), _save_softmax)
    _register("layernorm", _norm_grad(False), _save_norm)
    _register("rmsnorm", _norm_grad(True), _save_norm)
    _register("gemm", _gemm_grad, _save_gemm)
    _register("rope", _rope_grad, _save_rope)
    _register("embedding", _embedding_grad, _save_embedding)
    _register("cross_entropy", _ce_grad, _save_ce)
    _register("attention", _attention_grad, _save_attention)
    _register("transpose", _transpose_grad, _save_none)


# Ops with a gradient (tl.torch.DIFFERENTIABLE); the rest raise torch's error on backward.
DIFFERENTIABLE = ("add", "sub", "mul", "div", "relu", "silu", "sigmoid", "tanh", "gelu",
                  "leaky_relu", "swiglu", "geglu", "softmax", "log_softmax", "layernorm",
                  "rmsnorm", "gemm", "rope", "embedding", "cross_entropy", "attention",
                  "transpose")
