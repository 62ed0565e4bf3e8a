// Golden fp64 reference implementations of TL's ops over row-major double arrays.
// SPDX-License-Identifier: Apache-2.0
//
// Semantics this header promises:
//  - Inputs and outputs are row-major `double` arrays; leading dimensions count elements.
//  - Sums (gemm and attention dot products, softmax denominators, norms, ReduceKind::Sum) are
//    compensated: dot products use the Ogita-Rump-Oishi Dot2 algorithm (error-free products via
//    fma plus Neumaier summation), plain sums use Neumaier summation, so results are as accurate as
//    summing in twice the working precision and then rounding once.
//  - Min/Max (binary and reduce) propagate NaN and order -0 below +0 (IEEE 754-2019 minimum and
//    maximum, like torch.minimum). ArgMax treats NaN as the largest value and returns the first
//    index of the maximum (like numpy/torch).
//  - Preconditions (non-null pointers, non-negative sizes, axis 0 or 1) are asserted.
#pragma once

#include <cstdint>

namespace tl::ref {

/// C = alpha * op(A) * op(B) + beta * C, op(X) = X or X^T; op(A) is MxK, op(B) is KxN, C is MxN.
/// A is stored MxK (KxM when trans_a), B is stored KxN (NxK when trans_b). beta == 0 means C is
/// not read (NaN in C does not propagate).
void gemm(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, double alpha,
          const double *A, int64_t lda, const double *B, int64_t ldb, double beta, double *C,
          int64_t ldc);

/// y[r] = softmax(x[r]) per row, computed as exp(x - rowmax) / sum. A row of all -inf gives NaN.
void softmax_rows(int64_t rows, int64_t cols, const double *x, double *y);

/// y = (x - mean) / sqrt(var + eps) * gamma + beta per row, var the population (biased) variance.
/// gamma and beta may be null (meaning 1 and 0).
void layernorm_rows(int64_t rows, int64_t cols, const double *x, const double *gamma,
                    const double *beta, double eps, double *y);

/// y = x / sqrt(mean(x^2) + eps) * gamma per row; gamma may be null (meaning 1).
void rmsnorm_rows(int64_t rows, int64_t cols, const double *x, const double *gamma, double eps,
                  double *y);

/// Rsqrt is 1/sqrt(x); Sigmoid is 1/(1+exp(-x)), evaluated without overflow. Rint rounds to the
/// nearest integral value, ties to even. Erfinv is the inverse of erf on [-1, 1] (+-inf at +-1,
/// NaN outside), good to about 2 ulp of f64. Ndtr is the standard normal distribution function
/// Phi(x) = erfc(-x / sqrt 2) / 2, good to a few ulp of f64 in both tails (the argument's rounding
/// is corrected to first order); the rest follow the C library.
enum class UnaryMath {
  Exp,
  Exp2,
  Log,
  Log2,
  Sqrt,
  Rsqrt,
  Tanh,
  Erf,
  Sigmoid,
  Sin,
  Cos,
  Abs,
  Neg,
  Tan,
  Asin,
  Acos,
  Atan,
  Sinh,
  Cosh,
  Log1p,
  Expm1,
  Erfinv,
  Rint,
  Floor,
  Ceil,
  Trunc,
  Ndtr
};
double unary(UnaryMath op, double x);
void unary(UnaryMath op, int64_t n, const double *x, double *y);

/// Pow, Atan2 (y = a, x = b), Fmod and Copysign follow the C library; Min/Max as in the header
/// comment; MinNum/MaxNum ignore a NaN operand (NaN only when both are) and order -0 below +0.
enum class BinaryMath { Add, Sub, Mul, Div, Pow, Min, Max, MinNum, MaxNum, Atan2, Fmod, Copysign };
double binary(BinaryMath op, double a, double b);
void binary(BinaryMath op, int64_t n, const double *a, const double *b, double *y);

/// min(max(x, lo), hi) with the NaN-propagating Min/Max.
double clamp(double x, double lo, double hi);

/// Reduction over one axis of a rows x cols matrix: axis 0 reduces over rows (out has cols
/// entries), axis 1 over columns (out has rows entries). ArgMax writes the index as a double.
/// Empty reductions give Sum 0, Max -inf, Min +inf, ArgMax -1.
enum class ReduceKind { Sum, Max, Min, ArgMax };
void reduce(ReduceKind kind, int64_t rows, int64_t cols, const double *x, int axis, double *out);

/// out = softmax(scale * Q K^T + mask) V per batch-head; q and out are [bh][seq_q][head_dim],
/// k and v are [bh][seq_k][head_dim], row-major. With `causal`, key j is masked for query i when
/// j > i (top-left aligned), so query i sees keys 0..min(i, seq_k - 1); seq_k == 0 gives zeros.
void attention(int64_t batch_heads, int64_t seq_q, int64_t seq_k, int64_t head_dim, const double *q,
               const double *k, const double *v, double scale, bool causal, double *out);

} // namespace tl::ref
