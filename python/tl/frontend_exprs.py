# The front end's expressions: constants, names, attributes, indexing, operators, comparisons and
# calls, folded to Python values when every input is one and traced to Tile IR otherwise.
# SPDX-License-Identifier: Apache-2.0
import ast
import builtins
import operator

from . import core, language
from .core import Tile, TensorArg, View, is_const
from .frontend_calls import _Method

_BINOPS = {ast.Add: "add", ast.Sub: "sub", ast.Mult: "mul", ast.Div: "div", ast.FloorDiv: "div",
           ast.Mod: "rem", ast.BitAnd: "and", ast.BitOr: "or", ast.BitXor: "xor",
           ast.LShift: "shl", ast.RShift: "shr", ast.Pow: "pow"}
_PYOPS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
          ast.Div: operator.truediv, ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod,
          ast.BitAnd: operator.and_, ast.BitOr: operator.or_, ast.BitXor: operator.xor,
          ast.LShift: operator.lshift, ast.RShift: operator.rshift, ast.Pow: operator.pow}
_CMPS = {ast.Lt: "lt", ast.LtE: "le", ast.Gt: "gt", ast.GtE: "ge", ast.Eq: "eq", ast.NotEq: "ne"}
_PYCMPS = {ast.Lt: operator.lt, ast.LtE: operator.le, ast.Gt: operator.gt, ast.GtE: operator.ge,
           ast.Eq: operator.eq, ast.NotEq: operator.ne}


class ExpressionTracer:
    """Expression visitors of CodeGen (tl/frontend.py): each returns a Python value, a Tile, a
    TensorArg, a View or a tuple of them."""

    def visit_Constant(self, node):
        if isinstance(node.value, (bool, int, float, str)) or node.value is None:
            return node.value
        raise self.fail(node, f"unsupported constant {node.value!r}")

    def visit_JoinedStr(self, node):
        """An f-string of compile-time values (a tl.static_assert message, a tl.print prefix)."""
        parts = []
        for v in node.values:
            if isinstance(v, ast.Constant):
                parts.append(v.value)
                continue
            x = self.visit(v.value)
            if isinstance(x, (Tile, TensorArg, View)):
                raise self.fail(v, "an f-string formats compile-time values, not traced ones "
                                   "(tl.print prints those)")
            x = {ord("r"): repr, ord("s"): str, ord("a"): ascii}.get(v.conversion, lambda y: y)(x)
            parts.append(format(x, self.visit(v.format_spec) if v.format_spec else ""))
        return "".join(parts)

    def visit_Name(self, node):
        return self.lookup(node, node.id)

    def visit_Tuple(self, node):
        return tuple(self.visit(e) for e in node.elts)

    visit_List = visit_Tuple

    def visit_Attribute(self, node):
        base = self.visit(node.value)
        name = node.attr
        if isinstance(base, Tile):
            if name in ("shape", "dtype"):
                return getattr(base, name)
            if name == "T":
                return language.trans(base)
            if name in language.TILE_METHODS:
                return _Method(language.TILE_METHODS[name], base)
            raise self.fail(node, f"tiles have no attribute '{name}'")
        if isinstance(base, TensorArg):
            if name == "shape":
                return tuple(core.cast(Tile(self.b.op("dim", [base.value], {"axis": i})), core.int32)
                             for i in builtins.range(base.rank))
            if name == "dtype":
                return base.dtype
            if name == "stride":
                return _Method(lambda t, i: core.cast(
                    Tile(self.b.op("stride", [t.value], {"axis": i})), core.int32), base)
            raise self.fail(node, f"tensors have no attribute '{name}'")
        try:
            return getattr(base, name)
        except AttributeError:
            raise self.fail(node, f"'{type(base).__name__}' has no attribute '{name}'") from None

    def visit_Subscript(self, node):
        base = self.visit(node.value)
        idx = self.visit(node.slice)
        if isinstance(base, Tile):
            return self.tile_subscript(node, base, idx if isinstance(idx, tuple) else (idx,))
        if isinstance(base, (tuple, list, str)):
            # A tuple of constexprs (or a shape) indexed or sliced by compile-time integers.
            if not (isinstance(idx, int) or isinstance(idx, slice) and all(
                    v is None or isinstance(v, int) for v in (idx.start, idx.stop, idx.step))):
                raise self.fail(node, f"a tuple is indexed by compile-time integers, got "
                                      f"{idx.type if isinstance(idx, Tile) else repr(idx)}")
            try:
                return base[idx]
            except IndexError:
                raise self.fail(node, f"tuple index {idx} out of range "
                                      f"(length {len(base)})") from None
        raise self.fail(node, f"cannot index {type(base).__name__}")

    def tile_subscript(self, node, x, items):
        """x[...] with compile-time items: None (a new axis of 1), ':' (the whole axis), a:b
        (elements a to b - 1, Python's bounds, negative from the end) and i (element i, the
        axis dropped): a slice of the tile, a reshape dropping the integers' axes, then an
        expand_dims per None."""
        shape = list(x.shape)
        if sum(it is not None for it in items) > len(shape):
            raise self.fail(node, f"too many indices for a tile of shape {tuple(shape)}")
        offsets, sizes, kept, new_axes, d = [0] * len(shape), list(shape), [], [], 0
        for it in items:
            if it is None:
                new_axes.append(len(kept) + len(new_axes))
                continue
            n = shape[d]
            if isinstance(it, slice):
                if not all(v is None or isinstance(v, int) and not isinstance(v, bool)
                           for v in (it.start, it.stop, it.step)):
                    raise self.fail(node, "tile slice bounds must be compile-time integers")
                start, stop, step = it.indices(n)
                if step != 1:
                    raise self.fail(node, f"tile slices take every element (step 1), got "
                                          f"step {it.step}")
                if stop <= start:
                    raise self.fail(node, f"the slice {it.start}:{it.stop} of axis {d} (size "
                                          f"{n}) is empty")
                offsets[d], sizes[d] = start, stop - start
                kept.append(stop - start)
            elif isinstance(it, int) and not isinstance(it, bool):
                if not -n <= it < n:
                    raise self.fail(node, f"index {it} is out of range for axis {d} of size "
                                          f"{n}")
                offsets[d], sizes[d] = it % n, 1
            else:
                what = it.type if isinstance(it, Tile) else repr(it)
                raise self.fail(node, f"tiles are indexed by None, ':', compile-time slices "
                                      f"a:b and integers, got {what}")
            d += 1
        kept += shape[d:]
        if not kept:
            raise self.fail(node, "an integer index on every axis would give one element: a "
                                  "tile keeps an axis (x[i:i + 1])")
        if sizes != shape:
            x = language._slice(x, offsets, sizes)
        if list(x.shape) != kept:
            x = language.reshape(x, kept)
        for axis in new_axes:
            x = language.expand_dims(x, axis)
        return x

    def visit_Slice(self, node):
        parts = [None if p is None else self.visit(p) for p in (node.lower, node.upper, node.step)]
        if any(isinstance(p, Tile) for p in parts):
            raise self.fail(node, "slice bounds must be compile-time integers")
        return slice(*parts)

    def binop(self, node, op, a, b):
        if isinstance(a, (TensorArg, View)) and isinstance(op, ast.Add):
            view = language._view(a)
            offs = b if isinstance(b, tuple) else (b,)
            if len(offs) != view.tensor.rank:
                raise self.fail(node, f"tensor '{view.tensor.name}' has rank {view.tensor.rank}: "
                                      f"offset it by {view.tensor.rank} values, got {len(offs)}")
            return View(view.tensor, [self.add(o, p) for o, p in zip(view.offsets, offs)])
        if is_const(a) and is_const(b):
            try:
                return _PYOPS[type(op)](a, b)
            except ZeroDivisionError:
                raise self.fail(node, "division by zero") from None
        if type(op) not in _BINOPS:
            raise self.fail(node, f"unsupported operator {type(op).__name__}")
        if isinstance(op, ast.Div):
            a, b = core.unify(a, b)
            if not a.dtype.is_float:
                a, b = core.cast(a, core.float32), core.cast(b, core.float32)
            return core.binary("div", a, b)
        if isinstance(op, ast.FloorDiv):
            a, b = core.unify(a, b)
            if a.dtype.is_float:
                raise self.fail(node, "// on floats is not supported (use /)")
        return core.binary(_BINOPS[type(op)], a, b)

    def add(self, a, b):
        if is_const(a) and is_const(b):
            return a + b
        if is_const(a) and a == 0:
            return b
        return core.binary("add", a, b)

    def visit_BinOp(self, node):
        left, right = self.visit(node.left), self.visit(node.right)
        self.locate(node)  # an error names the operator's expression, not its last operand
        return self.binop(node, node.op, left, right)

    def visit_UnaryOp(self, node):
        x = self.visit(node.operand)
        self.locate(node)
        if is_const(x):
            return {ast.USub: operator.neg, ast.UAdd: operator.pos, ast.Not: operator.not_,
                    ast.Invert: operator.invert}[type(node.op)](x)
        if isinstance(node.op, ast.USub):
            return core.elementwise("neg", x)
        if isinstance(node.op, ast.UAdd):
            return x
        if isinstance(node.op, ast.Not):
            if x.dtype is not core.int1:
                x = core.compare("ne", x, 0)
            return core.elementwise("not", x)
        return core.elementwise("not", x)

    def visit_Compare(self, node):
        left, result = self.visit(node.left), None
        for op, right_node in zip(node.ops, node.comparators):
            right = self.visit(right_node)
            self.locate(node)
            r = self.compare(node, op, left, right)
            result = r if result is None else self.logical("and", result, r)
            left = right
        return result

    def compare(self, node, op, left, right):
        traced = isinstance(left, Tile) or isinstance(right, Tile)
        if isinstance(op, (ast.Is, ast.IsNot)):
            # `bias is None`, `x.dtype is tl.float16`: identity of compile-time values (a traced
            # value is never None); two traced values have no identity to compare.
            if traced and left is not None and right is not None:
                raise self.fail(node, "'is' compares compile-time values (None, dtypes, "
                                      "constexprs), not traced values: use ==")
            return (left is right) == isinstance(op, ast.Is)
        if isinstance(op, (ast.In, ast.NotIn)):
            if traced or not isinstance(right, (tuple, list, str)):
                raise self.fail(node, "'in' tests a compile-time value against a tuple of "
                                      "compile-time values")
            return (left in right) == isinstance(op, ast.In)
        for v in (left, right):
            if isinstance(v, (TensorArg, View)):
                raise self.fail(node, f"'{v.name if isinstance(v, TensorArg) else 'a view'}' "
                                      "is a tensor, not a value: compare what tl.load reads")
        if not traced:
            return _PYCMPS[type(op)](left, right)
        return core.compare(_CMPS[type(op)], left, right)

    def logical(self, kind, a, b):
        traced = (Tile, TensorArg, View)
        if not isinstance(a, traced) and not isinstance(b, traced):
            return (a and b) if kind == "and" else (a or b)
        return core.binary(kind, a, b, core.int1)

    def visit_BoolOp(self, node):
        # As Python where an operand is known at compile time: `B is not None and B > 1` stops
        # at a False first operand (its second would fail on None), `a or b` at a true one;
        # traced operands are all evaluated and combined (no side effects to skip).
        kind = "and" if isinstance(node.op, ast.And) else "or"
        out = self.visit(node.values[0])
        for v in node.values[1:]:
            if not isinstance(out, (Tile, TensorArg, View)) and bool(out) == (kind == "or"):
                return out  # decided: False for and, true for or
            out = self.logical(kind, out, self.visit(v))
        return out

    def visit_IfExp(self, node):
        cond = self.visit(node.test)
        if is_const(cond):
            return self.visit(node.body if cond else node.orelse)
        return language.where(cond, self.visit(node.body), self.visit(node.orelse))
