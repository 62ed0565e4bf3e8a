# The front end: walks a @tl.kernel function's Python AST and builds its Tile IR through the C API.
# SPDX-License-Identifier: Apache-2.0
"""Python AST -> Tile IR.

Python numbers (and ``tl.constexpr`` parameters) stay Python values while traced, so shapes and
loop-invariant arithmetic are compile-time; anything touching a kernel argument or
``tl.program_id`` becomes a Tile IR value. ``for ... in tl.range(...)`` becomes a ``for`` op whose
carried values are the names assigned in its body that are live before it; ``if`` on a traced
condition becomes an ``if`` op yielding the names either branch assigns.
"""
import ast
import builtins
import operator

from . import core, ir, language
from .core import Tile, TensorArg, View, error, to_tile, is_const
from .errors import CompileError

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


class _Method:
    """A bound method of a traced value (``x.to``, ``t.stride``)."""

    def __init__(self, fn, obj):
        self.fn, self.obj = fn, obj


def assigned_names(stmts):
    """Names stored anywhere in `stmts`, in order of first assignment."""
    names = {}
    for s in stmts:
        for node in ast.walk(s):
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                names.setdefault(node.id, None)
    return list(names)


class CodeGen(ast.NodeVisitor):
    def __init__(self, fn_ast, filename, line_offset, global_vars, builder):
        self.fn_ast, self.filename, self.line_offset = fn_ast, filename, line_offset
        self.globals = global_vars
        self.b = builder
        self.vars = {}
        self.written = set()  # names of tensor arguments the kernel writes

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

    def generic_visit(self, node):
        raise self.fail(node, f"unsupported Python syntax in a kernel: {type(node).__name__}")

    def lookup(self, node, name):
        if name in self.vars:
            return self.vars[name]
        if name in self.globals:
            return self.globals[name]
        if hasattr(builtins, name):
            return getattr(builtins, name)
        raise self.fail(node, f"name '{name}' is not defined")

    # ---- statements -----------------------------------------------------------------------------

    def visit_body(self, stmts):
        for s in stmts:
            self.visit(s)

    def visit_Expr(self, node):
        if isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            return  # a docstring
        self.visit(node.value)

    def visit_Pass(self, node):
        pass

    def visit_Return(self, node):
        if node.value is not None:
            raise self.fail(node, "a kernel returns nothing: write results with tl.store")
        if node is not self.fn_ast.body[-1]:
            raise self.fail(node, "unsupported Python in a kernel: return before the end of the kernel")

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

    # ---- carried values: a traced value as a list of IR values, and back -----------------------

    def flatten(self, value, node, name):
        if isinstance(value, Tile):
            return [value]
        if is_const(value):
            return [core.constant(value)]
        if isinstance(value, View):
            return [to_tile(o, core.int32 if is_const(o) else None) for o in value.offsets]
        raise self.fail(node, f"'{name}' ({type(value).__name__}) cannot be carried through a loop or if")

    def unflatten(self, like, values):
        if isinstance(like, View):
            return View(like.tensor, values[:len(like.offsets)]), values[len(like.offsets):]
        return values[0], values[1:]

    def match(self, values, types, node, names):
        """`values` converted to `types` (Python numbers), or an error naming the variable."""
        out = []
        for v, t, name in zip(values, types, names):
            if is_const(v):
                v = core.constant(v, core.dtype_of_code(t.dtype))
            if v.type != t:
                raise self.fail(node, f"'{name}' changes type from {t} to {v.type} "
                                      "(loop-carried and if-assigned values keep their type)")
            out.append(v)
        return out

    # ---- for --------------------------------------------------------------------------------------

    def visit_For(self, node):
        it = node.iter
        fn = self.visit(it.func) if isinstance(it, ast.Call) else None
        if fn not in (language.range, language.static_range, builtins.range):
            raise self.fail(node, "unsupported Python in a kernel: for loops iterate tl.range(...) "
                                  "or tl.static_range(...)")
        if node.orelse:
            raise self.fail(node, "unsupported Python in a kernel: for ... else")
        args = [self.visit(a) for a in it.args]
        if len(args) == 1:
            args = [0] + args
        if len(args) == 2:
            args.append(1)
        if len(args) != 3 or it.keywords:
            raise self.fail(it, "range takes (end), (start, end) or (start, end, step)")
        if fn is language.static_range or all(is_const(a) for a in args) and fn is builtins.range:
            if not all(isinstance(a, int) for a in args):
                raise self.fail(it, "tl.static_range bounds must be compile-time integers")
            for i in builtins.range(*args):
                self.assign(node.target, i, node)
                self.visit_body(node.body)
            return
        if not isinstance(node.target, ast.Name):
            raise self.fail(node, "the loop variable must be a name")
        self.locate(node)
        dt = core.int32
        for a in args:
            if isinstance(a, Tile):
                if a.shape or not a.dtype.is_int or a.dtype is core.int1:
                    raise self.fail(it, f"loop bounds must be integer scalars, got {a.type}")
                dt = core.promote(dt, a.dtype)
            elif not isinstance(a, int):
                raise self.fail(it, f"loop bounds must be integers, got {a!r}")
        lb, ub, step = (to_tile(a, dt) for a in args)
        names = [n for n in assigned_names(node.body) if n in self.vars and n != node.target.id]
        carried, inits = [], []
        for n in names:
            if isinstance(self.vars[n], TensorArg):
                continue
            carried.append(n)
            inits += self.flatten(self.vars[n], node, n)
        op = self.b.create("for", [lb.value, ub.value, step.value] + [v.value for v in inits])
        body = op.region(0)
        args_ = [Tile(v) for v in ir.Op.block_args(body)]
        outer = dict(self.vars)
        parent = self.enter(body)
        rest = args_[1:]
        for n in carried:
            self.vars[n], rest = self.unflatten(outer[n], rest)
        self.vars[node.target.id] = args_[0]
        self.visit_body(node.body)
        self.locate(node)
        new = []
        for n in carried:
            new += self.flatten(self.vars[n], node, n) if not is_const(self.vars[n]) else [self.vars[n]]
        new = self.match(new, [v.type for v in inits], node, self._flat_names(carried, outer))
        self.b.op("yield", [v.value for v in new])
        self.enter(parent)
        self.vars = outer
        results = [Tile(v) for v in op.results]
        for n in carried:
            self.vars[n], results = self.unflatten(outer[n], results)

    def _flat_names(self, names, scope):
        out = []
        for n in names:
            v = scope[n]
            out += [n] * (len(v.offsets) if isinstance(v, View) else 1)
        return out

    def enter(self, block):
        """Makes `block` the insertion block; returns the previous one."""
        prev, self.block = self.block, block
        self.b.set_block(block)
        return prev

    # ---- if ---------------------------------------------------------------------------------------

    def visit_If(self, node):
        cond = self.visit(node.test)
        if is_const(cond):
            self.visit_body(node.body if cond else node.orelse)
            return
        if isinstance(cond, Tile) and cond.dtype is not core.int1:
            cond = core.compare("ne", cond, 0)
        if not isinstance(cond, Tile) or cond.shape:
            raise self.fail(node.test, f"an if condition must be a scalar, got "
                                       f"{cond.type if isinstance(cond, Tile) else cond!r}")
        then_names, else_names = assigned_names(node.body), assigned_names(node.orelse)
        live = [n for n in dict.fromkeys(then_names + else_names)
                if n in self.vars or (n in then_names and n in else_names)]
        live = [n for n in live if not isinstance(self.vars.get(n), TensorArg)]
        op = self.b.create("if", [cond.value], {"with_else": bool(live or node.orelse)}, [])
        outer = dict(self.vars)
        parent = self.block
        branches = []
        for r, stmts in enumerate((node.body, node.orelse)):
            if r == 1 and not (live or node.orelse):
                break
            self.vars = dict(outer)
            self.enter(op.region(r))
            self.visit_body(stmts)
            branches.append(self.vars)
        self.vars = outer
        if not live:
            for r in builtins.range(len(branches)):
                self.enter(op.region(r))
                self.locate(node)
                self.b.op("yield")
            self.enter(parent)
            return
        # Both branches' values of every live name; numbers equal in both stay numbers.
        keep = []
        for n in live:
            if n not in branches[0] or n not in branches[1]:
                raise self.fail(node, f"'{n}' is assigned in only one branch of the if")
            a, b_ = branches[0][n], branches[1][n]
            if is_const(a) and is_const(b_) and a == b_ and type(a) is type(b_):
                self.vars[n] = a
            else:
                keep.append(n)
        yields = []
        for r in (0, 1):
            self.enter(op.region(r))
            self.locate(node)
            flat = []
            for n in keep:
                v = branches[r][n]
                if is_const(v):
                    other = branches[1 - r][n]
                    v = core.constant(v, other.dtype if isinstance(other, Tile) else None)
                flat += self.flatten(v, node, n)
            yields.append(flat)
        types = [a.type if a.type == b.type else None for a, b in zip(*yields)]
        names = [n for n in keep for _ in builtins.range(
            len(branches[0][n].offsets) if isinstance(branches[0][n], View) else 1)]
        for i, t in enumerate(types):
            if t is None:
                raise self.fail(node, f"'{names[i]}' has type {yields[0][i].type} in one branch and "
                                      f"{yields[1][i].type} in the other")
        for r in (0, 1):
            self.enter(op.region(r))
            self.b.op("yield", [v.value for v in yields[r]])
        self.enter(parent)
        results = [Tile(self.b.if_add_result(op, t)) for t in types]
        for n in keep:
            self.vars[n], results = self.unflatten(branches[0][n], results)

    # ---- expressions ------------------------------------------------------------------------------

    def visit_Constant(self, node):
        if isinstance(node.value, (bool, int, float, str)) or node.value is None:
            return node.value
        raise self.fail(node, f"unsupported constant {node.value!r}")

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
        idx = self.visit(node.slice) if not isinstance(node.slice, ast.Slice) else slice(None)
        if isinstance(base, Tile):
            items = idx if isinstance(idx, tuple) else (idx,)
            x, axis = base, 0
            for it in items:
                if it is None:
                    x = language.expand_dims(x, axis)
                elif isinstance(it, slice) and it == slice(None):
                    pass
                else:
                    raise self.fail(node, "tiles support only [None, :]-style indexing")
                axis += 1
            return x
        if isinstance(base, (tuple, list)) and isinstance(idx, int):
            return base[idx]
        raise self.fail(node, f"cannot index {type(base).__name__}")

    def visit_Slice(self, node):
        if node.lower or node.upper or node.step:
            raise self.fail(node, "tiles support only [None, :]-style indexing")
        return slice(None)

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
        return self.binop(node, node.op, self.visit(node.left), self.visit(node.right))

    def visit_UnaryOp(self, node):
        x = self.visit(node.operand)
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
            if type(op) not in _CMPS:
                raise self.fail(node, f"unsupported comparison {type(op).__name__}")
            if not isinstance(left, Tile) and not isinstance(right, Tile):
                r = _PYCMPS[type(op)](left, right)
            else:
                r = core.compare(_CMPS[type(op)], left, right)
            result = r if result is None else self.logical("and", result, r)
            left = right
        return result

    def logical(self, kind, a, b):
        if is_const(a) and is_const(b):
            return (a and b) if kind == "and" else (a or b)
        return core.binary(kind, a, b, core.int1)

    def visit_BoolOp(self, node):
        kind = "and" if isinstance(node.op, ast.And) else "or"
        values = [self.visit(v) for v in node.values]
        out = values[0]
        for v in values[1:]:
            out = self.logical(kind, out, v)
        return out

    def visit_IfExp(self, node):
        cond = self.visit(node.test)
        if is_const(cond):
            return self.visit(node.body if cond else node.orelse)
        return language.where(cond, self.visit(node.body), self.visit(node.orelse))

    def visit_Call(self, node):
        fn = self.visit(node.func)
        args = [self.visit(a) for a in node.args]
        kwargs = {k.arg: self.visit(k.value) for k in node.keywords}
        self.locate(node)
        if isinstance(fn, _Method):
            return fn.fn(fn.obj, *args, **kwargs)
        if getattr(fn, "__tl_builtin__", False) or fn is language.cdiv:
            if fn in (language.store, language.scatter, language.atomic_add) and args:
                t = args[0].tensor if isinstance(args[0], View) else args[0]
                if isinstance(t, TensorArg):
                    self.written.add(t.name)
            return fn(*args, **kwargs)
        if fn in (builtins.min, builtins.max, builtins.len, builtins.int, builtins.float,
                  builtins.abs, builtins.bool) or isinstance(fn, type) and issubclass(fn, core.dtype):
            if all(is_const(a) or isinstance(a, tuple) for a in args):
                return fn(*args, **kwargs)
        if fn in (builtins.min, builtins.max) and len(args) == 2:
            return core.binary("min" if fn is builtins.min else "max", *args)
        raise self.fail(node, f"unsupported call in a kernel: {ast.unparse(node.func)} "
                              "(kernels call tl.* functions)")

    # ---- the kernel -------------------------------------------------------------------------------

    def build(self, params):
        """`params`: (name, kind, payload) with kind 'tensor' (dtype, rank), 'scalar' (dtype) or
        'constexpr' (Python value)."""
        self.block = None
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
                self.vars[name] = Tile(self.b.arg(name, ir.Type.scalar(payload.code)))
        self.visit_body(self.fn_ast.body)
        self.locate(self.fn_ast.body[-1])
        self.b.op("return")
        self.b.verify()
