# tl.ops concat and int8 quantize / dequantize against numpy.
# SPDX-License-Identifier: Apache-2.0
import numpy as np
import pytest

import tl
import tl.ops as ops
from tl.ops import reference as ref
from ops_util import DEVICES, DTYPES, DTYPES_F16, as_bits, check, make, random_bits

pytestmark = pytest.mark.parametrize("device", DEVICES)
rng = np.random.default_rng(24)


@pytest.mark.parametrize("dtype", DTYPES_F16 + ["i32"])
@pytest.mark.parametrize("axis", [0, 1, 2])
def test_concat(axis, dtype, device):
    # Catches: a piece written at the wrong offset or over its neighbour, the axis ignored,
    # bits changed (exact: every bit pattern, so a NaN's sign or payload lost fails: llvm-cpu
    # held bf16 as f32 and stored every NaN as 0x7fc0).
    def arr(shape):
        if dtype == "i32":
            return rng.integers(-1000, 1000, shape).astype(np.int32)
        return random_bits(rng, shape, dtype)
    shapes = [[3, 5, 7], [3, 5, 7], [3, 5, 7]]
    for s, n in zip(shapes, (4, 1, 9)):
        s[axis] = n
    arrays = [arr(tuple(s)) for s in shapes]
    got = ops.concat(arrays, axis, device=device)
    np.testing.assert_array_equal(as_bits(got), np.concatenate([as_bits(a) for a in arrays], axis))
    if dtype == "bf16":
        assert tl.bf16.is_bf16(got)


@pytest.mark.parametrize("axis", [0, 1])
def test_concat_large_blocks(axis, device):
    # The device's copy blocks (TUNING["copy_elements"]: 64 rows of 1024 on the tnpu) on
    # pieces with ragged blocks: 70 rows (64 + 6), 1000 of 1024 columns, 300 / 700 columns.
    # Catches: a block's padding rows or columns stored past its piece (over the next one),
    # the last partial block of rows dropped.
    shapes = [(70, 1000), (130, 1000)] if axis == 0 else [(100, 300), (100, 700)]
    arrays = [make(rng, s, "f32") for s in shapes]
    got = ops.concat(arrays, axis, device=device)
    np.testing.assert_array_equal(got, np.concatenate(arrays, axis))


@pytest.mark.parametrize("widths", [(512, 512), (256, 768), (500, 524)])
def test_concat_columns_streamed(widths, device):
    # 8192 rows of 1024 f32 (32 MiB): on cpu each piece's (8, w) blocks of row slices take the
    # non-temporal path where a slice is whole 64-byte lines starting on one (session 14).
    # Catches: a slice's vectors placed by the lane index instead of the output's 4 KiB row
    # stride, the second piece's column offset lost, slices of 500 and 524 f32 (2000 and 2096
    # bytes, unaligned starts: the plain path must run). Exact.
    if device != "cpu":
        pytest.skip("the streaming path is llvm-cpu's (the small shapes above run everywhere)")
    arrays = [make(rng, (8192, w), "f32") for w in widths]
    got = ops.concat(arrays, 1, device=device)
    assert got.ctypes.data % 64 == 0, "tl.ops output not 64-byte aligned: no streamed stores"
    np.testing.assert_array_equal(got, np.concatenate(arrays, 1))


def test_quantize_int8(device):
    # Catches: scale from the column instead of the row, truncation instead of rounding (12.7),
    # a zero row dividing by zero, values outside [-127, 127].
    x = make(rng, (37, 300), "f32", normal=True)
    x[5] = 0
    x[6, :4] = [127 * 0.5, 127 * 1.5, -127 * 2.5, 127 * 0.25]  # the row's absmax: 2.5 * 127
    q, scale = ops.quantize_int8(x, device=device)
    q_ref, s_ref = ref.quantize_int8(x)
    np.testing.assert_array_equal(scale, s_ref)
    np.testing.assert_array_equal(q, q_ref)
    assert q.dtype == np.int8 and q[5].max() == 0 and q[6, :4].tolist() == [25, 76, -127, 13]


@pytest.mark.parametrize("dtype", DTYPES)
def test_dequantize_int8(dtype, device):
    # Catches: the scale of another row, the output dtype ignored.
    q = rng.integers(-127, 128, (37, 300)).astype(np.int8)
    scale = rng.uniform(0.001, 0.1, 37).astype(np.float32)
    got = ops.dequantize_int8(q, scale, dtype, device=device)
    check(got, q.astype(np.float64) * scale.astype(np.float64)[:, None], "mul", dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("mode", ["max", "avg"])
@pytest.mark.parametrize("k,s", [(2, None), (3, 2), ((3, 2), (1, 2))])
def test_pool2d(k, s, mode, dtype, device):
    # Catches: a window offset by one, the stride taken as the window (and back), a ragged
    # edge (17 x 23 with stride 2) reading past the plane, avg dividing by the wrong count.
    x = make(rng, (2, 3, 17, 23), dtype, normal=True)
    got = getattr(ops, f"{mode}_pool2d")(x, k, s, device=device)
    kk = k if isinstance(k, tuple) else (k, k)
    check(got, ref.pool2d(mode, x, k, s), "reduce_max" if mode == "max" else "reduce_mean",
          dtype, n=kk[0] * kk[1])


_PADDED = [(3, 2, 1, 1, False, True), (3, 2, 1, 1, True, True), (3, 2, 1, 1, True, False),
           ((3, 2), (2, 1), (1, 1), 1, False, False), (3, 1, 2, 2, False, True),
           (2, 2, 1, 1, True, True)]


# avg_pool2d has no dilation (as torch): the dilated case is max's alone.
@pytest.mark.parametrize("mode,k,s,p,d,ceil,count_pad",
                         [("max",) + c for c in _PADDED] +
                         [("avg",) + c for c in _PADDED if c[3] == 1])
def test_pool2d_padding(mode, k, s, p, d, ceil, count_pad, device):
    # Catches: padding read as data (0 beating negative maxima, or garbage), the window's
    # dilation ignored, the output length rounded the wrong way in ceil_mode (or a last window
    # starting in the padding kept), avg dividing by the window size where count_include_pad
    # is off (or by the positions inside x where it is on). Negative data so a 0 read from the
    # padding would win a max.
    x = -np.abs(make(rng, (2, 3, 11, 14), "f32", normal=True)) - 0.5
    if mode == "max":
        got = ops.max_pool2d(x, k, s, p, d, ceil, device=device)
        want = ref.pool2d("max", x, k, s, p, d, ceil)
    else:
        got = ops.avg_pool2d(x, k, s, p, ceil, count_pad, device=device)
        want = ref.pool2d("avg", x, k, s, p, 1, ceil, count_pad)
    assert got.shape == want.shape
    kk = k if isinstance(k, tuple) else (k, k)
    check(got, want, "reduce_max" if mode == "max" else "reduce_mean", "f32", n=kk[0] * kk[1])


def test_pool2d_padding_errors(device):
    x = np.zeros((1, 1, 8, 8), np.float32)
    with pytest.raises(ops.OpError, match="padding"):  # a window of padding alone
        ops.max_pool2d(x, 3, 1, 2, device=device)
    with pytest.raises(ops.OpError, match="dilation"):
        ops.max_pool2d(x, 3, 1, 0, 0, device=device)
    with pytest.raises(ops.OpError, match="kernel_size"):  # wider than the padded input
        ops.max_pool2d(x, (3, 3), 1, 0, 4, device=device)
