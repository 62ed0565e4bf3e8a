# Scalar argument types and the front end's implicit conversions (python/README.md, "Implicit
# conversions"): each rule has a test here, on every device where it runs a kernel.
# SPDX-License-Identifier: Apache-2.0
import inspect
import re

import numpy as np
import pytest

import tl
from util import TARGETS, close

on_devices = pytest.mark.parametrize("device,target", TARGETS)


def line_of(k, marker):
    lines, start = inspect.getsourcelines(k.fn)
    return start + next(i for i, l in enumerate(lines) if marker in l)


def tile_dtypes(text):
    """The element types of every tile<...> in IR text (scalars and arguments left out)."""
    return set(re.findall(r"tile<[0-9x]*x(\w+)>", text))


def op_dtypes(text, op):
    """The element types of the results of every `op` in IR text."""
    return set(re.findall(rf"= {op} .*: tile<[0-9x]*x(\w+)>", text))


# ---- scalar arguments are weak: f32 tiles stay f32 ----------------------------------------------

@tl.kernel
def mixed_scalars(x: tl.tensor, y: tl.tensor, a, b: float, c: int, d, e: float,
                  BLOCK: tl.constexpr):
    v = tl.load(x + (0,), (BLOCK,))
    w = v * a + v * b - c * v + d * v          # d: np.float64, weak like a Python float
    w = tl.where(v < 0, d, w)                  # a weak f64 as a where operand
    w = tl.maximum(w, -d) + tl.full((BLOCK,), d) + (a + d) * v
    w = w + tl.full((BLOCK,), e * e) / 1e9     # e: float given an int (70000): f32, not i32
    tl.store(y + (0,), w)


def mixed_ref(x, a, b, c, d, e):
    f = np.float32
    x = x.astype(np.float32)
    w = x * f(a) + x * f(b) - f(c) * x + f(d) * x
    w = np.where(x < 0, f(d), w)
    w = np.maximum(w, -f(d)) + f(d) + (f(a) + f(d)) * x
    return w + np.float32(float(e) * e) / f(1e9)


@on_devices
def test_mixed_python_annotated_numpy_scalars_give_f32(device, target):
    # Before: d (np.float64) made every tile it touched f64 (f64 math, an f64 store cast back;
    # npusim has no f64 tiles), and e: float given 70000 was an i32 whose square wrapped.
    x = np.random.default_rng(1).standard_normal(64).astype(np.float32)
    y = np.zeros_like(x)
    args = (x, y, 0.5, 0.25, 3, np.float64(0.1), 70000)
    text = mixed_scalars.ir(*args, BLOCK=64)
    assert tile_dtypes(text) <= {"f32", "i1"}, text
    assert all(f"%{n}: f32" in text for n in "abde") and "%c: i32" in text, text
    mixed_scalars[(1,)](*args, BLOCK=64, device=device, target=target)
    close(y, mixed_ref(x, 0.5, 0.25, 3, np.float64(0.1), 70000), rtol=1e-6)


@tl.kernel
def scale_f16(x: tl.tensor, y: tl.tensor, s, BLOCK: tl.constexpr):
    v = tl.load(x + (0,), (BLOCK,))
    tl.store(y + (0,), tl.maximum(v * (s * 2.0), -s))  # values computed from s stay weak


@on_devices
def test_float_scalar_keeps_f16_tile(device, target):
    # Before: an f16 tile times a float argument (f32) ran in f32.
    x = np.linspace(-2, 2, 32).astype(np.float16)
    y = np.zeros_like(x)
    text = scale_f16.ir(x, y, 1.5, BLOCK=32)
    assert op_dtypes(text, "mul") == op_dtypes(text, "max") == {"f16"} and "%s: f32" in text, text
    scale_f16[(1,)](x, y, 1.5, BLOCK=32, device=device, target=target)
    np.testing.assert_array_equal(y, np.maximum(x * np.float16(3.0), np.float16(-1.5)))


@tl.kernel
def add_int(x: tl.tensor, y: tl.tensor, k, BLOCK: tl.constexpr):
    tl.store(y + (0,), tl.load(x + (0,), (BLOCK,)) + k)


@on_devices
def test_numpy_int64_scalar_is_a_python_int(device, target):
    # Before: an i32 tile plus np.int64 (what indexing an int array gives) ran as i64.
    x = np.arange(16, dtype=np.int32)
    y = np.zeros_like(x)
    text = add_int.ir(x, y, np.int64(5), BLOCK=16)
    assert tile_dtypes(text) == {"i32"} and "%k: i32" in text, text
    add_int[(1,)](x, y, np.int64(5), BLOCK=16, device=device, target=target)
    np.testing.assert_array_equal(y, x + 5)


@on_devices
def test_int_scalar_keeps_i8_tile(device, target):
    # Before: an i8 tile plus an np.int32 ran as i32 (then the store narrowed it back).
    x = np.arange(-8, 8, dtype=np.int8)
    y = np.zeros_like(x)
    text = add_int.ir(x, y, np.int32(100), BLOCK=16)
    assert op_dtypes(text, "add") == {"i8"} and "%k: i32" in text, text
    add_int[(1,)](x, y, np.int32(100), BLOCK=16, device=device, target=target)
    np.testing.assert_array_equal(y, (x.astype(np.int32) + 100).astype(np.int8))


@tl.kernel
def fill_f32(y: tl.tensor, s: tl.float32, BLOCK: tl.constexpr):
    tl.store(y + (0,), tl.full((BLOCK,), s))


@on_devices
def test_float_annotation_given_an_int(device, target):
    # Before: the HAL got the int's bits in an f32 argument (3 read as 4e-45).
    y = np.zeros(8, np.float32)
    fill_f32[(1,)](y, 3, BLOCK=8, device=device, target=target)
    np.testing.assert_array_equal(y, 3)


def test_int_annotation_rejects_a_float():
    # Before: 2.5 went to the HAL as a float in an i32 argument (the kernel read other bits).
    with pytest.raises(TypeError, match="argument 'k' of add_int_ann is annotated int, got float"):
        add_int_ann[(1,)](np.zeros(4, np.int32), np.zeros(4, np.int32), 2.5, BLOCK=4)
    with pytest.raises(TypeError, match="argument 'n' of f64_into_loop is annotated tl.int32"):
        f64_into_loop[(1,)](np.zeros(4, np.float32), 2.0, 1.0)


@tl.kernel
def add_int_ann(x: tl.tensor, y: tl.tensor, k: int, BLOCK: tl.constexpr):
    tl.store(y + (0,), tl.load(x + (0,), (BLOCK,)) + k)


# ---- f64 when asked for: kept; when it meets an f32 operand that cannot promote: named ------------

@tl.kernel
def scale_f64(x: tl.tensor, y: tl.tensor, s: tl.float64, BLOCK: tl.constexpr):
    tl.store(y + (0,), tl.load(x + (0,), (BLOCK,)) * s)


@on_devices
def test_tl_float64_annotation_promotes(device, target):
    # A tl.float64 annotation is the user asking: the product is computed in f64 (0.1 as f64,
    # not rounded to f32 first: an f32 computation misses by ~1e-9 relative).
    x = np.linspace(1, 2, 16).astype(np.float32)
    y = np.zeros(16, np.float64)
    assert "f64" in tile_dtypes(scale_f64.ir(x, y, 0.1, BLOCK=16))
    scale_f64[(1,)](x, y, 0.1, BLOCK=16, device=device, target=target)
    close(y, x.astype(np.float64) * 0.1, rtol=1e-14)


@tl.kernel
def f64_into_dot(a: tl.tensor, b: tl.tensor, s: tl.float64):
    x = tl.load(a + (0, 0), (4, 4))
    x = x * s  # WIDEN
    y = tl.load(b + (0, 0), (4, 4))
    tl.store(a + (0, 0), tl.dot(x, y))  # DOT


def test_widening_to_f64_is_logged(caplog):
    # TL_DEBUG=1 shows every widening to f64 (this one is legitimate: s is tl.float64).
    x, y = np.ones(16, np.float32), np.zeros(16, np.float64)
    _, params, _ = scale_f64.specialize(scale_f64.bind((x, y, 0.5), {"BLOCK": 16}))
    with caplog.at_level("DEBUG", logger="tl"):
        scale_f64.trace(params)  # traced afresh (kernel.ir may come from the cache)
    assert any("widened tile<16xf32> to f64" in r.getMessage() for r in caplog.records)


def test_dot_type_error_names_where_f64_began():
    with pytest.raises(tl.CompileError, match="tl.dot operand types differ") as e:
        f64_into_dot[(1,)](np.zeros((4, 4), np.float32), np.zeros((4, 4), np.float32), 2.0)
    msg = str(e.value)
    assert e.value.lineno == line_of(f64_into_dot, "# DOT"), msg
    widen = line_of(f64_into_dot, "# WIDEN")
    assert f"f64 since {__file__}:{line_of(f64_into_dot, 'def f64_into_dot')}:" in msg, msg
    assert f"widened tile<4x4xf32> to f64 at {__file__}:{widen}:" in msg, msg


@tl.kernel
def f64_into_loop(a: tl.tensor, n: tl.int32, s: tl.float64):
    acc = tl.zeros((4,), tl.float32)
    v = tl.load(a + (0,), (4,)) * s  # WIDEN
    for i in tl.range(n):
        acc = acc + v
    tl.store(a + (0,), acc)


def test_carried_type_change_names_where_f64_began():
    with pytest.raises(tl.CompileError, match="'acc' changes type from tile<4xf32> to "
                                              "tile<4xf64> \\(f64 since ") as e:
        f64_into_loop[(1,)](np.zeros(4, np.float32), 2, 2.0)
    assert f"to f64 at {__file__}:{line_of(f64_into_loop, '# WIDEN')}:" in str(e.value)


# ---- the other implicit conversions, one kernel each ------------------------------------------

@tl.kernel
def conversions(xf: tl.tensor, xi: tl.tensor, yf: tl.tensor, yi: tl.tensor, yh: tl.tensor,
                BLOCK: tl.constexpr):
    f = tl.load(xf + (0,), (BLOCK,), other=1)   # other= in the tensor's dtype
    i = tl.load(xi + (0,), (BLOCK,))
    r = i * 0.5                                  # float number with an int tile: f32
    r = r + i / 4                                # / on ints: f32
    r = r + (i + f)                              # i32 tile + f32 tile: f32
    tl.store(yf + (0,), r)
    tl.store(yi + (0,), i // -3 + i % -3)        # // and % round toward zero (the IR's div/rem)
    tl.store(yh + (0,), r)                       # store casts to the tensor's dtype (f16)


@on_devices
def test_documented_conversions(device, target):
    xf = np.linspace(-3, 3, 8).astype(np.float32)
    xi = np.arange(-4, 4, dtype=np.int32)
    yf, yi, yh = np.zeros(8, np.float32), np.zeros(8, np.int32), np.zeros(8, np.float16)
    conversions[(1,)](xf, xi, yf, yi, yh, BLOCK=8, device=device, target=target)
    r = xi * 0.5 + xi / 4 + (xi + xf.astype(np.float64))
    close(yf, r)
    np.testing.assert_array_equal(yi, np.trunc(xi / -3).astype(np.int32) + np.fmod(xi, -3))
    np.testing.assert_array_equal(yh, r.astype(np.float32).astype(np.float16))


@tl.kernel
def conversions_2d(x: tl.tensor, y: tl.tensor, flag):
    v = tl.load(x + (0, 0), (4, 4))
    r = tl.dot(v, v, acc=tl.full((4, 4), 2), acc_dtype=tl.float32)  # i32 acc to acc_dtype
    if flag:                                     # an i32 condition: flag != 0
        r = r + 1.0
    r = tl.where(not flag, -r, r)                # not on i32: flag == 0
    r = tl.where(flag and flag, r, r * 0.5)      # and: operands to i1
    tl.store(y + (0, x.stride(0) - x.shape[1]), r)  # stride/shape cast to i32 offsets


@on_devices
@pytest.mark.parametrize("flag", [0, 3])
def test_documented_conversions_2d(device, target, flag):
    x = np.arange(16, dtype=np.float32).reshape(4, 4) / 8
    y = np.full((4, 4), np.nan, np.float32)
    text = conversions_2d.ir(x, y, flag)
    assert "cast" in text and "tile<4x4xi32>" in text, text
    conversions_2d[(1,)](x, y, flag, device=device, target=target)
    r = x.astype(np.float64) @ x + 2
    ref = r + 1 if flag else -r * 0.5
    close(y, ref)


@tl.kernel
def carried_scale(x: tl.tensor, y: tl.tensor, z: tl.tensor, s, n: tl.int32, BLOCK: tl.constexpr):
    v = tl.load(x + (0,), (BLOCK,))
    k = s
    t = 0.0
    for i in tl.range(n):
        k = k * 0.5                      # a scalar argument halved: still weak
        t = t + tl.sum(v.to(tl.float32))  # a sum of an f32 tile: not weak
    if n > 1:
        k = k * 2.0                      # weak in both branches: weak after the if
    tl.store(y + (0,), v * k)            # f16
    tl.store(z + (0,), v * t)            # f32


@on_devices
def test_loop_carried_scalar_stays_weak(device, target):
    # Before: k came out of the loop (and the if) as a plain f32 value and made v * k f32.
    x = np.linspace(-1, 2, 16).astype(np.float16)
    y, z = np.zeros_like(x), np.zeros(16, np.float32)
    text = carried_scale.ir(x, y, z, 3.0, 2, BLOCK=16)
    assert re.findall(r"= mul .*: tile<16x(\w+)>", text) == ["f16", "f32"], text
    carried_scale[(1,)](x, y, z, 3.0, 2, BLOCK=16, device=device, target=target)
    np.testing.assert_array_equal(y, x * np.float16(1.5))
    close(z, x.astype(np.float64) * 2 * x.astype(np.float64).sum())
