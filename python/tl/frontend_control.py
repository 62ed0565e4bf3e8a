# The front end's control flow: `for ... in tl.range` as a `for` op and `if` on a traced condition
# as an `if` op, with the values they carry (loop-carried names, names either branch assigns).
# SPDX-License-Identifier: Apache-2.0
import ast
import builtins
import inspect

from . import core, ir, language
from .core import Tile, TensorArg, View, to_tile, is_const


def assigned_names(stmts):
    """Names stored anywhere in `stmts`, in order of first assignment."""
    names = {}
    for s in stmts:
        for node in ast.walk(s):
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                names.setdefault(node.id, None)
    return list(names)


class _Unreadable:
    """A name's value that may not be read (CodeGen.lookup raises `message` at the read)."""

    def __init__(self, message):
        self.message = message


class ControlFlowTracer:
    """for/if visitors of CodeGen (tl/frontend.py). A carried value is a Tile, a Python number
    (made a constant) or a View (its offsets); `flatten` and `unflatten` convert."""

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
                raise self.fail(node, f"'{name}' changes type from {t} to {v.type}"
                                      f"{core.f64_origin(v)} (loop-carried and if-assigned "
                                      "values keep their type)")
            out.append(v)
        return out

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

    # ---- for --------------------------------------------------------------------------------------

    def visit_For(self, node):
        if node.orelse:
            raise self.fail(node, "unsupported Python in a kernel: for ... else")
        seq = self._static_sequence(node)
        if seq is not None:
            for v in seq:
                self.assign(node.target, v, node)
                self.visit_body(node.body)
                if self.frame.returned:
                    return
            return
        fn, args = self._range_args(node)
        it = node.iter
        if fn is language.static_range or all(is_const(a) for a in args) and fn is builtins.range:
            self._unroll(node, args)
            return
        if not isinstance(node.target, ast.Name):
            raise self.fail(node, "the loop variable must be a name")
        self.locate(node)
        lb, ub, step = self._loop_bounds(it, args)
        names = [n for n in assigned_names(node.body) if n in self.vars and n != node.target.id]
        carried, inits = [], []
        for n in names:
            if isinstance(self.vars[n], TensorArg):
                continue
            carried.append(n)
            inits += self.flatten(self.vars[n], node, n)
        op = self.b.create("for", [lb.value, ub.value, step.value] + [v.value for v in inits])
        outer, new = self._trace_loop_body(node, op, carried, inits)
        # A carried value is weak (README, "Implicit conversions") if it enters and leaves the
        # body weak: a scalar argument scaled in a loop stays weak, a sum of tiles does not.
        results = [Tile(v, i.weak and n.weak) for v, i, n in zip(op.results, inits, new)]
        for n in carried:
            self.vars[n], results = self.unflatten(outer[n], results)
        self._loop_variable_after(node.target.id, lb, ub, step)

    def _loop_variable_after(self, name, lb, ub, step):
        """The loop variable after a traced loop where it was bound before the loop, as in
        Python: its last value, ub - 1 - (ub - 1 - lb) mod step, where the loop ran, its value
        before the loop where it ran no trip (it had kept that value whatever the trips: a
        silent wrong value). Unbound before the loop it stays unbound after it (a read is an
        error naming it), so that loops whose variable is not read after them emit nothing."""
        old = self.vars.get(name)
        if old is None:
            return
        ran = core.compare("lt", lb, ub)
        top = core.binary("sub", ub, 1)
        last = core.binary("sub", top, core.binary("rem", core.binary("sub", top, lb), step))
        if (isinstance(old, int) and not isinstance(old, bool)) or (
                isinstance(old, Tile) and not old.shape and old.dtype is last.dtype):
            self.vars[name] = language.where(ran, last, old)
        else:  # a value of another type: its name now holds the loop's index or that value
            self.vars[name] = _Unreadable(
                f"'{name}' is the loop variable of a tl.range loop and also holds a "
                f"{old.type if isinstance(old, Tile) else type(old).__name__} from before it; "
                "after the loop it is either (the loop may run no trip): use another name")

    def _static_sequence(self, node):
        """The values of `for x in <tuple>` (a tuple of constexprs, zip/enumerate of them):
        unrolled like tl.static_range; None when the loop iterates a range."""
        it = node.iter
        if isinstance(it, ast.Call) and self.visit(it.func) in (
                language.range, language.static_range, builtins.range):
            return None
        seq = self.visit(it)
        if isinstance(seq, (tuple, list)):
            return seq
        raise self.fail(node, "unsupported Python in a kernel: for loops iterate tl.range(...), "
                              "tl.static_range(...) or a tuple of compile-time length, got "
                              f"{seq.type if isinstance(seq, Tile) else type(seq).__name__}")

    def _range_args(self, node):
        """The range function a for loop iterates and its (start, end, step)."""
        it = node.iter
        fn = self.visit(it.func) if isinstance(it, ast.Call) else None
        args = [self.visit(a) for a in it.args]
        kwargs = {k.arg: self.visit(k.value) for k in it.keywords}
        if kwargs and fn is not builtins.range:  # tl.range(0, n, step=2)
            self.check_call(it, ast.unparse(it.func), fn, args, kwargs)
            bound = inspect.signature(fn).bind(*args, **kwargs)
            bound.apply_defaults()
            start, end, step = bound.arguments.values()
            args = [0, start, step] if end is None else [start, end, step]
        if len(args) == 1:
            args = [0] + args
        if len(args) == 2:
            args.append(1)
        if len(args) != 3 or kwargs and fn is builtins.range or None in args:
            raise self.fail(it, "range takes (end), (start, end) or (start, end, step)")
        return fn, args

    def _unroll(self, node, args):
        """tl.static_range (or range over numbers): the body traced once per iteration."""
        if not all(isinstance(a, int) for a in args):
            raise self.fail(node.iter, "tl.static_range bounds must be compile-time integers")
        if args[2] == 0:
            raise self.fail(node.iter, "tl.static_range's step must not be zero")
        for i in builtins.range(*args):
            self.assign(node.target, i, node)
            self.visit_body(node.body)
            if self.frame.returned:
                return

    def _loop_bounds(self, it, args):
        """lb, ub and step as Tiles of one integer type (i32 unless a traced bound is wider)."""
        dt = core.int32
        for a in args:
            if isinstance(a, Tile):
                if a.shape or not a.dtype.is_int or a.dtype is core.int1:
                    raise self.fail(it, f"loop bounds must be integer scalars, got {a.type}")
                dt = core.promote(dt, a.dtype)
            elif not isinstance(a, int):
                raise self.fail(it, f"loop bounds must be integers, got {a!r}")
        return (to_tile(a, dt) for a in args)

    def _trace_loop_body(self, node, op, carried, inits):
        """Traces the body into `op`'s region and yields the carried names' new values; returns
        the names' values before the loop (self.vars is restored to them) and the new values."""
        body = op.region(0)
        args_ = [Tile(v) for v in ir.Op.block_args(body)]
        for a, i in zip(args_[1:], inits):
            a.weak = i.weak
        outer = dict(self.vars)
        parent = self.enter(body)
        rest = args_[1:]
        for n in carried:
            self.vars[n], rest = self.unflatten(outer[n], rest)
        self.vars[node.target.id] = args_[0]
        self.traced_depth += 1
        self.visit_body(node.body)
        self.traced_depth -= 1
        self.locate(node)
        new = []
        for n in carried:
            new += self.flatten(self.vars[n], node, n) if not is_const(self.vars[n]) else [self.vars[n]]
        new = self.match(new, [v.type for v in inits], node, self._flat_names(carried, outer))
        self.b.op("yield", [v.value for v in new])
        self.enter(parent)
        self.vars = outer
        return outer, new

    # ---- if ---------------------------------------------------------------------------------------

    def visit_If(self, node):
        rest = self.tail_rest  # read first: tracing the condition may inline a helper
        cond = self.visit(node.test)
        if is_const(cond):
            branch = node.body if cond else node.orelse
            if rest is None:
                self.visit_body(branch)
            else:  # keeps the branch's statements at the kernel's tail (early returns)
                self.visit_body(branch + rest, tail=True)
                self.frame.returned = True
            return
        if isinstance(cond, Tile) and cond.dtype is not core.int1:
            cond = core.compare("ne", cond, 0)
        if not isinstance(cond, Tile) or cond.shape:
            raise self.fail(node.test, f"an if condition must be a scalar, got "
                                       f"{cond.type if isinstance(cond, Tile) else cond!r}")
        if rest is not None and any(isinstance(n, ast.Return) for n in ast.walk(node)):
            self._early_return(node, cond, rest)
            return
        then_names, else_names = assigned_names(node.body), assigned_names(node.orelse)
        live = [n for n in dict.fromkeys(then_names + else_names)
                if n in self.vars or (n in then_names and n in else_names)]
        live = [n for n in live if not isinstance(self.vars.get(n), TensorArg)]
        op = self.b.create("if", [cond.value], {"with_else": bool(live or node.orelse)}, [])
        parent = self.block
        branches = self._trace_branches(node, op, live)
        if not live:
            for r in builtins.range(len(branches)):
                self.enter(op.region(r))
                self.locate(node)
                self.b.op("yield")
            self.enter(parent)
            return
        self._merge_branches(node, op, live, branches, parent)

    def _early_return(self, node, cond, rest):
        """`if cond: ... return` at a kernel's tail: each branch continues with the rest of the
        kernel until a return, as an if op without results (Triton's `if pid >= n: return`)."""
        op = self.b.create("if", [cond.value], {"with_else": True}, [])
        parent, outer = self.block, dict(self.vars)
        for r, stmts in enumerate((node.body + rest, node.orelse + rest)):
            self.vars, self.frame.returned = dict(outer), False
            self.enter(op.region(r))
            self.traced_depth += 1
            self.visit_body(stmts, tail=True)
            self.traced_depth -= 1
            self.locate(node)
            self.b.op("yield")
        self.enter(parent)
        self.vars, self.frame.returned = outer, True

    def _trace_branches(self, node, op, live):
        """Traces each branch into its region from the names' values before the if; returns
        each branch's names (self.vars is restored to those before)."""
        outer = dict(self.vars)
        branches = []
        for r, stmts in enumerate((node.body, node.orelse)):
            if r == 1 and not (live or node.orelse):
                break
            self.vars = dict(outer)
            self.enter(op.region(r))
            self.traced_depth += 1
            self.visit_body(stmts)
            self.traced_depth -= 1
            branches.append(self.vars)
        self.vars = outer
        return branches

    def _merge_branches(self, node, op, live, branches, parent):
        """Both branches' values of every live name become the if's results; numbers equal in
        both stay numbers."""
        keep = []
        for n in live:
            if n not in branches[0] or n not in branches[1]:
                raise self.fail(node, f"'{n}' is assigned in only one branch of the if")
            a, b_ = branches[0][n], branches[1][n]
            if is_const(a) and is_const(b_) and a == b_ and type(a) is type(b_):
                self.vars[n] = a
            else:
                keep.append(n)
        yields = self._branch_values(node, op, keep, branches)
        types = [a.type if a.type == b.type else None for a, b in zip(*yields)]
        names = [n for n in keep for _ in builtins.range(
            len(branches[0][n].offsets) if isinstance(branches[0][n], View) else 1)]
        for i, t in enumerate(types):
            if t is None:
                raise self.fail(node, f"'{names[i]}' has type {yields[0][i].type}"
                                      f"{core.f64_origin(yields[0][i])} in one branch and "
                                      f"{yields[1][i].type}{core.f64_origin(yields[1][i])} in "
                                      "the other")
        for r in (0, 1):
            self.enter(op.region(r))
            self.b.op("yield", [v.value for v in yields[r]])
        self.enter(parent)
        results = [Tile(self.b.if_add_result(op, t), a.weak and b.weak)  # weak if both are
                   for t, a, b in zip(types, *yields)]
        for n in keep:
            self.vars[n], results = self.unflatten(branches[0][n], results)

    def _branch_values(self, node, op, keep, branches):
        """Each branch's values of the names in `keep`, flattened, made in that branch's region
        (a number takes the other branch's dtype)."""
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
        return yields
