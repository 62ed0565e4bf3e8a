# Kernels written in Python, run on every device (and the interpreter), against fp64 references.
# SPDX-License-Identifier: Apache-2.0
import math

import numpy as np
import pytest

import tl
from util import TARGETS, close

rng = np.random.default_rng(7)
pytestmark = pytest.mark.parametrize("device,target", TARGETS)


def run(k, grid, *args, device, target, **kw):
    k[grid](*args, device=device, target=target, **kw)


# ---- the product's sample, as written --------------------------------------------------------------

@tl.kernel
def matmul(a: tl.tensor, b: tl.tensor, c: tl.tensor):
    tx = tl.program_id(0)
    ty = tl.program_id(1)
    a_tile = tl.load(a + (tx*128, 0), (128, 64))
    b_tile = tl.load(b + (0, ty*64), (64, 128))
    c_tile = tl.dot(a_tile, b_tile)
    tl.store(c + (tx*128, ty*64), c_tile)


def test_sample_matmul(device, target):
    a = rng.standard_normal((256, 64)).astype(np.float32)
    b = rng.standard_normal((64, 128)).astype(np.float32)
    c = np.zeros((256, 128), np.float32)
    run(matmul, (2, 2), a, b, c, device=device, target=target)
    close(c, a.astype(np.float64) @ b)


# ---- elementwise ------------------------------------------------------------------------------------

@tl.kernel
def vector_add(x: tl.tensor, y: tl.tensor, z: tl.tensor, BLOCK: tl.constexpr):
    i = tl.program_id(0) * BLOCK
    tl.store(z + (i,), tl.load(x + (i,), (BLOCK,)) + tl.load(y + (i,), (BLOCK,)))


def test_vector_add(device, target):
    x, y = rng.standard_normal(1000).astype(np.float32), rng.standard_normal(1000).astype(np.float32)
    z = np.full(1000, np.nan, np.float32)
    run(vector_add, (tl.cdiv(1000, 256),), x, y, z, device=device, target=target, BLOCK=256)
    close(z, x.astype(np.float64) + y)


@tl.kernel
def clamp_scale(x: tl.tensor, y: tl.tensor, lo: tl.float32, hi: tl.float32, n: tl.int32,
                BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    v = tl.load(x + (tl.program_id(0) * BLOCK,), (BLOCK,))
    v = tl.where(v < lo, lo, v)
    v = tl.minimum(v, hi) * 2.0 - 1
    v = tl.where(offs < n, v, 0.0)
    tl.store(y + (tl.program_id(0) * BLOCK,), v)


def test_where_scalars(device, target):
    x = rng.standard_normal(300).astype(np.float32)
    y = np.empty_like(x)
    run(clamp_scale, (3,), x, y, -0.5, 0.5, 250, device=device, target=target, BLOCK=128)
    ref = np.clip(x.astype(np.float64), -0.5, 0.5) * 2 - 1
    ref[250:] = 0
    close(y, ref)


@tl.kernel
def math_fns(x: tl.tensor, out: tl.tensor, BLOCK: tl.constexpr):
    v = tl.load(x + (0,), (BLOCK,), other=1.0)
    r = (tl.exp(v) + tl.log(v) + tl.sqrt(v) + tl.tanh(v) + tl.sigmoid(v) + tl.erf(v)
         + tl.rsqrt(v) + tl.abs(-v) + tl.exp2(v) + tl.log2(v))
    tl.store(out + (0,), r)


def test_math(device, target):
    x = rng.uniform(0.1, 3.0, 64).astype(np.float32)
    out = np.empty_like(x)
    run(math_fns, (1,), x, out, device=device, target=target, BLOCK=64)
    d = x.astype(np.float64)
    erf = np.vectorize(math.erf)
    ref = (np.exp(d) + np.log(d) + np.sqrt(d) + np.tanh(d) + 1 / (1 + np.exp(-d)) + erf(d)
           + 1 / np.sqrt(d) + d + np.exp2(d) + np.log2(d))
    close(out, ref, rtol=1e-5)


@tl.kernel
def int_ops(x: tl.tensor, out: tl.tensor, BLOCK: tl.constexpr):
    v = tl.load(x + (0,), (BLOCK,))
    r = (v // 3) + (v % 5) * 7 + (v & 12) - (v << 1) + (v >> 2) ^ 5
    tl.store(out + (0,), r)


def test_integer_ops(device, target):
    x = rng.integers(0, 1000, 32).astype(np.int32)
    out = np.empty_like(x)
    run(int_ops, (1,), x, out, device=device, target=target, BLOCK=32)
    np.testing.assert_array_equal(out, ((x // 3) + (x % 5) * 7 + (x & 12) - (x << 1) + (x >> 2)) ^ 5)


@tl.kernel
def cast_kernel(x: tl.tensor, out: tl.tensor, BLOCK: tl.constexpr):
    v = tl.load(x + (0,), (BLOCK,))
    f = v.to(tl.float64) / 4
    tl.store(out + (0,), f + tl.cast(v, tl.float32).to(tl.float64))


def test_casts(device, target):
    x = rng.integers(-100, 100, 16).astype(np.int32)
    out = np.empty(16, np.float64)
    run(cast_kernel, (1,), x, out, device=device, target=target, BLOCK=16)
    close(out, x / 4 + x, rtol=1e-12)


@tl.kernel
def quantize_kernel(x: tl.tensor, out: tl.tensor, BLOCK: tl.constexpr, MODE: tl.constexpr):
    v = tl.load(x + (0,), (BLOCK,))
    if MODE == "":
        tl.store(out + (0,), tl.cast(v, out.dtype))
    else:
        tl.store(out + (0,), tl.cast(v, out.dtype, MODE))


# The mode is honoured on float -> int (rtz without one), then the result saturates, NaN -> 0.
QUANTIZE_X = [33.66, 2.5, -2.5, 3.5, -3.5, 0.5, -0.5, -33.66, 126.5, 127.5, 300.0, -129.5,
              -1e10, math.inf, -math.inf, math.nan]
QUANTIZE_REF = {
    "": [33, 2, -2, 3, -3, 0, 0, -33, 126, 127, 127, -128, -128, 127, -128, 0],
    "rtz": [33, 2, -2, 3, -3, 0, 0, -33, 126, 127, 127, -128, -128, 127, -128, 0],
    "rne": [34, 2, -2, 4, -4, 0, 0, -34, 126, 127, 127, -128, -128, 127, -128, 0],
    "rd": [33, 2, -3, 3, -4, 0, -1, -34, 126, 127, 127, -128, -128, 127, -128, 0],
    "ru": [34, 3, -2, 4, -3, 1, 0, -33, 127, 127, 127, -128, -128, 127, -128, 0],
}


@pytest.mark.parametrize("mode", list(QUANTIZE_REF))
@pytest.mark.parametrize("dtype", [np.int8, np.int32])
def test_cast_float_to_int_rounding(device, target, mode, dtype):
    x = np.array(QUANTIZE_X, np.float32)
    out = np.full(x.size, 99, dtype)
    run(quantize_kernel, (1,), x, out, device=device, target=target, BLOCK=x.size, MODE=mode)
    ref = np.array(QUANTIZE_REF[mode], np.int64)
    if dtype == np.int32:  # the i8 range's saturations are in range for i32
        wide = {300.0: 300, -129.5: {"rne": -130, "rd": -130}.get(mode, -129), -1e10: -2**31,
                126.5: ref[8], 127.5: {"rne": 128, "ru": 128}.get(mode, 127),
                math.inf: 2**31 - 1, -math.inf: -2**31}
        ref = np.array([wide.get(v, r) for v, r in zip(QUANTIZE_X, ref)], np.int64)
    np.testing.assert_array_equal(out.astype(np.int64), ref)


# ---- rows: softmax, layernorm -------------------------------------------------------------------------

@tl.kernel
def softmax(x: tl.tensor, y: tl.tensor, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    v = tl.load(x + (row, 0), (1, BLOCK), other=-math.inf)
    m = tl.max(v, axis=1)
    e = tl.exp(v - m[:, None])
    tl.store(y + (row, 0), e / tl.sum(e, axis=1)[:, None])


def test_fused_softmax(device, target):
    x = rng.standard_normal((37, 100)).astype(np.float32)
    y = np.zeros_like(x)
    run(softmax, (37,), x, y, device=device, target=target, BLOCK=128)
    d = x.astype(np.float64)
    ref = np.exp(d - d.max(1, keepdims=True))
    close(y, ref / ref.sum(1, keepdims=True))


@tl.kernel
def layernorm(x: tl.tensor, w: tl.tensor, b: tl.tensor, y: tl.tensor, eps: tl.float32,
              BLOCK: tl.constexpr):
    row = tl.program_id(0)
    n = x.shape[1]
    cols = tl.arange(0, BLOCK)
    mask = cols < n
    v = tl.reshape(tl.load(x + (row, 0), (1, BLOCK)), (BLOCK,))
    mean = tl.sum(v) / n
    d = tl.where(mask, v - mean, 0.0)
    var = tl.sum(d * d) / n
    out = d * tl.rsqrt(var + eps) * tl.load(w + (0,), (BLOCK,)) + tl.load(b + (0,), (BLOCK,))
    tl.store(y + (row, 0), tl.reshape(out, (1, BLOCK)))


def test_layernorm(device, target):
    x = rng.standard_normal((8, 50)).astype(np.float32) * 3 + 1
    w, b = rng.standard_normal(50).astype(np.float32), rng.standard_normal(50).astype(np.float32)
    y = np.zeros_like(x)
    run(layernorm, (8,), x, w, b, y, 1e-5, device=device, target=target, BLOCK=64)
    d = x.astype(np.float64)
    mu, var = d.mean(1, keepdims=True), d.var(1, keepdims=True)
    close(y, (d - mu) / np.sqrt(var + 1e-5) * w + b)


# ---- GEMM with a K loop and an epilogue ---------------------------------------------------------------

@tl.kernel
def gemm_bias_act(a: tl.tensor, b: tl.tensor, bias: tl.tensor, c: tl.tensor,
                  BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, ACT: tl.constexpr):
    m0 = tl.program_id(0) * BM
    n0 = tl.program_id(1) * BN
    acc = tl.zeros((BM, BN), tl.float32)
    for k in tl.range(0, a.shape[1], BK):
        acc = tl.dot(tl.load(a + (m0, k), (BM, BK)), tl.load(b + (k, n0), (BK, BN)), acc=acc)
    acc = acc + tl.load(bias + (n0,), (BN,))[None, :]
    if ACT == "relu":
        acc = tl.maximum(acc, 0.0)
    else:
        acc = 0.5 * acc * (1 + tl.tanh(0.7978845608 * (acc + 0.044715 * acc * acc * acc)))
    tl.store(c + (m0, n0), acc)


@pytest.mark.parametrize("act", ["relu", "gelu"])
def test_gemm_k_loop_epilogue(device, target, act):
    M, N, K = 70, 45, 100
    a = rng.standard_normal((M, K)).astype(np.float32)
    b = rng.standard_normal((K, N)).astype(np.float32)
    bias = rng.standard_normal(N).astype(np.float32)
    c = np.zeros((M, N), np.float32)
    run(gemm_bias_act, (tl.cdiv(M, 32), tl.cdiv(N, 32)), a, b, bias, c, device=device,
        target=target, BM=32, BN=32, BK=16, ACT=act)
    r = a.astype(np.float64) @ b + bias
    r = np.maximum(r, 0) if act == "relu" else 0.5 * r * (1 + np.tanh(0.7978845608 * (r + 0.044715 * r**3)))
    close(c, r, rtol=1e-5)


@tl.kernel
def dot_f64(a: tl.tensor, b: tl.tensor, c: tl.tensor, N: tl.constexpr):
    x = tl.load(a + (0, 0), (N, N))
    tl.store(c + (0, 0), tl.dot(x, tl.load(b + (0, 0), (N, N))) + tl.trans(x))


def test_dot_f64_transpose(device, target):
    a, b = rng.standard_normal((16, 16)), rng.standard_normal((16, 16))
    c = np.zeros((16, 16))
    run(dot_f64, (1,), a, b, c, device=device, target=target, N=16)
    close(c, a @ b + a.T, rtol=1e-13)


@tl.kernel
def gemm_loop(a: tl.tensor, b: tl.tensor, c: tl.tensor, BM: tl.constexpr, BN: tl.constexpr,
              BK: tl.constexpr, EXACT: tl.constexpr, PRECISION: tl.constexpr = "ieee"):
    m0 = tl.program_id(0) * BM
    n0 = tl.program_id(1) * BN
    acc = tl.zeros((BM, BN), tl.float32)
    for k in tl.range(0, a.shape[1], BK):
        acc = tl.dot(tl.load(a + (m0, k), (BM, BK)), tl.load(b + (k, n0), (BK, BN)), acc=acc,
                     input_precision=PRECISION, exact_order=EXACT)
    tl.store(c + (m0, n0), acc)


def test_gemm_f16_any_order_within_bound(device, target):
    # A dot in any order (tensor cores on cuda): against fp64 within ir.h's bound,
    # |err| <= 2 (K + 1) u sum_k |a b| elementwise (u = 2^-24), not bit for bit.
    M, N, K = 128, 128, 256
    a = rng.uniform(-1, 1, (M, K)).astype(np.float16)
    b = rng.uniform(-1, 1, (K, N)).astype(np.float16)
    c = np.zeros((M, N), np.float32)
    run(gemm_loop, (M // 64, N // 64), a, b, c, device=device, target=target, BM=64, BN=64,
        BK=32, EXACT=False)
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    bound = 2 * (K + 1) * 2.0**-24 * (np.abs(a64) @ np.abs(b64))
    assert (np.abs(c - a64 @ b64) <= bound).all()


@pytest.mark.parametrize("shape,tiles", [
    ((200, 136, 120), (64, 64, 32)),    # partial tiles: rows, columns and K zero-filled
    ((130, 72, 136), (128, 64, 64)),    # two warpgroups (wgmma on sm_90a), K past its end
    ((70, 45, 100), (64, 32, 32)),      # rows not 16-byte multiples: the element-wise copies
])
def test_gemm_f16_pipelined_edges(device, target, shape, tiles):
    # The K loop's operands go through cp.async rings on cuda (plan_pipeline): every edge case
    # (tiles past the tensor, unaligned rows) against fp64 within ir.h's bound; a wrong zero
    # fill, a stale ring slot or a misplaced fragment is off by O(|a||b|), far outside it.
    (M, N, K), (BM, BN, BK) = shape, tiles
    a = rng.uniform(-1, 1, (M, K)).astype(np.float16)
    b = rng.uniform(-1, 1, (K, N)).astype(np.float16)
    c = np.full((M, N), np.nan, np.float32)
    run(gemm_loop, (tl.cdiv(M, BM), tl.cdiv(N, BN)), a, b, c, device=device, target=target,
        BM=BM, BN=BN, BK=BK, EXACT=False)
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    bound = 2 * (K + 1) * 2.0**-24 * (np.abs(a64) @ np.abs(b64))
    assert (np.abs(c - a64 @ b64) <= bound).all()


@tl.kernel
def gemm_two_ways(a: tl.tensor, b: tl.tensor, c: tl.tensor, BM: tl.constexpr, BN: tl.constexpr,
                  BK: tl.constexpr):
    # Two K loops one after the other (the second reuses the first's ring: its last copies must
    # be done), the second with two dots (one ring per loop: the other keeps registers).
    m0 = tl.program_id(0) * BM
    n0 = tl.program_id(1) * BN
    half = (a.shape[1] // (2 * BK)) * BK
    acc = tl.zeros((BM, BN), tl.float32)
    for k in tl.range(0, half, BK):
        acc = tl.dot(tl.load(a + (m0, k), (BM, BK)), tl.load(b + (k, n0), (BK, BN)), acc=acc)
    acc2 = tl.zeros((BM, BN), tl.float32)
    for k in tl.range(half, a.shape[1], BK):
        acc = tl.dot(tl.load(a + (m0, k), (BM, BK)), tl.load(b + (k, n0), (BK, BN)), acc=acc)
        acc2 = tl.dot(tl.load(a + (m0, k), (BM, BK)), tl.load(b + (k, n0), (BK, BN)), acc=acc2)
    tl.store(c + (m0, n0), acc + acc2)


def test_gemm_f16_two_pipelined_loops(device, target):
    # c = A B + (the second half of K of A B): a slot refilled too early or left to the next loop
    # gives wrong sums, far outside the bound.
    M, N, K = 128, 64, 192
    a = rng.uniform(-1, 1, (M, K)).astype(np.float16)
    b = rng.uniform(-1, 1, (K, N)).astype(np.float16)
    c = np.full((M, N), np.nan, np.float32)
    run(gemm_two_ways, (M // 64, N // 64), a, b, c, device=device, target=target, BM=64, BN=64,
        BK=32)
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    want = a64 @ b64 + a64[:, 96:] @ b64[96:]
    bound = 2 * (K + 1) * 2.0**-24 * (np.abs(a64) @ np.abs(b64)) * 2
    assert (np.abs(c - want) <= bound).all()


def test_gemm_f16_exact_order_matches_cpu(device, target):
    # exact_order=True: one fma per k in ascending order on every backend, so bit for bit.
    M, N, K = 64, 64, 64
    a = rng.uniform(-1, 1, (M, K)).astype(np.float16)
    b = rng.uniform(-1, 1, (K, N)).astype(np.float16)
    c, want = np.zeros((M, N), np.float32), np.zeros((M, N), np.float32)
    run(gemm_loop, (1, 1), a, b, c, device=device, target=target, BM=64, BN=64, BK=32,
        EXACT=True)
    run(gemm_loop, (1, 1), a, b, want, device="cpu", target=None, BM=64, BN=64, BK=32,
        EXACT=True)
    np.testing.assert_array_equal(c, want)


@pytest.mark.parametrize("tiles", [(128, 128, 16), (64, 64, 32), (32, 128, 8), (16, 16, 4),
                                   (128, 32, 64)])
@pytest.mark.parametrize("precision", ["ieee", "tf32"])
def test_gemm_f32_exact_order_matches_cpu(device, target, tiles, precision):
    # f32 dots on CUDA cores (nvptx: A transposed and swizzled in shared memory, 16-byte reads,
    # 4 x 4 a thread) are one fma per k in ascending order: bit for bit the cpu device's, at
    # every tile shape (layouts with 1 to 16 elements a thread, replicated or not) and past
    # every edge (M, N, K not multiples of the tiles).
    BM, BN, BK = tiles
    M, N, K = 2 * BM + 3, BN + 5, 3 * BK + 1
    a = rng.standard_normal((M, K)).astype(np.float32)
    b = rng.standard_normal((K, N)).astype(np.float32)
    c, want = np.zeros((M, N), np.float32), np.zeros((M, N), np.float32)
    grid = (tl.cdiv(M, BM), tl.cdiv(N, BN))
    run(gemm_loop, grid, a, b, c, device=device, target=target, BM=BM, BN=BN, BK=BK,
        EXACT=True, PRECISION=precision)
    run(gemm_loop, grid, a, b, want, device="cpu", target=None, BM=BM, BN=BN, BK=BK,
        EXACT=True, PRECISION=precision)
    np.testing.assert_array_equal(c, want)
    if precision == "ieee":  # and both near fp64: a wrong element (or a lost tile) fails here
        close(c, a.astype(np.float64) @ b, rtol=1e-5)


@tl.kernel
def k_loop_index_divides(a: tl.tensor, c: tl.tensor, K: tl.int32, BK: tl.constexpr):
    acc = tl.zeros((16, 16), tl.float32)
    for k in tl.range(0, K, BK):
        row = tl.minimum(k // (K - k), 0)  # 0 in every iteration; K - k is 0 one step past the end
        acc = tl.dot(tl.load(a + (row, k), (16, BK)), tl.load(a + (k, 0), (BK, 16)), acc=acc)
    tl.store(c + (0, 0), acc)


def test_k_loop_index_past_the_end_is_not_an_error(device, target):
    # nvptx computes the next iteration's load indices ahead (rows of BK = 2 f32 are too short
    # for the cp.async ring: the register prefetch); past the last iteration that index divides
    # by zero, which must not be reported (it was: "integer division by zero" at the
    # launch's synchronize).
    K, BK = 6, 2
    a = rng.standard_normal((16, 16)).astype(np.float32)
    c = np.zeros((16, 16), np.float32)
    run(k_loop_index_divides, (1,), a, c, K, device=device, target=target, BK=BK)
    close(c, a[:, :K].astype(np.float64) @ a[:K, :], rtol=1e-6)


# ---- reductions, scans -----------------------------------------------------------------------------

@tl.kernel
def reductions(x: tl.tensor, out: tl.tensor, idx: tl.tensor, R: tl.constexpr, C: tl.constexpr):
    v = tl.load(x + (0, 0), (R, C))
    tl.store(out + (0, 0), tl.reshape(tl.sum(v, axis=0), (1, C)))
    tl.store(out + (1, 0), tl.reshape(tl.max(v, axis=0), (1, C)))
    tl.store(out + (2, 0), tl.reshape(v.min(0), (1, C)))
    tl.store(out + (3, 0), tl.reshape(tl.sum(v, axis=1), (1, R)))
    tl.store(out + (4, 0), tl.full((1, 1), tl.sum(v)))
    tl.store(idx + (0,), tl.argmax(v, axis=1))


def test_reductions(device, target):
    x = rng.standard_normal((8, 8)).astype(np.float32)
    out, idx = np.zeros((5, 8), np.float32), np.zeros(8, np.int32)
    run(reductions, (1,), x, out, idx, device=device, target=target, R=8, C=8)
    d = x.astype(np.float64)
    close(out[0], d.sum(0))
    close(out[1], d.max(0))
    close(out[2], d.min(0))
    close(out[3], d.sum(1))
    close(out[4, 0], d.sum(), rtol=1e-5)
    np.testing.assert_array_equal(idx, x.argmax(1))


@tl.kernel
def cumsum_kernel(x: tl.tensor, y: tl.tensor, N: tl.constexpr):
    tl.store(y + (0,), tl.cumsum(tl.load(x + (0,), (N,)), 0))


def test_scan(device, target):
    x = rng.integers(-50, 50, 64).astype(np.int64)
    y = np.zeros_like(x)
    run(cumsum_kernel, (1,), x, y, device=device, target=target, N=64)
    np.testing.assert_array_equal(y, np.cumsum(x))


# ---- gather, scatter, atomics ----------------------------------------------------------------------------

@tl.kernel
def gather_rows(table: tl.tensor, idx: tl.tensor, out: tl.tensor, n: tl.int32,
                BLOCK: tl.constexpr, D: tl.constexpr):
    rows = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    ids = tl.gather(idx, (rows,), mask=rows < n)
    cols = tl.arange(0, D)
    vals = tl.gather(table, (ids[:, None], cols[None, :]), mask=(rows < n)[:, None], other=-1.0)
    tl.store(out + (tl.program_id(0) * BLOCK, 0), vals)


def test_gather(device, target):
    table = rng.standard_normal((50, 8)).astype(np.float32)
    idx = rng.integers(0, 50, 30).astype(np.int32)
    out = np.zeros((30, 8), np.float32)
    run(gather_rows, (2,), table, idx, out, 30, device=device, target=target, BLOCK=16, D=8)
    np.testing.assert_array_equal(out, table[idx])


@tl.kernel
def gather_loaded_indices(x: tl.tensor, r: tl.tensor, k: tl.tensor, m: tl.tensor, o: tl.tensor):
    ri = tl.load(r + (0,), (64,))
    ki = tl.load(k + (0,), (64,))
    on = tl.load(m + (0,), (64,)) != 0
    tl.store(o + (0,), tl.gather(x, (ri, ki), mask=on, other=-2.0))


def test_gather_of_indices_read_in_place(device, target):
    # The index and mask tiles are loads that llvm-cpu reads in place from the arrays (views,
    # not copies), here 4 bytes past a 64-byte boundary: its vector gather read them with
    # 64-byte aligned loads (a segfault). Masked lanes point far outside (never read).
    x = rng.standard_normal((9, 13)).astype(np.float32)
    on = rng.random(64) > 0.25
    base = c_aligned(3 * 65, np.int32)
    r, k, m = base[1:65], base[66:130], c_aligned(65, np.int8)[1:]
    r[:] = np.where(on, rng.integers(0, 9, 64), 1000)
    k[:] = np.where(on, rng.integers(0, 13, 64), -7)
    m[:] = on
    out = np.zeros(64, np.float32)
    run(gather_loaded_indices, (1,), x, r, k, m, out, device=device, target=target)
    np.testing.assert_array_equal(out, np.where(on, x[r % 9, k % 13], -2.0))


@tl.kernel
def carried_loads(x: tl.tensor, w: tl.tensor, out: tl.tensor, FLAG: tl.int32):
    a = tl.load(x + (0, 0), (16, 16))
    if FLAG == 1:  # an if yielding a loaded tile
        b = a
    else:
        b = a * 2.0
    c = a
    for _ in tl.range(0, 2, 1):  # a loop carrying a loaded tile
        c = c + b
    d = tl.dot(tl.load(w + (0, 0), (16, 16)), c, acc=a)  # a loaded accumulator
    tl.store(out + (0, 0), d)


def test_loaded_tiles_carried_and_yielded_in_place(device, target):
    # llvm-cpu reads these loads in place (views of the arrays, here 4 bytes past a 64-byte
    # boundary); the copies into the if's result, the loop's carried value and the dot's
    # accumulator assumed 64-byte aligned sources (vmovaps: a segfault).
    base = c_aligned(16 * 16 + 1, np.float32)
    x = base[1:].reshape(16, 16)
    x[...] = rng.integers(-4, 5, (16, 16))
    w = rng.integers(-4, 5, (16, 16)).astype(np.float32)
    for flag in (0, 1):
        out = np.zeros((16, 16), np.float32)
        run(carried_loads, (1,), x, w, out, flag, device=device, target=target)
        b = x if flag == 1 else 2 * x
        np.testing.assert_array_equal(out, w @ (x + 2 * b) + x)


@tl.kernel
def shifted_blocks(x: tl.tensor, out: tl.tensor, back: tl.tensor, dr: tl.int32, dc: tl.int32):
    """out = the (8, 16) block of x at (dr, dc) (1.5 outside x); back[dr:, dc:] = x's first
    block (only the lanes inside back written)."""
    tl.store(out + (0, 0), tl.load(x + (dr, dc), (8, 16), other=1.5))
    tl.store(back + (dr, dc), tl.load(x + (0, 0), (8, 16)))


@pytest.mark.parametrize("shift", [(-1, -1), (-3, 0), (0, -5), (-9, -2), (2, -17)])
def test_blocks_shifted_past_the_start(shift, device, target):
    # Negative offsets: a load pads the lanes before the tensor's start, a store skips them. x
    # and back are transposed views (read in place on cpu; npusim gets contiguous copies: its
    # DMA's strided layout is NpusimOps.BlocksShiftedPastTheStartPadAndStoreOnlyInside's).
    # Catches: the tnpu's DMA box read from before the tensor (the lanes above or left of it
    # held whatever lay there: 0 for 1.5) or written there (another array's memory).
    dr, dc = shift
    x = rng.standard_normal((20, 12)).astype(np.float32).T  # (12, 20), column stride 12
    out = np.zeros((8, 16), np.float32)
    back = np.full((20, 10), 7.0, np.float32).T  # (10, 20)
    run(shifted_blocks, (1,), x, out, back, dr, dc, device=device, target=target)
    want = np.full((8, 16), 1.5, np.float32)
    want_back = np.full((10, 20), 7.0, np.float32)
    for i in range(8):
        for j in range(16):
            if 0 <= dr + i < 12 and 0 <= dc + j < 20:
                want[i, j] = x[dr + i, dc + j]
            if 0 <= dr + i < 10 and 0 <= dc + j < 20:
                want_back[dr + i, dc + j] = x[i, j]
    np.testing.assert_array_equal(out, want)
    np.testing.assert_array_equal(back, want_back)


def c_aligned(n, dtype):
    """n elements of `dtype` starting on a 64-byte boundary."""
    raw = np.zeros(n * np.dtype(dtype).itemsize + 64, np.uint8)
    start = -raw.ctypes.data % 64
    return raw[start:start + n * np.dtype(dtype).itemsize].view(dtype)


@tl.kernel
def scatter_perm(x: tl.tensor, perm: tl.tensor, y: tl.tensor, n: tl.int32, BLOCK: tl.constexpr):
    i = tl.arange(0, BLOCK)
    p = tl.load(perm + (0,), (BLOCK,))
    tl.scatter(y, (p,), tl.load(x + (0,), (BLOCK,)), mask=i < n)


def test_scatter(device, target):
    perm = rng.permutation(40).astype(np.int32)
    x = rng.standard_normal(40).astype(np.float32)
    y = np.zeros(40, np.float32)
    run(scatter_perm, (1,), x, np.pad(perm, (0, 24)), y, 40, device=device, target=target, BLOCK=64)
    ref = np.zeros(40, np.float32)
    ref[perm] = x
    np.testing.assert_array_equal(y, ref)


@tl.kernel
def histogram(x: tl.tensor, hist: tl.tensor, n: tl.int32, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    v = tl.load(x + (tl.program_id(0) * BLOCK,), (BLOCK,))
    tl.atomic_add(hist, (v,), 1, mask=offs < n)


def test_atomic_histogram(device, target):
    x = rng.integers(0, 10, 1000).astype(np.int32)
    hist = np.zeros(10, np.int32)
    run(histogram, (tl.cdiv(1000, 128),), x, hist, 1000, device=device, target=target, BLOCK=128)
    np.testing.assert_array_equal(hist, np.bincount(x, minlength=10))


# ---- control flow -----------------------------------------------------------------------------------------

@tl.kernel
def loop_if(x: tl.tensor, out: tl.tensor, steps: tl.int32, BLOCK: tl.constexpr):
    v = tl.load(x + (0,), (BLOCK,))
    total = 0.0
    count = 0
    for i in tl.range(steps):
        if i % 2 == 0:
            v = v * 2.0
            count += 1
        else:
            v = v - 1.0
        total = total + tl.sum(v)
    for j in tl.static_range(3):
        v = v + j
    tl.store(out + (0,), v)
    tl.store(out + (BLOCK,), tl.full((2,), total))
    tl.store(out + (BLOCK + 2,), tl.full((1,), count.to(tl.float32)))


def test_loop_if_carried(device, target):
    x = rng.standard_normal(16).astype(np.float32)
    out = np.zeros(19, np.float32)
    run(loop_if, (1,), x, out, 5, device=device, target=target, BLOCK=16)
    v, total, count = x.astype(np.float64), 0.0, 0
    for i in range(5):
        if i % 2 == 0:
            v, count = v * 2, count + 1
        else:
            v = v - 1
        total += v.sum()
    close(out[:16], v + 3)
    close(out[16:18], [total, total], rtol=1e-5)
    assert out[18] == count
