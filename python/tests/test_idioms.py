# The Python idioms Triton users write in kernels (python/README.md, "Python in kernels"): each
# runs on every device against numpy; the constructs not supported fail with a located error.
# SPDX-License-Identifier: Apache-2.0
import inspect
import math

import numpy as np
import pytest

import tl
from util import TARGETS, close

on_devices = pytest.mark.parametrize("device,target", TARGETS)


def line_of(fn, marker):
    lines, start = inspect.getsourcelines(fn)
    return start + next(i for i, l in enumerate(lines) if marker in l)


# ---- float("inf"), float("nan"), math constants -------------------------------------------------

@tl.kernel
def masked_max(x: tl.tensor, y: tl.tensor, n, BLOCK: tl.constexpr):
    v = tl.load(x + (0,), (BLOCK,), other=-float("inf"))  # lanes past n never win the max
    m = tl.full((BLOCK,), -float("inf"), tl.float32)
    m = tl.maximum(m, v)
    i = tl.arange(0, BLOCK)
    out = tl.where(i == 0, tl.max(m), 0.0)
    out = tl.where(i == 1, float("inf"), out)
    out = tl.where(i == 2, float("nan"), out)
    out = tl.where(i == 3, math.inf * -1, out)
    out = tl.where(i == 4, math.pi * 2 + math.e + math.tau / 4 + math.sqrt(2.0), out)
    out = tl.where(i == 5, math.log2(BLOCK) + (math.nan if n < 0 else 0.5), out)
    tl.store(y + (0,), out)


@on_devices
def test_inf_nan_and_math_constants(device, target):
    # Fails if -inf were a finite padding (max of all-negative data would be 0 or that value),
    # if inf/nan lost their class, or if a math constant were rounded or mistaken.
    x = -np.arange(1, 6, dtype=np.float32)  # 5 negatives, read as a block of 8
    y = np.zeros(8, np.float32)
    masked_max[(1,)](x, y, 5, BLOCK=8, device=device, target=target)
    assert y[0] == -1.0
    assert np.isposinf(y[1]) and np.isnan(y[2]) and np.isneginf(y[3])
    assert y[4] == np.float32(2 * math.pi + math.e + math.tau / 4 + math.sqrt(2.0))
    assert y[5] == 3.5


# ---- min / max / abs ----------------------------------------------------------------------------

@tl.kernel
def min_max_abs(x: tl.tensor, y: tl.tensor, s: tl.tensor, n, f, BLOCK: tl.constexpr):
    i = tl.arange(0, min(BLOCK, 16))          # constexprs fold: a 16-lane tile
    v = tl.load(x + (0,), (min(BLOCK, 16),))
    r = max(v, 0.0) + min(v, -1.0) * 2.0      # on tiles: elementwise, as tl.maximum/minimum
    r = r + abs(v) * 10.0 + max(v, 0.5, 1.5)  # three arguments
    tl.store(y + (0,), r)
    k = min(n, 3) * 100 + max(n - 10, -4) * 10 + abs(-n) + abs(f)   # on runtime scalars
    tl.store(s + (0,), tl.where(i == 0, k, tl.where(i == 1, abs(min(f, -2.5)), max(abs(-7), 2))))


@on_devices
def test_min_max_abs_on_scalars_constexprs_and_tiles(device, target):
    # Fails if min/max picked the wrong operand, abs kept the sign, or BLOCK=32 was not clamped
    # to 16 lanes (y[16:] would change).
    x = np.linspace(-3, 3, 16).astype(np.float32)
    y = np.full(32, 99, np.float32)
    s = np.zeros(16, np.float32)
    min_max_abs[(1,)](x, y, s, 5, 1.25, BLOCK=32, device=device, target=target)
    ref = (np.maximum(x, 0) + np.minimum(x, -1) * 2 + np.abs(x) * 10 + np.maximum(x, 1.5))
    close(y[:16], ref)
    assert (y[16:] == 99).all()
    assert s[0] == 3 * 100 + (-4) * 10 + 5 + 1.25
    assert s[1] == 2.5 and (s[2:] == 7).all()


# ---- tl.cdiv ------------------------------------------------------------------------------------

@tl.kernel
def blocked_sum(x: tl.tensor, y: tl.tensor, n, N: tl.constexpr, BLOCK: tl.constexpr):
    acc = tl.zeros((BLOCK,), tl.float32)
    for b in tl.range(tl.cdiv(n, BLOCK)):      # a runtime scalar
        acc += tl.load(x + (b * BLOCK,), (BLOCK,))
    for b in tl.range(1, end=tl.cdiv(n, BLOCK), step=2):   # keywords: blocks 1 (and 3)
        acc += tl.load(x + (b * BLOCK,), (BLOCK,)) * 1000.0
    tl.static_assert(tl.cdiv(N, BLOCK) == 3, "N=40, BLOCK=16 make 3 blocks")
    for b in tl.static_range(tl.cdiv(N, BLOCK)):  # a constexpr: unrolled
        acc += tl.load(x + (b * BLOCK,), (BLOCK,)) * 100.0
    tl.store(y + (0,), tl.sum(acc) + tl.zeros((1,), tl.float32))


@on_devices
def test_cdiv_on_runtime_scalars_and_constexprs(device, target):
    # Fails if cdiv rounded down (the ragged last 8 elements would be left out of both sums).
    x = np.arange(40, dtype=np.float32)
    y = np.zeros(1, np.float32)
    blocked_sum[(1,)](x, y, 40, N=40, BLOCK=16, device=device, target=target)
    assert y[0] == 101 * x.sum() + 1000 * x[16:32].sum()
    assert tl.cdiv(40, 16) == tl.cdiv(np.int64(40), np.int32(16)) == 3  # also in grids
    with pytest.raises(TypeError, match="tl.cdiv needs integers, got 2.5"):
        tl.cdiv(2.5, 2)


# ---- keyword arguments, @tl.func helpers --------------------------------------------------------

@tl.func
def scaled(v, scale=1.0, shift=0.0):
    return v * scale + shift


@tl.func
def stats(v, BLOCK: tl.constexpr, center=True):
    mean = tl.sum(v, axis=0) / BLOCK
    d = scaled(v, shift=-mean) if center else v   # a helper calling a helper
    return mean, tl.sum(d * d, axis=0) / BLOCK


@tl.func
def first_positive(v, MODE: tl.constexpr):
    if MODE == "relu":       # a return under a compile-time condition ends the helper
        return max(v, 0.0)
    for k in tl.static_range(3):
        if k == MODE:
            return v * (k + 1)
    return v


@tl.func
def write_twice(t, v, BLOCK: tl.constexpr):
    tl.store(t + (0,), v)                  # a helper writes a tensor argument
    tl.store(t + (BLOCK,), v * 2.0)


@tl.kernel
def helpers(x: tl.tensor, y: tl.tensor, z: tl.tensor, BLOCK: tl.constexpr):
    v = tl.load(x + (0,), shape=(BLOCK,), other=0.0)
    mean, var = stats(v, BLOCK=BLOCK)
    w = scaled(v, 2.0, shift=1.0) + first_positive(v, "relu") + first_positive(v, MODE=2)
    tl.store(y + (0,), tl.where(tl.arange(0, BLOCK) == 0, mean, tl.where(
        tl.arange(0, end=BLOCK) == 1, var, w)))
    write_twice(z, v, BLOCK)


@on_devices
def test_keywords_defaults_and_nested_helpers(device, target):
    # Fails if a default or keyword bound the wrong parameter (shift and scale swapped), the
    # helper did not return at its first return, or the helper's stores were not copied back
    # (npusim copies back only the tensors the kernel writes).
    x = np.linspace(-1, 2, 8).astype(np.float32)
    y = np.zeros(8, np.float32)
    z = np.zeros(16, np.float32)
    helpers[(1,)](x, y, z, BLOCK=8, device=device, target=target)
    w = x * 2 + 1 + np.maximum(x, 0) + x * 3
    close(y[2:], w[2:])
    close(y[:2], [x.mean(), x.var()])
    close(z, np.concatenate([x, 2 * x]))


@tl.func
def running_sum(t, n, BLOCK: tl.constexpr):
    acc = tl.zeros((BLOCK,), tl.float32)
    for b in tl.range(tl.cdiv(n, BLOCK)):   # a loop carrying acc, inside a helper
        acc += tl.load(t + (b * BLOCK,), (BLOCK,))
    if n > 100:                             # an if on a traced condition, inside a helper
        acc = acc * -1.0
    return tl.sum(acc)


@tl.kernel
def sum_kernel(x: tl.tensor, y: tl.tensor, n, BLOCK: tl.constexpr):
    tl.static_print("sum_kernel block", BLOCK, tl.zeros((BLOCK,), tl.float16))
    tl.store(y + (0,), tl.zeros((1,), tl.float32) + running_sum(x, n, BLOCK))


@on_devices
def test_helper_with_loop_and_if(device, target, capsys):
    # Fails if the helper's loop lost its carried sum or its if took the wrong branch.
    sum_kernel.cache.clear()  # traced again, so that tl.static_print prints here
    x = np.arange(200, dtype=np.float32)
    y = np.zeros(1, np.float32)
    sum_kernel[(1,)](x, y, 20, BLOCK=16, device=device, target=target)
    assert y[0] == x[:20 + 12].sum()  # the last block reads 12 elements past n
    sum_kernel[(1,)](x, y, 200, BLOCK=16, device=device, target=target)
    assert y[0] == -x.sum()
    assert capsys.readouterr().out == "sum_kernel block 16 tile<16xf16>\n"  # traced once


# ---- tuples of constexprs -----------------------------------------------------------------------

@tl.kernel
def tuples(x: tl.tensor, y: tl.tensor, BLOCKS: tl.constexpr, SCALES: tl.constexpr,
           ACT: tl.constexpr, bias: tl.constexpr = None):
    BM, BN = BLOCKS                              # unpacking
    tl.static_assert(len(BLOCKS) == 2 and BLOCKS[-1] == BN)
    v = tl.load(x + (0, 0), (BLOCKS[0], BN))     # indexing
    acc = tl.zeros((BM, BN), tl.float32)
    for s in SCALES:                             # a static loop over a tuple
        acc += v * s
    for i, s in enumerate(SCALES[1:]):           # slicing, enumerate
        acc += v * (i * s)
    if ACT in ("relu", "leaky"):
        acc = max(acc, 0.0)
    if bias is not None:
        acc += bias
    tl.store(y + (0, 0), acc)


@on_devices
def test_tuples_of_constexprs(device, target):
    # Fails if an element, slice or enumerate index were off by one, or `in` / `is None`
    # chose the other branch.
    x = np.linspace(-2, 2, 32).reshape(4, 8).astype(np.float32)
    y = np.zeros_like(x)
    tuples[(1,)](x, y, (4, 8), (1.0, 2.0, 3.0), "relu", device=device, target=target)
    close(y, np.maximum(x * 6 + x * (0 * 2 + 1 * 3), 0))
    tuples[(1,)](x, y, (4, 8), (0.5,), "none", bias=1.5, device=device, target=target)
    close(y, x * 0.5 + 1.5)


@tl.kernel
def slices(x: tl.tensor, col: tl.tensor, blk: tl.tensor, row: tl.tensor, J: tl.constexpr):
    t = tl.load(x + (0, 0), (8, 16))
    tl.store(col + (0,), t[:, J])                   # a column, its axis dropped
    tl.store(blk + (0, 0), t[2:6, -4:] * 2.0)       # a block, bounds from the end
    tl.store(row + (0, 0, 0), t[None, 7, 8:][:, None, :])  # row 7 from column 8, new axes


@on_devices
def test_tile_subscripts_take_blocks(device, target):
    # x[a:b, i] of a tile as numpy does it. Fails if an offset were ignored (the block from row
    # 0), a negative bound not counted from the end, an integer index's axis kept, or None
    # placed on the wrong axis. (Power-of-two blocks: nvptx's tiles are.)
    x = np.arange(128, dtype=np.float32).reshape(8, 16)
    col, blk = np.zeros(8, np.float32), np.zeros((4, 4), np.float32)
    row = np.zeros((1, 1, 8), np.float32)
    slices[(1,)](x, col, blk, row, 15, device=device, target=target)
    np.testing.assert_array_equal(col, x[:, 15])
    np.testing.assert_array_equal(blk, x[2:6, -4:] * 2)
    np.testing.assert_array_equal(row, x[None, 7, 8:][:, None, :])


@tl.kernel
def folded(x: tl.tensor, y: tl.tensor, SCALES: tl.constexpr, N: tl.constexpr):
    v = tl.load(x + (0,), (4,))
    acc = v * 0.0
    for a, b in zip(SCALES, reversed(list(SCALES))):   # (1, 3), (2, 2), (3, 1)
        acc += v * (a * 10 + b)
    acc += int(N / 2) + bool(N) * 1000 + float(len(tuple(SCALES)))  # 3 + 1000 + 3
    if v.dtype is tl.float16 or v.dtype is not tl.float32:
        acc = acc * 0.0
    tl.store(y + (0,), acc)


@on_devices
def test_builtins_on_compile_time_values(device, target):
    # Fails if zip/reversed paired other elements, a conversion folded otherwise, or `is` on
    # dtypes chose the zeroing branch.
    x = np.arange(4, dtype=np.float32)
    y = np.zeros(4, np.float32)
    folded[(1,)](x, y, (1, 2, 3), 7, device=device, target=target)
    assert (y == x * (13 + 22 + 31) + 1006).all(), y


# ---- early return -------------------------------------------------------------------------------

@tl.kernel
def guarded(x: tl.tensor, y: tl.tensor, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    if pid * BLOCK >= n:              # Triton's bounds guard
        return
    v = tl.load(x + (pid * BLOCK,), (BLOCK,))
    if tl.sum(v) > 100.0:
        tl.store(y + (pid * BLOCK,), v * 0.0 - 1.0)
        return
    elif pid == 1:
        if BLOCK == 4:
            tl.store(y + (pid * BLOCK,), v * 0.0 - 2.0)
            return
    tl.store(y + (pid * BLOCK,), v * 2.0)


@on_devices
def test_early_return_on_traced_conditions(device, target):
    # Fails if a returned program went on to the stores after its return (blocks 4, 5 would
    # be written; blocks 1 and 7 would get 2*x too).
    x = np.arange(32, dtype=np.float32)
    y = np.full(32, 7, np.float32)
    guarded[(8,)](x, y, 16, BLOCK=4, device=device, target=target)
    ref = 2 * x
    ref[4:8] = -2
    ref[16:] = 7
    assert (y == ref).all(), y
    y[:] = 7
    guarded[(8,)](x, y, 32, BLOCK=4, device=device, target=target)  # sums of 26..31 > 100
    ref = np.where(x // 4 >= 6, -1, 2 * x)
    ref[4:8] = -2
    assert (y == ref).all(), y


# ---- specialization ----------------------------------------------------------------------------

@tl.kernel
def times(x: tl.tensor, y: tl.tensor, X: tl.constexpr):
    tl.store(y + (0,), tl.load(x + (0,), (4,)) * X)


def test_constexprs_equal_in_value_but_not_type_specialize_apart():
    # 2 and 2.0 are equal dict keys, yet an i32 tile times 2 wraps in i32 and times 2.0 is
    # f32: before, the second launch reused the first's kernel and stored -2**31.
    x = np.full(4, 2**30, np.int32)
    y = np.zeros(4, np.float64)
    times[(1,)](x, y, X=2)
    assert (y == -2.0**31).all()
    times[(1,)](x, y, X=2.0)
    assert (y == 2.0**31).all()


# ---- errors -------------------------------------------------------------------------------------

def plain_helper(v):
    return v


@tl.func
def recursive(v):
    return recursive(v)  # ERR recursion


@tl.func
def ping(v):
    return pong(v)


@tl.func
def pong(v):
    return ping(v)  # ERR mutual


@tl.func
def exp_of(v):
    return tl.exp(v)  # ERR in helper


@tl.func
def returns_in_loop(v, n):
    for i in tl.range(n):
        return v  # ERR return in loop
    return v


@tl.kernel
def launched(x: tl.tensor):
    pass


ERRORS = [
    ("w = float(v)", "float() of a traced value is not supported: use x.to(tl.float32)"),
    ("w = int(n)", "int() of a traced value is not supported"),
    ("w = float('abc')", "float(): could not convert string to float: 'abc'"),
    ("w = min(v, v, key=abs)", "min() with key= is not supported in a kernel"),
    ("w = max(v)", "max() of one traced value: use tl.max(x) to reduce a tile"),
    ("w = math.sqrt(v)", "math.sqrt() runs at compile time on numbers, not on traced values; "
                         "use tl.math.sqrt"),
    ("w = math.sqrt(-1.0)", "math.sqrt(): math domain error"),
    ("w = tl.cdiv(v, 2)", "tl.cdiv needs integers, got tile<4xf32>"),
    ("w = tl.cdiv(4, 0)", "tl.cdiv: division by zero"),
    ("tl.static_assert(n > 0)", "tl.static_assert needs a compile-time condition"),
    ("tl.static_assert(4 > 8, 'four is small')", "static assertion failed: four is small"),
    ("w = tl.load(x + (0,), shap=(4,))",
     "tl.load() got an unexpected keyword argument 'shap' (did you mean 'shape'?)"),
    ("w = tl.sum(v, 0, axis=0)", "tl.sum(): multiple values for argument 'axis'"),
    ("for i in tl.range(0, n, num_stages=2):\n        pass",
     "tl.range() got an unexpected keyword argument 'num_stages'"),
    ("for i in range(0, n, step=2):\n        pass", "range takes (end), (start, end) or"),
    ("w = tl.sum(v, **{'axis': 0})", "unsupported Python in a kernel: ** arguments in a call"),
    ("w = (1, 2)[5]", "tuple index 5 out of range (length 2)"),
    ("w = (1, 2)[n]", "a tuple is indexed by compile-time integers, got i32"),
    ("w = v is v", "'is' compares compile-time values"),
    ("w = v in (1, 2)", "'in' tests a compile-time value against a tuple"),
    ("for e in v:\n        pass", "for loops iterate tl.range(...), tl.static_range(...) or a "
                                   "tuple of compile-time length, got tile<4xf32>"),
    ("w = plain_helper(v)", "'plain_helper' is a plain Python function; decorate it with "
                            "@tl.func"),
    ("launched(x)", "'launched' is a @tl.kernel: kernels are launched, not called"),
    ("w = scaled(v, scal=2.0)", "scaled() got an unexpected keyword argument 'scal' (did you "
                                "mean 'scale'?)"),
    ("w = scaled()", "scaled(): missing a required argument: 'v'"),
    ("w = stats(v, n)", "stats(): parameter 'BLOCK' is a tl.constexpr; pass a compile-time "
                        "value"),
    ("print(v)", "print() in a kernel: use tl.print"),
    ("tl.static_assert(len(x.shape) == 2, f'x has rank {len(x.shape)!r:>3}')",
     "static assertion failed: x has rank   1"),
    ("tl.print(f'{v}')", "an f-string formats compile-time values, not traced ones"),
    ("w = v.to('f32')", "a cast expects a tl dtype (tl.float32, tl.int8, ...), got 'f32'"),
    ("w = tl.zeros((4,), 'x')", "tl.full expects a tl dtype"),
    ("w = tl.full((4,), float('inf'), tl.int32)", "tl.full(): cannot convert float infinity"),
    ("f = lambda a: a", "unsupported Python syntax in a kernel: Lambda"),
    ("w = [i for i in range(3)]", "unsupported Python syntax in a kernel: ListComp"),
    ("w = {'a': 1}", "unsupported Python syntax in a kernel: Dict"),
    ("with open('f') as f:\n        pass", "unsupported Python syntax in a kernel: With"),
    ("w = 1 // 0", "division by zero"),
    ("w = 'a' + v", "expected a tile or a number, got str"),
    ("for i in tl.range(n):\n        if tl.sum(v) > 0:\n            return",
     "return inside a tl.range loop, or inside an if on a traced condition in a loop"),
    ("w = v[1:4:2]", "tile slices take every element (step 1), got step 2"),
    ("w = v[3:1]", "the slice 3:1 of axis 0 (size 4) is empty"),
    ("w = v[-5]", "index -5 is out of range for axis 0 of size 4"),
    ("w = v[2]", "an integer index on every axis would give one element"),
    ("w = v[:, 1]", "too many indices for a tile of shape (4,)"),
    ("w = v[n]", "tiles are indexed by None, ':', compile-time slices a:b and integers, got i32"),
    ("w = v[0:n]", "slice bounds must be compile-time integers"),
    # Python's internals had leaked: "'Tile' object is not iterable", "float() argument must
    # be ...", "'<' not supported between instances of 'TensorArg' and 'int'", range()'s
    # ValueError, "'tuple' object has no attribute 'shape'"
    ("tl.device_assert(v > 0, v)", "tl.device_assert's message must be a compile-time string"),
    ("w = tl.gather(x, (tl.arange(0, 4),), other=v)", "tl.gather: 'other' must be a compile-time"),
    ("w = x < 2", "'x' is a tensor, not a value: compare what tl.load reads"),
    ("for i in tl.static_range(0, 4, 0):\n        pass", "tl.static_range's step must not be"),
    ("w = tl.num_programs(n)", "tl.num_programs: axis must be a compile-time 0, 1 or 2"),
    ("w = tl.sum(v, axis=1)", "axis 1 is out of range for a tile of rank 1"),
]


def _kernel_from(stmt, tmp_path, name):
    """A kernel whose fourth line is `stmt`, in a file of its own (the error names it)."""
    src = f"@tl.kernel\ndef k(x: tl.tensor, n):\n    v = tl.load(x + (0,), (4,))\n    {stmt}\n"
    path = tmp_path / f"{name}.py"
    path.write_text(src)
    scope = dict(globals())
    exec(compile(src, str(path), "exec"), scope)
    return scope["k"], str(path)


@pytest.mark.parametrize("stmt,message", ERRORS, ids=[e[0].split("\n")[0] for e in ERRORS])
def test_unsupported_construct_names_its_line(stmt, message, tmp_path):
    k, path = _kernel_from(stmt, tmp_path, "bad")
    with pytest.raises(tl.CompileError) as e:
        k[(1,)](np.zeros(4, np.float32), 3)
    assert message in str(e.value), str(e.value)
    assert e.value.filename == path
    expected = 6 if "return" in stmt else 4
    assert e.value.lineno == expected, str(e.value)


@pytest.mark.parametrize("stmt,fn,marker,message", [
    ("w = recursive(v)", recursive, "ERR recursion",
     "recursive @tl.func call: recursive -> recursive"),
    ("w = ping(v)", pong, "ERR mutual", "recursive @tl.func call: ping -> pong -> ping"),
    ("w = exp_of(tl.full((4,), 1))", exp_of, "ERR in helper",
     "tl.exp needs a floating-point operand, got tile<4xi32>"),
    ("w = returns_in_loop(v, n)", returns_in_loop, "ERR return in loop",
     "return inside a tl.range loop"),
])
def test_error_in_helper_names_helper_line_and_call_site(stmt, fn, marker, message, tmp_path):
    k, path = _kernel_from(stmt, tmp_path, "calls")
    with pytest.raises(tl.CompileError) as e:
        k[(1,)](np.zeros(4, np.float32), 3)
    assert message in str(e.value), str(e.value)
    assert e.value.filename == __file__ and e.value.lineno == line_of(fn.fn, marker)
    assert f"called from {path}:4:" in str(e.value)


def test_helper_outside_kernel():
    with pytest.raises(RuntimeError, match="can only be called inside a @tl.kernel"):
        scaled(1.0)


# ---- negative axes, short-circuit and / or, the loop variable after a loop -----------------------

@tl.kernel
def negative_axes(x: tl.tensor, y: tl.tensor, B: tl.constexpr, C: tl.constexpr):
    v = tl.load(x + (0, 0), (4, 8))
    s = tl.sum(v, axis=-1) + tl.max(v, axis=-2)[:4] * 0.0 + tl.cumsum(v, axis=-1)[:, 7]
    if B is not None and B > 2:  # B None: its second operand would fail on None
        s = s + 1.0
    w = 2.0 if C is None or C > 1 else 3.0
    tl.store(y + (0,), tl.reshape(tl.expand_dims(s * w, -1), (4,)))


@on_devices
def test_negative_axes_and_short_circuit(device, target):
    # Catches: a negative axis failing ("'tuple' object has no attribute 'shape'"), the second
    # operand of `and` / `or` evaluated after a decided compile-time first one (an error on None),
    # the wrong branch taken.
    x = np.arange(32, dtype=np.float32).reshape(4, 8)
    for B, C in [(None, None), (3, 0), (1, 5)]:
        y = np.zeros(4, np.float32)
        negative_axes[(1,)](x, y, B=B, C=C, device=device, target=target)
        want = (2 * x.sum(1) + (1 if B is not None and B > 2 else 0)) * \
            (2.0 if C is None or C > 1 else 3.0)
        np.testing.assert_array_equal(y, want)
    with pytest.raises(tl.CompileError, match="axis -3 is out of range for a tile of rank 2"):
        negative_axes_bad[(1,)](x, np.zeros(4, np.float32), device=device, target=target)


@tl.kernel
def negative_axes_bad(x: tl.tensor, y: tl.tensor):
    tl.store(y + (0,), tl.sum(tl.load(x + (0, 0), (4, 8)), axis=-3))


@tl.kernel
def loop_variable_after(y: tl.tensor, lo, hi, step):
    i = -100
    n = tl.zeros((2,), tl.float32)
    for i in tl.range(lo, hi, step):
        n += 1.0
    j = i
    for j in tl.range(lo, hi, step):  # a second loop on it: its last value, or i's
        pass
    tl.store(y + (0,), tl.where(tl.arange(0, 2) == 0, n + i, n * 0 + j))


@on_devices
def test_loop_variable_after_a_loop(device, target):
    # As Python: the last value where the loop ran, the value before it where it ran no trip.
    # Catches: the value from before the loop kept whatever the trips (it was: -100 after five
    # trips), the last value one step off (ub instead of ub - 1, the remainder of a stepped loop).
    for lo, hi, step in [(0, 5, 1), (0, 0, 1), (3, 11, 3), (5, 2, 1), (-7, 7, 4)]:
        y = np.zeros(2, np.float32)
        loop_variable_after[(1,)](y, lo, hi, step, device=device, target=target)
        i, trips = -100, 0
        for i in range(lo, hi, step):
            trips += 1
        assert y[0] == trips + i and y[1] == i, (lo, hi, step, y)


@tl.kernel
def loop_variable_retyped(y: tl.tensor, n):
    i = 0.5
    for i in tl.range(0, n):
        pass
    tl.store(y + (0,), tl.zeros((2,), tl.float32) + i)  # ERR retyped


@tl.kernel
def loop_variable_unbound_before(y: tl.tensor, n):
    for k in tl.range(0, n):
        pass
    tl.store(y + (0,), tl.zeros((2,), tl.float32) + k)


def test_loop_variable_of_another_type_before_the_loop():
    # A float before the loop, an int32 index in it: after a loop that may run no trip it is
    # either; catches it read silently as the float (it was, whatever the trips). Unbound
    # before the loop, it is unbound after it (no value where the loop ran no trip).
    with pytest.raises(tl.CompileError, match="'i' is the loop variable of a tl.range loop"):
        loop_variable_retyped[(1,)](np.zeros(2, np.float32), 3)
    with pytest.raises(tl.CompileError, match="name 'k' is not defined"):
        loop_variable_unbound_before[(1,)](np.zeros(2, np.float32), 3)


# ---- numpy scalars as constexprs, bad grids, a scalar reshaped, offsets near INT64_MAX ----------

@tl.kernel
def scaled_block(x: tl.tensor, y: tl.tensor, B: tl.constexpr, S: tl.constexpr,
                 F: tl.constexpr):
    v = tl.load(x + (0,), (B,)) * S
    if F:
        v = -v
    tl.store(y + (tl.program_id(0) * B,), v)


@on_devices
def test_numpy_scalars_as_constexprs_and_bad_grids(device, target):
    # Catches: np.int64 / np.float32 / np.bool_ constexprs rejected ("expected a tile or a
    # number, got int64"), a float grid truncated, a fourth grid dimension dropped, a negative
    # count an OverflowError.
    x, y = np.arange(8, dtype=np.float32), np.zeros(16, np.float32)
    scaled_block[(2,)](x, y, B=np.int64(8), S=np.float32(2.0), F=np.bool_(True),
                       device=device, target=target)
    np.testing.assert_array_equal(y, np.tile(-2 * x, 2))
    for grid, err in [((2.7,), TypeError), ("2", TypeError), ((True,), TypeError),
                      ((1, 1, 1, 2), ValueError), ((-1,), ValueError), (2**70, ValueError)]:
        with pytest.raises(err, match=r"scaled_block\[grid\]"):
            scaled_block[grid](x, y, B=8, S=1.0, F=False, device=device, target=target)


@tl.kernel
def sum_as_block(x: tl.tensor, y: tl.tensor):
    tl.store(y + (0, 0), tl.reshape(tl.sum(tl.load(x + (0, 0), (4, 8))), (1, 1)))


@tl.kernel
def load_at(x: tl.tensor, y: tl.tensor, off):
    tl.store(y + (0,), tl.load(x + (off,), (4,), other=-1.0))


@on_devices
def test_scalar_reshaped_and_offsets_near_int64_max(device, target):
    # Catches: a scalar reshaped to (1, 1) failing on the tnpu ("operand is not a tile in the
    # scratchpad": canonicalize's reshape-scalar-to-splat), and a block at an offset near
    # INT64_MAX counted as inside its tensor (off + 4 wrapped negative: llvm-cpu read the 16
    # bytes before it) instead of padded.
    x = np.arange(32, dtype=np.float32).reshape(4, 8)
    y = np.zeros((1, 1), np.float32)
    sum_as_block[(1,)](x, y, device=device, target=target)
    assert y[0, 0] == x.sum()
    big = np.arange(16, dtype=np.float32) + 100
    for off in (2**63 - 4, 2**63 - 1, -2**63):
        got = np.zeros(4, np.float32)
        load_at[(1,)](big[4:12], got, off, device=device, target=target)
        np.testing.assert_array_equal(got, [-1.0] * 4)
