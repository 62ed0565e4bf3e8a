# tl.ops GEMM (epilogues, batches, transposed operands), GEMV and transpose against fp64.
# SPDX-License-Identifier: Apache-2.0
import numpy as np
import pytest

import tl.ops as ops
from tl.ops import reference as ref
from ops_util import DEVICES, DTYPES, check, make

pytestmark = pytest.mark.parametrize("device", DEVICES)

rng = np.random.default_rng(21)


def dot_check(got, a, b, dtype, **kw):
    """The kit's dot bound: n = K terms, cond from |a| @ |b|."""
    want = ref.gemm(a, b, **kw)
    return check(got, want, "dot" if not kw else "gemm", dtype, n=a.shape[-1],
                 ref_abs=np.abs(ref.f64(a)) @ np.abs(ref.f64(b)))


@pytest.mark.parametrize("dtype", DTYPES + ["f16"])
@pytest.mark.parametrize("mkn", [(70, 45, 33), (1, 130, 5)])
def test_gemm(mkn, dtype, device):
    # Catches: ragged M, N, K edges (K = 45 and 130: a partial last K block read as garbage
    # instead of zeros), a single-row A.
    m, k, n = mkn
    a, b = make(rng, (m, k), dtype), make(rng, (k, n), dtype)
    dot_check(ops.gemm(a, b, device=device), a, b, dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("act", ["relu", "gelu_tanh", "silu"])
def test_gemm_epilogue(act, dtype, device):
    # Catches: bias added per row instead of per column, the activation before alpha or the
    # bias, the residual added before the activation (relu would clip it).
    a, b = make(rng, (40, 64), dtype), make(rng, (64, 24), dtype)
    bias, res = make(rng, (24,), dtype), make(rng, (40, 24), dtype)
    got = ops.gemm(a, b, bias=bias, activation=act, residual=res, alpha=0.5, device=device)
    dot_check(got, a, b, dtype, bias=bias, activation_=act, residual=res, alpha=0.5)


def test_gemm_batched_shared_and_transposed(device):
    # Catches: a batch index ignored (every batch gets batch 0), a shared (rank-2) operand not
    # broadcast, a transposed operand (strides swapped) read as contiguous.
    a = make(rng, (3, 20, 45), "f32")
    b = make(rng, (33, 45), "f32").T
    dot_check(ops.gemm(a, b, device=device), a, b, "f32")
    b3 = make(rng, (3, 45, 17), "f32")
    dot_check(ops.gemm(a, b3, device=device), a, b3, "f32")


@pytest.mark.parametrize("dtype", DTYPES)
def test_gemv(dtype, device):
    # Catches: a row's partial K block (K = 1000 > one block of 512), the bias per column.
    a, x, bias = make(rng, (77, 1000), dtype), make(rng, (1000,), dtype), make(rng, (77,), dtype)
    want = ref.gemv(a, x, bias)
    check(ops.gemv(a, x, bias=bias, device=device), want, "gemm", dtype, n=1000,
          ref_abs=np.abs(ref.f64(a)) @ np.abs(ref.f64(x)) + np.abs(ref.f64(bias)))


@pytest.mark.parametrize("dtype", DTYPES)
def test_transpose(dtype, device):
    # Catches: a square-tile assumption (70 x 45), the batch index, bits changed (exact).
    x = make(rng, (2, 70, 45), dtype)
    check(ops.transpose(x, device=device), ref.transpose(x), "gather", dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("stride,padding,k", [(1, 0, 3), (2, 1, 3), ((1, 2), (2, 0), 3),
                                              (1, 0, 1)])
def test_conv2d(stride, padding, k, dtype, device):
    # Catches: the patch index decoded wrongly (channel, row, column of K), padding read as
    # data instead of zeros, the stride per axis swapped, a 1x1 convolution (a plain GEMM)
    # over 70 output channels (more than one block), bias per pixel instead of per channel.
    x = make(rng, (2, 3, 17, 13), dtype)
    oc = 70 if k == 1 else 5
    w, b = make(rng, (oc, 3, k, k), dtype), make(rng, (oc,), dtype)
    got = ops.conv2d(x, w, b, stride=stride, padding=padding, activation="relu", device=device)
    want = ref.conv2d(x, w, b, stride, padding, "relu")
    ref_abs = ref.conv2d(np.abs(ref.f64(x)), np.abs(ref.f64(w)), np.abs(ref.f64(b)), stride,
                         padding)
    check(got, want, "gemm", dtype, n=3 * k * k, ref_abs=ref_abs)
