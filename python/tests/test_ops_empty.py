# tl.ops on zero extents: the values numpy and torch give where a sum runs over nothing (0 for a
# sum, NaN for a mean, the epilogue of zeros for a GEMM with K = 0), a clear error where there is
# no value (max of nothing), and never an output left unwritten. Every output array here starts
# as NaN bytes, so one that no kernel wrote shows.
# SPDX-License-Identifier: Apache-2.0
import warnings

import numpy as np
import pytest

import tl
import tl.ops as ops
from tl.ops import _common
from tl.ops import reference

from ops_util import DEVICES

f32 = np.float32


@pytest.fixture(autouse=True)
def outputs_start_as_nan(monkeypatch):
    made = _common.aligned_empty

    def nan_bytes(shape, dtype):
        a = made(shape, dtype)
        a.reshape(-1).view(np.uint8)[...] = 0xFF  # NaN in every float format
        return a
    monkeypatch.setattr(_common, "aligned_empty", nan_bytes)


def values(a):
    return reference.f64(a) if tl.bf16.is_bf16(a) else np.asarray(a, np.float64)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", ["f32", "bf16"])
@pytest.mark.parametrize("shape,axis", [((3, 0), 1), ((0, 5), 0), ((2, 0, 7), 1), ((0,), 0),
                                        ((4, 3, 0), -1)])
def test_reductions_over_an_empty_axis(shape, axis, dtype, device):
    # Catches: the error these raised before ("reduction over an empty axis"); a sum left
    # unwritten (NaN) or a mean of 0 instead of numpy's NaN.
    x = np.zeros(shape, f32)
    x = tl.bf16.array(x) if dtype == "bf16" else x
    want = np.delete(np.array(shape), axis % len(shape))
    for op, expect in (("sum", 0.0), ("mean", np.nan), ("var", np.nan)):
        got = getattr(ops, op)(x, axis=axis, device=device)
        assert got.shape == tuple(want), op
        assert tl.bf16.is_bf16(got) == (dtype == "bf16"), op
        np.testing.assert_array_equal(values(got), np.full(want, expect), err_msg=op)
    for op in ("max", "min", "argmax"):  # no value: numpy and torch raise
        with pytest.raises(ops.OpError, match=rf"tl.ops.{op}: argument 'x': reduction over an "
                           rf"empty axis .*{op} of no elements has no value"):
            getattr(ops, op)(x, axis=axis, device=device)


@pytest.mark.parametrize("device", DEVICES)
def test_var_with_a_correction_past_n_as_numpy(device):
    # Catches: the sum of squares divided by n - correction < 0 (a negative variance: -2.33
    # and -0 here) where numpy and torch divide by max(n - correction, 0) = 0.
    x = np.array([[1, 2, 4], [3, 3, 3]], f32)
    for corr in (3, 5, 3.5):
        got = ops.var(x, axis=1, correction=corr, device=device)
        with warnings.catch_warnings():  # numpy's "degrees of freedom <= 0"
            warnings.simplefilter("ignore", RuntimeWarning)
            want = np.var(x.astype(np.float64), axis=1, ddof=corr)
        np.testing.assert_array_equal(got, want.astype(f32))  # [inf, nan]


def _act(v, act):
    return reference.activation(act, v) if act != "none" else v


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("act", ["none", "relu", "silu", "gelu_tanh"])
def test_gemm_with_k_zero_is_the_epilogue_of_zeros(act, device):
    # Catches: the error gemm raised before ("K (the inner dimension) is 0"); an output left
    # unwritten; the bias, activation or residual skipped.
    rng = np.random.default_rng(5)
    bias = rng.uniform(-2, 2, 6).astype(f32)
    res = rng.uniform(-1, 1, (2, 5, 6)).astype(f32)
    want = _act(np.broadcast_to(bias.astype(np.float64), (2, 5, 6)), act) + res
    for split in (None, 1, 4):
        got = ops.gemm(np.zeros((2, 5, 0), f32), np.zeros((0, 6), f32), bias=bias,
                       activation=act, residual=res, alpha=3.0, split_k=split, device=device)
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)
    plain = ops.gemm(np.zeros((5, 0), f32), np.zeros((0, 6), f32), device=device)
    np.testing.assert_array_equal(plain, np.zeros((5, 6), f32))


@pytest.mark.parametrize("device", DEVICES)
def test_quantized_gemm_with_k_zero(device):
    # Catches: the error gemm_int8 raised for K = 0; an output left unwritten.
    e = np.zeros((3, 0), np.int8), np.zeros((0, 4), np.int8)
    bias = np.array([-1, 0, 1, 2], f32)
    got = ops.gemm_int8(*e, scale_a=np.ones(3, f32), scale_b=np.ones(4, f32), bias=bias,
                        activation="relu", device=device)
    np.testing.assert_array_equal(got, np.broadcast_to(np.maximum(bias, 0), (3, 4)))
    raw = ops.gemm_int8(*e, out_dtype="i32", device=device)
    assert raw.dtype == np.int32 and not raw.any()


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("x_shape,pad,stride", [((2, 0, 5, 5), 0, 1), ((1, 2, 0, 0), 1, 1),
                                                 ((1, 2, 0, 1), 2, 2), ((1, 0, 3, 4), 1, 2)])
def test_conv2d_over_no_input_is_the_epilogue_of_zeros(x_shape, pad, stride, device):
    # Catches: an output left unwritten (conv2d returned np.empty's bytes when x had no
    # channels, or only padding under the windows: 7.8e-44 seen); the bias or activation
    # skipped.
    n, ch = x_shape[:2]
    weight = np.ones((4, ch, 3 if ch == 0 else 1, 3 if ch == 0 else 1), f32)
    bias = np.array([-1.5, 0.5, 2.0, -0.25], f32)
    got = ops.conv2d(np.zeros(x_shape, f32), weight, bias, padding=pad, stride=stride,
                     activation="relu", device=device)
    want = reference.conv2d(np.zeros(x_shape), weight.astype(np.float64), bias, padding=pad,
                            stride=stride, activation_="relu")
    assert got.shape == want.shape and want.size
    np.testing.assert_array_equal(got, want.astype(f32))


def test_conv2d_refuses_an_empty_window():
    # Catches: a window of no rows reaching the kernels (its output size counts a row past it).
    with pytest.raises(ops.OpError, match=r"tl.ops.conv2d: argument 'weight': window \(0, 3\)"):
        ops.conv2d(np.zeros((1, 2, 4, 4), f32), np.zeros((2, 2, 0, 3), f32))


@pytest.mark.parametrize("device", DEVICES)
def test_attention_backward_without_queries_or_keys(device):
    # Catches: dk and dv left unwritten when there is no query (they are zeros: no gradient
    # reaches the keys); dq left unwritten when there is no key, where the forward refuses.
    rng = np.random.default_rng(3)
    k = rng.uniform(-1, 1, (1, 1, 5, 8)).astype(f32)
    for q in (np.zeros((1, 2, 0, 8), f32), np.zeros((1, 0, 4, 8), f32)):
        dq, dk, dv = ops.attention_backward(q, q, k, k, q, np.zeros(q.shape[:3], f32),
                                            device=device)
        assert dq.shape == q.shape
        np.testing.assert_array_equal(dk, np.zeros_like(k))
        np.testing.assert_array_equal(dv, np.zeros_like(k))
    q = rng.uniform(-1, 1, (1, 2, 3, 8)).astype(f32)
    no_keys = np.zeros((1, 1, 0, 8), f32)
    with pytest.raises(ops.OpError, match=r"tl.ops.attention: argument 'k': no keys"):
        ops.attention(q, no_keys, no_keys, device=device)
    with pytest.raises(ops.OpError, match=r"tl.ops.attention_backward: argument 'k': no keys"):
        ops.attention_backward(q, q, no_keys, no_keys, q, np.zeros((1, 2, 3), f32),
                               device=device)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("axis", [0, 1, None])
@pytest.mark.parametrize("shape", [(0, 5), (3, 0)])
def test_quantize_of_no_values_gives_unit_scales(shape, axis, device):
    # Catches: the per-row or per-column scales left unwritten (only the per-tensor one was
    # set); 1 is the scale of an all-zero row.
    from test_ops_quant import fp8_runs
    for quantize in (ops.quantize_int8,) + ((ops.quantize_fp8,) if fp8_runs(device) else ()):
        q, scale = quantize(np.zeros(shape, f32), axis=axis, device=device)
        assert q.shape == shape
        want = 1 if axis is None else shape[axis]
        np.testing.assert_array_equal(scale, np.ones(want, f32))


@pytest.mark.parametrize("device", DEVICES)
def test_topk_of_none(device):
    # Catches: the error k = 0 raised before (torch.topk gives empty values and indices).
    for x in (np.ones((3, 4), f32), np.ones((3, 0), f32)):
        values, indices = ops.topk(x, 0, device=device)
        assert values.shape == indices.shape == (3, 0)
        assert values.dtype == np.float32 and indices.dtype == np.int32


@pytest.mark.parametrize("device", DEVICES)
def test_cross_entropy_with_no_row_counted(device):
    # Catches: a mean over no counted row (no row, or every target ignored) of 0 where torch's
    # is NaN (TL divided by max(count, 1) before); a sum other than 0; a gradient other than 0
    # (torch's, too).
    for logits, target in ((np.zeros((0, 5), f32), np.zeros(0, np.int32)),
                           (np.ones((2, 5), f32), np.full(2, -100, np.int32))):
        assert np.isnan(ops.cross_entropy(logits, target, device=device))
        assert ops.cross_entropy(logits, target, reduction="sum", device=device) == 0
        assert np.isnan(reference.cross_entropy(logits, target))
        grad = ops.cross_entropy_backward(logits, target, device=device)
        np.testing.assert_array_equal(grad, np.zeros_like(logits))
