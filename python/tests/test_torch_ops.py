# tl.torch: every tl.ops op as torch.ops.tl.* gives bit for bit what the numpy host function
# gives (the same kernels) on cpu, npusim and cuda; its fake kernel agrees with it (opcheck);
# the cuda path's stand-ins are never read on the host (emulated on CPU); CPU tensors are
# launched in place and outputs are torch's own tensors; torch.compile traces without breaks.
# SPDX-License-Identifier: Apache-2.0
import contextlib
import functools
import warnings

import numpy as np
import pytest

from torch_util import devices, host, on, to, torch

import tl
import tl.ops as ops
import tl.runtime
import tl.torch
from tl.ops import _common
from tl.testing import assert_close
from tl.torch.bridge import numpy_view, tensor_view

T = torch.ops.tl
_DEV = ["cpu"]  # the TL device the numpy reference calls run on (kernels round per device)


def _d(fn):
    return functools.partial(fn, device=_DEV[0])


def _cases():
    """(name, torch args, the same op through tl.ops on numpy arrays); ragged shapes."""
    g = torch.Generator().manual_seed(18)
    r = lambda *s, dt=torch.float32: torch.randn(*s, generator=g).to(dt)  # noqa: E731
    x, y, w, bb = r(37, 100), r(37, 100), r(100), r(100)
    xb = r(37, 100, dt=torch.bfloat16)
    a3, bt, res = r(3, 37, 24), r(40, 24).mT, r(3, 37, 40)  # bt: a transposed view
    img, wimg = r(2, 3, 11, 9), r(5, 3, 3, 3)
    q, k, v = r(2, 4, 19, 16), r(2, 2, 23, 16), r(2, 2, 23, 16)
    cos, sin = tl.torch.rope_tables(19, 16)
    logits, target = r(29, 40), torch.randint(0, 40, (29,), generator=g)
    target[3] = -100
    ids, table = torch.randint(0, 13, (3, 7), generator=g), r(13, 20)
    sm = torch.softmax(x, -1)
    _, st = T.layernorm(x, w, bb)
    o, lse = T.attention(q, k, v, True)
    qi, sc = T.quantize_int8(x)
    qw, sw = T.quantize_int8(r(100, 45), 1)  # per column of a (K, N) weight
    q8, s8 = T.quantize_fp8(x, "e4m3", 0)
    q8w, s8w = T.quantize_fp8(r(100, 45), "e4m3", 1)
    qb, kb, vb, do_b = (t.bfloat16() for t in (q, k, v, r(2, 4, 19, 16)))
    ob, lseb = T.attention(qb, kb, vb, False, 0.3)
    c = []
    for n in ("add", "sub", "mul"):
        c.append((n, (x, w), lambda x, y, n=n: _d(ops.binary)(n, x, y)))
    c.append(("div", (xb, xb[0].abs() + 1), ops.div))
    # A broadcast whose rows do not merge into one view: numpy copies it on the host, the cuda
    # path expands it on the device first.
    c.append(("add", (r(2, 1, 5), r(2, 3, 5)), ops.add))
    for n in ("relu", "silu", "sigmoid", "tanh"):
        c.append((n, (x,), getattr(ops, n)))
    c += [("gelu", (xb, "tanh"), ops.gelu),
          ("leaky_relu", (x, 0.2), ops.leaky_relu),
          ("swiglu", (x, y), ops.swiglu), ("geglu", (xb, xb), ops.geglu),
          ("softmax", (x, 0), ops.softmax), ("log_softmax", (xb, -1), ops.log_softmax),
          ("layernorm", (x, w, bb, 1e-5),
           lambda *a: _d(ops.layernorm)(*a, return_stats=True)),
          ("rmsnorm", (xb, w.bfloat16(), 1e-6), lambda *a: _d(ops.rmsnorm)(*a, return_stats=True))]
    for n in ("sum", "mean", "max", "min", "argmax"):
        c.append((n, (x, 0), lambda x, ax, n=n: _d(ops.reduce)(n, x, ax)))
    c += [("var", (x, -1, 1.0), lambda x, ax, cr: _d(ops.var)(x, ax, correction=cr)),
          ("cumsum", (xb, 0), ops.cumsum), ("topk", (x, 5), ops.topk),
          ("gemm", (a3, bt, w[:40], "gelu", res, 0.5),
           lambda a, b, bias, act, res, al: _d(ops.gemm)(a, b, bias=bias, activation=act,
                                                     residual=res, alpha=al)),
          ("gemv", (x, w, None, 2.0), lambda a, x, bias, al: _d(ops.gemv)(a, x, alpha=al)),
          ("transpose", (a3,), ops.transpose),
          ("conv2d", (img, wimg, w[:5], [2], [1], "relu"),
           lambda x, w, b, s, p, act: _d(ops.conv2d)(x, w, b, stride=s[0], padding=p[0],
                                                 activation=act)),
          ("rope", (q, cos, sin), ops.rope),
          ("embedding", (table, ids), ops.embedding),
          ("cross_entropy", (logits, target, "mean", -100),
           lambda lg, t, red, ig: _d(ops.cross_entropy)(lg, t, reduction=red, ignore_index=ig)),
          ("cross_entropy", (logits, target, "none", -100),
           lambda lg, t, red, ig: _d(ops.cross_entropy)(lg, t, reduction=red, ignore_index=ig)),
          ("attention", (q, k, v, True, None),
           lambda q, k, v, ca, s: _d(ops.attention)(q, k, v, causal=ca, return_lse=True)),
          ("concat", ([x, y[:, :7]], 1), ops.concat),
          ("quantize_int8", (x,), ops.quantize_int8),
          ("dequantize_int8", (qi, sc, "bf16"), ops.dequantize_int8),
          # quantization (tl/ops/quant.py): axes, fp8 formats, the quantized GEMMs
          ("quantize_int8", (x.mT, 1), ops.quantize_int8),
          ("dequantize_int8", (qw, sw, "f32", 1), ops.dequantize_int8),
          ("quantize_fp8", (xb, "e5m2", None), ops.quantize_fp8),
          ("quantize_fp8", (x, "e4m3", 1), ops.quantize_fp8),
          ("dequantize_fp8", (q8, s8, "bf16", 0), ops.dequantize_fp8),
          ("gemm_int8", (qi, qw, sc, sw, w[:45], "relu", "bf16"),
           lambda a, b, sa, sb, bias, act, o: _d(ops.gemm_int8)(
               a, b, scale_a=sa, scale_b=sb, bias=bias, activation=act, out_dtype=o)),
          ("gemm_int8", (qi, qw, None, None, None, "none", "i32"),
           lambda a, b, sa, sb, bias, act, o: _d(ops.gemm_int8)(a, b, out_dtype=o)),
          ("gemm_fp8", (q8, q8w, s8, s8w, None, "gelu", "f32"),
           lambda a, b, sa, sb, bias, act, o: _d(ops.gemm_fp8)(
               a, b, scale_a=sa, scale_b=sb, activation=act, out_dtype=o)),
          ("max_pool2d", (img, [2], []), lambda x, k, s: _d(ops.max_pool2d)(x, k[0])),
          ("avg_pool2d", (img, [3], [2]), lambda x, k, s: _d(ops.avg_pool2d)(x, k[0], s[0])),
          ("max_pool2d", (img, [3], [2], [1], [2], True),
           lambda x, k, s, p, d, cm: _d(ops.max_pool2d)(x, 3, 2, 1, 2, True)),
          ("avg_pool2d", (img, [3], [2], [1], True, False),
           lambda x, k, s, p, cm, cp: _d(ops.avg_pool2d)(x, 3, 2, 1, True, False)),
          ("activation_backward", ("gelu", x, y, 0.01),
           lambda act, x, dy, al: _d(ops.activation_backward)(act, x, dy, alpha=al)),
          ("softmax_backward", (sm, y, False),
           lambda s, dy, log: _d(ops.softmax_backward)(s, dy, log=log)),
          ("layernorm_backward", (y, x, w, st), ops.layernorm_backward),
          ("rmsnorm_backward", (y, x, w, st), ops.rmsnorm_backward),
          ("cross_entropy_backward", (logits, target, torch.tensor(0.5), "sum", -100),
           lambda lg, t, gr, red, ig: _d(ops.cross_entropy_backward)(lg, t, float(gr),
                                                                 reduction=red)),
          ("embedding_backward", (r(3, 7, 20), ids, 13), ops.embedding_backward),
          ("attention_backward", (r(2, 4, 19, 16), q, k, v, o, lse, True, None),
           lambda do, q, k, v, o, lse, ca, s: _d(ops.attention_backward)(do, q, k, v, o, lse,
                                                                        causal=ca)),
          ("attention_backward", (do_b, qb, kb, vb, ob, lseb, False, 0.3),
           lambda do, q, k, v, o, lse, ca, s: _d(ops.attention_backward)(do, q, k, v, o, lse,
                                                                        causal=ca, scale=s)),
          ("gemm", (a3.half(), bt.half(), None, "none", None, 1.0),
           lambda a, b, bias, act, res, al: _d(ops.gemm)(a, b))]
    # issue 18's features: split-K GEMM, grouped and dilated conv2d, attention key lengths
    kl = torch.tensor([0, 17], dtype=torch.int32)
    o_l, lse_l = T.attention(q, k, v, False, None, kl)
    c += [("gemm", (r(3, 2000), r(2000, 40), w[:40], "relu", r(3, 40), 0.5, 5),
           lambda a, b, bias, act, res, al, sk: _d(ops.gemm)(a, b, bias=bias, activation=act,
                                                         residual=res, alpha=al, split_k=sk)),
          ("conv2d", (r(2, 4, 11, 9), r(6, 2, 3, 3), w[:6], [1], [2], "relu", [2], 2),
           lambda x, w, b, s, p, act, d, g: _d(ops.conv2d)(x, w, b, stride=s[0], padding=p[0],
                                                       activation=act, dilation=d[0],
                                                       groups=g)),
          ("attention", (q, k, v, True, None, kl),
           lambda q, k, v, ca, s, kl: _d(ops.attention)(q, k, v, causal=ca, return_lse=True,
                                                        key_lengths=kl)),
          ("attention_backward", (r(2, 4, 19, 16), q, k, v, o_l, lse_l, False, None, kl),
           lambda do, q, k, v, o, lse, ca, s, kl: _d(ops.attention_backward)(
               do, q, k, v, o, lse, causal=ca, key_lengths=kl))]
    # the boolean key mask (left padding in entry 0, every key masked in entry 1)
    km = torch.ones(2, k.shape[2], dtype=torch.bool)
    km[0, :k.shape[2] // 2] = False
    km[1] = False
    o_m, lse_m = T.attention(q, k, v, False, None, None, km)
    c += [("attention", (q, k, v, True, None, None, km),
           lambda q, k, v, ca, s, kl, km: _d(ops.attention)(q, k, v, causal=ca, return_lse=True,
                                                            key_mask=km)),
          ("attention_backward", (r(2, 4, 19, 16), q, k, v, o_m, lse_m, False, None, None, km),
           lambda do, q, k, v, o, lse, ca, s, kl, km: _d(ops.attention_backward)(
               do, q, k, v, o, lse, causal=ca, key_mask=km))]
    return c


CASES = _cases()
IDS = [f"{n}{i}" for i, (n, _, _) in enumerate(CASES)]


def _np(v):
    if isinstance(v, torch.Tensor):
        return numpy_view(v)
    if isinstance(v, list):
        return [_np(t) for t in v]
    return v


def _has_fp8(device):
    info = tl.runtime.device(device).info
    return bool((info["supported_dtypes"] >> tl.float8e4m3.code) & 1)


def _same(got, want, what):
    """Bit-for-bit equality of the torch result and the numpy one."""
    got = got if isinstance(got, tuple) else (got,)
    want = want if isinstance(want, tuple) else (want,)
    assert len(got) == len(want), what
    for i, (g, w) in enumerate(zip(got, want)):
        w = tensor_view(np.asarray(w))
        g = host(g)
        assert g.dtype == w.dtype and g.shape == w.shape, f"{what}[{i}]: {g.dtype} {g.shape}"
        if g.dtype in (torch.float8_e4m3fn, torch.float8_e5m2):  # compared as bit patterns
            g, w = g.view(torch.uint8), w.view(torch.uint8)
        assert torch.equal(g, w), f"{what}[{i}]: max diff {(g.double() - w.double()).abs().max()}"


def test_every_op_has_a_case():
    # Catches: an op registered without a test here.
    assert sorted({n for n, _, _ in CASES}) == sorted(tl.torch.NAMES)


@pytest.mark.parametrize("device", devices())
@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_op_matches_tl_ops(case, device):
    # Catches: an argument passed in the wrong place or dropped (alpha, bias, axis, eps,
    # reduction, causal), bf16 read as int16 values, outputs not on the inputs' device, a
    # result other than the host function's (the same kernels: equal bit for bit).
    name, args, fn = case
    if "fp8" in name and not _has_fp8(device):
        # a device without fp8 (npusim): the torch op refuses it as the host function does
        with on(device), pytest.raises(ops.OpError, match=f"tl.ops.{name}: argument 'device'"):
            getattr(T, name)(*to(device, args))
        return
    _DEV[0] = device
    want = (fn if fn.__name__ == "<lambda>" else _d(fn))(*[_np(a) for a in args])
    _DEV[0] = "cpu"
    with on(device):
        got = getattr(T, name)(*to(device, args))
    for t in got if isinstance(got, tuple) else (got,):
        assert t.device.type == ("cuda" if device == "cuda" else "cpu")
    if name == "embedding_backward" and device == "cuda":
        # GPU atomics add a repeated id's rows in any order: the table's bound, not bits.
        assert_close(host(got).double().numpy(), np.asarray(want, np.float64), op="backward",
                     dtype="f32", n=21)
        return
    _same(got, want, name)


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_cuda_path_never_reads_stand_ins(case):
    # The cuda path (stand-ins mapped back to the tensors at each launch), run on CPU tensors
    # with stand-ins full of NaN. Catches: a host function reading a stand-in's values (a copy
    # made on the host, a value checked there), which on a GPU would be garbage.
    name, args, fn = case
    want = fn(*[_np(a) for a in args])
    with tl.torch.emulate_cuda():
        got = getattr(T, name)(*args)
    _same(got, want, name)


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_cuda_path_copies_only_class_ids(case, monkeypatch):
    # What would cross to the host on cuda: every launch argument that is not a view of a
    # tensor. Catches: an output or scratch array allocated by numpy (copied in and out on a
    # GPU) instead of through the bridge. Allowed: int32 class ids (checked on the host) and
    # cross_entropy_backward's per-row scale of the loss gradient.
    from tl.torch.bridge import Bridge
    host_args, real = [], Bridge.arg

    def arg(self, a):
        if isinstance(a, np.ndarray) and self._find(a) is None:
            host_args.append((a.dtype.name, a.shape))
        return real(self, a)
    monkeypatch.setattr(Bridge, "arg", arg)
    name, args, _ = case
    with tl.torch.emulate_cuda():
        getattr(T, name)(*args)
    allowed = {"int32"} | ({"float32"} if name == "cross_entropy_backward" else set())
    assert {dt for dt, _ in host_args} <= allowed, host_args


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_fake_kernel_and_schema(case):
    # torch.library.opcheck: the fake kernel's shapes, dtypes, devices and strides against the
    # real op, the schema (no mutation, no aliasing), the autograd registration, and tracing
    # under AOT dispatch. Catches: a fake shape off by one, int32 vs int64, a view returned.
    name, args, _ = case
    fp8 = (torch.float8_e4m3fn, torch.float8_e5m2)
    if any(isinstance(a, torch.Tensor) and a.dtype in fp8 for a in args):
        # opcheck's schema test computes on the inputs (mul is not implemented for float8 on
        # CPU): every other test here, and the schema's no-mutation rule checked on the bits.
        before = [a.view(torch.uint8).clone() if a.dtype in fp8 else a.clone()
                  for a in args if isinstance(a, torch.Tensor)]
        torch.library.opcheck(getattr(T, name).default, args,
                              test_utils=("test_autograd_registration", "test_faketensor",
                                          "test_aot_dispatch_dynamic"))
        after = [a.view(torch.uint8) if a.dtype in fp8 else a
                 for a in args if isinstance(a, torch.Tensor)]
        assert all(torch.equal(x, y) for x, y in zip(before, after)), f"{name} mutated an input"
        return
    torch.library.opcheck(getattr(T, name).default, args)


def _launch_spy(monkeypatch):
    seen = []
    real = _common.device_args

    def spy(*args):
        seen.extend(a.ctypes.data for a in args if isinstance(a, np.ndarray))
        return real(*args)
    monkeypatch.setattr(_common, "device_args", spy)
    return seen


def test_cpu_tensors_run_in_place(monkeypatch):
    # Catches: an input or the output copied on the way (the kernel reading or writing
    # memory other than the tensors'), the output not torch's own tensor.
    seen = _launch_spy(monkeypatch)
    base = torch.randn(40, 64)
    x, bt = base[:37], torch.randn(100, 64).mT  # a slice and a transposed view
    out = T.gemm(x, bt)
    assert tl.runtime.device("cpu").copied_bytes == 0
    assert x.data_ptr() in seen and bt.data_ptr() in seen and out.data_ptr() in seen
    assert out._base is None and out.is_contiguous()
    torch.testing.assert_close(out, x @ bt, rtol=1e-5, atol=1e-5)


def test_bf16_tensors_run_in_place(monkeypatch):
    seen = _launch_spy(monkeypatch)
    x = torch.randn(33, 70).bfloat16()
    out = T.softmax(x)
    assert out.dtype == torch.bfloat16 and x.data_ptr() in seen and out.data_ptr() in seen
    assert tl.runtime.device("cpu").copied_bytes == 0


@pytest.mark.parametrize("device", devices("cuda"))
def test_cuda_tensors_run_in_place_on_torch_stream(device, monkeypatch):
    # CUDA tensors: every launch argument is a view of the tensors (their own device memory:
    # the input's and the output's addresses are among them), the HAL copies nothing, and on a
    # side stream the op is ordered with torch's work there. Catches: a stand-in left unmapped
    # (copied), the output made by TL rather than torch, launches on TL's own stream.
    from tl.torch.bridge import Bridge
    ptrs, real = [], Bridge.arg

    def arg(self, a):
        v = real(self, a)
        if isinstance(v, torch.Tensor):
            ptrs.append(v.data_ptr())
        else:
            assert not isinstance(v, np.ndarray), "a host array in a CUDA launch"
        return v
    monkeypatch.setattr(Bridge, "arg", arg)
    s = torch.cuda.Stream()
    with torch.cuda.stream(s):
        x = torch.randn(300, 257, device="cuda")
        out = T.softmax(x * 2)  # x * 2 queued on s just before: the op must see it
        want = torch.softmax(x * 2, -1)
    s.synchronize()
    assert tl.runtime.device("cuda").copied_bytes == 0
    assert out.data_ptr() in ptrs and out.device == x.device
    torch.testing.assert_close(out, want, rtol=0, atol=1e-6)


def test_non_contiguous_inputs():
    # A column-sliced and a transposed tensor: where the layout has no (rows, columns) view the
    # host function copies (numpy), the result is still right. Catches: strides ignored.
    x = torch.randn(50, 80)[:, 3:70]
    torch.testing.assert_close(T.softmax(x), torch.softmax(x, -1), rtol=0, atol=1e-6)
    torch.testing.assert_close(T.softmax(x.mT), torch.softmax(x.mT, -1), rtol=0, atol=1e-6)
    with tl.torch.emulate_cuda():  # the cuda path makes it contiguous on the device first
        torch.testing.assert_close(T.layernorm(x.mT)[0], torch.nn.functional.layer_norm(
            x.mT, (50,)), rtol=0, atol=1e-5)


@pytest.mark.parametrize("emulate", [False, True])
def test_zero_extents_as_torch(emulate):
    # Sums over nothing: torch's own values, on CPU tensors and on the cuda path (stand-ins
    # full of NaN, so a value set on the host instead of on the device shows). Catches: the
    # errors these raised before, a fill written to a stand-in, an output never written.
    F = torch.nn.functional
    e, bias = torch.zeros(3, 0), torch.tensor([1.0, -2.0, 0.5, 3.0])
    with tl.torch.emulate_cuda() if emulate else contextlib.nullcontext():
        got = [T.sum(e, 1), T.mean(e, 1), T.var(e, 1, 0.0), T.var(torch.ones(2, 3), 1, 5.0),
               T.gemm(e, torch.zeros(0, 4), bias, "relu"),
               T.conv2d(torch.zeros(1, 0, 4, 4), torch.zeros(4, 0, 3, 3), bias),
               T.cross_entropy(torch.ones(2, 5), torch.full((2,), -100)),
               T.cross_entropy(torch.ones(0, 5), torch.zeros(0, dtype=torch.long)),
               T.cross_entropy(torch.ones(0, 5), torch.zeros(0, dtype=torch.long), "sum")]
    with warnings.catch_warnings():  # torch's "degrees of freedom is <= 0"
        warnings.simplefilter("ignore", UserWarning)
        want = [e.sum(1), e.mean(1), e.var(1, correction=0), torch.ones(2, 3).var(1, correction=5),
                torch.relu(torch.addmm(bias, e, torch.zeros(0, 4))),
                bias[:, None, None].expand(4, 2, 2)[None],  # torch's conv2d drops C = 0's OC
                F.cross_entropy(torch.ones(2, 5), torch.full((2,), -100)),  # NaN: none counted
                F.cross_entropy(torch.ones(0, 5), torch.zeros(0, dtype=torch.long)),
                F.cross_entropy(torch.ones(0, 5), torch.zeros(0, dtype=torch.long),
                                reduction="sum")]
    for g, w in zip(got, want):
        torch.testing.assert_close(g, w, rtol=0, atol=0, equal_nan=True)


def test_errors_name_the_op_and_argument():
    # Catches: a bad argument passing silently or failing far from its cause.
    with pytest.raises(ops.OpError, match=r"tl.ops.gemm: argument 'b': inner dimensions"):
        T.gemm(torch.randn(3, 4), torch.randn(5, 6))
    with pytest.raises(ops.OpError, match=r"tl.ops.softmax: argument 'x': dtype f64"):
        T.softmax(torch.randn(3, 4, dtype=torch.float64))
    with pytest.raises(ValueError, match=r"tl.relu: argument 'device': CPU tensors cannot run "
                                         r"on 'cuda'"):
        T.relu(torch.randn(3), device="cuda")
    with pytest.raises(ops.OpError, match=r"tl.ops.embedding: argument 'ids': index 9 out of "
                                          r"range \[0, 4\)"):
        T.embedding(torch.randn(4, 3), torch.tensor([1, 9]))


def test_meta_tensors_give_shapes():
    # The fake kernels on meta tensors: shapes without running anything.
    q = torch.empty(2, 8, 100, 64, device="meta")
    kv = torch.empty(2, 2, 120, 64, device="meta")
    out, lse = T.attention(q, kv, kv, True)
    assert out.shape == q.shape and lse.shape == (2, 8, 100) and lse.dtype == torch.float32
    assert T.gemm(torch.empty(5, 7, 3, device="meta"),
                  torch.empty(3, 9, device="meta")).shape == (5, 7, 9)


def _block(x, w1, w2, g):
    h = tl.torch.layernorm(x, g)
    a = T.gemm(h, w1, None, "gelu")
    return torch.ops.tl.softmax(T.gemm(a, w2, None, "none", x), -1).sum()


@pytest.mark.parametrize("device", devices("cpu", "cuda"))
def test_torch_compile_fullgraph(device):
    # aot_eager traces forward and backward through the fake kernels with fullgraph=True (a
    # graph break is an error). Catches: a fake kernel that cannot run on fake tensors, an
    # op or a backward that breaks the graph, a compiled result different from eager.
    import torch._dynamo
    torch._dynamo.reset()
    x = to(device, torch.randn(24, 32))
    w1, w2 = to(device, torch.randn(32, 48)), to(device, torch.randn(48, 32))
    g = to(device, torch.ones(32)).requires_grad_()
    eager = _block(x, w1, w2, g)
    (ge,) = torch.autograd.grad(eager, g)
    compiled = torch.compile(_block, fullgraph=True, backend="aot_eager")
    got = compiled(x, w1, w2, g)
    (gc,) = torch.autograd.grad(got, g)
    assert torch.equal(got, eager) and torch.equal(gc, ge)


def test_docstring_examples():
    # The module's examples run (softmax values, a layernorm weight's gradient).
    import doctest
    result = doctest.testmod(tl.torch, optionflags=doctest.ELLIPSIS)
    assert result.failed == 0 and result.attempted > 0


@pytest.mark.parametrize("device", devices("npusim"))
def test_device_argument_wins_over_context(device):
    # device= on the op picks the TL device for CPU tensors, over tl.torch.device(...).
    # Catches: the argument ignored (npusim rounds exp differently from cpu: not bit-equal).
    x = torch.randn(37, 100, generator=torch.Generator().manual_seed(3))
    want = ops.softmax(x.numpy(), device=device)
    with tl.torch.device("cpu"):
        got = T.softmax(x, -1, device)
    assert torch.equal(got, tensor_view(want))
    assert not torch.equal(tensor_view(ops.softmax(x.numpy())), tensor_view(want))


@pytest.mark.parametrize("mode,args", [
    ("max", dict(kernel_size=3, stride=2, padding=1)),
    ("max", dict(kernel_size=3, stride=2, padding=1, dilation=2, ceil_mode=True)),
    ("max", dict(kernel_size=2, stride=2, padding=1, ceil_mode=True)),
    ("avg", dict(kernel_size=3, stride=2, padding=1)),
    ("avg", dict(kernel_size=3, stride=2, padding=1, ceil_mode=True, count_include_pad=False)),
    ("avg", dict(kernel_size=2, stride=2, padding=1, ceil_mode=True))])
def test_pooling_semantics_are_torchs(mode, args):
    # tl.ops' padded pooling against torch.nn.functional itself (not tl's own reference):
    # catches a padding, dilation, ceil_mode or divisor rule that differs from PyTorch's.
    x = torch.randn(2, 3, 11, 14, generator=torch.Generator().manual_seed(5)) - 1.0
    want = getattr(torch.nn.functional, f"{mode}_pool2d")(x, **args)
    got = getattr(torch.ops.tl, f"{mode}_pool2d")(
        x, [args["kernel_size"]], [args["stride"]], [args["padding"]],
        *([[args.get("dilation", 1)]] if mode == "max" else []), args.get("ceil_mode", False),
        *([args.get("count_include_pad", True)] if mode == "avg" else []))
    assert got.shape == want.shape
    torch.testing.assert_close(got, want, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("dtype, want", [("float8_e4m3fn", "float8e4m3"),
                                         ("float8_e5m2", "float8e5m2"),
                                         ("bfloat16", "bfloat16"), ("float16", "float16"),
                                         ("float32", "float32"), ("int8", "int8")])
def test_dlpack_codes_map_to_the_ir_types(dtype, want):
    # torch CUDA tensors cross by DLPack (tl/devtensor.py): catches a dtype whose DLPack code
    # has no entry (fp8 on the H200: "DLPack dtype code 10 bits 8 has no Tile IR element type")
    # or maps to the wrong IR type. The codes are torch's own, read here from a CPU tensor.
    import ctypes
    from tl import devtensor
    t = torch.zeros(3, dtype=getattr(torch, dtype))
    cap = t.__dlpack__()
    get = ctypes.pythonapi.PyCapsule_GetPointer
    get.restype, get.argtypes = ctypes.c_void_p, [ctypes.py_object, ctypes.c_char_p]
    dl = devtensor._DLTensor.from_address(get(cap, b"dltensor")).dtype
    assert devtensor._DL_DTYPES[(dl.code, dl.bits)] is getattr(tl, want)


@pytest.mark.parametrize("src,shape", [
    ((4, 1, 8), (4, 3, 8)), ((1, 3, 8), (4, 3, 8)), ((1, 1, 8), (4, 3, 8)), ((4, 3, 8), (4, 3, 8)),
    ((3, 1), (2, 3, 5)), ((5,), (2, 3, 5)), ((2, 1, 1, 8), (2, 1, 6, 8)), ((1, 6, 1), (2, 6, 4))])
@pytest.mark.parametrize("sliced", [False, True])
def test_rows_merge_follows_torch_view(src, shape, sliced):
    # Whether a broadcast reshapes to (rows, last) without a copy, against torch's own view
    # (view raises where the strides do not allow one: numpy's no-copy rule too). Catches: axes
    # of length 1 counted (they never stop a merge), a broadcast axis (stride 0) next to a real
    # one taken as mergeable, a strided source (a slice of every other row) taken as contiguous.
    from tl.torch.library import _rows_merge
    t = torch.zeros(tuple(n * (2 if sliced and i == 0 else 1) for i, n in enumerate(src)))
    t = t[::2] if sliced else t
    try:
        t.expand(shape).view(-1, shape[-1])
        want = True
    except RuntimeError:
        want = False
    assert _rows_merge(t, shape) == want
