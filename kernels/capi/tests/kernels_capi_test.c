/* tl/kernels.h from C: ops on the cpu device (and npusim where built) against double-precision
 * references, and the errors that name the argument. Exits 1 on the first failure.
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

/* Catches: the online max/sum across chunks (5000 > 1024 columns), masked lanes summed. */
static void test_softmax(Env *e) {
  enum { R = 3, C = 5000 };
  static float x[R * C], out[R * C];
  static double ref[R * C];
  for (unsigned i = 0; i < R * C; ++i)
    x[i] = 10 * value(i);
  int64_t s[2] = {R, C};
  tl_kernels_tensor tx = tensor(e, TL_DTYPE_F32, 2, s, x), to = tensor(e, TL_DTYPE_F32, 2, s, NULL);
  ok(tl_kernels_softmax(e->kernels, e->stream, 0, &tx, &to), "softmax");
  read(e, &to, out, sizeof out);
  for (unsigned r = 0; r < R; ++r) {
    double m = -INFINITY, sum = 0;
    for (unsigned j = 0; j < C; ++j)
      m = fmax(m, x[r * C + j]);
    for (unsigned j = 0; j < C; ++j)
      sum += exp(x[r * C + j] - m);
    for (unsigned j = 0; j < C; ++j)
      ref[r * C + j] = exp(x[r * C + j] - m) / sum;
  }
  double err = normwise(out, ref, R * C);
  /* the kit's softmax bound: max(1e-6, n u) = 3e-4 for n = 5000; far tighter in practice */
  EXPECT(err <= 3e-6, "softmax: normwise error %g", err);
  tl_buffer_release(tx.buffer), tl_buffer_release(to.buffer);
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
        double acc = 0;
        for (unsigned k = 0; k < K; ++k)
          acc += (double)a[(z * M + i) * K + k] * b[k * N + j];
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
static void test_gemm_split_k(Env *e) {
  enum { B = 2, M = 3, K = 5000, N = 70 };
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
    unsigned bad = 0;
    for (unsigned z = 0; z < B; ++z)
      for (unsigned i = 0; i < M; ++i)
        for (unsigned j = 0; j < N; ++j) {
          double acc = 0;
          for (unsigned k = 0; k < K; ++k)
            acc += (double)a[(z * M + i) * K + k] * b[k * N + j];
          double want = fmax(0.5 * acc + bias[j], 0) + res[(z * M + i) * N + j];
          bad += out[(z * M + i) * N + j] != (float)want;
        }
    EXPECT(bad == 0, "gemm split_k %u: %u of %d elements not exact", split, bad, B * M * N);
  }
  tl_kernels_gemm_desc d = {sizeof d, &ta, &tb, &tbias, NULL, &to, TL_KERNELS_ACT_NONE, 1.0f, 3};
  expect_error(tl_kernels_gemm(e->kernels, e->stream, &d), TL_STATUS_UNIMPLEMENTED,
               "needs bias and residual both or neither");
  tl_buffer_release(ta.buffer), tl_buffer_release(tb.buffer), tl_buffer_release(tbias.buffer);
  tl_buffer_release(tres.buffer), tl_buffer_release(to.buffer);
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

static void run_on(tl_runtime rt, const char *name) {
  Env e;
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
