# fp8 arrays on the host: numpy has no 8-bit floats, so an fp8 array is a uint8 array of the bit
# patterns whose dtype carries the tag {"tl_dtype": "float8e4m3"} (or "float8e5m2"), as tl.bf16
# does for bfloat16; a launch reads it as Tile IR's f8e4m3 / f8e5m2.
# SPDX-License-Identifier: Apache-2.0
"""Host arrays of 8-bit floats (OCP FP8) for kernels and ``tl.ops``.

Two formats, as Tile IR's (compiler/ir/include/tl/ir/types.h): ``"e4m3"`` (the "fn" variant:
bias 7, no infinities, max 448, NaN = S.1111.111) and ``"e5m2"`` (IEEE-like: bias 15, max
57344, infinities). Conversion from float rounds to nearest even and keeps subnormals; a value
past the largest finite one becomes NaN (e4m3) or +-inf (e5m2), as the IR's cast does, unless
``saturate=True`` (then +-max; NaN stays NaN).

>>> import numpy as np, tl
>>> x = tl.fp8.array(np.float32([1.0, 1.0625, 300.0, 1000.0, 2.0**-9]), "e4m3")
>>> tl.fp8.format_of(x), x.dtype.name
('e4m3', 'uint8')
>>> tl.fp8.to_float32(x).tolist()
[1.0, 1.0, 288.0, nan, 0.001953125]
>>> tl.fp8.to_float32(tl.fp8.array(np.float32([1000.0]), "e4m3", saturate=True)).tolist()
[448.0]
"""
import numpy as np

# One descriptor object per format: the fast launch path compares dtypes by identity.
E4M3 = np.dtype(np.uint8, metadata={"tl_dtype": "float8e4m3"})
E5M2 = np.dtype(np.uint8, metadata={"tl_dtype": "float8e5m2"})
DTYPES = {"e4m3": E4M3, "e5m2": E5M2}
# (mantissa bits, exponent bias, largest finite value, whether the format has infinities)
FORMATS = {"e4m3": (3, 7, 448.0, False), "e5m2": (2, 15, 57344.0, True)}
MAX = {f: v[2] for f, v in FORMATS.items()}


def format_of(a):
    """'e4m3' or 'e5m2' for an fp8 array (a dtype tagged by this module), else None."""
    md = getattr(getattr(a, "dtype", None), "metadata", None)
    tag = md.get("tl_dtype") if md else None
    return {"float8e4m3": "e4m3", "float8e5m2": "e5m2"}.get(tag)


def is_fp8(a):
    """Whether numpy array `a` holds fp8 bit patterns."""
    return format_of(a) is not None


def _check(fmt):
    if fmt not in FORMATS:
        raise ValueError(f"tl.fp8: unknown format {fmt!r} (expected 'e4m3' or 'e5m2')")
    return FORMATS[fmt]


def encode(x, fmt, saturate=False):
    """The fp8 bit patterns (uint8, untagged) of float array `x`: round to nearest even, with
    subnormals; overflow to NaN (e4m3) or inf (e5m2), or to +-max when `saturate`."""
    mbits, bias, fmax, has_inf = _check(fmt)
    x = np.asarray(x, np.float64)
    a = np.abs(x)
    sign = np.signbit(x).astype(np.int64) << 7
    finite = np.isfinite(a)
    safe = np.where(finite, a, 0.0)
    _, ex = np.frexp(safe)  # safe = m 2^ex, m in [0.5, 1): the exponent is ex - 1
    e = np.maximum(ex.astype(np.int64) - 1, 1 - bias)  # below the normals: the subnormal step
    e = np.where(safe == 0, 1 - bias, e)
    step = np.ldexp(1.0, e - mbits)
    n = np.rint(safe / step).astype(np.int64)  # numpy's rint: nearest, ties to even
    # ((e + bias) << mbits) + n - 2^mbits covers subnormals (e = 1 - bias, n < 2^mbits), normals
    # and a mantissa rounding up into the next binade (n = 2^(mbits + 1)).
    bits = ((e + bias) << mbits) + n - (1 << mbits)
    over = (n * step > fmax) | np.isinf(a)
    nan_bits = 0x7F if not has_inf else 0x7E
    inf_bits = 0x7C if has_inf else 0x7F
    max_bits = int(encode_scalar_max(fmt))
    bits = np.where(over, max_bits if saturate else inf_bits, bits)
    bits = np.where(np.isnan(x), nan_bits, bits)
    return (bits | sign).astype(np.uint8)


def encode_scalar_max(fmt):
    """The bit pattern of the largest finite value of `fmt` (0x7E e4m3, 0x7B e5m2)."""
    return 0x7E if fmt == "e4m3" else 0x7B


def array(x, fmt="e4m3", saturate=False):
    """`x` (any float array) rounded to fp8 format `fmt` ('e4m3' or 'e5m2'): bit patterns in a
    uint8 array whose dtype carries the tag kernels read."""
    bits = encode(x, fmt, saturate)  # (0-d stays 0-d: np.ascontiguousarray makes it 1-d)
    return np.ascontiguousarray(bits).view(DTYPES[fmt]).reshape(np.shape(bits))


def empty(shape, fmt="e4m3"):
    """An uninitialized fp8 array."""
    _check(fmt)
    return np.empty(shape, DTYPES[fmt])


def decode(bits, fmt):
    """The values (float64, exact) of fp8 bit patterns `bits` in format `fmt`."""
    mbits, bias, _, has_inf = _check(fmt)
    b = np.asarray(bits).view(np.uint8).astype(np.int64)
    sign = np.where(b & 0x80, -1.0, 1.0)
    ebits = (b >> mbits) & ((1 << (7 - mbits)) - 1)
    man = b & ((1 << mbits) - 1)
    top = (1 << (7 - mbits)) - 1
    sub = ebits == 0
    v = np.where(sub, np.ldexp(man.astype(np.float64), 1 - bias - mbits),
                 np.ldexp((man + (1 << mbits)).astype(np.float64), ebits - bias - mbits))
    if has_inf:
        v = np.where((ebits == top) & (man == 0), np.inf, v)
        v = np.where((ebits == top) & (man != 0), np.nan, v)
    else:
        v = np.where((ebits == top) & (man == (1 << mbits) - 1), np.nan, v)
    return sign * v


def to_float32(a):
    """The values of fp8 array `a` as float32 (exact: every fp8 value is an f32)."""
    fmt = format_of(a)
    if fmt is None:
        raise ValueError("tl.fp8.to_float32: expected an fp8 array (tl.fp8.array), got dtype "
                         f"{getattr(a, 'dtype', type(a).__name__)}")
    a = np.asarray(a)
    return decode(np.ascontiguousarray(a).view(np.uint8), fmt).astype(np.float32).reshape(a.shape)
