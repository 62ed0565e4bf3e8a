#!/usr/bin/env python3
# Fits the rational approximations of the inline f32 math (src/codegen_elementwise.cpp) and
# measures them as f32 code computes them: f(x) = x P(s) / Q(s), s = x^2, x clamped to [-c, c],
# P and Q by Horner's rule with FMAs (emulated in float64, then rounded to float32).
# SPDX-License-Identifier: Apache-2.0
"""Usage: python fit_rational.py erf|tanh M N C  (degrees of P and Q in s, the clamp C);
python fit_rational.py ndtr M N A  (degrees of P and Q in a = |x|, the clamp A).

`erf 5 5 3.925` gives erf_f32's coefficients (1.9e-8 relative before rounding to f32; 5.13 ulp
at x = 3.6576 in this emulation on its grid of 2.2M points up to 4.925, where the compiled code
measured 5.2 over LlvmCpu.InlineErfAndTanhF32AreWithinTheirBounds's 4.3M inputs). Fitting: Sanathanan-Koerner iteration on the relative error of
f(x) / x, then Lawson reweighting toward its minimax; Q(0) = 1. A real root of Q in [0, C^2]
(a pole) is reported: tanh's fits of degree 5 and 6 have one.

`ndtr 4 5 14.5` gives ndtr_f32's: Phi(-a) = e^(-a^2 / 2) m(a), m(a) = Phi(-a) e^(a^2 / 2) (Mills'
ratio over sqrt(2 pi)) ~ P(a) / Q(a), 5.9e-9 relative before rounding, all coefficients positive;
measured as ndtr_f32 computes it (a^2 reduced by n 2 ln2 inside an FMA, e^(-r / 2) 2^n correctly
rounded, 1 - Phi(-a) for x > 0): 5.8 ulp at x = -10.87, 3.9e-7 relative (compiled: 4.8 ulp)."""
import math
import sys

import numpy as np

F32 = np.float32


def fit(g, smax, m, n, npts=4000, iters=40):
    """P (degree m) and Q (degree n, Q(0) = 1) with P / Q ~ g on [0, smax]: (max rel err, p, q)."""
    t = np.cos(np.pi * (np.arange(npts) + 0.5) / npts)
    s = np.sort(np.concatenate([(t + 1) / 2 * smax, np.linspace(0, smax, npts)]))
    gv = g(s)
    q_prev, w, best = np.ones_like(s), np.ones_like(s), None
    for it in range(iters):
        a = np.hstack([np.vander(s, m + 1, increasing=True),
                       -gv[:, None] * np.vander(s, n + 1, increasing=True)[:, 1:]])
        wt = w / (np.abs(gv) * np.abs(q_prev))
        sol = np.linalg.lstsq(a * wt[:, None], gv * wt, rcond=None)[0]
        p, q = sol[:m + 1], np.concatenate([[1.0], sol[m + 1:]])
        qv = np.polyval(q[::-1], s)
        err = (np.polyval(p[::-1], s) / qv - gv) / gv
        e = np.max(np.abs(err))
        if best is None or e < best[0]:
            best = (e, p, q)
        q_prev = qv
        if it >= 8:
            w = w * np.abs(err) ** 0.5
            w /= w.max()
    return best


def fma32(a, b, d):
    return (a.astype(np.float64) * b.astype(np.float64) + d.astype(np.float64)).astype(F32)


def horner32(cs, v):
    """cs lowest power first, by FMAs rounded to f32."""
    r = np.full_like(v, F32(cs[-1]))
    for k in cs[-2::-1]:
        r = fma32(r, v, np.full_like(v, F32(k)))
    return r


def f32_eval(x, p, q, c):
    """x P(s) / Q(s) as the f32 code computes it."""
    x = np.minimum(np.maximum(x, F32(-c)), F32(c))
    s = (x * x).astype(F32)
    r = ((x * horner32(p, s)).astype(F32) / horner32(q, s)).astype(F32)
    return np.minimum(np.maximum(r, F32(-1)), F32(1))


def ndtr_main(m, n, amax):
    g = np.vectorize(lambda a: 0.5 * math.erfc(a / math.sqrt(2)) * math.exp(a * a / 2))
    e, p, q = fit(g, amax, m, n, iters=60)  # in a itself: fit() names its variable s
    x = np.concatenate([np.linspace(-amax - 1, amax + 1, 3000001),
                        -np.geomspace(1e-30, amax + 1, 300001),
                        np.geomspace(1e-30, amax + 1, 300001)]).astype(F32)
    a = np.minimum(np.abs(x), F32(amax)).astype(F32)
    # ndtr_f32's reduction: n = round(-a^2 log2(e) / 2), r = a^2 + n 2 ln2_hi in one FMA (one
    # rounding), plus n 2 ln2_lo; e^(-r / 2) 2^n modelled correctly rounded.
    k = np.round((a * a).astype(F32) * F32(-0.72134752044448171)).astype(np.float64)
    a64 = a.astype(np.float64)
    r = (a64 * a64 + k * (2 * 0.693145751953125)).astype(F32)
    r = (r.astype(np.float64) + k * (2 * 1.4286068203094172e-06)).astype(F32).astype(np.float64)
    ex = (np.exp(-r / 2) * np.exp2(k)).astype(F32)
    tail = ((ex * horner32(p, a)).astype(F32) / horner32(q, a)).astype(F32)
    got = np.where(x < 0, tail, (F32(1) - tail).astype(F32)).astype(np.float64)
    ref = 0.5 * np.vectorize(math.erfc)(-x.astype(np.float64) / math.sqrt(2))
    r32 = ref.astype(F32)
    ulp = np.maximum((np.nextafter(r32, F32(np.inf)) - r32).astype(np.float64), 2.0**-149)
    err = np.abs(got - ref) / ulp
    i = int(np.argmax(err))
    normal = ref > 2.0**-126
    rel = np.max(np.abs(got - ref)[normal] / ref[normal])
    print(f"ndtr P degree {m}, Q degree {n}, clamp {amax}: relative error {e:.3g} before rounding; "
          f"f32: {err[i]:.2f} ulp at x = {x[i]!r}, {rel:.2g} relative")
    print("P (highest first):", [float(F32(v)) for v in p[::-1]])
    print("Q (highest first):", [float(F32(v)) for v in q[::-1]])


def main():
    fn, m, n, c = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4])
    if fn == "ndtr":
        return ndtr_main(m, n, c)
    f = {"erf": math.erf, "tanh": math.tanh}[fn]
    g0 = 2 / math.sqrt(math.pi) if fn == "erf" else 1.0
    g = np.vectorize(lambda s: f(math.sqrt(s)) / math.sqrt(s) if s > 0 else g0)
    e, p, q = fit(g, c * c, m, n)
    poles = [r.real for r in np.roots(q[::-1]) if abs(r.imag) < 1e-9 and 0 <= r.real <= c * c]
    x = np.concatenate([np.linspace(0, c + 1, 2000001), np.geomspace(1e-30, c + 1, 200001)])
    x = x.astype(F32)
    ref = np.vectorize(f)(x.astype(np.float64))
    r32 = np.abs(ref.astype(F32))
    ulp = (np.nextafter(r32, F32(np.inf)) - r32).astype(np.float64)
    err = np.abs(f32_eval(x, p, q, c).astype(np.float64) - ref) / ulp
    i = int(np.argmax(err))
    print(f"{fn} P degree {m}, Q degree {n}, clamp {c}: relative error {e:.3g} before rounding; "
          f"f32: {err[i]:.2f} ulp at x = {x[i]!r}" + (f"; pole at s = {poles}" if poles else ""))
    print("P (highest first):", [float(F32(v)) for v in p[::-1]])
    print("Q (highest first):", [float(F32(v)) for v in q[::-1]])


if __name__ == "__main__":
    main()
