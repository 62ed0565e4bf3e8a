# fp64 references for kernel tests: the computation in float64, from inputs of any dtype.
# SPDX-License-Identifier: Apache-2.0
"""References in float64, to compare kernels against with ``assert_close``. Inputs are widened
to float64 first (exactly: every TL float format fits), so the reference has no rounding of the
kernel's dtype in it.

>>> import numpy as np
>>> from tl.testing import reference
>>> reference.softmax(np.float32([[0, 0]])).tolist()
[[0.5, 0.5]]
"""
import numpy as np


def f64(*arrays):
    """The arrays as float64 (one array: the array itself)."""
    out = tuple(np.asarray(a, np.float64) for a in arrays)
    return out[0] if len(out) == 1 else out


def add(x, y):
    x, y = f64(x, y)
    return x + y


def matmul(a, b):
    """a @ b in float64. For the n u cond bound of a dot, pass ``n=a.shape[-1]`` and
    ``ref_abs=matmul(abs(a), abs(b))`` to assert_close."""
    a, b = f64(a, b)
    return a @ b


def softmax(x, axis=-1):
    x = f64(x)
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def layernorm(x, weight, bias, eps=1e-5, axis=-1):
    x, weight, bias = f64(x, weight, bias)
    mu, var = x.mean(axis=axis, keepdims=True), x.var(axis=axis, keepdims=True)
    return (x - mu) / np.sqrt(var + eps) * weight + bias


def rmsnorm(x, weight, eps=1e-6, axis=-1):
    x, weight = f64(x, weight)
    return x / np.sqrt((x * x).mean(axis=axis, keepdims=True) + eps) * weight
