# A thin Python layer over the compiler C API: build Tile IR ops by name, query types, compile.
# SPDX-License-Identifier: Apache-2.0
"""Tile IR builder over ``libtl_compiler.so`` (every rule is checked in C++ as ops are made).

>>> from tl import ir
>>> b = ir.Builder("k")
>>> x = b.arg("x", ir.Type.tensor(ir.F32, 1))
>>> pid = b.op("program_id", attrs={"axis": 0})
>>> str(pid.type)
'i32'
>>> _ = b.op("return")
>>> b.verify()
>>> print(b.text().splitlines()[0])
kernel @k(%x: tensor<?xf32>) {
"""
import json

from ._ffi import ffi, compiler, INFER
from .errors import CompileError



def _dtype_names():
    """tl_dtype's spellings in code order, from the compiler library (tl/dtype.h is the one list)."""
    lib, names = compiler(), []
    while (name := lib.tl_ir_dtype_name(len(names))) != ffi.NULL:
        names.append(ffi.string(name).decode())
    return names


DTYPE_NAMES = _dtype_names()
(I1, I8, I16, I32, I64, U8, U16, U32, F16, BF16, F32, F64, F8E4M3, F8E5M2) = (
    DTYPE_NAMES.index(n) for n in ("i1", "i8", "i16", "i32", "i64", "u8", "u16", "u32", "f16",
                                   "bf16", "f32", "f64", "f8e4m3", "f8e5m2"))
SCALAR, TILE, TENSOR = 0, 1, 2
_ATTR_BOOL, _ATTR_INT, _ATTR_FLOAT, _ATTR_STRING, _ATTR_INTS, _ATTR_TYPE = range(6)


def is_float(d):
    return d in (F16, BF16, F32, F64, F8E4M3, F8E5M2)


def is_signed(d):
    return d in (I8, I16, I32, I64)


def bit_width(d):
    """Bits of one element: the number in the dtype's spelling (bf16: 16, f8e4m3: 8, i1: 1)."""
    name = DTYPE_NAMES[d]
    return int(name[2 if name.startswith("bf") else 1:].split("e")[0])


class Type:
    """A Tile IR type: kind (SCALAR, TILE, TENSOR), element dtype code, shape."""
    __slots__ = ("kind", "dtype", "shape")

    def __init__(self, kind, dtype, shape=()):
        self.kind, self.dtype, self.shape = kind, dtype, tuple(shape)

    @staticmethod
    def scalar(dtype):
        return Type(SCALAR, dtype)

    @staticmethod
    def tile(dtype, shape):
        return Type(TILE, dtype, shape) if len(shape) else Type(SCALAR, dtype)

    @staticmethod
    def tensor(dtype, rank):
        return Type(TENSOR, dtype, (-1,) * rank)

    @property
    def rank(self):
        return len(self.shape)

    def with_dtype(self, dtype):
        return Type(self.kind, dtype, self.shape)

    def __eq__(self, o):
        return isinstance(o, Type) and (self.kind, self.dtype, self.shape) == (o.kind, o.dtype, o.shape)

    def __hash__(self):
        return hash((self.kind, self.dtype, self.shape))

    def __str__(self):
        name = DTYPE_NAMES[self.dtype]
        if self.kind == SCALAR:
            return name
        dims = "x".join("?" if d < 0 else str(d) for d in self.shape)
        return f"{'tile' if self.kind == TILE else 'tensor'}<{dims}x{name}>"

    __repr__ = __str__

    def _c(self, out):
        out.kind, out.dtype, out.rank = self.kind, self.dtype, len(self.shape)
        for i, d in enumerate(self.shape):
            out.shape[i] = d


def _from_c(t):
    return Type(t.kind, t.dtype, [t.shape[i] for i in range(t.rank)])


class Value:
    """An SSA value (a C handle) with its type."""
    __slots__ = ("handle", "type")

    def __init__(self, handle):
        self.handle = handle
        t = ffi.new("tl_ir_type *")
        compiler().tl_ir_value_type(handle, t)
        self.type = _from_c(t[0])

    def __repr__(self):
        return f"Value({self.type})"


class Op:
    __slots__ = ("handle", "results")

    def __init__(self, handle):
        self.handle = handle
        lib = compiler()
        self.results = [Value(lib.tl_ir_op_result(handle, i))
                        for i in range(lib.tl_ir_op_result_count(handle))]

    def region(self, i):
        return compiler().tl_ir_op_region(self.handle, i)

    @staticmethod
    def block_args(block):
        lib = compiler()
        return [Value(lib.tl_ir_block_arg(block, i)) for i in range(lib.tl_ir_block_arg_count(block))]


def check(status, error=CompileError):
    """Raises `error` with the status message when `status` is not NULL (success)."""
    if status != ffi.NULL:
        lib = compiler()
        msg = ffi.string(lib.tl_cstatus_message(status)).decode().rstrip("\n")
        lib.tl_cstatus_free(status)
        raise error(msg)


class Builder:
    """Builds one kernel in its own module."""

    def __init__(self, name):
        lib = self._lib = compiler()
        out = ffi.new("tl_module *")
        check(lib.tl_module_create(out))
        self.module = ffi.gc(out[0], lib.tl_module_destroy)
        k = ffi.new("tl_kernel *")
        check(lib.tl_kernel_create(self.module, name.encode(), k))
        self.kernel = k[0]
        self.loc = ("<python>", 0, 0)

    def set_loc(self, file, line, col):
        if (file, line, col) != self.loc:
            self.loc = (file, line, col)
            self._lib.tl_kernel_set_location(self.kernel, file.encode(), line, col)

    def loc_str(self):
        return f"{self.loc[0]}:{self.loc[1]}:{self.loc[2]}"

    def arg(self, name, type_):
        t = ffi.new("tl_ir_type *")
        type_._c(t[0])
        out = ffi.new("tl_ir_value *")
        check(self._lib.tl_kernel_add_arg(self.kernel, name.encode(), t, out))
        return Value(out[0])

    def add_constexpr(self, name, dtype, value):
        iv = int(value) if not is_float(dtype) else 0
        fv = float(value) if is_float(dtype) else 0.0
        check(self._lib.tl_kernel_add_constexpr(self.kernel, name.encode(), dtype, iv, fv))

    def set_block(self, block):
        self._lib.tl_kernel_set_insertion_block(self.kernel, block if block is not None else ffi.NULL)

    def create(self, name, operands=(), attrs=None, results=None):
        """Makes op `name`; returns an Op. `results` None lets the builder infer the types."""
        keep = []
        ops = ffi.new("tl_ir_value[]", [v.handle for v in operands]) if operands else ffi.NULL
        n_attrs = len(attrs) if attrs else 0
        c_attrs = ffi.new("tl_ir_attr[]", n_attrs) if n_attrs else ffi.NULL
        for i, (k, v) in enumerate((attrs or {}).items()):
            a = c_attrs[i]
            kb = ffi.new("char[]", k.encode())
            keep.append(kb)
            a.name = kb
            if isinstance(v, bool):
                a.kind, a.i = _ATTR_BOOL, int(v)
            elif isinstance(v, int):
                a.kind, a.i = _ATTR_INT, v
            elif isinstance(v, float):
                a.kind, a.f = _ATTR_FLOAT, v
            elif isinstance(v, str):
                s = ffi.new("char[]", v.encode())
                keep.append(s)
                a.kind, a.s = _ATTR_STRING, s
            elif isinstance(v, Type):
                a.kind = _ATTR_TYPE
                v._c(a.type)
            else:
                arr = ffi.new("int64_t[]", list(v))
                keep.append(arr)
                a.kind, a.ints, a.ints_len = _ATTR_INTS, arr, len(v)
        if results is None:
            c_res, n_res = ffi.NULL, INFER
        else:
            n_res = len(results)
            c_res = ffi.new("tl_ir_type[]", n_res) if n_res else ffi.NULL
            for i, t in enumerate(results):
                t._c(c_res[i])
        out = ffi.new("tl_ir_op *")
        check(self._lib.tl_ir_op_create(self.kernel, name.encode(), ops, len(operands), c_attrs,
                                        n_attrs, c_res, n_res, out))
        return Op(out[0])

    def op(self, name, operands=(), attrs=None, result=None):
        """Makes a single-result op (or a result-less one: returns None)."""
        o = self.create(name, operands, attrs, None if result is None else [result])
        return o.results[0] if o.results else None

    def if_add_result(self, op, type_):
        t = ffi.new("tl_ir_type *")
        type_._c(t[0])
        out = ffi.new("tl_ir_value *")
        check(self._lib.tl_ir_if_add_result(op.handle, t, out))
        return Value(out[0])

    def verify(self):
        check(self._lib.tl_module_verify(self.module))

    def text(self):
        out = ffi.new("char **")
        check(self._lib.tl_module_print(self.module, out))
        try:
            return ffi.string(out[0]).decode()
        finally:
            self._lib.tl_compiler_free(out[0])


def compile_text(text, target, filename="<tl>", producer="tl-python", options=""):
    """Parses `.tlir` text and compiles it for `target` with target `options` (a JSON object of
    strings, as a device's info["target_options"], or a dict); returns the executable bytes."""
    lib = compiler()
    out = ffi.new("tl_module *")
    check(lib.tl_module_parse(text.encode(), filename.encode(), out))
    module = ffi.gc(out[0], lib.tl_module_destroy)
    data, size = ffi.new("void **"), ffi.new("size_t *")
    if isinstance(options, dict):
        options = json.dumps(options)
    check(lib.tl_module_compile_with_options(module, target.encode(), (options or "").encode(),
                                             producer.encode(), data, size))
    try:
        return bytes(ffi.buffer(data[0], size[0]))
    finally:
        lib.tl_compiler_free(data[0])


def compiler_version():
    """The compiler build's identity: the hash of the sources that decide its code."""
    return ffi.string(compiler().tl_compiler_version()).decode()


def targets():
    """The compiler's targets: ['tlir', 'llvm-cpu', ...]."""
    return ffi.string(compiler().tl_compiler_targets()).decode().split(", ")


def target_for_device(preferred, targets):
    """The target to compile for a device that prefers `preferred` and accepts `targets` (as the
    HAL reports them): the compiler's one choice (tl_compiler_target_for_device), shared with
    tlc and tl-conform."""
    out = ffi.new("char[]", 256)
    check(compiler().tl_compiler_target_for_device(preferred.encode(), ",".join(targets).encode(),
                                                   out, 256))
    return ffi.string(out).decode()
