# The values a kernel body manipulates while it is traced (tiles, tensor arguments, views) and
# the conversions between them: constants, dtype promotion, broadcasting, binary ops.
# SPDX-License-Identifier: Apache-2.0
import logging
import threading

from . import ir
from .errors import CompileError


class dtype:
    """An element type: ``tl.float32``, ``tl.int32``, ... (Tile IR's f32, i32, ...)."""

    def __init__(self, name, code, np_name):
        self.name, self.code, self.np_name = name, code, np_name

    is_float = property(lambda self: ir.is_float(self.code))
    is_int = property(lambda self: not ir.is_float(self.code))
    is_signed = property(lambda self: ir.is_signed(self.code))
    bits = property(lambda self: ir.bit_width(self.code))

    def __repr__(self):
        return f"tl.{self.name}"


int1 = dtype("int1", ir.I1, "bool")
int8 = dtype("int8", ir.I8, "int8")
int16 = dtype("int16", ir.I16, "int16")
int32 = dtype("int32", ir.I32, "int32")
int64 = dtype("int64", ir.I64, "int64")
uint8 = dtype("uint8", ir.U8, "uint8")
uint16 = dtype("uint16", ir.U16, "uint16")
uint32 = dtype("uint32", ir.U32, "uint32")
float16 = dtype("float16", ir.F16, "float16")
bfloat16 = dtype("bfloat16", ir.BF16, None)
float32 = dtype("float32", ir.F32, "float32")
float64 = dtype("float64", ir.F64, "float64")
float8e4m3 = dtype("float8e4m3", ir.F8E4M3, None)
float8e5m2 = dtype("float8e5m2", ir.F8E5M2, None)
DTYPES = [int1, int8, int16, int32, int64, uint8, uint16, uint32, float16, bfloat16, float32,
          float64, float8e4m3, float8e5m2]


def dtype_of_code(code):
    return DTYPES[code]


def dtype_of_numpy(np_dtype):
    if not np_dtype.isnative:  # kernels read the machine's byte order: '>f4' summed as garbage
        raise TypeError(f"tl: numpy dtype {np_dtype.str} is not in the machine's byte order; "
                        "pass x.astype(x.dtype.newbyteorder('='))")
    tagged = (np_dtype.metadata or {}).get("tl_dtype")  # tl.bf16's arrays: bit patterns
    if tagged is not None:
        return next(d for d in DTYPES if d.name == tagged)
    for d in DTYPES:
        if d.np_name == np_dtype.name:
            return d
    raise TypeError(f"tl: numpy dtype {np_dtype} has no Tile IR element type")


_state = threading.local()


def builder():
    """The builder of the kernel being traced (set by the front end)."""
    b = getattr(_state, "builder", None)
    if b is None:
        raise RuntimeError("tl language functions can only be used inside a @tl.kernel")
    return b


def error(message):
    """A CompileError at the source position being traced."""
    b = getattr(_state, "builder", None)
    return CompileError(f"{b.loc_str() if b else '<unknown>'}: error: {message}")


class Tile:
    """A traced value: a scalar or a tile of static shape (an SSA value of the Tile IR).

    Tiles support Python's arithmetic, bitwise and comparison operators, ``x.to(dtype)``,
    ``x.sum(axis)``/``max``/``min``/``argmax``, ``x.T``, ``x.shape``, ``x.dtype`` and
    ``x[None, :]``-style dimension insertion.
    """
    __slots__ = ("value", "weak", "origin")

    def __init__(self, value, weak=False, origin=None):
        # weak: a scalar argument's value (or one computed only from such values and numbers):
        # like a Python number, it takes the dtype of the tile it meets (README, "Implicit
        # conversions"). origin: for an f64 value, where its f64 began (file:line:col and how),
        # so that an op failing on mixed types can name it.
        self.value, self.weak = value, weak
        if origin is None and value.type.dtype == ir.F64:
            b = getattr(_state, "builder", None)
            origin = b.loc_str() if b is not None and b.loc else "<unknown>"
        self.origin = origin

    @property
    def type(self):
        return self.value.type

    @property
    def dtype(self):
        return dtype_of_code(self.value.type.dtype)

    @property
    def shape(self):
        return self.value.type.shape

    def __repr__(self):
        return f"Tile({self.type})"


class TensorArg:
    """A tensor kernel argument (base, run-time shape and strides). ``t + (i, j)`` is a View."""

    def __init__(self, value, name):
        self.value, self.name = value, name

    dtype = property(lambda self: dtype_of_code(self.value.type.dtype))
    rank = property(lambda self: self.value.type.rank)

    def __repr__(self):
        return f"TensorArg({self.name}: {self.value.type})"


class View:
    """A tensor seen from an element offset: what ``tensor + (i, j)`` makes."""

    def __init__(self, tensor, offsets):
        self.tensor, self.offsets = tensor, list(offsets)


# ---- conversions ------------------------------------------------------------------------------

def is_const(x):
    return isinstance(x, (bool, int, float))


def const_dtype(x):
    if isinstance(x, bool):
        return int1
    if isinstance(x, int):
        return int32 if -2**31 <= x < 2**31 else int64
    return float32


def constant(x, dt=None):
    """An IR scalar constant of `dt` (default: i1 for bool, i32/i64 for int, f32 for float)."""
    dt = dt or const_dtype(x)
    if dt.is_float:
        v = float(x)
    elif dt is int1:
        v = bool(x)
    else:
        if isinstance(x, float):
            raise error(f"cannot convert float constant {x} to {dt}")
        v = int(x)
    return Tile(builder().op("constant", attrs={"value": v}, result=ir.Type.scalar(dt.code)), True)


def to_tile(x, dt=None):
    """A Tile for any traced value or Python constant."""
    if isinstance(x, Tile):
        if dt is None or x.dtype is dt:
            return x
        y = cast(x, dt)
        y.weak = x.weak
        return y
    if is_const(x):
        return constant(x, dt)
    if isinstance(x, (TensorArg, View)):
        raise error("a tensor is not a value here: read it with tl.load")
    raise error(f"expected a tile or a number, got {type(x).__name__}")


def cast(x, dt, rounding=None):
    if not isinstance(dt, dtype):
        raise error(f"a cast expects a tl dtype (tl.float32, tl.int8, ...), got {dt!r}")
    x = to_tile(x)
    if x.dtype is dt:
        return x
    # None or the conversion's default (rtz float -> int, rne otherwise) adds no attribute.
    default = "rtz" if x.dtype.is_float and not dt.is_float else "rne"
    attrs = {"rounding": rounding} if rounding not in (None, default) else None
    return Tile(builder().op("cast", [x.value], attrs, result=x.type.with_dtype(dt.code)))


def is_weak(x):
    """A Python number, or a Tile computed only from scalar arguments and numbers."""
    return is_const(x) or isinstance(x, Tile) and x.weak


def f64_origin(x):
    """' (f64 since file:line:col ...)' for an f64 Tile: where a mixed-type error should point."""
    if isinstance(x, Tile) and x.dtype is float64 and x.origin:
        return f" (f64 since {x.origin})"
    return ""


def promote(a, b):
    """The common dtype of two dtypes: floats win over integers, then the wider type."""
    if a is b:
        return a
    if a.is_float != b.is_float:
        return a if a.is_float else b
    if a.bits != b.bits:
        return a if a.bits > b.bits else b
    if a.is_float:  # f16 and bf16
        return float32
    return a if a.is_signed else b


def broadcast_shape(s1, s2):
    r = max(len(s1), len(s2))
    a = (1,) * (r - len(s1)) + tuple(s1)
    b = (1,) * (r - len(s2)) + tuple(s2)
    out = []
    for x, y in zip(a, b):
        if x != y and x != 1 and y != 1:
            return None
        out.append(max(x, y))
    return tuple(out)


def broadcast_to(x, shape):
    """Splat a scalar, or add leading unit dimensions and broadcast a tile, to `shape`."""
    x = to_tile(x)
    shape = tuple(shape)
    if x.shape == shape:
        return x
    b = builder()
    if not x.shape:
        return Tile(b.op("splat", [x.value], result=ir.Type.tile(x.type.dtype, shape)), x.weak,
                    x.origin)
    if broadcast_shape(x.shape, shape) != shape:
        raise error(f"shape mismatch: cannot broadcast {x.type} to {list(shape)}")
    while len(x.shape) < len(shape):
        x = Tile(b.op("expand_dims", [x.value], {"axis": 0}), x.weak, x.origin)
    if x.shape != shape:
        x = Tile(b.op("broadcast", [x.value], result=ir.Type.tile(x.type.dtype, shape)), x.weak,
                 x.origin)
    return x


def _weak_dtype(x):
    return const_dtype(x) if is_const(x) else to_tile(x).dtype


def _strength(x):
    """Python number < weak Tile < tile: the weaker operand takes the stronger one's dtype."""
    return 0 if is_const(x) else 1 if is_weak(x) else 2


def unify(a, b, dt=None):
    """Two operands as tiles of one dtype and one shape. A weak operand (a Python number or a
    scalar argument) adopts the other's dtype, except that a float one turns an integer tile into
    float32; two weak or two strong operands promote (promote())."""
    if dt is None:
        ra, rb = _strength(a), _strength(b)
        if ra == rb:
            dt = promote(_weak_dtype(a), _weak_dtype(b))
        else:
            t, c = (a, b) if ra > rb else (b, a)
            dt = to_tile(t).dtype
            if _weak_dtype(c).is_float and not dt.is_float:
                dt = float32
    origin = None
    if dt is float64:  # where this f64 began: an f64 operand's origin, and the widening here
        src = [x for x in (a, b) if isinstance(x, Tile) and x.dtype is float64]
        origin = src[0].origin if src else None
        if any(isinstance(x, Tile) and x.dtype is not float64 for x in (a, b)):
            narrow = " and ".join(str(x.type) for x in (a, b)
                                  if isinstance(x, Tile) and x.dtype is not float64)
            here = builder().loc_str()
            origin = f"{origin or here}, which widened {narrow} to f64 at {here}"
            logging.getLogger("tl").debug("%s: f64 since %s", here, origin)  # TL_DEBUG=1
    # A scalar narrowed to a tile's dtype (f32 -> f16) is narrowed after the splat, as a tile:
    # vector units such as tnpu's convert into 16-bit types only as tiles.
    a, b = (to_tile(x, None if isinstance(x, Tile) and x.dtype.bits > dt.bits else dt)
            for x in (a, b))
    shape = broadcast_shape(a.shape, b.shape)
    if shape is None:
        raise error(f"shape mismatch: {a.type} and {b.type}")
    a, b = (to_tile(broadcast_to(x, shape), dt) for x in (a, b))
    for x in (a, b):
        if origin and x.dtype is float64:
            x.origin = origin
    return a, b


def derived(value, *xs):
    """The Tile of an op on `xs`: weak if they all are, its f64 origin the first f64 operand's."""
    xs = [x for x in xs if isinstance(x, Tile)]
    origin = next((x.origin for x in xs if x.dtype is float64 and x.origin), None)
    return Tile(value, all(x.weak for x in xs), origin)


def elementwise(name, *xs):
    b = builder()
    xs = [to_tile(x) for x in xs]
    return derived(b.op(name, [x.value for x in xs]), *xs)


def binary(name, a, b, dt=None):
    a, b = unify(a, b, dt)
    return derived(builder().op(name, [a.value, b.value]), a, b)


def compare(pred, a, b):
    a, b = unify(a, b)
    return Tile(builder().op("cmp", [a.value, b.value], {"pred": pred}))
