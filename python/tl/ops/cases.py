# The conformance cases of the generated specializations: for each one, the shapes (ragged
# against its block sizes), grid, arguments, tolerance entry and the work its roofline counts,
# written by generate.py as kernels/ops/cases.tsv for tl-conform's `ops` suite.
# SPDX-License-Identifier: Apache-2.0
"""``case_of(spec)`` describes one run of a generated specialization for tl-conform.

An argument's value is a scalar or a tensor SPEC, as tl-conform's corpus cases write them:
``AxB`` (random: floats uniform in [-1, 1), integers in [-100, 100]), ``nan:AxB`` (an output,
poisoned: NaN for floats, -123 for integers, so an element never written fails),
``zeros:AxB`` (an accumulator) or ``int:LO:HI:AxB`` (integers in [LO, HI)). The element type
is the kernel's. Work for the roofline, counted as the op needs it: ``flops`` (dot products'
2 m n k plus the elementwise arithmetic), ``bytes`` (every tensor read or written once),
``vector_ops`` (simple elementwise operations), ``exp_ops`` (exponentials) and ``special_ops``
(erf, tanh, sigmoid).

>>> from tl.ops.generate import specs
>>> c = case_of(next(s for s in specs() if s.name == "add_f32"))
>>> c["grid"], c["args"]["out"], c["tolerance"]
('4,2,1', 'nan:13x1100', 'add')
"""
import math

import numpy as np

SIZE = {"f32": 4, "bf16": 2, "f16": 2, "i32": 4, "i8": 1, "f8e4m3": 1, "f8e5m2": 1}
COLUMNS = ("name", "shape", "grid", "args", "tolerance", "terms", "cond", "flops", "bytes",
           "vector_ops", "exp_ops", "special_ops")


# The vector work of one element of each op (attention: of one query-key pair), as the
# roofline counts it: (simple vector operations, exponentials, special functions: erf, ndtr,
# tanh, sigmoid). Special functions have a rate of their own where a datasheet declares one (the
# TNPU's v.erf / v.ndtr / v.tanh / v.sigmoid take twice v.exp's passes); elsewhere they are
# priced as exponentials. Each op is counted as its kernel's cheapest form needs it: GELU is x
# times ndtr(x) (activations.py), the tanh form x sigmoid(x fma(x^2, a, b)), SiLU x
# sigmoid(x), SwiGLU and GeGLU that times `up`. The cases below and bench/ops_bench.py's rows count
# their work from here alone, so the kit and the benchmark bound an op alike. Ops that only move
# data (transpose, concat, embedding) have none.
WORK = {
    **{op: (1, 0, 0) for op in ("add", "sub", "mul", "div", "relu", "leaky_relu", "dequantize",
                                "sum", "mean", "max", "min", "argmax", "cumsum")},
    "gelu": (1, 0, 1), "gelu_tanh": (4, 0, 1), "silu": (1, 0, 1),
    "sigmoid": (0, 0, 1), "tanh": (0, 0, 1),
    "swiglu": (2, 0, 1), "geglu": (2, 0, 1),
    "softmax": (4, 1, 0), "log_softmax": (4, 1, 0),
    # layernorm: the mean's sum, the subtraction, the square and its sum, times 1 / sigma,
    # times the weight, plus the bias; rmsnorm: no mean and no bias
    "layernorm": (7, 0, 0), "rmsnorm": (4, 0, 0),
    "var": (3, 0, 0),
    "rope": (3, 0, 0),  # per element of x (each output pair: four products and two sums)
    "absmax": (2, 0, 0), "quantize": (4, 0, 0),
    "attention": (4, 1, 0),  # per pair: scale, max, subtraction, sum; the exponential
}


def work(op, n):
    """(vector_ops, exp_ops, special_ops) of `op` over `n` elements (attention: query-key
    pairs)."""
    return tuple(w * n for w in WORK[op])


def special(act, n):
    """The special functions an epilogue or gradient of activation `act` applies to n values
    (WORK's count; "none" applies none)."""
    return WORK[act][2] * n if act in WORK else 0


def _cdiv(a, b):
    return -(-a // b)


def _dims(spec):
    return "x".join(str(d) for d in spec)


class _Case:
    """Collects a case's arguments (in the kernel's order) and its bytes."""

    def __init__(self, spec):
        self.spec, self.args, self.bytes, self.i = spec, {}, 0, 0
        self.names = list(_arg_names(spec))

    def t(self, shape, kind=""):
        a = self.spec.args[self.i]
        assert a[0] == "t" and a[1] == len(shape), (self.spec.name, self.i, a, shape)
        self.bytes += SIZE[a[2]] * int(np.prod(shape))
        self.args[self.names[self.i]] = (kind + ":" if kind else "") + _dims(shape)
        self.i += 1

    def s(self, value):
        assert self.spec.args[self.i][0] == "s", (self.spec.name, self.i)
        self.args[self.names[self.i]] = repr(value)
        self.i += 1


def _arg_names(spec):
    k = getattr(spec.kernel, "kernel", spec.kernel)
    code = k.fn.__code__
    return code.co_varnames[:code.co_argcount]


def case_of(spec):
    """The case of `spec` (a generate.Spec): a dict with the COLUMNS."""
    k = getattr(spec.kernel, "kernel", spec.kernel).__name__
    c, cx, name = _Case(spec), spec.constexprs, spec.name
    dt = name.rsplit("_", 1)[1]
    flops = vops = exps = specials = 0
    terms, cond, tol = 1, "1", None
    if k in ("binary_kernel", "unary_kernel", "activation_grad_kernel", "dequantize_kernel"):
        m, n = 13, 1100
        e = m * n
        grid = (_cdiv(m, cx["BM"]), _cdiv(n, cx["BN"]))
        if k == "binary_kernel":
            c.t((m, n)), c.t((m, n)), c.t((m, n), "nan")
            op = cx["OP"]
            tol = "glu" if op in ("swiglu", "geglu") else op
            vops, exps, specials = work(op, e)
        elif k == "unary_kernel":
            c.t((m, n)), c.t((m, n), "nan"), c.s(0.01)
            act = cx["ACT"]
            tol = "gelu" if act.startswith("gelu") else act
            vops, exps, specials = work(act, e)
        elif k == "activation_grad_kernel":
            c.t((m, n)), c.t((m, n)), c.t((m, n), "nan"), c.s(0.01)
            # gelu's derivative: Phi(x) (ndtr) plus x phi(x) (an exponential)
            tol, vops = "backward", 6 * e
            specials, exps = special(cx["ACT"], e), (e if cx["ACT"] == "gelu" else 0)
        else:  # dequantize: int8 q over its whole range, fp8 q random in [-1, 1)
            int8 = spec.args[0][2] == "i8"
            c.t((m, n), "int:-127:128" if int8 else ""), c.t((m,)), c.t((m, n), "nan")
            tol, (vops, exps, specials) = "dequantize", work("dequantize", e)
        shape = f"{m}x{n}"
    elif k in ("softmax_kernel", "norm_kernel", "softmax_grad_kernel", "norm_grad_kernel",
               "topk_kernel", "absmax_kernel", "cross_entropy_kernel",
               "cross_entropy_grad_kernel"):
        m, n = 5, 1300
        if k == "softmax_kernel" and cx["ONE_PASS"]:
            n = cx["BLOCK"] - 3  # ragged: the padding of the one chunk must not count
        e = m * n
        grid = (_cdiv(m, cx["BM"]),)
        terms = n
        if k == "softmax_kernel":
            c.t((m, n)), c.t((m, n), "nan")
            tol = "softmax"
            vops, exps, specials = work("log_softmax" if cx["LOG"] else "softmax", e)
        elif k == "norm_kernel":
            c.t((m, n)), c.t((n,)), c.t((n,)), c.t((m, n), "nan"), c.t((m, 2), "nan")
            c.s(1e-5)
            tol = "norm"
            vops, exps, specials = work("rmsnorm" if cx["RMS"] else "layernorm", e)
        elif k == "softmax_grad_kernel":
            c.t((m, n)), c.t((m, n)), c.t((m, n), "nan")
            tol, vops, exps = "backward", 4 * e, e if cx["LOG"] else 0
        elif k == "norm_grad_kernel":
            c.t((m, n)), c.t((n,)), c.t((m, n)), c.t((m, 2)), c.t((m, n), "nan")
            tol, vops = "backward", 10 * e
        elif k == "topk_kernel":
            n = 1000
            c.t((m, n)), c.t((m, cx["K"]), "nan"), c.t((m, cx["K"]), "nan")
            tol, terms, vops = "reduce_max", 1, 3 * cx["K"] * m * n
        elif k == "absmax_kernel":  # amax (exact) or the scale amax / QMAX (a division)
            n = 300
            c.t((m, n)), c.t((m,), "nan")
            tol, terms, (vops, exps, specials) = ("div" if cx["QMAX"] else "reduce_max"), 1, \
                work("absmax", m * n)
        else:  # cross_entropy forward / backward: targets 0..5, 3 ignored
            if k == "cross_entropy_kernel":
                c.t((m, n)), c.t((m,), "int:0:6"), c.t((m,), "nan"), c.s(3)
                tol = "softmax"
            else:
                c.t((m, n)), c.t((m,), "int:0:6"), c.t((m,)), c.t((m, n), "nan"), c.s(3)
                tol = "backward"
            vops, exps = 4 * e, e
        shape = f"{m}x{n}"
    elif k == "cumsum_kernel" and cx.get("MX"):
        # (1, rows, n) views: two programs looping over the row blocks (the last ragged), n
        # ragged in its last 128-wide chunk
        rows, n = 5 * cx["BI"] + 3, cx["BN"] - 100
        grid = (1, 2)
        e, terms = rows * n, n
        c.t((1, rows, n)), c.t((1, rows, n), "nan")
        tol, cond, (vops, exps, specials) = "scan_sum", "abs", work("cumsum", e)
        shape = f"1x{rows}x{n}"
    elif k == "cumsum_kernel" and cx.get("ROWS"):
        # (1, rows, n) views: a ragged last program of rows, two chunks with the second ragged
        rows, n = cx["BI"] + 3, 1300
        grid = (1, _cdiv(rows, cx["BI"]))
        e, terms = rows * n, n
        c.t((1, rows, n)), c.t((1, rows, n), "nan")
        tol, cond, (vops, exps, specials) = "scan_sum", "abs", work("cumsum", e)
        shape = f"1x{rows}x{n}"
    elif k in ("reduce_kernel", "cumsum_kernel", "copy_kernel"):
        outer, n, inner = (6, 1300, 1) if cx["BI"] == 1 else (3, 100, 70)
        grid = (outer, _cdiv(inner, cx["BI"])) if k != "copy_kernel" else \
            (outer, _cdiv(n, cx["BN"]), _cdiv(inner, cx["BI"]))
        e = outer * n * inner
        terms = n
        if k == "reduce_kernel":
            op = cx["OP"]
            c.t((outer, n, inner)), c.t((outer, inner), "nan"), c.s(1.0 / n), c.s(1.0)
            tol = {"sum": "reduce_sum", "mean": "reduce_mean", "max": "reduce_max",
                   "min": "reduce_min", "argmax": "reduce_argmax", "var": "reduce_var"}[op]
            cond = "abs" if op in ("sum", "mean") else "1"
            vops, exps, specials = work(op, e)
        elif k == "cumsum_kernel":
            c.t((outer, n, inner)), c.t((outer, n, inner), "nan")
            tol, cond, (vops, exps, specials) = "scan_sum", "abs", work("cumsum", e)
        else:
            outer, n, inner = 3, 70, 100
            grid = (outer, _cdiv(n, cx["BN"]), _cdiv(inner, cx["BI"]))
            c.t((outer, n, inner)), c.t((outer, n, inner), "nan")
            tol, terms = "gather", 1
        shape = f"{outer}x{n}x{inner}"
    elif k == "reduce_part_kernel":  # 3 blocks of 128 rows, the last ragged (300 rows)
        outer, n, inner, span = 3, 300, 70, 128
        blocks = _cdiv(n, span)
        grid = (outer, _cdiv(inner, cx["BI"]), blocks)
        e = outer * n * inner
        c.t((outer, n, inner)), c.t((outer, blocks, inner), "nan")
        c.t((outer, blocks, inner), "nan" if cx["OP"] == "argmax" else "")
        c.t((outer, inner)), c.s(span)
        op = cx["OP"]
        # the index output is written only by argmax; its random input otherwise unread
        tol = {"sum": "reduce_sum", "sq": "reduce_var", "max": "reduce_max",
               "min": "reduce_min", "argmax": "reduce_argmax"}[op]
        terms, cond = span, "abs" if op == "sum" else "1"
        vops = 3 * e if op == "sq" else e
        shape = f"{outer}x{n}x{inner} span {span}"
    elif k == "argmax_combine_kernel":
        outer, blocks, inner = 3, 37, 70
        grid = (outer, _cdiv(inner, cx["BI"]))
        c.t((outer, blocks, inner)), c.t((outer, blocks, inner), "int:0:100000")
        c.t((outer, inner), "nan")
        tol, vops = "reduce_argmax", 2 * outer * blocks * inner
        shape = f"{outer}x{blocks}x{inner}"
    elif k == "gemm_kernel":
        b, m, n, kk = 2, 70, 100, 45
        grid = (_cdiv(m, cx["BM"]), _cdiv(n, cx["BN"]), b)
        c.t((b, m, kk)), c.t((b, kk, n)), c.t((n,)), c.t((b, m, n)), c.t((b, m, n), "nan")
        c.s(0.5)
        plain = not cx["HAS_BIAS"] and cx["ACT"] == "none" and not cx["HAS_RES"]
        tol, terms = ("dot" if plain else "gemm"), kk
        cond = "abs" if plain else "1"
        flops = 2 * b * m * n * kk
        vops = 3 * b * m * n
        specials = special(cx["ACT"], b * m * n)
        shape = f"{b}x{m}x{n}x{kk}"
    elif k in ("gemm_splitk_kernel", "gemm_splitk_reduce_kernel"):
        b, m, n, kk, splits = 2, 70, 100, 1000, 3
        grid = (_cdiv(m, cx["BM"]), _cdiv(n, cx["BN"]), b * (splits if cx.get("BK") else 1))
        if k == "gemm_splitk_kernel":
            c.t((b, m, kk)), c.t((b, kk, n)), c.t((splits * b, m, n), "nan"), c.s(352)
            # each slice: 352 columns (11 blocks of 32), the last 296
            tol, terms, cond = "dot", 352, "abs"
            flops = 2 * b * m * n * kk
        else:
            c.t((splits * b, m, n)), c.t((n,)), c.t((b, m, n)), c.t((b, m, n), "nan")
            c.s(0.5), c.s(splits)
            plain = not cx["HAS_BIAS"] and cx["ACT"] == "none"
            tol, terms = ("reduce_sum" if plain else "gemm"), splits
            cond = "abs" if plain else "1"
            vops = (splits + 3) * b * m * n
            specials = special(cx["ACT"], b * m * n)
        shape = f"{b}x{m}x{n}x{kk} split {splits}"
    elif k == "topk_segments_kernel":  # two segments, the second ragged
        m, n, kk = 2, 5000, cx["K"]
        grid = (m, _cdiv(n, cx["BLOCK"]))
        c.t((m, n)), c.t((m, n), "int:0:5000"), c.t((m, grid[1] * kk), "nan")
        c.t((m, grid[1] * kk), "nan")
        tol, terms, vops = "reduce_max", 1, 3 * kk * m * n
        shape = f"{m}x{n}"
    elif k == "conv2d_kernel":
        # the dilated specialization runs grouped (2 groups of 2 channels, 35 outputs each)
        kh, st, pad, dil = cx["KH"], cx["SH"], cx["PH"], cx["DH"]
        g = 2 if dil > 1 else 1
        nb, h, w, oc = 2, 10, 9, 70
        ch = 4 if g == 2 else 3
        cg, og = ch // g, oc // g
        oh = (h + 2 * pad - dil * (kh - 1) - 1) // st + 1
        ow = (w + 2 * pad - dil * (kh - 1) - 1) // st + 1
        grid = (_cdiv(oh * ow, cx["BM"]), _cdiv(og, cx["BN"]), nb * g)
        c.t((nb * g, cg, h * w)), c.t((g, cg * kh * kh, og)), c.t((g, og))
        c.t((nb * g, og, oh * ow), "nan")
        c.s(h), c.s(w), c.s(ow), c.s(g)
        tol, terms = "gemm", cg * kh * kh
        flops = 2 * nb * oh * ow * oc * cg * kh * kh
        vops = 2 * nb * oc * oh * ow
        shape = f"{nb}x{ch}x{h}x{w}->{oc}" + (f" groups {g} dilation {dil}" if g > 1 else "")
    elif k == "gemv_kernel":
        m, kk = 70, 1100
        grid = (_cdiv(m, cx["BM"]),)
        c.t((m, kk)), c.t((kk,)), c.t((m,)), c.t((m,), "nan"), c.s(0.5)
        tol, terms = ("gemm" if cx["HAS_BIAS"] else "dot"), kk
        cond = "1" if cx["HAS_BIAS"] else "abs"
        flops = 2 * m * kk
        shape = f"{m}x{kk}"
    elif k == "transpose_kernel":
        b, m, n = 2, 70, 100
        grid = (_cdiv(m, cx["BM"]), _cdiv(n, cx["BN"]), b)
        c.t((b, m, n)), c.t((b, n, m), "nan")
        tol, shape = "gather", f"{b}x{m}x{n}"
    elif k == "rope_kernel":
        rows, s, h = 3, 37, 40
        grid = (_cdiv(s, cx["BS"]), rows)
        c.t((rows, s, h)), c.t((rows, s, h)), c.t((s, h)), c.t((s, h))
        c.t((rows, s, h), "nan"), c.t((rows, s, h), "nan")
        tol, shape = "rope", f"{rows}x{s}x{2 * h}"
        vops, exps, specials = work("rope", rows * s * 2 * h)
    elif k in ("embedding_kernel", "embedding_grad_kernel"):
        v, d, n = 10, 300, 37
        grid = (_cdiv(n, cx["BR"]),)
        if k == "embedding_kernel":
            c.t((v, d)), c.t((n,), f"int:0:{v}"), c.t((n, d), "nan")
            tol = "gather"
        else:
            c.t((n, d)), c.t((n,), f"int:0:{v}"), c.t((v, d), "zeros")
            tol, terms, vops = "backward", n, n * d
        shape = f"{n}x{d} of {v}"
    elif k in ("attention_kernel", "attention_dq_kernel", "attention_dkv_kernel",
               "attention_delta_kernel"):
        bh, hkv, s, d = 4, 2, 37, (64 if cx["BD"] == 64 else 100)
        q, kv = (bh, s, d), (hkv, s, d)
        scale, group = 1.0 / math.sqrt(d), bh // hkv
        causal = cx.get("CAUSAL", False)
        pairs = bh * s * (s + 1) // 2 if causal else bh * s * s
        # B = 2 batch entries of H = 2 heads over one kv head; with HAS_LEN each entry's key
        # length drawn from [0, 37] (0: its queries have no key: zeros, lse -inf)
        # with HAS_MASK each entry's key mask (2, T) drawn from {0, 1} (any pattern)
        lens = cx.get("HAS_LEN", False)
        mask = cx.get("HAS_MASK", False)

        def klen():
            if mask:
                c.t((2, s), "int:0:2")
            else:
                c.t((2,), f"int:0:{s + 1}") if lens else c.t((1,), "int:0:1")
            c.s(2)
        if k == "attention_kernel":
            grid = (_cdiv(s, cx["BM"]), bh)
            c.t(q), c.t(kv), c.t(kv), c.t(q, "nan"), c.t((bh, s), "nan"), c.s(scale), c.s(group)
            klen()
            tol, terms = "attention", s
            flops, (vops, exps, specials) = 4 * pairs * d, work("attention", pairs)
        elif k == "attention_delta_kernel":
            grid = (_cdiv(s, cx["BM"]), bh)
            c.t(q), c.t(q), c.t((bh, s), "nan")
            tol, terms, vops = "backward", d, 2 * bh * s * d
        elif k == "attention_dq_kernel":
            grid = (_cdiv(s, cx["BM"]), bh)
            c.t(q), c.t(kv), c.t(kv), c.t(q), c.t((bh, s)), c.t((bh, s)), c.t(q, "nan")
            c.s(scale), c.s(group)
            klen()
            tol, terms = "backward", s
            flops, vops, exps = 6 * pairs * d, 4 * pairs, pairs
        else:
            grid = (_cdiv(s, cx["BN"]), bh)
            c.t(q), c.t(kv), c.t(kv), c.t(q), c.t((bh, s)), c.t((bh, s))
            c.t(q, "nan"), c.t(q, "nan"), c.s(scale), c.s(group)
            klen()
            tol, terms = "backward", s
            flops, vops, exps = 8 * pairs * d, 4 * pairs, pairs
        shape = f"{bh}x{s}x{d} kv {hkv}"
    elif k == "quantize_scaled_kernel":
        m, n = 13, 1100
        grid = (_cdiv(m, cx["BM"]), _cdiv(n, cx["BN"]))
        c.t((m, n)), c.t((m,)), c.t((m, n), "nan")
        tol, shape = "quantize", f"{m}x{n}"
        vops, exps, specials = work("quantize", m * n)
    elif k == "qgemm_kernel":
        m, n, kk = 70, 100, 45
        grid = (_cdiv(m, cx["BM"]), _cdiv(n, cx["BN"]))
        q = "int:-128:128" if cx["INT"] else ""
        c.t((m, kk), q), c.t((kk, n), q), c.t((m,)), c.t((n,)), c.t((n,)), c.t((m, n), "nan")
        plain = not cx["HAS_BIAS"] and cx["ACT"] == "none"
        # int8: exact int32 sums (an int32 output is compared exactly), then the epilogue's few
        # roundings (n = 1); fp8: f32 sums of K exact products, the gemm entry at n = K
        tol, terms = "gemm", (1 if cx["INT"] else kk)
        cond = "abs" if plain and not cx["INT"] else "1"
        flops, vops = 2 * m * n * kk, (3 * m * n if cx["DEQUANT"] else 0)
        specials = special(cx["ACT"], m * n)
        shape = f"{m}x{n}x{kk}"
    elif k == "norm_param_grad_kernel":
        rows, n = 100, 70
        grid = (_cdiv(n, cx["BC"]),)
        c.t((rows, n)), c.t((rows, n)), c.t((rows, 2)), c.t((n,), "nan"), c.t((n,), "nan")
        tol, terms, vops, shape = "backward", rows, 5 * rows * n, f"{rows}x{n}"
    elif k == "pool2d_kernel":
        nc, h, w = 3, 20, 70
        kh, st = cx["KH"], cx["SH"]
        oh, ow = (h - kh) // st + 1, (w - kh) // st + 1
        grid = (nc, _cdiv(oh, cx["BOH"]), _cdiv(ow, cx["BOW"]))
        c.t((nc, h, w)), c.t((nc, oh, ow), "nan")
        tol = "reduce_max" if cx["MODE"] == "max" else "reduce_mean"
        terms, vops, shape = kh * kh, nc * oh * ow * kh * kh, f"{nc}x{h}x{w}"
    else:
        raise ValueError(f"no conformance case for kernel {k} ({name})")
    assert c.i == len(spec.args), (name, c.i, len(spec.args))
    for meta in ("tol", "terms", "flops", "bytes", "grid", "kernel"):
        assert meta not in c.args, (name, meta)
    grid = tuple(grid) + (1,) * (3 - len(grid))
    return {"name": name, "shape": shape, "grid": ",".join(str(g) for g in grid),
            "args": c.args, "tolerance": tol, "terms": terms, "cond": cond,
            "flops": flops + vops, "bytes": c.bytes, "vector_ops": vops, "exp_ops": exps,
            "special_ops": specials, "dtype": dt}


def cases_tsv(all_specs):
    """The cases file: a header, then one line per specialization (COLUMNS, tab-separated;
    args as space-separated NAME=VALUE in the kernel's order)."""
    lines = ["# tl-conform's ops suite: one case per generated specialization (tl/ops/cases.py)",
             "\t".join(COLUMNS)]
    for s in all_specs:
        c = case_of(s)
        args = " ".join(f"{k}={v}" for k, v in c["args"].items())
        lines.append("\t".join(str(x) for x in (
            c["name"], c["shape"], c["grid"], args, c["tolerance"], c["terms"], c["cond"],
            c["flops"], c["bytes"], c["vector_ops"], c["exp_ops"], c["special_ops"])))
    return "\n".join(lines) + "\n"
