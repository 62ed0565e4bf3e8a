/* tl/kernels.h from C: every entry on the cpu device (and npusim where built) against
 * double-precision references, and the errors that name the argument. Exits 1 on the first failure.
 * SPDX-License-Identifier: Apache-2.0 */
#include "tl/kernels.h"

#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int failures = 0;

#define EXPECT(cond, ...)                                                                          \
  do {                                                                                             \
    if (!(cond)) {                                                                                 \
      fprintf(stderr, "%s:%d: ", __FILE__, __LINE__);                                              \
      fprintf(stderr, __VA_ARGS__);                                                                \
      fprintf(stderr, "\n");                                                                       \
      ++failures;                                                                                  \
    }                                                                                              \
  } while (0)

static void ok(tl_status s, const char *what) {
  if (s) {
    fprintf(stderr, "%s: %s\n", what, tl_status_get_message(s));
    tl_status_free(s);
    exit(1);
  }
}

/* Deterministic values in [-1, 1). */
static float value(unsigned i) { return (float)((i * 2654435761u) % 2000u) / 1000.0f - 1.0f; }

static uint16_t to_bf16(float f) {
  uint32_t b;
  memcpy(&b, &f, 4);
  return (uint16_t)((b + 0x7FFFu + ((b >> 16) & 1u)) >> 16);
}

static float from_bf16(uint16_t h) {
  uint32_t b = (uint32_t)h << 16;
  float f;
  memcpy(&f, &b, 4);
  return f;
}

typedef struct {
  tl_device device;
  tl_stream stream;
  tl_kernels kernels;
  const char *name; /* "cpu", "npusim" */
} Env;

/* A contiguous tensor of `rank` dims over a new buffer holding `data` (elem bytes each). */
static tl_kernels_tensor tensor(Env *e, uint32_t dtype, uint32_t rank, const int64_t *shape,
                                const void *data) {
  tl_kernels_tensor t;
  memset(&t, 0, sizeof t);
  t.struct_size = sizeof t;
  t.dtype = dtype;
  t.rank = rank;
  int64_t n = 1;
  for (int d = (int)rank - 1; d >= 0; --d) {
    t.shape[d] = shape[d];
    t.strides[d] = n;
    n *= shape[d];
  }
  size_t bytes = (size_t)n * tl_dtype_size((tl_dtype)dtype);
  tl_buffer_desc desc = {sizeof desc, bytes ? bytes : 1, TL_BUFFER_DEVICE_LOCAL};
  ok(tl_buffer_create(e->device, &desc, &t.buffer), "tl_buffer_create");
  if (data && bytes)
    ok(tl_stream_copy_to_device(e->stream, data, t.buffer, 0, bytes), "copy_to_device");
  return t;
}

static void read(Env *e, const tl_kernels_tensor *t, void *out, size_t bytes) {
  ok(tl_stream_copy_to_host(e->stream, t->buffer, 0, out, bytes), "copy_to_host");
  ok(tl_stream_synchronize(e->stream), "synchronize");
}

/* log(sum(exp(v))) in fp64, shifted by the largest element. */
static double logsumexp(const float *v, unsigned n) {
  double m = -INFINITY, s = 0;
  for (unsigned j = 0; j < n; ++j)
    m = fmax(m, v[j]);
  for (unsigned j = 0; j < n; ++j)
    s += exp(v[j] - m);
  return m + log(s);
}

static double normwise(const float *got, const double *ref, size_t n) {
  double d = 0, r = 0;
  for (size_t i = 0; i < n; ++i) {
    d += (got[i] - ref[i]) * (got[i] - ref[i]);
    r += ref[i] * ref[i];
  }
  return sqrt(d) / (r > 0 ? sqrt(r) : 1);
}

/* Catches: a bias row not broadcast (stride 0 over rows), the ragged last tile. */
static void test_add_bias(Env *e) {
  enum { R = 37, C = 100 };
  static float x[R * C], b[C], out[R * C];
  static double ref[R * C];
  for (unsigned i = 0; i < R * C; ++i)
    x[i] = value(i);
  for (unsigned j = 0; j < C; ++j)
    b[j] = value(7 * j + 3);
  int64_t sx[2] = {R, C}, sb[2] = {1, C};
  tl_kernels_tensor tx = tensor(e, TL_DTYPE_F32, 2, sx, x), tb = tensor(e, TL_DTYPE_F32, 2, sb, b);
  tl_kernels_tensor to = tensor(e, TL_DTYPE_F32, 2, sx, NULL);
  ok(tl_kernels_binary(e->kernels, e->stream, TL_KERNELS_ADD, &tx, &tb, &to), "binary");
  read(e, &to, out, sizeof out);
  for (unsigned i = 0; i < R * C; ++i)
    ref[i] = (double)x[i] + b[i % C];
  double err = normwise(out, ref, R * C);
  EXPECT(err <= 1e-7, "add with a bias row: normwise error %g", err);
  tl_buffer_release(tx.buffer), tl_buffer_release(tb.buffer), tl_buffer_release(to.buffer);
}

/* Catches: the online max/sum across chunks (5000 > 1024 columns: two passes), masked lanes
 * summed, and the one-pass forms the widths up to 4096 take (4096: the widest; 1025: a 2048
 * chunk with 1023 padded lanes; 1000): a row cut at its chunk, padding counted in the sum, or
 * log_softmax's x - lse wrong. */
static void test_softmax(Env *e) {
  enum { R = 3, CMAX = 5000 };
  static float x[R * CMAX], out[R * CMAX];
  static double ref[R * CMAX];
  const int64_t widths[] = {5000, 4096, 1025, 1000};
  for (unsigned w = 0; w < sizeof widths / sizeof widths[0]; ++w)
    for (int log_ = 0; log_ < 2; ++log_) {
      const int64_t C = widths[w];
      for (unsigned i = 0; i < R * C; ++i)
        x[i] = 10 * value(i + (unsigned)w);
      int64_t s[2] = {R, C};
      tl_kernels_tensor tx = tensor(e, TL_DTYPE_F32, 2, s, x);
      tl_kernels_tensor to = tensor(e, TL_DTYPE_F32, 2, s, NULL);
      ok(tl_kernels_softmax(e->kernels, e->stream, log_, &tx, &to), "softmax");
      read(e, &to, out, sizeof(float) * R * C);
      for (unsigned r = 0; r < R; ++r) {
        const double lse = logsumexp(&x[r * C], (unsigned)C);
        for (unsigned j = 0; j < C; ++j)
          ref[r * C + j] = log_ ? x[r * C + j] - lse : exp(x[r * C + j] - lse);
      }
      double err = normwise(out, ref, R * C);
      /* the kit's softmax bound: max(1e-6, n u) = 3e-4 for n = 5000; far tighter in practice */
      EXPECT(err <= 3e-6, "%s of rows of %lld: normwise error %g", log_ ? "log_softmax" : "softmax",
             (long long)C, err);
      tl_buffer_release(tx.buffer), tl_buffer_release(to.buffer);
    }
}

/* Catches: the mean not subtracted, weight/bias misapplied, the stats' layout. */
static void test_layernorm(Env *e) {
  enum { R = 8, C = 50 };
  static float x[R * C], w[C], b[C], out[R * C], stats[R * 2];
  static double ref[R * C];
  for (unsigned i = 0; i < R * C; ++i)
    x[i] = 3 * value(i) + 1;
  for (unsigned j = 0; j < C; ++j)
    w[j] = 1 + value(j + 11) / 2, b[j] = value(j + 5);
  int64_t s[2] = {R, C}, sw[1] = {C}, ss[2] = {R, 2};
  tl_kernels_tensor tx = tensor(e, TL_DTYPE_F32, 2, s, x), tw = tensor(e, TL_DTYPE_F32, 1, sw, w);
  tl_kernels_tensor tb = tensor(e, TL_DTYPE_F32, 1, sw, b),
                    to = tensor(e, TL_DTYPE_F32, 2, s, NULL);
  tl_kernels_tensor ts = tensor(e, TL_DTYPE_F32, 2, ss, NULL);
  ok(tl_kernels_layernorm(e->kernels, e->stream, &tx, &tw, &tb, 1e-5f, &to, &ts), "layernorm");
  read(e, &to, out, sizeof out);
  read(e, &ts, stats, sizeof stats);
  for (unsigned r = 0; r < R; ++r) {
    double mu = 0, var = 0;
    for (unsigned j = 0; j < C; ++j)
      mu += x[r * C + j] / (double)C;
    for (unsigned j = 0; j < C; ++j)
      var += (x[r * C + j] - mu) * (x[r * C + j] - mu) / C;
    for (unsigned j = 0; j < C; ++j)
      ref[r * C + j] = (x[r * C + j] - mu) / sqrt(var + 1e-5) * w[j] + b[j];
    EXPECT(fabs(stats[2 * r] - mu) <= 1e-5 * (1 + fabs(mu)), "layernorm mean of row %u", r);
  }
  double err = normwise(out, ref, R * C);
  EXPECT(err <= 1e-6, "layernorm: normwise error %g", err);
  tl_buffer_release(tx.buffer), tl_buffer_release(tw.buffer), tl_buffer_release(tb.buffer);
  tl_buffer_release(to.buffer), tl_buffer_release(ts.buffer);
}

static double gelu(double v) { return 0.5 * v * (1 + erf(v / sqrt(2.0))); }

/* Row i, column j of batch entry z of a (B, M, K) by a shared (K, N) product, in double. */
static double batched_dot(const float *a, const float *b, unsigned M, unsigned K, unsigned N,
                          unsigned z, unsigned i, unsigned j) {
  double acc = 0;
  for (unsigned k = 0; k < K; ++k)
    acc += (double)a[(z * M + i) * K + k] * b[k * N + j];
  return acc;
}

/* Catches: the epilogue's order (residual after the activation), a batch index ignored, a
 * shared rank-2 b, bf16 operands read as another dtype. */
static void test_gemm(Env *e, uint32_t dtype) {
  enum { B = 2, M = 70, K = 45, N = 33 };
  static float a[B * M * K], b[K * N], bias[N], res[B * M * N], out[B * M * N];
  static uint16_t h[B * M * K + K * N + N + B * M * N], ho[B * M * N];
  static double ref[B * M * N];
  for (unsigned i = 0; i < B * M * K; ++i)
    a[i] = value(i);
  for (unsigned i = 0; i < K * N; ++i)
    b[i] = value(3 * i + 1);
  for (unsigned i = 0; i < N; ++i)
    bias[i] = value(5 * i + 2);
  for (unsigned i = 0; i < B * M * N; ++i)
    res[i] = value(7 * i + 4);
  int bf = dtype == TL_DTYPE_BF16;
  if (bf) { /* the inputs rounded to bf16: the reference uses the rounded values */
    float *all[4] = {a, b, bias, res};
    unsigned sizes[4] = {B * M * K, K * N, N, B * M * N}, at = 0;
    for (int t = 0; t < 4; ++t)
      for (unsigned i = 0; i < sizes[t]; ++i, ++at)
        all[t][i] = from_bf16(h[at] = to_bf16(all[t][i]));
  }
  int64_t sa[3] = {B, M, K}, sb[2] = {K, N}, sbias[1] = {N}, so[3] = {B, M, N};
  tl_kernels_tensor ta = tensor(e, dtype, 3, sa, bf ? (void *)h : (void *)a);
  tl_kernels_tensor tb = tensor(e, dtype, 2, sb, bf ? (void *)(h + B * M * K) : (void *)b);
  tl_kernels_tensor tbias =
      tensor(e, dtype, 1, sbias, bf ? (void *)(h + B * M * K + K * N) : (void *)bias);
  tl_kernels_tensor tres =
      tensor(e, dtype, 3, so, bf ? (void *)(h + B * M * K + K * N + N) : (void *)res);
  tl_kernels_tensor to = tensor(e, dtype, 3, so, NULL);
  /* a desc from before split-K (struct_size ends at split_k) still works */
  tl_kernels_gemm_desc d = {offsetof(tl_kernels_gemm_desc, split_k),
                            &ta,
                            &tb,
                            &tbias,
                            &tres,
                            &to,
                            TL_KERNELS_ACT_GELU,
                            0.5f,
                            0};
  ok(tl_kernels_gemm(e->kernels, e->stream, &d), "gemm");
  if (bf) {
    read(e, &to, ho, sizeof ho);
    for (unsigned i = 0; i < B * M * N; ++i)
      out[i] = from_bf16(ho[i]);
  } else {
    read(e, &to, out, sizeof out);
  }
  for (unsigned z = 0; z < B; ++z)
    for (unsigned i = 0; i < M; ++i)
      for (unsigned j = 0; j < N; ++j) {
        const double acc = batched_dot(a, b, M, K, N, z, i, j);
        ref[(z * M + i) * N + j] = gelu(0.5 * acc + bias[j]) + res[(z * M + i) * N + j];
      }
  double err = normwise(out, ref, B * M * N);
  EXPECT(err <= (bf ? 8e-3 : 1e-6), "gemm %s: normwise error %g", bf ? "bf16" : "f32", err);
  tl_buffer_release(ta.buffer), tl_buffer_release(tb.buffer), tl_buffer_release(tbias.buffer);
  tl_buffer_release(tres.buffer), tl_buffer_release(to.buffer);
}

/* Catches: the kv head of a grouped query head (group 2), the causal mask, a head dimension
 * (24) below the specialization's 64 read past its end, the lse. */
static void test_attention(Env *e) {
  enum { BH = 4, G = 2, S = 37, T = 45, D = 24 };
  static float q[BH * S * D], kv[2][BH / G * T * D], out[BH * S * D], lse[BH * S];
  static double ref[BH * S * D];
  for (unsigned i = 0; i < BH * S * D; ++i)
    q[i] = 2 * value(i);
  for (unsigned i = 0; i < BH / G * T * D; ++i)
    kv[0][i] = 2 * value(3 * i + 1), kv[1][i] = value(5 * i + 2);
  int64_t sq[3] = {BH, S, D}, sk[3] = {BH / G, T, D}, sl[2] = {BH, S};
  tl_kernels_tensor tq = tensor(e, TL_DTYPE_F32, 3, sq, q),
                    tk = tensor(e, TL_DTYPE_F32, 3, sk, kv[0]);
  tl_kernels_tensor tv = tensor(e, TL_DTYPE_F32, 3, sk, kv[1]),
                    to = tensor(e, TL_DTYPE_F32, 3, sq, NULL);
  tl_kernels_tensor tl_ = tensor(e, TL_DTYPE_F32, 2, sl, NULL);
  const float scale = 1.0f / sqrtf((float)D);
  /* a desc from before the padding masks (struct_size ends at key_lengths) still works */
  tl_kernels_attention_desc d = {offsetof(tl_kernels_attention_desc, key_lengths),
                                 &tq,
                                 &tk,
                                 &tv,
                                 &to,
                                 &tl_,
                                 G,
                                 1,
                                 scale,
                                 NULL,
                                 0};
  ok(tl_kernels_attention(e->kernels, e->stream, &d), "attention");
  read(e, &to, out, sizeof out);
  read(e, &tl_, lse, sizeof lse);
  double lse_err = 0;
  for (unsigned h = 0; h < BH; ++h)
    for (unsigned i = 0; i < S; ++i) {
      const float *qi = q + (h * S + i) * D, *k = kv[0] + h / G * T * D, *v = kv[1] + h / G * T * D;
      double sc[T], m = -INFINITY, sum = 0;
      for (unsigned j = 0; j <= i && j < T; ++j) {
        sc[j] = 0;
        for (unsigned c = 0; c < D; ++c)
          sc[j] += (double)qi[c] * k[j * D + c];
        sc[j] *= scale;
        m = fmax(m, sc[j]);
      }
      for (unsigned j = 0; j <= i && j < T; ++j)
        sum += exp(sc[j] - m);
      lse_err = fmax(lse_err, fabs(lse[h * S + i] - (m + log(sum))));
      for (unsigned c = 0; c < D; ++c) {
        double acc = 0;
        for (unsigned j = 0; j <= i && j < T; ++j)
          acc += exp(sc[j] - m) / sum * v[j * D + c];
        ref[(h * S + i) * D + c] = acc;
      }
    }
  double err = normwise(out, ref, BH * S * D);
  EXPECT(err <= 1e-6, "attention: normwise error %g", err);
  EXPECT(lse_err <= 1e-5, "attention lse: max error %g", lse_err);
  tl_buffer_release(tq.buffer), tl_buffer_release(tk.buffer), tl_buffer_release(tv.buffer);
  tl_buffer_release(to.buffer), tl_buffer_release(tl_.buffer);
}

static void expect_error(tl_status s, tl_status_code code, const char *fragment);

/* Split-K. Catches: a slice of K dropped or counted twice (M 3, N 70, K 5000 over 7 slices, the
 * last 584 columns: an integer-valued sum, exact in f32, must come out exact), the epilogue
 * applied per partial (alpha 0.5 and the bias would count 7 times), a workspace too small for
 * the batch, and the automatic choice (split_k 0) computing something else. */
enum { SPLIT_B = 2, SPLIT_M = 3, SPLIT_K = 5000, SPLIT_N = 70 };

/* How many elements of `out` differ from act(alpha a b + bias) + res in double (exact here: the
 * sums are integers); a NULL bias or residual counts as zeros. */
static unsigned split_k_mismatches(const float *a, const float *b, const float *bias,
                                   const float *res, float alpha, int relu, const float *out) {
  enum { B = SPLIT_B, M = SPLIT_M, K = SPLIT_K, N = SPLIT_N };
  unsigned bad = 0;
  for (unsigned z = 0; z < B; ++z)
    for (unsigned i = 0; i < M; ++i)
      for (unsigned j = 0; j < N; ++j) {
        const double acc = batched_dot(a, b, M, K, N, z, i, j);
        double want = alpha * acc + (bias ? bias[j] : 0);
        want = (relu ? fmax(want, 0) : want) + (res ? res[(z * M + i) * N + j] : 0);
        bad += out[(z * M + i) * N + j] != (float)want;
      }
  return bad;
}

static void test_gemm_split_k(Env *e) {
  enum { B = SPLIT_B, M = SPLIT_M, K = SPLIT_K, N = SPLIT_N };
  static float a[B * M * K], b[K * N], bias[N], res[B * M * N], out[B * M * N];
  for (unsigned z = 0; z < B; ++z)
    for (unsigned i = 0; i < M; ++i)
      for (unsigned k = 0; k < K; ++k)
        a[(z * M + i) * K + k] = (float)((k + i + z) % 17); /* integers: exact sums */
  for (unsigned i = 0; i < K * N; ++i)
    b[i] = (float)(i % 3);
  for (unsigned i = 0; i < N; ++i)
    bias[i] = (float)i;
  for (unsigned i = 0; i < B * M * N; ++i)
    res[i] = (float)(i % 5);
  int64_t sa[3] = {B, M, K}, sb[2] = {K, N}, sbias[1] = {N}, so[3] = {B, M, N};
  tl_kernels_tensor ta = tensor(e, TL_DTYPE_F32, 3, sa, a), tb = tensor(e, TL_DTYPE_F32, 2, sb, b);
  tl_kernels_tensor tbias = tensor(e, TL_DTYPE_F32, 1, sbias, bias),
                    tres = tensor(e, TL_DTYPE_F32, 3, so, res),
                    to = tensor(e, TL_DTYPE_F32, 3, so, NULL);
  for (uint32_t split = 0; split <= 7; split += 7) {
    tl_kernels_gemm_desc d = {sizeof d, &ta,  &tb, &tbias, &tres, &to, TL_KERNELS_ACT_RELU,
                              0.5f,     split};
    ok(tl_kernels_gemm(e->kernels, e->stream, &d), "gemm split_k");
    read(e, &to, out, sizeof out);
    unsigned bad = split_k_mismatches(a, b, bias, res, 0.5f, 1, out);
    EXPECT(bad == 0, "gemm split_k %u: %u of %d elements not exact", split, bad, B * M * N);
  }
  /* Since minor 2: a bias alone (paired with a zero residual) and a residual alone (a zero
   * bias), split in 3. Catches: the missing one read from garbage instead of zeros, the present
   * one dropped or applied to the wrong operand (the bias per column, the residual per element). */
  for (int with_bias = 1; with_bias >= 0; --with_bias) {
    tl_kernels_gemm_desc d = {sizeof d,
                              &ta,
                              &tb,
                              with_bias ? &tbias : NULL,
                              with_bias ? NULL : &tres,
                              &to,
                              TL_KERNELS_ACT_NONE,
                              1.0f,
                              3};
    ok(tl_kernels_gemm(e->kernels, e->stream, &d), "gemm split_k, bias or residual alone");
    read(e, &to, out, sizeof out);
    unsigned bad =
        split_k_mismatches(a, b, with_bias ? bias : NULL, with_bias ? NULL : res, 1.0f, 0, out);
    EXPECT(bad == 0, "gemm split_k 3 with %s alone: %u of %d elements not exact",
           with_bias ? "bias" : "residual", bad, B * M * N);
  }
  tl_buffer_release(ta.buffer), tl_buffer_release(tb.buffer), tl_buffer_release(tbias.buffer);
  tl_buffer_release(tres.buffer), tl_buffer_release(to.buffer);
}

/* The plain GEMM, which runs at the target's tile (gemm_tile<BM>x<BN>x<BK>: 128 x 128 x 64 on
 * the cpu, 128 x 128 x 128 on the tnpu), over several blocks each way with ragged edges and a
 * K not a multiple of BK. Catches: the grid counted in another tile than the one launched
 * (blocks never written: NaN stays), a ragged block's or K step's tail read or summed wrongly,
 * a batch entry's offset. Integer inputs: exact sums. */
static void test_gemm_tiles(Env *e) {
  enum { B = 2, M = 300, K = 200, N = 270 };
  static float a[B * M * K], b[K * N], out[B * M * N];
  for (unsigned z = 0; z < B; ++z)
    for (unsigned i = 0; i < M; ++i)
      for (unsigned k = 0; k < K; ++k)
        a[(z * M + i) * K + k] = (float)((k + 2 * i + 3 * z) % 11) - 5;
  for (unsigned i = 0; i < K * N; ++i)
    b[i] = (float)(i % 7) - 3;
  int64_t sa[3] = {B, M, K}, sb[2] = {K, N}, so[3] = {B, M, N};
  tl_kernels_tensor ta = tensor(e, TL_DTYPE_F32, 3, sa, a), tb = tensor(e, TL_DTYPE_F32, 2, sb, b);
  for (unsigned i = 0; i < B * M * N; ++i)
    out[i] = NAN;
  tl_kernels_tensor to = tensor(e, TL_DTYPE_F32, 3, so, out);
  tl_kernels_gemm_desc d = {sizeof d, &ta, &tb, NULL, NULL, &to, TL_KERNELS_ACT_NONE, 1.0f, 1};
  ok(tl_kernels_gemm(e->kernels, e->stream, &d), "gemm (the target's tile)");
  read(e, &to, out, sizeof out);
  unsigned bad = 0;
  for (unsigned z = 0; z < B; ++z)
    for (unsigned i = 0; i < M; ++i)
      for (unsigned j = 0; j < N; ++j)
        bad += out[(z * M + i) * N + j] != (float)batched_dot(a, b, M, K, N, z, i, j);
  EXPECT(bad == 0, "gemm at the target's tile: %u of %d elements not exact", bad, B * M * N);
  tl_buffer_release(ta.buffer), tl_buffer_release(tb.buffer), tl_buffer_release(to.buffer);
}

/* Padding masks. Catches: keys at or past a batch entry's length attended (30 of 45: inside the
 * second key block), another entry's length applied (B 2 of H 2 heads over one kv head: the
 * entry is bh / H, not the kv head bh / group), and the no-key entry (length 0) giving NaN
 * instead of zeros and lse -inf. */
static void test_attention_key_lengths(Env *e) {
  enum { B = 2, H = 2, G = 2, S = 37, T = 45, D = 24 };
  static float q[B * H * S * D], kv[2][B * T * D], out[B * H * S * D], lse[B * H * S];
  static double ref[B * H * S * D];
  const int32_t lens[B] = {0, 30};
  for (unsigned i = 0; i < B * H * S * D; ++i)
    q[i] = 2 * value(7 * i + 3);
  for (unsigned i = 0; i < B * T * D; ++i)
    kv[0][i] = 2 * value(3 * i + 5), kv[1][i] = value(11 * i + 1);
  int64_t sq[3] = {B * H, S, D}, sk[3] = {B * H / G, T, D}, sl[2] = {B * H, S}, sb[1] = {B};
  tl_kernels_tensor tq = tensor(e, TL_DTYPE_F32, 3, sq, q),
                    tk = tensor(e, TL_DTYPE_F32, 3, sk, kv[0]);
  tl_kernels_tensor tv = tensor(e, TL_DTYPE_F32, 3, sk, kv[1]),
                    to = tensor(e, TL_DTYPE_F32, 3, sq, NULL);
  tl_kernels_tensor tl_ = tensor(e, TL_DTYPE_F32, 2, sl, NULL),
                    tn = tensor(e, TL_DTYPE_I32, 1, sb, lens);
  const float scale = 1.0f / sqrtf((float)D);
  tl_kernels_attention_desc d = {sizeof d, &tq, &tk, &tv, &to, &tl_, G, 0, scale, &tn, H};
  ok(tl_kernels_attention(e->kernels, e->stream, &d), "attention with key_lengths");
  read(e, &to, out, sizeof out);
  read(e, &tl_, lse, sizeof lse);
  double lse_err = 0;
  int zero_ok = 1;
  for (unsigned bh = 0; bh < B * H; ++bh)
    for (unsigned i = 0; i < S; ++i) {
      const unsigned n = (unsigned)lens[bh / H];
      const float *qi = q + (bh * S + i) * D, *k = kv[0] + bh / G * T * D,
                  *v = kv[1] + bh / G * T * D;
      double sc[T], m = -INFINITY, sum = 0;
      for (unsigned j = 0; j < n; ++j) {
        sc[j] = 0;
        for (unsigned c = 0; c < D; ++c)
          sc[j] += (double)qi[c] * k[j * D + c];
        sc[j] *= scale;
        m = fmax(m, sc[j]);
      }
      for (unsigned j = 0; j < n; ++j)
        sum += exp(sc[j] - m);
      if (n == 0)
        zero_ok &= isinf(lse[bh * S + i]) && lse[bh * S + i] < 0;
      else
        lse_err = fmax(lse_err, fabs(lse[bh * S + i] - (m + log(sum))));
      for (unsigned c = 0; c < D; ++c) {
        double acc = 0;
        for (unsigned j = 0; j < n; ++j)
          acc += exp(sc[j] - m) / sum * v[j * D + c];
        ref[(bh * S + i) * D + c] = acc;
        if (n == 0)
          zero_ok &= out[(bh * S + i) * D + c] == 0.0f;
      }
    }
  double err = normwise(out, ref, B * H * S * D);
  EXPECT(err <= 1e-6, "attention key_lengths: normwise error %g", err);
  EXPECT(lse_err <= 1e-5, "attention key_lengths lse: max error %g", lse_err);
  EXPECT(zero_ok, "attention key_lengths: length 0 must give zeros and lse -inf");
  d.heads = 3;
  expect_error(tl_kernels_attention(e->kernels, e->stream, &d), TL_STATUS_INVALID_ARGUMENT,
               "'heads' 3 must divide");
  d.heads = H, d.key_lengths = &tq;
  expect_error(tl_kernels_attention(e->kernels, e->stream, &d), TL_STATUS_INVALID_ARGUMENT,
               "'key_lengths'");
  tl_buffer_release(tq.buffer), tl_buffer_release(tk.buffer), tl_buffer_release(tv.buffer);
  tl_buffer_release(to.buffer), tl_buffer_release(tl_.buffer), tl_buffer_release(tn.buffer);
}

static void expect_error(tl_status s, tl_status_code code, const char *fragment) {
  EXPECT(s && tl_status_get_code(s) == code && strstr(tl_status_get_message(s), fragment),
         "expected %s naming '%s', got: %s", tl_status_code_name(code), fragment,
         s ? tl_status_get_message(s) : "success");
  tl_status_free(s);
}

/* Catches: a bad argument launched instead of refused with its name. */
static void test_errors(Env *e) {
  int64_t s23[2] = {2, 3}, s24[2] = {2, 4}, s4[1] = {4};
  tl_kernels_tensor x = tensor(e, TL_DTYPE_F32, 2, s23, NULL),
                    y = tensor(e, TL_DTYPE_F32, 2, s24, NULL);
  tl_kernels_tensor i = tensor(e, TL_DTYPE_I32, 2, s23, NULL),
                    w = tensor(e, TL_DTYPE_F32, 1, s4, NULL);
  expect_error(tl_kernels_binary(e->kernels, e->stream, TL_KERNELS_MUL, &x, &y, &x),
               TL_STATUS_INVALID_ARGUMENT, "'y' has extent 4 in dimension 1");
  expect_error(tl_kernels_binary(e->kernels, e->stream, TL_KERNELS_ADD, &x, &i, &x),
               TL_STATUS_INVALID_ARGUMENT, "'y' is i32");
  expect_error(tl_kernels_softmax(e->kernels, e->stream, 0, &x, &y), TL_STATUS_INVALID_ARGUMENT,
               "'out' is not x's shape");
  /* Outputs that overlap themselves (a stride of 0, rows interleaved) or, for a transpose, its
   * input: refused. Catches them launched (a racing result: a 300 x 300 transpose in place
   * came back wrong with TL_STATUS_OK). */
  tl_kernels_tensor o0 = x, oi = x, sq = tensor(e, TL_DTYPE_F32, 2, (int64_t[2]){8, 8}, NULL);
  o0.strides[0] = 0;
  oi.strides[0] = 1, oi.strides[1] = 1;
  expect_error(tl_kernels_binary(e->kernels, e->stream, TL_KERNELS_ADD, &x, &x, &o0),
               TL_STATUS_INVALID_ARGUMENT, "'out' overlaps itself");
  expect_error(tl_kernels_binary(e->kernels, e->stream, TL_KERNELS_ADD, &x, &x, &oi),
               TL_STATUS_INVALID_ARGUMENT, "'out' overlaps itself");
  expect_error(tl_kernels_transpose(e->kernels, e->stream, &sq, &sq), TL_STATUS_INVALID_ARGUMENT,
               "'out' overlaps 'x'");
  ok(tl_kernels_binary(e->kernels, e->stream, TL_KERNELS_ADD, &x, &x, &x), "add in place");
  /* Strides that interleave without a shared element (2 x 3 at strides (3, 2): offsets 0 2 4
   * 3 5 7) are written: catches an overlap test that refuses them (a greedy one did). */
  static const float ones[6] = {1, 2, 3, 4, 5, 6};
  float got[8] = {0};
  tl_kernels_tensor xs = tensor(e, TL_DTYPE_F32, 2, s23, ones),
                    ow = tensor(e, TL_DTYPE_F32, 1, (int64_t[1]){8}, NULL);
  ow.rank = 2, ow.shape[0] = 2, ow.shape[1] = 3, ow.strides[0] = 3, ow.strides[1] = 2;
  ok(tl_kernels_binary(e->kernels, e->stream, TL_KERNELS_ADD, &xs, &xs, &ow),
     "add into interleaved strides");
  read(e, &ow, got, sizeof got);
  EXPECT(got[0] == 2 && got[2] == 4 && got[4] == 6 && got[3] == 8 && got[5] == 10 && got[7] == 12,
         "add into strides (3, 2): got %g %g %g %g %g %g", got[0], got[2], got[4], got[3], got[5],
         got[7]);
  tl_buffer_release(sq.buffer), tl_buffer_release(xs.buffer), tl_buffer_release(ow.buffer);
  /* 2^31 + 3 elements along one axis (a stride-0 view of one): the kernels' int32 indices
   * would wrap (pid * BLOCK), so the launch refuses it instead of summing the wrong elements */
  tl_kernels_tensor wide = w, one = tensor(e, TL_DTYPE_F32, 1, (int64_t[1]){1}, NULL);
  wide.shape[0] = ((int64_t)1 << 31) + 3, wide.strides[0] = 0;
  expect_error(tl_kernels_reduce(e->kernels, e->stream, TL_KERNELS_SUM, &wide, 0, 0, &one),
               TL_STATUS_INVALID_ARGUMENT, "2147483651 elements along one dimension");
  tl_buffer_release(one.buffer);
  tl_kernels_tensor x3 = tensor(e, TL_DTYPE_F32, 3, (int64_t[3]){3, 2, 8}, NULL);
  tl_kernels_tensor l2 = tensor(e, TL_DTYPE_F32, 2, (int64_t[2]){3, 2}, NULL);
  tl_kernels_attention_desc ad = {sizeof ad, &x3, &x3, &x3, &x3, &l2, 2, 0, 1.0f, NULL, 0};
  expect_error(tl_kernels_attention(e->kernels, e->stream, &ad), TL_STATUS_INVALID_ARGUMENT,
               "'group' 2 does not divide q's 3 heads");
  tl_buffer_release(x3.buffer), tl_buffer_release(l2.buffer);
  tl_kernels_gemm_desc d = {sizeof d, &x, &y, NULL, NULL, &x, TL_KERNELS_ACT_NONE, 1.0f, 0};
  expect_error(tl_kernels_gemm(e->kernels, e->stream, &d), TL_STATUS_INVALID_ARGUMENT,
               "'b' has 2 rows, a has 3 columns");
  d.b = &w; /* rank 1 */
  expect_error(tl_kernels_gemm(e->kernels, e->stream, &d), TL_STATUS_INVALID_ARGUMENT,
               "'b' has rank 1");
  tl_kernels_tensor t32 = tensor(e, TL_DTYPE_F32, 2, (int64_t[2]){3, 2}, NULL);
  d.b = &t32;
  d.out = &x; /* (2, 3) @ (3, 2) is (2, 2) */
  expect_error(tl_kernels_gemm(e->kernels, e->stream, &d), TL_STATUS_INVALID_ARGUMENT,
               "'out' is not (M, N) = (2, 2)");
  tl_kernels_tensor t22 = tensor(e, TL_DTYPE_F32, 2, (int64_t[2]){2, 2}, NULL);
  d.out = &t22;
  d.activation = TL_KERNELS_ACT_LEAKY_RELU;
  expect_error(tl_kernels_gemm(e->kernels, e->stream, &d), TL_STATUS_UNIMPLEMENTED,
               "not fused into GEMM");
  tl_buffer_release(x.buffer), tl_buffer_release(y.buffer), tl_buffer_release(i.buffer);
  tl_buffer_release(w.buffer), tl_buffer_release(t32.buffer), tl_buffer_release(t22.buffer);
}

/* ---- The entries since minor 1 ---- */

static void release(tl_kernels_tensor *t) { tl_buffer_release(t->buffer); }

static double maxabs(const float *got, const double *ref, size_t n) {
  double m = 0;
  for (size_t i = 0; i < n; ++i)
    m = fmax(m, fabs(got[i] - ref[i]));
  return m;
}

/* Catches: the inner path's ragged 70 > 64 columns, the rows path's chunks (n = 1500 > 1024),
 * mean's 1/n, var's correction and second pass, argmax's first index among ties, min's +inf
 * padding, a transposed (strided) x, the dimensions around the axis merged wrongly. */
static void test_reduce(Env *e) {
  enum { A = 5, B = 37, C = 70, R = 3, N = 1500 };
  static float x[A * B * C], xr[R * N], out[A * C + A * B + B * C];
  static double ref[A * C + A * B + B * C];
  static int32_t idx[A * B];
  for (unsigned i = 0; i < A * B * C; ++i)
    x[i] = 4 * value(i) + 1;
  for (unsigned i = 0; i < R * N; ++i)
    xr[i] = value(3 * i + 1) + 2;
  for (unsigned r = 0; r < A * B; ++r) /* a tie at columns 3 and 50: argmax is 3 */
    x[r * C + 3] = x[r * C + 50] = 9.0f + (float)(r % 3);
  int64_t sx[3] = {A, B, C}, sr[2] = {R, N};
  tl_kernels_tensor tx = tensor(e, TL_DTYPE_F32, 3, sx, x), tr = tensor(e, TL_DTYPE_F32, 2, sr, xr);
  /* sum along axis 1: (A, C) */
  tl_kernels_tensor o1 = tensor(e, TL_DTYPE_F32, 2, (int64_t[2]){A, C}, NULL);
  ok(tl_kernels_reduce(e->kernels, e->stream, TL_KERNELS_SUM, &tx, 1, 0, &o1), "reduce sum");
  read(e, &o1, out, A * C * 4);
  for (unsigned a = 0; a < A; ++a)
    for (unsigned c = 0; c < C; ++c) {
      double s = 0;
      for (unsigned b = 0; b < B; ++b)
        s += x[(a * B + b) * C + c];
      ref[a * C + c] = s;
    }
  double err = normwise(out, ref, A * C);
  EXPECT(err <= 1e-6, "reduce sum axis 1: normwise error %g", err);
  int bad = 0;
  /* var (correction 1) along axis 0: (B, C), outer 1, inner B C merged */
  tl_kernels_tensor o0 = tensor(e, TL_DTYPE_F32, 2, (int64_t[2]){B, C}, NULL);
  ok(tl_kernels_reduce(e->kernels, e->stream, TL_KERNELS_VAR, &tx, 0, 1, &o0), "reduce var");
  read(e, &o0, out, B * C * 4);
  for (unsigned i = 0; i < B * C; ++i) {
    double mu = 0, v = 0;
    for (unsigned a = 0; a < A; ++a)
      mu += x[a * B * C + i] / (double)A;
    for (unsigned a = 0; a < A; ++a)
      v += (x[a * B * C + i] - mu) * (x[a * B * C + i] - mu);
    ref[i] = v / (A - 1);
  }
  err = normwise(out, ref, B * C);
  EXPECT(err <= 1e-6, "reduce var axis 0: normwise error %g", err);
  /* correction 7 > A = 5: divided by max(A - 7, 0) = 0, +inf as numpy's and torch's (the
   * squares are positive), not a negative variance */
  ok(tl_kernels_reduce(e->kernels, e->stream, TL_KERNELS_VAR, &tx, 0, 7, &o0), "var, c > n");
  read(e, &o0, out, B * C * 4);
  bad = 0;
  for (unsigned i = 0; i < B * C; ++i)
    bad += !(isinf(out[i]) && out[i] > 0);
  EXPECT(bad == 0, "reduce var with correction 7 > 5: %d of %d not +inf", bad, B * C);
  /* argmax and min along the last axis: (A, B) */
  tl_kernels_tensor oi = tensor(e, TL_DTYPE_I32, 2, (int64_t[2]){A, B}, NULL);
  ok(tl_kernels_reduce(e->kernels, e->stream, TL_KERNELS_ARGMAX, &tx, -1, 0, &oi), "argmax");
  read(e, &oi, idx, sizeof idx);
  bad = 0;
  for (unsigned r = 0; r < A * B; ++r)
    bad += idx[r] != 3;
  EXPECT(bad == 0, "argmax: %d rows not at the first maximum (3)", bad);
  tl_kernels_tensor om = tensor(e, TL_DTYPE_F32, 2, (int64_t[2]){A, B}, NULL);
  ok(tl_kernels_reduce(e->kernels, e->stream, TL_KERNELS_MIN, &tx, 2, 0, &om), "reduce min");
  read(e, &om, out, A * B * 4);
  for (unsigned r = 0; r < A * B; ++r) {
    double m = INFINITY;
    for (unsigned c = 0; c < C; ++c)
      m = fmin(m, x[r * C + c]);
    ref[r] = m;
  }
  EXPECT(maxabs(out, ref, A * B) == 0, "reduce min: max error %g", maxabs(out, ref, A * B));
  /* mean of each row of xr (the rows path, n = 1500 past one 1024 chunk), then along axis 0 of
   * xr^T (a strided (N, R) view: the inner path, its columns N apart) */
  tl_kernels_tensor tt = tr;
  tt.shape[0] = N, tt.shape[1] = R, tt.strides[0] = 1, tt.strides[1] = N;
  tl_kernels_tensor ot = tensor(e, TL_DTYPE_F32, 1, (int64_t[1]){R}, NULL);
  for (int strided = 0; strided < 2; ++strided) {
    ok(tl_kernels_reduce(e->kernels, e->stream, TL_KERNELS_MEAN, strided ? &tt : &tr,
                         strided ? 0 : 1, 0, &ot),
       "reduce mean");
    read(e, &ot, out, R * 4);
    for (unsigned r = 0; r < R; ++r) {
      double s = 0;
      for (unsigned j = 0; j < N; ++j)
        s += xr[r * N + j];
      ref[r] = s / N;
    }
    err = normwise(out, ref, R);
    EXPECT(err <= 1e-6, "reduce mean (%s): normwise error %g", strided ? "x^T, axis 0" : "rows",
           err);
  }
  /* a rank-1 x: out is rank 1 of extent 1 (all R N elements summed) */
  tl_kernels_tensor t1 = tr, o11 = tensor(e, TL_DTYPE_F32, 1, (int64_t[1]){1}, NULL);
  t1.rank = 1, t1.shape[0] = R * N, t1.strides[0] = 1;
  ok(tl_kernels_reduce(e->kernels, e->stream, TL_KERNELS_SUM, &t1, 0, 0, &o11), "reduce rank 1");
  read(e, &o11, out, 4);
  ref[0] = 0;
  for (unsigned i = 0; i < R * N; ++i)
    ref[0] += xr[i];
  err = normwise(out, ref, 1);
  EXPECT(err <= 1e-6, "reduce sum of a rank-1 x: normwise error %g", err);
  release(&o11);
  release(&tx), release(&tr), release(&o1), release(&o0), release(&oi), release(&om), release(&ot);
}

/* Extents of 0, as numpy and torch (and tl.ops): a reduction over an empty axis gives sum 0 and
 * mean and var NaN (max refused), a GEMM with K = 0 the epilogue act(bias) + residual, batched
 * (b of rank 2, shared), split_k 1 or 2 asked. Outputs start as 7s, so one left unwritten fails;
 * catches the old refusals, a mean or var of 0, an epilogue skipped. */
static void test_empty_extents(Env *e) {
  enum { A = 3, C = 70, B = 2, M = 5, N = 6 };
  static float out[A * C], sevens[A * C], bias[N], res[B * M * N]; /* A C > B M N */
  for (unsigned i = 0; i < A * C; ++i)
    sevens[i] = 7.0f;
  for (unsigned i = 0; i < B * M * N; ++i)
    res[i] = value(i);
  for (unsigned j = 0; j < N; ++j)
    bias[j] = 2 * value(100 + j);
  tl_kernels_tensor x = tensor(e, TL_DTYPE_F32, 3, (int64_t[3]){A, 0, C}, NULL),
                    xr = tensor(e, TL_DTYPE_F32, 2, (int64_t[2]){A, 0}, NULL),
                    o = tensor(e, TL_DTYPE_F32, 2, (int64_t[2]){A, C}, NULL),
                    orow = tensor(e, TL_DTYPE_F32, 1, (int64_t[1]){A}, NULL);
  const tl_kernels_reduction ops[3] = {TL_KERNELS_SUM, TL_KERNELS_MEAN, TL_KERNELS_VAR};
  for (int i = 0; i < 3; ++i)
    for (int rows = 0; rows < 2; ++rows) { /* along the middle axis; along the last (rows) */
      const tl_kernels_tensor *ot = rows ? &orow : &o;
      const unsigned count = rows ? A : A * C;
      ok(tl_stream_copy_to_device(e->stream, sevens, ot->buffer, 0, count * 4), "fill 7s");
      ok(tl_kernels_reduce(e->kernels, e->stream, ops[i], rows ? &xr : &x, 1, 1.0f, ot),
         "reduce over an empty axis");
      read(e, ot, out, count * 4);
      int bad = 0;
      for (unsigned j = 0; j < count; ++j)
        bad += ops[i] == TL_KERNELS_SUM ? out[j] != 0.0f : !isnan(out[j]);
      EXPECT(bad == 0, "reduce %d over an empty axis (%s): %d of %u not %s (first %g)", (int)ops[i],
             rows ? "rows" : "inner", bad, count, ops[i] == TL_KERNELS_SUM ? "0" : "NaN", out[0]);
    }
  expect_error(tl_kernels_reduce(e->kernels, e->stream, TL_KERNELS_MAX, &x, 1, 0, &o),
               TL_STATUS_INVALID_ARGUMENT, "max over axis 1 of extent 0");
  release(&x), release(&xr), release(&o), release(&orow);
  tl_kernels_tensor a = tensor(e, TL_DTYPE_F32, 3, (int64_t[3]){B, M, 0}, NULL),
                    b = tensor(e, TL_DTYPE_F32, 2, (int64_t[2]){0, N}, NULL),
                    tb = tensor(e, TL_DTYPE_F32, 1, (int64_t[1]){N}, bias),
                    tr = tensor(e, TL_DTYPE_F32, 3, (int64_t[3]){B, M, N}, res),
                    to = tensor(e, TL_DTYPE_F32, 3, (int64_t[3]){B, M, N}, NULL);
  for (uint32_t split = 1; split <= 2; ++split) {
    ok(tl_stream_copy_to_device(e->stream, sevens, to.buffer, 0, B * M * N * 4), "fill 7s");
    tl_kernels_gemm_desc d = {sizeof d, &a, &b, &tb, &tr, &to, TL_KERNELS_ACT_GELU, 0.5f, split};
    ok(tl_kernels_gemm(e->kernels, e->stream, &d), "gemm with K = 0");
    read(e, &to, out, B * M * N * 4);
    double worst = 0;
    for (unsigned i = 0; i < B * M * N; ++i)
      worst = fmax(worst, fabs(out[i] - (gelu(bias[i % N]) + res[i])));
    EXPECT(worst <= 1e-5, "gemm K = 0 (split_k %u): max error %g against gelu(bias) + residual",
           split, worst);
  }
  /* Without bias and residual, and gemv without bias, and raw int8 sums: the placeholders of
   * the parameters not read were one-element views of a's buffer, which holds no element here
   * (1 byte): validation refused the launch (OUT_OF_RANGE, "spans bytes [0, 4)"). */
  tl_kernels_tensor a2 = tensor(e, TL_DTYPE_F32, 2, (int64_t[2]){M, 0}, NULL),
                    o2 = tensor(e, TL_DTYPE_F32, 2, (int64_t[2]){M, N}, NULL),
                    x0 = tensor(e, TL_DTYPE_F32, 1, (int64_t[1]){0}, NULL),
                    ov = tensor(e, TL_DTYPE_F32, 1, (int64_t[1]){M}, NULL),
                    ai = tensor(e, TL_DTYPE_I8, 2, (int64_t[2]){M, 0}, NULL),
                    bi = tensor(e, TL_DTYPE_I8, 2, (int64_t[2]){0, N}, NULL),
                    oi = tensor(e, TL_DTYPE_I32, 2, (int64_t[2]){M, N}, NULL);
  ok(tl_stream_copy_to_device(e->stream, sevens, o2.buffer, 0, M * N * 4), "fill 7s");
  ok(tl_stream_copy_to_device(e->stream, sevens, ov.buffer, 0, M * 4), "fill 7s");
  ok(tl_stream_copy_to_device(e->stream, sevens, oi.buffer, 0, M * N * 4), "fill 7s");
  tl_kernels_gemm_desc plain = {sizeof plain,        &a2,  &b, NULL, NULL, &o2,
                                TL_KERNELS_ACT_NONE, 1.0f, 1};
  ok(tl_kernels_gemm(e->kernels, e->stream, &plain), "gemm with K = 0, no bias or residual");
  ok(tl_kernels_gemv(e->kernels, e->stream, &a2, &x0, NULL, 1.0f, &ov), "gemv with K = 0");
  tl_kernels_gemm_quantized_desc q = {sizeof q, &ai,  &bi, NULL,
                                      NULL,     NULL, &oi, TL_KERNELS_ACT_NONE};
  ok(tl_kernels_gemm_quantized(e->kernels, e->stream, &q), "raw int8 gemm with K = 0");
  int32_t sums[M * N];
  read(e, &o2, out, M * N * 4);
  int bad = 0;
  for (unsigned i = 0; i < M * N; ++i)
    bad += out[i] != 0.0f;
  read(e, &ov, out, M * 4);
  for (unsigned i = 0; i < M; ++i)
    bad += out[i] != 0.0f;
  read(e, &oi, sums, M * N * 4);
  for (unsigned i = 0; i < M * N; ++i)
    bad += sums[i] != 0;
  EXPECT(bad == 0, "K = 0 without bias or residual: %d results not 0", bad);
  release(&a2), release(&o2), release(&x0), release(&ov), release(&ai), release(&bi), release(&oi);
  release(&a), release(&b), release(&tb), release(&tr), release(&to);
}

/* Catches: the carry between chunks (1500 > 1024), rows scanned several a program (the cpu's
 * and the tnpu's whole-row form: 70 rows are 9 programs of 8, the last ragged, or 2 of 64)
 * mixed up or past the last row, the inner path's ragged columns, the axis' stride (axis 0 of
 * (40, 3, 70)). */
static void test_cumsum(Env *e) {
  enum { R = 70, N = 1500, A = 40, B = 3, C = 70 };
  static float x[R * N], y[A * B * C], out[R * N];
  static double ref[R * N];
  for (unsigned i = 0; i < R * N; ++i)
    x[i] = value(i);
  for (unsigned i = 0; i < A * B * C; ++i)
    y[i] = value(5 * i + 2);
  int64_t sx[2] = {R, N}, sy[3] = {A, B, C};
  tl_kernels_tensor tx = tensor(e, TL_DTYPE_F32, 2, sx, x),
                    to = tensor(e, TL_DTYPE_F32, 2, sx, NULL);
  ok(tl_kernels_cumsum(e->kernels, e->stream, &tx, -1, &to), "cumsum rows");
  read(e, &to, out, R * N * 4);
  for (unsigned r = 0; r < R; ++r) {
    double s = 0;
    for (unsigned j = 0; j < N; ++j)
      ref[r * N + j] = s += x[r * N + j];
  }
  double err = normwise(out, ref, R * N);
  /* f32 running sums of 1500 terms: n u = 9e-5 bounds it (measured 1.3e-6); a lost carry is O(1) */
  EXPECT(err <= 1e-5, "cumsum along rows: normwise error %g", err);
  tl_kernels_tensor ty = tensor(e, TL_DTYPE_F32, 3, sy, y),
                    tyo = tensor(e, TL_DTYPE_F32, 3, sy, NULL);
  ok(tl_kernels_cumsum(e->kernels, e->stream, &ty, 0, &tyo), "cumsum axis 0");
  read(e, &tyo, out, A * B * C * 4);
  for (unsigned i = 0; i < B * C; ++i) {
    double s = 0;
    for (unsigned a = 0; a < A; ++a)
      ref[a * B * C + i] = s += y[a * B * C + i];
  }
  err = normwise(out, ref, A * B * C);
  EXPECT(err <= 1e-6, "cumsum along axis 0: normwise error %g", err);
  release(&tx), release(&to), release(&ty), release(&tyo);
}

/* Catches: the batch index, ragged tiles (70 x 45 in 64 x 64 blocks), rows and columns swapped
 * only within a tile. */
static void test_transpose(Env *e) {
  enum { Z = 2, R = 70, C = 45 };
  static float x[Z * R * C], out[Z * R * C];
  for (unsigned i = 0; i < Z * R * C; ++i)
    x[i] = value(i);
  tl_kernels_tensor tx = tensor(e, TL_DTYPE_F32, 3, (int64_t[3]){Z, R, C}, x);
  tl_kernels_tensor to = tensor(e, TL_DTYPE_F32, 3, (int64_t[3]){Z, C, R}, NULL);
  ok(tl_kernels_transpose(e->kernels, e->stream, &tx, &to), "transpose");
  read(e, &to, out, sizeof out);
  int bad = 0;
  for (unsigned z = 0; z < Z; ++z)
    for (unsigned i = 0; i < R; ++i)
      for (unsigned j = 0; j < C; ++j)
        bad += out[(z * C + j) * R + i] != x[(z * R + i) * C + j];
  EXPECT(bad == 0, "transpose: %d elements wrong", bad);
  release(&tx), release(&to);
}

/* Catches: a piece written at the wrong offset along the axis (middle axis: strided slices),
 * the i32 copy, a piece wider than one 64-element block (70). */
static void test_concat(Env *e) {
  enum { A = 3, B1 = 5, B2 = 2, C = 70 };
  static float p[A * B1 * C], q[A * B2 * C], out[A * (B1 + B2) * C];
  static int32_t i1[4 * 3], i2[2 * 3], io[6 * 3];
  for (unsigned i = 0; i < A * B1 * C; ++i)
    p[i] = value(i);
  for (unsigned i = 0; i < A * B2 * C; ++i)
    q[i] = value(3 * i + 7);
  for (unsigned i = 0; i < 12; ++i)
    i1[i] = (int32_t)i * 3 - 5;
  for (unsigned i = 0; i < 6; ++i)
    i2[i] = 1000 + (int32_t)i;
  tl_kernels_tensor tp = tensor(e, TL_DTYPE_F32, 3, (int64_t[3]){A, B1, C}, p);
  tl_kernels_tensor tq = tensor(e, TL_DTYPE_F32, 3, (int64_t[3]){A, B2, C}, q);
  tl_kernels_tensor to = tensor(e, TL_DTYPE_F32, 3, (int64_t[3]){A, B1 + B2, C}, NULL);
  const tl_kernels_tensor *in[2] = {&tp, &tq};
  ok(tl_kernels_concat(e->kernels, e->stream, 2, in, 1, &to), "concat");
  read(e, &to, out, sizeof out);
  int bad = 0;
  for (unsigned a = 0; a < A; ++a)
    for (unsigned b = 0; b < B1 + B2; ++b)
      for (unsigned c = 0; c < C; ++c)
        bad += out[(a * (B1 + B2) + b) * C + c] !=
               (b < B1 ? p[(a * B1 + b) * C + c] : q[(a * B2 + b - B1) * C + c]);
  EXPECT(bad == 0, "concat f32 along axis 1: %d elements wrong", bad);
  tl_kernels_tensor j1 = tensor(e, TL_DTYPE_I32, 2, (int64_t[2]){4, 3}, i1);
  tl_kernels_tensor j2 = tensor(e, TL_DTYPE_I32, 2, (int64_t[2]){2, 3}, i2);
  tl_kernels_tensor jo = tensor(e, TL_DTYPE_I32, 2, (int64_t[2]){6, 3}, NULL);
  const tl_kernels_tensor *jn[2] = {&j1, &j2};
  ok(tl_kernels_concat(e->kernels, e->stream, 2, jn, 0, &jo), "concat i32");
  read(e, &jo, io, sizeof io);
  bad = 0;
  for (unsigned i = 0; i < 18; ++i)
    bad += io[i] != (i < 12 ? i1[i] : i2[i - 12]);
  EXPECT(bad == 0, "concat i32 along axis 0: %d elements wrong", bad);
  release(&tp), release(&tq), release(&to), release(&j1), release(&j2), release(&jo);
}

/* Catches: an id's row misread, D = 300 past one 256-column block, the backward's sum over
 * repeated ids, dtable not zeroed first (it is filled with garbage before). */
static void test_embedding(Env *e) {
  enum { V = 50, D = 300, N = 37 };
  static float table[V * D], out[N * D], dout[N * D], dtable[V * D];
  static double ref[V * D];
  static int32_t ids[N];
  for (unsigned i = 0; i < V * D; ++i)
    table[i] = value(i);
  for (unsigned i = 0; i < N; ++i)
    ids[i] = (int32_t)((i * 7) % 13 + (i % 2) * 30); /* repeats */
  for (unsigned i = 0; i < N * D; ++i)
    dout[i] = value(3 * i + 5);
  tl_kernels_tensor tt = tensor(e, TL_DTYPE_F32, 2, (int64_t[2]){V, D}, table);
  tl_kernels_tensor ti = tensor(e, TL_DTYPE_I32, 1, (int64_t[1]){N}, ids);
  tl_kernels_tensor to = tensor(e, TL_DTYPE_F32, 2, (int64_t[2]){N, D}, NULL);
  ok(tl_kernels_embedding(e->kernels, e->stream, &tt, &ti, &to), "embedding");
  read(e, &to, out, sizeof out);
  int bad = 0;
  for (unsigned i = 0; i < N; ++i)
    for (unsigned j = 0; j < D; ++j)
      bad += out[i * D + j] != table[ids[i] * D + j];
  EXPECT(bad == 0, "embedding: %d elements wrong", bad);
  tl_kernels_tensor tg = tensor(e, TL_DTYPE_F32, 2, (int64_t[2]){N, D}, dout);
  tl_kernels_tensor td = tensor(e, TL_DTYPE_F32, 2, (int64_t[2]){V, D}, table); /* garbage */
  ok(tl_kernels_embedding_backward(e->kernels, e->stream, &tg, &ti, &td), "embedding_backward");
  read(e, &td, dtable, sizeof dtable);
  memset(ref, 0, sizeof ref);
  for (unsigned i = 0; i < N; ++i)
    for (unsigned j = 0; j < D; ++j)
      ref[ids[i] * D + j] += dout[i * D + j];
  double err = normwise(dtable, ref, V * D);
  EXPECT(err <= 1e-7, "embedding_backward: normwise error %g", err);
  release(&tt), release(&ti), release(&to), release(&tg), release(&td);
}

/* Catches: bf16 read as another dtype in the mixed-dtype entries: the lookup's bf16 rows, the
 * backward's bf16 dout summed into the f32 dtable. */
static void test_embedding_bf16(Env *e) {
  enum { V = 20, D = 40, N = 30 };
  static uint16_t table[V * D], out[N * D], dout[N * D];
  static float dtable[V * D];
  static double ref[V * D];
  static int32_t ids[N];
  for (unsigned i = 0; i < V * D; ++i)
    table[i] = to_bf16(value(i));
  for (unsigned i = 0; i < N; ++i)
    ids[i] = (int32_t)((i * 7) % V);
  for (unsigned i = 0; i < N * D; ++i)
    dout[i] = to_bf16(value(3 * i + 5));
  tl_kernels_tensor tt = tensor(e, TL_DTYPE_BF16, 2, (int64_t[2]){V, D}, table);
  tl_kernels_tensor ti = tensor(e, TL_DTYPE_I32, 1, (int64_t[1]){N}, ids);
  tl_kernels_tensor to = tensor(e, TL_DTYPE_BF16, 2, (int64_t[2]){N, D}, NULL);
  tl_kernels_tensor tg = tensor(e, TL_DTYPE_BF16, 2, (int64_t[2]){N, D}, dout);
  tl_kernels_tensor td = tensor(e, TL_DTYPE_F32, 2, (int64_t[2]){V, D}, NULL);
  ok(tl_kernels_embedding(e->kernels, e->stream, &tt, &ti, &to), "embedding bf16");
  ok(tl_kernels_embedding_backward(e->kernels, e->stream, &tg, &ti, &td),
     "embedding_backward bf16");
  read(e, &to, out, sizeof out);
  read(e, &td, dtable, sizeof dtable);
  int bad = 0;
  for (unsigned i = 0; i < N * D; ++i)
    bad += out[i] != table[ids[i / D] * D + i % D];
  EXPECT(bad == 0, "embedding bf16: %d elements wrong", bad);
  memset(ref, 0, sizeof ref);
  for (unsigned i = 0; i < N * D; ++i)
    ref[ids[i / D] * D + i % D] += from_bf16(dout[i]);
  double err = normwise(dtable, ref, V * D);
  EXPECT(err <= 1e-7, "embedding_backward bf16: normwise error %g", err);
  release(&tt), release(&ti), release(&to), release(&tg), release(&td);
}

/* Catches: the online logsumexp over chunks (1500 classes), the target's logit, an ignored
 * row not 0, the backward's softmax - onehot and its per-row scale. */
static void test_cross_entropy(Env *e) {
  enum { N = 7, C = 1500 };
  static float logits[N * C], loss[N], scale[N], dl[N * C];
  static double ref[N * C];
  static int32_t target[N];
  for (unsigned i = 0; i < N * C; ++i)
    logits[i] = 6 * value(i);
  for (unsigned i = 0; i < N; ++i)
    target[i] = (int32_t)((i * 331) % C), scale[i] = 0.5f + (float)i / 8;
  target[4] = -100;
  tl_kernels_tensor tl_ = tensor(e, TL_DTYPE_F32, 2, (int64_t[2]){N, C}, logits);
  tl_kernels_tensor tt = tensor(e, TL_DTYPE_I32, 1, (int64_t[1]){N}, target);
  tl_kernels_tensor ts = tensor(e, TL_DTYPE_F32, 1, (int64_t[1]){N}, scale);
  tl_kernels_tensor to = tensor(e, TL_DTYPE_F32, 1, (int64_t[1]){N}, NULL);
  tl_kernels_tensor tg = tensor(e, TL_DTYPE_F32, 2, (int64_t[2]){N, C}, NULL);
  ok(tl_kernels_cross_entropy(e->kernels, e->stream, &tl_, &tt, -100, &to), "cross_entropy");
  ok(tl_kernels_cross_entropy_backward(e->kernels, e->stream, &tl_, &tt, &ts, -100, &tg),
     "cross_entropy_backward");
  read(e, &to, loss, sizeof loss);
  read(e, &tg, dl, sizeof dl);
  double lerr = 0;
  for (unsigned r = 0; r < N; ++r) {
    double lse = logsumexp(&logits[r * C], C),
           want = target[r] == -100 ? 0 : lse - logits[r * C + target[r]];
    lerr = fmax(lerr, fabs(loss[r] - want));
    for (unsigned j = 0; j < C; ++j)
      ref[r * C + j] = target[r] == -100
                           ? 0
                           : (exp(logits[r * C + j] - lse) - (j == (unsigned)target[r])) * scale[r];
  }
  EXPECT(lerr <= 1e-5, "cross_entropy: max error %g", lerr);
  double err = normwise(dl, ref, N * C);
  EXPECT(err <= 1e-6, "cross_entropy_backward: normwise error %g", err);
  release(&tl_), release(&tt), release(&ts), release(&to), release(&tg);
}

/* Catches: the halves swapped or the sign of sin, cos/sin indexed by the wrong position, the
 * second half's offset, a strided x (every other row of a buffer twice as tall). */
static void test_rope(Env *e) {
  enum { R = 3, S = 20, D = 18, H = D / 2 };
  static float x[R * 2 * S * D], co[S * H], si[S * H], out[R * S * D];
  static double ref[R * S * D];
  for (unsigned i = 0; i < R * 2 * S * D; ++i)
    x[i] = value(i);
  for (unsigned p = 0; p < S; ++p)
    for (unsigned i = 0; i < H; ++i) {
      double ang = p * pow(10000.0, -2.0 * i / D);
      co[p * H + i] = (float)cos(ang), si[p * H + i] = (float)sin(ang);
    }
  tl_kernels_tensor tx = tensor(e, TL_DTYPE_F32, 3, (int64_t[3]){R, 2 * S, D}, x);
  tx.shape[1] = S, tx.strides[1] = 2 * D; /* rows 0, 2, 4, ... of each (2S, D) block */
  tl_kernels_tensor tc = tensor(e, TL_DTYPE_F32, 2, (int64_t[2]){S, H}, co);
  tl_kernels_tensor ts = tensor(e, TL_DTYPE_F32, 2, (int64_t[2]){S, H}, si);
  tl_kernels_tensor to = tensor(e, TL_DTYPE_F32, 3, (int64_t[3]){R, S, D}, NULL);
  ok(tl_kernels_rope(e->kernels, e->stream, &tx, &tc, &ts, &to), "rope");
  read(e, &to, out, sizeof out);
  for (unsigned r = 0; r < R; ++r)
    for (unsigned p = 0; p < S; ++p)
      for (unsigned i = 0; i < H; ++i) {
        const float *xi = x + (r * 2 * S + 2 * p) * D;
        double c = co[p * H + i], s = si[p * H + i];
        ref[(r * S + p) * D + i] = xi[i] * c - xi[i + H] * s;
        ref[(r * S + p) * D + i + H] = xi[i + H] * c + xi[i] * s;
      }
  double err = normwise(out, ref, R * S * D);
  EXPECT(err <= 1e-6, "rope: normwise error %g", err);
  release(&tx), release(&tc), release(&ts), release(&to);
}

/* Catches: a transposed a (strides (1, M)), K = 600 past one 512 block, alpha and the bias. */
static void test_gemv(Env *e) {
  enum { M = 70, K = 600 };
  static float at[K * M], x[K], b[M], out[M];
  static double ref[M];
  for (unsigned i = 0; i < K * M; ++i)
    at[i] = value(i);
  for (unsigned i = 0; i < K; ++i)
    x[i] = value(7 * i + 1);
  for (unsigned i = 0; i < M; ++i)
    b[i] = value(3 * i + 2);
  tl_kernels_tensor ta = tensor(e, TL_DTYPE_F32, 2, (int64_t[2]){K, M}, at);
  ta.shape[0] = M, ta.shape[1] = K, ta.strides[0] = 1, ta.strides[1] = M; /* a = at^T */
  tl_kernels_tensor tx = tensor(e, TL_DTYPE_F32, 1, (int64_t[1]){K}, x);
  tl_kernels_tensor tb = tensor(e, TL_DTYPE_F32, 1, (int64_t[1]){M}, b);
  tl_kernels_tensor to = tensor(e, TL_DTYPE_F32, 1, (int64_t[1]){M}, NULL);
  ok(tl_kernels_gemv(e->kernels, e->stream, &ta, &tx, &tb, 0.5f, &to), "gemv");
  read(e, &to, out, sizeof out);
  for (unsigned i = 0; i < M; ++i) {
    double s = 0;
    for (unsigned k = 0; k < K; ++k)
      s += (double)at[k * M + i] * x[k];
    ref[i] = 0.5 * s + b[i];
  }
  double err = normwise(out, ref, M);
  EXPECT(err <= 1e-6, "gemv: normwise error %g", err);
  release(&ta), release(&tx), release(&tb), release(&to);
}

/* Catches: the stride-2 window, zero padding at the edges, the weight's (C KH KW, OC) view,
 * the bias and the fused relu, the image index, the bias-less specialization chosen without one. */
static void test_conv2d(Env *e) {
  enum { N = 2, C = 3, H = 9, W = 11, OC = 5, K = 3, OH = 5, OW = 6 };
  static float x[N * C * H * W], w[OC * C * K * K], b[OC], out[N * OC * OH * OW];
  static double ref[N * OC * OH * OW];
  for (unsigned i = 0; i < N * C * H * W; ++i)
    x[i] = value(i);
  for (unsigned i = 0; i < OC * C * K * K; ++i)
    w[i] = value(5 * i + 3);
  for (unsigned i = 0; i < OC; ++i)
    b[i] = value(11 * i + 1) / 4;
  tl_kernels_tensor tx = tensor(e, TL_DTYPE_F32, 4, (int64_t[4]){N, C, H, W}, x);
  tl_kernels_tensor tw = tensor(e, TL_DTYPE_F32, 4, (int64_t[4]){OC, C, K, K}, w);
  tl_kernels_tensor tb = tensor(e, TL_DTYPE_F32, 1, (int64_t[1]){OC}, b);
  tl_kernels_tensor to = tensor(e, TL_DTYPE_F32, 4, (int64_t[4]){N, OC, OH, OW}, NULL);
  for (int with_bias = 1; with_bias >= 0; --with_bias) {
    tl_kernels_conv2d_desc d = {sizeof d, &tx, &tw, with_bias ? &tb : NULL,
                                &to,      2,   1,   TL_KERNELS_ACT_RELU};
    ok(tl_kernels_conv2d(e->kernels, e->stream, &d), "conv2d");
    read(e, &to, out, sizeof out);
    for (unsigned n = 0; n < N; ++n)
      for (unsigned o = 0; o < OC; ++o)
        for (unsigned i = 0; i < OH; ++i)
          for (unsigned j = 0; j < OW; ++j) {
            double s = with_bias ? b[o] : 0;
            for (unsigned c = 0; c < C; ++c)
              for (unsigned p = 0; p < K; ++p)
                for (unsigned q = 0; q < K; ++q) {
                  int y = (int)(2 * i + p) - 1, z = (int)(2 * j + q) - 1;
                  if (y >= 0 && y < H && z >= 0 && z < W)
                    s +=
                        (double)x[((n * C + c) * H + y) * W + z] * w[((o * C + c) * K + p) * K + q];
                }
            ref[((n * OC + o) * OH + i) * OW + j] = s > 0 ? s : 0;
          }
    double err = normwise(out, ref, N * OC * OH * OW);
    EXPECT(err <= 1e-6, "conv2d %s bias: normwise error %g", with_bias ? "with" : "without", err);
  }
  release(&tx), release(&tw), release(&tb), release(&to);
}

/* Catches: max and avg swapped, the window's stride, the (N C) planes merged, ragged 9 x 11. */
static void test_pool2d(Env *e) {
  enum { N = 2, C = 3, H = 9, W = 11 };
  static float x[N * C * H * W], out[N * C * H * W];
  static double ref[N * C * H * W];
  for (unsigned i = 0; i < N * C * H * W; ++i)
    x[i] = value(i);
  tl_kernels_tensor tx = tensor(e, TL_DTYPE_F32, 4, (int64_t[4]){N, C, H, W}, x);
  for (int avg = 0; avg < 2; ++avg) {
    const unsigned k = avg ? 2 : 3, st = 2, oh = (H - k) / st + 1, ow = (W - k) / st + 1;
    tl_kernels_tensor to = tensor(e, TL_DTYPE_F32, 4, (int64_t[4]){N, C, oh, ow}, NULL);
    ok(tl_kernels_pool2d(e->kernels, e->stream, avg, k, st, &tx, &to), "pool2d");
    read(e, &to, out, (size_t)N * C * oh * ow * 4);
    for (unsigned p = 0; p < N * C; ++p)
      for (unsigned i = 0; i < oh; ++i)
        for (unsigned j = 0; j < ow; ++j) {
          double m = -INFINITY, s = 0;
          for (unsigned a = 0; a < k; ++a)
            for (unsigned b = 0; b < k; ++b) {
              double v = x[(p * H + i * st + a) * W + j * st + b];
              m = fmax(m, v), s += v;
            }
          ref[(p * oh + i) * ow + j] = avg ? s / (k * k) : m;
        }
    double err = normwise(out, ref, (size_t)N * C * oh * ow);
    EXPECT(err <= 1e-7, "%s pool2d: normwise error %g", avg ? "avg" : "max", err);
    release(&to);
  }
  release(&tx);
}

/* Catches: values not largest first, ties not to the lowest index, the index of a value
 * instead of its column; rows of 9000: the rounds over three segments (the last ragged), a
 * candidate's original column lost in the gather round, ties across segments. */
static void topk_case(Env *e, int R, int N, unsigned K) {
  float *x = malloc(sizeof(float) * R * N), *v = malloc(sizeof(float) * R * K);
  int32_t *ix = malloc(sizeof(int32_t) * R * K);
  char *taken = malloc((size_t)N);
  for (unsigned i = 0; i < (unsigned)(R * N); ++i)
    x[i] = (float)((i * 37) % 101);         /* ties: each value repeats every 101 columns */
  for (int r = 0; N > 4096 && r < R; ++r) { /* the largest spread over the segments, tied */
    float *row = x + (size_t)r * N;
    row[5000] = row[8500] = 300, row[100] = row[4095] = row[8999] = 250;
  }
  tl_kernels_tensor tx = tensor(e, TL_DTYPE_F32, 2, (int64_t[2]){R, N}, x);
  tl_kernels_tensor tv = tensor(e, TL_DTYPE_F32, 2, (int64_t[2]){R, K}, NULL);
  tl_kernels_tensor ti = tensor(e, TL_DTYPE_I32, 2, (int64_t[2]){R, K}, NULL);
  uint64_t bytes = tl_kernels_topk_workspace_bytes(R, N, K, TL_DTYPE_F32);
  EXPECT((bytes > 0) == (N > 4096), "topk workspace of %llu bytes for rows of %d",
         (unsigned long long)bytes, N);
  tl_buffer ws = NULL;
  tl_buffer_desc wd = {sizeof wd, bytes ? bytes : 1, TL_BUFFER_DEVICE_LOCAL};
  if (bytes)
    ok(tl_buffer_create(e->device, &wd, &ws), "workspace");
  ok(tl_kernels_topk(e->kernels, e->stream, &tx, K, &tv, &ti, ws), "topk");
  read(e, &tv, v, sizeof(float) * R * K);
  read(e, &ti, ix, sizeof(int32_t) * R * K);
  int bad = 0;
  for (unsigned r = 0; r < (unsigned)R; ++r) {
    memset(taken, 0, (size_t)N);
    for (unsigned i = 0; i < K; ++i) { /* reference: the lowest untaken column of the max */
      int best = -1;
      for (unsigned j = 0; j < (unsigned)N; ++j)
        if (!taken[j] && (best < 0 || x[r * N + j] > x[r * N + best]))
          best = (int)j;
      taken[best] = 1;
      bad += ix[r * K + i] != best || v[r * K + i] != x[r * N + best];
    }
  }
  EXPECT(bad == 0, "topk (rows of %d): %d of %d entries wrong", N, bad, R * K);
  if (ws)
    tl_buffer_release(ws);
  release(&tx), release(&tv), release(&ti);
  free(x), free(v), free(ix), free(taken);
}

static void test_topk(Env *e) {
  topk_case(e, 5, 300, 8);
  topk_case(e, 3, 9000, 8);
  topk_case(e, 2, 9000, 2);
}

/* Catches: the scale (max|x| / 127, 1 for a zero row), rounding other than to nearest even,
 * a row past 1024 columns, dequantize's per-row scale. */
static void test_quantize(Env *e) {
  enum { R = 3, N = 1100 };
  static float x[R * N], scale[R], out[R * N];
  static int8_t q[R * N];
  static double ref[R * N];
  for (unsigned i = 0; i < R * N; ++i)
    x[i] = 5 * value(i) * (float)(1 + i / N);
  for (unsigned j = 0; j < N; ++j)
    x[2 * N + j] = 0; /* a zero row */
  tl_kernels_tensor tx = tensor(e, TL_DTYPE_F32, 2, (int64_t[2]){R, N}, x);
  tl_kernels_tensor tq = tensor(e, TL_DTYPE_I8, 2, (int64_t[2]){R, N}, NULL);
  tl_kernels_tensor ts = tensor(e, TL_DTYPE_F32, 1, (int64_t[1]){R}, NULL);
  tl_kernels_tensor to = tensor(e, TL_DTYPE_F32, 2, (int64_t[2]){R, N}, NULL);
  ok(tl_kernels_quantize_int8(e->kernels, e->stream, &tx, &tq, &ts), "quantize_int8");
  ok(tl_kernels_dequantize_int8(e->kernels, e->stream, &tq, &ts, &to), "dequantize_int8");
  read(e, &tq, q, sizeof q);
  read(e, &ts, scale, sizeof scale);
  read(e, &to, out, sizeof out);
  int bad = 0;
  for (unsigned r = 0; r < R; ++r) {
    float m = 0;
    for (unsigned j = 0; j < N; ++j)
      m = fmaxf(m, fabsf(x[r * N + j]));
    float s = m > 0 ? m / 127.0f : 1.0f;
    bad += scale[r] != s;
    for (unsigned j = 0; j < N; ++j) {
      float v = fminf(fmaxf(x[r * N + j] * (1.0f / s), -127.0f), 127.0f); /* normal scales */
      bad += q[r * N + j] != (int8_t)nearbyintf(v);      /* the default rounding: to nearest even */
      ref[r * N + j] = (float)(q[r * N + j] * scale[r]); /* one f32 rounding, as the kernel */
    }
  }
  EXPECT(bad == 0, "quantize_int8: %d values or scales wrong", bad);
  EXPECT(maxabs(out, ref, R * N) == 0, "dequantize_int8: max error %g", maxabs(out, ref, R * N));
  release(&tx), release(&tq), release(&ts), release(&to);
}

static double dgelu(double v) {
  return 0.5 * (1 + erf(v / sqrt(2.0))) + v * exp(-v * v / 2) / sqrt(2 * 3.14159265358979323846);
}

/* Catches: gelu's derivative (the erf form), leaky_relu's slope for negative x, dy not
 * multiplied in, the ragged tile (37 x 100). */
static void test_activation_backward(Env *e) {
  enum { R = 37, C = 100 };
  static float x[R * C], dy[R * C], dx[R * C];
  static double ref[R * C];
  for (unsigned i = 0; i < R * C; ++i)
    x[i] = 3 * value(i), dy[i] = value(3 * i + 1);
  tl_kernels_tensor tx = tensor(e, TL_DTYPE_F32, 2, (int64_t[2]){R, C}, x);
  tl_kernels_tensor tg = tensor(e, TL_DTYPE_F32, 2, (int64_t[2]){R, C}, dy);
  tl_kernels_tensor to = tensor(e, TL_DTYPE_F32, 2, (int64_t[2]){R, C}, NULL);
  ok(tl_kernels_activation_backward(e->kernels, e->stream, TL_KERNELS_ACT_GELU, 0, &tx, &tg, &to),
     "gelu backward");
  read(e, &to, dx, sizeof dx);
  for (unsigned i = 0; i < R * C; ++i)
    ref[i] = dy[i] * dgelu(x[i]);
  double err = normwise(dx, ref, R * C);
  EXPECT(err <= 1e-6, "gelu backward: normwise error %g", err);
  ok(tl_kernels_activation_backward(e->kernels, e->stream, TL_KERNELS_ACT_LEAKY_RELU, 0.2f, &tx,
                                    &tg, &to),
     "leaky_relu backward");
  read(e, &to, dx, sizeof dx);
  for (unsigned i = 0; i < R * C; ++i)
    ref[i] = dy[i] * (x[i] >= 0 ? 1 : 0.2);
  err = normwise(dx, ref, R * C);
  EXPECT(err <= 1e-7, "leaky_relu backward: normwise error %g", err);
  release(&tx), release(&tg), release(&to);
}

/* Catches: sum(dy y) over chunks (1500 > 1024), log_softmax's exp(y) sum(dy) form. */
static void test_softmax_backward(Env *e) {
  enum { R = 3, C = 1500 };
  static float y[R * C], ly[R * C], dy[R * C], dx[R * C];
  static double ref[R * C];
  for (unsigned r = 0; r < R; ++r) {
    double s = 0;
    for (unsigned j = 0; j < C; ++j)
      s += exp(4 * value(r * C + j));
    for (unsigned j = 0; j < C; ++j) {
      y[r * C + j] = (float)(exp(4 * value(r * C + j)) / s);
      ly[r * C + j] = (float)(4 * value(r * C + j) - log(s));
      dy[r * C + j] = value(7 * (r * C + j) + 3);
    }
  }
  int64_t sh[2] = {R, C};
  tl_kernels_tensor ty = tensor(e, TL_DTYPE_F32, 2, sh, y),
                    tl2 = tensor(e, TL_DTYPE_F32, 2, sh, ly);
  tl_kernels_tensor tg = tensor(e, TL_DTYPE_F32, 2, sh, dy),
                    to = tensor(e, TL_DTYPE_F32, 2, sh, NULL);
  for (int log_ = 0; log_ < 2; ++log_) {
    ok(tl_kernels_softmax_backward(e->kernels, e->stream, log_, log_ ? &tl2 : &ty, &tg, &to),
       "softmax_backward");
    read(e, &to, dx, sizeof dx);
    for (unsigned r = 0; r < R; ++r) {
      double s = 0;
      for (unsigned j = 0; j < C; ++j)
        s += log_ ? dy[r * C + j] : (double)dy[r * C + j] * y[r * C + j];
      for (unsigned j = 0; j < C; ++j)
        ref[r * C + j] = log_ ? dy[r * C + j] - exp((double)ly[r * C + j]) * s
                              : y[r * C + j] * (dy[r * C + j] - s);
    }
    double err = normwise(dx, ref, R * C);
    EXPECT(err <= 1e-5, "%s backward: normwise error %g", log_ ? "log_softmax" : "softmax", err);
  }
  release(&ty), release(&tl2), release(&tg), release(&to);
}

/* Catches: dx's two mean corrections, the weight in g = dy w, the stats' layout, dweight's
 * xhat and dbias' sum over rows (70 rows > one 64-row block), rmsnorm's single correction. */
static void test_layernorm_backward(Env *e) {
  enum { R = 70, C = 50 };
  static float x[R * C], w[C], b[C], dy[R * C], st[R * 2], dx[R * C], dw[C], db[C], y[R * C];
  static double ref[R * C], rw[C], rb[C];
  for (unsigned i = 0; i < R * C; ++i)
    x[i] = 3 * value(i) + 1, dy[i] = value(5 * i + 3);
  for (unsigned j = 0; j < C; ++j)
    w[j] = 1 + value(j + 11) / 2, b[j] = value(j + 5);
  int64_t s[2] = {R, C}, sw[1] = {C}, ss[2] = {R, 2};
  tl_kernels_tensor tx = tensor(e, TL_DTYPE_F32, 2, s, x), tw = tensor(e, TL_DTYPE_F32, 1, sw, w);
  tl_kernels_tensor tb = tensor(e, TL_DTYPE_F32, 1, sw, b),
                    ty = tensor(e, TL_DTYPE_F32, 2, s, NULL);
  tl_kernels_tensor ts = tensor(e, TL_DTYPE_F32, 2, ss, NULL),
                    tg = tensor(e, TL_DTYPE_F32, 2, s, dy);
  tl_kernels_tensor tdx = tensor(e, TL_DTYPE_F32, 2, s, NULL);
  tl_kernels_tensor tdw = tensor(e, TL_DTYPE_F32, 1, sw, NULL),
                    tdb = tensor(e, TL_DTYPE_F32, 1, sw, NULL);
  for (int rms = 0; rms < 2; ++rms) {
    ok(tl_kernels_layernorm(e->kernels, e->stream, &tx, &tw, rms ? NULL : &tb, 1e-5f, &ty, &ts),
       "layernorm forward");
    ok(tl_kernels_layernorm_backward(e->kernels, e->stream, rms, &tx, &tw, &tg, &ts, &tdx, &tdw,
                                     &tdb),
       "layernorm_backward");
    read(e, &ts, st, sizeof st);
    read(e, &tdx, dx, sizeof dx);
    read(e, &tdw, dw, sizeof dw);
    read(e, &tdb, db, sizeof db);
    (void)y;
    memset(rw, 0, sizeof rw), memset(rb, 0, sizeof rb);
    for (unsigned r = 0; r < R; ++r) {
      double mu = 0, var = 0, sg = 0, sgx = 0;
      for (unsigned j = 0; j < C; ++j)
        mu += rms ? 0 : x[r * C + j] / (double)C;
      for (unsigned j = 0; j < C; ++j)
        var += (x[r * C + j] - mu) * (x[r * C + j] - mu) / C;
      double rstd = 1 / sqrt(var + 1e-5);
      for (unsigned j = 0; j < C; ++j) {
        double xh = (x[r * C + j] - mu) * rstd, g = (double)dy[r * C + j] * w[j];
        sg += g / C, sgx += g * xh / C;
        rw[j] += dy[r * C + j] * xh, rb[j] += dy[r * C + j];
      }
      for (unsigned j = 0; j < C; ++j) {
        double xh = (x[r * C + j] - mu) * rstd, g = (double)dy[r * C + j] * w[j];
        ref[r * C + j] = rstd * (g - (rms ? 0 : sg) - xh * sgx);
      }
    }
    const char *name = rms ? "rmsnorm" : "layernorm";
    double err = normwise(dx, ref, R * C);
    EXPECT(err <= 1e-5, "%s backward dx: normwise error %g", name, err);
    float fw[C], fb[C];
    memcpy(fw, dw, sizeof fw), memcpy(fb, db, sizeof fb);
    err = normwise(fw, rw, C);
    EXPECT(err <= 1e-5, "%s backward dweight: normwise error %g", name, err);
    err = normwise(fb, rb, C);
    EXPECT(err <= 1e-6, "%s backward dbias: normwise error %g", name, err);
  }
  release(&tx), release(&tw), release(&tb), release(&ty), release(&ts), release(&tg);
  release(&tdx), release(&tdw), release(&tdb);
}

/* Catches: dq, dk, dv against the analytic gradient of causal attention: the group sum of dk
 * and dv over query heads sharing a kv head (group 2, through the workspace), delta, the
 * causal mask in both kernels, a head dimension (24) below the specialization's 64; group 1
 * without causality: dk, dv written straight by the dkv kernel, every key attended. */
static void attention_backward_case(Env *e, unsigned G, int causal) {
  enum { BH = 4, S = 37, T = 45, D = 24 };
  static float q[BH * S * D], kv[2][BH * T * D], out[BH * S * D], lse[BH * S];
  static float dout[BH * S * D], dq[BH * S * D], dk[BH * T * D], dv[BH * T * D];
  static double rq[BH * S * D], rk[BH * T * D], rv[BH * T * D];
  for (unsigned i = 0; i < BH * S * D; ++i)
    q[i] = 2 * value(i), dout[i] = value(11 * i + 3);
  for (unsigned i = 0; i < BH / G * T * D; ++i)
    kv[0][i] = 2 * value(3 * i + 1), kv[1][i] = value(5 * i + 2);
  int64_t sq[3] = {BH, S, D}, sk[3] = {BH / G, T, D}, sl[2] = {BH, S};
  tl_kernels_tensor tq = tensor(e, TL_DTYPE_F32, 3, sq, q),
                    tk = tensor(e, TL_DTYPE_F32, 3, sk, kv[0]);
  tl_kernels_tensor tv = tensor(e, TL_DTYPE_F32, 3, sk, kv[1]),
                    to = tensor(e, TL_DTYPE_F32, 3, sq, NULL);
  tl_kernels_tensor tl_ = tensor(e, TL_DTYPE_F32, 2, sl, NULL),
                    td = tensor(e, TL_DTYPE_F32, 2, sl, NULL);
  tl_kernels_tensor tdo = tensor(e, TL_DTYPE_F32, 3, sq, dout),
                    tdq = tensor(e, TL_DTYPE_F32, 3, sq, NULL);
  tl_kernels_tensor tdk = tensor(e, TL_DTYPE_F32, 3, sk, NULL),
                    tdv = tensor(e, TL_DTYPE_F32, 3, sk, NULL);
  tl_buffer ws = NULL; /* group 1: dk, dv written directly, no workspace */
  tl_buffer_desc wd = {sizeof wd, (size_t)2 * BH * T * D * 4, TL_BUFFER_DEVICE_LOCAL};
  if (G > 1)
    ok(tl_buffer_create(e->device, &wd, &ws), "workspace");
  const float scale = 1.0f / sqrtf((float)D);
  tl_kernels_attention_desc fd = {sizeof fd, &tq, &tk, &tv, &to, &tl_, G, causal, scale};
  ok(tl_kernels_attention(e->kernels, e->stream, &fd), "attention");
  tl_kernels_attention_backward_desc bd = {sizeof bd, &tq,  &tk, &tv, &to, &tl_,   &tdo, &tdq,
                                           &tdk,      &tdv, &td, ws,  G,   causal, scale};
  ok(tl_kernels_attention_backward(e->kernels, e->stream, &bd), "attention_backward");
  read(e, &to, out, sizeof out);
  read(e, &tl_, lse, sizeof lse);
  read(e, &tdq, dq, sizeof dq);
  read(e, &tdk, dk, BH / G * T * D * 4);
  read(e, &tdv, dv, BH / G * T * D * 4);
  double lse_err = 0;
  memset(rk, 0, sizeof rk), memset(rv, 0, sizeof rv);
  for (unsigned h = 0; h < BH; ++h)
    for (unsigned i = 0; i < S; ++i) {
      const float *qi = q + (h * S + i) * D, *g = dout + (h * S + i) * D;
      const float *k = kv[0] + h / G * T * D, *v = kv[1] + h / G * T * D;
      double sc[T], p[T], dp[T], m = -INFINITY, sum = 0, delta = 0;
      unsigned n = causal && i + 1 < T ? i + 1 : T;
      for (unsigned j = 0; j < n; ++j) {
        sc[j] = 0;
        for (unsigned c = 0; c < D; ++c)
          sc[j] += (double)qi[c] * k[j * D + c];
        sc[j] *= scale;
        m = fmax(m, sc[j]);
      }
      for (unsigned j = 0; j < n; ++j)
        sum += exp(sc[j] - m);
      lse_err = fmax(lse_err, fabs(lse[h * S + i] - (m + log(sum))));
      for (unsigned j = 0; j < n; ++j) {
        p[j] = exp(sc[j] - m) / sum, dp[j] = 0;
        for (unsigned c = 0; c < D; ++c)
          dp[j] += (double)g[c] * v[j * D + c];
        delta += p[j] * dp[j];
      }
      for (unsigned c = 0; c < D; ++c) {
        double acc = 0;
        for (unsigned j = 0; j < n; ++j)
          acc += p[j] * (dp[j] - delta) * k[j * D + c];
        rq[(h * S + i) * D + c] = acc * scale;
      }
      for (unsigned j = 0; j < n; ++j)
        for (unsigned c = 0; c < D; ++c) {
          rk[(h / G * T + j) * D + c] += p[j] * (dp[j] - delta) * scale * qi[c];
          rv[(h / G * T + j) * D + c] += p[j] * g[c];
        }
    }
  EXPECT(lse_err <= 1e-5, "attention forward lse (group %u, causal %d): max error %g", G, causal,
         lse_err);
  double eq = normwise(dq, rq, BH * S * D), ek = normwise(dk, rk, BH / G * T * D),
         ev = normwise(dv, rv, BH / G * T * D);
  EXPECT(eq <= 1e-5 && ek <= 1e-5 && ev <= 1e-5,
         "attention_backward (group %u, causal %d): normwise errors dq %g, dk %g, dv %g", G, causal,
         eq, ek, ev);
  if (ws)
    tl_buffer_release(ws);
  release(&tq), release(&tk), release(&tv), release(&to), release(&tl_), release(&td);
  release(&tdo), release(&tdq), release(&tdk), release(&tdv);
}

static void test_attention_backward(Env *e) {
  attention_backward_case(e, 1, 0);
  attention_backward_case(e, 2, 1);
  attention_backward_case(e, 1, 1);
  attention_backward_case(e, 2, 0);
}

/* Catches: each new entry launching a bad argument instead of refusing it with its name (one
 * case an entry), and UNIMPLEMENTED for a combination no specialization covers. */
static void test_errors_v1_1(Env *e) {
  tl_kernels *k = &e->kernels;
  tl_stream st = e->stream;
  tl_kernels_tensor a = tensor(e, TL_DTYPE_F32, 2, (int64_t[2]){4, 6}, NULL);
  tl_kernels_tensor b = tensor(e, TL_DTYPE_F32, 2, (int64_t[2]){4, 5}, NULL);
  tl_kernels_tensor v4 = tensor(e, TL_DTYPE_F32, 1, (int64_t[1]){4}, NULL);
  tl_kernels_tensor i4 = tensor(e, TL_DTYPE_I32, 1, (int64_t[1]){4}, NULL);
  tl_kernels_tensor i24 = tensor(e, TL_DTYPE_I32, 2, (int64_t[2]){4, 2}, NULL);
  tl_kernels_tensor f24 = tensor(e, TL_DTYPE_F32, 2, (int64_t[2]){4, 2}, NULL);
  tl_kernels_tensor q8 = tensor(e, TL_DTYPE_I8, 2, (int64_t[2]){4, 6}, NULL);
  expect_error(tl_kernels_reduce(*k, st, TL_KERNELS_SUM, &a, 2, 0, &v4), TL_STATUS_INVALID_ARGUMENT,
               "'axis' 2 is out of range for rank 2");
  expect_error(tl_kernels_reduce(*k, st, TL_KERNELS_ARGMAX, &a, 1, 0, &v4),
               TL_STATUS_INVALID_ARGUMENT, "'out' is f32, expected i32");
  expect_error(tl_kernels_cumsum(*k, st, &a, 0, &b), TL_STATUS_INVALID_ARGUMENT,
               "'out' has shape (4, 5), x (4, 6)");
  expect_error(tl_kernels_transpose(*k, st, &a, &a), TL_STATUS_INVALID_ARGUMENT,
               "'out' has shape (4, 6), expected (6, 4)");
  const tl_kernels_tensor *in[2] = {&a, &i24};
  expect_error(tl_kernels_concat(*k, st, 2, in, 1, &a), TL_STATUS_INVALID_ARGUMENT,
               "'inputs[1]' is i32, expected f32");
  expect_error(tl_kernels_embedding(*k, st, &a, &v4, &a), TL_STATUS_INVALID_ARGUMENT,
               "'ids' is f32, expected i32");
  expect_error(tl_kernels_embedding_backward(*k, st, &a, &i4, &b), TL_STATUS_INVALID_ARGUMENT,
               "'dtable' has shape (4, 5), expected (4, 6)");
  tl_kernels_tensor i3 = tensor(e, TL_DTYPE_I32, 1, (int64_t[1]){3}, NULL);
  expect_error(tl_kernels_cross_entropy(*k, st, &a, &i3, -100, &v4), TL_STATUS_INVALID_ARGUMENT,
               "'target' has shape (3), expected (4)");
  expect_error(tl_kernels_cross_entropy_backward(*k, st, &a, &i4, &i4, -100, &a),
               TL_STATUS_INVALID_ARGUMENT, "'scale' is i32, expected f32");
  tl_kernels_tensor x3 = tensor(e, TL_DTYPE_F32, 3, (int64_t[3]){2, 4, 5}, NULL);
  expect_error(tl_kernels_rope(*k, st, &x3, &f24, &f24, &x3), TL_STATUS_INVALID_ARGUMENT,
               "'x' has an odd last dimension 5");
  expect_error(tl_kernels_gemv(*k, st, &a, &v4, NULL, 1, &v4), TL_STATUS_INVALID_ARGUMENT,
               "'x' has shape (4), expected (6)");
  tl_kernels_tensor x4 = tensor(e, TL_DTYPE_F32, 4, (int64_t[4]){1, 2, 6, 6}, NULL);
  tl_kernels_tensor w4 = tensor(e, TL_DTYPE_F32, 4, (int64_t[4]){3, 2, 5, 5}, NULL);
  tl_kernels_tensor b3 = tensor(e, TL_DTYPE_F32, 1, (int64_t[1]){3}, NULL);
  tl_kernels_tensor o4 = tensor(e, TL_DTYPE_F32, 4, (int64_t[4]){1, 3, 2, 2}, NULL);
  tl_kernels_conv2d_desc cd = {sizeof cd, &x4, &w4, &b3, &o4, 1, 0, TL_KERNELS_ACT_NONE};
  expect_error(tl_kernels_conv2d(*k, st, &cd), TL_STATUS_UNIMPLEMENTED,
               "no specialization for a 5x5 window");
  expect_error(tl_kernels_pool2d(*k, st, 0, 2, 2, &x4, &x4), TL_STATUS_INVALID_ARGUMENT,
               "'out' has shape (1, 2, 6, 6), expected x's with (OH, OW) = (3, 3)");
  expect_error(tl_kernels_topk(*k, st, &a, 3, &b, &i24, NULL), TL_STATUS_INVALID_ARGUMENT,
               "'values' has shape (4, 5), expected (4, 3)");
  tl_kernels_tensor f43 = tensor(e, TL_DTYPE_F32, 2, (int64_t[2]){4, 3}, NULL);
  tl_kernels_tensor i43 = tensor(e, TL_DTYPE_I32, 2, (int64_t[2]){4, 3}, NULL);
  expect_error(tl_kernels_topk(*k, st, &a, 3, &f43, &i43, NULL), TL_STATUS_UNIMPLEMENTED,
               "no specialization for 'k' 3");
  release(&f43), release(&i43);
  expect_error(tl_kernels_quantize_int8(*k, st, &a, &a, &v4), TL_STATUS_INVALID_ARGUMENT,
               "'q' is f32, expected i8");
  expect_error(tl_kernels_dequantize_int8(*k, st, &q8, &i4, &a), TL_STATUS_INVALID_ARGUMENT,
               "'scale' is i32, expected f32");
  expect_error(tl_kernels_activation_backward(*k, st, TL_KERNELS_ACT_RELU, 0, &a, &b, &a),
               TL_STATUS_INVALID_ARGUMENT, "'dy' has extent 5 in dimension 1");
  expect_error(tl_kernels_softmax_backward(*k, st, 0, &a, &a, &b), TL_STATUS_INVALID_ARGUMENT,
               "'dx' has shape (4, 5), expected (4, 6)");
  expect_error(tl_kernels_layernorm_backward(*k, st, 0, &a, &v4, &a, &f24, &a, NULL, NULL),
               TL_STATUS_INVALID_ARGUMENT, "'weight' has shape (4), expected (6)");
  tl_kernels_tensor l2 = tensor(e, TL_DTYPE_F32, 2, (int64_t[2]){2, 4}, NULL);
  tl_kernels_attention_backward_desc ad = {sizeof ad, &x3, &x3, &x3,  &x3, &l2, &x3, &x3,
                                           &x3,       &x3, &l2, NULL, 2,   0,   1.0f};
  tl_kernels_tensor xs = x3; /* (2, 4, 5) with its first two dimensions' strides swapped */
  xs.strides[0] = 5, xs.strides[1] = 10;
  expect_error(tl_kernels_reduce(*k, st, TL_KERNELS_SUM, &xs, 2, 0, &l2),
               TL_STATUS_INVALID_ARGUMENT, "'x': dimensions 0 to 1 do not merge");
  tl_kernels_tensor k1 = tensor(e, TL_DTYPE_F32, 3, (int64_t[3]){1, 4, 5}, NULL);
  ad.k = ad.v = ad.dk = ad.dv = &k1;
  expect_error(tl_kernels_attention_backward(*k, st, &ad), TL_STATUS_INVALID_ARGUMENT,
               "'workspace' is NULL with group 2");
  tl_kernels_tensor *all[] = {&a,  &b,  &v4, &i4, &i24, &f24, &q8, &i3,
                              &x3, &x4, &w4, &b3, &o4,  &l2,  &k1};
  for (unsigned i = 0; i < sizeof all / sizeof all[0]; ++i)
    release(all[i]);
}

/* ---- Since minor 2 ---- */

/* Attention with a (B, T) key mask, forward then backward, against double. B 3 entries of H 2
 * heads over one kv head each (group 2): entry 0 left padding (its first 25 of 45 keys masked:
 * no length can say it), entry 1 a pattern, entry 2 every key masked. Catches: masked keys
 * attended or given gradients (their dk, dv must be exactly 0), another entry's mask row applied
 * (the entry is bh / H, not the kv head bh / group), the causal mask dropped with a key mask (the
 * first 25 queries of entry 0 see no key when causal), NaN instead of zeros and lse -inf for the
 * queries with no key, a minor-1 desc (struct_size ending at key_mask) reading the field. */
static void test_attention_key_mask(Env *e, int causal) {
  enum { B = 3, H = 2, G = 2, BH = B * H, S = 37, T = 45, D = 24 };
  static float q[BH * S * D], kv[2][BH / G * T * D], out[BH * S * D], lse[BH * S];
  static float dout[BH * S * D], dq[BH * S * D], dk[BH / G * T * D], dv[BH / G * T * D];
  static double ro[BH * S * D], rq[BH * S * D], rk[BH / G * T * D], rv[BH / G * T * D];
  static int32_t mask[B * T];
  for (unsigned j = 0; j < T; ++j) {
    mask[j] = j >= 25;
    mask[T + j] = (j * 7 + 3) % 5 < 2 || j == 0;
    mask[2 * T + j] = 0;
  }
  for (unsigned i = 0; i < BH * S * D; ++i)
    q[i] = 2 * value(7 * i + 3), dout[i] = value(11 * i + 5);
  for (unsigned i = 0; i < BH / G * T * D; ++i)
    kv[0][i] = 2 * value(3 * i + 5), kv[1][i] = value(13 * i + 1);
  int64_t sq[3] = {BH, S, D}, sk[3] = {BH / G, T, D}, sl[2] = {BH, S}, sm[2] = {B, T};
  tl_kernels_tensor tq = tensor(e, TL_DTYPE_F32, 3, sq, q),
                    tk = tensor(e, TL_DTYPE_F32, 3, sk, kv[0]),
                    tv = tensor(e, TL_DTYPE_F32, 3, sk, kv[1]),
                    to = tensor(e, TL_DTYPE_F32, 3, sq, NULL),
                    tl_ = tensor(e, TL_DTYPE_F32, 2, sl, NULL),
                    tm = tensor(e, TL_DTYPE_I32, 2, sm, mask),
                    td = tensor(e, TL_DTYPE_F32, 2, sl, NULL),
                    tdo = tensor(e, TL_DTYPE_F32, 3, sq, dout),
                    tdq = tensor(e, TL_DTYPE_F32, 3, sq, NULL),
                    tdk = tensor(e, TL_DTYPE_F32, 3, sk, NULL),
                    tdv = tensor(e, TL_DTYPE_F32, 3, sk, NULL);
  tl_buffer ws = NULL;
  tl_buffer_desc wd = {sizeof wd, (size_t)2 * BH * T * D * 4, TL_BUFFER_DEVICE_LOCAL};
  ok(tl_buffer_create(e->device, &wd, &ws), "workspace");
  const float scale = 1.0f / sqrtf((float)D);
  tl_kernels_attention_desc d = {sizeof d, &tq,    &tk,   &tv,  &to, &tl_,
                                 G,        causal, scale, NULL, H,   &tm};
  ok(tl_kernels_attention(e->kernels, e->stream, &d), "attention with key_mask");
  tl_kernels_attention_backward_desc bd = {sizeof bd, &tq,    &tk,   &tv,  &to, &tl_,
                                           &tdo,      &tdq,   &tdk,  &tdv, &td, ws,
                                           G,         causal, scale, NULL, &tm, H};
  ok(tl_kernels_attention_backward(e->kernels, e->stream, &bd), "attention_backward with key_mask");
  read(e, &to, out, sizeof out);
  read(e, &tl_, lse, sizeof lse);
  read(e, &tdq, dq, sizeof dq);
  read(e, &tdk, dk, sizeof dk);
  read(e, &tdv, dv, sizeof dv);
  double lse_err = 0;
  int none_ok = 1;
  memset(rk, 0, sizeof rk), memset(rv, 0, sizeof rv);
  for (unsigned h = 0; h < BH; ++h)
    for (unsigned i = 0; i < S; ++i) {
      const float *qi = q + (h * S + i) * D, *g = dout + (h * S + i) * D;
      const float *k = kv[0] + h / G * T * D, *v = kv[1] + h / G * T * D;
      const int32_t *mk = mask + h / H * T;
      double sc[T], p[T], dp[T], m = -INFINITY, sum = 0, delta = 0;
      int vis[T], n = 0;
      for (unsigned j = 0; j < T; ++j) {
        vis[j] = mk[j] && (!causal || j <= i);
        n += vis[j];
        sc[j] = 0, p[j] = 0, dp[j] = 0;
        if (!vis[j])
          continue;
        for (unsigned c = 0; c < D; ++c)
          sc[j] += (double)qi[c] * k[j * D + c];
        sc[j] *= scale;
        m = fmax(m, sc[j]);
      }
      if (n == 0) {
        none_ok &= isinf(lse[h * S + i]) && lse[h * S + i] < 0;
        for (unsigned c = 0; c < D; ++c) {
          none_ok &= out[(h * S + i) * D + c] == 0.0f && dq[(h * S + i) * D + c] == 0.0f;
          ro[(h * S + i) * D + c] = rq[(h * S + i) * D + c] = 0;
        }
        continue;
      }
      for (unsigned j = 0; j < T; ++j)
        sum += vis[j] ? exp(sc[j] - m) : 0;
      lse_err = fmax(lse_err, fabs(lse[h * S + i] - (m + log(sum))));
      for (unsigned j = 0; j < T; ++j) {
        if (!vis[j])
          continue;
        p[j] = exp(sc[j] - m) / sum;
        for (unsigned c = 0; c < D; ++c)
          dp[j] += (double)g[c] * v[j * D + c];
        delta += p[j] * dp[j];
      }
      for (unsigned c = 0; c < D; ++c) {
        double o = 0, acc = 0;
        for (unsigned j = 0; j < T; ++j)
          o += p[j] * v[j * D + c], acc += p[j] * (dp[j] - delta) * k[j * D + c];
        ro[(h * S + i) * D + c] = o;
        rq[(h * S + i) * D + c] = acc * scale;
      }
      for (unsigned j = 0; j < T; ++j)
        for (unsigned c = 0; c < D; ++c) {
          rk[(h / G * T + j) * D + c] += p[j] * (dp[j] - delta) * scale * qi[c];
          rv[(h / G * T + j) * D + c] += p[j] * g[c];
        }
    }
  unsigned leaked = 0; /* dk, dv of masked keys: exactly 0 */
  for (unsigned hk = 0; hk < BH / G; ++hk)
    for (unsigned j = 0; j < T; ++j)
      for (unsigned c = 0; c < D && !mask[hk * G / H * T + j]; ++c)
        leaked += dk[(hk * T + j) * D + c] != 0.0f || dv[(hk * T + j) * D + c] != 0.0f;
  double eo = normwise(out, ro, BH * S * D), eq = normwise(dq, rq, BH * S * D),
         ek = normwise(dk, rk, BH / G * T * D), ev = normwise(dv, rv, BH / G * T * D);
  EXPECT(eo <= 1e-6, "attention key_mask (causal %d): normwise error %g", causal, eo);
  EXPECT(lse_err <= 1e-5, "attention key_mask (causal %d) lse: max error %g", causal, lse_err);
  EXPECT(none_ok, "attention key_mask (causal %d): no key must give zeros (out, dq), lse -inf",
         causal);
  EXPECT(eq <= 1e-5 && ek <= 1e-5 && ev <= 1e-5,
         "attention_backward key_mask (causal %d): normwise errors dq %g, dk %g, dv %g", causal, eq,
         ek, ev);
  EXPECT(leaked == 0, "attention_backward key_mask: %u gradients of masked keys not 0", leaked);
  if (!causal) {
    /* a minor-1 desc ends at key_mask: the field is not read (here: garbage, a q tensor) */
    tl_kernels_attention_desc old = d;
    old.struct_size = offsetof(tl_kernels_attention_desc, key_mask);
    old.key_mask = &tq;
    ok(tl_kernels_attention(e->kernels, e->stream, &old), "attention, a minor-1 desc");
    d.key_mask = &tl_; /* wrong dtype and shape: f32 (6, 37) */
    expect_error(tl_kernels_attention(e->kernels, e->stream, &d), TL_STATUS_INVALID_ARGUMENT,
                 "'key_mask' must be i32 of shape (3, 45) (batch, keys), got f32 (6, 37)");
    d.key_mask = &tm, d.key_lengths = &tm;
    expect_error(tl_kernels_attention(e->kernels, e->stream, &d), TL_STATUS_INVALID_ARGUMENT,
                 "give key_lengths or key_mask, not both");
    bd.heads = 4; /* 6 rows of q are not 4-head entries */
    expect_error(tl_kernels_attention_backward(e->kernels, e->stream, &bd),
                 TL_STATUS_INVALID_ARGUMENT, "'heads' 4 must divide");
  }
  tl_buffer_release(ws);
  tl_kernels_tensor *all[] = {&tq, &tk, &tv, &to, &tl_, &tm, &td, &tdo, &tdq, &tdk, &tdv};
  for (unsigned i = 0; i < sizeof all / sizeof all[0]; ++i)
    release(all[i]);
}

/* conv2d with groups and dilation (minor 2's desc fields) against double. Catches: a group's
 * channels read from another group (groups 2 of 4 channels, 6 outputs), the weight's C/groups
 * layout, the bias per group, the dilation (2: taps two pixels apart) dropped, depthwise (groups
 * = C = 4, one output per channel), a minor-1 desc (no groups) still working. */
static void conv_ref(const float *x, const float *w, const float *b, int n_, int c_, int h_, int w_,
                     int oc, int k, int st, int pad, int dil, int groups, int relu, double *ref,
                     int oh, int ow) {
  const int cg = c_ / groups, og = oc / groups;
  for (int n = 0; n < n_; ++n)
    for (int o = 0; o < oc; ++o)
      for (int i = 0; i < oh; ++i)
        for (int j = 0; j < ow; ++j) {
          double s = b ? b[o] : 0;
          for (int c = 0; c < cg; ++c)
            for (int p = 0; p < k; ++p)
              for (int r = 0; r < k; ++r) {
                int y = i * st + p * dil - pad, z = j * st + r * dil - pad;
                int ic = o / og * cg + c;
                if (y >= 0 && y < h_ && z >= 0 && z < w_)
                  s += (double)x[((n * c_ + ic) * h_ + y) * w_ + z] *
                       w[((o * cg + c) * k + p) * k + r];
              }
          ref[((n * oc + o) * oh + i) * ow + j] = relu && s < 0 ? 0 : s;
        }
}

static void test_conv2d_groups(Env *e) {
  enum { N = 2, C = 4, H = 9, W = 11 };
  static float x[N * C * H * W], w[6 * C * 9], b[6], out[N * 6 * H * W];
  static double ref[N * 6 * H * W];
  for (unsigned i = 0; i < N * C * H * W; ++i)
    x[i] = value(i);
  for (unsigned i = 0; i < 6 * C * 9; ++i)
    w[i] = value(5 * i + 3);
  for (unsigned i = 0; i < 6; ++i)
    b[i] = value(11 * i + 1) / 4;
  /* groups, oc, dilation, padding, bias, relu */
  const int cases[3][6] = {{2, 6, 2, 2, 1, 1}, {2, 6, 1, 1, 0, 0}, {4, 4, 1, 1, 1, 0}};
  tl_kernels_tensor tx = tensor(e, TL_DTYPE_F32, 4, (int64_t[4]){N, C, H, W}, x);
  for (int t = 0; t < 3; ++t) {
    const int g = cases[t][0], oc = cases[t][1], dil = cases[t][2], pad = cases[t][3];
    const int oh = H + 2 * pad - dil * 2, ow = W + 2 * pad - dil * 2;
    tl_kernels_tensor tw = tensor(e, TL_DTYPE_F32, 4, (int64_t[4]){oc, C / g, 3, 3}, w);
    tl_kernels_tensor tb = tensor(e, TL_DTYPE_F32, 1, (int64_t[1]){oc}, b);
    tl_kernels_tensor to = tensor(e, TL_DTYPE_F32, 4, (int64_t[4]){N, oc, oh, ow}, NULL);
    tl_kernels_conv2d_desc d = {
        sizeof d,      &tx,
        &tw,           cases[t][4] ? &tb : NULL,
        &to,           1,
        (uint32_t)pad, cases[t][5] ? TL_KERNELS_ACT_RELU : TL_KERNELS_ACT_NONE,
        (uint32_t)dil, (uint32_t)g};
    ok(tl_kernels_conv2d(e->kernels, e->stream, &d), "conv2d groups");
    read(e, &to, out, (size_t)N * oc * oh * ow * 4);
    conv_ref(x, w, cases[t][4] ? b : NULL, N, C, H, W, oc, 3, 1, pad, dil, g, cases[t][5], ref, oh,
             ow);
    double err = normwise(out, ref, (size_t)N * oc * oh * ow);
    EXPECT(err <= 1e-6, "conv2d groups %d dilation %d: normwise error %g", g, dil, err);
    if (t == 0) {
      d.groups = 3;
      expect_error(tl_kernels_conv2d(e->kernels, e->stream, &d), TL_STATUS_INVALID_ARGUMENT,
                   "'groups' 3 does not divide");
      d.groups = 2, d.dilation = 3, d.padding = 3;
      expect_error(tl_kernels_conv2d(e->kernels, e->stream, &d), TL_STATUS_UNIMPLEMENTED,
                   "dilation 3");
    }
    release(&tw), release(&tb), release(&to);
  }
  release(&tx);
}

/* fp8 codes: value of a code, and the nearest code to a float already in range (ties to the
 * even code), by search over all 256 (an encoder written independently of the kernels'). */
static double fp8_value(unsigned code, int e5) {
  const int sign = code & 0x80 ? -1 : 1;
  const int eb = e5 ? 5 : 4, mb = 7 - eb, bias = e5 ? 15 : 7;
  const int ex = (code >> mb) & ((1 << eb) - 1), m = code & ((1 << mb) - 1);
  if (e5 ? ex == 31 : (ex == 15 && m == 7))
    return NAN; /* e5m2: inf / NaN, never a quantized value after the clamp */
  if (ex == 0)
    return sign * ldexp((double)m / (1 << mb), 1 - bias);
  return sign * ldexp(1.0 + (double)m / (1 << mb), ex - bias);
}

static unsigned fp8_encode(float v, int e5) {
  unsigned best = 0;
  double bd = INFINITY;
  for (unsigned c = 0; c < 256; ++c) {
    double f = fp8_value(c, e5);
    if (isnan(f) || (f == 0 && c == 0x80))
      continue;
    double dist = fabs(f - v);
    if (dist < bd || (dist == bd && !(c & 1) && (best & 1)))
      best = c, bd = dist;
  }
  return best;
}

/* tl_kernels_quantize / dequantize per row (axis 0), column (1) and tensor (-1) in i8, f8e4m3 or
 * f8e5m2, against scales and codes computed here. Catches: the axis' scales taken along the
 * other axis (a row of zeros, a column of zeros, rows and columns of different magnitudes),
 * round-to-nearest-even (ties), the clamp, the per-tensor scale's two passes, dequantize's
 * scale per column; on a device without fp8 (npusim): the error naming the dtype and the
 * device. */
static void test_quantize_axes(Env *e, uint32_t qdt) {
  enum { R = 37, N = 300 };
  static float x[R * N], scale[N], out[R * N], want_s[N];
  static uint8_t q[R * N];
  static double ref[R * N];
  const int fp8 = qdt != TL_DTYPE_I8, e5 = qdt == TL_DTYPE_F8E5M2;
  const float qmax = qdt == TL_DTYPE_I8 ? 127.0f : e5 ? 57344.0f : 448.0f;
  tl_device_info info;
  memset(&info, 0, sizeof info);
  info.struct_size = sizeof info;
  ok(tl_device_query(e->device, &info), "tl_device_query");
  const int has = !fp8 || ((info.supported_dtypes >> qdt) & 1);
  if (strcmp(e->name, "cpu") == 0)
    EXPECT(has, "the cpu device must declare %s", tl_dtype_name((tl_dtype)qdt));
  for (unsigned i = 0; i < R * N; ++i)
    x[i] = 3 * value(i) * (float)(1 + (i / N) % 4) * (float)(1 + (i % N) % 3);
  for (unsigned j = 0; j < N; ++j)
    x[5 * N + j] = 0; /* a zero row */
  for (unsigned i = 0; i < R; ++i)
    x[i * N + 7] = 0; /* a zero column */
  tl_kernels_tensor tx = tensor(e, TL_DTYPE_F32, 2, (int64_t[2]){R, N}, x);
  tl_kernels_tensor tq = tensor(e, qdt, 2, (int64_t[2]){R, N}, NULL);
  tl_kernels_tensor to = tensor(e, TL_DTYPE_F32, 2, (int64_t[2]){R, N}, NULL);
  for (int axis = -1; axis <= 1; ++axis) {
    const int ns = axis == -1 ? 1 : axis == 0 ? R : N;
    tl_kernels_tensor ts = tensor(e, TL_DTYPE_F32, 1, (int64_t[1]){ns}, NULL);
    tl_status st = tl_kernels_quantize(e->kernels, e->stream, &tx, axis, &tq, &ts);
    if (!has) {
      expect_error(st, TL_STATUS_UNIMPLEMENTED, "does not support");
      expect_error(tl_kernels_dequantize(e->kernels, e->stream, &tq, &ts, axis, &to),
                   TL_STATUS_UNIMPLEMENTED, tl_dtype_name((tl_dtype)qdt));
      release(&ts);
      continue;
    }
    ok(st, "quantize");
    ok(tl_kernels_dequantize(e->kernels, e->stream, &tq, &ts, axis, &to), "dequantize");
    read(e, &tq, q, (size_t)R * N);
    read(e, &ts, scale, (size_t)ns * 4);
    read(e, &to, out, sizeof out);
    for (int s = 0; s < ns; ++s) {
      float m = 0;
      for (unsigned i = 0; i < R * N; ++i)
        if (axis == -1 || (axis == 0 ? (int)(i / N) : (int)(i % N)) == s)
          m = fmaxf(m, fabsf(x[i]));
      want_s[s] = m > 0 ? m / qmax : 1.0f;
    }
    unsigned bad_s = 0, bad_q = 0;
    for (int s = 0; s < ns; ++s)
      bad_s += scale[s] != want_s[s];
    for (unsigned i = 0; i < R * N; ++i) {
      const int s = axis == -1 ? 0 : axis == 0 ? (int)(i / N) : (int)(i % N);
      float v = fminf(fmaxf(x[i] * (1.0f / want_s[s]), -qmax), qmax); /* normal scales */
      double dq;
      if (fp8) {
        unsigned c = fp8_encode(v, e5);
        bad_q += q[i] != c && !(fp8_value(q[i], e5) == 0 && fp8_value(c, e5) == 0);
        dq = fp8_value(q[i], e5);
      } else {
        bad_q += (int8_t)q[i] != (int8_t)nearbyintf(v); /* to nearest even */
        dq = (int8_t)q[i];
      }
      ref[i] = (float)(dq * scale[s]); /* one f32 rounding, as the kernel */
    }
    EXPECT(bad_s == 0, "quantize %s axis %d: %u scales wrong", tl_dtype_name((tl_dtype)qdt), axis,
           bad_s);
    EXPECT(bad_q == 0, "quantize %s axis %d: %u values wrong", tl_dtype_name((tl_dtype)qdt), axis,
           bad_q);
    EXPECT(maxabs(out, ref, R * N) == 0, "dequantize %s axis %d: max error %g",
           tl_dtype_name((tl_dtype)qdt), axis, maxabs(out, ref, R * N));
    if (axis == 1) {
      expect_error(tl_kernels_quantize(e->kernels, e->stream, &tx, 2, &tq, &ts),
                   TL_STATUS_INVALID_ARGUMENT, "'axis' 2 is not 0");
      expect_error(tl_kernels_quantize(e->kernels, e->stream, &tx, 0, &tq, &ts),
                   TL_STATUS_INVALID_ARGUMENT, "'scale' has shape (300), expected (37)");
    }
    release(&ts);
  }
  release(&tx), release(&tq), release(&to);
}

/* tl_kernels_gemm_quantized: int8 (raw i32 sums, and scaled with bias and gelu into f32) and fp8
 * e4m3 (scaled into f32) against double. Catches: sums not exact (int8, K = 300), a scale applied
 * per the wrong axis (scale_a per row, scale_b per column), the epilogue's order, fp8 codes
 * misread; on npusim: fp8 refused naming the device. */
static void test_gemm_quantized(Env *e) {
  enum { M = 70, K = 300, N = 45 };
  static uint8_t a[M * K], b[K * N];
  static float sa[M], sb[N], bias[N], out[M * N];
  static int32_t raw[M * N];
  static double ref[M * N];
  for (unsigned i = 0; i < M; ++i)
    sa[i] = 0.01f * (float)(1 + i % 7);
  for (unsigned j = 0; j < N; ++j)
    sb[j] = 0.02f * (float)(1 + j % 5), bias[j] = value(3 * j + 1);
  tl_kernels_tensor tsa = tensor(e, TL_DTYPE_F32, 1, (int64_t[1]){M}, sa),
                    tsb = tensor(e, TL_DTYPE_F32, 1, (int64_t[1]){N}, sb),
                    tbias = tensor(e, TL_DTYPE_F32, 1, (int64_t[1]){N}, bias),
                    to = tensor(e, TL_DTYPE_F32, 2, (int64_t[2]){M, N}, NULL),
                    tr = tensor(e, TL_DTYPE_I32, 2, (int64_t[2]){M, N}, NULL);
  tl_device_info info;
  memset(&info, 0, sizeof info);
  info.struct_size = sizeof info;
  ok(tl_device_query(e->device, &info), "tl_device_query");
  for (int f8 = 0; f8 <= 1; ++f8) {
    const uint32_t dt = f8 ? TL_DTYPE_F8E4M3 : TL_DTYPE_I8;
    for (unsigned i = 0; i < M * K; ++i) /* e4m3: exponents 0..6 of 15 (below 2), no NaN code */
      a[i] = f8 ? (uint8_t)(((i * 2654435761u) >> 8) & 0xB7) : (uint8_t)(value(i) * 127);
    for (unsigned i = 0; i < K * N; ++i)
      b[i] = f8 ? (uint8_t)(((i * 40503u + 7) >> 3) & 0xB7) : (uint8_t)(value(5 * i + 2) * 127);
    tl_kernels_tensor ta = tensor(e, dt, 2, (int64_t[2]){M, K}, a),
                      tb = tensor(e, dt, 2, (int64_t[2]){K, N}, b);
    tl_kernels_gemm_quantized_desc d = {sizeof d, &ta,    &tb, &tsa,
                                        &tsb,     &tbias, &to, TL_KERNELS_ACT_GELU};
    tl_status st = tl_kernels_gemm_quantized(e->kernels, e->stream, &d);
    if (f8 && !((info.supported_dtypes >> dt) & 1)) {
      EXPECT(strcmp(e->name, "cpu") != 0, "the cpu device must declare f8e4m3");
      expect_error(st, TL_STATUS_UNIMPLEMENTED, "'a' is f8e4m3, which this device");
    } else {
      ok(st, "gemm_quantized");
      read(e, &to, out, sizeof out);
      for (unsigned i = 0; i < M; ++i)
        for (unsigned j = 0; j < N; ++j) {
          double acc = 0;
          for (unsigned k = 0; k < K; ++k)
            acc += f8 ? fp8_value(a[i * K + k], 0) * fp8_value(b[k * N + j], 0)
                      : (double)(int8_t)a[i * K + k] * (int8_t)b[k * N + j];
          ref[i * N + j] = gelu(acc * sa[i] * sb[j] + bias[j]);
        }
      double err = normwise(out, ref, M * N);
      EXPECT(err <= 1e-6, "gemm_quantized %s bias gelu: normwise error %g", f8 ? "f8e4m3" : "i8",
             err);
    }
    if (!f8) { /* raw int32 sums: exact */
      tl_kernels_gemm_quantized_desc r = {sizeof r, &ta,  &tb, NULL,
                                          NULL,     NULL, &tr, TL_KERNELS_ACT_NONE};
      ok(tl_kernels_gemm_quantized(e->kernels, e->stream, &r), "gemm_quantized raw");
      read(e, &tr, raw, sizeof raw);
      unsigned bad = 0;
      for (unsigned i = 0; i < M; ++i)
        for (unsigned j = 0; j < N; ++j) {
          int32_t acc = 0;
          for (unsigned k = 0; k < K; ++k)
            acc += (int32_t)(int8_t)a[i * K + k] * (int8_t)b[k * N + j];
          bad += raw[i * N + j] != acc;
        }
      EXPECT(bad == 0, "gemm_quantized raw int32: %u sums wrong", bad);
      d.activation = TL_KERNELS_ACT_RELU;
      expect_error(tl_kernels_gemm_quantized(e->kernels, e->stream, &d), TL_STATUS_UNIMPLEMENTED,
                   "'activation' 1 is not built");
      d.activation = TL_KERNELS_ACT_GELU, d.scale_b = &tbias, d.scale_a = &tsb;
      expect_error(tl_kernels_gemm_quantized(e->kernels, e->stream, &d), TL_STATUS_INVALID_ARGUMENT,
                   "'scale_a' has shape (45), expected (70)");
    }
    release(&ta), release(&tb);
  }
  release(&tsa), release(&tsb), release(&tbias), release(&to), release(&tr);
}

static void run_on(tl_runtime rt, const char *name) {
  Env e;
  e.name = name;
  if (tl_runtime_device_find(rt, name, &e.device)) {
    printf("kernels-capi: no %s device, skipped\n", name);
    return;
  }
  ok(tl_stream_create(e.device, &e.stream), "tl_stream_create");
  ok(tl_kernels_create(e.device, &e.kernels), "tl_kernels_create");
  int before = failures;
  test_add_bias(&e);
  test_softmax(&e);
  test_layernorm(&e);
  test_gemm(&e, TL_DTYPE_F32);
  test_gemm(&e, TL_DTYPE_BF16);
  test_attention(&e);
  test_attention_key_lengths(&e);
  test_gemm_split_k(&e);
  test_errors(&e);
  test_reduce(&e);
  test_cumsum(&e);
  test_transpose(&e);
  test_concat(&e);
  test_embedding(&e);
  test_embedding_bf16(&e);
  test_cross_entropy(&e);
  test_rope(&e);
  test_gemv(&e);
  test_conv2d(&e);
  test_pool2d(&e);
  test_topk(&e);
  test_quantize(&e);
  test_activation_backward(&e);
  test_softmax_backward(&e);
  test_layernorm_backward(&e);
  test_attention_backward(&e);
  test_errors_v1_1(&e);
  test_attention_key_mask(&e, 0);
  test_attention_key_mask(&e, 1);
  test_conv2d_groups(&e);
  test_quantize_axes(&e, TL_DTYPE_I8);
  test_quantize_axes(&e, TL_DTYPE_F8E4M3);
  test_quantize_axes(&e, TL_DTYPE_F8E5M2);
  test_gemm_quantized(&e);
  test_gemm_tiles(&e);
  test_empty_extents(&e);
  ok(tl_kernels_release(e.kernels), "tl_kernels_release");
  ok(tl_stream_release(e.stream), "tl_stream_release");
  printf("kernels-capi: %s: %s\n", name, failures == before ? "ok" : "FAILED");
}

int main(void) {
  EXPECT(tl_kernels_specialization_count() > 100, "only %u specializations built in",
         tl_kernels_specialization_count());
  EXPECT(tl_kernels_specialization_name(tl_kernels_specialization_count()) == NULL,
         "a name past the end");
  tl_runtime rt;
  tl_runtime_options o = {sizeof o, NULL, 1};
  ok(tl_runtime_create(&o, &rt), "tl_runtime_create");
  run_on(rt, "cpu");
  run_on(rt, "npusim");
  ok(tl_runtime_destroy(rt), "tl_runtime_destroy");
  return failures ? 1 : 0;
}
