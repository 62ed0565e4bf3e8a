# Data movement: concat (a strided copy into slices of the output), the dequantize kernel (the
# quantization ops' host functions are in quant.py) and pooling.
# SPDX-License-Identifier: Apache-2.0
import numpy as np

import tl

from . import _common as c


@tl.kernel
def copy_kernel(x: tl.tensor, out: tl.tensor, BN: tl.constexpr, BI: tl.constexpr):
    """out = x on (outer, n, inner) views (out may be a slice of a larger array)."""
    o = tl.program_id(0)
    k = tl.program_id(1) * BN
    i0 = tl.program_id(2) * BI
    tl.store(out + (o, k, i0), tl.load(x + (o, k, i0), (1, BN, BI)))


@tl.kernel
def dequantize_kernel(q: tl.tensor, scale: tl.tensor, out: tl.tensor, BM: tl.constexpr,
                      BN: tl.constexpr, COLS: tl.constexpr = False):
    """out = q * scale[row] (scale[col] with COLS; q int8 or fp8), computed in f32, rounded
    once to out's dtype."""
    m0 = tl.program_id(0) * BM
    n0 = tl.program_id(1) * BN
    v = tl.load(q + (m0, n0), (BM, BN)).to(tl.float32)
    if COLS:
        v = v * tl.load(scale + (n0,), (BN,)).to(tl.float32)[None, :]
    else:
        v = v * tl.load(scale + (m0,), (BM,)).to(tl.float32)[:, None]
    tl.store(out + (m0, n0), v)


def concat(arrays, axis=0, *, device=None):
    """The arrays joined along `axis` (same dtype, same shape elsewhere), as numpy.concatenate;
    f32, f16, bf16 or int32."""
    op = "concat"
    if not arrays:
        c.fail(op, "arrays", "expected at least one array")
    arrays = [c.as_array(op, f"arrays[{i}]", a) for i, a in enumerate(arrays)]
    first = arrays[0]
    if c.dtype_name(first) not in c.FLOAT_DTYPES + ("int32",):
        c.fail(op, "arrays[0]", f"dtype {c.dtype_name(first)} is not supported "
               "(f32, f16, bf16, int32)")
    if first.ndim == 0:
        c.fail(op, "arrays[0]", "expected an array of rank at least 1")
    axis = c.axis_index(op, axis, first.ndim)
    for i, a in enumerate(arrays[1:], 1):
        if c.dtype_name(a) != c.dtype_name(first):
            c.fail(op, f"arrays[{i}]", f"dtype {c.dtype_name(a)} differs from arrays[0]'s "
                   f"{c.dtype_name(first)}")
        if a.ndim != first.ndim or a.shape[:axis] + a.shape[axis + 1:] != \
                first.shape[:axis] + first.shape[axis + 1:]:
            c.fail(op, f"arrays[{i}]", f"shape {a.shape} does not match arrays[0]'s "
                   f"{first.shape} outside axis {axis}")
    total = sum(a.shape[axis] for a in arrays)
    shape = first.shape[:axis] + (total,) + first.shape[axis + 1:]
    out = c.empty(shape, first)
    out3, _ = c.axis_view(out, axis, op)  # a view: out is contiguous
    at = 0
    for a in arrays:
        n = a.shape[axis]
        if a.size:
            x3, _ = c.axis_view(a, axis, op)
            o3 = out3[:, at:at + n, :]
            if x3.shape[2] == 1:  # along the last axis: (1, rows, n) blocks of row slices
                x3, o3 = x3[None, :, :, 0], o3[None, :, :, 0]
            # Whole rows of up to 1024 elements: a concat along rows copies (BN, 1024) blocks,
            # one contiguous run that the llvm-cpu backend fuses and streams (64 x 64 blocks:
            # 256-byte runs, 0.42 of the triad); along the last axis (BN, n) blocks of row
            # slices, fused row by row (one 2 KiB row slice per program: 0.53-0.65).
            bi = c.pow2(x3.shape[2], 1, 1024)
            bn = c.pow2(x3.shape[1], 1, max(1, c.tuned("copy_elements", device) // bi))
            c.launch(copy_kernel, (x3.shape[0], tl.cdiv(x3.shape[1], bn),
                                   tl.cdiv(x3.shape[2], bi)), x3, o3, device=device, BN=bn,
                     BI=bi)
        at += n
    return out


@tl.kernel
def pool2d_kernel(x: tl.tensor, out: tl.tensor, MODE: tl.constexpr, KH: tl.constexpr,
                  KW: tl.constexpr, SH: tl.constexpr, SW: tl.constexpr, PH: tl.constexpr,
                  PW: tl.constexpr, DH: tl.constexpr, DW: tl.constexpr,
                  COUNT_PAD: tl.constexpr, BOH: tl.constexpr, BOW: tl.constexpr):
    """Max or average pooling of x (N C, H, W) into out (N C, OH, OW): windows KH x KW at
    strides SH, SW, dilation DH, DW, the input padded by PH, PW on each side (-inf for max; for
    avg the divisor counts the window's positions inside the padded input when COUNT_PAD, else
    those inside x). A (BOH, BOW) block of outputs per program, each window position gathered
    in turn (unrolled); padding is never read (masked)."""
    nc = tl.program_id(0)
    oh = tl.program_id(1) * BOH + tl.arange(0, BOH)
    ow = tl.program_id(2) * BOW + tl.arange(0, BOW)
    ok = (oh < out.shape[1])[:, None] & (ow < out.shape[2])[None, :]
    plane = tl.zeros((BOH, BOW), tl.int32) + nc
    if MODE == "max":
        acc = tl.full((BOH, BOW), -float("inf"), tl.float32)
    else:
        acc = tl.zeros((BOH, BOW), tl.float32)
    count = tl.zeros((BOH, BOW), tl.float32)
    for kh in tl.static_range(KH):
        ih = oh * SH - PH + kh * DH
        for kw in tl.static_range(KW):
            iw = ow * SW - PW + kw * DW
            inside = ((ih >= 0) & (ih < x.shape[1]))[:, None] & \
                ((iw >= 0) & (iw < x.shape[2]))[None, :]
            if MODE == "max":
                v = tl.gather(x, (plane, ih[:, None], iw[None, :]), mask=ok & inside,
                              other=-float("inf")).to(tl.float32)
                acc = tl.maximum(acc, v)
            else:
                v = tl.gather(x, (plane, ih[:, None], iw[None, :]), mask=ok & inside)
                acc = acc + v.to(tl.float32)
                if COUNT_PAD:
                    padded = (ih < x.shape[1] + PH)[:, None] & (iw < x.shape[2] + PW)[None, :]
                    count = count + tl.where(padded, 1.0, 0.0)
                else:
                    count = count + tl.where(inside, 1.0, 0.0)
    if MODE == "avg":
        acc = acc / tl.maximum(count, 1.0)
    tl.store(out + (nc, tl.program_id(1) * BOH, tl.program_id(2) * BOW),
             tl.reshape(acc, (1, BOH, BOW)))


def pool_output_size(size, k, s, p, d, ceil_mode):
    """torch's pooling output length: (size + 2p - d (k - 1) - 1) / s + 1, rounded down (up in
    ceil_mode, but a last window that would start in the right padding is dropped)."""
    span = size + 2 * p - d * (k - 1) - 1
    if span < 0:
        return 0
    out = (span + (s - 1 if ceil_mode else 0)) // s + 1
    if ceil_mode and (out - 1) * s >= size + p:
        out -= 1
    return out


def _pool(mode, x, kernel_size, stride, padding, dilation, ceil_mode, count_include_pad, device):
    op = f"{mode}_pool2d"
    x = c.float_array(op, "x", x, ndim=4)
    kh, kw = c.int_pair(op, "kernel_size", kernel_size, 1)
    sh, sw = (kh, kw) if stride is None else c.int_pair(op, "stride", stride, 1)
    ph, pw = c.int_pair(op, "padding", padding, 0)
    dh, dw = c.int_pair(op, "dilation", dilation, 1)
    n, ch, h, w = x.shape
    # As torch: padding past half a window (a window of padding alone) is an error.
    if ph > (dh * (kh - 1) + 1) // 2 or pw > (dw * (kw - 1) + 1) // 2:
        c.fail(op, "padding", f"{(ph, pw)} is more than half the window {(kh, kw)} "
               f"(dilation {(dh, dw)})")
    oh = pool_output_size(h, kh, sh, ph, dh, ceil_mode)
    ow = pool_output_size(w, kw, sw, pw, dw, ceil_mode)
    if oh < 1 or ow < 1:
        c.fail(op, "kernel_size", f"{(kh, kw)} (dilation {(dh, dw)}) does not fit in the "
               f"input's {(h, w)} padded by {(ph, pw)}")
    out = c.empty((n, ch, oh, ow), x)
    if out.size:
        bow = c.pow2(ow, 16, 64)
        boh = c.pow2(oh, 1, max(1, 1024 // bow))
        c.launch(pool2d_kernel, (n * ch, tl.cdiv(oh, boh), tl.cdiv(ow, bow)),
                 x.reshape(n * ch, h, w), out.reshape(n * ch, oh, ow), device=device, MODE=mode,
                 KH=kh, KW=kw, SH=sh, SW=sw, PH=ph, PW=pw, DH=dh, DW=dw,
                 COUNT_PAD=bool(count_include_pad), BOH=boh, BOW=bow)
    return out


def max_pool2d(x, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, *,
               device=None):
    """Max pooling of x (N, C, H, W) over kernel_size windows (int or (kh, kw)) at `stride`
    (default: the window), `dilation`, x padded by `padding` (-inf) on each side, the output
    length rounded up in `ceil_mode`: torch's max_pool2d."""
    return _pool("max", x, kernel_size, stride, padding, dilation, ceil_mode, True, device)


def avg_pool2d(x, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,
               *, device=None):
    """Average pooling as torch's avg_pool2d: x padded by `padding` zeros; each window's sum
    divided by its positions inside the padded input (`count_include_pad`, torch's default) or
    inside x."""
    return _pool("avg", x, kernel_size, stride, padding, 1, ceil_mode, count_include_pad, device)

