# The tl.ops host functions registered as torch custom ops (namespace "tl"), each with a fake
# kernel giving its outputs' shapes, dtypes and device so torch.compile traces it.
# SPDX-License-Identifier: Apache-2.0
import contextlib
import contextvars
import inspect

import numpy as np
import torch

from .. import ops
from ..ops import _common
from .bridge import Bridge

LIB = torch.library.Library("tl", "DEF")
NAMES = []  # every op registered, in order

# The TL device for CPU tensors (tl.torch.device); CUDA tensors always run on "cuda".
_DEVICE = contextvars.ContextVar("tl_torch_device", default="cpu")
# Tests: run the cuda path's stand-ins on CPU tensors (bridge.py, mode 'emulate').
_EMULATE = contextvars.ContextVar("tl_torch_emulate", default=False)


@contextlib.contextmanager
def device(name):
    """Runs the tl ops on CPU tensors on TL device `name` ('cpu' or 'npusim') inside the block
    (an op's own device= argument wins)."""
    token = _DEVICE.set(name)
    try:
        yield
    finally:
        _DEVICE.reset(token)


@contextlib.contextmanager
def emulate_cuda():
    """Tests only: CPU tensors take the cuda path (host stand-ins mapped back at each launch)
    with stand-ins full of NaN, on the cpu device."""
    token = _EMULATE.set(True)
    try:
        yield
    finally:
        _EMULATE.reset(token)


def _tensors(values):
    for v in values:
        if isinstance(v, torch.Tensor):
            yield v
        elif isinstance(v, (list, tuple)):
            yield from _tensors(v)


def _bridge(op, tensors, dev):
    """(Bridge, TL device name) for an op on `tensors`, device= `dev`."""
    if not tensors:
        raise ValueError(f"tl.{op}: no tensor arguments")
    places = {t.device for t in tensors}
    if len(places) > 1:
        raise ValueError(f"tl.{op}: tensors on different devices: "
                         f"{', '.join(sorted(map(str, places)))}")
    place = places.pop()
    if place.type == "cuda":
        if dev not in (None, "cuda"):
            raise ValueError(f"tl.{op}: argument 'device': CUDA tensors run on TL's 'cuda' "
                             f"device, not {dev!r}")
        return Bridge("cuda", place), "cuda"
    if place.type != "cpu":
        raise ValueError(f"tl.{op}: {place} tensors are not supported (CPU or CUDA)")
    if _EMULATE.get():
        return Bridge("emulate", place), "cpu"
    dev = dev or _DEVICE.get()
    if dev == "cuda":
        raise ValueError(f"tl.{op}: argument 'device': CPU tensors cannot run on 'cuda' (move "
                         "them with .cuda())")
    return Bridge("cpu", place), dev


def op(schema, fake):
    """Registers `fn(bridge, *args, device)` as tl::<name> with `schema` (whose last argument
    is `str? device=None`) and fake kernel `fake(*args, device=None)`."""
    def register(fn):
        name = schema.split("(", 1)[0]
        LIB.define(schema)
        sig = inspect.signature(fn)
        sig = sig.replace(parameters=list(sig.parameters.values())[1:])  # less the bridge

        def impl(*args, **kwargs):
            bound = sig.bind_partial(*args, **kwargs)
            bound.apply_defaults()
            values = dict(bound.arguments)
            dev = values.pop("device", None)
            b, tl_dev = _bridge(name, list(_tensors(values.values())), dev)
            token = _common.HOOK.set(b)
            try:
                out = fn(b, **values, device=tl_dev)
            finally:
                _common.HOOK.reset(token)
            return b.result(out)

        for key in ("CPU", "CUDA"):
            LIB.impl(name, impl, key)
        torch.library.register_fake(f"tl::{name}", fake, lib=LIB)
        NAMES.append(name)
        return getattr(torch.ops.tl, name)
    return register


def _like(x, shape=None, dtype=None):
    return x.new_empty(tuple(x.shape) if shape is None else tuple(shape),
                       dtype=dtype or x.dtype)


def _contiguous(b, t):
    """A CUDA tensor made contiguous (on the GPU) before its stand-in is made: the host
    functions reshape their arrays, which for some strided layouts copies on the host (a copy
    of a stand-in would be garbage); CPU tensors go as they are (numpy copies real values)."""
    return t if b.mode == "cpu" or t.is_contiguous() else t.contiguous()


def _arr(b, t):
    return None if t is None else b.array(_contiguous(b, t))


# --- elementwise --------------------------------------------------------------------------

def _broadcast_shape(x, y):
    return torch.broadcast_shapes(x.shape, y.shape)


def _binary(name):
    @op(f"{name}(Tensor x, Tensor y, str? device=None) -> Tensor",
        lambda x, y, device=None: _like(x, _broadcast_shape(x, y)))
    def impl(b, x, y, device):
        shape = tuple(_broadcast_shape(x, y))
        if b.mode != "cpu":
            # A broadcast whose rows do not merge into one view would be copied on the host.
            x, y = (t.expand(shape).contiguous() if t.shape != shape and
                    not _rows_merge(t, shape) else t for t in (x, y))
        return ops.binary(name, _arr(b, x), _arr(b, y), device=device)
    return impl


def _rows_merge(t, shape):
    """Whether t broadcast to `shape` reshapes to (rows, last) without a copy (numpy's rule,
    as the host function's rows_view): the leading axes longer than 1 nest, each one's stride
    the next one's times its length (a broadcast axis has stride 0, so two of them nest). (It
    set a proxy array's shape, which numpy 2.5 deprecates.)"""
    e = t.expand(shape)
    lead = [(n, s) for n, s in zip(tuple(shape)[:-1], e.stride()[:-1]) if n != 1]
    return all(s == s2 * n2 for (_, s), (n2, s2) in zip(lead, lead[1:]))


add, sub, mul, div = (_binary(n) for n in ("add", "sub", "mul", "div"))


def _activation(name):
    @op(f"{name}(Tensor x, str? device=None) -> Tensor", lambda x, device=None: _like(x))
    def impl(b, x, device):
        return ops.activation(name, _arr(b, x), device=device)
    return impl


relu, silu, sigmoid, tanh = (_activation(n) for n in ("relu", "silu", "sigmoid", "tanh"))


@op("gelu(Tensor x, str approximate='none', str? device=None) -> Tensor",
    lambda x, approximate="none", device=None: _like(x))
def gelu(b, x, approximate="none", device=None):
    return ops.gelu(_arr(b, x), approximate, device=device)


@op("leaky_relu(Tensor x, float negative_slope=0.01, str? device=None) -> Tensor",
    lambda x, negative_slope=0.01, device=None: _like(x))
def leaky_relu(b, x, negative_slope=0.01, device=None):
    return ops.leaky_relu(_arr(b, x), negative_slope, device=device)


def _glu(name):
    @op(f"{name}(Tensor gate, Tensor up, str? device=None) -> Tensor",
        lambda gate, up, device=None: _like(gate, _broadcast_shape(gate, up)))
    def impl(b, gate, up, device):
        return getattr(ops, name)(_arr(b, gate), _arr(b, up), device=device)
    return impl


swiglu, geglu = _glu("swiglu"), _glu("geglu")


# --- rows: softmax, norms -----------------------------------------------------------------

def _softmax(name):
    @op(f"{name}(Tensor x, int axis=-1, str? device=None) -> Tensor",
        lambda x, axis=-1, device=None: _like(x))
    def impl(b, x, axis=-1, device=None):
        if x.dim():  # an axis past the rank is an error, not taken modulo it
            axis = _common.axis_index(name, axis, x.dim())
        if x.dim() and axis != x.dim() - 1:
            # Another axis: the op on the axis moved last (a torch copy), moved back.
            moved = x.movedim(axis, -1).contiguous()
            y = b.result(getattr(ops, name)(_arr(b, moved), device=device))
            return y.movedim(-1, axis).contiguous()
        return getattr(ops, name)(_arr(b, x), device=device)
    return impl


softmax, log_softmax = _softmax("softmax"), _softmax("log_softmax")


def _rows(x):
    return int(np.prod(x.shape[:-1], dtype=np.int64)) if x.dim() > 1 else 1


@op("layernorm(Tensor x, Tensor? weight=None, Tensor? bias=None, float eps=1e-05, "
    "str? device=None) -> (Tensor, Tensor)",
    lambda x, weight=None, bias=None, eps=1e-5, device=None:
        (_like(x), _like(x, (_rows(x), 2), torch.float32)))
def layernorm(b, x, weight=None, bias=None, eps=1e-5, device=None):
    """(y, stats): stats (rows, 2) float32 mean and 1/sigma, which layernorm_backward takes."""
    return ops.layernorm(_arr(b, x), _arr(b, weight), _arr(b, bias), eps, device=device,
                         return_stats=True)


@op("rmsnorm(Tensor x, Tensor? weight=None, float eps=1e-06, str? device=None) "
    "-> (Tensor, Tensor)",
    lambda x, weight=None, eps=1e-6, device=None:
        (_like(x), _like(x, (_rows(x), 2), torch.float32)))
def rmsnorm(b, x, weight=None, eps=1e-6, device=None):
    return ops.rmsnorm(_arr(b, x), _arr(b, weight), eps, device=device, return_stats=True)


# --- reductions ---------------------------------------------------------------------------

def _drop(x, axis):
    axis %= max(x.dim(), 1)
    return tuple(x.shape[:axis]) + tuple(x.shape[axis + 1:])


def _reduction(name):
    dtype = torch.int32 if name == "argmax" else None

    @op(f"{name}(Tensor x, int axis=-1, str? device=None) -> Tensor",
        lambda x, axis=-1, device=None: _like(x, _drop(x, axis), dtype))
    def impl(b, x, axis=-1, device=None):
        return ops.reduce(name, _arr(b, x), axis, device=device)
    return impl


sum_, mean, max_, min_, argmax = (_reduction(n) for n in ("sum", "mean", "max", "min",
                                                            "argmax"))


@op("var(Tensor x, int axis=-1, float correction=0, str? device=None) -> Tensor",
    lambda x, axis=-1, correction=0, device=None: _like(x, _drop(x, axis)))
def var(b, x, axis=-1, correction=0, device=None):
    return ops.var(_arr(b, x), axis, correction=correction, device=device)


@op("cumsum(Tensor x, int axis=-1, str? device=None) -> Tensor",
    lambda x, axis=-1, device=None: _like(x))
def cumsum(b, x, axis=-1, device=None):
    return ops.cumsum(_arr(b, x), axis, device=device)


@op("topk(Tensor x, int k, str? device=None) -> (Tensor, Tensor)",
    lambda x, k, device=None: (_like(x, tuple(x.shape[:-1]) + (k,)),
                               _like(x, tuple(x.shape[:-1]) + (k,), torch.int32)))
def topk(b, x, k, device=None):
    return ops.topk(_arr(b, x), k, device=device)


# --- linear -------------------------------------------------------------------------------

def _gemm_shape(a, b):
    m, n = a.shape[-2], b.shape[-1]
    if a.dim() == 3 or b.dim() == 3:
        return (max(a.shape[0] if a.dim() == 3 else 1, b.shape[0] if b.dim() == 3 else 1), m, n)
    return (m, n)


@op("gemm(Tensor a, Tensor b, Tensor? bias=None, str activation='none', "
    "Tensor? residual=None, float alpha=1.0, int? split_k=None, str? device=None) -> Tensor",
    lambda a, b, bias=None, activation="none", residual=None, alpha=1.0, split_k=None,
    device=None: _like(a, _gemm_shape(a, b)))
def gemm(b, a, b_, bias=None, activation="none", residual=None, alpha=1.0, split_k=None,
         device=None):
    """activation(alpha a @ b + bias) + residual; a and b in any strides (a.mT is a view);
    split_k as tl.ops.gemm's (None: chosen by the shapes)."""
    return ops.gemm(b.array(a), b.array(b_), bias=_arr(b, bias), activation=activation,
                    residual=_arr(b, residual), alpha=alpha, split_k=split_k, device=device)


@op("gemv(Tensor a, Tensor x, Tensor? bias=None, float alpha=1.0, str? device=None) -> Tensor",
    lambda a, x, bias=None, alpha=1.0, device=None: _like(a, (a.shape[0],)))
def gemv(b, a, x, bias=None, alpha=1.0, device=None):
    return ops.gemv(b.array(a), _arr(b, x), bias=_arr(b, bias), alpha=alpha, device=device)


@op("transpose(Tensor x, str? device=None) -> Tensor",
    lambda x, device=None: _like(x, tuple(x.shape[:-2]) + (x.shape[-1], x.shape[-2])))
def transpose(b, x, device=None):
    return ops.transpose(_arr(b, x), device=device)


def _pair(v):
    return (v[0], v[0]) if len(v) == 1 else tuple(v)


def _conv_shape(x, w, stride, padding, dilation=(1,)):
    (sh, sw), (ph, pw), (dh, dw) = _pair(stride), _pair(padding), _pair(dilation)
    return (x.shape[0], w.shape[0], (x.shape[2] + 2 * ph - dh * (w.shape[2] - 1) - 1) // sh + 1,
            (x.shape[3] + 2 * pw - dw * (w.shape[3] - 1) - 1) // sw + 1)


@op("conv2d(Tensor x, Tensor weight, Tensor? bias=None, int[] stride=[1], int[] padding=[0], "
    "str activation='none', int[] dilation=[1], int groups=1, str? device=None) -> Tensor",
    lambda x, weight, bias=None, stride=(1,), padding=(0,), activation="none", dilation=(1,),
    groups=1, device=None: _like(x, _conv_shape(x, weight, stride, padding, dilation)))
def conv2d(b, x, weight, bias=None, stride=(1,), padding=(0,), activation="none",
           dilation=(1,), groups=1, device=None):
    """torch's conv2d (weight (OC, C/groups, KH, KW)) with a fused activation."""
    return ops.conv2d(_arr(b, x), _arr(b, weight), _arr(b, bias), stride=_pair(stride),
                      padding=_pair(padding), dilation=_pair(dilation), groups=groups,
                      activation=activation, device=device)


# --- transformer --------------------------------------------------------------------------

@op("rope(Tensor x, Tensor cos, Tensor sin, str? device=None) -> Tensor",
    lambda x, cos, sin, device=None: _like(x))
def rope(b, x, cos, sin, device=None):
    return ops.rope(_arr(b, x), _arr(b, cos), _arr(b, sin), device=device)


@op("embedding(Tensor table, Tensor ids, str? device=None) -> Tensor",
    lambda table, ids, device=None: _like(table, tuple(ids.shape) + (table.shape[1],)))
def embedding(b, table, ids, device=None):
    """Rows of table for ids (any integer dtype; read on the host to check their range, so
    CUDA ids are copied there)."""
    return ops.embedding(_arr(b, table), b.host(ids), device=device)


def _reduction(op, reduction):
    if reduction not in ("mean", "sum", "none"):
        _common.fail(op, "reduction", f"expected 'mean', 'sum' or 'none', got {reduction!r}")


def _loss_shape(logits, reduction):
    _reduction("cross_entropy", reduction)  # the fake kernel too (torch.compile)
    return (logits.shape[0],) if reduction == "none" else ()


@op("cross_entropy(Tensor logits, Tensor target, str reduction='mean', int ignore_index=-100, "
    "str? device=None) -> Tensor",
    lambda logits, target, reduction="mean", ignore_index=-100, device=None:
        _like(logits, _loss_shape(logits, reduction), torch.float32))
def cross_entropy(b, logits, target, reduction="mean", ignore_index=-100, device=None):
    """float32 loss; the per-row losses summed by tl's sum kernel, the mean's division by the
    count of rows not ignored done on the result (a torch scalar op)."""
    _reduction("cross_entropy", reduction)  # (the host function below is asked for 'none')
    t = b.host(target)
    rows = ops.cross_entropy(_arr(b, logits), t, reduction="none", ignore_index=ignore_index,
                             device=device)
    if reduction == "none" or rows.size == 0:
        out = b.result(rows)
        if reduction == "none":
            return out
        return out.new_full((), 0.0 if reduction == "sum" else float("nan"))
    total = b.result(ops.sum(rows, device=device))
    if reduction == "sum":
        return total
    count = int(np.count_nonzero(np.asarray(t) != ignore_index))
    return total / count if count else total.new_full((), float("nan"))  # as torch's mean


@op("attention(Tensor q, Tensor k, Tensor v, bool causal=False, float? scale=None, "
    "Tensor? key_lengths=None, Tensor? key_mask=None, str? device=None) -> (Tensor, Tensor)",
    lambda q, k, v, causal=False, scale=None, key_lengths=None, key_mask=None, device=None:
        (_like(q), _like(q, tuple(q.shape[:3]), torch.float32)))
def attention(b, q, k, v, causal=False, scale=None, key_lengths=None, key_mask=None,
              device=None):
    """(out, lse): lse (B, H, S) float32, which attention_backward takes. key_lengths: (B,)
    integers (read on the host to check their range), keys at or past them masked; key_mask:
    (B, T) bool, True where a key may be attended (SDPA's boolean attn_mask broadcast over
    heads and queries; the inverse of nn.MultiheadAttention's key_padding_mask), read on the
    host (B T values) and passed as int32; a query with no key left gets zeros and lse -inf."""
    return ops.attention(_arr(b, q), _arr(b, k), _arr(b, v), causal=causal, scale=scale,
                         device=device, return_lse=True,
                         key_lengths=None if key_lengths is None else b.host(key_lengths),
                         key_mask=None if key_mask is None else b.host(key_mask))


# --- data ---------------------------------------------------------------------------------

def _concat_shape(ts, axis):
    shape = list(ts[0].shape)
    shape[axis] = sum(t.shape[axis] for t in ts)
    return shape


@op("concat(Tensor[] tensors, int axis=0, str? device=None) -> Tensor",
    lambda tensors, axis=0, device=None: _like(tensors[0], _concat_shape(tensors, axis)))
def concat(b, tensors, axis=0, device=None):
    return ops.concat([_arr(b, t) for t in tensors], axis, device=device)


def _scale_shape(x, axis):
    return (1,) if axis is None else (x.shape[axis % 2],)


@op("quantize_int8(Tensor x, int? axis=0, str? device=None) -> (Tensor, Tensor)",
    lambda x, axis=0, device=None: (_like(x, dtype=torch.int8),
                                    _like(x, _scale_shape(x, axis), torch.float32)))
def quantize_int8(b, x, axis=0, device=None):
    return ops.quantize_int8(_arr(b, x), axis, device=device)


_DTYPES = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16}


@op("dequantize_int8(Tensor q, Tensor scale, str dtype='f32', int? axis=0, str? device=None) "
    "-> Tensor",
    lambda q, scale, dtype="f32", axis=0, device=None:
        _like(q, dtype=_DTYPES.get(dtype, torch.float32)))
def dequantize_int8(b, q, scale, dtype="f32", axis=0, device=None):
    return ops.dequantize_int8(_arr(b, q), _arr(b, scale), dtype, axis, device=device)


# --- quantization: fp8 and the quantized GEMMs ----------------------------------------------

_FP8 = {"e4m3": torch.float8_e4m3fn, "e5m2": torch.float8_e5m2}


@op("quantize_fp8(Tensor x, str format='e4m3', int? axis=0, str? device=None) "
    "-> (Tensor, Tensor)",
    lambda x, format="e4m3", axis=0, device=None: (
        _like(x, dtype=_FP8.get(format, torch.float8_e4m3fn)),
        _like(x, _scale_shape(x, axis), torch.float32)))
def quantize_fp8(b, x, format="e4m3", axis=0, device=None):  # noqa: A002
    return ops.quantize_fp8(_arr(b, x), format, axis, device=device)


@op("dequantize_fp8(Tensor q, Tensor scale, str dtype='f32', int? axis=0, str? device=None) "
    "-> Tensor",
    lambda q, scale, dtype="f32", axis=0, device=None:
        _like(q, dtype=_DTYPES.get(dtype, torch.float32)))
def dequantize_fp8(b, q, scale, dtype="f32", axis=0, device=None):
    return ops.dequantize_fp8(_arr(b, q), _arr(b, scale), dtype, axis, device=device)


def _qgemm_fake(a, b_, scale_a=None, scale_b=None, bias=None, activation="none",
                out_dtype="f32", device=None):
    dt = torch.int32 if out_dtype == "i32" else _DTYPES.get(out_dtype, torch.float32)
    return _like(a, (a.shape[0], b_.shape[1]), dt)


@op("gemm_int8(Tensor a, Tensor b, Tensor? scale_a=None, Tensor? scale_b=None, "
    "Tensor? bias=None, str activation='none', str out_dtype='f32', str? device=None) -> Tensor",
    _qgemm_fake)
def gemm_int8(b, a, b_, scale_a=None, scale_b=None, bias=None, activation="none",
              out_dtype="f32", device=None):
    return ops.gemm_int8(_arr(b, a), _arr(b, b_), scale_a=_arr(b, scale_a),
                         scale_b=_arr(b, scale_b), bias=_arr(b, bias), activation=activation,
                         out_dtype=out_dtype, device=device)


@op("gemm_fp8(Tensor a, Tensor b, Tensor scale_a, Tensor scale_b, Tensor? bias=None, "
    "str activation='none', str out_dtype='f32', str? device=None) -> Tensor", _qgemm_fake)
def gemm_fp8(b, a, b_, scale_a, scale_b, bias=None, activation="none", out_dtype="f32",
             device=None):
    return ops.gemm_fp8(_arr(b, a), _arr(b, b_), scale_a=_arr(b, scale_a),
                        scale_b=_arr(b, scale_b), bias=_arr(b, bias), activation=activation,
                        out_dtype=out_dtype, device=device)


def _pool_shape(x, kernel_size, stride, padding, dilation, ceil_mode):
    from ..ops.data import pool_output_size
    (kh, kw), (ph, pw), (dh, dw) = _pair(kernel_size), _pair(padding), _pair(dilation)
    (sh, sw) = _pair(stride) if stride else (kh, kw)
    return (x.shape[0], x.shape[1], pool_output_size(x.shape[2], kh, sh, ph, dh, ceil_mode),
            pool_output_size(x.shape[3], kw, sw, pw, dw, ceil_mode))


@op("max_pool2d(Tensor x, int[] kernel_size, int[] stride=[], int[] padding=[0], "
    "int[] dilation=[1], bool ceil_mode=False, str? device=None) -> Tensor",
    lambda x, kernel_size, stride=(), padding=(0,), dilation=(1,), ceil_mode=False, device=None:
    _like(x, _pool_shape(x, kernel_size, stride, padding, dilation, ceil_mode)))
def max_pool2d(b, x, kernel_size, stride=(), padding=(0,), dilation=(1,), ceil_mode=False,
               device=None):
    return ops.max_pool2d(_arr(b, x), _pair(kernel_size), _pair(stride) if stride else None,
                          _pair(padding), _pair(dilation), ceil_mode, device=device)


@op("avg_pool2d(Tensor x, int[] kernel_size, int[] stride=[], int[] padding=[0], "
    "bool ceil_mode=False, bool count_include_pad=True, str? device=None) -> Tensor",
    lambda x, kernel_size, stride=(), padding=(0,), ceil_mode=False, count_include_pad=True,
    device=None: _like(x, _pool_shape(x, kernel_size, stride, padding, (1,), ceil_mode)))
def avg_pool2d(b, x, kernel_size, stride=(), padding=(0,), ceil_mode=False,
               count_include_pad=True, device=None):
    return ops.avg_pool2d(_arr(b, x), _pair(kernel_size), _pair(stride) if stride else None,
                          _pair(padding), ceil_mode, count_include_pad, device=device)



# --- backward kernels ---------------------------------------------------------------------

@op("activation_backward(str act, Tensor x, Tensor dy, float alpha=0.01, str? device=None) "
    "-> Tensor", lambda act, x, dy, alpha=0.01, device=None: _like(x))
def activation_backward(b, act, x, dy, alpha=0.01, device=None):
    return ops.activation_backward(act, _arr(b, x), _arr(b, dy), alpha=alpha, device=device)


@op("softmax_backward(Tensor y, Tensor dy, bool log=False, str? device=None) -> Tensor",
    lambda y, dy, log=False, device=None: _like(y))
def softmax_backward(b, y, dy, log=False, device=None):
    return ops.softmax_backward(_arr(b, y), _arr(b, dy), log=log, device=device)


def _norm_grads(x, weight, n):
    f32 = torch.float32
    return (_like(x),) + tuple(_like(x, (x.shape[-1],), f32) for _ in range(n))


@op("layernorm_backward(Tensor dy, Tensor x, Tensor weight, Tensor stats, str? device=None) "
    "-> (Tensor, Tensor, Tensor)",
    lambda dy, x, weight, stats, device=None: _norm_grads(x, weight, 2))
def layernorm_backward(b, dy, x, weight, stats, device=None):
    """(dx, dweight, dbias); dweight and dbias float32."""
    return ops.layernorm_backward(_arr(b, dy), _arr(b, x), _arr(b, weight), _arr(b, stats),
                                  device=device)


@op("rmsnorm_backward(Tensor dy, Tensor x, Tensor weight, Tensor stats, str? device=None) "
    "-> (Tensor, Tensor)",
    lambda dy, x, weight, stats, device=None: _norm_grads(x, weight, 1))
def rmsnorm_backward(b, dy, x, weight, stats, device=None):
    return ops.rmsnorm_backward(_arr(b, dy), _arr(b, x), _arr(b, weight), _arr(b, stats),
                                device=device)


@op("cross_entropy_backward(Tensor logits, Tensor target, Tensor grad, str reduction='mean', "
    "int ignore_index=-100, str? device=None) -> Tensor",
    lambda logits, target, grad, reduction="mean", ignore_index=-100, device=None:
        _like(logits))
def cross_entropy_backward(b, logits, target, grad, reduction="mean", ignore_index=-100,
                           device=None):
    """grad: the loss's gradient, 0-d ('mean', 'sum') or (N,) ('none'); read on the host."""
    g = b.host(grad.float())
    return ops.cross_entropy_backward(_arr(b, logits), b.host(target),
                                      g if reduction == "none" else float(g),
                                      reduction=reduction, ignore_index=ignore_index,
                                      device=device)


@op("embedding_backward(Tensor dout, Tensor ids, int num_embeddings, str? device=None) "
    "-> Tensor",
    lambda dout, ids, num_embeddings, device=None:
        _like(dout, (num_embeddings, dout.shape[-1]), torch.float32))
def embedding_backward(b, dout, ids, num_embeddings, device=None):
    """float32 (num_embeddings, D) table gradient."""
    return ops.embedding_backward(_arr(b, dout), b.host(ids), num_embeddings, device=device)


@op("attention_backward(Tensor do, Tensor q, Tensor k, Tensor v, Tensor out, Tensor lse, "
    "bool causal=False, float? scale=None, Tensor? key_lengths=None, Tensor? key_mask=None, "
    "str? device=None) -> (Tensor, Tensor, Tensor)",
    lambda do, q, k, v, out, lse, causal=False, scale=None, key_lengths=None, key_mask=None,
    device=None: (_like(q), _like(k), _like(v)))
def attention_backward(b, do, q, k, v, out, lse, causal=False, scale=None, key_lengths=None,
                       key_mask=None, device=None):
    return ops.attention_backward(_arr(b, do), _arr(b, q), _arr(b, k), _arr(b, v),
                                  _arr(b, out), _arr(b, lse), causal=causal, scale=scale,
                                  device=device,
                                  key_lengths=None if key_lengths is None
                                  else b.host(key_lengths),
                                  key_mask=None if key_mask is None else b.host(key_mask))
