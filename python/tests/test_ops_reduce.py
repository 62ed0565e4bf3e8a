# tl.ops reductions and cumsum along any axis against fp64 references.
# SPDX-License-Identifier: Apache-2.0
import importlib

import numpy as np
import pytest

import tl
import tl.ops as ops
from tl.ops import _common as c
from tl.ops import reference as ref
from ops_util import DEVICES, DTYPES, DTYPES_F16, check, make

reduce_mod = importlib.import_module("tl.ops.reduce")  # tl.ops.reduce is the function

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


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n", [384, 5000])
@pytest.mark.parametrize("op", ["sum", "mean", "var", "max", "min", "argmax"])
def test_rows_in_tiles_of_their_width_and_whole_past_one_chunk(op, n, dtype, device):
    # llvm-cpu reduces rows whose width is a multiple of 128 in tiles of that width
    # (row_block_multiple) and rows past one chunk (65536 / reduce_rows elements) with fewer
    # rows a program, each whole (reduce_rows_whole: 8 rows of 5000; the chunked form
    # elsewhere). Catches: a wrong result from a tile whose width is not a power of two (16
    # rows of 384 a program) or from whole rows of 5000 in a ragged 8192-wide tile (padding
    # lanes counted into min, max, var or argmax), the last program's partial block of rows
    # (37) unreduced.
    lo, hi = {"sum": (0.5, 2.0), "mean": (0.5, 2.0), "var": (-3.0, 2.0), "max": (-3.0, -1.0),
              "min": (1.0, 3.0), "argmax": (-3.0, 3.0)}[op]
    x = make(rng, (37, n), dtype, lo, hi)
    got = ops.reduce(op, x, -1, device=device)
    if op == "argmax":
        np.testing.assert_array_equal(got, np.argmax(ref.f64(x), axis=-1))
    else:
        check(got, ref.reduce(op, x, -1), TOL[op], dtype, n=n)


@pytest.mark.parametrize("n", [384, 5000])
@pytest.mark.parametrize("op", ["sum", "mean", "var", "max", "min", "argmax"])
def test_columns_in_tiles_of_their_width(op, n, device):
    # Down the columns of 37 x n: llvm-cpu takes a width that is a multiple of 128 as the
    # tile's columns (row_block_multiple) and up to 8192 columns a program (axis_inner: 5000
    # in a ragged 8192-wide tile, its rows split into blocks whose partials are combined).
    # Catches: a wrong result from a tile whose width is not a power of two, the padding
    # columns past 5000 stored over the output's end (out is checked whole) or counted.
    lo, hi = {"sum": (0.5, 2.0), "mean": (0.5, 2.0), "var": (-3.0, 2.0), "max": (-3.0, -1.0),
              "min": (1.0, 3.0), "argmax": (-3.0, 3.0)}[op]
    x = make(rng, (37, n), "f32", lo, hi)
    got = ops.reduce(op, x, 0, device=device)
    if op == "argmax":
        np.testing.assert_array_equal(got, np.argmax(x, axis=0))
    else:
        check(got, ref.reduce(op, x, 0), TOL[op], "f32", n=37)


@pytest.mark.parametrize("op", ["sum", "mean", "var", "max", "min", "argmax", "cumsum"])
def test_reduce_over_every_element(op, device):
    # axis=None, numpy's whole-array form, on a transposed view (its ravel is a copy in C
    # order). Catches: the TypeError it raised before, the memory order flattened instead of
    # the logical one (argmax's index, cumsum's order), a result of the wrong shape.
    x = make(rng, (37, 50), "f32", 0.5, 2.0).T
    got = ops.cumsum(x, None, device=device) if op == "cumsum" else \
        ops.reduce(op, x, None, device=device)
    if op == "argmax":
        assert got.shape == () and int(got) == int(np.argmax(x))
        return
    want = ref.cumsum(x.ravel(), 0) if op == "cumsum" else ref.reduce(op, x.ravel(), 0)
    assert got.shape == np.shape(want)
    check(got, want, "scan_sum" if op == "cumsum" else TOL[op], "f32", n=x.size)


@pytest.mark.parametrize("dot_mean,row_loop", [(False, False), (True, False), (False, True)])
@pytest.mark.parametrize("n", [64, 1000, 1024])
def test_var_rows_full_and_ragged_blocks(n, dot_mean, row_loop, device):
    # Rows of n along the last axis in one block of BN = pow2(n): n = 64 and 1024 fill it (FULL:
    # no mask), n = 1000 leaves 24 padding lanes, which must stay out of the squares. Values
    # around 11 make a padding lane's (0 - mean)^2 = 121 a large error. Catches FULL taken for
    # a ragged block (var about 2.9 too large at n = 1000), a mask dropped or misplaced. With
    # the mean's sums as a dot (DOT_MEAN, the tnpu's choice) on every device: a row's sum taken
    # from another row, or the padding lanes' loads not zero in the dot. One row at a time
    # (ROW_LOOP, llvm-cpu's choice) on every device: a row's squares around another row's mean,
    # the mask dropped there, a row of the ragged last program (rows 64-69) lost. (Its stores
    # past row 69 going past the output: LlvmCpu.FusedStoresOfUnitTilesPastTheEndWriteNothing.)
    from tl.ops import _common
    x = make(rng, (70, n), "f32", 10.0, 12.0)
    with _common.tuning_override(var_mean_dot=dot_mean, var_row_loop=row_loop):
        got = ops.var(x, device=device)
    check(got, ref.reduce("var", x, -1), "reduce_var", "f32", n=n)


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


@pytest.mark.parametrize("axis", [0, -1])
def test_argmax_first_nan_in_a_later_chunk(axis, device):
    # NaN is the largest value (numpy's and torch's argmax): a chunk after the first whose
    # maximum is NaN wins, and no chunk after it. Catches a later chunk taken only on m > r
    # (false for NaN: every device gave the first chunk's index; the H200 ran the test of the
    # rows in one chunk through this loop), and a later NaN winning over the first.
    x = make(rng, (6, 5000), "f32", -1, 1)
    x[:, 100] = 2.0
    x[1, [3000, 4900]] = np.nan
    x[2, [4999, 4000]] = [np.nan, 9.0]
    x[3, [0, 2500]] = np.nan
    x = x if axis == -1 else np.ascontiguousarray(x.T)
    got = ops.argmax(x, axis, device=device)
    np.testing.assert_array_equal(got, np.argmax(x, axis))


def test_argmax_rows_in_one_chunk(device):
    # Rows that fit one chunk (llvm-cpu: 16 columns a step into 4 running maxima taking turns,
    # each lane its own, then the maxima and the lanes combined). Catches: the smaller lane
    # instead of the smaller column (row 1), a later equal value in the same lane winning
    # (row 0), the later running maximum winning a tie (row 6: columns 21 and 69 are lane 5 of
    # the second and the first), a NaN not the largest or not the first one (row 2), the index
    # of a padding -inf (rows 3, 4), -0.0 and +0.0 not equal (row 5), and any lane lost (the
    # random rows).
    x = make(rng, (40, 1000), "f32", -1, 1)
    x[0, [5, 21]] = 2.0
    x[1, [17, 3]] = 2.0
    x[2, [900, 40]] = np.nan
    x[2, 10] = 5.0
    x[3] = -np.inf
    x[4, 999] = np.inf
    x[5] = -1.0
    x[5, [9, 2]] = [0.0, -0.0]
    x[6, [69, 21]] = 2.0
    got = ops.argmax(x, -1, device=device)
    np.testing.assert_array_equal(got, x.argmax(-1))
    assert got[:7].tolist() == [5, 3, 40, 0, 999, 2, 21]


@pytest.mark.parametrize("shape, axis", [((50000, 2), 0), ((2, 20000, 3), 1)])
def test_sum_down_long_columns_within_the_f32_contract(shape, axis, device):
    # Tens of thousands of values near 11 down an axis that is not the last: the tnpu's column
    # fold adds a chunk's rows in one chain, which came to 2.5e-6 normwise on npusim (the
    # contract: 1e-6); its halves are now added pairwise first. Catches any device summing a
    # long column as one chain of f32 additions.
    x = make(rng, shape, "f32", 10.0, 12.0)
    check(ops.sum(x, axis, device=device), ref.reduce("sum", x, axis), "reduce_sum", "f32",
          n=shape[axis])


def test_var_correction(device):
    # Catches: correction (Bessel's n - 1) ignored.
    x = make(rng, (4, 50), "f32", 0, 1)
    check(ops.var(x, correction=1, device=device), ref.reduce("var", x, -1, correction=1),
          "reduce_var", "f32", n=50)


@pytest.mark.parametrize("op", ["sum", "mean", "var", "max", "min"])
@pytest.mark.parametrize("shape,axis,split,dtype", [((1009, 70), 0, 7, "f32"),
                                                    ((3, 431, 300), 1, 3, "bf16"),
                                                    ((9001, 1), 0, 3, "f32")])
def test_reduce_split_rows(op, shape, axis, split, dtype, device):
    # The two-stage reduction along a middle axis (row blocks, then their partials combined).
    # Catches: a block's rows dropped or counted twice (the sum of positives off by a block's
    # share), rows past n loaded as 0 into max of negatives / min of positives (1009, 431 and
    # 9001 rows are prime: the last block is ragged), mean scaled per block instead of by 1/n,
    # var's second pass around a block's mean instead of the whole mean, columns past the
    # inner extent (70, 300, 1: ragged against the column block) written or mixed in.
    lo, hi = {"sum": (0.5, 2.0), "mean": (0.5, 2.0), "var": (-3.0, 2.0), "max": (-3.0, -1.0),
              "min": (1.0, 3.0)}[op]
    x = make(rng, shape, dtype, lo, hi)
    n = shape[axis]
    x3, _ = c.axis_view(x, axis, op)
    bn, bi = reduce_mod.axis_tiles(n, x3.shape[2], c.tuned("axis_inner", device))
    blocks, _ = reduce_mod.split_choice(*x3.shape, bn, bi, device, split)
    assert blocks > 1, "the shape must take the split path"
    got = ops.reduce(op, x, axis, split=split, device=device)
    check(got, ref.reduce(op, x, axis), TOL[op], dtype, n=n)


@pytest.mark.parametrize("dtype", ["f32", "bf16"])
@pytest.mark.parametrize("op", ["sum", "mean", "max", "min"])
def test_reduce_columns_wide(op, dtype, device):
    # Column reductions at wide tiles on every device (on cpu 1024 columns, 16-row chunks, the
    # rows split across programs; llvm-cpu adds each chunk's rows to the running sums in one
    # lane loop). 1001 rows are not a multiple of a chunk (the last chunk padded with the op's
    # neutral value), 1030 columns leave a ragged column block of 6 (not a vector). Catches: a
    # chunk's rows dropped or counted twice, padding rows counted (0 into max of negatives,
    # into min of positives), the ragged columns written from the wrong lanes.
    lo, hi = {"sum": (0.5, 2.0), "mean": (0.5, 2.0), "max": (-3.0, -1.0),
              "min": (1.0, 3.0)}[op]
    x = make(rng, (1001, 1030), dtype, lo, hi)
    got = ops.reduce(op, x, 0, device=device)
    check(got, ref.reduce(op, x, 0), TOL[op], dtype, n=1001)


@pytest.mark.parametrize("split", [2, 5, 40])
def test_argmax_split_rows(split, device):
    # Catches: a later block's equal maximum winning over the first (rows 100 and 4500 tie),
    # block-relative row indices, the combine picking the last block of a tie, -inf padding
    # rows (5003 is prime) winning a column of -inf.
    x = make(rng, (5003, 9), "f32", -1, 1)
    x[100, :] = 2.0
    x[4500, :] = 2.0
    x[4800, 2] = 3.0
    x[:, 7] = -np.inf
    x[[3000, 4000], 5] = np.nan  # the first NaN wins (a later block's only on its NaN)
    got = ops.reduce("argmax", x, 0, split=split, device=device)
    np.testing.assert_array_equal(got, x.argmax(0))
    assert got.dtype == np.int32


def test_reduce_split_matches_unsplit_var_correction(device):
    # Catches: correction ignored on the split path; the split's var against the one-program
    # var (both against fp64).
    x = make(rng, (700, 33), "f32", 0, 1)
    want = ref.reduce("var", x, 0, correction=1)
    for split in (1, 6):
        check(ops.var(x, 0, correction=1, device=device) if split == 1 else
              ops.reduce("var", x, 0, correction=1, split=split, device=device),
              want, "reduce_var", "f32", n=700)


def test_reduce_split_bad_argument(device):
    # Catches: a bad split accepted silently (0 blocks would leave the output unwritten).
    with pytest.raises(c.OpError, match="argument 'split'"):
        ops.reduce("sum", np.ones((100, 4), np.float32), 0, split=0, device=device)


@pytest.mark.parametrize("dtype", DTYPES_F16)
@pytest.mark.parametrize("shape,axis", [((3, 5000), -1), ((4, 77, 5), 1), ((21, 300), -1),
                                        ((5, 384), -1)])
def test_cumsum(shape, axis, dtype, device):
    # Catches: the carry between chunks dropped (5000 > one chunk), an exclusive scan, the
    # wrong axis; a running value carried from one row into the next (21 rows); a wrong scan
    # of a tile whose width is not a power of two (384: its own width on llvm-cpu).
    x = make(rng, shape, dtype, 0.0, 1.0)
    check(ops.cumsum(x, axis, device=device), ref.cumsum(x, axis), "scan_sum", dtype, n=shape[axis])


@pytest.mark.parametrize("rows,n,bi,bn", [(70, 300, 64, 512), (3, 5000, 8, 1024),
                                          (9, 37, 8, 64)])
def test_cumsum_rows(rows, n, bi, bn, device):
    # cumsum_kernel's ROWS (the tnpu's choice, TUNING["scan_rows"]) run here through the
    # kernel itself. Catches: a row's running value carried into the next row (one program
    # scans several), the carry between chunks dropped (5000 > 1024), the ragged last block
    # of rows (70 = 64 + 6) or chunk stored past the end (NaN-filled out compared whole), ONE
    # taken where n needs a loop.
    x = make(rng, (rows, n), "f32", 0.0, 1.0)
    out = np.full_like(x, np.nan)
    c.launch(reduce_mod.cumsum_kernel, (1, -(-rows // bi)), x.reshape(1, rows, n),
             out.reshape(1, rows, n), device=device, BN=bn, BI=bi, ROWS=True, ONE=n <= bn)
    check(out, ref.cumsum(x, -1), "scan_sum", "f32", n=n)


@pytest.mark.parametrize("dtype", DTYPES_F16)
@pytest.mark.parametrize("rows,n,bi,programs", [(70, 300, 8, 4), (5, 1000, 2, 2),
                                                (9, 128, 4, 1)])
def test_cumsum_matrix(rows, n, bi, programs, dtype, device):
    # cumsum_kernel's MX (the tnpu's choice, TUNING["scan_matrix"]) run here through the
    # kernel itself: 128-element chunks times a triangle of ones plus the sums of the chunks
    # before them. Small integers, so every order sums exactly and the result is compared
    # bitwise (the scan_sum bound of bf16 / f16 at n = 1000 would let a wrong carry through).
    # Catches: the triangle transposed (suffix sums), the carry dropped (every chunk after the
    # first off by the sums before it) or inclusive (its own sum twice), a row's carry taken
    # from another row, the loop over row blocks skipping or repeating blocks (70 rows = 9
    # blocks of 8 over 4 programs, the last ragged; garbage where nothing is stored), the
    # padding past n (300 in a 512-wide block) mis-summed, one chunk (n = 128).
    def arr(a):
        return tl.bf16.array(a) if dtype == "bf16" else a.astype(
            {"f32": np.float32, "f16": np.float16}[dtype])
    v = rng.integers(0, 4, (rows, n)).astype(np.float64)
    x, want = arr(v), arr(np.cumsum(v, axis=1))
    out = c.empty((rows, n), x)
    out[...] = arr(np.full((rows, n), 7.0))  # garbage where nothing is stored
    c.launch(reduce_mod.cumsum_kernel, (1, programs), x.reshape(1, rows, n),
             out.reshape(1, rows, n), device=device, BN=c.pow2(n, 128), BI=bi, ROWS=True,
             MX=True)
    np.testing.assert_array_equal(out.view(np.uint8), want.view(np.uint8))


def test_cumsum_matrix_nonfinite(device, monkeypatch):
    # The matrix form multiplies every element by the triangle's zeros (inf x 0 = NaN), so
    # cumsum takes it only where every running sum is finite (scan_matrix_ok), forced on every
    # device here. Catches: an inf, a NaN or sums that overflow sent to the matrix form (the
    # running sums before the inf / NaN turn NaN), finite inputs kept off it.
    monkeypatch.setitem(c.TUNING, "scan_matrix", {"default": 4096})
    monkeypatch.setitem(c.TUNING, "scan_rows", {"default": 8})
    x = make(rng, (6, 300), "f32", 0.0, 1.0)
    x[1, 200], x[2, 10], x[3, 150], x[4, 250] = np.inf, -np.inf, np.nan, np.inf
    x[4, 260] = -np.inf  # inf - inf: NaN from there on
    with np.errstate(invalid="ignore"):
        want = np.cumsum(x, axis=1, dtype=np.float32)
    got = ops.cumsum(x, device=device)
    np.testing.assert_array_equal(np.isfinite(got), np.isfinite(want))
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    assert not reduce_mod.scan_matrix_ok(x.reshape(1, 6, 300), 300)
    big = np.full((1, 2, 1000), 3e36, np.float32)  # finite, but the running sums overflow
    assert not reduce_mod.scan_matrix_ok(big, 1000)
    assert reduce_mod.scan_matrix_ok(x[5:].reshape(1, 1, 300), 300)
    assert reduce_mod.scan_matrix_ok(tl.bf16.array(x[5:]).reshape(1, 1, 300), 300)


@pytest.mark.parametrize("bi,bn", [(8, 1024), (12, 1024), (16, 1024), (4, 1024), (12, 20)])
def test_cumsum_rows_within_the_scan_contract(bi, bn, device):
    # A float scan sum in the default order may associate in any order within ir.h's bound:
    # nvptx scans a row in parallel chunks, llvm-cpu 16 columns at a time in log steps, 4 rows
    # together; the interpreter and the tnpu sum in ascending order, checked bitwise against
    # numpy's serial f32 running sum, on values whose sums depend on the order (magnitudes
    # 2^-20 to 2^20). Catches: a row's chain fed another row's elements or carry, the rows past
    # the last whole group (BI 12 and 4) mis-scanned, the columns past the last whole vector
    # (rows of 20), a vector's carry not added. One chunk a row (ONE). (The exact order:
    # test_scan_exact_order.)
    rows, n = 21, min(1000, bn)
    x = (rng.standard_normal((rows, n)) * 2.0 ** rng.integers(-20, 21, (rows, n))).astype(
        np.float32)
    out = np.full_like(x, np.nan)

    def scan():
        c.launch(reduce_mod.cumsum_kernel, (1, -(-rows // bi)), x.reshape(1, rows, n),
                 out.reshape(1, rows, n), device=device, BN=bn, BI=bi, ROWS=True, ONE=True)
    if device == "cuda" and (bi & (bi - 1) or bn & (bn - 1)):
        # nvptx takes tiles whose dimensions are powers of two: a located compile error, not
        # a wrong scan
        with pytest.raises(tl.CompileError, match="dimensions must be powers of two"):
            scan()
        return
    scan()
    if device in ("cuda", "cpu"):
        within_scan_bound(out, x, 1)
        return
    np.testing.assert_array_equal(out, np.cumsum(x, axis=1, dtype=np.float32))


def within_scan_bound(got, x, axis):
    """ir.h's bound for a float scan in any order: the k-th running sum within
    (k - 1) u sum_{i <= k} |x_i| of the exact one (u: x's unit roundoff). The reference sums in
    long double, so that an f64 scan is not measured against sums as rounded as its own."""
    d = x.astype(np.longdouble)
    k = np.arange(x.shape[axis]).reshape([-1 if a == axis else 1 for a in range(x.ndim)])
    bound = k * np.finfo(x.dtype).eps / 2 * np.cumsum(np.abs(d), axis)
    err = np.abs(got.astype(np.longdouble) - np.cumsum(d, axis))
    assert (err <= bound).all(), f"worst error / bound {np.max(err / np.maximum(bound, 1e-300))}"


@tl.kernel
def scan_tile_kernel(x: tl.tensor, y: tl.tensor, R: tl.constexpr, N: tl.constexpr,
                     AXIS: tl.constexpr, KIND: tl.constexpr, EXACT: tl.constexpr):
    v = tl.load(x + (0, 0), (R, N))
    if KIND == "sum":
        s = tl.cumsum(v, AXIS, exact_order=EXACT)
    elif KIND == "max":
        s = tl.cummax(v, AXIS)
    else:
        s = tl.cummin(v, AXIS)
    tl.store(y + (0, 0), s)


@pytest.mark.parametrize("dtype", ["f32", "f64", "i32"])
@pytest.mark.parametrize("kind", ["sum", "max", "min"])
@pytest.mark.parametrize("r,n,axis", [(1, 1024, 1), (64, 32, 0), (16, 32, 1), (1, 64, 1),
                                      (1, 16, 1), (256, 4, 1)])
def test_scan_tile_every_kind(r, n, axis, kind, dtype, device):
    # One tile scanned by tl.cumsum / cummax / cummin. nvptx splits each line over threads
    # (128 threads: a row of 1024 in chunks of 8 over 4 warps; 64 rows down 32 columns, 4
    # chunks a column; 64 and 16 elements one a thread, threads past them idle; 256 lines of 4
    # one a thread). Catches: a chunk missing the totals before it (a warp's or a lane's), a
    # total added twice, a line given another line's totals, an idle thread's store, a wrong
    # 64-bit shuffle. Integer sums, max and min exact; float sums within ir.h's bound.
    np_dtype = {"f32": np.float32, "f64": np.float64, "i32": np.int32}[dtype]
    if dtype == "i32":
        x = rng.integers(-1000, 1000, (r, n)).astype(np_dtype)
    else:
        x = rng.standard_normal((r, n)).astype(np_dtype)
    y = np.zeros_like(x)

    def scan():
        scan_tile_kernel[(1,)](x, y, R=r, N=n, AXIS=axis, KIND=kind, EXACT=False, device=device)
    if device == "npusim" and dtype == "f64":  # the tnpu's vector unit has no f64: a located
        with pytest.raises(tl.CompileError, match="tiles of f64 are not supported"):  # error
            scan()
        return
    scan()
    if kind == "sum" and dtype != "i32":
        within_scan_bound(y, x, axis)
    else:
        want = {"sum": np.cumsum, "max": np.maximum.accumulate,
                "min": np.minimum.accumulate}[kind](x, axis=axis).astype(np_dtype)
        np.testing.assert_array_equal(y, want)


@pytest.mark.parametrize("r,n", [(16, 1024), (12, 20), (4, 1024)])
def test_scan_exact_order(r, n, device):
    # exact_order=True: the ascending chain on every device, bit for bit against numpy's
    # serial f32 sums of values whose sums depend on the order (magnitudes 2^-20 to 2^20).
    # llvm-cpu takes 8 rows together in transposed 8 x 8 blocks (12 rows: a block and 4 scalar
    # chains; 20 columns: 2 blocks and 4), nvptx one thread a row. Catches a backend scanning
    # such a line in another order, a wrong transpose (a row fed another row's elements), the
    # rows or columns past the last whole block mis-scanned.
    x = (rng.standard_normal((r, n)) * 2.0 ** rng.integers(-20, 21, (r, n))).astype(np.float32)
    y = np.zeros_like(x)

    def scan():
        scan_tile_kernel[(1,)](x, y, R=r, N=n, AXIS=1, KIND="sum", EXACT=True, device=device)
    if device == "cuda" and (r & (r - 1) or n & (n - 1)):
        with pytest.raises(tl.CompileError, match="dimensions must be powers of two"):
            scan()
        return
    scan()
    np.testing.assert_array_equal(y, np.cumsum(x, axis=1, dtype=np.float32))


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


@pytest.mark.parametrize("n,k", [(4099, 5), (10000, 7), (70000, 3), (9000, 2048)])
def test_topk_long_rows(n, k, device):
    # Rows past one tile go in rounds of 4096-wide segments. Catches: a candidate's index
    # within its segment instead of the row (not gathered back in later rounds), the ragged
    # last segment's padding chosen, ties across segments not to the lowest index (equal
    # values planted in segments 0, 1 and the last), a round's candidates cut short.
    if device == "npusim" and n * k > 200000:
        pytest.skip("a long simulation")
    rows = 3
    x = rng.uniform(-1, 1, (rows, n)).astype(np.float32)
    mid = 4096 + (n - 4096) // 3  # in the second segment
    x[1, [n - 1, mid, 7]] = 2.0  # a tie at the top, across segments
    x[2, :] = -np.inf
    x[2, n // 2] = 0.0
    values, indices = ops.topk(x, k, device=device)
    want_idx = np.argsort(-x.astype(np.float64), axis=1, kind="stable")[:, :k]
    np.testing.assert_array_equal(indices, want_idx)
    np.testing.assert_array_equal(values, np.take_along_axis(x, want_idx, 1))
    assert indices[1, :3].tolist() == [7, mid, n - 1]


def test_topk_inf_and_nan(device):
    # Catches: -inf taken twice (the same index) once the finite values are gone, NaN not
    # ranked first (torch's order), padding lanes chosen.
    x = np.array([[1.0, -np.inf, -np.inf, 2.0, -np.inf],
                  [np.nan, 0.0, np.nan, 3.0, -1.0]], np.float32)
    values, indices = ops.topk(x, 5, device=device)
    assert indices.tolist() == [[3, 0, 1, 2, 4], [0, 2, 3, 1, 4]]
    np.testing.assert_array_equal(values[0], [2.0, 1.0, -np.inf, -np.inf, -np.inf])
    assert np.isnan(values[1, :2]).all() and values[1, 2:].tolist() == [3.0, 0.0, -1.0]


def tl_array(a, dtype):
    import tl
    return tl.bf16.array(a) if dtype == "bf16" else a.astype(np.float32)


@pytest.mark.parametrize("shape,seed", [((1030,), 122), ((1000,), 122), ((4_000_000,), 2)])
def test_cumsum_long_rows_within_the_f32_contract(shape, seed, device):
    # Running sums of values in [0.5, 2): each prefix well-conditioned, so the kit's 1e-6
    # applies. Catches a serial chain of additions as long as the row: in chunks of 1024 these
    # draws (the worst of 200 rows) came to 1.11e-6 and 1.12e-6 normwise, and the carry over
    # 4M elements' chunks to 1.40e-6, before the rows were scanned in segments of 512 and the
    # carry kept with its rounding error (reduce.row_scan, two_sum): now at most 4.2e-7.
    x = np.random.default_rng(seed).uniform(0.5, 2.0, shape).astype(np.float32)
    check(ops.cumsum(x, device=device), ref.cumsum(x, -1), "scan_sum", "f32", n=shape[-1])


@pytest.mark.parametrize("form", ["device's", "4 rows (nvptx's)"])
def test_cumsum_infinities_as_numpy(form, device):
    # inf and -inf in rows scanned in segments and chunks (1000, 1030 and 3000 columns) and
    # down a long column: every prefix sum inf, -inf or NaN where numpy's is. Catches a
    # segment's start taken as (sum through it) - (its sum), inf - inf = NaN where the prefix
    # is inf, and a carry's rounding error computed from an infinite sum (NaN). The second
    # form takes cumsum_kernel's ROWS with 4 rows a program on every device.
    over = {"scan_rows": 4, "scan_matrix": 0} if form.startswith("4") else {}
    for n in (1000, 1030, 3000):
        x = np.ones((3, n), np.float32)
        x[0, 2], x[1, 700], x[2, [5, 900]] = np.inf, -np.inf, [np.inf, -np.inf]
        with c.tuning_override(**over):
            got = ops.cumsum(x, device=device)
        np.testing.assert_array_equal(got, np.cumsum(x.astype(np.float64), 1).astype(np.float32))
    y = np.ones((2500, 3), np.float32)
    y[5, 1] = np.inf
    np.testing.assert_array_equal(ops.cumsum(y, 0, device=device),
                                  np.cumsum(y, 0, dtype=np.float64).astype(np.float32))
