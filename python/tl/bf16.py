# bf16 arrays on the host: numpy has no bfloat16, so a bf16 array is a uint16 array of the bit
# patterns whose dtype carries the tag {"tl_dtype": "bfloat16"}; the launch reads it as bf16.
# SPDX-License-Identifier: Apache-2.0
"""Host arrays of bfloat16 for kernels and ``tl.ops``.

>>> import numpy as np, tl
>>> x = tl.bf16.array(np.float32([1.0, 1.00390625, -2.5]))  # rounded to nearest even
>>> tl.bf16.is_bf16(x), x.dtype.name
(True, 'uint16')
>>> tl.bf16.to_float32(x).tolist()
[1.0, 1.0, -2.5]
"""
import numpy as np

# One descriptor object: the fast launch path compares dtypes by identity.
DTYPE = np.dtype(np.uint16, metadata={"tl_dtype": "bfloat16"})


def is_bf16(a):
    """Whether numpy array `a` holds bf16 bit patterns (a dtype tagged by this module)."""
    md = getattr(getattr(a, "dtype", None), "metadata", None)
    return bool(md) and md.get("tl_dtype") == "bfloat16"


def array(x):
    """`x` (any float array) rounded to bf16, to nearest even (NaN stays NaN); x's shape (a
    0-d array stays 0-d: np.ascontiguousarray makes it 1-d)."""
    x = np.asarray(x, np.float64)
    f = np.ascontiguousarray(x.astype(np.float32))
    bits = f.view(np.uint32).astype(np.uint64)
    rounded = (bits + 0x7FFF + ((bits >> 16) & 1)) >> 16
    nan = np.isnan(f)
    out = np.where(nan, (bits >> 16) | 0x40, rounded).astype(np.uint16)
    return out.view(DTYPE).reshape(x.shape)


def empty(shape):
    """An uninitialized bf16 array."""
    return np.empty(shape, DTYPE)


def to_float32(a):
    """The values of bf16 array `a` as float32 (exact), in a's shape."""
    a = np.asarray(a)
    bits = np.ascontiguousarray(a).view(np.uint16).astype(np.uint32) << 16
    return bits.view(np.float32).reshape(a.shape)
