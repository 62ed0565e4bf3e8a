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

/* As the HAL's: a new major breaks callers (an entry or a struct field removed or changed); a
 * new minor only adds (entries, enum values, fields at a struct's end). TL_KERNELS_API_VERSION
 * is the major (1 since the first release). Minor 1: every op of tl.ops. Minor 2: attention's
 * boolean key mask (forward and backward; the backward desc's key lengths too), conv2d's
 * dilation and groups, split-K with a bias or a residual alone, quantize / dequantize to int8
 * or fp8 per row, column or tensor, and the int8 / fp8 GEMM. */
#define TL_KERNELS_API_VERSION_MAJOR 1
#define TL_KERNELS_API_VERSION_MINOR 2
#define TL_KERNELS_API_VERSION TL_KERNELS_API_VERSION_MAJOR
#if defined(__GNUC__)
#define TL_KERNELS_EXPORT __attribute__((visibility("default")))
#else
#define TL_KERNELS_EXPORT
#endif

typedef struct tl_kernels_s *tl_kernels;

/* Outputs are written once an element: an output whose elements share memory (a stride of 0,
 * interleaving strides) is INVALID_ARGUMENT where an entry checks it (binary, activations,
 * transpose). An output may be an input where an entry says so (elementwise ops, softmax,
 * cumsum, rope: in place); elsewhere outputs and inputs must not overlap. */

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
   * The split path takes any epilogue (before minor 2 bias and residual both or neither: a bias
   * alone now reduces with a zero residual, a residual alone with a zero bias, both f32-exact
   * additions of 0), and returns after the stream has run it (releasing the workspace
   * synchronizes the device's streams). */
  uint32_t split_k;
} tl_kernels_gemm_desc;
/* out = act(alpha a @ b + bias) + residual, f32 accumulation. K = 0 gives the epilogue of
 * zeros, act(bias) + residual, as tl.ops.gemm (a @ b over no column is 0, as numpy's and
 * torch's); it returns after the stream has run it (its zeros' workspace is released). */
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
  /* Since minor 2 (a desc whose struct_size ends before it has none): */
  const tl_kernels_tensor *key_mask; /* (B, T) i32 or NULL: nonzero where key j may be attended
                                        by every query of batch entry b (any pattern: left
                                        padding too; torch's key_padding_mask is the inverse,
                                        True = ignore); B from `heads` as key_lengths'. Not with
                                        key_lengths; D <= 64. A query left with no key gets
                                        zeros and lse -inf. */
} tl_kernels_attention_desc;
/* Attention forward, flash-style (online softmax over key blocks, f32). */
TL_KERNELS_EXPORT tl_status tl_kernels_attention(tl_kernels kernels, tl_stream stream,
                                                 const tl_kernels_attention_desc *desc);

/* ---- Since minor 1: every op of tl.ops (python/tl/ops/README.md). ---- */

typedef enum tl_kernels_reduction {
  TL_KERNELS_SUM = 0,
  TL_KERNELS_MEAN = 1,
  TL_KERNELS_MAX = 2,
  TL_KERNELS_MIN = 3,
  TL_KERNELS_ARGMAX = 4, /* out is i32: the first index of the maximum */
  TL_KERNELS_VAR = 5,    /* sum((x - mean)^2) / max(n - correction, 0) */
} tl_kernels_reduction;

/* out = OP of x along `axis` (negative: from the end); out has x's shape without that axis
 * (rank 0 is given as rank 1 of extent 1). The dimensions before the axis, and those after it,
 * must each merge into one (strides of a dense block, as a reshape without copy). Along an axis
 * of extent 0, as numpy and torch: sum 0, mean and var NaN, max, min and argmax refused
 * (TL_STATUS_INVALID_ARGUMENT). correction: var's only. */
TL_KERNELS_EXPORT tl_status tl_kernels_reduce(tl_kernels kernels, tl_stream stream,
                                              tl_kernels_reduction op, const tl_kernels_tensor *x,
                                              int32_t axis, float correction,
                                              const tl_kernels_tensor *out);
/* out = running sum of x along `axis` (f32 accumulation); out has x's shape; the dimensions
 * around the axis merge as tl_kernels_reduce's. */
TL_KERNELS_EXPORT tl_status tl_kernels_cumsum(tl_kernels kernels, tl_stream stream,
                                              const tl_kernels_tensor *x, int32_t axis,
                                              const tl_kernels_tensor *out);
/* out[z] = x[z]^T: x (rows, cols) or (batch, rows, cols), out (cols, rows) or (batch, ...);
 * out may not overlap x (INVALID_ARGUMENT: programs read blocks that others have written). */
TL_KERNELS_EXPORT tl_status tl_kernels_transpose(tl_kernels kernels, tl_stream stream,
                                                 const tl_kernels_tensor *x,
                                                 const tl_kernels_tensor *out);
/* out = the `count` inputs joined along `axis` (f32, f16, bf16 or i32; the same shape outside
 * the axis, out's extent along it their sum). Dimensions around the axis merge as in reduce. */
TL_KERNELS_EXPORT tl_status tl_kernels_concat(tl_kernels kernels, tl_stream stream, uint32_t count,
                                              const tl_kernels_tensor *const *inputs, int32_t axis,
                                              const tl_kernels_tensor *out);
/* out (n, D) = table (V, D)[ids], ids i32 (n). Every id must be in [0, V): the ids live on the
 * device, so they are not checked. */
TL_KERNELS_EXPORT tl_status tl_kernels_embedding(tl_kernels kernels, tl_stream stream,
                                                 const tl_kernels_tensor *table,
                                                 const tl_kernels_tensor *ids,
                                                 const tl_kernels_tensor *out);
/* dtable (V, D) f32, dense (row-major): zeroed, then dtable[ids[i]] += dout[i] for dout (n, D)
 * (f32 atomics: equal ids sum in any order). ids as tl_kernels_embedding's. */
TL_KERNELS_EXPORT tl_status tl_kernels_embedding_backward(tl_kernels kernels, tl_stream stream,
                                                          const tl_kernels_tensor *dout,
                                                          const tl_kernels_tensor *ids,
                                                          const tl_kernels_tensor *dtable);
/* loss (N) f32 = logsumexp(logits[i]) - logits[i, target[i]] for logits (N, C), target i32
 * (N); 0 where target is ignore_index (a mean over the other rows is the caller's: reduce). */
TL_KERNELS_EXPORT tl_status tl_kernels_cross_entropy(tl_kernels kernels, tl_stream stream,
                                                     const tl_kernels_tensor *logits,
                                                     const tl_kernels_tensor *target,
                                                     int32_t ignore_index,
                                                     const tl_kernels_tensor *loss);
/* dlogits = (softmax(logits[i]) - onehot(target[i])) * scale[i], 0 for ignored rows; scale
 * (N) f32 is each row's loss gradient (grad / valid rows for a mean, grad for a sum). */
TL_KERNELS_EXPORT tl_status tl_kernels_cross_entropy_backward(tl_kernels kernels, tl_stream stream,
                                                              const tl_kernels_tensor *logits,
                                                              const tl_kernels_tensor *target,
                                                              const tl_kernels_tensor *scale,
                                                              int32_t ignore_index,
                                                              const tl_kernels_tensor *dlogits);
/* Rotate-half RoPE: x, out (S, D) or (rows, S, D), D even; cos, sin (S, D/2):
 * out[:D/2] = x1 cos - x2 sin, out[D/2:] = x2 cos + x1 sin. */
TL_KERNELS_EXPORT tl_status tl_kernels_rope(tl_kernels kernels, tl_stream stream,
                                            const tl_kernels_tensor *x,
                                            const tl_kernels_tensor *cos,
                                            const tl_kernels_tensor *sin,
                                            const tl_kernels_tensor *out);
/* out (M) = alpha a (M, K) @ x (K) + bias (M, or NULL). */
TL_KERNELS_EXPORT tl_status tl_kernels_gemv(tl_kernels kernels, tl_stream stream,
                                            const tl_kernels_tensor *a, const tl_kernels_tensor *x,
                                            const tl_kernels_tensor *bias, float alpha,
                                            const tl_kernels_tensor *out);

typedef struct tl_kernels_conv2d_desc {
  size_t struct_size;
  const tl_kernels_tensor *x;      /* (N, C, H, W); H and W must merge (W's stride dense) */
  const tl_kernels_tensor *weight; /* (OC, C, KH, KW); C, KH, KW must merge */
  const tl_kernels_tensor *bias;   /* (OC) or NULL */
  const tl_kernels_tensor *out;    /* (N, OC, OH, OW); OH and OW must merge */
  uint32_t stride, padding;        /* the same along H and W */
  uint32_t activation;             /* NONE or RELU */
  /* Since minor 2 (read only when struct_size covers both; else 1 and 1): */
  uint32_t dilation; /* the same along H and W; 0 is taken as 1 */
  uint32_t groups;   /* C and OC multiples of it, weight (OC, C/groups, KH, KW) as torch's
                        (groups = C: depthwise); 0 is taken as 1. x's N and C dimensions must
                        merge (as must out's N and OC): a group is a slice of the channels. */
} tl_kernels_conv2d_desc;
/* conv2d (cross-correlation, as torch's) as an implicit GEMM, zero padding, f32 accumulation,
 * any groups. Built: 3x3 stride 1 padding 1, 3x3 stride 2 padding 1, 1x1 stride 1 padding 0
 * (dilation 1), 3x3 stride 1 padding 2 dilation 2. */
TL_KERNELS_EXPORT tl_status tl_kernels_conv2d(tl_kernels kernels, tl_stream stream,
                                              const tl_kernels_conv2d_desc *desc);
/* Max (avg when `avg` is 1) pooling without padding: x (N, C, H, W) or (N C, H, W), out the
 * same rank with OH = (H - k) / stride + 1. Built: k 2 stride 2, k 3 stride 2, k 3 stride 1. */
TL_KERNELS_EXPORT tl_status tl_kernels_pool2d(tl_kernels kernels, tl_stream stream, int32_t avg,
                                              uint32_t kernel_size, uint32_t stride,
                                              const tl_kernels_tensor *x,
                                              const tl_kernels_tensor *out);
/* The k largest of each row of x (rows, n), largest first, ties to the lowest index (NaN above
 * every number): values (rows, k) in x's dtype, indices (rows, k) i32. Built: k 2 and 8. Rows
 * over 4096 go in rounds, as tl.ops.topk: each 4096-wide segment's k largest, then the k largest
 * of those candidates, until one segment holds them; the candidates live in `workspace`, of at
 * least tl_kernels_topk_workspace_bytes (0, and workspace may be NULL, for rows up to 4096). */
TL_KERNELS_EXPORT tl_status tl_kernels_topk(tl_kernels kernels, tl_stream stream,
                                            const tl_kernels_tensor *x, uint32_t k,
                                            const tl_kernels_tensor *values,
                                            const tl_kernels_tensor *indices, tl_buffer workspace);
TL_KERNELS_EXPORT uint64_t tl_kernels_topk_workspace_bytes(int64_t rows, int64_t n, uint32_t k,
                                                           uint32_t dtype);
/* Per row of x (rows, n): scale (rows) f32 = max|x| / 127 (1 for a zero row), q (rows, n) i8 =
 * round-to-nearest-even(x * (1 / scale)), the reciprocal rounded to f32 (as
 * torch.quantize_per_channel). */
TL_KERNELS_EXPORT tl_status tl_kernels_quantize_int8(tl_kernels kernels, tl_stream stream,
                                                     const tl_kernels_tensor *x,
                                                     const tl_kernels_tensor *q,
                                                     const tl_kernels_tensor *scale);
/* out (rows, n) (f32, f16 or bf16) = q (rows, n) i8 * scale (rows) f32. */
TL_KERNELS_EXPORT tl_status tl_kernels_dequantize_int8(tl_kernels kernels, tl_stream stream,
                                                       const tl_kernels_tensor *q,
                                                       const tl_kernels_tensor *scale,
                                                       const tl_kernels_tensor *out);
/* dx = dy * act'(x), elementwise (any activation but NONE); x, dy, dx rank 1 or 2. */
TL_KERNELS_EXPORT tl_status tl_kernels_activation_backward(tl_kernels kernels, tl_stream stream,
                                                           tl_kernels_activation act, float alpha,
                                                           const tl_kernels_tensor *x,
                                                           const tl_kernels_tensor *dy,
                                                           const tl_kernels_tensor *dx);
/* dx of softmax (log_softmax when `log` is 1) from its output y and dy, all (rows, n). */
TL_KERNELS_EXPORT tl_status tl_kernels_softmax_backward(tl_kernels kernels, tl_stream stream,
                                                        int32_t log, const tl_kernels_tensor *y,
                                                        const tl_kernels_tensor *dy,
                                                        const tl_kernels_tensor *dx);
/* dx (rows, n) of layernorm (rmsnorm when `rms` is 1) from x, weight (n), dy and the forward's
 * stats (rows, 2) f32; dweight and dbias (n) f32 when not NULL (both or neither; rmsnorm's
 * dbias is the sum of dy, which rmsnorm does not use). */
TL_KERNELS_EXPORT tl_status tl_kernels_layernorm_backward(
    tl_kernels kernels, tl_stream stream, int32_t rms, const tl_kernels_tensor *x,
    const tl_kernels_tensor *weight, const tl_kernels_tensor *dy, const tl_kernels_tensor *stats,
    const tl_kernels_tensor *dx, const tl_kernels_tensor *dweight, const tl_kernels_tensor *dbias);

typedef struct tl_kernels_attention_backward_desc {
  size_t struct_size;
  const tl_kernels_tensor *q, *k, *v; /* as tl_kernels_attention_desc's */
  const tl_kernels_tensor *out;       /* the forward's output (B H, S, D) */
  const tl_kernels_tensor *lse;       /* the forward's lse (B H, S) f32 */
  const tl_kernels_tensor *dout;      /* (B H, S, D) */
  const tl_kernels_tensor *dq;        /* (B H, S, D), written */
  const tl_kernels_tensor *dk, *dv;   /* (B Hkv, T, D) f32, written: sums over each group */
  const tl_kernels_tensor *delta;     /* (B H, S) f32 scratch: rowsum(out * dout) */
  /* group > 1: f32 scratch of 2 (B H) T D elements for the per-query-head dk, dv (their sum
   * over each group is written to dk, dv); NULL when group is 1. */
  tl_buffer workspace;
  uint32_t group;
  int32_t causal;
  float scale;
  /* Since minor 2 (a desc whose struct_size ends before them has none): the forward's padding
   * masks, as tl_kernels_attention_desc's (masked keys and queries with no key get zero
   * gradients; D <= 64 with either). */
  const tl_kernels_tensor *key_lengths; /* (B) i32 or NULL */
  const tl_kernels_tensor *key_mask;    /* (B, T) i32 or NULL; not with key_lengths */
  uint32_t heads;                       /* H, with either */
} tl_kernels_attention_backward_desc;
/* dq, dk, dv of tl_kernels_attention: delta, dq, per-query-head dk/dv, then their group sums. */
TL_KERNELS_EXPORT tl_status tl_kernels_attention_backward(
    tl_kernels kernels, tl_stream stream, const tl_kernels_attention_backward_desc *desc);

/* ---- Since minor 2. ---- */

/* Scales of x (rows, n) (f32, f16 or bf16) along `axis` and x quantized by them into q (rows,
 * n), whose dtype is the format: i8 (qmax 127), f8e4m3 (448) or f8e5m2 (57344). axis 0: one
 * scale per row, scale (rows); 1: per column, scale (n) (x and q read as transposed, strided
 * views); -1: one for the tensor, scale (1) (amax per row into an f32 workspace the entry
 * allocates, then of those: the call returns after the stream has run it, as split-K's).
 * scale = max|x| / qmax in f32 (1 where it is 0), q = round-to-nearest-even(clamp(x * (1 /
 * scale), -qmax, qmax)), the reciprocal rounded to f32 (tl.ops.quantize_int8 / quantize_fp8's
 * arithmetic). fp8 needs a device that
 * declares it (HAL supported_dtypes; npusim does not: UNIMPLEMENTED naming the device). */
TL_KERNELS_EXPORT tl_status tl_kernels_quantize(tl_kernels kernels, tl_stream stream,
                                                const tl_kernels_tensor *x, int32_t axis,
                                                const tl_kernels_tensor *q,
                                                const tl_kernels_tensor *scale);
/* out (rows, n) (f32, f16 or bf16) = q (rows, n) (i8, f8e4m3 or f8e5m2) * scale along `axis`
 * (as tl_kernels_quantize's: 0 rows, 1 columns, -1 the tensor), in f32. */
TL_KERNELS_EXPORT tl_status tl_kernels_dequantize(tl_kernels kernels, tl_stream stream,
                                                  const tl_kernels_tensor *q,
                                                  const tl_kernels_tensor *scale, int32_t axis,
                                                  const tl_kernels_tensor *out);

typedef struct tl_kernels_gemm_quantized_desc {
  size_t struct_size;
  const tl_kernels_tensor *a;       /* (M, K) i8, f8e4m3 or f8e5m2 */
  const tl_kernels_tensor *b;       /* (K, N), a's dtype */
  const tl_kernels_tensor *scale_a; /* (M) f32: a's per-row scales (NULL: raw i32 sums) */
  const tl_kernels_tensor *scale_b; /* (N) f32: b's per-column scales (axis 1) */
  const tl_kernels_tensor *bias;    /* (N) in out's dtype, or NULL */
  const tl_kernels_tensor *out;     /* (M, N) f32, f16 or bf16; i32 for raw int8 sums */
  uint32_t activation;              /* NONE, or GELU with a bias */
} tl_kernels_gemm_quantized_desc;
/* out = act(a @ b * scale_a[row] * scale_b[col] + bias): int8 products summed exactly in i32
 * (K <= 131071), fp8 in f32; the epilogue in f32, rounded once. Built: i8 and f8e4m3 without
 * bias (NONE) or with bias and GELU, into f32, f16 or bf16; f8e5m2 without bias into f32; i8
 * raw (scales, bias NULL, out i32). fp8 as tl_kernels_quantize's (UNIMPLEMENTED on npusim). */
TL_KERNELS_EXPORT tl_status tl_kernels_gemm_quantized(tl_kernels kernels, tl_stream stream,
                                                      const tl_kernels_gemm_quantized_desc *desc);

#ifdef __cplusplus
} /* extern "C" */
#endif
#endif /* TL_KERNELS_H_ */
