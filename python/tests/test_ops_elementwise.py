# tl.ops elementwise ops (binary with broadcasting, activations, GLUs) against fp64 references.
# SPDX-License-Identifier: Apache-2.0
import numpy as np
import pytest

import tl
import tl.ops as ops
from tl.ops import reference as ref
from ops_util import DEVICES, DTYPES, check, make

pytestmark = pytest.mark.parametrize("device", DEVICES)

rng = np.random.default_rng(18)


@pytest.mark.parametrize("dtype", DTYPES + ["f16"])
@pytest.mark.parametrize("op", ["add", "sub", "mul", "div"])
def test_binary_row_bias_broadcast(op, dtype, device):
    # Catches: a bias read with the row's stride (every row but the first wrong), the ragged
    # last tile (37 rows, 100 columns) left unwritten, results not rounded to the dtype.
    x = make(rng, (37, 100), dtype)
    y = make(rng, (100,), dtype, 0.5, 2.0)
    check(ops.binary(op, x, y, device=device), ref.binary(op, x, y), op, dtype)


def test_binary_both_broadcast_and_strided(device):
    # Catches: a column vector against a row vector (both stride 0 in one axis), and a
    # transposed (non-contiguous) operand read as if contiguous.
    x = make(rng, (5, 1, 3), "f32")
    y = make(rng, (4, 3), "f32")
    check(ops.add(x, y, device=device), ref.binary("add", x, y), "add", "f32")
    a = make(rng, (20, 33), "f32")
    check(ops.mul(a.T, a.T, device=device), ref.binary("mul", a.T, a.T), "mul", "f32")


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("op", ["sub", "swiglu"])
def test_binary_of_two_transposed_views(op, dtype, device):
    # Both operands transposed views of one shape (x.T - y.T, batched): the op runs where they
    # are contiguous and its result is transposed once (elementwise.binary). Catches: the
    # operands swapped (sub and swiglu are not symmetric), the result returned untransposed or
    # as a transposed view (the API returns C-contiguous arrays), the batch axis moved.
    x = make(rng, (3, 40, 72), dtype, -2, 2)
    y = make(rng, (3, 40, 72), dtype, 0.5, 2.0)
    xt, yt = np.swapaxes(x, 1, 2), np.swapaxes(y, 1, 2)
    got = ops.binary(op, xt, yt, device=device)
    assert got.shape == (3, 72, 40) and got.flags.c_contiguous
    check(got, ref.binary(op, xt, yt), "glu" if op == "swiglu" else op, dtype)


@pytest.mark.parametrize("dtype", DTYPES)
def test_contiguous_operands_run_as_flat_rows(dtype, device):
    # Operands of one shape, all C-contiguous, run as rows of 1024 (or one row) whatever their
    # last dimension (elementwise._views_2d). Catches: a flat view of rows of 1024 taken of 1365
    # elements (3 x 7 x 65; a reshape error) or its elements past a whole row left unwritten, a
    # transposed operand of the same shape read in memory order, a broadcast operand flattened.
    x = make(rng, (3, 7, 65), dtype)
    y = make(rng, (3, 7, 65), dtype, 0.5, 2.0)
    check(ops.add(x, y, device=device), ref.binary("add", x, y), "add", dtype)
    yt = np.swapaxes(np.ascontiguousarray(np.swapaxes(y, 1, 2)), 1, 2)
    check(ops.mul(x, yt, device=device), ref.binary("mul", x, yt), "mul", dtype)
    check(ops.sub(x, y[0, 0], device=device), ref.binary("sub", x, y[0, 0]), "sub", dtype)
    z = make(rng, (24, 768), dtype, -4, 4)  # 18 rows of 1024
    check(ops.gelu(z, device=device), ref.activation("gelu", z), "gelu", dtype)
    # a transposed view is made contiguous by tl.ops.transpose first (elementwise._unswapped):
    # catches it fed back in memory order (the output transposed) or with its axes unswapped
    check(ops.gelu(z.T, device=device), ref.activation("gelu", z.T), "gelu", dtype)
    check(ops.add(z.T, x.reshape(-1)[:768, None], device=device),
          ref.binary("add", z.T, x.reshape(-1)[:768, None]), "add", dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("act,tol", [("relu", "relu"), ("gelu", "gelu"), ("gelu_tanh", "gelu"),
                                     ("silu", "silu"), ("sigmoid", "sigmoid"), ("tanh", "tanh"),
                                     ("leaky_relu", "leaky_relu")])
def test_activations(act, tol, dtype, device):
    # Catches: a wrong formula (gelu's erf vs tanh form differ by ~1e-3 near |x| = 2), a wrong
    # leaky slope, the ragged edges of (3, 7, 129).
    x = make(rng, (3, 7, 129), dtype, -4, 4)
    check(ops.activation(act, x, alpha=0.05, device=device), ref.activation(act, x, alpha=0.05),
          tol, dtype)


def test_gelu_in_the_lower_tail(device):
    # Catches: Phi as 1/2 + erf(x / sqrt 2) / 2, which cancels for x < 0 (normwise 8e-5 on this
    # tile in session 36's randomized run: x = -3.38 carries the norm; 6x off at -5.5), in gelu
    # and in geglu's gate. Every x here is in the tail, so the tail alone carries the norm.
    x = np.concatenate([np.linspace(-3.0, -6.0, 61), np.linspace(-6.0, -9.0, 7)]).astype(np.float32)
    x = x.reshape(4, 17)
    check(ops.gelu(x, device=device), ref.activation("gelu", x), "gelu", "f32")
    up = make(rng, (4, 17), "f32", 0.5, 2.0)
    check(ops.geglu(x, up, device=device), ref.binary("geglu", x, up), "glu", "f32")


def test_activation_wrappers_match_the_generic_op(device):
    # Catches: a wrapper routed to the wrong activation (gelu(approximate="tanh") and
    # leaky_relu's slope argument).
    x = make(rng, (64,), "f32", -3, 3)
    same = np.testing.assert_array_equal
    same(ops.gelu(x, approximate="tanh", device=device),
         ops.activation("gelu_tanh", x, device=device))
    same(ops.leaky_relu(x, 0.2, device=device),
         ops.activation("leaky_relu", x, alpha=0.2, device=device))
    same(ops.silu(x, device=device), ops.activation("silu", x, device=device))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("op", ["swiglu", "geglu"])
def test_glu_split_and_two_inputs(op, dtype, device):
    # Catches: the halves swapped (gate and up), a split of the wrong width.
    x = make(rng, (11, 2 * 45), dtype, -3, 3)
    want = ref.binary(op, x[:, :45], x[:, 45:])
    check(getattr(ops, op)(x, device=device), want, "glu", dtype)
    check(getattr(ops, op)(x[:, :45], x[:, 45:], device=device), want, "glu", dtype)




def test_rows_past_a_launch_run_in_slices(device, monkeypatch):
    # A row longer than a launch takes (2**30 columns: kernels index in int32) runs as launches
    # over its slices; here a launch takes 1000 columns. Catches: a slice's offset lost (every
    # slice writing the first), the last, partial slice dropped, a broadcast operand's view
    # sliced wrongly; sum of 2**31 + 5 values refused, not wrapped.
    from tl.ops import elementwise
    monkeypatch.setattr(elementwise, "LAUNCH_COLUMNS", 1000)
    rng = np.random.default_rng(9)
    x = rng.uniform(-2, 2, 3007).astype(np.float32)
    np.testing.assert_array_equal(ops.relu(x, device=device), np.maximum(x, 0))
    a, b = rng.uniform(-2, 2, (2, 2500)).astype(np.float32), x[:2500]
    np.testing.assert_array_equal(ops.add(a, b, device=device), a + b)
    # (the dimension the view puts it in: the reduce kernel's 2 on cpu, the segmented partial
    # sums' 1 on GPUs)
    with pytest.raises(ValueError, match=r"2147483653 elements along dimension \d: kernels "
                                         r"index in int32"):
        ops.sum(np.broadcast_to(np.float32(1), (2**31 + 5,)), device=device)
