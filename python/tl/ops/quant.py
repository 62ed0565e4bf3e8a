# Quantization: symmetric int8 and fp8 (e4m3, e5m2) quantize / dequantize with per-tensor,
# per-row or per-column scales, and the quantized GEMMs (int8 x int8 accumulated exactly in
# int32, fp8 x fp8 in f32) with a dequantizing epilogue (scales, bias, activation).
# SPDX-License-Identifier: Apache-2.0
import numpy as np

import tl

from .. import fp8
from . import _common as c
from .activations import ACTIVATIONS, activate

# The largest magnitude each quantized format takes: int8 is symmetric (-128 never produced),
# fp8 saturates at its largest finite value.
QMAX = {"int8": 127.0, "f8e4m3": 448.0, "f8e5m2": 57344.0}
FP8_FORMATS = ("e4m3", "e5m2")
# Targets whose lowering has no fp8 (load, store or conversion): the TNPU's vector and matrix
# units take bf16, f16, f32, i8 and i32 (compiler/backends/tnpu/README.md). The host functions
# refuse an fp8 op there by name, and generate.py marks the fp8 specializations so (their
# `.tlir` header), rather than letting the backend fail on an element type.
NO_FP8 = {"tnpu": "the TNPU's vector and matrix units have no fp8 (bf16, f16, f32, i8, i32)"}
# int8 GEMM: every product is at most 128 * 128 = 2^14 in magnitude, so an int32 sum of K of
# them is exact while K <= (2^31 - 1) // 2^14 = 131071 (K up to 2^16 with room to spare).
INT8_MAX_K = (2**31 - 1) // 2**14
# q = x times the f32 reciprocal of the scale, as PyTorch's quantize_per_channel (FBGEMM's
# non-legacy Quantize) computes it: bit-identical to it, and a multiplication instead of a
# division per element (llvm-cpu: vdivps is 7 cycles per 16 lanes on Zen 4; the TNPU's v.div
# 4 vector passes, v.mul 1). A scale below RECIP_TINY (subnormal data: its reciprocal would
# overflow) is lifted by RECIP_LIFT first, x with it: (x * 2^64) * (1 / (s * 2^64)) is the same
# product of x and 1 / s rounded to 24 bits, its exponent unbounded (both lifts are exact).
RECIP_TINY = 2.0**-100
RECIP_LIFT = 2.0**64
# Per-row quantization of rows up to this long is one kernel (quantize_scaled_kernel's
# ROW_SCALE: the scale and the values from one read of the block); longer rows take the scale
# pass, then the values.
ROW_SCALE_MAX_COLS = 4096


@tl.kernel
def absmax_kernel(x: tl.tensor, out: tl.tensor, QMAX: tl.constexpr, BM: tl.constexpr,
                  BLOCK: tl.constexpr, COLS: tl.constexpr = False):
    """Per row of x (rows, n) (per column with COLS: BLOCK columns a program, BM rows a step,
    contiguous loads instead of a transposed view's strided ones): amax = max |x| in f32 (NaN
    if it has a NaN). QMAX > 0 stores the scale amax / QMAX instead (1 for all zeros, NaN or
    inf where there is a NaN or an infinity); QMAX = 0 stores amax."""
    if COLS:
        c0 = tl.program_id(0) * BLOCK
        amax = tl.zeros((BLOCK,), tl.float32)
        for r in tl.range(0, x.shape[0], BM):
            v = tl.abs(tl.load(x + (r, c0), (BM, BLOCK)).to(tl.float32))
            amax = tl.maximum(amax, tl.max(v, axis=0))
        r0 = c0
    else:
        r0 = tl.program_id(0) * BM
        amax = tl.zeros((BM,), tl.float32)
        for k in tl.range(0, x.shape[1], BLOCK):
            v = tl.abs(tl.load(x + (r0, k), (BM, BLOCK)).to(tl.float32))
            amax = tl.maximum(amax, tl.max(v, axis=1))
    if QMAX > 0:
        amax = tl.where(amax == 0.0, 1.0, amax / QMAX)
    tl.store(out + (r0,), amax)


@tl.func
def times_reciprocal(v, s, COLS: tl.constexpr):
    """v times 1 / s, the reciprocal rounded to f32 (RECIP_TINY), s one value per row of v
    (per column with COLS)."""
    lift = tl.where(s < RECIP_TINY, RECIP_LIFT, 1.0)
    inv = 1.0 / (s * lift)
    if COLS:
        v = v * lift[None, :] * inv[None, :]
    else:
        v = v * lift[:, None] * inv[:, None]
    return v


@tl.kernel
def quantize_scaled_kernel(x: tl.tensor, scale: tl.tensor, q: tl.tensor, QMAX: tl.constexpr,
                           BM: tl.constexpr, BN: tl.constexpr, COLS: tl.constexpr = False,
                           ROW_SCALE: tl.constexpr = False, CAST_SATURATES: tl.constexpr = False):
    """q = x * (1 / scale[row]) (scale[col] with COLS) in f32 (the reciprocal rounded to f32,
    RECIP_TINY), clamped to [-QMAX, QMAX] (NaN stays NaN), rounded to nearest even into q's type
    (int8: NaN becomes 0; fp8: the saturated value is always finite). ROW_SCALE (whole rows: BN
    >= cols, one program column): the program computes its rows' scales (as absmax_kernel with
    QMAX), scales the block it holds and stores the scales after q, so that x is read from
    memory once (the two-kernel form reads it twice). CAST_SATURATES: q is an integer type whose
    largest value is QMAX (int8: 127), so the cast's saturation (ir.h) is the upper bound and only
    the lower one is applied (the tnpu: one vector pass instead of two; NaN still becomes 0)."""
    m0 = tl.program_id(0) * BM
    n0 = tl.program_id(1) * BN
    v = tl.load(x + (m0, n0), (BM, BN)).to(tl.float32)
    if ROW_SCALE:
        amax = tl.max(tl.abs(v), axis=1)
        s = tl.where(amax == 0.0, 1.0, amax / QMAX)
        v = times_reciprocal(v, s, False)
    elif COLS:
        v = times_reciprocal(v, tl.load(scale + (n0,), (BN,)), True)
    else:
        v = times_reciprocal(v, tl.load(scale + (m0,), (BM,)), False)
    if CAST_SATURATES:
        v = tl.maximum(v, -QMAX)
    else:
        v = tl.clamp(v, -QMAX, QMAX, propagate_nan=tl.PropagateNan.ALL)
    tl.store(q + (m0, n0), tl.cast(v, q.dtype, "rne"))
    if ROW_SCALE:
        # The scales last: a store between x's load and q's (the compiler cannot tell that scale
        # does not alias x) made llvm-cpu copy the block to the stack instead of reading it in
        # place (cpu-plan-views).
        tl.store(scale + (m0,), s)


QGEMM_CONFIGS = [tl.Config({"BM": 32, "BN": 32, "BK": 32}),
                 tl.Config({"BM": 64, "BN": 64, "BK": 64}),
                 tl.Config({"BM": 128, "BN": 128, "BK": 64}),
                 # tnpu: whole passes of the 128 x 128 matrix unit (i8 into i32)
                 tl.Config({"BM": 128, "BN": 128, "BK": 128}, targets="tnpu")]


@tl.autotune(configs=QGEMM_CONFIGS, key=["a", "b"])
@tl.kernel
def qgemm_kernel(a: tl.tensor, b: tl.tensor, sa: tl.tensor, sb: tl.tensor, bias: tl.tensor,
                 out: tl.tensor, INT: tl.constexpr, DEQUANT: tl.constexpr,
                 HAS_BIAS: tl.constexpr, ACT: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr,
                 BK: tl.constexpr):
    """a (M, K) @ b (K, N) of quantized values: int8 accumulated in int32 (INT, exact), fp8 in
    f32. DEQUANT: out = ACT(acc * sa[row] * sb[col] + bias) in f32, rounded once to out's type;
    else out = acc (int32)."""
    m0 = tl.program_id(0) * BM
    n0 = tl.program_id(1) * BN
    if INT:
        acc = tl.zeros((BM, BN), tl.int32)
    else:
        acc = tl.zeros((BM, BN), tl.float32)
    for k in tl.range(0, a.shape[1], BK):
        acc = tl.dot(tl.load(a + (m0, k), (BM, BK)), tl.load(b + (k, n0), (BK, BN)), acc=acc)
    if DEQUANT:
        r = acc.to(tl.float32) * tl.load(sa + (m0,), (BM,))[:, None]
        r = r * tl.load(sb + (n0,), (BN,))[None, :]
        if HAS_BIAS:
            r = r + tl.load(bias + (n0,), (BN,)).to(tl.float32)[None, :]
        r = activate(r, ACT)
        tl.store(out + (m0, n0), r)
    else:
        tl.store(out + (m0, n0), acc)


def _device_fp8(op, device, fmt="e4m3"):
    """An OpError unless `device` declares fp8 (its HAL info's supported_dtypes: npusim does
    not; cuda from sm_89)."""
    code = (tl.float8e4m3 if fmt == "e4m3" else tl.float8e5m2).code
    if not (c.runtime_info(device)["supported_dtypes"] >> code) & 1:
        why = NO_FP8.get(c.target(device), "the device does not declare it")
        c.fail(op, "device", f"{device or 'cpu'!r} (target {c.target(device)}) does not "
               f"support f8{fmt}: {why}")


def _axis(op, axis):
    if axis not in (0, 1, -1, -2, None):
        c.fail(op, "axis", f"expected 0 (a scale per row), 1 (per column) or None (one scale), "
               f"got {axis!r}")
    return None if axis is None else axis % 2


def _scale_view(op, scale, x_shape, axis):
    """The scale array (float32; (rows,) for axis 0, (cols,) for axis 1, (1,) for None); per
    tensor as a (rows,) stride-0 broadcast."""
    scale = c.as_array(op, "scale", scale)
    want = (1,) if axis is None else (x_shape[axis],)
    if scale.dtype != np.float32 or scale.reshape(-1).shape != want or scale.ndim > 1:
        c.fail(op, "scale", f"expected float32 {want} (axis {axis}), got {scale.dtype} "
               f"{scale.shape}")
    scale = scale.reshape(want)
    return np.broadcast_to(scale, (x_shape[0],)) if axis is None else scale


def _quantize(op, x, qdtype, axis, device):
    """Scales and quantized values of x (rank 2) in `qdtype` (numpy dtype, int8 or tagged fp8)."""
    x = c.float_array(op, "x", x, ndim=2)
    axis = _axis(op, axis)
    q = c.empty(x.shape, qdtype)
    qmax = QMAX["int8" if qdtype == np.int8 else "f8" + fp8.format_of(np.empty(0, qdtype))]
    saturates = qdtype == np.int8 and qmax == np.iinfo(np.int8).max
    rows, n = x.shape
    if x.size == 0:  # the scales of rows or columns of no values, as of all-zero ones: 1
        return q, c.full((1,) if axis is None else (x.shape[axis],), 1.0, np.float32)
    scale = c.empty((1,) if axis is None else (x.shape[axis],), np.float32)
    block = c.pow2(n, 16, 4096)
    bm = c.pow2(rows, 1, max(1, 8192 // block))
    if axis == 1:  # per column: BLOCK columns a program, down the rows
        bc = c.pow2(n, 16, 256)
        br = c.pow2(rows, 1, max(1, 8192 // bc))
        c.launch(absmax_kernel, (tl.cdiv(n, bc),), x, scale, device=device, QMAX=qmax, BM=br,
                 BLOCK=bc, COLS=True)
    elif axis is None:  # amax per row, then over the rows' maxima: one scale
        amax = c.empty((rows,), np.float32)
        c.launch(absmax_kernel, (tl.cdiv(rows, bm),), x, amax, device=device, QMAX=0.0,
                 BM=bm, BLOCK=block)
        c.launch(absmax_kernel, (1,), amax.reshape(1, rows), scale, device=device, QMAX=qmax,
                 BM=1, BLOCK=c.pow2(rows, 16, 4096))
    elif n <= ROW_SCALE_MAX_COLS:  # per row, whole rows: one kernel, one read of x
        bn = c.pow2(n, 16)
        bm = c.pow2(rows, 1, max(1, c.tuned("quantize_row_elements", device) // bn))
        c.launch(quantize_scaled_kernel, (tl.cdiv(rows, bm), 1), x, scale, q, device=device,
                 QMAX=qmax, BM=bm, BN=bn, ROW_SCALE=True, CAST_SATURATES=saturates)
        return q, scale
    else:
        c.launch(absmax_kernel, (tl.cdiv(rows, bm),), x, scale, device=device, QMAX=qmax,
                 BM=bm, BLOCK=block)
    sv = np.broadcast_to(scale, (rows,)) if axis is None else scale
    bn = c.pow2(n, 16, 1024)
    bm = c.pow2(rows, 1, max(1, 4096 // bn))
    c.launch(quantize_scaled_kernel, (tl.cdiv(rows, bm), tl.cdiv(n, bn)), x, sv, q,
             device=device, QMAX=qmax, BM=bm, BN=bn, COLS=axis == 1, CAST_SATURATES=saturates)
    return q, scale


def quantize_int8(x, axis=0, *, device=None):
    """Symmetric int8 quantization of x (rows, n): returns (q int8 (rows, n), scale float32)
    with one scale per row (axis=0, the default: per output channel of an (out, in) weight),
    per column (axis=1: per output channel of an (in, out) weight, or per row of a.T) or for
    the whole tensor (axis=None: scale of shape (1,)). scale = max|x| / 127 over its row,
    column or tensor (1 where that is all zeros), computed in f32; q = x * (1 / scale) in
    f32 (the reciprocal rounded to f32, as torch.quantize_per_channel: bit-identical to it),
    clamped to [-127, 127], rounded to nearest even. A NaN or infinity makes its scale NaN or
    inf, and its row's q 0 (NaN -> 0) there: such data has no int8 scale."""
    return _quantize("quantize_int8", x, np.int8, axis, device)


def quantize_fp8(x, format="e4m3", axis=0, *, device=None):  # noqa: A002
    """Scaled fp8 quantization of x (rows, n) into format 'e4m3' (max 448) or 'e5m2' (max
    57344): returns (q, scale float32) with q a tl.fp8 array (read it with
    tl.fp8.to_float32). One scale per row (axis=0), per column (axis=1) or for the tensor
    (axis=None: shape (1,)): scale = amax / fmt max (1 where amax is 0), in f32. q = x * (1 /
    scale) in f32 (the reciprocal rounded to f32), clamped to [-max, max] (saturating: never
    inf, never NaN from overflow), rounded to nearest even, subnormals kept. NaN: a NaN in x
    makes its scale NaN and that row / column / tensor all NaN; an infinity makes the scale
    inf, its own q NaN (inf * 0) and the others 0."""
    op = "quantize_fp8"
    if format not in FP8_FORMATS:
        c.fail(op, "format", f"expected 'e4m3' or 'e5m2', got {format!r}")
    _device_fp8(op, device, format)
    return _quantize(op, x, fp8.DTYPES[format], axis, device)


def _dequantize(op, q, scale, dtype, axis, device):
    if dtype not in c.FLOAT_DTYPES:
        c.fail(op, "dtype", f"expected one of {', '.join(c.FLOAT_DTYPES)}, got {dtype!r}")
    axis = _axis(op, axis)
    sv = _scale_view(op, scale, q.shape, axis)
    out = c.empty(q.shape, c.np_dtype(dtype))
    if out.size:
        from .data import dequantize_kernel
        rows, n = q.shape
        bn = c.pow2(n, 16, 1024)
        bm = c.pow2(rows, 1, max(1, 4096 // bn))
        c.launch(dequantize_kernel, (tl.cdiv(rows, bm), tl.cdiv(n, bn)), q, sv, out,
                 device=device, BM=bm, BN=bn, COLS=axis == 1)
    return out


def dequantize_int8(q, scale, dtype="f32", axis=0, *, device=None):
    """q (rows, n) int8 times its scale (axis=0: (rows,), per row; axis=1: (n,), per column;
    axis=None: (1,)), computed in f32, as `dtype` ('f32', 'f16', 'bf16')."""
    op = "dequantize_int8"
    q = c.as_array(op, "q", q)
    if q.dtype != np.int8 or q.ndim != 2:
        c.fail(op, "q", f"expected a rank-2 int8 array, got {q.dtype} {q.shape}")
    return _dequantize(op, q, scale, dtype, axis, device)


def dequantize_fp8(q, scale, dtype="f32", axis=0, *, device=None):
    """q (rows, n) fp8 (a tl.fp8 array, e4m3 or e5m2) times its scale (as dequantize_int8),
    in f32, as `dtype`."""
    op = "dequantize_fp8"
    q = c.as_array(op, "q", q)
    if not fp8.is_fp8(q) or q.ndim != 2:
        c.fail(op, "q", f"expected a rank-2 fp8 array (tl.fp8.array), got {c.dtype_name(q)} "
               f"{q.shape}")
    _device_fp8(op, device, fp8.format_of(q))
    return _dequantize(op, q, scale, dtype, axis, device)


def _qgemm(op, a, b, scale_a, scale_b, bias, activation, out_dtype, device, fp):
    m, k = a.shape
    n = b.shape[1]
    if b.shape[0] != k:
        c.fail(op, "b", f"inner dimensions differ: a is {a.shape}, b is {b.shape}")
    if activation not in ACTIVATIONS or activation == "leaky_relu":
        c.fail(op, "activation", f"unknown activation {activation!r}")
    raw = out_dtype == "i32"
    if raw:
        if fp:
            c.fail(op, "out_dtype", "'i32' (the raw accumulator) is for int8 operands")
        for name, v in (("scale_a", scale_a), ("scale_b", scale_b), ("bias", bias)):
            if v is not None:
                c.fail(op, name, "the raw int32 output (out_dtype='i32') takes no epilogue")
        if activation != "none":
            c.fail(op, "activation", "the raw int32 output (out_dtype='i32') takes no epilogue")
    elif out_dtype not in c.FLOAT_DTYPES:
        c.fail(op, "out_dtype", f"expected 'i32', 'f32', 'f16' or 'bf16', got {out_dtype!r}")
    if not raw:
        if scale_a is None or scale_b is None:
            c.fail(op, "scale_a" if scale_a is None else "scale_b",
                   "a dequantized output needs both scales (per-tensor: shape (1,))")
        sa = _gemm_scale(op, "scale_a", scale_a, m)
        sb = _gemm_scale(op, "scale_b", scale_b, n)
    out = c.empty((m, n), np.int32 if raw else c.np_dtype(out_dtype))
    if bias is not None:
        bias = c.float_array(op, "bias", bias, ndim=1)
        if bias.shape != (n,):
            c.fail(op, "bias", f"expected shape ({n},), got {bias.shape}")
    if out.size == 0:
        return out
    if k == 0:  # a @ b is zeros, as gemm's: the epilogue of a K of 1
        a, b = c.zeros((m, 1), a), c.zeros((1, n), b)
    dummy = c.zeros((1,), np.float32)
    grid = lambda meta: (tl.cdiv(m, meta["BM"]), tl.cdiv(n, meta["BN"]))  # noqa: E731
    qgemm_kernel[grid](*c.device_args(a, b, dummy if raw else sa, dummy if raw else sb,
                                      dummy if bias is None else bias, out),
                       device=device or "cpu", INT=not fp, DEQUANT=not raw,
                       HAS_BIAS=bias is not None, ACT=activation)
    return out


def _gemm_scale(op, name, s, size):
    s = c.as_array(op, name, s)
    if s.dtype != np.float32 or s.ndim > 1 or s.size not in (1, size):
        c.fail(op, name, f"expected float32 ({size},) or (1,) (per tensor), got {s.dtype} "
               f"{s.shape}")
    s = s.reshape(-1)
    return np.broadcast_to(s, (size,)) if s.size == 1 and size != 1 else s


def gemm_int8(a, b, *, scale_a=None, scale_b=None, bias=None, activation="none",
              out_dtype="f32", device=None):
    """a (M, K) int8 @ b (K, N) int8, accumulated exactly in int32 (K <= 131071: every
    product is at most 2^14, so the sum cannot wrap; K up to 2^16 is safe). out_dtype 'i32':
    the raw sums. 'f32', 'f16', 'bf16': activation(acc * scale_a[row] * scale_b[col] + bias)
    computed in f32 and rounded once (scale_a (M,) per row of a, e.g. quantize_int8(a) with
    axis 0; scale_b (N,) per column of b, quantize_int8(b, axis=1); either (1,) per tensor);
    bias (N,) of any float dtype."""
    op = "gemm_int8"
    a = c.as_array(op, "a", a)
    b = c.as_array(op, "b", b)
    for name, t in (("a", a), ("b", b)):
        if t.dtype != np.int8 or t.ndim != 2:
            c.fail(op, name, f"expected a rank-2 int8 array, got {c.dtype_name(t)} {t.shape}")
    if a.shape[1] > INT8_MAX_K:
        c.fail(op, "a", f"K = {a.shape[1]} > {INT8_MAX_K}: the int32 sums could wrap")
    return _qgemm(op, a, b, scale_a, scale_b, bias, activation, out_dtype, device, False)


def gemm_fp8(a, b, *, scale_a, scale_b, bias=None, activation="none", out_dtype="f32",
             device=None):
    """a (M, K) @ b (K, N) of fp8 arrays (tl.fp8, the same format: e4m3 x e4m3 or e5m2 x e5m2),
    accumulated in f32 (each product of two fp8 values is exact in f32), then
    activation(acc * scale_a[row] * scale_b[col] + bias) in f32, rounded once to out_dtype
    ('f32', 'f16', 'bf16'); scales float32 (M,) / (N,) or (1,) per tensor."""
    op = "gemm_fp8"
    a = c.as_array(op, "a", a)
    b = c.as_array(op, "b", b)
    for name, t in (("a", a), ("b", b)):
        if not fp8.is_fp8(t) or t.ndim != 2:
            c.fail(op, name, f"expected a rank-2 fp8 array (tl.fp8.array), got "
                   f"{c.dtype_name(t)} {t.shape}")
    if fp8.format_of(a) != fp8.format_of(b):
        c.fail(op, "b", f"format {fp8.format_of(b)} differs from a's {fp8.format_of(a)}")
    _device_fp8(op, device, fp8.format_of(a))
    return _qgemm(op, a, b, scale_a, scale_b, bias, activation, out_dtype, device, True)
