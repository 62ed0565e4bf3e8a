# tl.ops row ops (softmax, log_softmax, layernorm, rmsnorm) against fp64 references.
# SPDX-License-Identifier: Apache-2.0
import numpy as np
import pytest

import tl.ops as ops
from tl.ops import reference as ref
from ops_util import DEVICES, DTYPES, DTYPES_F16, check, make

pytestmark = pytest.mark.parametrize("device", DEVICES)

rng = np.random.default_rng(19)

# Narrow rows (several per program), a ragged width in one chunk, and wider than one chunk
# (4096 columns): the online max/sum across chunks.
# (9, 384) and (5, 1000): widths that are multiples of 8, the tile's own width on llvm-cpu
# (row_block_multiple; 1000: its vector loops end in a partial vector), a ragged power of two
# elsewhere. On llvm-cpu (row_one_pass_widest, session 42) 5000 is one tile for softmax and
# rmsnorm and 1000-wide chunks for layernorm; 5001 keeps the ragged 4096-wide chunks.
SHAPES = [(37, 100), (3, 5000), (9, 384), (5, 1000), (2, 5001)]


@pytest.mark.parametrize("dtype", DTYPES_F16)
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("op", ["softmax", "log_softmax"])
def test_softmax(op, shape, dtype, device):
    # Catches: no max subtraction (inputs up to 30 overflow nothing here, but a wrong max
    # shifts every output), masked lanes counted in the sum (ragged width), the rescaling of
    # the running sum across chunks (shape 3 x 5000).
    x = make(rng, shape, dtype, -30, 30)
    check(getattr(ops, op)(x, device=device), getattr(ref, op)(x), "softmax", dtype, n=shape[-1])


def test_softmax_one_pass_rejects_wider_rows(device):
    # Catches: the one-pass form (the C API's softmax_onepass<BLOCK> specializations) run on a
    # row wider than its chunk: it would normalize the first BLOCK columns and leave the rest.
    import tl
    from tl.ops import rows
    x = make(rng, (2, 1025), "f32")
    out = np.zeros_like(x)
    with pytest.raises(tl.TLRuntimeError, match="rows are wider than BLOCK"):
        rows.softmax_kernel.kernel[(2,)](x, out, LOG=False, ONE_PASS=True, BM=1, BLOCK=1024,
                                         RECIP=True, device=device)


def test_softmax_other_axis(device):
    # Catches: the axis argument ignored (rows normalized instead of columns).
    x = make(rng, (40, 6, 3), "f32", -5, 5)
    check(ops.softmax(x, axis=0, device=device), ref.softmax(x, axis=0), "softmax", "f32", n=40)


@pytest.mark.parametrize("dtype", DTYPES_F16)
@pytest.mark.parametrize("shape", SHAPES)
def test_layernorm(shape, dtype, device):
    # Catches: a variance over the padded width (ragged), weight or bias misapplied, stats not
    # the row's mean and 1/sigma. Inputs near zero mean: an f32 mean has an error of about
    # n u mean|x| (npusim's 5000-term sums reach 1e-6 of it), which the output carries
    # divided by sigma; the fp32 contract holds where mean|x| / sigma is about 1.
    x = make(rng, shape, dtype, -1.5, 2.0)
    w = make(rng, shape[-1:], dtype, 0.5, 1.5)
    b = make(rng, shape[-1:], dtype)
    out, stats = ops.layernorm(x, w, b, eps=1e-5, return_stats=True, device=device)
    check(out, ref.layernorm(x, w, b, eps=1e-5), "norm", dtype, n=shape[-1])
    xd = ref.f64(x)
    # the mean: within 1e-6 of the data's scale (its relative error is unbounded near 0)
    assert np.abs(stats[:, 0] - xd.mean(-1)).max() <= 1e-6 * np.sqrt((xd * xd).mean())
    check(stats[:, 1], 1 / np.sqrt(xd.var(-1) + 1e-5), "norm", "f32", n=shape[-1])


@pytest.mark.parametrize("dtype", DTYPES_F16)
@pytest.mark.parametrize("shape", SHAPES)
def test_rmsnorm(shape, dtype, device):
    # Catches: the mean subtracted (layernorm instead), sqrt of the sum instead of the mean.
    x = make(rng, shape, dtype, -2, 2)
    w = make(rng, shape[-1:], dtype, 0.5, 1.5)
    check(ops.rmsnorm(x, w, device=device), ref.rmsnorm(x, w), "norm", dtype, n=shape[-1])


def test_layernorm_large_offset_is_two_pass(device):
    # Catches: a one-pass E[x^2] - E[x]^2 variance, which at mean 100 and sigma 0.6 cancels
    # ~(100/0.6)^2 u = 2e-3 of the variance. The mean's own f32 rounding (cond |mean|/sigma =
    # 170 times u) bounds what two passes can do: 170 * 6e-8 = 1e-5, with a factor 4 of room.
    x = make(rng, (37, 100), "f32", 99, 101)
    got, want = ops.layernorm(x, device=device), ref.layernorm(x)
    assert np.linalg.norm(got - want) / np.linalg.norm(want) < 4e-5


def test_layernorm_without_affine_3d(device):
    # Catches: weight/bias read when absent (HAS_W / HAS_B), a rank-3 input not seen as rows.
    x = make(rng, (2, 3, 70), "f32", normal=True)
    check(ops.layernorm(x, device=device), ref.layernorm(x), "norm", "f32", n=70)


@pytest.mark.parametrize("shape", [(8192, 1024), (8400, 1000)])
@pytest.mark.parametrize("op", ["softmax", "log_softmax", "layernorm", "rmsnorm"])
def test_rows_streamed_outputs(op, shape, device):
    # 8192 x 1024 f32 = 32 MiB: on cpu the output is past llvm-cpu's streaming threshold and
    # 64-byte aligned (_common.empty), so each row's late store runs the non-temporal path
    # (cpu-stream-stores, session 12). Rows of 1000 (the tile's own width on llvm-cpu,
    # row_block_multiple) start at 16 offsets in their lines: each row streams from its first
    # whole line, its partial lines stored plainly (session 41). Catches: that path writing
    # the wrong lanes or chunks (the bench sizes, never reached by the small shapes above), an
    # unaligned output (the plain path would run instead: the alignment is asserted), rows of
    # a later program lost, a row's head or tail lanes left unwritten or taken from another.
    if device != "cpu":
        pytest.skip("the streaming path is llvm-cpu's (npusim runs the small shapes above)")
    n = shape[1]
    x = make(rng, shape, "f32", -4, 4)
    if op in ("softmax", "log_softmax"):
        got, want = getattr(ops, op)(x, device=device), getattr(ref, op)(x)
        tol = "softmax"
    else:
        w = make(rng, (n,), "f32", -2, 2)
        got = getattr(ops, op)(x, w, device=device)
        want = ref.layernorm(x, w) if op == "layernorm" else ref.rmsnorm(x, w)
        tol = "norm"
    assert got.ctypes.data % 64 == 0, "tl.ops output not 64-byte aligned: no streamed stores"
    check(got, want, tol, "f32", n=n)


@pytest.mark.parametrize("shape", [(3, 32000), (2, 70000)])
@pytest.mark.parametrize("op", ["softmax", "log_softmax", "layernorm", "rmsnorm"])
def test_rows_wider_than_a_chunk(op, shape, device):
    # Vocabulary-wide rows (rows.row_tiles): on llvm-cpu 32000 is one tile for softmax and
    # rmsnorm (row_one_pass_widest) and 4000-wide chunks for layernorm; 70000 is past the one
    # pass: 2800-wide chunks that divide it (no mask). On npusim 4096-wide chunks, the last
    # ragged (8 and 18 chunks a row: the running max and sum across many). Catches: a one-pass
    # tile cut short (softmax's assert, rmsnorm's columns past it unnormalized: checked with
    # BLOCK = n - 8), the running max and sum rescaled wrongly across 25 chunks (70000). A
    # chunk that does not divide the row is not caught: the kernels mask it (slower, not wrong).
    x = make(rng, shape, "f32", -30, 30)
    if op in ("softmax", "log_softmax"):
        check(getattr(ops, op)(x, device=device), getattr(ref, op)(x), "softmax", "f32",
              n=shape[1])
    else:
        w = make(rng, (shape[1],), "f32", -2, 2)
        got = getattr(ops, op)(x, w, device=device)
        check(got, ref.layernorm(x, w) if op == "layernorm" else ref.rmsnorm(x, w), "norm", "f32",
              n=shape[1])


@pytest.mark.parametrize("n", [3, 1000, 5001])
def test_rows_far_from_zero(n, device):
    # Logits around 1e5 (ulp 0.0078): the log-sum-exp m + log(s) rounds log(s) to m's ulp, so
    # the kernels take (x - m) - log(s) (exact near the maximum). Catches: log_softmax as
    # x - (m + log(s)) (normwise 9e-4 at width 3, one tile) and softmax's second pass as
    # exp(x - (m + log(s))) (5001 columns: in chunks everywhere), cross-entropy as
    # m + log(s) - picked and its gradient's exp(x - lse).
    x = (make(rng, (4, n), "f32", -3, 3).astype(np.float64) + 1e5).astype(np.float32)
    for op in ("softmax", "log_softmax"):
        check(getattr(ops, op)(x, device=device), getattr(ref, op)(x), "softmax", "f32", n=n)
    t = rng.integers(0, n, 4)
    check(ops.cross_entropy(x, t, reduction="none", device=device),
          ref.cross_entropy(x, t, "none"), "softmax", "f32", n=n)
    check(ops.cross_entropy_backward(x, t, 1.0, reduction="sum", device=device),
          ref.cross_entropy_backward(x, t, 1.0, "sum"), "backward", "f32", n=n)


@pytest.mark.parametrize("rows", [3, 8192])
def test_log_softmax_in_place(rows, device):
    # The kernel with out = x: on cpu x is read in place (a view) by the fused store that
    # writes out (cpu-plan-views, session 13), one lane before it is written, as the store's
    # own fused loads are; 8192 rows of 1024 f32 (32 MiB) take the streamed path. Catches: a
    # lane of x read after this program's store overwrote it (the result then differs from
    # the out-of-place call's, bit for bit).
    # Every device must give the same bits in place (an in-place kernel is a user's choice);
    # the 32 MiB case is llvm-cpu's streamed path only (minutes of simulation elsewhere).
    if device != "cpu" and rows > 3:
        pytest.skip("32 MiB: llvm-cpu's streamed path")
    from tl.ops import _common, rows as row_ops
    x = make(rng, (rows, 1024), "f32", -8, 8)
    want = ops.log_softmax(x, device=device)
    y = _common.aligned_empty(x.shape, np.float32)  # aligned: the streamed path at 32 MiB
    y[...] = x
    row_ops.softmax_kernel.kernel[(rows,)](y, y, device=device, LOG=True, ONE_PASS=True, BM=1,
                                           BLOCK=1024, RECIP=False)
    np.testing.assert_array_equal(y, want)


@pytest.mark.parametrize("shape", [(100, 100), (70, 5000)])
@pytest.mark.parametrize("op", ["softmax", "layernorm"])
def test_rows_in_blocks_of_64(op, shape, device):
    # The tnpu's configs take up to 64 rows a program (BM = 64, ELEMS = its row_elements):
    # 100 rows of 100 are a full program and a ragged one of 36 rows; 70 rows of 5000 are
    # chunked rows, 16 a program (ELEMS / BLOCK) and a last of 6. Run on every device with the
    # grid the host computes (rows_per_program). Catches: the grid and the kernel capping the
    # rows differently (rows never written stay NaN), the ragged program's rows past the end
    # written or read, another program's rows normalized with this one's statistics.
    from tl.ops import _common, rows as row_ops
    x = make(rng, shape, "f32", -4, 4)
    x2, out = x.copy(), np.full(shape, np.nan, np.float32)
    _, block, one = row_ops.row_tiles(*shape)
    grid = (-(-shape[0] // row_ops.rows_per_program(64, block, 65536)),)
    if op == "softmax":
        row_ops.softmax_kernel.kernel[grid](x2, out, device=device, LOG=False, ONE_PASS=one,
                                            BM=64, BLOCK=block, ELEMS=65536)
        check(out, ref.softmax(x), "softmax", "f32", n=shape[1])
    else:
        stats = np.zeros((shape[0], 2), np.float32)
        row_ops.norm_kernel.kernel[grid](x2, x2[0, :1], x2[0, :1], out, stats, 1e-5,
                                         device=device, RMS=False, HAS_W=False, HAS_B=False,
                                         ONE_PASS=one, BM=64, BLOCK=block,
                                         EVEN=shape[1] % block == 0, ELEMS=65536)
        check(out, ref.layernorm(x), "norm", "f32", n=shape[1])
    assert grid[0] == (2 if shape[1] == 100 else 5)


@pytest.mark.parametrize("op", ["softmax", "log_softmax", "layernorm", "rmsnorm"])
def test_rows_of_no_elements(op, device):
    # (3, 0) and (2, 3, 0): empty outputs of the input's shape, as numpy and torch give. Catches
    # the rows view's reshape(-1, 0), which numpy refuses ("cannot reshape array of size 0"):
    # layernorm and rmsnorm raised a ValueError naming no op.
    for shape in [(3, 0), (2, 3, 0)]:
        got = getattr(ops, op)(np.zeros(shape, np.float32), device=device)
        assert got.shape == shape and got.dtype == np.float32
