# tl.ops elementwise ops (binary with broadcasting, activations, GLUs) against fp64 references.
# SPDX-License-Identifier: Apache-2.0
import numpy as np
import pytest

import tl
import tl.ops as ops
from tl.ops import reference as ref
from ops_util import DTYPES, check, make

rng = np.random.default_rng(18)


@pytest.mark.parametrize("dtype", DTYPES + ["f16"])
@pytest.mark.parametrize("op", ["add", "sub", "mul", "div"])
def test_binary_row_bias_broadcast(op, dtype):
    # Catches: a bias read with the row's stride (every row but the first wrong), the ragged
    # last tile (37 rows, 100 columns) left unwritten, results not rounded to the dtype.
    x = make(rng, (37, 100), dtype)
    y = make(rng, (100,), dtype, 0.5, 2.0)
    check(ops.binary(op, x, y), ref.binary(op, x, y), op, dtype)


def test_binary_both_broadcast_and_strided():
    # Catches: a column vector against a row vector (both stride 0 in one axis), and a
    # transposed (non-contiguous) operand read as if contiguous.
    x = make(rng, (5, 1, 3), "f32")
    y = make(rng, (4, 3), "f32")
    check(ops.add(x, y), ref.binary("add", x, y), "add", "f32")
    a = make(rng, (20, 33), "f32")
    check(ops.mul(a.T, a.T), ref.binary("mul", a.T, a.T), "mul", "f32")


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("act,tol", [("relu", "relu"), ("gelu", "gelu"), ("gelu_tanh", "gelu"),
                                     ("silu", "silu"), ("sigmoid", "sigmoid"), ("tanh", "tanh"),
                                     ("leaky_relu", "leaky_relu")])
def test_activations(act, tol, dtype):
    # Catches: a wrong formula (gelu's erf vs tanh form differ by ~1e-3 near |x| = 2), a wrong
    # leaky slope, the ragged edges of (3, 7, 129).
    x = make(rng, (3, 7, 129), dtype, -4, 4)
    check(ops.activation(act, x, alpha=0.05), ref.activation(act, x, alpha=0.05), tol, dtype)


def test_activation_wrappers_match_the_generic_op():
    # Catches: a wrapper routed to the wrong activation (gelu(approximate="tanh") and
    # leaky_relu's slope argument).
    x = make(rng, (64,), "f32", -3, 3)
    np.testing.assert_array_equal(ops.gelu(x, approximate="tanh"), ops.activation("gelu_tanh", x))
    np.testing.assert_array_equal(ops.leaky_relu(x, 0.2), ops.activation("leaky_relu", x, alpha=0.2))
    np.testing.assert_array_equal(ops.silu(x), ops.activation("silu", x))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("op", ["swiglu", "geglu"])
def test_glu_split_and_two_inputs(op, dtype):
    # Catches: the halves swapped (gate and up), a split of the wrong width.
    x = make(rng, (11, 2 * 45), dtype, -3, 3)
    want = ref.binary(op, x[:, :45], x[:, 45:])
    check(getattr(ops, op)(x), want, "glu", dtype)
    check(getattr(ops, op)(x[:, :45], x[:, 45:]), want, "glu", dtype)


def test_bf16_host_arrays_round_to_nearest_even():
    # Catches: truncation instead of rounding, ties not to even, NaN turned into infinity.
    x = np.float32([1 + 2**-8, 1 + 3 * 2**-8, 1 + 2**-8 + 2**-20, -np.inf, np.nan])
    y = tl.bf16.to_float32(tl.bf16.array(x))
    assert y[:4].tolist() == [1.0, 1 + 2**-6, 1 + 2**-7, -np.inf] and np.isnan(y[4])
