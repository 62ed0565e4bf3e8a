# @tl.func: helper functions a kernel (or another helper) calls; the front end inlines each call.
# SPDX-License-Identifier: Apache-2.0
"""``@tl.func`` makes a helper that kernels call like a Python function. Each call is traced in
place (inlined) with the caller's values, so a helper is generic over dtypes and shapes, may
return tiles or tuples, and takes keyword arguments and defaults:

>>> import numpy as np, tl
>>> @tl.func
... def axpy(a, x, y, scale=1.0):
...     return a * x * scale + y
>>> @tl.kernel
... def k(x: tl.tensor, y: tl.tensor, BLOCK: tl.constexpr):
...     v = tl.load(x + (0,), (BLOCK,))
...     tl.store(y + (0,), axpy(2.0, v, v, scale=0.5))
>>> x = np.arange(4, dtype=np.float32); y = np.zeros_like(x)
>>> k[(1,)](x, y, BLOCK=4)
>>> y.tolist()
[0.0, 2.0, 4.0, 6.0]
"""
import ast
import inspect
import textwrap

from .errors import CompileError


def function_source(fn, what):
    """(function AST without decorators, file name, line offset) of `fn`'s source."""
    try:
        lines, start = inspect.getsourcelines(fn)
        filename = inspect.getsourcefile(fn) or "<unknown>"
    except (OSError, TypeError) as e:
        raise CompileError(f"<unknown>:0:0: error: cannot read the source of {what} "
                           f"'{fn.__name__}': {e}") from None
    fn_ast = ast.parse(textwrap.dedent("".join(lines))).body[0]
    fn_ast.decorator_list = []
    return fn_ast, filename, start - 1


def function_globals(fn):
    """The names `fn` sees: its module's globals and its closure's variables."""
    g = dict(fn.__globals__)
    for name, cell in zip(fn.__code__.co_freevars, fn.__closure__ or ()):
        try:
            g[name] = cell.cell_contents
        except ValueError:  # a closure variable not assigned yet
            pass
    return g


class Func:
    """A ``@tl.func`` helper: inlined at each call from a kernel or another helper."""

    def __init__(self, fn):
        self.fn = fn
        self.__name__ = fn.__name__
        self.__doc__ = fn.__doc__
        self.signature = inspect.signature(fn)
        self._ast = None

    def __repr__(self):
        return f"<tl.func {self.__name__}>"

    def __call__(self, *args, **kwargs):
        raise RuntimeError(f"@tl.func '{self.__name__}' can only be called inside a @tl.kernel "
                           "(or another @tl.func)")

    def source(self):
        if self._ast is None:
            self._ast = function_source(self.fn, "@tl.func")
        return self._ast

    def globals(self):
        return function_globals(self.fn)


def func(fn):
    """Makes a helper of a Python function that @tl.kernel bodies call (inlined when traced)."""
    if isinstance(fn, Func):
        return fn
    if not inspect.isfunction(fn):
        raise TypeError(f"tl.func applies to a Python function, got {type(fn).__name__}")
    return Func(fn)
