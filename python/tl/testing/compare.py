# assert_close: a result against its fp64 reference, by the kit's tolerance table.
# SPDX-License-Identifier: Apache-2.0
"""``assert_close(actual, reference, op=..., dtype=...)`` measures what tl-conform measures — the
error in ULPs of the result format against the unrounded fp64 reference (OpenCL CTS style) and
the normwise relative error ``||actual - reference||_2 / ||reference||_2`` — and applies the bound
tl-conform applies to that op and dtype (``tolerances.py``). A failure names the rule, the first
element outside it, the worst element, both error measures and the bound used.

>>> import numpy as np
>>> from tl.testing import assert_close
>>> x = np.float32([1, 2, 3])
>>> assert_close(x + x, 2 * x.astype(np.float64), op="add").max_ulp
0.0
"""
import math

import numpy as np

from . import tolerances

# Per format: fraction bits, smallest normal, largest finite (conformance/src/compare.cpp's).
_FORMATS = {
    "f64": (52, 2.0 ** -1022, float(np.finfo(np.float64).max)),
    "f32": (23, 2.0 ** -126, float(np.finfo(np.float32).max)),
    "f16": (10, 2.0 ** -14, 65504.0),
    "bf16": (7, 2.0 ** -126, 3.3895313892515355e38),
    "f8e4m3": (3, 2.0 ** -6, 448.0),
    "f8e5m2": (2, 2.0 ** -14, 57344.0),
}


class Comparison:
    """What assert_close measured: `max_ulp`, `normwise`, `bound` (the normwise bound that
    applied, or None), `tolerance` (the table entry), `mismatches`."""

    def __init__(self, **kw):
        self.__dict__.update(kw)

    def __repr__(self):
        return (f"Comparison(max_ulp={self.max_ulp:g}, normwise={self.normwise:.3g}, "
                f"bound={self.tolerance.describe()!r})")


def in_range(ref, dtype):
    """The reference with values beyond the format's range rounded as the format does: to the
    largest finite value, or to infinity past the rounding threshold (an overflow is right)."""
    bits, _, max_finite = _FORMATS[dtype]
    r = np.asarray(ref, np.float64)
    threshold = max_finite + math.ldexp(1.0, math.frexp(max_finite)[1] - 1 - bits - 1)
    mag = np.abs(r)
    rounded = np.where(mag >= threshold, np.copysign(np.inf, r), np.copysign(max_finite, r))
    return np.where(np.isfinite(r) & (mag > max_finite), rounded, r)


def ulp_errors(actual, ref, dtype):
    """Per element: |actual - ref| / ulp(ref) in the format `dtype` ('f32', ...); 0 for equal
    NaNs, inf for a NaN or infinity where the reference has none."""
    bits, min_normal, max_finite = _FORMATS[dtype]
    a, r = np.asarray(actual, np.float64), np.asarray(ref, np.float64)
    mag = np.abs(r)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        e = np.maximum(np.frexp(np.maximum(mag, min_normal))[1] - 1, math.frexp(min_normal)[1] - 1)
        err = np.abs(a - r) / np.ldexp(1.0, e - bits)
    err = np.where(np.isnan(a) & np.isnan(r), 0.0, err)
    err = np.where(np.isnan(a) ^ np.isnan(r), np.inf, err)
    # Beyond the range only the rounded result is right.
    beyond = np.isinf(r) | (mag > max_finite)
    err = np.where(beyond, np.where(a == in_range(r, dtype), 0.0, np.inf), err)
    err = np.where(~beyond & np.isinf(a), np.inf, err)
    return err


def _normwise(a, r):
    with np.errstate(over="ignore", invalid="ignore"):
        nr = float(np.linalg.norm(r))
        diff = np.where(a == r, 0.0, a - r)  # equal infinities do not differ
        nd = float(np.linalg.norm(diff))
    return nd / nr if nr > 0 else nd


def _where(index, shape):
    return "[" + ", ".join(str(int(i)) for i in np.unravel_index(index, shape)) + "]"


def _num(v):
    return f"{float(v):.9g}"


def _normwise_bound(tol, op, dt, ref, n, ref_abs):
    """The normwise bound that applies and what set it: the entry's figure and the classical
    c n u cond bound, combined by the entry's rule (compare.cpp's normwise_bound); None if
    neither is set."""
    bound, used = None, ""
    if tol.normwise is not None:
        bound, used = tol.normwise, tol.source
    if tol.gamma is not None:
        if n is None:
            raise ValueError(f"tl.testing.assert_close: op '{op}' on {dt} is bounded by n u cond "
                             "(classical summation bound): pass n= (terms summed per result)")
        cond = 1.0
        if ref_abs is not None:
            nr = float(np.linalg.norm(ref))
            cond = float(np.linalg.norm(np.asarray(ref_abs, np.float64))) / nr if nr else 1.0
        fmt = tol.accumulate or dt
        if fmt not in _FORMATS:
            if tol.accumulate:
                raise ValueError(f"tl.testing: tolerance {tol.source}: accumulate "
                                 f"'{tol.accumulate}' is not a float format")
            fmt = "f32"
        u = math.ldexp(1.0, -_FORMATS[fmt][0] - 1)
        g = tol.gamma * n * u * cond
        rule = f"n u cond = {tol.gamma:g} * {n} * {u:.3g} * {cond:.3g}"
        if bound is not None and tol.combine_sum:
            bound, used = bound + g, f"{used} + {rule}"
        elif bound is None or (g < bound if tol.combine_min else g > bound):
            bound, used = g, rule
    return bound, used


def _failure(label, dt, op, problem, bad, a, r, ulp, shape, c, used):
    """The message of a failed comparison: the rule, the first element outside it, the worst
    element, both errors and the bound used."""
    tol = c.tolerance
    first, worst = int(np.argmax(bad)), int(np.argmax(ulp))
    lines = [f"tl.testing.assert_close: {label} (dtype {dt}, op {op or '(default)'}): {problem}; "
             f"{int(bad.sum())} of {a.size} elements outside the bound",
             f"  first bad element {_where(first, shape)}: actual {_num(a[first])}, reference "
             f"{_num(r[first])} (error {ulp[first]:.3g} ulp)"]
    if worst != first:
        lines.append(f"  worst element {_where(worst, shape)}: actual {_num(a[worst])}, "
                     f"reference {_num(r[worst])} (error {c.max_ulp:.3g} ulp)")
    lines.append(f"  error: max {c.max_ulp:.3g} ulp, normwise {c.normwise:.3g} "
                 "(||actual - reference||_2 / ||reference||_2)")
    used_bound = [f"{tol.ulp:g} ulp"] if tol.ulp is not None else []
    if c.bound is not None:
        used_bound.append(f"normwise {c.bound:.3g}" + (f" ({used})" if used != tol.source else ""))
    if tol.exact:
        used_bound.append("exact")
    lines.append(f"  bound used: {', '.join(used_bound)} from {tol.source}")
    return "\n".join(lines)


def assert_close(actual, reference, op=None, dtype=None, *, n=None, ref_abs=None, name=None):
    """Checks `actual` (the kernel's result) against `reference` (computed in float64, e.g. with
    ``tl.testing.reference``) with tl-conform's bound for `op` on `dtype`; raises AssertionError
    naming the first bad element, the errors in ULPs and normwise, and the bound used. Returns a
    Comparison when it passes.

    op: a key of the tolerance table ('add', 'exp', 'dot', 'contract', ...; None: the dtype's
    default, the fp32 contract for f32). dtype: the format of the result ('f32', 'bf16',
    tl.bfloat16, np.float16, ...; default: actual's numpy dtype; bf16 results held in float32
    arrays need dtype='bf16'). n: terms summed per result, for bounds of the form n u cond
    (sums, dots). ref_abs: the same reference computed on absolute values (e.g.
    ``reference.matmul(abs(a), abs(b))``), for cond; default 1. name: what `actual` is, for the
    message.
    """
    __tracebackhide__ = True  # pytest: the failure is the caller's line, not this function's
    a_in = np.asarray(actual)
    r = np.asarray(reference, np.float64)
    label = f"'{name}'" if name else "actual"
    if a_in.shape != r.shape:
        raise ValueError(f"tl.testing.assert_close: shape mismatch: {label} has shape "
                         f"{a_in.shape}, reference {r.shape}")
    dt = tolerances.dtype_name(dtype if dtype is not None else a_in.dtype)
    tol = tolerances.lookup(op, dt)
    a = a_in.astype(np.float64).ravel()
    r = r.ravel()
    is_float = dt in _FORMATS
    if is_float:
        ulp = ulp_errors(a, r, dt)
        differ = ~((a == r) | (np.isnan(a) & np.isnan(r)))
    else:
        differ = a != r
        ulp = np.where(differ, np.inf, 0.0)
    ranged = in_range(r, dt) if is_float else r
    normwise = _normwise(a, ranged) if a.size else 0.0
    max_ulp = float(ulp.max()) if a.size else 0.0

    bound, used = _normwise_bound(tol, op, dt, r, n, ref_abs)

    # The first violated rule decides (tl-conform's order), with the first element outside it.
    problem, bad = None, None
    nan_bad = np.isnan(a) & np.isfinite(r) if is_float else np.zeros(a.shape, bool)
    if nan_bad.any():
        problem, bad = "NaN where the reference is finite", nan_bad
    elif tol.exact and differ.any():
        problem, bad = "exact results required", differ
    elif tol.ulp is not None and not max_ulp <= tol.ulp:
        problem, bad = f"error above {tol.ulp:g} ulp", ~(ulp <= tol.ulp)
    elif bound is not None and not normwise <= bound:
        # An element is outside the budget when its error exceeds its share of the normwise
        # bound (bound * rms(reference)); one always is when the normwise error is too large.
        share = bound * float(np.linalg.norm(ranged[np.isfinite(ranged)])) / math.sqrt(a.size)
        problem = f"normwise error {normwise:.3g} > {bound:.3g}"
        with np.errstate(invalid="ignore"):
            bad = ~(np.abs(a - r) <= share)
    result = Comparison(max_ulp=max_ulp, normwise=normwise, bound=bound, tolerance=tol,
                        mismatches=int(differ.sum()))
    if problem is None:
        return result

    raise AssertionError(_failure(label, dt, op, problem, bad, a, r, ulp, a_in.shape, result,
                                  used))
