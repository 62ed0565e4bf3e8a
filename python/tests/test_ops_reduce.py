# tl.ops reductions and cumsum along any axis against fp64 references.
# SPDX-License-Identifier: Apache-2.0
import numpy as np
import pytest

import tl.ops as ops
from tl.ops import reference as ref
from ops_util import DEVICES, DTYPES, DTYPES_F16, check, make

pytestmark = pytest.mark.parametrize("device", DEVICES)

rng = np.random.default_rng(20)

# The kit's sum bounds are for well-conditioned inputs: positive values for the sums.
TOL = {"sum": "reduce_sum", "mean": "reduce_mean", "var": "reduce_var", "max": "reduce_max",
       "min": "reduce_min"}


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("axis", [0, 1, 2])
@pytest.mark.parametrize("op", ["sum", "mean", "var", "max", "min"])
def test_reduce_any_axis(op, axis, dtype, device):
    # Catches: the wrong axis reduced (the shape differs per axis), padding lanes counted
    # (0 into max of negatives, +inf into min), chunks not combined (axis 1 has 300 > one
    # chunk when the inner extent is large), var not divided by n.
    lo, hi = {"sum": (0.5, 2.0), "mean": (0.5, 2.0), "var": (-3.0, 2.0), "max": (-3.0, -1.0),
              "min": (1.0, 3.0)}[op]
    x = make(rng, (5, 300, 7), dtype, lo, hi)
    got = ops.reduce(op, x, axis, device=device)
    n = x.shape[axis]
    want = ref.reduce(op, x, axis)
    check(got, want, TOL[op], dtype, n=n)


@pytest.mark.parametrize("axis", [0, -1])
def test_argmax_first_index(axis, device):
    # Catches: the last index of a tie, a later chunk's equal maximum winning, indices relative
    # to the chunk instead of the row.
    x = make(rng, (6, 5000), "f32", -1, 1)
    x[:, 100] = 2.0
    x[:, 4500] = 2.0
    x[2, 4800] = 3.0
    got = ops.argmax(x, axis, device=device)
    np.testing.assert_array_equal(got, x.argmax(axis))
    assert got.dtype == np.int32


def test_var_correction(device):
    # Catches: correction (Bessel's n - 1) ignored.
    x = make(rng, (4, 50), "f32", 0, 1)
    check(ops.var(x, correction=1, device=device), ref.reduce("var", x, -1, correction=1),
          "reduce_var", "f32", n=50)


@pytest.mark.parametrize("dtype", DTYPES_F16)
@pytest.mark.parametrize("shape,axis", [((3, 5000), -1), ((4, 77, 5), 1)])
def test_cumsum(shape, axis, dtype, device):
    # Catches: the carry between chunks dropped (5000 > one chunk), an exclusive scan, the
    # wrong axis.
    x = make(rng, shape, dtype, 0.0, 1.0)
    check(ops.cumsum(x, axis, device=device), ref.cumsum(x, axis), "scan_sum", dtype, n=shape[axis])


@pytest.mark.parametrize("dtype", DTYPES)
def test_topk(dtype, device):
    # Catches: a winner not taken out (the same index twice), ties not to the lowest index,
    # padding lanes (-inf) chosen in a ragged row, values not in descending order.
    x = make(rng, (37, 100), dtype, -1, 1)
    xd = ref.f64(x)
    xd[3, [10, 50, 90]] = 5.0  # a three-way tie at the top
    x = tl_array(xd, dtype)
    values, indices = ops.topk(x, 5, device=device)
    want_idx = np.argsort(-ref.f64(x), axis=1, kind="stable")[:, :5]
    np.testing.assert_array_equal(indices, want_idx)
    np.testing.assert_array_equal(ref.f64(values), np.take_along_axis(ref.f64(x), want_idx, 1))
    assert indices[3, :3].tolist() == [10, 50, 90]


def tl_array(a, dtype):
    import tl
    return tl.bf16.array(a) if dtype == "bf16" else a.astype(np.float32)
