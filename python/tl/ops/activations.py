# The activation functions, as one @tl.func that kernels (elementwise, GEMM epilogues, GLUs) call
# with the activation's name as a constexpr; computed in f32.
# SPDX-License-Identifier: Apache-2.0
import tl

ACTIVATIONS = ("none", "relu", "gelu", "gelu_tanh", "silu", "sigmoid", "tanh", "leaky_relu")


@tl.func
def activate(x, ACT: tl.constexpr, alpha=0.01):
    """`x` (an f32 tile) through the activation named ACT; `alpha`: leaky_relu's slope."""
    if ACT == "relu":
        x = tl.maximum(x, 0.0)
    elif ACT == "gelu":  # exact: x Phi(x). Phi is the IR's ndtr, not 1/2 + erf(x / sqrt 2) / 2,
        # which cancels for x < 0 (8e-5 relative at x = -3.4, 6x off at -5.5: issue 18, s36-37);
        # one op, so llvm-cpu's fused loop reads x twice and nothing else (see bench/README.md)
        x = x * tl.ndtr(x)
    elif ACT == "gelu_tanh":
        # 0.5 x (1 + tanh(u)) = x sigmoid(2u): one exp and a division where tanh costs both
        # of its branches per lane on llvm-cpu (GELU tanh 0.28 -> see bench/README.md, s12);
        # 2u = x (a + b x^2), a = 2 sqrt(2/pi), b = 0.044715 a: a product, an FMA and a product
        # where x + 0.044715 x^3 scaled took five (s17)
        x = x * tl.sigmoid(x * tl.fma(x * x, 0.07135481627260025, 1.5957691216057308))
    elif ACT == "silu":
        x = x * tl.sigmoid(x)
    elif ACT == "sigmoid":
        x = tl.sigmoid(x)
    elif ACT == "tanh":
        x = tl.tanh(x)
    elif ACT == "leaky_relu":
        x = tl.where(x >= 0.0, x, x * alpha)
    else:
        tl.static_assert(ACT == "none", f"unknown activation '{ACT}'")
    return x
