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


# ---- casts to the float types, every source type and rounding mode, against cpu ----------------
# cpu's llvm-cpu is bit-exact with the interpreter on every pair (LlvmCpu.CastsBetweenEveryPair
# OfTypesAreBitExact); another device must give the same bits, NaN's sign and payload aside, or
# refuse the cast at compile time with a located error. Catches a directed mode ignored (nvptx
# and llvm-cpu rounded integers to floats to nearest whatever the mode; llvm-cpu f16 <-> bf16
# too), e4m3 -> e5m2 kept unrounded, bf16 -> f64 widened as bits.

FLOAT_EDGES = [0.0, -0.0, 1.5, -2.5, 0.3333, 448.0, 464.0, 57344.0, 65504.0, 7e4, -1e10, 3e9,
               2.0 ** 31, 3e38, 1e-7, 127.5, -128.5, 255.5, np.inf, -np.inf, np.nan, 0.34375,
               1 / 3, 2.5, 3.5, -0.5, 1e-3, 12345.678, -7.25, 100.5, 0.1, -33.3]
INT_EDGES = [0, 1, -1, 127, -128, 255, 32767, -32768, 65535, 300, 2049, 4097, -77, 5, 16777217,
             2147483647, -2147483647, 65521, -4095, 33, 1025, 257, -257, 129]
CAST_TYPES = {"f32": tl.float32, "f16": tl.float16, "bf16": tl.bfloat16, "f64": tl.float64,
              "f8e4m3": tl.float8e4m3, "f8e5m2": tl.float8e5m2, "i32": tl.int32,
              "i16": tl.int16, "i8": tl.int8, "u8": tl.uint8}
FLOAT_TARGETS = ["f32", "f16", "bf16", "f64", "f8e4m3", "f8e5m2"]


@tl.kernel
def cast_modes_kernel(x: tl.tensor, rne: tl.tensor, rtz: tl.tensor, rd: tl.tensor,
                      ru: tl.tensor, DT: tl.constexpr):
    v = tl.load(x + (0,), (32,))
    tl.store(rne + (0,), tl.cast(v, DT, "rne"))
    tl.store(rtz + (0,), tl.cast(v, DT, "rtz"))
    tl.store(rd + (0,), tl.cast(v, DT, "rd"))
    tl.store(ru + (0,), tl.cast(v, DT, "ru"))


def typed(name, values):
    """32 values of type `name` (those it holds, repeated), as the array the devices take."""
    from tl import bf16, fp8
    if name[0] in "iu":
        info = np.iinfo(name.replace("i", "int").replace("u", "uint"))
        values = [v for v in values if info.min <= v <= info.max]
    values = (list(values) * 32)[:32]
    if name.startswith("f8"):
        return fp8.array(np.array(values, np.float32), name[2:])
    if name == "bf16":
        return bf16.array(np.array(values, np.float32))
    dt = np.dtype({"f32": np.float32, "f16": np.float16, "f64": np.float64, "i32": np.int32,
                   "i16": np.int16, "i8": np.int8, "u8": np.uint8}[name])
    with np.errstate(over="ignore", invalid="ignore"):
        return np.array(values, dt)


def values(a):
    """An array of any of CAST_TYPES as float64 (bf16 and fp8 decoded: NaN compares as NaN)."""
    from tl import bf16, fp8
    if bf16.is_bf16(a):
        return bf16.to_float32(a).astype(np.float64)
    if fp8.is_fp8(a):
        return fp8.to_float32(a).astype(np.float64)
    return np.asarray(a).astype(np.float64)


@pytest.mark.parametrize("device", [d for d in DEVICES if d != "cpu"])
@pytest.mark.parametrize("src", list(CAST_TYPES))
def test_casts_to_floats_match_cpu(src, device):
    x = typed(src, FLOAT_EDGES if src[0] == "f" else INT_EDGES)
    refused = []
    for dst in FLOAT_TARGETS:
        if dst == src:
            continue
        got = {}
        for dev in ("cpu", device):
            outs = [typed(dst, [0.0] * 32) for _ in range(4)]
            try:
                cast_modes_kernel[(1,)](x, *outs, device=dev, DT=CAST_TYPES[dst])
            except tl.CompileError as e:
                assert dev != "cpu", f"cpu refused {src} -> {dst}: {e}"
                assert "<tl>:" in str(e) and "error:" in str(e), str(e)  # located
                refused.append(dst)
                break
            got[dev] = outs
        if dst in refused:
            continue
        for mode, a, b in zip(("rne", "rtz", "rd", "ru"), got["cpu"], got[device]):
            wa, wb = values(a), values(b)
            same = (wa == wb) | (np.isnan(wa) & np.isnan(wb))
            same &= (np.signbit(wa) == np.signbit(wb)) | np.isnan(wa)
            assert same.all(), (f"{src} -> {dst} {mode} on {device}: at {np.nonzero(~same)[0]}: "
                                f"x {values(x)[~same]}, cpu {wa[~same]}, {device} {wb[~same]}")
    if device == "npusim":  # no f64, fp8 or i16 tiles on its vector unit
        unheld = {"f64", "f8e4m3", "f8e5m2"}
        every = src in unheld or src == "i16"
        assert set(refused) == (set(FLOAT_TARGETS) if every else unheld) - {src}, refused
