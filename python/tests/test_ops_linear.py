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


# ---- packed GEMM (TUNING["gemm_pack"]) -------------------------------------------------------

def packed(monkeypatch, tiles=(32, 32, 16)):
    """gemm takes the packed path from M = N = K = 1 on every device, with small tiles so that
    small shapes have several ragged blocks along each dimension."""
    from tl.ops import _common
    monkeypatch.setitem(_common.TUNING, "gemm_pack", {"default": (1,) + tiles})


def test_tuning_by_target_and_vendor(device, monkeypatch):
    # TUNING's "target@vendor" key (gemm_pack's "llvm-cpu@intel") wins over the target's on a
    # device of that vendor only. Catches the vendor key ignored, taken on another vendor's
    # device, or matched case-sensitively against the HAL's "Intel".
    from tl.ops import _common
    t = _common.target(device)
    vendor = str(_common.runtime_info(device).get("vendor", "")).lower()
    monkeypatch.setitem(_common.TUNING, "gemm_pack",
                        {"default": "default", t: "target", f"{t}@{vendor}": "vendor",
                         f"{t}@not-{vendor}": "other"})
    assert _common.tuned("gemm_pack", device) == "vendor"
    monkeypatch.setitem(_common.TUNING, "gemm_pack",
                        {"default": "default", t: "target", f"{t}@not-{vendor}": "other"})
    assert _common.tuned("gemm_pack", device) == "target"


@pytest.mark.parametrize("dtype", DTYPES + ["f16"])
@pytest.mark.parametrize("mkn", [(70, 45, 33), (1, 130, 5), (64, 32, 96)])
def test_gemm_packed(mkn, dtype, device, monkeypatch):
    # Catches: the packed blocks' padding past M, N or K read as garbage instead of zeros (70,
    # 45, 33 against 32 x 32 x 16 blocks), a's row panels or b's column panels numbered in the
    # other order (block r panels + c against c panels + r: wrong wherever there are two
    # panels and two k blocks), the last ragged output block stored past the edge, whole
    # blocks only (64 x 32 x 96).
    packed(monkeypatch)
    m, k, n = mkn
    a, b = make(rng, (m, k), dtype), make(rng, (k, n), dtype)
    dot_check(ops.gemm(a, b, device=device), a, b, dtype)


@pytest.mark.parametrize("act", ["relu", "gelu_tanh", "silu"])
def test_gemm_packed_epilogue_transposed_batched(act, device, monkeypatch):
    # Catches: the packed path dropping alpha, the bias (or adding it per row), the activation
    # or the residual; a transposed a or b (strides swapped) packed as if contiguous; a shared
    # rank-2 b packed for batch 0 only or a batch index ignored (every entry gets batch 0's).
    packed(monkeypatch)
    a = make(rng, (3, 45, 70), "f32").transpose(0, 2, 1)  # (3, 70, 45), transposed entries
    b = make(rng, (33, 45), "f32").T
    bias, res = make(rng, (33,), "f32"), make(rng, (3, 70, 33), "f32")
    got = ops.gemm(a, b, bias=bias, activation=act, residual=res, alpha=0.5, device=device)
    dot_check(got, a, b, "f32", bias=bias, activation_=act, residual=res, alpha=0.5)
    b3 = make(rng, (3, 45, 17), "f32")
    dot_check(ops.gemm(a[1], b3, device=device), a[1], b3, "f32")


def test_gemm_packed_default_tiles(device):
    # Catches: the device's own packed configuration (llvm-cpu: from 512, 256 x 32 x 64
    # blocks) wrong at a ragged size just past its threshold (three row panels, the last of one
    # row; a last column panel of 18 columns; a last k block of 17 columns).
    from tl.ops import _common
    pack = _common.tuned("gemm_pack", device)
    if pack is None:
        pytest.skip("this device's gemm does not pack")
    m, k, n = pack[0] + 1, pack[0] + 17, pack[0] + 18
    a, b = make(rng, (m, k), "f32"), make(rng, (k, n), "f32")
    dot_check(ops.gemm(a, b, device=device), a, b, "f32")


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("k", [1000, 5000])
def test_gemv(dtype, device, k):
    # Catches: a row's partial K block (K = 1000 > one block of 512; 5000 > one block of 4096,
    # llvm-cpu's, and of 1024, the tnpu's), the one-chunk form's (K = 1000 fits 1024 and 4096)
    # reading past its chunk, the bias per column.
    a, x, bias = make(rng, (77, k), dtype), make(rng, (k,), dtype), make(rng, (77,), dtype)
    want = ref.gemv(a, x, bias)
    check(ops.gemv(a, x, bias=bias, device=device), want, "gemm", dtype, n=k,
          ref_abs=np.abs(ref.f64(a)) @ np.abs(ref.f64(x)) + np.abs(ref.f64(bias)))


@pytest.mark.parametrize("shape", [(2, 1000), (3, 5000), (200, 300)])
def test_gemv_rows_split_between_units(shape, device):
    # gemv_kernel's MX (the tnpu's gemv_matrix_rows): a program's first rows as a dot, the
    # rest as products and row sums, on every device. 2 rows: one each; 200 rows: two programs,
    # the second ragged. Catches: the vector rows counted from the program's start instead of
    # past the dot's (rows written twice, others never), the split's bias or alpha applied to
    # one half only, the dot's column of x read past K.
    from tl.ops import _common
    a, x, bias = (make(rng, shape, "f32"), make(rng, shape[1:], "f32"),
                  make(rng, shape[:1], "f32"))
    with _common.tuning_override(gemv_matrix_rows=0.5):
        got = ops.gemv(a, x, bias=bias, alpha=-0.5, device=device)
    want = -0.5 * (ref.f64(a) @ ref.f64(x)) + ref.f64(bias)
    check(got, want, "gemm", "f32", n=shape[1],
          ref_abs=0.5 * np.abs(ref.f64(a)) @ np.abs(ref.f64(x)) + np.abs(ref.f64(bias)))


@pytest.mark.parametrize("dtype", DTYPES)
def test_transpose(dtype, device):
    # Catches: a square-tile assumption (70 x 45), the batch index, bits changed (exact).
    x = make(rng, (2, 70, 45), dtype)
    check(ops.transpose(x, device=device), ref.transpose(x), "gather", dtype)


@pytest.mark.parametrize("dtype", ["f32", "bf16"])
@pytest.mark.parametrize("shape", [(2, 300, 1100), (2, 100, 384)])
def test_transpose_large_blocks(shape, dtype, device):
    # The device's blocks (TUNING["transpose_block"]: 256 x 512 on the tnpu) ragged on both
    # axes: 300 = 256 + 44 rows, 1100 = 2 x 512 + 76 columns, two batch entries; 384 columns
    # (a multiple of 128: whole rows a block on llvm-cpu, row_block_multiple). Catches: a
    # block's padding stored past the output's edge or over the next batch entry, the ragged
    # last block of either axis dropped, columns past a power-of-two block left unwritten or
    # misplaced, bits changed (exact).
    x = make(rng, shape, dtype)
    got = ops.transpose(x, device=device)
    want = np.swapaxes(x, 1, 2)
    if dtype == "bf16":
        got, want = got.view(np.uint16), want.view(np.uint16)
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("cols", [16, 32, 64, 80])
def test_transpose_swizzled(cols, device, monkeypatch):
    # transpose_kernel's SW (TUNING["transpose_swizzle"], the tnpu's choice) forced on every
    # device with 16 x 16 blocks: program (i, j) takes column block (i + j) mod the blocks
    # where they are a power of two (1, 2, 4 here; 5 keeps the plain order), over 7 row blocks
    # (100 rows, ragged) and two batch entries. Catches: a rotation that is no permutation (a
    # column block written twice and another never: garbage left in the output), the rotated
    # block's rows or columns taken from the unrotated one, SW used with 5 blocks. Exact.
    from tl.ops import _common
    monkeypatch.setitem(_common.TUNING, "transpose_block", {"default": (16, 16)})
    monkeypatch.setitem(_common.TUNING, "transpose_swizzle", {"default": True})
    x = make(rng, (2, 100, cols), "f32")
    np.testing.assert_array_equal(ops.transpose(x, device=device), np.swapaxes(x, 1, 2))


@pytest.mark.parametrize("shape,dtype", [((2, 2048, 2048), "f32"), ((4096, 2056), "f32"),
                                         ((2050, 4096), "f32"), ((4201, 1000), "f32"),
                                         ((8257, 1016), "bf16"), ((8200, 1024), "f16")])
def test_transpose_streamed(shape, dtype, device):
    # 32 MiB or more of f32: on cpu each block goes from x to the output (cpu-direct-transposes),
    # its rows of whole 64-byte lines written with non-temporal stores (session 18; AVX-512).
    # Output rows that are not whole lines (2050 x 4096: 8200-byte rows; 4201 x 1000) stream
    # their lines inside each block shifted across its 16-lane pieces, their partial end lines
    # stored under masks (session 42); 1000 columns end in a 16 x 8 block. Catches: a vector
    # placed by the lane index instead of the row stride (rows of a block written over each
    # other), the batch (2 x 2048 x 2048), a line shifted by the wrong lane count or a partial
    # line's lanes lost or taken from the neighbouring block, a ragged edge (2050 and 4201
    # rows: the last block's load and store take the copies). bf16 and f16 move their stored
    # bits in 32 x 32 blocks of 16-bit pairs (1016 columns end in 32 x 16 and 32 x 8 blocks).
    # Exact, bit for bit.
    if device != "cpu":
        pytest.skip("the streaming path is llvm-cpu's (the small shapes above run everywhere)")
    x = make(rng, shape, dtype)
    got = ops.transpose(x, device=device)
    assert got.ctypes.data % 64 == 0, "tl.ops output not 64-byte aligned: no streamed stores"
    want = np.ascontiguousarray(np.swapaxes(x, -1, -2))
    np.testing.assert_array_equal(got.view(np.uint16) if dtype != "f32" else got,
                                  want.view(np.uint16) if dtype != "f32" else want)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("view", ["offset", "transposed", "batch_strided"])
def test_transpose_strided_views(view, dtype, device):
    # Strided and offset inputs. Catches: rows read a block width apart instead of the row
    # stride (an offset slice of wider rows: 200 x 300 of 205 x 333, starting at (3, 29): a
    # ragged 200 = 3 x 64 + 8 rows, 300 = 4 x 64 + 44 columns), a last dimension that is not
    # contiguous read as if it were (a transposed view), the batch stride of a non-contiguous
    # batch (every other entry). Exact.
    base = make(rng, (2, 205, 333), dtype)
    x = {"offset": base[1, 3:203, 29:329],
         "transposed": base[0].T,
         "batch_strided": make(rng, (4, 130, 77), dtype)[::2]}[view]
    got = ops.transpose(x, device=device)
    want = np.swapaxes(x, -1, -2)
    if dtype == "bf16":
        got, want = np.asarray(got).view(np.uint16), np.asarray(want).view(np.uint16)
    np.testing.assert_array_equal(got, want)


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


def conv_check(x, w, b, stride, padding, dilation, groups, dtype, device):
    """ops.conv2d with a bias and relu against the fp64 reference, within the GEMM tolerance of
    K = C/groups KH KW terms."""
    got = ops.conv2d(x, w, b, stride=stride, padding=padding, dilation=dilation, groups=groups,
                     activation="relu", device=device)
    want = ref.conv2d(x, w, b, stride, padding, "relu", dilation=dilation, groups=groups)
    ref_abs = ref.conv2d(np.abs(ref.f64(x)), np.abs(ref.f64(w)), np.abs(ref.f64(b)), stride,
                         padding, dilation=dilation, groups=groups)
    assert got.shape == want.shape
    check(got, want, "gemm", dtype, n=w.shape[1] * w.shape[2] * w.shape[3], ref_abs=ref_abs)


SHIFT_CASES = [  # (x shape, OC, groups, k, padding, dilation)
    ((1, 70, 5, 131), 66, 1, 3, 1, 1),   # 3 column blocks, odd rows, 2 channel blocks of each
    ((2, 8, 7, 70), 6, 2, 5, (4, 2), (2, 1)),  # groups, a 5 x 5 window dilated along rows
    ((1, 3, 64, 16), 4, 1, 1, 0, 1),     # 1 x 1, a block of 8 rows x 16 columns
]


@pytest.mark.parametrize("dtype", ["f32", "bf16"])
@pytest.mark.parametrize("case", SHIFT_CASES)
def test_conv2d_stride_one_blocks(case, dtype, device):
    # Stride 1 takes window-shifted block loads on llvm-cpu (conv2d_shift_kernel). Catches: a
    # column or row block's offset wrong (131 columns in blocks of 64, 5 rows in blocks of 2),
    # the channel blocks' edges (70 = 64 + 6 of each, input and output), a window position
    # other than (kh, kw) read (5 x 5, dilation 2 along rows only), the weight read at another
    # group's rows, padding read as data.
    shape, oc, g, k, padding, dilation = case
    x = make(rng, shape, dtype)
    w, b = make(rng, (oc, shape[1] // g, k, k), dtype), make(rng, (oc,), dtype)
    conv_check(x, w, b, 1, padding, dilation, g, dtype, device)


PHASE_CASES = [  # (x shape, OC, groups, (kh, kw), stride, padding, dilation)
    ((2, 8, 13, 17), 16, 1, (3, 3), 2, 1, 1),            # odd H and W: the last phase row short
    ((1, 6, 11, 70), 130, 1, (3, 3), (2, 1), (1, 0), 1),  # stride along rows only, 2 OC blocks
    ((1, 12, 33, 33), 24, 1, (7, 7), 2, 3, 1),           # padding 3: windows start in phase 1
    ((2, 16, 10, 11), 16, 4, (5, 3), (3, 2), (2, 1), (2, 1)),  # groups, dilation, stride 3
    ((1, 8, 4, 4), 8, 1, (3, 3), 4, 2, 1),               # stride past the window: phases unread
]


@pytest.mark.parametrize("dtype", ["f32", "bf16"])
@pytest.mark.parametrize("case", PHASE_CASES)
def test_conv2d_strided_phases(case, dtype, device):
    # Strides above 1 with C/groups >= 4 take the input's stride phases on llvm-cpu
    # (conv2d_phases_kernel, then conv2d_shift_kernel). Catches: a window position reading the
    # wrong phase (a and b swapped: rows 2 and columns 1 apart), its shift within the phase off
    # by one (padding 3 over stride 2 starts windows in phase 1 at row -2), an odd edge's phase
    # row filled with the next plane's data instead of zeros, a stride taken along both axes.
    shape, oc, g, (kh, kw), stride, padding, dilation = case
    x = make(rng, shape, dtype)
    w, b = make(rng, (oc, shape[1] // g, kh, kw), dtype), make(rng, (oc,), dtype)
    conv_check(x, w, b, stride, padding, dilation, g, dtype, device)


# ---- split-K GEMM ----------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("mnk,split", [((3, 70, 5000), 7), ((5, 33, 1000), 3), ((1, 1, 700), 9)])
def test_gemm_split_k(mnk, split, dtype, device):
    # Catches: a slice's bounds off (K = 5000 over 7 slices of 736 columns, the last one 584;
    # K = 1000 over 3; 700 over 9 slices of 96 or 128, some past K and empty: one must write
    # zeros, not garbage), ragged M and N edges of the partials and the reduction.
    # One output (1 x 1) is a single dot product, whose f32 contract (1e-6 normwise) holds only
    # where it is well conditioned: positive terms there (uniform [-1, 1] terms summed near 0
    # had failed it by chance, 4.8e-6, as soon as other tests drew different values).
    m, n, k = mnk
    lo = 0.1 if m * n == 1 else -1.0
    a, b = make(rng, (m, k), dtype, lo), make(rng, (k, n), dtype, lo)
    dot_check(ops.gemm(a, b, split_k=split, device=device), a, b, dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("act", ["none", "relu", "gelu", "gelu_tanh", "silu"])
def test_gemm_split_k_epilogue(act, dtype, device):
    # Catches: the epilogue applied per partial instead of once after the sum (alpha 0.5 and
    # the bias counted 4 times, relu clipping a partial), the residual added before the
    # activation, the bias per row.
    a, b = make(rng, (6, 3000), dtype), make(rng, (3000, 40), dtype)
    bias, res = make(rng, (40,), dtype), make(rng, (6, 40), dtype)
    got = ops.gemm(a, b, bias=bias, activation=act, residual=res, alpha=0.5, split_k=4,
                   device=device)
    dot_check(got, a, b, dtype, bias=bias, activation_=act, residual=res, alpha=0.5)


def test_gemm_split_k_batched(device):
    # Catches: the partial of batch entry z stored or read at another entry's slot (s batch + z
    # mixed up with z splits + s), a shared (rank-2) b, a transposed a.
    a = make(rng, (3, 1100, 4), "f32").transpose(0, 2, 1)
    b = make(rng, (1100, 50), "f32")
    bias, res = make(rng, (50,), "f32"), make(rng, (3, 4, 50), "f32")
    got = ops.gemm(a, b, bias=bias, residual=res, split_k=5, device=device)
    dot_check(got, a, b, "f32", bias=bias, residual=res)
    b3 = make(rng, (3, 1100, 50), "f32")
    dot_check(ops.gemm(a, b3, split_k=5, device=device), a, b3, "f32")


def test_gemm_split_k_counts_each_partial_once(device):
    # Catches: a partial dropped or added twice (or a K block in two slices): with a = 0, 1, ..
    # K-1 in row 0 and b all ones, every sum is an integer below 2^24, exact in f32, so the
    # output must be sum(k) = K (K - 1) / 2 exactly; losing the last slice (584 columns) or
    # doubling one changes it by thousands. Two runs give the same bits (no atomics).
    k = 5000
    a = np.stack([np.arange(k), np.ones(k), np.arange(k) % 7]).astype(np.float32)
    b = np.ones((k, 70), np.float32)
    got = ops.gemm(a, b, split_k=7, device=device)
    want = np.array([k * (k - 1) // 2, k, sum(i % 7 for i in range(k))], np.float64)
    np.testing.assert_array_equal(got, np.broadcast_to(want[:, None], (3, 70)))
    a2 = make(rng, (3, k), "f32")
    assert ops.gemm(a2, b, split_k=7, device=device).tobytes() == \
        ops.gemm(a2, b, split_k=7, device=device).tobytes()


def test_gemm_split_k_automatic(device, monkeypatch):
    # Catches: the automatic choice not taken for a small output with a long K (M = 3, N = 70,
    # K = 5000: two 64 x 64 tiles) where the device's TUNING turns it on, or taken for a large
    # output or a short K, or where TUNING turns it off; split_k=None must give the bits of the
    # split it chose.
    from tl.ops import _common, linear
    assert linear.splitk_choice(1, 3, 70, 5000) == 9
    assert linear.splitk_choice(1, 3, 70, 5000, auto=False) == 1
    assert linear.splitk_choice(1, 512, 512, 5000) == 1
    assert linear.splitk_choice(1, 3, 70, 1000) == 1
    a, b = make(rng, (3, 5000), "f32"), make(rng, (5000, 70), "f32")
    split9 = ops.gemm(a, b, split_k=9, device=device)
    unsplit = ops.gemm(a, b, split_k=1, device=device)
    assert split9.tobytes() != unsplit.tobytes()  # else the bits below could not tell
    monkeypatch.setitem(_common.TUNING, "splitk_auto", {"default": True})
    got = ops.gemm(a, b, device=device)
    assert got.tobytes() == split9.tobytes()
    dot_check(got, a, b, "f32")
    monkeypatch.setitem(_common.TUNING, "splitk_auto", {"default": False})
    assert ops.gemm(a, b, device=device).tobytes() == unsplit.tobytes()


# ---- conv2d groups and dilation --------------------------------------------------------------

CONV_CASES = [  # (C, OC, groups, k, stride, padding, dilation)
    (4, 6, 2, 3, 1, 1, 1),          # two groups
    (5, 10, 5, 3, 1, 1, 1),         # depthwise (groups = C), channel multiplier 2
    (3, 5, 1, 3, 1, 2, 2),          # dilation 2, groups 1
    (6, 69, 3, 3, 2, (1, 2), (2, 3)),  # groups 3 of 23 outputs (more than 16), per-axis values
]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("case", CONV_CASES)
def test_conv2d_groups_dilation(case, dtype, device):
    # Catches: a group reading another group's input channels or weights (g = pid % groups
    # swapped for pid // N), a block of output channels running into the next group's (23
    # outputs per group, blocks of 32), the dilation applied to the stride instead of the
    # window offset, per-axis dilation swapped, the bias of group 0 used for every group.
    ch, oc, g, k, stride, padding, dilation = case
    x = make(rng, (2, ch, 17, 13), dtype)
    w, b = make(rng, (oc, ch // g, k, k), dtype), make(rng, (oc,), dtype)
    conv_check(x, w, b, stride, padding, dilation, g, dtype, device)


@pytest.mark.parametrize("case", CONV_CASES)
def test_conv2d_reference_is_torchs(case, device):
    # Catches: the fp64 reference itself off torch's semantics (weight (OC, C/groups, KH, KW),
    # output channel o in group o // (OC/groups), dilation spacing the window's taps): torch's
    # conv2d in float64 on the same inputs, and tl.ops against it.
    torch = pytest.importorskip("torch")
    ch, oc, g, k, stride, padding, dilation = case
    x, w = rng.standard_normal((2, ch, 17, 13)), rng.standard_normal((oc, ch // g, k, k))
    b = rng.standard_normal(oc)
    want = torch.nn.functional.conv2d(torch.from_numpy(x), torch.from_numpy(w),
                                      torch.from_numpy(b), stride=stride, padding=padding,
                                      dilation=dilation, groups=g).numpy()
    np.testing.assert_allclose(ref.conv2d(x, w, b, stride, padding, dilation=dilation, groups=g),
                               want, rtol=1e-12, atol=1e-12)
    got = ops.conv2d(x.astype(np.float32), w.astype(np.float32), b.astype(np.float32),
                     stride=stride, padding=padding, dilation=dilation, groups=g, device=device)
    check(got, want, "gemm", "f32", n=ch // g * k * k,
          ref_abs=ref.conv2d(np.abs(x), np.abs(w), np.abs(b), stride, padding,
                             dilation=dilation, groups=g))
