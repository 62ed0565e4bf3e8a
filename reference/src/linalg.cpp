// fp64 references for gemm and scaled dot-product attention.
// SPDX-License-Identifier: Apache-2.0
#include "tl/reference/ops.h"

#include "summation.h"

#include <algorithm>
#include <cassert>
#include <vector>

namespace tl::ref {

void gemm(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, double alpha,
          const double *A, int64_t lda, const double *B, int64_t ldb, double beta, double *C,
          int64_t ldc) {
  assert(M >= 0 && N >= 0 && K >= 0);
  assert(ldc >= N && lda >= (trans_a ? M : K) && ldb >= (trans_b ? K : N));
  assert((M == 0 || N == 0 || C) && (M == 0 || K == 0 || A) && (N == 0 || K == 0 || B));
  // Pack op(B)^T so every dot product walks two contiguous rows of length K.
  std::vector<double> bt(static_cast<size_t>(N * K));
  for (int64_t j = 0; j < N; ++j)
    for (int64_t p = 0; p < K; ++p)
      bt[j * K + p] = trans_b ? B[j * ldb + p] : B[p * ldb + j];
  std::vector<double> arow(static_cast<size_t>(K));
  for (int64_t i = 0; i < M; ++i) {
    for (int64_t p = 0; p < K; ++p)
      arow[p] = trans_a ? A[p * lda + i] : A[i * lda + p];
    for (int64_t j = 0; j < N; ++j) {
      double acc = alpha * detail::dot2(K, arow.data(), 1, bt.data() + j * K, 1);
      double &c = C[i * ldc + j];
      c = beta == 0.0 ? acc : acc + beta * c;
    }
  }
}

namespace {

/// One query row of attention over its `visible` keys: scores, softmax, weighted sum of V. Masked
/// keys are skipped rather than weighted by zero, so inf/NaN in a masked V row cannot leak in.
void attention_row(int64_t head_dim, const double *q_row, const double *k, const double *v,
                   double scale, int64_t visible, double *scores, double *out_row) {
  for (int64_t j = 0; j < visible; ++j)
    scores[j] = scale * detail::dot2(head_dim, q_row, 1, k + j * head_dim, 1);
  softmax_rows(1, visible, scores, scores);
  for (int64_t d = 0; d < head_dim; ++d)
    out_row[d] = detail::dot2(visible, scores, 1, v + d, head_dim);
}

} // namespace

void attention(int64_t batch_heads, int64_t seq_q, int64_t seq_k, int64_t head_dim, const double *q,
               const double *k, const double *v, double scale, bool causal, double *out) {
  assert(batch_heads >= 0 && seq_q >= 0 && seq_k >= 0 && head_dim >= 0);
  assert(q && k && v && out);
  std::vector<double> scores(static_cast<size_t>(seq_k));
  for (int64_t b = 0; b < batch_heads; ++b) {
    const double *qb = q + b * seq_q * head_dim;
    const double *kb = k + b * seq_k * head_dim;
    const double *vb = v + b * seq_k * head_dim;
    double *ob = out + b * seq_q * head_dim;
    for (int64_t i = 0; i < seq_q; ++i) {
      int64_t visible = causal ? std::min(i + 1, seq_k) : seq_k;
      attention_row(head_dim, qb + i * head_dim, kb, vb, scale, visible, scores.data(),
                    ob + i * head_dim);
    }
  }
}

} // namespace tl::ref
