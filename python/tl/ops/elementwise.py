# Elementwise ops: binary arithmetic with numpy broadcasting, the activations, and the gated
# linear units (SwiGLU, GeGLU), all on 2D tiles of a (rows, columns) view.
# SPDX-License-Identifier: Apache-2.0
import numpy as np

import tl

from . import _common as c
from .activations import ACTIVATIONS, activate

BINARY = ("add", "sub", "mul", "div", "swiglu", "geglu")


@tl.kernel
def binary_kernel(x: tl.tensor, y: tl.tensor, out: tl.tensor, OP: tl.constexpr,
                  BM: tl.constexpr, BN: tl.constexpr):
    """out = x OP y on a (rows, cols) view; x and y may broadcast (stride 0). swiglu:
    silu(x) * y, geglu: gelu(x) * y. Computed in f32, rounded once to out's dtype."""
    m0 = tl.program_id(0) * BM
    n0 = tl.program_id(1) * BN
    a = tl.load(x + (m0, n0), (BM, BN)).to(tl.float32)
    b = tl.load(y + (m0, n0), (BM, BN)).to(tl.float32)
    if OP == "add":
        r = a + b
    elif OP == "sub":
        r = a - b
    elif OP == "mul":
        r = a * b
    elif OP == "div":
        r = a / b
    elif OP == "swiglu":
        r = activate(a, "silu") * b
    else:
        tl.static_assert(OP == "geglu", f"unknown binary op '{OP}'")
        r = activate(a, "gelu") * b
    tl.store(out + (m0, n0), r)


@tl.kernel
def unary_kernel(x: tl.tensor, out: tl.tensor, alpha: tl.float32, ACT: tl.constexpr,
                 BM: tl.constexpr, BN: tl.constexpr):
    """out = ACT(x) on a (rows, cols) view, computed in f32."""
    m0 = tl.program_id(0) * BM
    n0 = tl.program_id(1) * BN
    v = tl.load(x + (m0, n0), (BM, BN)).to(tl.float32)
    tl.store(out + (m0, n0), activate(v, ACT, alpha))


def tiles(rows, cols, elements=4096):
    """(BM, BN) for a (rows, cols) elementwise view: up to 1024 columns, `elements` elements
    (the device's `elementwise_elements`, _common.TUNING)."""
    bn = c.pow2(cols, 16, 1024)
    return c.pow2(rows, 1, max(1, elements // bn)), bn


# Columns a launch takes at most: kernels index in int32 (runtime.INDEX_LIMIT), so a row of 2**31
# elements or more (a long 1-D array) runs as launches over slices of it.
LAUNCH_COLUMNS = 2**30


def _launch_2d(kernel, out2, args, device, **constexprs):
    """`kernel` over the (rows, cols) output view `out2`; `args` in the kernel's order (the
    arrays among them views of out2's shape)."""
    rows, cols = out2.shape
    bm, bn = tiles(rows, min(cols, LAUNCH_COLUMNS), c.tuned("elementwise_elements", device))
    for j in range(0, cols, LAUNCH_COLUMNS):
        part = [a[:, j:j + LAUNCH_COLUMNS] if isinstance(a, np.ndarray) else a for a in args]
        grid = (tl.cdiv(rows, bm), tl.cdiv(min(LAUNCH_COLUMNS, cols - j), bn))
        c.launch(kernel, grid, *part, device=device, BM=bm, BN=bn, **constexprs)


def _views_2d(out, *arrays):
    """(rows, cols) views of `out` and `arrays` (the inputs, broadcast to out's shape) for the
    2D kernels. Where every one is C-contiguous in out's shape (so that the reshapes are views,
    not copies), the values are viewed as rows of FLAT_COLUMNS (or one row) whatever out's last
    dimension, so that a width of 768 or 1000 does not make every tile ragged (a copy to the
    stack and a masked store: add of 32768 x 768 bf16 0.21 of the triad on llvm-cpu, session
    40)."""
    if all(a.shape == out.shape and a.flags.c_contiguous for a in arrays) and out.ndim:
        cols = FLAT_COLUMNS if out.size % FLAT_COLUMNS == 0 else out.size
        return [a.reshape(out.size // cols, cols) for a in (out,) + arrays]
    return [c.rows_view(out)] + [c.rows_view(np.broadcast_to(a, out.shape)) for a in arrays]


# Columns of the flat views of contiguous operands (_views_2d): the widest elementwise tile.
FLAT_COLUMNS = 1024


def _swapped(a):
    """Whether `a`'s last two axes are swapped in memory (a transposed view: the last axis
    strided, the one before it contiguous)."""
    return (a.ndim >= 2 and a.shape[-1] > 1 and a.shape[-2] > 1 and a.strides[-1] != a.itemsize
            and np.swapaxes(a, -1, -2).flags.c_contiguous)


def _transpose(a, device):
    from .linear import transpose  # (linear imports this module's activations)
    return transpose(a, device=device)


def _unswapped(a, device):
    """`a`, or where it is a transposed view (_swapped) a contiguous copy made by
    tl.ops.transpose: the 2D kernels read such an operand one element per cache line (add of
    two transposed 4096 x 4096 f32 views 0.05 of the triad on llvm-cpu, session 40)."""
    return _transpose(np.swapaxes(a, -1, -2), device) if _swapped(a) else a


def binary(op, x, y, *, device=None):
    """x OP y for OP in BINARY, with numpy broadcasting (a row-vector bias is a stride-0 view,
    not a copy). Returns a new array of the inputs' dtype."""
    x = c.float_array(op, "x", x)
    y = c.float_array(op, "y", y)
    c.same_dtype(op, "x", x, y=y)
    try:
        shape = np.broadcast_shapes(x.shape, y.shape)
    except ValueError:
        c.fail(op, "y", f"shape {y.shape} does not broadcast with x's {x.shape}")
    if x.shape == y.shape == shape and _swapped(x) and _swapped(y):
        # both transposed views (x.T + y.T): the op where both are contiguous, then one
        # transpose of the result, not one of each operand (llvm-cpu, 4096 x 4096 f32: 14 ->
        # 8 ms)
        return _transpose(binary(op, np.swapaxes(x, -1, -2), np.swapaxes(y, -1, -2),
                                 device=device), device)
    out = c.empty(shape, x)
    if out.size == 0:
        return out
    o2, xb, yb = _views_2d(out, _unswapped(x, device), _unswapped(y, device))
    _launch_2d(binary_kernel, o2, (xb, yb, o2), device, OP=op)
    return out


def add(x, y, *, device=None):
    """x + y, broadcasting."""
    return binary("add", x, y, device=device)


def sub(x, y, *, device=None):
    """x - y, broadcasting."""
    return binary("sub", x, y, device=device)


def mul(x, y, *, device=None):
    """x * y, broadcasting."""
    return binary("mul", x, y, device=device)


def div(x, y, *, device=None):
    """x / y, broadcasting."""
    return binary("div", x, y, device=device)


def _glu(op, gate, up, device):
    """gate and up given, or gate alone of width 2F split in halves (gate first)."""
    if up is None:
        gate = c.float_array(op, "x", gate, min_ndim=1)
        if gate.shape[-1] % 2:
            c.fail(op, "x", f"the last dimension ({gate.shape[-1]}) must be even to split")
        half = gate.shape[-1] // 2
        gate, up = gate[..., :half], gate[..., half:]
    return binary(op, gate, up, device=device)


def swiglu(gate, up=None, *, device=None):
    """silu(gate) * up; with one argument x: silu(x[..., :F]) * x[..., F:]."""
    return _glu("swiglu", gate, up, device)


def geglu(gate, up=None, *, device=None):
    """gelu(gate) * up (erf GELU); with one argument split as swiglu."""
    return _glu("geglu", gate, up, device)


def activation(act, x, *, alpha=0.01, device=None):
    """act(x) for act in ACTIVATIONS; `alpha`: leaky_relu's negative slope."""
    if act not in ACTIVATIONS:
        c.fail("activation", "act", f"unknown activation '{act}' (one of {', '.join(ACTIVATIONS)})")
    x = c.float_array(act, "x", x)
    out = c.empty(x.shape, x)
    if out.size:
        o2, x2 = _views_2d(out, _unswapped(x, device))
        _launch_2d(unary_kernel, o2, (x2, o2, c.number(act, "alpha", alpha)), device, ACT=act)
    return out


def relu(x, *, device=None):
    return activation("relu", x, device=device)


def gelu(x, approximate="none", *, device=None):
    """GELU: exact (erf) by default, approximate="tanh" for the tanh form."""
    if approximate not in ("none", "tanh"):
        c.fail("gelu", "approximate", f"expected 'none' or 'tanh', got {approximate!r}")
    return activation("gelu" if approximate == "none" else "gelu_tanh", x, device=device)


def silu(x, *, device=None):
    return activation("silu", x, device=device)


def sigmoid(x, *, device=None):
    return activation("sigmoid", x, device=device)


def tanh(x, *, device=None):
    return activation("tanh", x, device=device)


def leaky_relu(x, negative_slope=0.01, *, device=None):
    return activation("leaky_relu", x, alpha=negative_slope, device=device)
