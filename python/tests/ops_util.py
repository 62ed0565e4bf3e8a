# Shared by the tl.ops tests: inputs in each dtype, the comparison with the kit's table.
# SPDX-License-Identifier: Apache-2.0
import numpy as np

import tl
from tl.ops import reference
from tl.testing import assert_close

# f32 and bf16 everywhere; f16 on the ops where its range suits random inputs.
DTYPES = ["f32", "bf16"]
DTYPES_F16 = DTYPES + ["f16"]


def make(rng, shape, dtype, lo=-1.0, hi=1.0, normal=False):
    """Random values in `dtype` (bf16: a tl.bf16 array)."""
    v = rng.standard_normal(shape) if normal else rng.uniform(lo, hi, shape)
    if dtype == "bf16":
        return tl.bf16.array(v)
    return v.astype({"f32": np.float32, "f16": np.float16}[dtype])


def random_bits(rng, shape, dtype):
    """Every bit pattern of `dtype` alike (NaNs of either sign with their payloads, signalling
    ones among them, infinities, subnormals): the inputs of ops that only move data, which must
    return them unchanged (compare with `as_bits`)."""
    size = {"f32": 4, "bf16": 2, "f16": 2}[dtype]
    bits = rng.integers(0, 2**(8 * size), shape, dtype=np.uint64).astype(f"u{size}")
    # and every 7th element one of these, so that each small block has some: signalling NaNs
    # (both signs, a payload), a negative quiet NaN with a payload, the smallest subnormal, -0
    special = {"f32": [0xFF800001, 0x7FA00000, 0xFFC00001, 1, 0x80000000],
               "bf16": [0xFF95, 0x7F81, 0xFFC1, 1, 0x8000],
               "f16": [0xFD01, 0x7C01, 0xFE01, 1, 0x8000]}[dtype]
    flat = bits.reshape(-1)
    flat[::7] = np.resize(np.array(special, f"u{size}"), flat[::7].shape)
    if dtype == "bf16":
        return bits.view(tl.bf16.DTYPE)
    return bits.view({"f32": np.float32, "f16": np.float16}[dtype])


def as_bits(a):
    """`a`'s elements as unsigned integers of their width (NaNs compare by their bits)."""
    a = np.asarray(a)
    return a.view(f"u{a.dtype.itemsize}")


def check(actual, ref, op, dtype, **kw):
    """tl.testing.assert_close of a tl.ops result (bf16 widened to f32) against its fp64
    reference, with the table's bound for `op` on `dtype`."""
    __tracebackhide__ = True
    got = reference.f64(actual) if dtype == "bf16" else actual
    if dtype == "bf16":
        assert tl.bf16.is_bf16(actual), "a bf16 op must return a bf16 array"
    else:
        assert np.asarray(actual).dtype == {"f32": np.float32, "f16": np.float16}[dtype]
    return assert_close(got, ref, op=op, dtype=dtype, **kw)

# Every op runs on cpu and, where the build or the machine has them, on npusim (the simulator)
# and cuda (a GPU): the same tests.
DEVICES = ["cpu"] + [d for d in tl.devices() if d in ("npusim", "cuda")]


def key_masks(b, t, rng_):
    """(B, T) bool: entry 0 no key, 1 left padding (the last 20 keys: not a prefix, which
    key_lengths cannot say), 2 every key, 3 and on a random pattern."""
    m = np.ones((b, t), bool)
    m[0] = False
    m[1, :t - 20] = False
    m[3:] = rng_.random((b - 3, t)) < 0.5
    return m
