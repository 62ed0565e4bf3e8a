# The TL language: the functions a @tl.kernel calls. Each builds Tile IR ops of the same name
# through the compiler's C API; their semantics are the IR's (compiler/ir/include/tl/ir/ir.h).
# SPDX-License-Identifier: Apache-2.0
"""TL language builtins. They run only while a ``@tl.kernel`` is traced:

>>> import numpy as np, tl
>>> @tl.kernel
... def add(x: tl.tensor, y: tl.tensor, z: tl.tensor, BLOCK: tl.constexpr):
...     i = tl.program_id(0) * BLOCK
...     tl.store(z + (i,), tl.load(x + (i,), (BLOCK,)) + tl.load(y + (i,), (BLOCK,)))
>>> x = np.arange(100, dtype=np.float32); z = np.zeros_like(x)
>>> add[(4,)](x, x, z, BLOCK=32)
>>> float(z[99])
198.0
>>> tl.load(x, (4,))
Traceback (most recent call last):
RuntimeError: tl language functions can only be used inside a @tl.kernel
"""
import builtins as _py
import functools
import numbers as _numbers

from . import ir
from .core import (_state, Tile, TensorArg, View, builder, error, to_tile, cast as _cast,
                   unify, broadcast_to as _broadcast_to, broadcast_shape, elementwise, binary,
                   is_const, derived, f64_origin, int1, int32, int64, float32, float64, dtype)


def builtin(fn):
    """Marks a language function; outside a traced kernel it raises RuntimeError."""
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        builder()
        return fn(*args, **kwargs)
    wrapper.__tl_builtin__ = True
    return wrapper


class constexpr:
    """Annotation of a compile-time parameter: its Python value specializes the kernel."""


class tensor:
    """Annotation of a tensor parameter (a numpy array or any DLPack tensor at launch)."""


def _ints(shape, what):
    if isinstance(shape, (int, Tile)):
        shape = (shape,)
    out = []
    for d in shape:
        if isinstance(d, Tile) or not isinstance(d, int):
            raise error(f"{what} must be compile-time integers (constants or tl.constexpr), got {d!r}")
        out.append(d)
    return tuple(out)


def _dtype_arg(dt, what):
    if dt is not None and not isinstance(dt, dtype):
        raise error(f"{what} expects a tl dtype (tl.float32, tl.int8, ...), got {dt!r}")
    return dt


def _axis(shape, axis):
    """`axis` of a tile of `shape` as a non-negative index (Python's negative axes count from
    the end)."""
    if isinstance(axis, bool) or not isinstance(axis, _numbers.Integral):
        raise error(f"axis must be a compile-time integer, got {axis!r}")
    rank = len(shape)
    if not -rank <= axis < rank:
        raise error(f"axis {int(axis)} is out of range for a tile of rank {rank}")
    return int(axis) + rank if axis < 0 else int(axis)


# ---- program queries and tile construction -----------------------------------------------------

@builtin
def program_id(axis):
    """The index of this program along grid `axis` (0, 1 or 2), an int32 scalar."""
    return Tile(builder().op("program_id", attrs={"axis": _grid_axis("program_id", axis)}))


def _grid_axis(name, axis):
    if isinstance(axis, bool) or not isinstance(axis, _numbers.Integral) or axis not in (0, 1, 2):
        raise error(f"tl.{name}: axis must be a compile-time 0, 1 or 2, got {axis!r}")
    return int(axis)


@builtin
def num_programs(axis):
    """The number of programs along grid `axis`, an int32 scalar."""
    return Tile(builder().op("num_programs", attrs={"axis": _grid_axis("num_programs", axis)}))


@builtin
def arange(start, end=None, dtype=int32):
    """The int32 tile [start, start+1, ..., end-1] (bounds are compile-time integers)."""
    _dtype_arg(dtype, "tl.arange")
    if end is None:
        start, end = 0, start
    start, end = _ints((start,), "arange bounds")[0], _ints((end,), "arange bounds")[0]
    if end <= start:
        raise error(f"arange needs end > start, got [{start}, {end})")
    return Tile(builder().op("arange", attrs={"end": end, "start": start},
                             result=ir.Type.tile(dtype.code, (end - start,))))


@builtin
def full(shape, value, dtype=None):
    """A tile of `shape` filled with `value` (a number: constant, or a scalar tile: splat)."""
    shape = _ints(shape, "shape")
    _dtype_arg(dtype, "tl.full")
    if isinstance(value, Tile):
        if dtype is None and value.weak and value.dtype.is_float:
            dtype = float32  # a weak float fills as a Python float does
        return _broadcast_to(value if dtype is None else _cast(value, dtype), shape)
    dt = dtype or (float32 if isinstance(value, float) else int1 if isinstance(value, bool) else int32)
    v = float(value) if dt.is_float else (bool(value) if dt is int1 else int(value))
    return Tile(builder().op("full", attrs={"value": v}, result=ir.Type.tile(dt.code, shape)))


@builtin
def zeros(shape, dtype=float32):
    """A tile of zeros."""
    return full(shape, 0, dtype)


@builtin
def zeros_like(x):
    return full(x.shape, 0, x.dtype)


# ---- memory ------------------------------------------------------------------------------------

def _view(v):
    if isinstance(v, TensorArg):
        return View(v, [0] * v.rank)
    if isinstance(v, View):
        return v
    raise error(f"expected a tensor or a tensor view (tensor + (i, j)), got {type(v).__name__}")


def _offsets(view):
    out = []
    for o in view.offsets:
        t = to_tile(o, int32 if is_const(o) else None)
        if t.shape or not t.dtype.is_int or t.dtype is int1:
            raise error(f"tensor offsets must be integer scalars, got {t.type}")
        out.append(t.value)
    return out


@builtin
def load(view, shape, other=None):
    """Reads a tile of `shape` at the view's offsets; lanes outside the tensor read `other` (0)."""
    view = _view(view)
    shape = _ints(shape, "load shape")
    t = view.tensor
    if len(shape) != t.rank:
        raise error(f"load shape {list(shape)} has rank {len(shape)}, tensor '{t.name}' has rank {t.rank}")
    attrs = None
    if other is not None:
        if not is_const(other):
            raise error("load's other= must be a compile-time number")
        attrs = {"padding": float(other) if t.dtype.is_float else int(other)}
    return Tile(builder().op("load", [t.value] + _offsets(view), attrs,
                             result=ir.Type.tile(t.dtype.code, shape)))


@builtin
def store(view, value):
    """Writes a tile at the view's offsets; lanes outside the tensor are not written."""
    view = _view(view)
    t = view.tensor
    value = to_tile(value)
    if len(value.shape) != t.rank:
        raise error(f"cannot store {value.type} into rank-{t.rank} tensor '{t.name}' "
                    "(the tile's rank must match the tensor's)")
    value = _cast(value, t.dtype)
    builder().op("store", [t.value] + _offsets(view) + [value.value])


def _indexed(tensor_, indices, extra):
    """Index tiles (one per dimension) and extra operands broadcast to one shape."""
    if not isinstance(tensor_, TensorArg):
        raise error("gather/scatter/atomic_add take a tensor argument")
    if not isinstance(indices, (tuple, list)):
        indices = (indices,)
    if len(indices) != tensor_.rank:
        raise error(f"tensor '{tensor_.name}' of rank {tensor_.rank} needs {tensor_.rank} index "
                    f"tiles, got {len(indices)}")
    tiles = [to_tile(i) for i in indices] + [to_tile(e) for e in extra if e is not None]
    shape = ()
    for t in tiles:
        s = broadcast_shape(shape, t.shape)
        if s is None:
            raise error(f"shape mismatch between indices/mask/value: {list(shape)} and {t.type}")
        shape = s
    return [_broadcast_to(t, shape) for t in tiles], shape


@builtin
def gather(tensor, indices, mask=None, other=None):
    """Reads tensor[indices] lane by lane (one index tile per dimension); masked-off lanes read
    `other` (0)."""
    tiles, _ = _indexed(tensor, indices, [mask])
    attrs = None
    if other is not None:
        if not isinstance(other, _numbers.Real):
            raise error(f"tl.gather: 'other' must be a compile-time number, got "
                        f"{other.type if isinstance(other, Tile) else type(other).__name__}")
        attrs = {"other": float(other) if tensor.dtype.is_float else int(other)}
    return Tile(builder().op("gather", [tensor.value] + [t.value for t in tiles], attrs))


@builtin
def scatter(tensor, indices, value, mask=None):
    """Writes `value` to tensor[indices] lane by lane, only where `mask` holds."""
    n = tensor.rank if isinstance(tensor, TensorArg) else 0
    tiles, shape = _indexed(tensor, indices, [value, mask])
    tiles[n] = _cast(tiles[n], tensor.dtype)
    builder().op("scatter", [tensor.value] + [t.value for t in tiles])


@builtin
def atomic_add(tensor, indices, value, mask=None):
    """Adds `value` to tensor[indices] atomically; returns the previous values."""
    n = tensor.rank if isinstance(tensor, TensorArg) else 0
    tiles, shape = _indexed(tensor, indices, [value, mask])
    tiles[n] = _cast(tiles[n], tensor.dtype)
    return Tile(builder().op("atomic_add", [tensor.value] + [t.value for t in tiles]))


# ---- shape -------------------------------------------------------------------------------------

@builtin
def reshape(x, shape):
    x = to_tile(x)
    shape = _ints(shape, "shape")
    return Tile(builder().op("reshape", [x.value], result=ir.Type.tile(x.type.dtype, shape)))


@builtin
def trans(x, perm=None):
    """Transposes a tile (reverses its dimensions unless `perm` is given)."""
    x = to_tile(x)
    perm = list(perm) if perm is not None else list(_py.range(len(x.shape)))[::-1]
    return Tile(builder().op("transpose", [x.value], {"perm": perm}))


def _slice(x, offsets, shape):
    """The block of `shape` of tile x from `offsets` (Tile IR's slice; the subscript x[a:b, i]
    calls it)."""
    x = to_tile(x)
    return Tile(builder().op("slice", [x.value], {"offsets": list(offsets)},
                             result=ir.Type.tile(x.type.dtype, list(shape))))


@builtin
def expand_dims(x, axis):
    x = to_tile(x)
    return Tile(builder().op("expand_dims", [x.value], {"axis": _axis(x.shape + (1,), axis)}))


@builtin
def broadcast_to(x, shape):
    return _broadcast_to(x, _ints(shape, "shape"))


# ---- elementwise -------------------------------------------------------------------------------

def _math(name):
    def fn(x):
        x = to_tile(x)
        if not x.dtype.is_float:
            raise error(f"tl.{name} needs a floating-point operand, got {x.type} (cast it with .to())")
        return elementwise(name, x)
    fn.__name__ = name
    fn.__doc__ = f"Elementwise {name} (the Tile IR op '{name}')."
    return builtin(fn)


exp, exp2, log, log2, sqrt, rsqrt, tanh, erf, sigmoid, sin, cos = (
    _math(n) for n in ("exp", "exp2", "log", "log2", "sqrt", "rsqrt", "tanh", "erf", "sigmoid",
                       "sin", "cos"))


# Triton's spellings (tl.floor, tl.ceil; tl.math.* and libdevice's names for the rest, tl/math.py).
(tan, asin, acos, atan, sinh, cosh, log1p, expm1, erfinv, rint, floor, ceil, trunc) = (
    _math(n) for n in ("tan", "asin", "acos", "atan", "sinh", "cosh", "log1p", "expm1", "erfinv",
                       "rint", "floor", "ceil", "trunc"))

# Phi(x) = erfc(-x / sqrt 2) / 2, the standard normal distribution function (SciPy's and
# torch.special's name; libdevice's normcdf, tl.math.normcdf): relatively accurate in the lower
# tail, where 1/2 + erf(x / sqrt 2) / 2 cancels. The exact GELU is x ndtr(x).
ndtr = _math("ndtr")


def _class_test(name):
    def fn(x):
        x = to_tile(x)
        if not x.dtype.is_float:
            raise error(f"tl.math.{name} needs a floating-point operand, got {x.type}")
        return Tile(builder().op(name, [x.value]))  # an i1 answer, never weak
    fn.__name__ = name
    fn.__doc__ = f"Elementwise {name}: i1 lanes (the Tile IR op '{name}')."
    return builtin(fn)


isnan, isinf, isfinite = (_class_test(n) for n in ("isnan", "isinf", "isfinite"))


def _bits(name):
    def fn(x):
        x = to_tile(x)
        if not x.dtype.is_int or x.dtype is int1:
            raise error(f"tl.math.{name} needs an integer operand (not i1), got {x.type}")
        return elementwise(ir_name, x)
    ir_name = {"popc": "popcount"}.get(name, name)
    fn.__name__ = name
    fn.__doc__ = f"Elementwise {name} of the operand's bits, same type (Tile IR '{ir_name}')."
    return builtin(fn)


popc, clz = _bits("popc"), _bits("clz")


def _float_binary(name):
    def fn(a, b):
        a, b = unify(a, b)
        if not a.dtype.is_float:
            raise error(f"tl.math.{name} needs floating-point operands, got {a.type}")
        return derived(builder().op(name, [a.value, b.value]), a, b)
    fn.__name__ = name
    fn.__doc__ = f"Elementwise {name} (the Tile IR op '{name}'); weak scalars as in `+`."
    return builtin(fn)


atan2, fmod, copysign = (_float_binary(n) for n in ("atan2", "fmod", "copysign"))


class PropagateNan:
    """NaN handling of tl.minimum, tl.maximum and tl.clamp, as Triton's tl.PropagateNan: ALL
    returns NaN when an operand is NaN (IEEE minimum/maximum); NONE ignores a NaN operand
    (minimumNumber/maximumNumber). Both order -0 below +0."""
    NONE = 0
    ALL = 0xFFFF


def _nan_mode(propagate_nan, what):
    if propagate_nan not in (PropagateNan.NONE, PropagateNan.ALL):
        raise error(f"{what}: propagate_nan must be tl.PropagateNan.ALL or NONE, got {propagate_nan!r}")
    return propagate_nan == PropagateNan.ALL


def _min_max(name, a, b, propagate):
    a, b = unify(a, b)
    op = name if propagate or not a.dtype.is_float else name + "num"  # integers have no NaN
    return derived(builder().op(op, [a.value, b.value]), a, b)


@builtin
def abs(x):
    return elementwise("abs", to_tile(x))


@builtin
def maximum(a, b, propagate_nan=PropagateNan.ALL):
    """Elementwise maximum; NaN propagates unless propagate_nan=tl.PropagateNan.NONE (maxnum).

    The default is ALL (unlike Triton's NONE): TL's max has always propagated NaN."""
    return _min_max("max", a, b, _nan_mode(propagate_nan, "tl.maximum"))


@builtin
def minimum(a, b, propagate_nan=PropagateNan.ALL):
    """Elementwise minimum; NaN propagates unless propagate_nan=tl.PropagateNan.NONE (minnum)."""
    return _min_max("min", a, b, _nan_mode(propagate_nan, "tl.minimum"))


@builtin
def clamp(x, min, max, propagate_nan=PropagateNan.NONE):
    """min(max(x, min), max) for any numeric type. As Triton's tl.clamp, a NaN `x` gives `min`
    by default (NONE: minnum/maxnum); propagate_nan=tl.PropagateNan.ALL gives NaN (the IR's
    clamp, which also propagates a NaN bound)."""
    x, lo = unify(x, min)
    x, hi = unify(x, max)
    x, lo = unify(x, lo)
    if x.dtype is int1:
        raise error(f"tl.clamp needs numeric operands, got {x.type}")
    if x.dtype.is_float and not _nan_mode(propagate_nan, "tl.clamp"):
        return _min_max("min", _min_max("max", x, lo, False), hi, False)
    return derived(builder().op("clamp", [x.value, lo.value, hi.value]), x, lo, hi)


@builtin
def fma(a, b, c):
    a, b = unify(a, b)
    a, c = unify(a, c)
    a, b = unify(a, b)
    return derived(builder().op("fma", [a.value, b.value, c.value]), a, b, c)


@builtin
def where(cond, a, b):
    """Selects `a` where `cond` holds, else `b` (broadcast to one shape)."""
    cond = to_tile(cond)
    if cond.dtype is not int1:
        raise error(f"tl.where needs an i1 (comparison) condition, got {cond.type}")
    a, b = unify(a, b)
    shape = broadcast_shape(cond.shape, a.shape)
    if shape is None:
        raise error(f"shape mismatch: condition {cond.type} and values {a.type}")
    cond, a, b = _broadcast_to(cond, shape), _broadcast_to(a, shape), _broadcast_to(b, shape)
    return derived(builder().op("select", [cond.value, a.value, b.value]), a, b)


@builtin
def cast(x, dtype, rounding=None):
    """Converts to `dtype`, rounding by `rounding` ("rne", "rtz", "rd", "ru").

    Without a mode, float results round to nearest even and float -> integer rounds toward zero
    (as C and Triton); a mode applies to both, then the integer saturates and NaN becomes 0:

    >>> import numpy as np, tl
    >>> @tl.kernel
    ... def quantize(x: tl.tensor, q: tl.tensor, t: tl.tensor):
    ...     v = tl.load(x + (0,), (4,))
    ...     tl.store(q + (0,), tl.cast(v, tl.int8, "rne"))
    ...     tl.store(t + (0,), tl.cast(v, tl.int8))
    >>> x = np.array([33.66, 2.5, -2.5, 300.0], np.float32)
    >>> q = np.zeros(4, np.int8); t = np.zeros(4, np.int8)
    >>> quantize[(1,)](x, q, t)
    >>> q.tolist(), t.tolist()
    ([34, 2, -2, 127], [33, 2, -2, 127])
    """
    return _cast(x, dtype, rounding)


def cdiv(a, b):
    """Ceiling division of integers: numbers and constexprs fold (also outside kernels, e.g. in
    grids); traced integer scalars or tiles give (a + b - 1) // b, rounding toward zero as `//`
    does, so for b > 0 and a >= 0.

    >>> cdiv(1000, 256)
    4
    """
    for x in (a, b):
        if (isinstance(x, _numbers.Number) and not isinstance(x, _numbers.Integral)
                or isinstance(x, Tile) and not x.dtype.is_int):
            raise _cdiv_error(f"tl.cdiv needs integers, got "
                              f"{x.type if isinstance(x, Tile) else x!r}")
    if isinstance(a, _numbers.Integral) and isinstance(b, _numbers.Integral):  # numpy's too
        if b == 0:
            raise _cdiv_error("tl.cdiv: division by zero")
        return -(-a // b)
    builder()
    return binary("div", binary("add", a, b - 1 if is_const(b) else binary("sub", b, 1)), b)


def _cdiv_error(message):
    """A located error in a kernel; outside one (a grid), a TypeError."""
    tracing = getattr(_state, "builder", None) is not None
    return error(message) if tracing else TypeError(message)


cdiv.__tl_builtin__ = True  # called by kernels, yet not a builtin() wrapper: it runs outside too


@builtin
def static_assert(cond, msg=""):
    """Fails the compile, at this line, when `cond` (a compile-time value) is false."""
    if isinstance(cond, (Tile, TensorArg, View)):
        raise error("tl.static_assert needs a compile-time condition (numbers, constexprs, "
                    "shapes); use tl.device_assert for traced values")
    if not cond:
        raise error(f"static assertion failed{': ' + str(msg) if msg != '' else ''}")


@builtin
def static_print(*values):
    """Prints `values` when the kernel is traced (shapes, dtypes, constexprs); nothing runs."""
    _py.print(*(v.type if isinstance(v, Tile) else v for v in values))


# ---- contractions and reductions --------------------------------------------------------------

@builtin
def dot(a, b, acc=None, acc_dtype=None, input_precision="ieee", exact_order=False):
    """Matrix product of two rank-2 tiles, accumulated in `acc_dtype` (default: float32 for float
    inputs up to 32 bits, float64 for float64, int32 for integers) starting from `acc` when given.
    The summation order is unspecified, within the error bound ir.h states (tensor cores add
    several products per step); `exact_order=True` asks for one fused multiply-add per k in
    ascending order, bit-reproducible across backends (on CUDA cores on nvptx)."""
    a, b = to_tile(a), to_tile(b)
    _dtype_arg(acc_dtype, "tl.dot's acc_dtype")
    if len(a.shape) != 2 or len(b.shape) != 2:
        raise error(f"tl.dot needs rank-2 tiles, got {a.type} and {b.type}")
    if a.dtype is not b.dtype:
        raise error(f"tl.dot operand types differ: {a.type}{f64_origin(a)} and "
                    f"{b.type}{f64_origin(b)}")
    if a.shape[1] != b.shape[0]:
        raise error(f"tl.dot shape mismatch: {a.type} @ {b.type} (inner dimensions "
                    f"{a.shape[1]} and {b.shape[0]})")
    if acc is not None:
        acc = to_tile(acc)
        acc_dtype = acc_dtype or acc.dtype
    if acc_dtype is None:
        acc_dtype = (float64 if a.dtype is float64 else float32) if a.dtype.is_float else int32
    ops = [a.value, b.value]
    if acc is not None:
        ops.append(_broadcast_to(_cast(acc, acc_dtype), (a.shape[0], b.shape[1])).value)
    attrs = {"acc_type": ir.Type.scalar(acc_dtype.code)}
    if input_precision != "ieee":
        attrs["input_precision"] = input_precision
    if exact_order:
        attrs["order"] = "exact"
    return Tile(builder().op("dot", ops, attrs))


def _reduce(kind):
    def fn(x, axis=None):
        x = to_tile(x)
        if not x.shape:
            raise error(f"tl.{kind} needs a tile, got the scalar {x.type}")
        if axis is None:
            if len(x.shape) > 1:
                n = 1
                for d in x.shape:
                    n *= d
                x = reshape(x, (n,))
            axis = 0
        return Tile(builder().op("reduce", [x.value], {"axis": _axis(x.shape, axis), "kind": kind}))
    fn.__name__ = {"sum": "sum", "max": "max", "min": "min", "argmax": "argmax"}[kind]
    fn.__doc__ = f"Reduces along `axis` (all axes when None) with '{kind}'."
    return builtin(fn)


sum, max, min, argmax = (_reduce(k) for k in ("sum", "max", "min", "argmax"))


def _scan(kind):
    def fn(x, axis=0, exact_order=False):
        x = to_tile(x)
        attrs = {"axis": _axis(x.shape, axis), "kind": kind}
        if exact_order:
            attrs["order"] = "exact"
        return Tile(builder().op("scan", [x.value], attrs))
    fn.__doc__ = (f"Inclusive scan along `axis` with '{kind}'. A float sum's association is "
                  "unspecified, within the bound ir.h states (nvptx scans a line in parallel); "
                  "`exact_order=True` asks for the ascending chain, bit-reproducible across "
                  "backends.")
    return builtin(fn)


cumsum, cummax, cummin = (_scan(k) for k in ("sum", "max", "min"))


# ---- debugging ---------------------------------------------------------------------------------

@builtin
def print(prefix, *values):
    """Prints `prefix` and the values from every program (device_print)."""
    if not isinstance(prefix, str):
        values, prefix = (prefix,) + values, ""
    builder().op("print", [to_tile(v).value for v in values], {"prefix": prefix})


@builtin
def device_assert(cond, msg=""):
    """Fails the launch where `cond` is false: a tl.TLRuntimeError at the launch, or for a launch
    on torch tensors alone (asynchronous) at the next tl.synchronize()."""
    cond = to_tile(cond)
    if cond.dtype is not int1:
        raise error(f"tl.device_assert needs an i1 condition, got {cond.type}")
    if not isinstance(msg, str):
        raise error(f"tl.device_assert's message must be a compile-time string, got "
                    f"{msg.type if isinstance(msg, Tile) else type(msg).__name__}")
    builder().op("assert", [cond.value], {"message": msg})


# ---- loops: handled by the front end -----------------------------------------------------------

@builtin
def range(start, end=None, step=1):
    """``for i in tl.range(lo, hi, step)``: a Tile IR for loop (values assigned in the body and
    live before it are carried)."""
    raise error("tl.range can only be iterated by a for statement")


@builtin
def static_range(start, end=None, step=1):
    """``for i in tl.static_range(...)``: unrolled at trace time (compile-time bounds)."""
    raise error("tl.static_range can only be iterated by a for statement")


# Methods of Tile values (x.to(...), x.sum(...)).
TILE_METHODS = {
    "to": cast, "sum": sum, "max": max, "min": min, "argmax": argmax, "reshape": reshape,
    "trans": trans, "expand_dims": expand_dims, "broadcast_to": broadcast_to, "cumsum": cumsum,
}
