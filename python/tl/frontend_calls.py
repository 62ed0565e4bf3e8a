# The front end's calls: tl.* builtins (their arguments checked against their signatures), the
# Python builtins and `math` functions a kernel may use, and @tl.func helpers, inlined.
# SPDX-License-Identifier: Apache-2.0
import ast
import builtins
import difflib
import inspect
import math

from . import core, language
from . import math as tl_math
from .core import Tile, TensorArg, View, is_const
from .errors import CompileError
from .funcs import Func


class Frame:
    """The function being traced: the kernel (func None) or an inlined @tl.func. `returned`: a
    return was traced (the rest of the body is skipped); `depth`: traced regions (for loops, ifs
    on traced conditions) open when the frame began, since a return may not leave one."""

    def __init__(self, func, depth):
        self.func, self.depth = func, depth
        self.returned, self.value = False, None


class _Method:
    """A bound method of a traced value (``x.to``, ``t.stride``)."""

    def __init__(self, fn, obj):
        self.fn, self.obj = fn, obj


def _compile_time(x):
    """A value known while tracing: a number, string, None, dtype or a tuple of such."""
    if isinstance(x, (tuple, list)):
        return all(_compile_time(e) for e in x)
    return is_const(x) or x is None or isinstance(x, (str, core.dtype))


_signatures = {}


def _signature(fn):
    """`fn`'s signature (None when Python cannot say); kept for the language's functions."""
    sig = _signatures.get(fn)
    if sig is None:
        try:
            sig = inspect.signature(fn)
        except (TypeError, ValueError):
            return None
        if getattr(fn, "__tl_builtin__", False):  # not per-call lambdas (t.stride)
            _signatures[fn] = sig
    return sig


class CallTracer:
    """Call visitors of CodeGen (tl/frontend.py)."""

    def visit_Call(self, node):
        fn = self.visit(node.func)
        args = []
        for a in node.args:
            if isinstance(a, ast.Starred):
                v = self.visit(a.value)
                if not isinstance(v, (tuple, list)):
                    raise self.fail(a, f"only a tuple can be unpacked with * in a call, got "
                                       f"{type(v).__name__}")
                args += list(v)
            else:
                args.append(self.visit(a))
        kwargs = {}
        for k in node.keywords:
            if k.arg is None:
                raise self.fail(k.value, "unsupported Python in a kernel: ** arguments in a call")
            kwargs[k.arg] = self.visit(k.value)
        self.locate(node)
        name = ast.unparse(node.func)
        if isinstance(fn, _Method):
            self.check_call(node, name, fn.fn, [fn.obj] + args, kwargs)
            return self.call(node, name, fn.fn, [fn.obj] + args, kwargs)
        if isinstance(fn, Func):
            return self.inline(node, fn, args, kwargs)
        if getattr(fn, "__tl_kernel__", False):
            raise self.fail(node, f"'{name}' is a @tl.kernel: kernels are launched, not called; "
                                  "make the helper a @tl.func to call it from a kernel")
        if getattr(fn, "__tl_builtin__", False):
            if fn in (language.store, language.scatter, language.atomic_add) and args:
                t = args[0].tensor if isinstance(args[0], View) else args[0]
                if isinstance(t, TensorArg):
                    self.written.add(t.name)
            self.check_call(node, name, fn, args, kwargs)
            return self.call(node, name, fn, args, kwargs)
        if fn in _PY_BUILTINS:
            return _PY_BUILTINS[fn](self, node, name, args, kwargs)
        if inspect.isbuiltin(fn) and getattr(fn, "__self__", None) is math:
            return self.math_call(node, name, fn, args, kwargs)
        if isinstance(fn, type) and issubclass(fn, core.dtype) and all(map(_compile_time, args)):
            return fn(*args, **kwargs)
        if inspect.isfunction(fn):
            raise self.fail(node, f"unsupported call in a kernel: '{name}' is a plain Python "
                                  "function; decorate it with @tl.func to call it from a kernel")
        raise self.fail(node, f"unsupported call in a kernel: {name} (kernels call tl.* "
                              "functions and @tl.func helpers)")

    def check_call(self, node, name, fn, args, kwargs):
        """A located error when the arguments do not fit `fn`'s signature (a wrong keyword)."""
        sig = _signature(fn)
        if sig is None:
            return
        params = sig.parameters
        if not any(p.kind is p.VAR_KEYWORD for p in params.values()):
            for k in kwargs:  # named before a missing argument: the likelier mistake
                if k not in params or params[k].kind is inspect.Parameter.POSITIONAL_ONLY:
                    close = difflib.get_close_matches(k, list(params), 1)
                    hint = f" (did you mean '{close[0]}'?)" if close else ""
                    raise self.fail(node, f"{name}() got an unexpected keyword argument "
                                          f"'{k}'{hint}")
        try:
            sig.bind(*args, **kwargs)
        except TypeError as e:
            raise self.fail(node, f"{name}(): {e}") from None

    def call(self, node, name, fn, args, kwargs):
        """Calls a language function; a Python error it raises on the user's values (a float
        where an integer belongs) becomes a located error."""
        try:
            return fn(*args, **kwargs)
        except CompileError:
            raise
        except (TypeError, ValueError, OverflowError, ZeroDivisionError, AttributeError) as e:
            raise self.fail(node, f"{name}(): {e}") from e

    # ---- Python's math module: folded at compile time -------------------------------------------

    def math_call(self, node, name, fn, args, kwargs):
        if all(map(_compile_time, args)) and all(map(_compile_time, kwargs.values())):
            try:
                return fn(*args, **kwargs)
            except (TypeError, ValueError, OverflowError) as e:
                raise self.fail(node, f"{name}(): {e}") from None
        alt = f"; use tl.math.{fn.__name__}" if hasattr(tl_math, fn.__name__) else ""
        raise self.fail(node, f"{name}() runs at compile time on numbers, not on traced "
                              f"values{alt}")

    # ---- @tl.func helpers ---------------------------------------------------------------------

    def inline(self, node, f, args, kwargs):
        """Traces helper `f`'s body in place with its parameters bound to the call's values;
        returns what its return statement gives (None without one)."""
        names = [fr.func.__name__ for fr in self.frames if fr.func is not None]
        if any(fr.func is f for fr in self.frames):
            chain = " -> ".join(names + [f.__name__])
            raise self.fail(node, f"recursive @tl.func call: {chain} (helpers are inlined when "
                                  "traced, so a recursion would never end)")
        self.check_call(node, f.__name__, f.fn, args, kwargs)
        try:
            bound = f.signature.bind(*args, **kwargs)
        except TypeError as e:
            raise self.fail(node, f"{f.__name__}(): {e}") from None
        bound.apply_defaults()
        for pname, p in f.signature.parameters.items():
            v = bound.arguments.get(pname)
            if p.annotation is language.constexpr and isinstance(v, (Tile, TensorArg, View)):
                raise self.fail(node, f"{f.__name__}(): parameter '{pname}' is a tl.constexpr; "
                                      f"pass a compile-time value, not a traced one")
        call_site = f"{self.filename}:{node.lineno + self.line_offset}:{node.col_offset + 1}"
        fn_ast, filename, offset = f.source()
        saved = (self.vars, self.globals, self.filename, self.line_offset)
        frame = Frame(f, self.traced_depth)
        self.vars, self.globals = dict(bound.arguments), f.globals()
        self.filename, self.line_offset = filename, offset
        self.frames.append(frame)
        try:
            self.visit_body(fn_ast.body)
        except CompileError as e:
            note = f"\n  in @tl.func '{f.__name__}' called from {call_site}"
            raise CompileError(f"{e}{note}") from None
        finally:
            self.frames.pop()
            self.vars, self.globals, self.filename, self.line_offset = saved
            self.locate(node)
        return frame.value


# ---- Python builtins -------------------------------------------------------------------------

def _traced(args):
    return any(isinstance(a, (Tile, TensorArg, View)) for a in args)


def _min_max(tracer, node, name, args, kwargs):
    fn = builtins.min if name == "min" else builtins.max
    if kwargs:
        raise tracer.fail(node, f"{name}() with {', '.join(kwargs)}= is not supported in a kernel")
    if not _traced(args):
        try:
            return fn(*args)
        except (TypeError, ValueError) as e:
            raise tracer.fail(node, f"{name}(): {e}") from None
    if len(args) < 2:
        raise tracer.fail(node, f"{name}() of one traced value: use tl.{name}(x) to reduce a tile")
    # Elementwise on tiles and scalars, as tl.minimum/tl.maximum (NaN propagates).
    pair = language.minimum if name == "min" else language.maximum
    out = args[0]
    for a in args[1:]:
        out = pair(out, a)
    return out


def _abs(tracer, node, name, args, kwargs):
    if len(args) != 1 or kwargs:
        raise tracer.fail(node, "abs() takes one argument")
    if isinstance(args[0], Tile):
        return language.abs(args[0])
    return _fold(tracer, node, name, builtins.abs, args, kwargs)


def _fold(tracer, node, name, fn, args, kwargs):
    try:
        return fn(*args, **kwargs)
    except (TypeError, ValueError, OverflowError) as e:
        raise tracer.fail(node, f"{name}(): {e}") from None


def _conversion(fn, hint):
    def convert(tracer, node, name, args, kwargs):
        if _traced(args):
            raise tracer.fail(node, f"{name}() of a traced value is not supported: {hint}")
        return _fold(tracer, node, name, fn, args, kwargs)
    return convert


def _sequence(fn):
    """enumerate/zip/tuple/... over compile-time sequences (a tuple of constexprs, a shape)."""
    def seq(tracer, node, name, args, kwargs):
        if any(isinstance(a, (Tile, TensorArg, View)) for a in args):
            raise tracer.fail(node, f"{name}() needs a tuple, not a traced value")
        out = _fold(tracer, node, name, fn, args, kwargs)
        return out if isinstance(out, (tuple, int, bool)) else list(out)
    return seq


def _print(tracer, node, name, args, kwargs):
    raise tracer.fail(node, "print() in a kernel: use tl.print (from the device) or "
                            "tl.static_print (at compile time)")


_PY_BUILTINS = {
    builtins.min: _min_max, builtins.max: _min_max, builtins.abs: _abs,
    builtins.float: _conversion(builtins.float, "use x.to(tl.float32)"),
    builtins.int: _conversion(builtins.int, "use x.to(tl.int32)"),
    builtins.bool: _conversion(builtins.bool, "compare it (x != 0)"),
    builtins.len: _conversion(builtins.len, "use x.shape[0]"),
    builtins.enumerate: _sequence(builtins.enumerate), builtins.zip: _sequence(builtins.zip),
    builtins.reversed: _sequence(builtins.reversed), builtins.tuple: _sequence(builtins.tuple),
    builtins.list: _sequence(builtins.list), builtins.print: _print,
}
