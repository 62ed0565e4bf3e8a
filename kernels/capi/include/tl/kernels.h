/* TL kernels: the op library (tl.ops) for C and C++ callers, one entry per op over HAL buffers
 * and streams. SPDX-License-Identifier: Apache-2.0
 *
 * The ops are the specializations generated from tl.ops' TL sources (kernels/ops, built
 * into this library); each is compiled for the device's target on its first use and the
 * executable kept in the tl_kernels object. Conventions are the HAL's (tl/hal.h): a tl_status
 * (NULL: success) from every call, a message naming the function and the argument on error
 * (INVALID_ARGUMENT for shapes and dtypes, UNIMPLEMENTED for a combination no specialization
 * covers), `struct_size` first in every struct, out_* parameters zeroed first. Launches are queued
 * on the stream (asynchronous); buffers must live until the stream has run them.
 *
 * Tensors are views: a buffer, a byte offset, a dtype, a shape and strides in elements (a
 * stride of 0 broadcasts, e.g. a bias row over every row). Float ops take f32, f16 and bf16;
 * every tensor of one call has the same dtype unless the entry says otherwise; the ops compute
 * in f32 and round once to the output's dtype (python/tl/ops/README.md).
 */
#ifndef TL_KERNELS_H_
#define TL_KERNELS_H_
#include "tl/hal.h"
#ifdef __cplusplus
extern "C" {
#endif

#define TL_KERNELS_API_VERSION 1
#if defined(__GNUC__)
#define TL_KERNELS_EXPORT __attribute__((visibility("default")))
#else
#define TL_KERNELS_EXPORT
#endif

typedef struct tl_kernels_s *tl_kernels;

typedef struct tl_kernels_tensor {
  size_t struct_size;
  tl_buffer buffer;
  uint64_t offset_bytes;
  uint32_t dtype; /* tl_dtype */
  uint32_t rank;  /* 1 ..  TL_HAL_MAX_RANK */
  int64_t shape[TL_HAL_MAX_RANK];
  int64_t strides[TL_HAL_MAX_RANK]; /* in elements */
} tl_kernels_tensor;

/* The op library for `device` (which must outlive it). Nothing is compiled yet. */
TL_KERNELS_EXPORT tl_status tl_kernels_create(tl_device device, tl_kernels *out_kernels);
/* Releases the executables; the streams that ran them must have completed. */
TL_KERNELS_EXPORT tl_status tl_kernels_release(tl_kernels kernels);
/* The specializations built in ("add_f32", "gemm_gelu_bias_bf16", ...): count and names. */
TL_KERNELS_EXPORT uint32_t tl_kernels_specialization_count(void);
TL_KERNELS_EXPORT const char *tl_kernels_specialization_name(uint32_t index);

typedef enum tl_kernels_binary_op {
  TL_KERNELS_ADD = 0,
  TL_KERNELS_SUB = 1,
  TL_KERNELS_MUL = 2,
  TL_KERNELS_DIV = 3,
  TL_KERNELS_SWIGLU = 4, /* silu(x) * y */
  TL_KERNELS_GEGLU = 5,  /* gelu(x) * y (erf) */
} tl_kernels_binary_op;

typedef enum tl_kernels_activation {
  TL_KERNELS_ACT_NONE = 0,
  TL_KERNELS_ACT_RELU = 1,
  TL_KERNELS_ACT_GELU = 2, /* erf form */
  TL_KERNELS_ACT_GELU_TANH = 3,
  TL_KERNELS_ACT_SILU = 4,
  TL_KERNELS_ACT_SIGMOID = 5,
  TL_KERNELS_ACT_TANH = 6,
  TL_KERNELS_ACT_LEAKY_RELU = 7, /* slope: `alpha` */
} tl_kernels_activation;

/* out = x OP y, elementwise. x, y, out: rank 1 or 2 of out's shape (broadcast with stride 0). */
TL_KERNELS_EXPORT tl_status tl_kernels_binary(tl_kernels kernels, tl_stream stream,
                                              tl_kernels_binary_op op, const tl_kernels_tensor *x,
                                              const tl_kernels_tensor *y,
                                              const tl_kernels_tensor *out);
/* out = act(x), elementwise (any activation but NONE); rank 1 or 2. */
TL_KERNELS_EXPORT tl_status tl_kernels_activation_apply(tl_kernels kernels, tl_stream stream,
                                                        tl_kernels_activation act, float alpha,
                                                        const tl_kernels_tensor *x,
                                                        const tl_kernels_tensor *out);
/* Softmax (log_softmax when `log` is 1) of each row of x (rank 2: rows, n; any n). */
TL_KERNELS_EXPORT tl_status tl_kernels_softmax(tl_kernels kernels, tl_stream stream, int32_t log,
                                               const tl_kernels_tensor *x,
                                               const tl_kernels_tensor *out);
/* LayerNorm of each row of x (rows, n) with weight and bias (n); rmsnorm when bias is NULL (no
 * mean subtracted). stats: (rows, 2) f32, each row's mean (0 for rmsnorm) and 1/sigma. */
TL_KERNELS_EXPORT tl_status tl_kernels_layernorm(tl_kernels kernels, tl_stream stream,
                                                 const tl_kernels_tensor *x,
                                                 const tl_kernels_tensor *weight,
                                                 const tl_kernels_tensor *bias, float eps,
                                                 const tl_kernels_tensor *out,
                                                 const tl_kernels_tensor *stats);

typedef struct tl_kernels_gemm_desc {
  size_t struct_size;
  const tl_kernels_tensor *a;        /* (M, K) or (batch, M, K) */
  const tl_kernels_tensor *b;        /* (K, N) or (batch, K, N); rank 2 is shared by the batch */
  const tl_kernels_tensor *bias;     /* (N) or NULL */
  const tl_kernels_tensor *residual; /* the output's shape, or NULL */
  const tl_kernels_tensor *out;      /* (M, N) or (batch, M, N) */
  uint32_t activation;               /* NONE, RELU, GELU, GELU_TANH or SILU */
  float alpha;
  /* Split-K (optional; a desc whose struct_size ends before it has 0): K in split_k slices,
   * f32 partials in a workspace, summed in a fixed order (no atomics: reproducible), the epilogue
   * once. 0: automatic (small outputs with K >= 2048 on the tnpu and nvptx targets), 1: never.
   * The split path needs bias and residual both or neither (else it runs unsplit when automatic
   * and is UNIMPLEMENTED when asked for), and returns after the stream has run it (releasing the
   * workspace synchronizes the device's streams). */
  uint32_t split_k;
} tl_kernels_gemm_desc;
/* out = act(alpha a @ b + bias) + residual, f32 accumulation. */
TL_KERNELS_EXPORT tl_status tl_kernels_gemm(tl_kernels kernels, tl_stream stream,
                                            const tl_kernels_gemm_desc *desc);

typedef struct tl_kernels_attention_desc {
  size_t struct_size;
  const tl_kernels_tensor *q;   /* (B H, S, D), D <= 128 */
  const tl_kernels_tensor *k;   /* (B Hkv, T, D) */
  const tl_kernels_tensor *v;   /* (B Hkv, T, D) */
  const tl_kernels_tensor *out; /* (B H, S, D) */
  const tl_kernels_tensor *lse; /* (B H, S) f32, written: each query's log-sum-exp */
  uint32_t group;               /* H / Hkv: query heads per kv head (1: multi-head) */
  int32_t causal;               /* 1: key j attends to query i when j <= i */
  float scale;                  /* usually 1 / sqrt(D) */
  /* Padding masks (optional; a desc whose struct_size ends before them has none): */
  const tl_kernels_tensor *key_lengths; /* (B) i32 or NULL: each batch entry's number of keys,
                                           keys at or past it masked (above T: T; <= 0: none);
                                           a query left with no key gets zeros and lse -inf.
                                           With key_lengths D <= 64. */
  uint32_t heads;                       /* H: q's row bh belongs to batch entry bh / H */
} tl_kernels_attention_desc;
/* Attention forward, flash-style (online softmax over key blocks, f32). */
TL_KERNELS_EXPORT tl_status tl_kernels_attention(tl_kernels kernels, tl_stream stream,
                                                 const tl_kernels_attention_desc *desc);

#ifdef __cplusplus
} /* extern "C" */
#endif
#endif /* TL_KERNELS_H_ */
