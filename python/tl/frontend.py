# The front end: walks a @tl.kernel function's Python AST and builds its Tile IR through the C API.
# SPDX-License-Identifier: Apache-2.0
"""Python AST -> Tile IR.

Python numbers (and ``tl.constexpr`` parameters) stay Python values while traced, so shapes and
loop-invariant arithmetic are compile-time; anything touching a kernel argument or
``tl.program_id`` becomes a Tile IR value. ``for ... in tl.range(...)`` becomes a ``for`` op whose
carried values are the names assigned in its body that are live before it; ``if`` on a traced
condition becomes an ``if`` op yielding the names either branch assigns.

The tracing is split by what it traces: statements (frontend_stmts.py), expressions
(frontend_exprs.py), calls (frontend_calls.py: builtins, @tl.func helpers inlined) and control
flow (frontend_control.py); CodeGen below joins them and handles the kernel's arguments,
locations and errors.
"""
import ast
import builtins

from . import core, ir
from .core import Tile, TensorArg, error
from .errors import CompileError
from .frontend_calls import CallTracer, Frame
from .frontend_control import ControlFlowTracer, _Unreadable
from .frontend_exprs import ExpressionTracer
from .frontend_stmts import StatementTracer


class CodeGen(StatementTracer, ControlFlowTracer, CallTracer, ExpressionTracer, ast.NodeVisitor):
    """Traces one kernel function's AST (`fn_ast`, at `line_offset` in `filename`) into `builder`
    (tl.ir); build() makes the whole kernel. `written`: the tensor arguments it stores to."""

    def __init__(self, fn_ast, filename, line_offset, global_vars, builder):
        self.fn_ast, self.filename, self.line_offset = fn_ast, filename, line_offset
        self.globals = global_vars
        self.b = builder
        self.vars = {}
        self.written = set()  # names of tensor arguments the kernel writes
        self.traced_depth = 0  # for loops and ifs on traced conditions being traced
        self.tail_rest = None  # the statements after the one traced, when they end the kernel
        self.frames = [Frame(None, 0)]  # the kernel, then the @tl.func helpers being inlined

    @property
    def frame(self):
        return self.frames[-1]

    # ---- helpers --------------------------------------------------------------------------------

    def locate(self, node):
        if hasattr(node, "lineno"):
            self.b.set_loc(self.filename, node.lineno + self.line_offset, node.col_offset + 1)

    def fail(self, node, message):
        self.locate(node)
        return error(message)

    def visit(self, node):
        if isinstance(node, (ast.stmt, ast.expr)):
            self.locate(node)
        try:
            return super().visit(node)
        except CompileError:
            raise
        except RuntimeError as e:
            raise error(str(e)) from None
        except (TypeError, ValueError, IndexError, KeyError, OverflowError, ZeroDivisionError) as e:
            # Python evaluating the user's compile-time values ("a" + 1): located, not a crash.
            raise self.fail(node, f"{type(e).__name__}: {e}") from e

    def generic_visit(self, node):
        raise self.fail(node, f"unsupported Python syntax in a kernel: {type(node).__name__}")

    def lookup(self, node, name):
        if name in self.vars:
            if isinstance(self.vars[name], _Unreadable):
                raise self.fail(node, self.vars[name].message)
            return self.vars[name]
        if name in self.globals:
            return self.globals[name]
        if hasattr(builtins, name):
            return getattr(builtins, name)
        raise self.fail(node, f"name '{name}' is not defined")

    # ---- the kernel -------------------------------------------------------------------------------

    def build(self, params):
        """`params`: (name, kind, payload) with kind 'tensor' (dtype, rank), 'scalar' (dtype,
        weak) or 'constexpr' (Python value)."""
        self.block = None
        self.locate(self.fn_ast)  # arguments (and an f64 one's origin) are at the def line
        for name, kind, payload in params:
            if kind == "constexpr":
                self.vars[name] = payload
                if isinstance(payload, (bool, int, float)):
                    dt = core.const_dtype(payload)
                    self.b.add_constexpr(name, dt.code, payload)
            elif kind == "tensor":
                dt, rank = payload
                self.vars[name] = TensorArg(self.b.arg(name, ir.Type.tensor(dt.code, rank)), name)
            else:
                dt, weak = payload
                self.vars[name] = Tile(self.b.arg(name, ir.Type.scalar(dt.code)), weak)
        self.visit_body(self.fn_ast.body, tail=True)
        self.locate(self.fn_ast.body[-1])
        self.b.op("return")
        self.b.verify()
