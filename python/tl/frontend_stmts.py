# The front end's statements: assignments, expression statements, return, assert, and the Python
# statements a kernel cannot hold.
# SPDX-License-Identifier: Apache-2.0
import ast

from . import ir, language
from .core import Tile, TensorArg, is_const


class StatementTracer:
    """Statement visitors of CodeGen (tl/frontend.py); `assign` binds names, unpacking tuples."""

    def visit_body(self, stmts, tail=False):
        """Traces `stmts`. `tail`: they are the rest of the kernel (its body, or a region made
        for an early return), so that a return in an if on a traced condition can take them."""
        for i, s in enumerate(stmts):
            self.tail_rest = stmts[i + 1:] if tail else None
            self.visit(s)
            if self.frame.returned:  # the rest of the function is not traced
                return

    def visit_Expr(self, node):
        if isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            return  # a docstring
        self.visit(node.value)

    def visit_Pass(self, node):
        pass

    def visit_Return(self, node):
        frame = self.frame
        if frame.func is None and node.value is not None:
            raise self.fail(node, "a kernel returns nothing: write results with tl.store")
        at_kernel_tail = frame.func is None and self.tail_rest is not None
        if self.traced_depth != frame.depth and not at_kernel_tail:
            # The IR's for and if ops have no early exit. A return under a compile-time
            # condition (or in a static_range) only ends the tracing; in a kernel, an if on a
            # traced condition at its top level takes the rest of the kernel into its branches
            # (ControlFlowTracer.visit_If), so a return there ends its branch.
            raise self.fail(node, "unsupported Python in a kernel: return inside a tl.range loop, "
                                  "or inside an if on a traced condition in a loop or a @tl.func "
                                  "(assign the result and return at the end)")
        frame.value = self.visit(node.value) if node.value is not None else None
        frame.returned = True

    def assign(self, target, value, node):
        if isinstance(target, ast.Name):
            old = self.vars.get(target.id)
            if isinstance(old, TensorArg) and old is not value:
                raise self.fail(node, f"cannot reassign tensor argument '{target.id}'")
            self.vars[target.id] = value
            if isinstance(value, Tile) and not value.value.type.kind == ir.TENSOR:
                pass
        elif isinstance(target, (ast.Tuple, ast.List)):
            if not isinstance(value, (tuple, list)) or len(value) != len(target.elts):
                raise self.fail(node, "cannot unpack: value count does not match")
            for t, v in zip(target.elts, value):
                self.assign(t, v, node)
        else:
            raise self.fail(node, "unsupported assignment target (only names and tuples of names)")

    def visit_Assign(self, node):
        value = self.visit(node.value)
        for t in node.targets:
            self.assign(t, value, node)

    def visit_AnnAssign(self, node):
        if node.value is not None:
            self.assign(node.target, self.visit(node.value), node)

    def visit_AugAssign(self, node):
        if not isinstance(node.target, ast.Name):
            raise self.fail(node, "unsupported augmented assignment target")
        cur = self.lookup(node.target, node.target.id)
        self.assign(node.target, self.binop(node, node.op, cur, self.visit(node.value)), node)

    def visit_Assert(self, node):
        cond = self.visit(node.test)
        msg = self.visit(node.msg) if node.msg is not None else ""
        if is_const(cond):
            if not cond:
                raise self.fail(node, f"static assertion failed: {msg}")
            return
        language.device_assert(cond, str(msg))

    def visit_While(self, node):
        raise self.fail(node, "unsupported Python in a kernel: while loops (use for ... in tl.range)")

    def visit_Break(self, node):
        raise self.fail(node, "unsupported Python in a kernel: break")

    def visit_Continue(self, node):
        raise self.fail(node, "unsupported Python in a kernel: continue")

