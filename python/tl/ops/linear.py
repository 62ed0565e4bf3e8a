# GEMM with a fused epilogue (alpha, bias, activation, residual; batched, strided or transposed
# operands), GEMV and transpose. Tile sizes are tl.autotune configs, chosen per device.
# SPDX-License-Identifier: Apache-2.0
import threading

import numpy as np

import tl

from . import _common as c
from .activations import ACTIVATIONS, activate

# 128 x 128 x 64: the llvm-cpu micro-kernel's tile (kernels/tlir/gemm_cpu.tlir's sweep; 1.7x
# the 64 x 64 x 32 tile at 2048^3 on cpu) and the fastest on npusim at 200 x 300 x 150.
_GEMM_TILES = [{"BM": 32, "BN": 32, "BK": 32}, {"BM": 64, "BN": 64, "BK": 32},
               {"BM": 128, "BN": 64, "BK": 64}, {"BM": 128, "BN": 128, "BK": 64}]
GEMM_CONFIGS = [*(tl.Config(t) for t in _GEMM_TILES),
                # llvm-cpu: the tiles above and 256 x 128 x 64, whose k steps copy each b
                # block once for 256 rows of a instead of 128 (session 35's Xeon, 2 threads:
                # 1024^3 at 9.2 ms against 128 x 128 x 64's 9.8-9.9 in the autotuner's own
                # minima; ops_bench 0.84 -> 0.86 of OpenBLAS, medians of four alternating
                # rounds; 512^3 level; 256 x 256, 512 x 128 and 256 x 128 with BK 32 or 128
                # 1-8 % slower in two processes, 128 x 256 x 64 13 % in one)
                *(tl.Config(t, targets="llvm-cpu")
                  for t in _GEMM_TILES + [{"BM": 256, "BN": 128, "BK": 64}]),
                # tnpu: blocks of whole 128 x 128 matrix-unit passes, large enough that the k
                # loop's prefetched loads hide behind the dots (256 x 512 x 128 f32: 0.67 of
                # the default chip's f32 peak at 1024^3, 64 x 64 x 32: 0.05; bench/README.md).
                # Wide blocks (session 17, npusim f32, of the f32 peak): 128 x 512 x 128 at
                # 512^3 0.55 (256 x 512: 0.33), 256 x 1024 x 128 at 1024^3 0.76 (0.65) and at
                # 2048^3 0.85 (0.79). A config a chip's scratchpad cannot hold does not compile
                # and tl.autotune leaves it out (with a warning).
                tl.Config({"BM": 128, "BN": 128, "BK": 128}, targets="tnpu"),
                tl.Config({"BM": 128, "BN": 512, "BK": 128}, targets="tnpu"),
                tl.Config({"BM": 256, "BN": 512, "BK": 128}, targets="tnpu"),
                tl.Config({"BM": 256, "BN": 1024, "BK": 128}, targets="tnpu")]


@tl.func
def gemm_epilogue(acc, alpha, bias, res, out, z, m0, n0, HAS_BIAS: tl.constexpr,
                  ACT: tl.constexpr, HAS_RES: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr):
    """out[z] block (m0, n0) = ACT(alpha acc + bias) + res[z], rounded once to out's dtype: the
    epilogue of the GEMM and of split-K's reduction."""
    acc = acc * alpha
    if HAS_BIAS:
        acc = acc + tl.load(bias + (n0,), (BN,)).to(tl.float32)[None, :]
    acc = activate(acc, ACT)
    if HAS_RES:
        acc = acc + tl.reshape(tl.load(res + (z, m0, n0), (1, BM, BN)), (BM, BN)).to(tl.float32)
    tl.store(out + (z, m0, n0), tl.reshape(acc, (1, BM, BN)))


@tl.autotune(configs=GEMM_CONFIGS, key=["a", "b"])
@tl.kernel
def gemm_kernel(a: tl.tensor, b: tl.tensor, bias: tl.tensor, res: tl.tensor, out: tl.tensor,
                alpha: tl.float32, HAS_BIAS: tl.constexpr, ACT: tl.constexpr,
                HAS_RES: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    """out[z] = ACT(alpha * a[z] @ b[z] + bias) + res[z] on (batch, rows, cols) views, f32
    accumulation; a program per (BM, BN) block of one batch entry."""
    m0 = tl.program_id(0) * BM
    n0 = tl.program_id(1) * BN
    z = tl.program_id(2)
    acc = tl.zeros((BM, BN), tl.float32)
    for k in tl.range(0, a.shape[2], BK):
        ta = tl.reshape(tl.load(a + (z, m0, k), (1, BM, BK)), (BM, BK))
        tb = tl.reshape(tl.load(b + (z, k, n0), (1, BK, BN)), (BK, BN))
        acc = tl.dot(ta, tb, acc=acc)
    gemm_epilogue(acc, alpha, bias, res, out, z, m0, n0, HAS_BIAS, ACT, HAS_RES, BM, BN)


# ---- packed GEMM --------------------------------------------------------------------------------
# gemm_kernel's tile loads read BM (BK) rows one matrix row apart, copied into a stack tile at
# every (program, k step): at 2048^3 each row is its own page, so the copies wait on DRAM, and
# every b block is copied again by each of the M / BM programs of its column. Packing copies
# each operand once into contiguous (BR, BC) blocks, a panel's k blocks one after the other
# (a: row panels, b: column panels); the packed GEMM's loads are then whole contiguous blocks,
# which llvm-cpu reads in place (cpu.view: no copy) and the hardware prefetchers stream.
# _common.TUNING["gemm_pack"] says where (and from which size) gemm takes this path.

@tl.kernel
def gemm_pack_kernel(x: tl.tensor, out: tl.tensor, panels: tl.int32, blocks: tl.int32,
                     COLS: tl.constexpr, BR: tl.constexpr, BC: tl.constexpr):
    """out[z blocks + block] = x[z] block (r, c) of BR x BC, zeros past x's edges, on a (batch,
    rows, cols) view; out: (batch blocks, BR, BC), `blocks` per batch entry. COLS false: row
    panels (block r panels + c, a's layout, panels = the column blocks); true: column panels
    (block c panels + r, b's layout, panels = the row blocks). A program per block, column
    blocks first (grid (column blocks, row blocks, batch)): consecutive programs read the next
    BC columns of the same rows, whose lines and pages the previous program brought in."""
    cb = tl.program_id(0)
    r = tl.program_id(1)
    z = tl.program_id(2)
    t = tl.load(x + (z, r * BR, cb * BC), (1, BR, BC))
    if COLS:
        blk = cb * panels + r
    else:
        blk = r * panels + cb
    tl.store(out + (z * blocks + blk, 0, 0), t)


@tl.kernel
def gemm_packed_kernel(a: tl.tensor, b: tl.tensor, bias: tl.tensor, res: tl.tensor,
                       out: tl.tensor, alpha: tl.float32, kblocks: tl.int32, a_step: tl.int32,
                       b_step: tl.int32, HAS_BIAS: tl.constexpr, ACT: tl.constexpr,
                       HAS_RES: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr,
                       BK: tl.constexpr):
    """gemm_kernel on packed operands (gemm_pack_kernel, zero-padded to whole blocks): a's row
    panels of kblocks (BM, BK) blocks, b's column panels of kblocks (BK, BN) blocks, batch
    entry z's from block z a_step (z b_step; 0: one operand shared by every entry); out, res:
    (batch, M, N). A program per (BM, BN) block of one batch entry."""
    pm = tl.program_id(0)
    pn = tl.program_id(1)
    z = tl.program_id(2)
    a0 = z * a_step + pm * kblocks
    b0 = z * b_step + pn * kblocks
    acc = tl.zeros((BM, BN), tl.float32)
    for kb in tl.range(0, kblocks, 1):
        ta = tl.reshape(tl.load(a + (a0 + kb, 0, 0), (1, BM, BK)), (BM, BK))
        tb = tl.reshape(tl.load(b + (b0 + kb, 0, 0), (1, BK, BN)), (BK, BN))
        acc = tl.dot(ta, tb, acc=acc)
    gemm_epilogue(acc, alpha, bias, res, out, z, pm * BM, pn * BN, HAS_BIAS, ACT, HAS_RES, BM,
                  BN)


# The packed operands' memory, kept per thread for the next call up to PACK_KEEP bytes: fresh
# pages are zeroed by the OS at their first touch (clear_page: 9 % of a 1024^3 GEMM's profile
# with fresh buffers). Launches on the arrays' device are synchronous, so a call's packed
# operands are dead when it returns; under tl.torch (a hook's memory) they are allocated anew.
PACK_KEEP = 64 << 20
_pack_memory = threading.local()


def _pack_buffers(shapes, like):
    """Arrays of `shapes` (dtype of `like`) for the packed operands, 64-byte aligned."""
    if c.HOOK.get() is not None:
        return [c.empty(s, like) for s in shapes]
    dt = like.dtype  # bf16's own dtype kept
    nbytes = [int(np.prod(s)) * dt.itemsize for s in shapes]
    starts = np.cumsum([0] + [-(-n // c.ALIGN) * c.ALIGN for n in nbytes])
    mem = getattr(_pack_memory, "mem", None)
    if mem is None or mem.nbytes < starts[-1]:
        mem = c.aligned_empty(int(starts[-1]), np.uint8)
        if mem.nbytes <= PACK_KEEP:
            _pack_memory.mem = mem
    return [mem[at:at + n].view(dt).reshape(s) for at, n, s in zip(starts, nbytes, shapes)]


def _pack(x3, br, bc, cols, out, device):
    """x3 (batch, rows, cols; any strides) packed by gemm_pack_kernel into `out`
    (_pack_shape): the blocks per batch entry. A stride-0 batch (one operand shared by every
    entry) is packed once, and its step is 0."""
    shared = _shared(x3)
    src = x3[:1] if shared else x3
    rb, cb = tl.cdiv(x3.shape[1], br), tl.cdiv(x3.shape[2], bc)
    gemm_pack_kernel[(cb, rb, src.shape[0])](*c.device_args(src, out), rb if cols else cb,
                                             rb * cb, device=device or "cpu", COLS=cols, BR=br,
                                             BC=bc)
    return 0 if shared else rb * cb


def _shared(x3):
    """Whether x3 is one operand shared by every batch entry (a stride-0 batch: _batched)."""
    return x3.shape[0] > 1 and x3.strides[0] == 0


def _pack_shape(x3, br, bc):
    """The packed shape of x3 (gemm_pack_kernel's out)."""
    batch = 1 if _shared(x3) else x3.shape[0]
    return (batch * tl.cdiv(x3.shape[1], br) * tl.cdiv(x3.shape[2], bc), br, bc)


def _gemm_packed(a3, b3, bias, residual, res3, out3, alpha, activation, tiles, device):
    """gemm on the packed path: both operands packed, then gemm_packed_kernel."""
    bm, bn, bk = tiles
    batch, m, k = a3.shape
    n = b3.shape[2]
    ap, bp = _pack_buffers([_pack_shape(a3, bm, bk), _pack_shape(b3, bk, bn)], a3)
    a_step = _pack(a3, bm, bk, False, ap, device)
    b_step = _pack(b3, bk, bn, True, bp, device)
    dummy = ap[0, 0, :1]
    gemm_packed_kernel[(tl.cdiv(m, bm), tl.cdiv(n, bn), batch)](
        *c.device_args(ap, bp, dummy if bias is None else bias, res3, out3), alpha,
        tl.cdiv(k, bk), a_step, b_step, device=device or "cpu", HAS_BIAS=bias is not None,
        ACT=activation, HAS_RES=residual is not None, BM=bm, BN=bn, BK=bk)


# The activations a GEMM or conv2d epilogue fuses: leaky_relu's slope would need a second
# scalar beside alpha.
EPILOGUE_ACTIVATIONS = tuple(a for a in ACTIVATIONS if a != "leaky_relu")


def check_epilogue_activation(op, activation):
    if activation == "leaky_relu":
        c.fail(op, "activation", "leaky_relu is not fused into the epilogue (its slope is "
               "not a parameter here): apply tl.ops.leaky_relu to the result; fused: "
               f"{', '.join(EPILOGUE_ACTIVATIONS)}")
    if activation not in EPILOGUE_ACTIVATIONS:
        c.fail(op, "activation", f"unknown activation {activation!r} (one of "
               f"{', '.join(EPILOGUE_ACTIVATIONS)})")


@tl.func
def gemv_chunk(a, x, m0, k, ROWS: tl.constexpr, BK: tl.constexpr, DOT: tl.constexpr):
    """The products of a[m0:m0+ROWS, k:k+BK] and x[k:k+BK] summed along the rows, in f32: a
    product tile and its row sums on the vector unit, or (DOT) a dot with x as a column."""
    ta = tl.load(a + (m0, k), (ROWS, BK)).to(tl.float32)
    xk = tl.load(x + (k,), (BK,)).to(tl.float32)
    if DOT:
        return tl.reshape(tl.dot(ta, tl.reshape(xk, (BK, 1))), (ROWS,))
    return tl.sum(ta * xk[None, :], axis=1)


@tl.func
def gemv_rows(a, x, bias, out, alpha, m0, ROWS: tl.constexpr, BK: tl.constexpr,
              HAS_BIAS: tl.constexpr, ONE: tl.constexpr, DOT: tl.constexpr):
    """out[m0:m0+ROWS] = alpha * a[m0:m0+ROWS] @ x + bias (gemv_chunk's products)."""
    if ONE:
        acc = gemv_chunk(a, x, m0, 0, ROWS, BK, DOT)
    else:
        acc = tl.zeros((ROWS,), tl.float32)
        for k in tl.range(0, a.shape[1], BK):
            acc = acc + gemv_chunk(a, x, m0, k, ROWS, BK, DOT)
    acc = acc * alpha
    if HAS_BIAS:
        acc = acc + tl.load(bias + (m0,), (ROWS,)).to(tl.float32)
    tl.store(out + (m0,), acc)


@tl.kernel
def gemv_kernel(a: tl.tensor, x: tl.tensor, bias: tl.tensor, out: tl.tensor, alpha: tl.float32,
                HAS_BIAS: tl.constexpr, BM: tl.constexpr, BK: tl.constexpr,
                ONE: tl.constexpr = False, MX: tl.constexpr = 0):
    """out = alpha * a @ x + bias: BM rows per program, products summed in f32. ONE: a's rows
    fit one chunk (K <= BK), no loop: the tnpu runs a kernel without loops persistent, the next
    program's load overlapping this one's products and sums. MX (0 < MX < BM): the program's
    first MX rows as a dot on the matrix unit, the other BM - MX on the vector unit, the two
    units side by side (_common.TUNING's gemv_matrix_rows)."""
    m0 = tl.program_id(0) * BM
    if MX:
        tl.static_assert(0 < MX and MX < BM, "gemv_kernel: MX takes part of the rows")
        gemv_rows(a, x, bias, out, alpha, m0, MX, BK, HAS_BIAS, ONE, True)
        gemv_rows(a, x, bias, out, alpha, m0 + MX, BM - MX, BK, HAS_BIAS, ONE, False)
    else:
        gemv_rows(a, x, bias, out, alpha, m0, BM, BK, HAS_BIAS, ONE, False)


@tl.kernel
def transpose_kernel(x: tl.tensor, out: tl.tensor, BM: tl.constexpr, BN: tl.constexpr,
                     SW: tl.constexpr = 1):
    """out[z] = x[z].T on (batch, rows, cols) views. SW > 1 (the column blocks, a power of
    two): program (i, j) takes column block (i + j) mod SW, so that programs side by side
    (consecutive i, on different compute units) read different column blocks (the tnpu: other
    HBM channels, _common.TUNING's transpose_swizzle). A mask, not a remainder: the tnpu
    prefetches the next program's loads only through scalars such as add / and, and a longer
    chain of them ran out of its registers."""
    m0 = tl.program_id(0) * BM
    pn = tl.program_id(1)
    if SW > 1:
        pn = (pn + tl.program_id(0)) & (SW - 1)
    n0 = pn * BN
    z = tl.program_id(2)
    t = tl.reshape(tl.load(x + (z, m0, n0), (1, BM, BN)), (BM, BN))
    tl.store(out + (z, n0, m0), tl.reshape(tl.trans(t), (1, BN, BM)))


def _batched(op, arg, a, batch):
    """`a` (rank 2 or 3) as (batch, rows, cols); a rank-2 operand is shared by every batch entry
    (a stride-0 view)."""
    if a.ndim == 2:
        return np.broadcast_to(a, (batch,) + a.shape)
    if a.shape[0] != batch:
        c.fail(op, arg, f"batch {a.shape[0]} differs from the other operand's {batch}")
    return a


def gemm(a, b, *, bias=None, activation="none", residual=None, alpha=1.0, device=None,
         split_k=None):
    """activation(alpha * a @ b + bias) + residual. a: (M, K) or (batch, M, K); b: (K, N) or
    (batch, K, N) (any strides: pass x.T for a transposed operand); bias: (N,); residual: the
    output's shape. Accumulates in f32; returns the inputs' dtype. split_k: the K range split
    over that many programs (f32 partials summed in a fixed order, then the epilogue: no
    atomics, the same bits every run); None chooses it (`splitk_choice`), 1 never splits."""
    op = "gemm"
    if split_k is not None and (isinstance(split_k, bool) or not isinstance(split_k, int)
                                or split_k < 1):
        c.fail(op, "split_k", f"expected an int >= 1 or None, got {split_k!r}")
    alpha = c.number(op, "alpha", alpha)
    a = c.float_array(op, "a", a)
    b = c.float_array(op, "b", b)
    c.same_dtype(op, "a", a, b=b)
    for name, t in (("a", a), ("b", b)):
        if t.ndim not in (2, 3):
            c.fail(op, name, f"expected rank 2 or 3, got shape {t.shape}")
    if a.shape[-1] != b.shape[-2]:
        c.fail(op, "b", f"inner dimensions differ: a is {a.shape}, b is {b.shape}")
    check_epilogue_activation(op, activation)
    batch = max(a.shape[0] if a.ndim == 3 else 1, b.shape[0] if b.ndim == 3 else 1)
    a3, b3 = _batched(op, "a", a, batch), _batched(op, "b", b, batch)
    m, n = a.shape[-2], b.shape[-1]
    shape = (batch, m, n) if 3 in (a.ndim, b.ndim) else (m, n)
    out = c.empty(shape, a)
    if bias is not None:
        bias = c.float_array(op, "bias", bias, ndim=1)
        if bias.shape != (n,):
            c.fail(op, "bias", f"expected shape ({n},), got {bias.shape}")
    if residual is not None:
        residual = c.float_array(op, "residual", residual)
        if residual.shape != shape:
            c.fail(op, "residual", f"expected the output's shape {shape}, got {residual.shape}")
    c.same_dtype(op, "a", a, bias=bias, residual=residual)
    if out.size == 0:
        return out
    if a.shape[-1] == 0:  # a @ b is zeros, as numpy's and torch's: the epilogue of a K of 1
        a3, b3 = c.zeros((batch, m, 1), a), c.zeros((batch, 1, n), a)
    dummy = a3[0, 0, :1]
    res3 = dummy.reshape(1, 1, 1) if residual is None else residual.reshape(batch, m, n)
    splits = split_k if a.shape[-1] else 1
    if split_k is None:
        splits = splitk_choice(batch, m, n, a.shape[-1], c.tuned("splitk_auto", device))
    if splits > 1:
        _gemm_split(a3, b3, bias, residual, res3, out.reshape(batch, m, n), float(alpha),
                    activation, splits, device)
        return out
    pack = c.tuned("gemm_pack", device)
    if pack is not None and min(m, n, a.shape[-1]) >= pack[0]:
        _gemm_packed(a3, b3, bias, residual, res3, out.reshape(batch, m, n), float(alpha),
                     activation, pack[1:], device)
        return out
    grid = lambda meta: (tl.cdiv(m, meta["BM"]), tl.cdiv(n, meta["BN"]), batch)  # noqa: E731
    gemm_kernel[grid](*c.device_args(a3, b3, dummy if bias is None else bias, res3,
                                     out.reshape(batch, m, n)),
                      float(alpha), device=device or "cpu", HAS_BIAS=bias is not None,
                      ACT=activation, HAS_RES=residual is not None)
    return out


# ---- split-K GEMM ---------------------------------------------------------------------------
# For a small M N and a large K the (BM, BN) grid has few programs (M = 3, N = 70: two), each
# walking all of K. Split-K gives each of S programs per output block one slice of K; each
# writes its f32 partial sum to part[s], and gemm_splitk_reduce_kernel adds the S partials in
# the order s = 0 .. S-1 and applies the epilogue once (alpha, bias, activation, residual,
# rounding to the output's dtype). No atomics: the result is the same bits on every run.

@tl.kernel
def gemm_splitk_kernel(a: tl.tensor, b: tl.tensor, part: tl.tensor, chunk: tl.int32,
                       BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    """part[s batch + z] = a[z][:, ks] @ b[z][ks, :] in f32, where ks is split s's slice of K:
    `chunk` columns (a multiple of BK, so no K block straddles two slices) from s chunk; the
    loads past K read zeros, so the last slices need no bound of their own (a slice wholly past
    K writes zeros). a, b: (batch, M, K), (batch, K, N) views; part: (S batch, M, N) f32. Few
    scalars: the TNPU has 17 scalar registers."""
    m0 = tl.program_id(0) * BM
    n0 = tl.program_id(1) * BN
    zs = tl.program_id(2)
    z = zs % a.shape[0]
    lo = (zs // a.shape[0]) * chunk
    acc = tl.zeros((BM, BN), tl.float32)
    for k in tl.range(lo, lo + chunk, BK):
        ta = tl.reshape(tl.load(a + (z, m0, k), (1, BM, BK)), (BM, BK))
        tb = tl.reshape(tl.load(b + (z, k, n0), (1, BK, BN)), (BK, BN))
        acc = tl.dot(ta, tb, acc=acc)
    tl.store(part + (zs, m0, n0), tl.reshape(acc, (1, BM, BN)))


@tl.kernel
def gemm_splitk_reduce_kernel(part: tl.tensor, bias: tl.tensor, res: tl.tensor, out: tl.tensor,
                              alpha: tl.float32, splits: tl.int32, HAS_BIAS: tl.constexpr,
                              ACT: tl.constexpr, HAS_RES: tl.constexpr, BM: tl.constexpr,
                              BN: tl.constexpr):
    """out[z] = ACT(alpha * sum_s part[s batch + z] + bias) + res[z]: the partials added in the
    order s = 0, 1, .. S-1 (deterministic), the epilogue once. out, res: (batch, M, N)."""
    m0 = tl.program_id(0) * BM
    n0 = tl.program_id(1) * BN
    z = tl.program_id(2)
    batch = out.shape[0]
    acc = tl.zeros((BM, BN), tl.float32)
    for s in tl.range(0, splits, 1):
        acc = acc + tl.reshape(tl.load(part + (s * batch + z, m0, n0), (1, BM, BN)), (BM, BN))
    gemm_epilogue(acc, alpha, bias, res, out, z, m0, n0, HAS_BIAS, ACT, HAS_RES, BM, BN)


# Split-K's automatic choice, on the devices whose _common.TUNING["splitk_auto"] is on
# (processors to fill: nvptx, tnpu; on the 2-vCPU cpu device the unsplit GEMM was mostly
# faster, bench/README.md): split when the output has at most SPLITK_MAX_TILES 64 x 64
# tiles and K is at least SPLITK_MIN_K, into slices of about SPLITK_SLICE columns, at most
# SPLITK_MAX_SPLITS of them.
SPLITK_MAX_TILES, SPLITK_MIN_K, SPLITK_SLICE, SPLITK_MAX_SPLITS = 4, 2048, 512, 32


def splitk_choice(batch, m, n, k, auto=True):
    """The split gemm() uses when split_k is None: 1 (no split) unless `auto` (the device's
    TUNING["splitk_auto"]), the output is small (batch x ceil(M/64) x ceil(N/64) <=
    SPLITK_MAX_TILES) and K >= SPLITK_MIN_K."""
    tiles = batch * (-(-m // 64)) * (-(-n // 64))
    if not auto or tiles > SPLITK_MAX_TILES or k < SPLITK_MIN_K:
        return 1
    return max(2, min(SPLITK_MAX_SPLITS, k // SPLITK_SLICE))


def splitk_chunk(k, splits, bk):
    """Each slice's columns: ceil(K / splits) rounded up to a multiple of the K block."""
    return -(-(-(-k // splits)) // bk) * bk


def _gemm_split(a3, b3, bias, residual, res3, out3, alpha, activation, splits, device):
    """Split-K: the partials kernel into an f32 workspace (S batch, M, N), then the reduction."""
    batch, m, n = out3.shape
    bm, bn, bk = c.tuned("splitk_blocks", device)
    part = c.empty((splits * batch, m, n), np.float32)
    chunk = splitk_chunk(a3.shape[2], splits, bk)
    c.launch(gemm_splitk_kernel, (tl.cdiv(m, bm), tl.cdiv(n, bn), splits * batch), a3, b3, part,
             chunk, device=device, BM=bm, BN=bn, BK=bk)
    rbm, rbn = c.pow2(m, 1, 64), c.pow2(n, 16, 128)
    c.launch(gemm_splitk_reduce_kernel, (tl.cdiv(m, rbm), tl.cdiv(n, rbn), batch), part,
             a3[0, 0, :1] if bias is None else bias, res3, out3, alpha, splits, device=device,
             HAS_BIAS=bias is not None, ACT=activation, HAS_RES=residual is not None, BM=rbm,
             BN=rbn)


def gemv(a, x, *, bias=None, alpha=1.0, device=None):
    """alpha * a @ x + bias for a: (M, K), x: (K,), bias: (M,)."""
    op = "gemv"
    alpha = c.number(op, "alpha", alpha)
    a = c.float_array(op, "a", a, ndim=2)
    x = c.float_array(op, "x", x, ndim=1)
    if x.shape[0] != a.shape[1]:
        c.fail(op, "x", f"expected shape ({a.shape[1]},) (a's columns), got {x.shape}")
    if bias is not None:
        bias = c.float_array(op, "bias", bias, ndim=1)
        if bias.shape != (a.shape[0],):
            c.fail(op, "bias", f"expected shape ({a.shape[0]},), got {bias.shape}")
    c.same_dtype(op, "a", a, x=x, bias=bias)
    out = c.empty((a.shape[0],), a)
    if out.size:
        bk = c.pow2(a.shape[1], 16, c.tuned("gemv_block_k", device))
        bm = c.pow2(a.shape[0], 1, max(1, c.tuned("gemv_elements", device) // bk))
        c.launch(gemv_kernel, (tl.cdiv(a.shape[0], bm),), a, x, a[0, :1] if bias is None else bias,
                 out, float(alpha), device=device, HAS_BIAS=bias is not None, BM=bm, BK=bk,
                 ONE=a.shape[1] <= bk, MX=int(bm * c.tuned("gemv_matrix_rows", device)))
    return out


def transpose(x, *, device=None):
    """x's last two axes swapped, as a new contiguous array (x: rank 2 or more)."""
    x = c.float_array("transpose", "x", x, min_ndim=2)
    shape = x.shape[:-2] + (x.shape[-1], x.shape[-2])
    out = c.empty(shape, x)
    if out.size:
        x3 = x.reshape(-1, x.shape[-2], x.shape[-1])
        tm, tn = c.tuned("transpose_block", device)
        bm = c.pow2(x3.shape[1], 16, tm)
        bn = c.tile_width(x3.shape[2], 16, tn, c.tuned("row_block_multiple", device))
        blocks = tl.cdiv(x3.shape[2], bn)
        sw = blocks if c.tuned("transpose_swizzle", device) and blocks & (blocks - 1) == 0 else 1
        c.launch(transpose_kernel, (tl.cdiv(x3.shape[1], bm), blocks, x3.shape[0]), x3,
                 out.reshape(x3.shape[0], shape[-2], shape[-1]), device=device, BM=bm, BN=bn,
                 SW=sw)
    return out


@tl.kernel
def conv2d_kernel(x: tl.tensor, w: tl.tensor, bias: tl.tensor, out: tl.tensor, h: tl.int32,
                  wd: tl.int32, ow_n: tl.int32, groups: tl.int32, KH: tl.constexpr,
                  KW: tl.constexpr, SH: tl.constexpr, SW: tl.constexpr, PH: tl.constexpr,
                  PW: tl.constexpr, HAS_BIAS: tl.constexpr, ACT: tl.constexpr, BM: tl.constexpr,
                  BN: tl.constexpr, BK: tl.constexpr, DH: tl.constexpr = 1,
                  DW: tl.constexpr = 1):
    """conv2d as an implicit GEMM per group: for image n and group g, BM output pixels (rows)
    times BN of the group's output channels, K = C/groups KH KW in blocks of BK; the pixels'
    input patches (dilated by DH, DW) gathered on the fly (zero padding by mask). x: (N groups,
    C/groups, H W) view, w: (groups, C/groups KH KW, OC/groups) view (each group's weight
    transposed), out: (N groups, OC/groups, OH OW) view, bias: (groups, OC/groups); h, wd: the
    input's height and width, ow_n: OW. A block of channels never crosses a group: each
    group's channels are their own (masked) rows of the views."""
    p0 = tl.program_id(0) * BM
    oc0 = tl.program_id(1) * BN
    ng = tl.program_id(2)
    g = ng % groups
    pix = p0 + tl.arange(0, BM)
    oh = pix // ow_n
    ow = pix % ow_n
    pix_ok = pix < out.shape[2]
    acc = tl.zeros((BM, BN), tl.float32)
    for k0 in tl.range(0, w.shape[1], BK):
        k = k0 + tl.arange(0, BK)
        ic = k // (KH * KW)
        kh = (k % (KH * KW)) // KW
        kw = k % KW
        rows = oh[:, None] * SH + kh[None, :] * DH - PH
        cols = ow[:, None] * SW + kw[None, :] * DW - PW
        ok = (pix_ok[:, None] & (k < w.shape[1])[None, :] & (rows >= 0) & (rows < h)
              & (cols >= 0) & (cols < wd))
        zero = tl.zeros((BM, BK), tl.int32)
        a = tl.gather(x, (zero + ng, zero + ic[None, :], rows * wd + cols), mask=ok)
        tw = tl.reshape(tl.load(w + (g, k0, oc0), (1, BK, BN)), (BK, BN))
        acc = tl.dot(a, tw, acc=acc)
    if HAS_BIAS:
        acc = acc + tl.reshape(tl.load(bias + (g, oc0), (1, BN)), (BN,)).to(tl.float32)[None, :]
    acc = activate(acc, ACT)
    tl.store(out + (ng, oc0, p0), tl.reshape(tl.trans(acc), (1, BN, BM)))


@tl.kernel
def conv2d_shift_kernel(x: tl.tensor, w: tl.tensor, bias: tl.tensor, out: tl.tensor,
                        groups: tl.int32, col_blocks: tl.int32, KH: tl.constexpr,
                        KW: tl.constexpr, PH: tl.constexpr, PW: tl.constexpr,
                        HAS_BIAS: tl.constexpr, ACT: tl.constexpr, BN: tl.constexpr,
                        BK: tl.constexpr, BR: tl.constexpr, BW: tl.constexpr,
                        DH: tl.constexpr = 1, DW: tl.constexpr = 1, SH: tl.constexpr = 1,
                        SW: tl.constexpr = 1):
    """conv2d as an implicit GEMM without gathers: for window position (kh, kw) the input
    pixels of a (BR, BW) block of output pixels are one block of one of the input's stride
    phases (stride 1: the input itself), shifted; one block load, zero padding where the
    shift leaves it. out[:, block] += w[kh, kw] (BN, BK) @ x block (BK channels, BR BW pixels).
    x: (SH SW, N groups, C/groups, ceil(H / SH), ceil(W / SW)), phase (a, b) holding the input's
    pixels (a + SH i, b + SW j) (conv2d_phases_kernel; stride 1: the input as it is), w: (KH KW
    groups, OC/groups, C/groups) (window position major), out: (N groups, OC/groups, OH, OW)
    view, bias: (groups, OC/groups); program 0 is (row block, column block), col_blocks the
    column blocks a row of them."""
    rb = tl.program_id(0) // col_blocks
    oh0 = rb * BR
    ow0 = (tl.program_id(0) - rb * col_blocks) * BW
    oc0 = tl.program_id(1) * BN
    ng = tl.program_id(2)
    g = ng % groups
    acc = tl.zeros((BN, BR * BW), tl.float32)
    for t in tl.range(0, KH * KW, 1):
        kh = t // KW
        kw = t - kh * KW
        # output row oh reads input row SH oh + kh DH - PH = SH (oh + qh) + a: phase a's row
        # oh + qh (eh >= 0, so // and % need no sign care)
        eh = kh * DH - PH + SH * PH
        ew = kw * DW - PW + SW * PW
        phase = (eh % SH) * SW + ew % SW
        qh = eh // SH - PH
        qw = ew // SW - PW
        for ic0 in tl.range(0, x.shape[2], BK):
            tw = tl.reshape(tl.load(w + (t * groups + g, oc0, ic0), (1, BN, BK)), (BN, BK))
            tx = tl.load(x + (phase, ng, ic0, oh0 + qh, ow0 + qw), (1, 1, BK, BR, BW))
            acc = tl.dot(tw, tl.reshape(tx, (BK, BR * BW)), acc=acc)
    if HAS_BIAS:
        acc = acc + tl.reshape(tl.load(bias + (g, oc0), (1, BN)), (BN,)).to(tl.float32)[:, None]
    acc = activate(acc, ACT)
    tl.store(out + (ng, oc0, oh0, ow0), tl.reshape(acc, (1, BN, BR, BW)))


@tl.kernel
def conv2d_phases_kernel(x: tl.tensor, xp: tl.tensor, SH: tl.constexpr, SW: tl.constexpr,
                         BR: tl.constexpr, BW: tl.constexpr):
    """The stride phases of planes x (P, H, W): xp[a SW + b, p, i, j] = x[p, SH i + a, SW j + b],
    zero past x's edges; xp (SH SW, P, ceil(H / SH), ceil(W / SW)). Program (plane, row block):
    each (SH BR, SW BW) block of x is one load, its pixels sorted by phase (a transpose)."""
    p = tl.program_id(0)
    r0 = tl.program_id(1) * BR
    for c0 in tl.range(0, xp.shape[3], BW):
        v = tl.reshape(tl.load(x + (p, r0 * SH, c0 * SW), (1, BR * SH, BW * SW)), (BR, SH, BW, SW))
        v = tl.trans(v, (1, 3, 0, 2))  # (SH, SW, BR, BW): phase major
        tl.store(xp + (0, p, r0, c0), tl.reshape(v, (SH * SW, 1, BR, BW)))


def conv2d(x, weight, bias=None, *, stride=1, padding=0, dilation=1, groups=1,
           activation="none", device=None):
    """2D convolution (cross-correlation, as torch's conv2d) of x (N, C, H, W) with weight
    (OC, C/groups, KH, KW), zero padding, dilation, groups (C and OC multiples of it; groups =
    C: depthwise), optional bias (OC) and fused activation. Returns (N, OC, OH, OW) in x's
    dtype (f32 accumulation)."""
    op = "conv2d"
    x = c.float_array(op, "x", x, ndim=4)
    weight = c.float_array(op, "weight", weight, ndim=4)
    c.same_dtype(op, "x", x, weight=weight)
    n, ch, h, w = x.shape
    oc, wc, kh, kw = weight.shape
    if isinstance(groups, bool) or not isinstance(groups, (int, np.integer)) or groups < 1:
        c.fail(op, "groups", f"expected an int >= 1, got {groups!r}")
    groups = int(groups)
    if ch % groups:
        c.fail(op, "groups", f"{groups} does not divide x's {ch} channels")
    if oc % groups:
        c.fail(op, "groups", f"{groups} does not divide weight's {oc} output channels")
    if wc != ch // groups:
        c.fail(op, "weight", f"has {wc} input channels, expected C/groups = {ch // groups}")
    if kh < 1 or kw < 1:
        c.fail(op, "weight", f"window {(kh, kw)}: expected at least one row and column")
    if bias is not None:
        bias = c.float_array(op, "bias", bias, ndim=1)
        if bias.shape != (oc,):
            c.fail(op, "bias", f"expected shape ({oc},), got {bias.shape}")
        c.same_dtype(op, "x", x, bias=bias)
    sh, sw = c.int_pair(op, "stride", stride)
    ph, pw = c.int_pair(op, "padding", padding)
    dh, dw = c.int_pair(op, "dilation", dilation)
    if sh < 1 or sw < 1 or ph < 0 or pw < 0:
        c.fail(op, "stride", f"strides must be >= 1 and padding >= 0, got {stride}, {padding}")
    if dh < 1 or dw < 1:
        c.fail(op, "dilation", f"must be >= 1, got {dilation}")
    oh = (h + 2 * ph - dh * (kh - 1) - 1) // sh + 1
    ow = (w + 2 * pw - dw * (kw - 1) - 1) // sw + 1
    if oh < 1 or ow < 1:
        c.fail(op, "weight", f"window {(kh, kw)} (dilation {(dh, dw)}) does not fit in the "
               "padded input")
    check_epilogue_activation(op, activation)
    out = c.empty((n, oc, oh, ow), x)
    if out.size == 0:
        return out
    if x.size == 0:  # no channels, or windows on the padding alone: sums of zeros, as
        # gemm's K = 0, so the epilogue of a zero input (one channel a group), padded here
        if ch == 0:
            weight, ch = c.zeros((oc, 1, kh, kw), x), groups
        h, w, ph, pw = h + 2 * ph, w + 2 * pw, 0, 0
        x = c.zeros((n, ch, h, w), x)
    cg, og = ch // groups, oc // groups
    bias_view = x.reshape(-1)[:1].reshape(1, 1) if bias is None else bias.reshape(groups, og)
    phases_from = c.tuned("conv2d_phases", device)
    if c.tuned("conv2d_shift", device) and (sh == sw == 1 or 0 < phases_from <= cg):
        # (KH KW groups, OC/groups, C/groups): the weight by window position, contiguous
        w_k = transpose(weight.reshape(oc * cg, kh * kw), device=device)
        xv = x.reshape(1, n * groups, cg, h, w)
        if sh * sw > 1:  # the input's stride phases, so that each window's pixels are a block
            hq, wq = tl.cdiv(h, sh), tl.cdiv(w, sw)
            xv = c.empty((sh * sw, n * ch, hq, wq), x)
            c.launch(conv2d_phases_kernel, (n * ch, tl.cdiv(hq, 16)), x.reshape(n * ch, h, w),
                     xv, device=device, SH=sh, SW=sw, BR=16, BW=c.pow2(wq, 16, 64))
            xv = xv.reshape(sh * sw, n * groups, cg, hq, wq)
        bw = c.pow2(ow, 1, 64)
        br = c.pow2(oh, 1, max(1, 128 // bw))
        col_blocks = tl.cdiv(ow, bw)
        bn = c.pow2(og, 1, c.tuned("conv2d_shift_channels", device))
        c.launch(conv2d_shift_kernel, (tl.cdiv(oh, br) * col_blocks, tl.cdiv(og, bn), n * groups),
                 xv, w_k.reshape(kh * kw * groups, og, cg), bias_view,
                 out.reshape(n * groups, og, oh, ow), groups, col_blocks, device=device, KH=kh,
                 KW=kw, PH=ph, PW=pw, DH=dh, DW=dw, SH=sh, SW=sw, HAS_BIAS=bias is not None,
                 ACT=activation, BN=bn, BK=c.pow2(cg, 1, 64), BR=br, BW=bw)
        return out
    # (groups, C/groups KH KW, OC/groups): each group's weight transposed, contiguous (a
    # strided view's rows are read element by element at every k step)
    w_t = transpose(weight.reshape(groups, og, cg * kh * kw), device=device)
    bm = c.pow2(oh * ow, 16, 64)
    bn = c.pow2(og, 16, 64)
    c.launch(conv2d_kernel, (tl.cdiv(oh * ow, bm), tl.cdiv(og, bn), n * groups),
             x.reshape(n * groups, cg, h * w), w_t, bias_view,
             out.reshape(n * groups, og, oh * ow), h, w, ow, groups, device=device, KH=kh,
             KW=kw, SH=sh, SW=sw, PH=ph, PW=pw, DH=dh, DW=dw, HAS_BIAS=bias is not None,
             ACT=activation, BM=bm, BN=bn, BK=32)
    return out
