# tl.math: Triton's tl.math / libdevice spellings of the elementwise math ops.
# SPDX-License-Identifier: Apache-2.0
"""Elementwise math under Triton's names (``tl.math.*``, libdevice's for popc/clz/isnan...).

>>> import numpy as np, tl
>>> @tl.kernel
... def k(x: tl.tensor, y: tl.tensor):
...     tl.store(y, tl.math.rint(tl.load(x, (4,))))
>>> x = np.array([0.5, 1.5, 2.5, -2.5], np.float32); y = np.empty_like(x)
>>> k[(1,)](x, y)
>>> y.tolist()
[0.0, 2.0, 2.0, -2.0]
"""
from .language import (exp, exp2, log, log2, sqrt, rsqrt, tanh, erf, sigmoid, sin, cos, abs,
                       fma, maximum, minimum, clamp, tan, asin, acos, atan, atan2, sinh, cosh,
                       log1p, expm1, erfinv, ndtr, rint, floor, ceil, trunc, isnan, isinf,
                       isfinite, fmod, copysign, popc, clz, cdiv)

normcdf = ndtr  # libdevice's name
