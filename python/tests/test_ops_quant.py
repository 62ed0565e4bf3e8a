# tl.ops quantization: int8 and fp8 (e4m3, e5m2) quantize / dequantize per row, per column and
# per tensor, and the int8 / fp8 GEMMs, against numpy references of the rounding (exact) and
# fp64 (the tolerance table); tl.fp8's host codec against its own exhaustive decode and torch.
# SPDX-License-Identifier: Apache-2.0
import numpy as np
import pytest

import tl
import tl.ops as ops
from tl.ops import reference as ref
from tl.ops import quant
from tl.ops.quant import INT8_MAX_K
from tl.testing import assert_close
from ops_util import DEVICES, check, make

rng = np.random.default_rng(18)
FORMATS = ["e4m3", "e5m2"]
QMAX = {"e4m3": 448.0, "e5m2": 57344.0}


def fp8_runs(device):
    """Whether `device` has fp8 (else the host functions refuse it by name): npusim's TNPU has
    none (tl.ops.quant.NO_FP8), cuda from sm_89."""
    from tl import runtime
    return bool((runtime.device(device).info["supported_dtypes"] >> tl.float8e4m3.code) & 1)


# ---- the host codec (tl.fp8) -------------------------------------------------------------------

@pytest.mark.parametrize("fmt", FORMATS)
def test_fp8_codec_exhaustive(fmt):
    # Catches: a code decoded with the wrong bias or mantissa width, subnormals decoded as
    # normals, NaN / inf codes misread; every one of the 256 codes decodes to a value that
    # encodes back to the same code (NaN codes to NaN).
    codes = np.arange(256, dtype=np.uint8)
    v = tl.fp8.decode(codes, fmt)
    back = tl.fp8.encode(v, fmt)
    assert ((back == codes) | np.isnan(v)).all()
    finite = v[np.isfinite(v)]
    assert finite.max() == QMAX[fmt] and finite.min() == -QMAX[fmt]
    smallest = 2.0 ** (-9 if fmt == "e4m3" else -16)
    assert np.min(np.abs(finite[finite != 0])) == smallest  # the smallest subnormal
    assert np.isnan(v).sum() == (2 if fmt == "e4m3" else 6)
    assert np.isinf(v).sum() == (0 if fmt == "e4m3" else 2)


def test_fp8_codec_rounding():
    # Catches: ties rounded away from zero (1.0625 -> 1.125), truncation (1.1875 -> 1.125),
    # subnormal ties (2^-10 -> 2^-9, 3 * 2^-10 -> 2^-9), overflow kept finite without
    # saturate, or saturate turning NaN into a number.
    e4 = lambda x, **kw: tl.fp8.to_float32(tl.fp8.array(np.float32(x), "e4m3", **kw))  # noqa
    assert e4([1.0625, 1.1875, -1.0625]).tolist() == [1.0, 1.25, -1.0]
    assert e4([2.0**-10, 3 * 2.0**-10, 5 * 2.0**-10, 2.0**-7 * 1.0625]).tolist() == \
        [0.0, 2.0**-8, 2.0**-8, 2.0**-7]
    assert e4([463.9, 464.0])[0] == 448 and np.isnan(e4([464.01, np.inf, 1e9])).all()
    assert e4([464.01, -np.inf, 1e9], saturate=True).tolist() == [448, -448, 448]
    assert np.isnan(e4([np.nan], saturate=True)).all()
    e5 = tl.fp8.to_float32(tl.fp8.array(np.float32([61439, 61440, -1e9, 1.125, 1.375]), "e5m2"))
    assert e5.tolist() == [57344, np.inf, -np.inf, 1.0, 1.5]
    assert np.signbit(e4([-0.0, -2.0**-12])).all()  # -0 and an underflow keep their sign


def test_bf16_and_fp8_arrays_keep_their_shape():
    # A 0-d value stays 0-d, a transposed view keeps its shape: np.ascontiguousarray makes a 0-d
    # array 1-d, so tl.bf16.to_float32 of a full reduction (ops.sum of a bf16 vector, shape ())
    # came back with shape (1,), and the fp8 codec alike.
    for conv in (lambda v: tl.bf16.to_float32(tl.bf16.array(v)),
                 lambda v: tl.fp8.to_float32(tl.fp8.array(v, "e4m3")),
                 lambda v: tl.fp8.to_float32(tl.fp8.array(v, "e5m2"))):
        assert conv(np.float32(3.0)).shape == ()
        assert conv(np.float32(3.0)) == 3.0
        t = np.float32([[1, 2, 3], [4, 5, 6]]).T
        np.testing.assert_array_equal(conv(t), t)
    assert tl.bf16.array(np.float64(1.5)).shape == ()
    assert tl.bf16.to_float32(ops.sum(tl.bf16.array(np.ones(5)))).shape == ()


@pytest.mark.parametrize("fmt", FORMATS)
def test_fp8_codec_matches_torch(fmt):
    # Catches: any rounding difference from PyTorch's own float8 conversion (round to nearest
    # even, IEEE overflow: e4m3fn -> NaN, e5m2 -> inf) over 400k values across the whole
    # range, subnormals and every midpoint between two codes.
    torch = pytest.importorskip("torch")
    td = {"e4m3": torch.float8_e4m3fn, "e5m2": torch.float8_e5m2}[fmt]
    v = tl.fp8.decode(np.arange(128, dtype=np.uint8), fmt)
    v = v[np.isfinite(v)]
    mids = (v[:-1] + v[1:]) / 2
    x = np.concatenate([rng.standard_normal(400000) * 2.0 ** rng.integers(-25, 18, 400000),
                        mids, -mids]).astype(np.float32)
    want = torch.from_numpy(x).to(td).view(torch.uint8).numpy()
    got = tl.fp8.encode(x, fmt)
    same = (got == want) | (np.isnan(tl.fp8.decode(got, fmt)) &
                            np.isnan(tl.fp8.decode(want, fmt)))
    assert same.all(), x[~same][:5]


# ---- quantize / dequantize ---------------------------------------------------------------------

def _quant_input(dtype, shape=(37, 300)):
    x = make(rng, shape, dtype, normal=True)
    xf = ref.f64(x)
    # a zero row and a zero column (scale 1, q 0), one row spanning 2^-31 .. 1 (subnormal fp8
    # values after scaling by max / 1, and some below half the smallest: 0)
    xf[5] = 0
    xf[:, 7] = 0
    xf[9] = np.where(np.arange(shape[1]) % 2, 1, -1) * 2.0 ** -(np.arange(shape[1]) % 32)
    if dtype == "bf16":
        return tl.bf16.array(xf)
    return xf.astype(x.dtype)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("axis", [0, 1, None])
@pytest.mark.parametrize("dtype", ["f32", "bf16"])
def test_quantize_int8(dtype, axis, device):
    # Catches: scales taken along the wrong axis (per row vs per column vs tensor),
    # truncation instead of round-to-nearest-even, a zero row / column dividing by zero,
    # values outside [-127, 127] (exact against the float32 step-by-step reference).
    x = _quant_input(dtype)
    q, scale = ops.quantize_int8(x, axis=axis, device=device)
    q_ref, s_ref = ref.quantize_int8(x, axis)
    np.testing.assert_array_equal(scale, s_ref)
    np.testing.assert_array_equal(q, q_ref)
    assert q.dtype == np.int8 and np.abs(q.astype(int)).max() == 127
    assert scale.shape == ((37,) if axis == 0 else (300,) if axis == 1 else (1,))


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("cols", [300, quant.ROW_SCALE_MAX_COLS + 5])
def test_quantize_int8_rows_one_kernel_and_two(cols, device):
    # Per row: rows up to ROW_SCALE_MAX_COLS take the one-kernel form (scale and values from
    # one read; 37 rows over several programs of whole rows, the last ragged), longer rows the
    # scale pass then the values. Catches either form's scale or q wrong (a scale stored for
    # the wrong rows, a block divided by another block's scale, padding lanes in the max),
    # exact against the reference.
    x = _quant_input("f32", (37, cols))
    x[5, cols - 1] = 1e4  # a row whose max is its last column
    q, scale = ops.quantize_int8(x, axis=0, device=device)
    q_ref, s_ref = ref.quantize_int8(x, 0)
    np.testing.assert_array_equal(scale, s_ref)
    np.testing.assert_array_equal(q, q_ref)


def test_quantize_int8_streamed_rows():
    # 8192 x 1024 f32 (32 MiB, its int8 output 8 MiB): on cpu the tensors span llvm-cpu's
    # streaming threshold, and each program's 1 KiB int8 row is written with non-temporal
    # 64-byte stores (cpu-stream-stores' 1 KiB minimum, session 35), which the small shapes
    # above never reach. Catches: that path writing the wrong chunk or lanes of a row, rows of
    # another program, or the scales stored out of step (exact against the reference).
    x = _quant_input("f32", (8192, 1024))
    x[4097] = np.linspace(-3.0, 5.0, 1024, dtype=np.float32)  # a row of a later program
    q, scale = ops.quantize_int8(x, axis=0, device="cpu")
    q_ref, s_ref = ref.quantize_int8(x, 0)
    assert q.ctypes.data % 64 == 0, "tl.ops output not 64-byte aligned: no streamed stores"
    np.testing.assert_array_equal(scale, s_ref)
    np.testing.assert_array_equal(q, q_ref)


@pytest.mark.parametrize("device", DEVICES)
def test_quantize_int8_ties(device):
    # Catches: ties rounded away from zero or truncated (row absmax 127: scale 1, x / scale
    # exact): 0.5 -> 0, 1.5 -> 2, 2.5 -> 2, -2.5 -> -2, 126.5 -> 126; a NaN row's scale
    # not NaN (its q must be 0 there).
    x = np.float32([[127, 0.5, 1.5, 2.5, -2.5, 126.5, -0.4, 3],
                    [1, 2, np.nan, 4, 5, 6, 7, 8]])
    q, scale = ops.quantize_int8(x, device=device)
    assert q[0].tolist() == [127, 0, 2, 2, -2, 126, 0, 3] and scale[0] == 1
    assert np.isnan(scale[1]) and (q[1] == 0).all()


def _recip_splits(s):
    """Values x (f32) near the half-steps of scale s where x * (1 / s) and x / s, each rounded
    to f32, round to different integers."""
    inv = np.float32(1) / s
    steps = (np.arange(-127, 127) + 0.5) * np.float64(s)
    x = (steps[:, None] * (1 + np.arange(-8, 9) * 2.0**-24)).astype(np.float32).ravel()
    return x[np.rint(x * inv) != np.rint(x / s)]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("axis", [0, None])
def test_quantize_int8_matches_torch(axis, device):
    # Catches: x / scale instead of x times the f32 reciprocal (torch.quantize_per_channel and
    # quantize_per_tensor, FBGEMM's Quantize): rows made of values where the two round to
    # different integers (amax 1 and 3: scales 1/127 and 3/127), each compared with PyTorch.
    torch = pytest.importorskip("torch")
    rows = []
    for amax in (1.0, 3.0):
        s = np.float32(amax) / np.float32(127)
        split = _recip_splits(s)
        assert split.size >= 4, "no value where division and the reciprocal differ"
        rows.append(np.resize(np.concatenate([[amax], split[np.abs(split) < amax]]), 256))
    x = np.float32(rows)
    q, scale = ops.quantize_int8(x, axis=axis, device=device)
    xt = torch.from_numpy(x)
    if axis is None:
        want = torch.quantize_per_tensor(xt, float(scale[0]), 0, torch.qint8)
    else:
        want = torch.quantize_per_channel(xt, torch.from_numpy(scale.astype(np.float64)),
                                          torch.zeros(2, dtype=torch.long), 0, torch.qint8)
    np.testing.assert_array_equal(q, want.int_repr().numpy())


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("axis", [0, 1])
def test_quantize_int8_subnormal_scale(axis, device):
    # Catches: a scale below 2^-100 (subnormal data: amax / 127 around 1e-42) whose f32
    # reciprocal overflows to inf: every nonzero value would become +-127 (x * inf) instead of
    # its step, e.g. amax / 4 -> 32 (the kernel lifts x and the scale by 2^64 first).
    x = np.float32([[2.0**-133, 2.0**-135, -3 * 2.0**-137, 0, 2.0**-140, -2.0**-133],
                    [1, 0.5, -0.3, 0, 0.1, -1]])
    x = x if axis == 0 else np.ascontiguousarray(x.T)
    q, scale = ops.quantize_int8(x, axis=axis, device=device)
    q_ref, s_ref = ref.quantize_int8(x, axis)
    np.testing.assert_array_equal(scale, s_ref)
    np.testing.assert_array_equal(q, q_ref)
    tiny = q[0] if axis == 0 else q[:, 0]
    assert tiny.tolist() == [127, 32, -24, 0, 1, -127]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("axis", [0, 1])
def test_quantize_int8_clamps_to_127_both_ways(axis, device):
    # amax = 190 * 2^-149 (the smallest subnormal's multiple): amax / 127 rounds to 2^-149, a
    # third too small, so x / scale reaches +-190. Catches: the lower bound left out (-128, the
    # cast's saturation, where int8 quantization is symmetric: -127), the upper one lost (a
    # wrapping conversion: 190 -> -66), either applied before the lift.
    sub = np.float32(2.0**-149)
    x = np.float32([[-190 * sub, 3 * sub, 0], [190 * sub, -3 * sub, 0], [1, -0.5, 0]])
    x = x if axis == 0 else np.ascontiguousarray(x.T)
    q, scale = ops.quantize_int8(x, axis=axis, device=device)
    q_ref, _ = ref.quantize_int8(x, axis)
    np.testing.assert_array_equal(q, q_ref)
    got = q[:2] if axis == 0 else q[:, :2].T
    assert got.tolist() == [[-127, 3, 0], [127, -3, 0]]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("axis", [0, 1, None])
@pytest.mark.parametrize("fmt", FORMATS)
def test_quantize_fp8(fmt, axis, device):
    # Catches: scales along the wrong axis, amax / max computed otherwise than in f32, rounding
    # other than nearest-even into fp8, subnormals flushed (row 9 reaches 2^-12 of its amax),
    # a wrong fp8 format (e5m2's 2 mantissa bits vs e4m3's 3): bit-exact with the reference.
    # (The clamp to +-max cannot be reached through the scale, x / scale <= max (1 + 2^-23);
    # the saturating rounding itself is test_fp8_codec_rounding's.)
    # On a device without fp8 (npusim): an OpError naming the op, the device and why.
    x = _quant_input("f32")
    if not fp8_runs(device):
        with pytest.raises(ops.OpError,
                           match=r"tl.ops.quantize_fp8: argument 'device': .*does not support f8"):
            ops.quantize_fp8(x, fmt, axis=axis, device=device)
        return
    q, scale = ops.quantize_fp8(x, fmt, axis=axis, device=device)
    q_ref, s_ref = ref.quantize(x, QMAX[fmt], axis, fmt)
    assert tl.fp8.format_of(q) == fmt
    np.testing.assert_array_equal(scale, s_ref)
    np.testing.assert_array_equal(q.view(np.uint8), q_ref.view(np.uint8))
    back = tl.fp8.to_float32(q)
    assert np.nanmax(np.abs(back)) == QMAX[fmt] and not np.isnan(back).any()
    if axis == 0:  # the subnormal row quantized to subnormals, not flushed to zero
        tiny = np.abs(back[9]) < 2.0 ** (-6 if fmt == "e4m3" else -14)
        assert (tiny & (back[9] != 0)).any()


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("fmt", FORMATS)
def test_quantize_fp8_special(fmt, device):
    # Catches: ties not to even (row amax = max: scale 1), NaN not propagating to its row's
    # scale and values (the stated behaviour), an infinity giving a finite scale.
    if not fp8_runs(device):
        pytest.skip(f"{device}: no fp8 (test_quantize_fp8 checks the error)")
    m = QMAX[fmt]
    x = np.float32([[m, 1.0625, 1.1875, 2.0**-10, 3 * 2.0**-10, -1.0625, 0, 1],
                    [1, 2, np.nan, 4, 5, 6, 7, 8],
                    [1, 2, np.inf, 4, 5, 6, 7, 8]])
    q, scale = ops.quantize_fp8(x, fmt, device=device)
    v = tl.fp8.to_float32(q)
    want = tl.fp8.to_float32(tl.fp8.array(x[0], fmt))
    assert scale[0] == 1 and v[0].tolist() == want.tolist()
    if fmt == "e4m3":
        assert v[0].tolist() == [448, 1.0, 1.25, 0.0, 2.0**-8, -1.0, 0, 1]
    assert np.isnan(scale[1]) and np.isnan(v[1]).all()
    assert np.isinf(scale[2]) and np.isnan(v[2, 2]) and (v[2, [0, 1, 3]] == 0).all()


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("axis", [0, 1, None])
@pytest.mark.parametrize("dtype", ["f32", "bf16"])
def test_dequantize_int8_axis(dtype, axis, device):
    # Catches: the scale of another row / column, a per-tensor scale read past its one element,
    # the output dtype ignored. "dequantize": an f32 product rounded to bf16 / f16 (two
    # roundings; "mul"'s half ulp failed a product just off a tie when rng's draws differed).
    q = rng.integers(-127, 128, (37, 300)).astype(np.int8)
    n = {0: 37, 1: 300, None: 1}[axis]
    scale = rng.uniform(0.001, 0.1, n).astype(np.float32)
    got = ops.dequantize_int8(q, scale, dtype, axis=axis, device=device)
    s = scale[:, None] if axis == 0 else scale[None, :] if axis == 1 else scale[0]
    check(got, q.astype(np.float64) * s.astype(np.float64), "dequantize", dtype)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("axis", [0, 1, None])
@pytest.mark.parametrize("fmt", FORMATS)
def test_fp8_roundtrip(fmt, axis, device):
    # Catches: dequantize reading fp8 as another format or as integers, the scale applied along
    # another axis: dequantize(quantize(x)) equals the reference q's values times its scales
    # (each product rounded once: "mul"), and is within the format's half-step of x.
    x = make(rng, (37, 300), "f32", normal=True)
    if not fp8_runs(device):
        q8 = tl.fp8.array(x, fmt)
        with pytest.raises(ops.OpError, match=r"tl.ops.dequantize_fp8: argument 'device'"):
            ops.dequantize_fp8(q8, np.ones(37, np.float32), device=device)
        return
    q, scale = ops.quantize_fp8(x, fmt, axis=axis, device=device)
    y = ops.dequantize_fp8(q, scale, "f32", axis=axis, device=device)
    s = scale[:, None] if axis == 0 else scale[None, :] if axis == 1 else scale[0]
    check(y, ref.f64(q) * s.astype(np.float64), "mul", "f32")
    u = 2.0 ** -(4 if fmt == "e4m3" else 3)  # unit roundoff of the format
    err = np.abs(ref.f64(y) - x)
    assert (err <= u * np.abs(x) * 1.001 + 2.0 ** (-9 if fmt == "e4m3" else -16) * s).all()


# ---- GEMMs -------------------------------------------------------------------------------------

@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("m,k,n", [(37, 300, 45), (1, 17, 130), (70, 2000, 3)])
def test_gemm_int8_raw(m, k, n, device):
    # Catches: an accumulation in f32 (K = 2000 of 127 * 127 sums to 3.2e7 > 2^24: f32 would
    # round), a product taken in int8 (wraps), ragged edges read past (M, N, K off every
    # block size), -128 mishandled: exact against numpy's int64 matmul.
    a = rng.integers(-128, 128, (m, k)).astype(np.int8)
    b = rng.integers(-128, 128, (k, n)).astype(np.int8)
    if k == 2000:
        a[0], b[:, 0] = 127, 127
        a[1], b[:, 1] = -128, -128
    got = ops.gemm_int8(a, b, out_dtype="i32", device=device)
    assert got.dtype == np.int32
    np.testing.assert_array_equal(got, ref.gemm_int8(a, b))
    if k == 2000:
        assert got[0, 0] == 127 * 127 * 2000 and got[1, 1] == 128 * 128 * 2000


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("scales", ["row_col", "tensor"])
def test_gemm_int8_dequant_exact(scales, device):
    # Catches: scale_a applied per column or scale_b per row, a per-tensor scale read past its
    # element, the epilogue's products in another order or precision: bit-exact with the f32
    # step-by-step reference (acc rounded to f32, times scale_a, times scale_b).
    x = make(rng, (37, 300), "f32", normal=True)
    w = make(rng, (300, 45), "f32", normal=True)
    qa, sa = ops.quantize_int8(x, axis=0 if scales == "row_col" else None, device=device)
    qb, sb = ops.quantize_int8(w, axis=1 if scales == "row_col" else None, device=device)
    got = ops.gemm_int8(qa, qb, scale_a=sa, scale_b=sb, device=device)
    want = ref.qgemm_f32(ref.gemm_int8(qa, qb), sa, sb)
    np.testing.assert_array_equal(got, want)
    # and the quantized product is near the float one (a smoke bound: int8 quantization of
    # normal data errs ~1% normwise)
    full = ref.f64(x) @ ref.f64(w)
    assert np.linalg.norm(got - full) / np.linalg.norm(full) < 0.03


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("out_dtype", ["f32", "bf16"])
@pytest.mark.parametrize("act", ["none", "gelu"])
def test_gemm_int8_epilogue(act, out_dtype, device):
    # Catches: the bias added before the scales or dropped, the activation skipped or applied
    # before the bias, the output dtype ignored: against fp64 (the accumulation is exact, so
    # the 'gemm' entry with n = 1: the epilogue's few roundings).
    qa = rng.integers(-127, 128, (37, 300)).astype(np.int8)
    qb = rng.integers(-127, 128, (300, 45)).astype(np.int8)
    sa = rng.uniform(1e-3, 2e-3, 37).astype(np.float32)
    sb = rng.uniform(1e-3, 2e-3, 45).astype(np.float32)
    bias = make(rng, (45,), out_dtype)
    got = ops.gemm_int8(qa, qb, scale_a=sa, scale_b=sb, bias=bias, activation=act,
                        out_dtype=out_dtype, device=device)
    check(got, ref.qgemm(qa, qb, sa, sb, bias, act), "gemm", out_dtype, n=1)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("out_dtype", ["f32", "bf16"])
def test_gemm_fp8(out_dtype, fmt, device):
    # Catches: fp8 operands read as another format or as integers, scales misapplied, the
    # bias or activation dropped, ragged edges: against fp64 on the fp8 values, with the
    # 'gemm' entry at n = K (f32 sums of K exact products). Without fp8: the OpError.
    x = make(rng, (37, 300), "f32", normal=True)
    w = make(rng, (300, 45), "f32", normal=True)
    if not fp8_runs(device):
        q = tl.fp8.array(x, fmt)
        with pytest.raises(ops.OpError, match=r"tl.ops.gemm_fp8: argument 'device'"):
            ops.gemm_fp8(q, q.T, scale_a=np.ones(1, np.float32),
                         scale_b=np.ones(1, np.float32), device=device)
        return
    qa, sa = ops.quantize_fp8(x, fmt, axis=0, device=device)
    qb, sb = ops.quantize_fp8(w, fmt, axis=1, device=device)
    bias = make(rng, (45,), out_dtype)
    got = ops.gemm_fp8(qa, qb, scale_a=sa, scale_b=sb, bias=bias, activation="silu",
                       out_dtype=out_dtype, device=device)
    check(got, ref.qgemm(qa, qb, sa, sb, bias, "silu"), "gemm", out_dtype, n=300)
    plain = ops.gemm_fp8(qa, qb, scale_a=sa, scale_b=sb, device=device)
    assert_close(plain, ref.qgemm(qa, qb, sa, sb), op="gemm", dtype="f32", n=300)
    full = ref.f64(x) @ ref.f64(w)
    tol = 0.1 if fmt == "e4m3" else 0.2  # the quantization's own error, a smoke bound
    assert np.linalg.norm(plain - full) / np.linalg.norm(full) < tol


# ---- errors ------------------------------------------------------------------------------------

@pytest.mark.parametrize("call,message", [
    (lambda: ops.quantize_int8(np.zeros((4, 8), np.float32), axis=2),
     r"tl.ops.quantize_int8: argument 'axis': expected 0"),
    (lambda: ops.quantize_int8(np.zeros((4, 8), np.int32)),
     r"tl.ops.quantize_int8: argument 'x': dtype int32 is not supported"),
    (lambda: ops.quantize_fp8(np.zeros((4, 8), np.float32), "e3m4"),
     r"tl.ops.quantize_fp8: argument 'format': expected 'e4m3' or 'e5m2'"),
    (lambda: ops.dequantize_int8(np.zeros((4, 8), np.int8), np.zeros(4, np.float32), axis=1),
     r"tl.ops.dequantize_int8: argument 'scale': expected float32 \(8,\) \(axis 1\)"),
    (lambda: ops.dequantize_fp8(np.zeros((4, 8), np.uint8), np.zeros(4, np.float32)),
     r"tl.ops.dequantize_fp8: argument 'q': expected a rank-2 fp8 array"),
    (lambda: ops.gemm_int8(np.zeros((4, 8), np.int8), np.zeros((8, 3), np.float32)),
     r"tl.ops.gemm_int8: argument 'b': expected a rank-2 int8 array, got f32"),
    (lambda: ops.gemm_int8(np.zeros((4, 8), np.int8), np.zeros((9, 3), np.int8)),
     r"tl.ops.gemm_int8: argument 'b': inner dimensions differ"),
    (lambda: ops.gemm_int8(np.zeros((1, INT8_MAX_K + 1), np.int8),
                           np.zeros((INT8_MAX_K + 1, 1), np.int8), out_dtype="i32"),
     r"tl.ops.gemm_int8: argument 'a': K = 131072 > 131071: the int32 sums could wrap"),
    (lambda: ops.gemm_int8(np.zeros((4, 8), np.int8), np.zeros((8, 3), np.int8)),
     r"tl.ops.gemm_int8: argument 'scale_a': a dequantized output needs both scales"),
    (lambda: ops.gemm_int8(np.zeros((4, 8), np.int8), np.zeros((8, 3), np.int8),
                           scale_a=np.ones(4, np.float32), scale_b=np.ones(4, np.float32)),
     r"tl.ops.gemm_int8: argument 'scale_b': expected float32 \(3,\) or \(1,\)"),
    (lambda: ops.gemm_int8(np.zeros((4, 8), np.int8), np.zeros((8, 3), np.int8),
                           bias=np.zeros(3, np.float32), out_dtype="i32"),
     r"tl.ops.gemm_int8: argument 'bias': the raw int32 output"),
    (lambda: ops.gemm_fp8(tl.fp8.array(np.zeros((4, 8)), "e4m3"),
                          tl.fp8.array(np.zeros((8, 3)), "e5m2"), scale_a=np.ones(1, np.float32),
                          scale_b=np.ones(1, np.float32)),
     r"tl.ops.gemm_fp8: argument 'b': format e5m2 differs from a's e4m3"),
])
def test_quant_errors(call, message):
    # Catches: a bad argument accepted (a wrong result later) or reported without naming the
    # op and the argument.
    with pytest.raises(ops.OpError, match=message):
        call()


@tl.kernel
def _f8_roundtrip_kernel(x: tl.tensor, q: tl.tensor, back: tl.tensor, BLOCK: tl.constexpr):
    """q = x rounded into q's fp8 type (a store), back = q read back as f32 (a load)."""
    i = tl.program_id(0) * BLOCK
    tl.store(q + (i,), tl.load(x + (i,), (BLOCK,)).to(q.dtype))
    tl.store(back + (i,), tl.load(q + (i,), (BLOCK,)).to(tl.float32))


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("fmt", FORMATS)
def test_device_fp8_conversions(fmt, device):
    # The device's own f32 -> fp8 rounding (the cast), fp8 store and load, against tl.fp8's
    # encoder and decoder (themselves checked exhaustively and against torch above): every
    # midpoint between two codes (ties to even), every code's value, random values over the
    # whole range (overflow to NaN / inf), subnormals, +-0, inf, NaN. Catches an inline
    # conversion off by one step, a tie rounded up, a subnormal flushed, a sign lost (llvm-cpu
    # converts inline since this issue; it called the host before).
    if not fp8_runs(device):
        pytest.skip(f"{device}: no fp8 (test_quantize_fp8 checks the error)")
    v = tl.fp8.decode(np.arange(256, dtype=np.uint8), fmt)
    fin = np.sort(v[np.isfinite(v)])
    x = np.concatenate([fin, (fin[:-1] + fin[1:]) / 2, [np.inf, -np.inf, np.nan, -0.0],
                        rng.standard_normal(20000) * 2.0 ** rng.integers(-22, 20, 20000)])
    x = x.astype(np.float32)
    q, back = tl.fp8.empty(x.shape, fmt), np.empty_like(x)
    _f8_roundtrip_kernel[(tl.cdiv(x.size, 1024),)](x, q, back, device=device, BLOCK=1024)
    want = tl.fp8.encode(x, fmt)
    nan = np.isnan(tl.fp8.decode(want, fmt))
    got = q.view(np.uint8)
    assert (np.isnan(tl.fp8.decode(got, fmt)) == nan).all()
    np.testing.assert_array_equal(got[~nan], want[~nan])  # NaN's sign and payload: unspecified
    np.testing.assert_array_equal(back, tl.fp8.decode(got, fmt).astype(np.float32))
