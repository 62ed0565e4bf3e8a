# TL: tile kernels in Python, compiled to Tile IR and run on any device through the HAL.
# SPDX-License-Identifier: Apache-2.0
"""``import tl``: write tile kernels in Python and run them on any TL device.

>>> import numpy as np, tl
>>> @tl.kernel
... def vadd(x: tl.tensor, y: tl.tensor, z: tl.tensor, BLOCK: tl.constexpr):
...     i = tl.program_id(0) * BLOCK
...     tl.store(z + (i,), tl.load(x + (i,), (BLOCK,)) + tl.load(y + (i,), (BLOCK,)))
>>> x = np.arange(1000, dtype=np.float32); z = np.empty_like(x)
>>> vadd[(tl.cdiv(1000, 256),)](x, x, z, BLOCK=256)
>>> bool((z == 2 * x).all())
True
"""
from .core import (dtype, int1, int8, int16, int32, int64, uint8, uint16, uint32, float16,
                   bfloat16, float32, float64, float8e4m3, float8e5m2)
from .errors import CompileError, TLRuntimeError
from .language import (constexpr, tensor, program_id, num_programs, arange, full, zeros,
                       zeros_like, load, store, gather, scatter, atomic_add, reshape, trans,
                       expand_dims, broadcast_to, exp, exp2, log, log2, sqrt, rsqrt, tanh, erf,
                       ndtr, sigmoid, sin, cos, abs, maximum, minimum, fma, where, cast, cdiv, dot,
                       sum, max, min, argmax, cumsum, cummax, cummin, print, device_assert, range,
                       static_range, floor, ceil, clamp, PropagateNan, static_assert,
                       static_print)
from . import math
from . import bf16
from . import fp8
from .funcs import func
from .jit import kernel, Kernel, profile, profile_report
from .tuning import autotune, Config
from .runtime import devices, synchronize
from .ir import targets

__version__ = "0.1.0"
