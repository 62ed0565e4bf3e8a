# What every op's host function shares: argument checks that name the argument, dtypes, output
# allocation, block sizes and the launch on a device.
# SPDX-License-Identifier: Apache-2.0
import contextlib
import contextvars
import functools
import math
import numbers

import numpy as np

from .. import bf16, fp8

# Set by tl.torch while an op runs on torch tensors (tl/torch/bridge.py): it allocates the
# outputs `empty` makes as torch tensors and maps the arrays a launch gets to the tensors they
# stand for. Unset: arrays are numpy's.
HOOK = contextvars.ContextVar("tl_ops_hook", default=None)

# The float formats the ops take, by the kit's names (tl.testing's dtype names).
FLOAT_DTYPES = ("f32", "f16", "bf16")
_NP_NAMES = {"float32": "f32", "float16": "f16", "float64": "f64"}


class OpError(ValueError):
    """A bad argument to a tl.ops function; the message names the op and the argument."""


def fail(op, arg, what):
    raise OpError(f"tl.ops.{op}: argument '{arg}': {what}")


def int_pair(op, arg, v, lowest=None):
    """An int or a pair of ints (each at least `lowest`, where given) as a pair of ints; a
    float, a bool or anything else an OpError naming the argument."""
    def whole(e):
        return isinstance(e, (int, np.integer)) and not isinstance(e, (bool, np.bool_))
    pair = (v, v) if whole(v) else tuple(v) if isinstance(v, (tuple, list)) else ()
    if len(pair) != 2 or not all(whole(e) and (lowest is None or e >= lowest) for e in pair):
        bound = "" if lowest is None else f" >= {lowest}"
        fail(op, arg, f"expected an int{bound} or a pair of them, got {v!r}")
    return int(pair[0]), int(pair[1])


def number(op, arg, v):
    """A real number argument (alpha, eps, correction, scale) as a float: Python and numpy
    numbers alike; a string, a bool or an array an OpError naming it (float("0.1") had taken
    strings)."""
    if isinstance(v, (bool, np.bool_)) or not isinstance(v, numbers.Real):
        fail(op, arg, f"expected a number, got {v!r}")
    return float(v)


def ignore_index(op, v):
    """cross-entropy's ignore_index for the kernels (int32): any integer; one outside int32
    matches no target (the targets were checked to fit), so -1 (negative: never a class a
    checked target holds) stands for it."""
    if not isinstance(v, (int, np.integer)) or isinstance(v, (bool, np.bool_)):
        fail(op, "ignore_index", f"expected an int, got {v!r}")
    return int(v) if -2**31 <= v < 2**31 else -1


def as_array(op, arg, x):
    """`x` as a numpy array (numpy arrays as they are; DLPack tensors without a copy)."""
    if isinstance(x, np.ndarray):
        # inputs in the other byte order as a native copy (kernels read native order)
        return x if x.dtype.isnative else x.astype(x.dtype.newbyteorder("="))
    if hasattr(x, "__dlpack__"):
        return np.from_dlpack(x)
    if isinstance(x, np.generic):
        return as_array(op, arg, np.asarray(x))
    if isinstance(x, (list, tuple, float, int)):
        return np.asarray(x, np.float32)
    fail(op, arg, f"expected an array, got {type(x).__name__}")


def dtype_name(a):
    """'f32', 'f16', 'bf16' (tl.bf16 arrays), 'f8e4m3' / 'f8e5m2' (tl.fp8 arrays), 'f64', or
    numpy's name."""
    if bf16.is_bf16(a):
        return "bf16"
    if fp8.is_fp8(a):
        return "f8" + fp8.format_of(a)
    return _NP_NAMES.get(a.dtype.name, a.dtype.name)


def float_array(op, arg, x, ndim=None, min_ndim=None):
    """Checks that `x` is an f32, f16 or bf16 array (of rank `ndim`, or at least `min_ndim`)."""
    a = as_array(op, arg, x)
    dt = dtype_name(a)
    if dt not in FLOAT_DTYPES:
        fail(op, arg, f"dtype {dt} is not supported (f32, f16, bf16; bf16 arrays: tl.bf16.array)")
    if ndim is not None and a.ndim != ndim:
        fail(op, arg, f"expected rank {ndim}, got shape {a.shape}")
    if min_ndim is not None and a.ndim < min_ndim:
        fail(op, arg, f"expected rank at least {min_ndim}, got shape {a.shape}")
    return a


def same_dtype(op, ref_arg, ref, **others):
    """Every array in `others` has the dtype of `ref` (named `ref_arg`)."""
    for name, a in others.items():
        if a is not None and dtype_name(a) != dtype_name(ref):
            fail(op, name, f"dtype {dtype_name(a)} differs from '{ref_arg}' ({dtype_name(ref)})")


def index_array(op, arg, x, bound=None):
    """An integer array as int32 (the devices without i64 tiles read int32); every value in
    [0, bound) when `bound` is given."""
    a = np.asarray(x) if isinstance(x, (list, tuple)) else as_array(op, arg, x)
    if a.dtype.kind not in "iu":
        fail(op, arg, f"expected integers, got dtype {a.dtype}")
    if bound is not None and a.size and (a.min() < 0 or a.max() >= bound):
        bad = a[(a < 0) | (a >= bound)].ravel()[0]
        fail(op, arg, f"index {int(bad)} out of range [0, {bound})")
    if a.size and (a.min() < -2**31 or a.max() >= 2**31):
        fail(op, arg, "values do not fit in int32")
    return a.astype(np.int32, copy=False)


def _dtype(like):
    return np.dtype(like) if isinstance(like, (type, np.dtype)) else like.dtype


ALIGN = 64  # bytes: a cache line and an AVX-512 vector


def aligned_empty(shape, dtype):
    """An uninitialized C-contiguous array whose data starts on an ALIGN-byte boundary. numpy's
    large arrays start 16 bytes past a page (malloc's header), and llvm-cpu writes large outputs
    with non-temporal stores only from 64-byte aligned blocks (no read of each line before it is
    overwritten: bench/README.md, session 12)."""
    dtype = np.dtype(dtype)
    shape = tuple(int(d) for d in np.atleast_1d(shape)) if not isinstance(shape, int) else (shape,)
    nbytes = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
    raw = np.empty(nbytes + ALIGN, np.uint8)
    start = -raw.ctypes.data % ALIGN
    return raw[start:start + nbytes].view(dtype).reshape(shape)


def empty(shape, like):
    """An uninitialized array of `shape` with the dtype of array `like` (bf16 kept) or dtype
    `like`, 64-byte aligned (aligned_empty); under tl.torch, a torch tensor's memory (or its
    stand-in, for CUDA tensors)."""
    hook = HOOK.get()
    return aligned_empty(shape, _dtype(like)) if hook is None else hook.empty(shape, _dtype(like))


def zeros(shape, like):
    """As `empty`, filled with zeros."""
    hook = HOOK.get()
    if hook is not None:
        return hook.zeros(shape, _dtype(like))
    out = aligned_empty(shape, _dtype(like))
    out[...] = 0
    return out


def full(shape, value, like):
    """As `empty`, filled with `value` (under tl.torch, on the tensors' device: a host write to
    a CUDA tensor's stand-in would be lost)."""
    hook = HOOK.get()
    if hook is not None:
        return hook.full(shape, value, _dtype(like))
    out = aligned_empty(shape, _dtype(like))
    out[...] = bf16.array(np.float32(value)) if bf16.is_bf16(out) else value
    return out


def np_dtype(name):
    """The numpy dtype of arrays holding `name` ('f32', 'f16', 'bf16')."""
    return {"f32": np.dtype(np.float32), "f16": np.dtype(np.float16), "bf16": bf16.DTYPE}[name]


# Per-device tuning of the host functions' block sizes (issue 18: per-device choices are tuning,
# not copies), keyed by the device's compile target, or by target and vendor ("llvm-cpu@intel")
# where one CPU family wants another choice (tuned()); a target not listed gets the default.
# tnpu (the npusim device): each grid program's DMA commands pay ~0.14 us of setup and HBM
# latency, so 16 KiB tiles reach ~0.5 of HBM bandwidth and 128 KiB ones ~0.96
# (bench/README.md). A row reduction there is one v.rsum / v.rmax per tile (its lanes along the
# row); before issue 18's s10 work a sum was a transpose and a column sum whose lanes were the
# tile's rows, which wanted at least 64 rows (the default chip's lanes) per program.
TUNING = {
    # elements per program of elementwise ops
    "elementwise_elements": {"default": 4096, "tnpu": 32768},
    # elements per program of row ops (softmax, norms and their backward)
    "row_elements": {"default": 8192, "tnpu": 65536},
    # cross-entropy and its backward: rows a program = this / the chunk of classes (at least
    # one). llvm-cpu: one row a program over 4096-class chunks, where two rows read 0.36 of the
    # triad (2048 x 32000 f32 forward, session 40, one process: 0.57)
    "cross_entropy_elements": {"default": 8192, "llvm-cpu": 4096},
    # row ops (softmax, norms and their backward) on rows of at most rows.MAX_BLOCK columns: a
    # width that is a multiple of this is the tile's width (0: never), where the power of two
    # above it made every program's tile ragged, a copy to the stack and a masked store.
    # llvm-cpu, 16M f32 elements in rows of 768 (session 40, one process): softmax 0.38 -> 0.86
    # of the triad, layernorm 0.26 -> 0.97. 128 until session 41; 8 since its rows stream from
    # any offset in a line (fusion.cpp): rows of 1000 (16777 x 1000 f32, one process): softmax
    # 0.42 -> 0.67, layernorm 0.27 -> 0.76, rmsnorm 0.39 -> 0.92, sums 0.42 -> 0.71. A multiple,
    # not any width: the widths a process meets (a decoder's softmax over a growing length)
    # compile at most one kernel per 8 (~60 ms each, then cached on disk); odd widths (1001:
    # softmax 0.43, 0.63 as its own tile) keep the ragged tile.
    "row_block_multiple": {"default": 0, "llvm-cpu": 8},
    # softmax, log_softmax and rmsnorm: a row wider than rows.MAX_BLOCK whose width is a
    # multiple of row_block_multiple is one tile up to this width (one pass: read once, one
    # exponential an element), else chunks (rows.row_tiles: two passes over the row, the second
    # from the cache; softmax two exponentials an element). llvm-cpu: a 32000-wide f32 row is
    # 125 KiB of the 2 MiB L2 (one process, three rounds, session 42: softmax 524 x 32000 f32
    # 5.9-6.1 -> 4.5 ms, 1365 x 12288 5.4 -> 4.6, 2048 x 8192 4.9-5.0 -> 4.4-4.6; rmsnorm
    # 5.3-5.4 -> 3.3-3.4, 3.9 -> 3.5, 3.6-3.8 -> 3.3); an odd width (50257) keeps the chunks (as
    # one power-of-two tile it read 0.3 as fast).
    "row_one_pass_widest": {"default": 4096, "llvm-cpu": 65536},
    # reductions along the last axis: whole rows, this many per program (0: one row per
    # program through the (outer, n, inner) path). llvm-cpu: 16 rows of 4 KiB a program read
    # one 64 KiB run, where a 4 KiB program ended its stream every row (Zen 4, 16384 x 1024
    # f32 in one process, three rounds: sum 1.66-1.94 -> 1.42-1.60 ms, max 1.49-1.70 ->
    # 1.32-1.55; 32 rows alike, 8 between; session 19)
    "reduce_rows": {"default": 0, "tnpu": 64, "llvm-cpu": 16},
    # reduce_rows for bf16 and f16 rows (0: reduce_rows). llvm-cpu holds them widened: a block
    # is converted into an f32 stack tile, not read in place, and 16 rows of 1024 made 64 KiB,
    # past the L1 (16384 x 1024 bf16 sums, one process, session 41: 16 rows 0.40 of the triad,
    # 4 0.60, 2 0.60, 1 0.59)
    "reduce_rows_narrow": {"default": 0, "llvm-cpu": 4},
    # with reduce_rows: fewer rows a program where a row would take more than one chunk of
    # 65536 / reduce_rows elements, so that the rows are reduced whole (reduce_kernel's ONE)
    # rather than in chunks transposed to columns. llvm-cpu, sums of 16M f32 (session 40, one
    # process): rows of 8192 0.34 -> 0.84 of the triad, of 32000 0.31 -> 0.88
    "reduce_rows_whole": {"default": False, "llvm-cpu": True},
    # reductions along the last axis where reduce_rows is 0: rows of at most this many
    # elements reduced whole, one per program, in one load (reduce_kernel's ONE) instead of a
    # loop over chunks of BN (var: one read of the row, not two). nvptx: the row in registers
    # as softmax's (row_elements)
    "reduce_row_elements": {"default": 0, "nvptx": 8192},
    # var along rows (one chunk): the sums for the mean as a dot with a column of ones
    # (reduce_kernel's DOT_MEAN). tnpu: the matrix unit takes them while the vector unit
    # subtracts, squares and sums the previous rows (npusim, 4096 x 1024 f32: 0.084 -> 0.076
    # ms; its dot's result double-buffered, tnpu-plan-pipelining)
    "var_mean_dot": {"default": False, "tnpu": True},
    # var along rows (one chunk, reduce_rows of them a program): the rows one at a time
    # (reduce_kernel's ROW_LOOP). llvm-cpu: a row's squared deviations then read the 4 KiB its
    # sum just brought into L1, where the program's 16-row tile (64 KiB) was read back from L2
    # while no DRAM load was in flight (tl.ops.var on 16384 x 1024 f32 alternating with the
    # triad and mean in one process, session 30: 2.44 -> 2.05-2.14 ms, 0.64-0.67 -> 0.77 of the
    # triad; mean 0.79-0.84 in the same runs)
    "var_row_loop": {"default": False, "llvm-cpu": True},
    # gemv: columns per chunk (BK), and elements per program (BM = elements / BK rows).
    # llvm-cpu: whole rows up to 4096 columns, so that a program reads its rows one after the
    # other; chunks of 512 read 16 rows side by side, 16 streams 16 KiB apart (4096 x 4096
    # f32, session 21: (16, 512) 3.4-6.6 ms, (2, 4096) 1.95, (8, 4096) 1.85, about 0.8 of the
    # triad). tnpu: larger tiles, fewer vector passes and DMA commands (npusim, 4096 x 1024
    # f32: (16, 512) 0.095 ms, (64, 1024) 0.067, (128, 1024) 0.063, (256, 512) 0.068; 256 x
    # 1024 does not fit the scratchpad). Session 25, the kernel persistent (ONE): vector unit
    # only, (32, 1024) 0.0408 ms, (64, 1024) 0.0410, (128, 1024) 0.0421; half the rows as a
    # dot on the matrix unit (gemv_matrix_rows 0.5), (128, 1024) 0.0372, (64, 1024) 0.050
    # nvptx: one row of 1024 a program (16384 programs of 8 warps on 16384 x 1024 f32); larger
    # programs were fewer in flight (H200, bench/cuda/tune_sweep.sh, session 30: (512, 8192)
    # 0.48 of the triad, (1024, 4096) 0.72-0.74, (1024, 2048) 0.77, (1024, 1024) 0.82)
    "gemv_block_k": {"default": 512, "llvm-cpu": 4096, "tnpu": 1024, "nvptx": 1024},
    "gemv_elements": {"default": 8192, "tnpu": 131072, "nvptx": 1024},
    # gemv: the fraction of each program's rows computed as a dot on the matrix unit
    # (linear.gemv_kernel's MX), the rest on the vector unit at the same time. tnpu: a row of
    # 1024 f32 is 38 vector cycles (products, row sum) or 32 matrix ones (4 passes of 8
    # chunks), so neither alone keeps up with HBM (npusim, 4096 x 1024 f32 in (128, 1024)
    # blocks: 0.375 0.0406 ms, 0.4375 0.0391, 0.5 0.0372, 0.5625 0.0375, 0.625 0.0377)
    "gemv_matrix_rows": {"default": 0, "tnpu": 0.5},
    # RoPE loads each output's inputs for it alone (rope_kernel's RELOAD): on llvm-cpu each
    # store is then one fused loop from the tensors (inputs used by both outputs were copied
    # into stack tiles first); elsewhere a second load is a second DMA
    "rope_reload": {"default": False, "llvm-cpu": True},
    # RoPE: elements of each half per program (BS positions x BH columns). tnpu: each program's
    # six (BS, BH) tiles are DMA commands of their own, so larger blocks amortize their setup
    # and HBM latency (npusim, (8, 16, 2048, 64) f32: 2048 elements 1.002 ms simulated, 8192
    # 0.581, 16384 0.471, 32768 0.416; 65536 does not fit the scratchpad)
    "rope_elements": {"default": 2048, "tnpu": 32768},
    # RoPE: rows (heads) a program takes at the same positions, cos and sin read once for them
    # (rope_kernel's HEADS). tnpu: each head read them again, a third of the HBM traffic (DMA
    # 96 % busy); npusim, (2, 16, 2048, 64) f32: 1 head 0.065 ms, 2 0.059; 3 or more run out
    # of the 17 scalar registers of a persistent kernel and are lowered fenced (0.084-0.115)
    "rope_heads": {"default": 1, "tnpu": 2},
    # cumsum loads each chunk again for the carry (reduce.cumsum_kernel's RELOAD): on
    # llvm-cpu the scan's input is then read in place instead of copied (cumsum of 16384 x
    # 1024 f32: 69 -> 57 ms side by side); elsewhere a second load is a second DMA
    "scan_reload": {"default": False, "llvm-cpu": True},
    # cumsum along the last axis: whole rows, this many per program (cumsum_kernel's ROWS; 0:
    # one row per program as a (BN, 1) column). The tnpu scans a column as a transpose, a scan
    # of one row, a transpose back, with one of 64 lanes busy and a loop that keeps the kernel
    # from running persistent (npusim, 4096 x 1024 f32: 0.011 of HBM peak). llvm-cpu: 2 rows.
    # Eight had been chosen when a row was one serial chain of additions at the add latency
    # (the rows of a tile scanned 8 at a time as independent chains, bench/README.md s15);
    # since session 32 a row's scan takes 16 columns in log steps, a chain of 64 carries, and
    # smaller programs stream better (session 38's Xeon, 16384 x 1024 f32 in one process,
    # against the triad, 3 rounds: 512 MiB 0.94 / 0.96 / 0.87 / 0.82 with 1 / 2 / 4 / 8 rows,
    # 64 MiB 0.88 / 0.88 / 0.83 / 0.74; results/2026-12-07-tune-sweep-cpu-intel-s38.txt).
    # nvptx: 4 rows of a (4, 1024) tile, 32 threads a row (its parallel scan); H100, 16384 x
    # 1024 f32 against the triad (tune_sweep.sh, session 31): 0.97 with 4, 0.94 with 1, 0.79
    # with 16, 0.81 for one row a program as a (512, 1) column; the 1024-element chunks as 32
    # segments of 32, which the serial scan had needed, 0.63
    "scan_rows": {"default": 0, "tnpu": 64, "llvm-cpu": 2, "nvptx": 4},
    # the longest run of a row that cumsum scans on its own (cumsum_kernel's CHAIN; 0: the
    # whole chunk): reduce.SCAN_CHAIN, the ascending chain the contract allows. llvm-cpu's f32
    # sum scans in any order take 16 columns in log steps (codegen_ops.cpp): a row of 1024 is
    # a chain of 64 carries, and the segments' second pass had added the carries into a stack
    # tile after the scan (cumsum of 16384 x 1024 f32 0.65-0.70 -> 0.76-0.77 of the triad on
    # session 32's Xeon, 0.54-0.56 before the log steps; later, against session 31's code in
    # alternating processes: 0.90-0.91 against 0.68-0.69)
    "scan_chain": {"default": 512, "llvm-cpu": 0},
    # cumsum along the last axis on the matrix unit (reduce.cumsum_kernel's MX): elements per
    # block of rows (0: never). tnpu: 65536 (64 rows of 1024; npusim 4096 x 1024 f32: the
    # vector scan 0.118 ms, MX 0.087 with 64 rows, 0.090 with 32, 0.099 with 16;
    # bench/README.md session 16)
    "scan_matrix": {"default": 0, "tnpu": 65536},
    # elements per program of a copy (concat's pieces, data.copy_kernel). tnpu: one DMA
    # command per block, each paying its setup and HBM latency (npusim concat of 4096 x 1024
    # f32: 16 KiB blocks 0.57 of HBM, 64 KiB 0.79, 256 KiB 0.99)
    "copy_elements": {"default": 4096, "tnpu": 65536},
    # embedding: (elements per program, columns per row copy), and ids copied together
    # (transformer.embedding_kernel's U: their row copies in flight at once; more than 4 need
    # more than the tnpu's 17 scalar registers). npusim, 4096 rows of 1024 f32: 256-column
    # copies, 16 rows a program 1.045 ms (0.04 of HBM); whole rows 0.563; 4 at once 0.344
    # (16 rows a program), 0.341 (64). Each row is a DMA command of its own (~0.2 us: setup and
    # HBM latency for 4 KiB; bench/README.md session 14)
    # llvm-cpu: whole 4 KiB rows (BD 1024), so that each row's store is one fused block of
    # 4 KiB, which streams with non-temporal stores (cpu-stream-stores: no read of the output
    # for ownership); 256 ids a program (Zen 4, 16384 x 1024 f32, random ids, three rounds:
    # 0.45-0.48 -> 0.50-0.53 of the triad; session 18)
    # nvptx: 512-column runs (H200, 16384 ids into 1024-wide f32 rows, bench/cuda/tune_sweep.sh,
    # session 30: (4096, 256) 0.69 of the triad, (4096, 512) 0.90, (8192, 512) 0.90-0.91,
    # (8192, 1024) 0.81)
    "embedding_block": {"default": (4096, 256), "tnpu": (65536, 1024), "llvm-cpu": (256, 1024),
                        "nvptx": (4096, 512)},
    "embedding_unroll": {"default": 1, "tnpu": 4},
    # embedding as gathers of (rows, BD) blocks whose columns are one run (embedding_kernel's
    # G): the tnpu lowers each as a row gather, one dma.gather of whole rows (bench/README.md
    # session 15); cpu keeps the row copies
    "embedding_gather": {"default": False, "tnpu": True},
    # transpose: (rows, columns) of x per program, at most
    # tnpu: 256 x 512 (512 KiB DMA commands) with transpose_swizzle. An HBM channel is
    # (address / 256) mod 16, so a block's loads touch BN / 64 channels and its stores BM / 64:
    # 128 x 1024 stored each block's 1024 rows of 512 bytes on 2 channels (both DMA engines
    # held by the one store, 0.69 of HBM); 256 x 512 stores on 4, and with the swizzle the four
    # cores' loads fall on all 16 (npusim, 4096 x 1024 f32: 0.69 -> 0.98; 512 x 256 0.98,
    # 256 x 256 0.96; bench/README.md session 16; s14: 64 x 64 0.17, 128 x 128 0.28).
    # llvm-cpu: 16 x 1024, so that a program reads 16 rows of 4 KiB runs and writes whole
    # 64-byte lines (its 16 x 16 register blocks, cpu-direct-transposes); 64 x 64 read 256-byte
    # runs (Zen 4, 16384 x 1024 f32: 5.3 -> 3.5 ms; 1024 x 16384 and 4096 x 4096 likewise;
    # bench/README.md session 18). 64 x 1024 since session 19: a streamed block writes each
    # output row's 4 lines back to back, fetching the 64 rows below as it goes (transpose_rows;
    # in one process, 64 rows 4.0-4.8 ms against 16 rows' 4.4-4.8, and 3.4-4.4 against the
    # 16-row order's 4.7-6.0 across processes)
    # conv2d of stride 1 as window-shifted block loads (linear.conv2d_shift_kernel) instead of
    # gathered patches (conv2d_kernel). llvm-cpu, 8 images, 2 threads: 3x3 64 -> 64 channels at
    # 56 x 56 31 -> 12 ms, 128 at 28 x 28 32 -> 12, 1x1 64 -> 256 at 56 x 56 15 -> 6.6 (PyTorch
    # 8.3, 8.0, 5.2). Not yet elsewhere: the tnpu runs out of scalar registers (17) for its
    # offsets, and nvptx keeps the gather until the H200 has run it.
    "conv2d_shift": {"default": False, "llvm-cpu": True},
    # ... and of stride above 1 where C/groups is at least this (0: never): the input split into
    # its stride phases first (linear.conv2d_phases_kernel, one pass over it), so that each
    # window position's pixels are again one block. llvm-cpu, 8 images, 2 threads, 3x3 stride
    # 2 (session 23): 64 -> 128 channels at 56 x 56 24 -> 8 ms, 128 -> 256 at 28 x 28 22 -> 10,
    # 16 -> 64 at 112 x 112 14 -> 7, 4 -> 64 6.4 -> 5.6; 3 channels even (3x3) or slower (7x7
    # 33 -> 54: 49 dots of K = 3 where the gathered form's K is 147)
    "conv2d_phases": {"default": 0, "llvm-cpu": 4},
    # the shift form's output channels a program (BN): llvm-cpu reuses each loaded pixel block
    # over 128 channels (3x3 64 -> 128 stride 2: 10.1 -> 7.9 ms; 128 -> 128 stride 1 at 28 x 28:
    # 14.5 -> 13.2)
    "conv2d_shift_channels": {"default": 64, "llvm-cpu": 128},
    # nvptx: 32 x 64 blocks (H200, 16384 x 1024 f32, bench/cuda/tune_sweep.sh, session 30:
    # 64 x 64 0.68 of the triad, 32 x 32 0.88, 32 x 64 0.90, 32 x 128 0.86-0.87)
    "transpose_block": {"default": (64, 64), "tnpu": (256, 512), "llvm-cpu": (64, 1024),
                        "nvptx": (32, 64)},
    # transpose: programs side by side take rotated column blocks (linear.transpose_kernel's
    # SW; where the column blocks are a power of two), see transpose_block
    "transpose_swizzle": {"default": False, "tnpu": True},
    # reductions along another axis: inner columns per program, at most. On cpu each program
    # streams BI contiguous columns of every row: 256 (1 KiB runs) keep the prefetchers ahead
    # where 64 (256 bytes) did not (column sum of 16384 x 1024 f32: see bench/README.md);
    # 1024 (whole 4 KiB rows, with the rows split across programs: axis_split) streams each
    # program's block of rows contiguously (session 12: 0.38 -> 0.84 of the triad, load 11);
    # 8192 since session 40: rows of 4096 and 8192 whole as well (column sums of 16M f32 in one
    # process: 4096 x 4096 0.45 -> 0.95, 2048 x 8192 0.54 -> 0.90; 16384 took 512 x 32000 to
    # 0.40 from 0.53, its accumulator past the L1), and a width that is a multiple of
    # row_block_multiple the tile's own (axis_choice)
    # tnpu: 1024 as well, with axis_elements' 64 rows a chunk (256 KiB DMA commands) and one
    # program of a column sum per core (axis_split; a second kernel adds the partials): npusim
    # column sum of 4096 x 1024 f32 0.22 -> 0.90 of HBM (64 columns, 16 programs: 0.22; 1024
    # columns in 16-row chunks 0.76, 2 programs per core 0.85, bench/README.md session 14)
    # nvptx: 128 columns in chunks of 128 rows (axis_elements 16384), 4 programs a compute unit
    # (H200, column sums of 16384 x 1024 f32, bench/cuda/tune_sweep.sh, session 30: 64 columns
    # in 64-row chunks 0.49-0.52 of the triad, 128 in 128-row chunks 0.60-0.61; no choice of
    # the grid went past 0.65; H100, session 30b: 64 in 64-row chunks 0.67, 128 in 128-row
    # chunks 0.77). Tried, not kept: the chunks summed elementwise into a (BN, BI) register tile
    # reduced once after the loop instead of a reduction per chunk (H100: 128 x 128 0.77 -> 0.67,
    # 32 x 128 0.65 -> 0.73; results/2026-12-06-conform-cuda-h100-s30b.txt). Since session 38
    # 1024 columns in 16-row chunks: whole 4 KiB rows, each warp reading 512 contiguous bytes
    # of a row; in the default layout of 16 warps a thread holds 8 of the chunk's rows of its
    # 4 columns and sums them in registers, and 2 warps combine through shared memory, where
    # 128 columns in 128-row chunks stacked all 16 warps along the rows to combine (H100,
    # column sums of 131072 x 1024 f32 in one process, results/2026-12-07-tune-sweep-cuda-
    # h100-s38.txt: 128 columns 0.64-0.77 over the grid's choices, 0.76 for the one kept
    # until then; 1024 columns with 4096 or 16384 elements a chunk 0.79-0.80)
    "axis_inner": {"default": 64, "llvm-cpu": 8192, "tnpu": 1024, "nvptx": 1024},
    # reductions along another axis: elements per chunk of rows (BN = this / BI)
    "axis_elements": {"default": 4096, "tnpu": 65536, "nvptx": 16384},
    # reductions along another axis: when the (outer, inner / axis_inner) grid has fewer
    # programs than this many per compute unit, the rows are split into blocks, each a program,
    # and the blocks' partials combined by a second kernel (reduce.split_choice); 0: never.
    # nvptx: a column sum of 16384 x 1024 was 16 programs of 64 columns for 132 SMs (0.06 of
    # the triad on the H200, bench/README.md)
    "axis_split": {"default": 0, "nvptx": 4, "llvm-cpu": 2, "tnpu": 1},
    # per-row quantization in one kernel (quant.quantize_scaled_kernel's ROW_SCALE): elements
    # per program (whole rows). cpu, 16384 x 1024 f32, 5 alternating rounds (load 7.4): 2048
    # and 4096 elements 28.2 ms, 8192 and 16384 32.6 ms, the two-kernel form 36.1 ms. tnpu:
    # fewer, larger DMA commands (npusim, 4096 x 1024 f32: 4096 elements 0.186 ms simulated,
    # 16384 0.166, 65536 0.161; the vector unit's divisions bound the rest)
    # nvptx: 2048 (H200, 16384 x 1024 f32, bench/cuda/tune_sweep.sh, session 30: 4096 0.60-0.61
    # of the triad, 2048 0.65, 1024 0.64-0.65, 8192 0.53)
    # llvm-cpu (session 30, a quiet host, 16384 x 1024 f32 alternating with the triad,
    # `ops_bench.py --tune`, four runs each): one row of 1024 a program 1.95-2.14 ms (0.79-0.83
    # of the triad), 4096 elements 2.28-2.81 (0.61-0.74), 512 2.07. Not measured why: 4 rows'
    # 16 KiB fit L1 as well
    "quantize_row_elements": {"default": 4096, "tnpu": 65536, "nvptx": 2048, "llvm-cpu": 1024},
    # softmax multiplies by 1 / sum (rows.softmax_kernel's RECIP): the tnpu's v.div is 4 vector
    # passes, v.mul 1 (bench/README.md); llvm-cpu: vdivps is one per 3.5 cycles per 8 lanes on
    # Zen 3, vmulps two per cycle (softmax 16384 x 1024 f32, session 15: 5.42 -> 4.95 ms, 0.69 ->
    # 0.76 of the triad); elsewhere it divides
    "softmax_reciprocal": {"default": False, "tnpu": True, "llvm-cpu": True},
    # layernorm's y * w + b as one fma (rows.norm_kernel's FMA): on the tnpu v.fma is one vector
    # pass where v.mul and v.add are two (bench/README.md, npusim s12); elsewhere as written
    "norm_fma": {"default": False, "tnpu": True},
    # attention forward: (queries, keys) per block, for head dims up to 128; None: the largest
    # blocks every device compiles (transformer.py); the tnpu's matrix unit is 128 x 128 (32 x
    # 32 blocks: 0.019 of its f32 peak at S = 512, 128 x 128: 0.076)
    # nvptx: 64 x 64, the fastest or level on the H200 at head dims 64 and 128, S 197 to 1024
    # (bench/cuda/attention_blocks.py; every block size right since session 10's dot fix)
    "attention_blocks": {"default": None, "tnpu": (128, 128), "nvptx": (64, 64)},
    # ... and where the grid with these blocks still gives every compute unit a program (long
    # sequences, many heads). H200, device time (bench/cuda/attention_blocks.py, session 11):
    # S = 2048, 16 heads: 128 x 64 0.802 / 1.750 ms at D = 64 / 128 against 64 x 64's 0.894 /
    # 1.992; with 64 programs (S = 1024, 8 heads) 128 x 64 is the slower (0.227 vs 0.165 ms).
    # tnpu: 256 queries halve v^T's transposes per score (npusim, S = 2048, 2 heads: 0.337 /
    # 0.391 ms at D = 64 / 128 with 128 x 128, 0.309 / 0.352 with 256 x 128; 256 x 256 0.311
    # at D = 64 and over the scratchpad at D = 128; 512 x 128 0.303 at D = 64 with 2 programs
    # a core)
    "attention_blocks_many": {"default": None, "nvptx": (128, 64), "tnpu": (256, 128)},
    # ... and where, besides, no key block is masked (not causal, no padding masks, T a
    # multiple of a loop step's keys): tnpu, 512 queries (v^T transposed for twice the scores)
    # fit the scratchpad only without the masks' tiles (at D = 128 with any mask, at D = 64
    # with key lengths they do not). npusim, s14 (the sums on the matrix unit), S = 2048, 2
    # heads: 256 x 128 0.275 / 0.315 ms at D = 64 / 128, 512 x 128 0.264 / 0.299 (S = 1024,
    # one program a core: 0.077 / 0.090 -> 0.073 / 0.084); 1024 x 128 over the scratchpad
    "attention_blocks_whole": {"default": None, "tnpu": (512, 128)},
    # attention forward computes the next key block's scores before this block's softmax
    # (transformer.attention_kernel's AHEAD): the tnpu's matrix unit then works while its vector
    # unit exponentiates (bench/README.md, npusim s11); elsewhere one unit does both
    "attention_ahead": {"default": False, "tnpu": True},
    # split-K GEMM's partials kernel: (BM, BN, BK); tnpu: whole 128 x 128 matrix-unit passes
    "splitk_blocks": {"default": (64, 64, 32), "tnpu": (128, 128, 128)},
    # gemm(split_k=None) splits small outputs with a long K by itself (linear.splitk_choice)
    # where there are processors to fill: GPUs (many SMs) and the tnpu (npusim: 2.2x at 3 x 70
    # x 5000, 3.0x at 8 x 64 x 16384 in simulated time); on the 2-vCPU cpu device the split
    # measured 0.2-1.8x the unsplit GEMM (bench/README.md, split-K), so not there
    "splitk_auto": {"default": False, "nvptx": True, "tnpu": True},
    # gemm packs both operands into contiguous blocks first (linear.gemm_packed_kernel) when M,
    # N and K are all at least the first value; the rest: its (BM, BN, BK). None: never (the
    # GPUs' and the tnpu's loads are DMA / coalesced block copies already). llvm-cpu: 256 x 32
    # x 64, b's 64 x 32 block (8 KiB, contiguous) stays in L1 while the micro-kernel sweeps a's
    # rows (packed 128 x 128 x 64 was level with the unpacked GEMM; BK 128 or 256 slower at
    # 2048^3). One thread, CPU time: 2048^3 0.81 -> 0.87 of OpenBLAS, 1024^3 0.77 -> 0.80
    # (medians of 3 alternating rounds, bench/README.md, cpu GEMM session 13); 512^3 level.
    # Intel (session 31's Xeon: 48 KiB of L1, 2 MiB of L2 a core), 2 threads against OpenBLAS,
    # ops_bench, four rounds at 1024 / 2048 (512 swung 0.5-0.9 with any choice): this choice
    # 0.67-0.84 / 0.86-0.90; unpacked 0.82-0.84 / 0.80-0.82; packed 128 x 64 x 64 (a's 32 KiB
    # block and b's 16 KiB both in L1) 0.73-0.77 / 0.90-0.94: unpacked below 2048, then that
    "gemm_pack": {"default": None, "llvm-cpu": (512, 256, 32, 64),
                  "llvm-cpu@intel": (2048, 128, 64, 64)},
    # the GEMM's (BM, BN, BK) where no autotuner runs: the C API's plain GEMM and tl-conform's
    # performance.gemm (the generated gemm_tile<BM>x<BN>x<BK>_<dtype> specializations; Python
    # autotunes among linear.GEMM_CONFIGS instead). llvm-cpu: the micro-kernel's tile (1.7x
    # 64 x 64 x 32 at 2048^3); nvptx: 128 x 64 x 64, the fastest of 24 tile shapes at 1024^3 on
    # the H200 (bench/cuda/README.md); tnpu: whole matrix-unit passes, 0.67 of the default
    # chip's f32 peak at 1024^3 where 64 x 64 x 32 made 0.05 (linear.GEMM_CONFIGS)
    "gemm_tile": {"default": (64, 64, 32), "llvm-cpu": (128, 128, 64), "nvptx": (128, 64, 64),
                  "tnpu": (128, 128, 128)},
}


@functools.lru_cache(maxsize=None)
def compute_units(device):
    """`device`'s compute units (cores, SMs) as it reports them."""
    return runtime_info(device)["compute_units"]


@functools.lru_cache(maxsize=None)
def target(device):
    """The compile target of `device` ("cpu" when None), as tl.jit compiles for it."""
    from .. import ir

    info = runtime_info(device)
    return ir.target_for_device(info["target"], info["targets"])


_TUNING_OVERRIDES = contextvars.ContextVar("tl_ops_tuning_overrides", default={})


@contextlib.contextmanager
def tuning_override(**values):
    """Within the block, TUNING[name] is `value` on every device: a benchmark times an op's
    forms side by side (`with tuning_override(conv2d_shift=False): ...`)."""
    unknown = sorted(set(values) - set(TUNING))
    if unknown:
        raise KeyError(f"tuning_override: no tuning entry {', '.join(unknown)} "
                       f"(entries: {', '.join(sorted(TUNING))})")
    token = _TUNING_OVERRIDES.set({**_TUNING_OVERRIDES.get(), **values})
    try:
        yield
    finally:
        _TUNING_OVERRIDES.reset(token)


def tuned(name, device):
    """TUNING[name] for `device` (or tuning_override's value): the entry of its target and
    vendor ("llvm-cpu@intel", where one CPU family wants another choice), else of its target,
    else the default."""
    overrides = _TUNING_OVERRIDES.get()
    if name in overrides:
        return overrides[name]
    table = TUNING[name]
    t = target(device)
    vendor = runtime_info(device).get("vendor", "").lower()
    return table.get(f"{t}@{vendor}", table.get(t, table["default"]))


def runtime_info(device):
    """The HAL's description of `device` ("cpu" when None)."""
    from .. import runtime

    return runtime.device(device or "cpu").info


def pow2(n, lo=1, hi=None):
    """The power of two at or above n, clamped to [lo, hi]."""
    p = 1 << max(0, int(n) - 1).bit_length()
    p = max(p, lo)
    return min(p, hi) if hi is not None else p


def tile_width(n, lo, hi, multiple=0):
    """The tile width for rows of n: n itself where `multiple` (the device's
    TUNING["row_block_multiple"]) divides it and n <= hi, else the power of two at or above n,
    clamped to [lo, hi]. The power of two above 768 makes every program's tile ragged (on
    llvm-cpu a copy to the stack and a masked store: bench/README.md, session 40)."""
    if multiple and n % multiple == 0 and n <= hi:
        return n
    return pow2(n, lo, hi)


def rows_view(a):
    """`a` as (rows, last dim): a view when the leading dimensions merge (always for
    contiguous arrays, and for broadcast rows), else a copy."""
    if a.ndim == 0:
        return a.reshape(1, 1)
    if a.ndim == 1:
        return a.reshape(1, a.shape[0])
    # (the row count spelled out: -1 is ambiguous for rows of 0 elements)
    return a.reshape(math.prod(a.shape[:-1]), a.shape[-1])


def axis_index(op, axis, ndim):
    """`axis` of an array of rank `ndim` as an index in [0, ndim); an error naming the op for
    an axis out of range or one that is not an integer (a bool, a float, None)."""
    if isinstance(axis, bool) or not isinstance(axis, (int, np.integer)):
        fail(op, "axis", f"expected an integer, got {axis!r}")
    if not -ndim <= axis < ndim:
        fail(op, "axis", f"{axis} is out of range for rank {ndim}")
    return int(axis) % ndim


def axis_view(a, axis, op):
    """`a` as (outer, n, inner) around `axis` (a view for contiguous arrays): ops along one
    axis run on this 3D view."""
    if a.ndim == 0:
        fail(op, "x", "expected an array of rank at least 1")
    axis = axis_index(op, axis, a.ndim)
    outer = int(np.prod(a.shape[:axis], dtype=np.int64))
    inner = int(np.prod(a.shape[axis + 1:], dtype=np.int64))
    return a.reshape(outer, a.shape[axis], inner), axis


def device_args(*args):
    """The launch's arguments: as given, or under tl.torch each stand-in array replaced by the
    view of the CUDA tensor it stands for."""
    hook = HOOK.get()
    return args if hook is None else tuple(hook.arg(a) for a in args)


def launch(kernel, grid, *args, device=None, **constexprs):
    kernel[grid](*device_args(*args), device=device or "cpu", **constexprs)
