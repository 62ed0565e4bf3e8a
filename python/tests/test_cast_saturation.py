# Float -> 8 and 16-bit integer casts on the devices: rounded by the mode, saturated to the
# type's range, NaN -> 0 (the llvm-cpu backend clamps in f32 and converts through i32 for these,
# so that the int8 quantize's loop vectorizes, with AVX-512 one vcvtps2dq carrying the rounding
# mode: rd and ru catch a mode embedded wrongly; this pins the semantics at the edges).
# SPDX-License-Identifier: Apache-2.0
import numpy as np
import pytest

import tl
from ops_util import DEVICES

EDGES = [np.nan, np.inf, -np.inf, 1e10, -1e10, 127.5, 126.5, -128.5, -127.5, 128.0, -129.0,
         255.5, 254.5, 256.0, -0.7, -0.5, 0.5, 1.5, 2.5, -2.5, 32767.5, -32768.5, 65535.5,
         65536.0, 3.7, -3.7, 0.0, -0.0]


@tl.kernel
def cast_kernel(x: tl.tensor, out: tl.tensor, DT: tl.constexpr, MODE: tl.constexpr,
                BLOCK: tl.constexpr):
    v = tl.load(x + (0,), (BLOCK,))
    tl.store(out + (0,), tl.cast(v, DT, MODE))


def expected(v, np_dt, mode):
    info = np.iinfo(np_dt)
    r = np.where(np.isnan(v), 0.0, v)
    r = {"rne": np.rint, "rtz": np.trunc, "rd": np.floor, "ru": np.ceil}[mode](r)
    return np.clip(r, info.min, info.max).astype(np_dt)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("mode", ["rne", "rtz", "rd", "ru"])
@pytest.mark.parametrize("dt,np_dt", [(tl.int8, np.int8), (tl.uint8, np.uint8),
                                      (tl.int16, np.int16), (tl.uint16, np.uint16)])
def test_float_to_narrow_int_saturates(dt, np_dt, mode, device):
    if device == "npusim" and np.dtype(np_dt).itemsize == 2:
        pytest.skip("the tnpu backend has no 16-bit integer tiles")
    # The edges, then enough random values for whole vectors (the vectorized path).
    rng = np.random.default_rng(7)
    v = np.concatenate([np.array(EDGES), rng.uniform(-70000, 70000, 256 - len(EDGES))])
    x = v.astype(np.float32)
    out = np.zeros(256, np_dt)
    cast_kernel[(1,)](x, out, device=device, DT=dt, MODE=mode, BLOCK=256)
    np.testing.assert_array_equal(out, expected(x.astype(np.float64), np_dt, mode))
