// The op library's C API: the generated specializations, compiled for the device's target on
// first use, launched over HAL buffers with the grid each one documents.
// SPDX-License-Identifier: Apache-2.0
#include "tl/kernels.h"

#include "embedded.h"
#include "tl/compiler.h"

#include <algorithm>
#include <cstdarg>
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <vector>

struct tl_kernels_s {
  tl_device device = nullptr;
  std::string target, options;
  std::mutex mu;
  std::map<std::string, tl_executable> cache;
};

namespace {

using tl::kernels::kEmbeddedOpCount;
using tl::kernels::kEmbeddedOps;

tl_status fail(tl_status_code code, const char *fmt, ...) {
  char buf[512];
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  return tl_status_make(code, buf);
}

// A tensor as the kernels see it: rank <= 3 after the entry's reshaping.
struct View {
  tl_buffer buffer = nullptr;
  uint64_t offset = 0;
  uint32_t dtype = 0;
  uint32_t rank = 0;
  int64_t shape[3] = {0, 0, 0};
  int64_t strides[3] = {0, 0, 0};
};

tl_status check(const char *fn, const char *arg, const tl_kernels_tensor *t, uint32_t min_rank,
                uint32_t max_rank) {
  if (!t)
    return fail(TL_STATUS_INVALID_ARGUMENT, "%s: '%s' is NULL", fn, arg);
  if (t->struct_size < sizeof(tl_kernels_tensor))
    return fail(TL_STATUS_INVALID_ARGUMENT, "%s: '%s': struct_size %zu is too small", fn, arg,
                t->struct_size);
  if (!t->buffer)
    return fail(TL_STATUS_INVALID_ARGUMENT, "%s: '%s' has no buffer", fn, arg);
  if (t->rank < min_rank || t->rank > max_rank)
    return fail(TL_STATUS_INVALID_ARGUMENT, "%s: '%s' has rank %u, expected %u to %u", fn, arg,
                t->rank, min_rank, max_rank);
  for (uint32_t d = 0; d < t->rank; ++d)
    if (t->shape[d] < 0)
      return fail(TL_STATUS_INVALID_ARGUMENT, "%s: '%s' has a negative extent", fn, arg);
  return nullptr;
}

// `t`'s buffer, offset and dtype as a view of `rank` dimensions, its extents still to set.
View over(const tl_kernels_tensor *t, uint32_t rank) {
  View v;
  v.buffer = t->buffer;
  v.offset = t->offset_bytes;
  v.dtype = t->dtype;
  v.rank = rank;
  return v;
}

// `t` (rank <= rank) as a view of `rank` dimensions, leading ones added with extent 1.
View view(const tl_kernels_tensor *t, uint32_t rank) {
  View v = over(t, rank);
  uint32_t pad = rank - t->rank;
  for (uint32_t d = 0; d < rank; ++d) {
    v.shape[d] = d < pad ? 1 : t->shape[d - pad];
    v.strides[d] = d < pad ? 0 : t->strides[d - pad];
  }
  return v;
}

// A one-element view of `t`'s buffer for a parameter the specialization does not read.
View unread(const tl_kernels_tensor *t, uint32_t rank) {
  View v = over(t, rank);
  for (uint32_t d = 0; d < rank; ++d)
    v.shape[d] = 1;
  return v;
}

const char *suffix(uint32_t dtype) {
  switch (dtype) {
  case TL_DTYPE_F32:
    return "f32";
  case TL_DTYPE_F16:
    return "f16";
  case TL_DTYPE_BF16:
    return "bf16";
  default:
    return nullptr;
  }
}

tl_status same_dtype(const char *fn, const char *arg, const tl_kernels_tensor *t, uint32_t dtype) {
  if (t && t->dtype != dtype)
    return fail(TL_STATUS_INVALID_ARGUMENT, "%s: '%s' is %s, the other operands %s", fn, arg,
                tl_dtype_name(static_cast<tl_dtype>(t->dtype)),
                tl_dtype_name(static_cast<tl_dtype>(dtype)));
  return nullptr;
}

int64_t cdiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

// The executable of specialization `name`, compiled on first use.
tl_status executable(tl_kernels k, const std::string &name, tl_executable *out) {
  std::lock_guard<std::mutex> lock(k->mu);
  auto it = k->cache.find(name);
  if (it != k->cache.end()) {
    *out = it->second;
    return nullptr;
  }
  const char *text = nullptr;
  for (unsigned i = 0; i < kEmbeddedOpCount && !text; ++i)
    if (name == kEmbeddedOps[i].name)
      text = kEmbeddedOps[i].text;
  if (!text)
    return fail(TL_STATUS_UNIMPLEMENTED, "tl_kernels: no specialization '%s'", name.c_str());
  tl_module module = nullptr;
  void *data = nullptr;
  size_t size = 0;
  tl_cstatus cs = tl_module_parse(text, (name + ".tlir").c_str(), &module);
  if (!cs)
    cs = tl_module_compile_with_options(module, k->target.c_str(), k->options.c_str(), "tl-kernels",
                                        &data, &size);
  if (module)
    tl_module_destroy(module);
  if (cs) {
    tl_status s = fail(TL_STATUS_UNIMPLEMENTED, "tl_kernels: %s for target %s: %s", name.c_str(),
                       k->target.c_str(), tl_cstatus_message(cs));
    tl_cstatus_free(cs);
    return s;
  }
  tl_executable exe = nullptr;
  tl_status s = tl_executable_load(k->device, data, size, &exe);
  tl_compiler_free(data);
  if (s)
    return s;
  k->cache[name] = exe;
  *out = exe;
  return nullptr;
}

tl_arg tensor_arg(const View &v) {
  tl_arg a;
  std::memset(&a, 0, sizeof a);
  a.struct_size = sizeof a;
  a.kind = TL_PARAM_TENSOR;
  a.dtype = v.dtype;
  a.buffer = v.buffer;
  a.offset_bytes = v.offset;
  a.rank = v.rank;
  for (uint32_t d = 0; d < v.rank; ++d) {
    a.shape[d] = v.shape[d];
    a.strides[d] = v.strides[d];
  }
  return a;
}

tl_arg scalar_f32(float f) {
  tl_arg a;
  std::memset(&a, 0, sizeof a);
  a.struct_size = sizeof a;
  a.kind = TL_PARAM_SCALAR;
  a.dtype = TL_DTYPE_F32;
  a.f = f;
  return a;
}

tl_status launch(tl_kernels k, tl_stream stream, const std::string &name, int64_t g0, int64_t g1,
                 int64_t g2, const std::vector<tl_arg> &args) {
  tl_executable exe = nullptr;
  if (tl_status s = executable(k, name, &exe))
    return s;
  tl_launch_desc d;
  std::memset(&d, 0, sizeof d);
  d.struct_size = sizeof d;
  d.kernel = 0;
  d.grid[0] = static_cast<uint64_t>(g0);
  d.grid[1] = static_cast<uint64_t>(g1);
  d.grid[2] = static_cast<uint64_t>(g2);
  d.args = args.data();
  d.arg_count = static_cast<uint32_t>(args.size());
  return tl_stream_launch(stream, exe, &d);
}

// `in` as a rank-2 view broadcast to out's (rows, cols): extents of 1 read with stride 0.
tl_status broadcast2(const char *fn, const char *arg, const tl_kernels_tensor *in, const View &out,
                     View *v) {
  if (tl_status s = check(fn, arg, in, 1, 2))
    return s;
  *v = view(in, 2);
  for (int d = 0; d < 2; ++d) {
    if (v->shape[d] == out.shape[d])
      continue;
    if (v->shape[d] != 1)
      return fail(TL_STATUS_INVALID_ARGUMENT,
                  "%s: '%s' has extent %lld in dimension %d, the output %lld", fn, arg,
                  static_cast<long long>(v->shape[d]), d - 2 + static_cast<int>(in->rank),
                  static_cast<long long>(out.shape[d]));
    v->shape[d] = out.shape[d];
    v->strides[d] = 0;
  }
  return nullptr;
}

const char *const kBinary[] = {"add", "sub", "mul", "div", "swiglu", "geglu"};
const char *const kActivation[] = {"none", "relu",    "gelu", "gelu_tanh",
                                   "silu", "sigmoid", "tanh", "leaky_relu"};

} // namespace

extern "C" {

tl_status tl_kernels_create(tl_device device, tl_kernels *out_kernels) {
  if (!out_kernels)
    return fail(TL_STATUS_INVALID_ARGUMENT, "tl_kernels_create: out_kernels is NULL");
  *out_kernels = nullptr;
  tl_device_info info;
  std::memset(&info, 0, sizeof info);
  info.struct_size = sizeof info;
  if (tl_status s = tl_device_query(device, &info))
    return s;
  char target[64];
  if (tl_cstatus cs =
          tl_compiler_target_for_device(info.target, info.targets, target, sizeof target)) {
    tl_status s = fail(TL_STATUS_UNIMPLEMENTED, "tl_kernels_create: %s", tl_cstatus_message(cs));
    tl_cstatus_free(cs);
    return s;
  }
  auto *k = new tl_kernels_s;
  k->device = device;
  k->target = target;
  // The device's own options build for it alone, as Python's launches do.
  if (k->target == info.target)
    k->options = info.target_options;
  *out_kernels = k;
  return nullptr;
}

tl_status tl_kernels_release(tl_kernels kernels) {
  if (!kernels)
    return fail(TL_STATUS_INVALID_ARGUMENT, "tl_kernels_release: kernels is NULL");
  tl_status first = nullptr;
  for (auto &[name, exe] : kernels->cache)
    if (tl_status s = tl_executable_release(exe)) {
      if (first)
        tl_status_free(s);
      else
        first = s;
    }
  delete kernels;
  return first;
}

uint32_t tl_kernels_specialization_count(void) { return kEmbeddedOpCount; }

const char *tl_kernels_specialization_name(uint32_t index) {
  return index < kEmbeddedOpCount ? kEmbeddedOps[index].name : nullptr;
}

tl_status tl_kernels_binary(tl_kernels kernels, tl_stream stream, tl_kernels_binary_op op,
                            const tl_kernels_tensor *x, const tl_kernels_tensor *y,
                            const tl_kernels_tensor *out) {
  const char *fn = "tl_kernels_binary";
  if (!kernels)
    return fail(TL_STATUS_INVALID_ARGUMENT, "%s: kernels is NULL", fn);
  if (static_cast<unsigned>(op) > TL_KERNELS_GEGLU)
    return fail(TL_STATUS_INVALID_ARGUMENT, "%s: unknown op %d", fn, static_cast<int>(op));
  if (tl_status s = check(fn, "out", out, 1, 2))
    return s;
  const char *dt = suffix(out->dtype);
  if (!dt)
    return fail(TL_STATUS_INVALID_ARGUMENT, "%s: 'out' is %s (f32, f16, bf16)", fn,
                tl_dtype_name(static_cast<tl_dtype>(out->dtype)));
  View o = view(out, 2), vx, vy;
  if (tl_status s = broadcast2(fn, "x", x, o, &vx))
    return s;
  if (tl_status s = broadcast2(fn, "y", y, o, &vy))
    return s;
  if (tl_status s = same_dtype(fn, "x", x, out->dtype))
    return s;
  if (tl_status s = same_dtype(fn, "y", y, out->dtype))
    return s;
  if (o.shape[0] == 0 || o.shape[1] == 0)
    return nullptr;
  return launch(kernels, stream, std::string(kBinary[op]) + "_" + dt, cdiv(o.shape[0], 4),
                cdiv(o.shape[1], 1024), 1, {tensor_arg(vx), tensor_arg(vy), tensor_arg(o)});
}

tl_status tl_kernels_activation_apply(tl_kernels kernels, tl_stream stream,
                                      tl_kernels_activation act, float alpha,
                                      const tl_kernels_tensor *x, const tl_kernels_tensor *out) {
  const char *fn = "tl_kernels_activation_apply";
  if (!kernels)
    return fail(TL_STATUS_INVALID_ARGUMENT, "%s: kernels is NULL", fn);
  if (act == TL_KERNELS_ACT_NONE || static_cast<unsigned>(act) > TL_KERNELS_ACT_LEAKY_RELU)
    return fail(TL_STATUS_INVALID_ARGUMENT, "%s: 'act' %d is not an activation", fn,
                static_cast<int>(act));
  if (tl_status s = check(fn, "out", out, 1, 2))
    return s;
  const char *dt = suffix(out->dtype);
  if (!dt)
    return fail(TL_STATUS_INVALID_ARGUMENT, "%s: 'out' is %s (f32, f16, bf16)", fn,
                tl_dtype_name(static_cast<tl_dtype>(out->dtype)));
  View o = view(out, 2), vx;
  if (tl_status s = broadcast2(fn, "x", x, o, &vx))
    return s;
  if (tl_status s = same_dtype(fn, "x", x, out->dtype))
    return s;
  if (o.shape[0] == 0 || o.shape[1] == 0)
    return nullptr;
  return launch(kernels, stream, std::string(kActivation[act]) + "_" + dt, cdiv(o.shape[0], 4),
                cdiv(o.shape[1], 1024), 1, {tensor_arg(vx), tensor_arg(o), scalar_f32(alpha)});
}

tl_status tl_kernels_softmax(tl_kernels kernels, tl_stream stream, int32_t log,
                             const tl_kernels_tensor *x, const tl_kernels_tensor *out) {
  const char *fn = "tl_kernels_softmax";
  if (!kernels)
    return fail(TL_STATUS_INVALID_ARGUMENT, "%s: kernels is NULL", fn);
  if (tl_status s = check(fn, "x", x, 2, 2))
    return s;
  if (tl_status s = check(fn, "out", out, 2, 2))
    return s;
  const char *dt = suffix(x->dtype);
  if (!dt)
    return fail(TL_STATUS_INVALID_ARGUMENT, "%s: 'x' is %s (f32, f16, bf16)", fn,
                tl_dtype_name(static_cast<tl_dtype>(x->dtype)));
  if (tl_status s = same_dtype(fn, "out", out, x->dtype))
    return s;
  if (out->shape[0] != x->shape[0] || out->shape[1] != x->shape[1])
    return fail(TL_STATUS_INVALID_ARGUMENT, "%s: 'out' is not x's shape", fn);
  if (x->shape[0] == 0 || x->shape[1] == 0)
    return nullptr;
  return launch(kernels, stream, std::string(log ? "log_softmax_" : "softmax_") + dt, x->shape[0],
                1, 1, {tensor_arg(view(x, 2)), tensor_arg(view(out, 2))});
}

tl_status tl_kernels_layernorm(tl_kernels kernels, tl_stream stream, const tl_kernels_tensor *x,
                               const tl_kernels_tensor *weight, const tl_kernels_tensor *bias,
                               float eps, const tl_kernels_tensor *out,
                               const tl_kernels_tensor *stats) {
  const char *fn = "tl_kernels_layernorm";
  if (!kernels)
    return fail(TL_STATUS_INVALID_ARGUMENT, "%s: kernels is NULL", fn);
  if (tl_status s = check(fn, "x", x, 2, 2))
    return s;
  const char *dt = suffix(x->dtype);
  if (!dt)
    return fail(TL_STATUS_INVALID_ARGUMENT, "%s: 'x' is %s (f32, f16, bf16)", fn,
                tl_dtype_name(static_cast<tl_dtype>(x->dtype)));
  int64_t rows = x->shape[0], n = x->shape[1];
  if (tl_status s = check(fn, "weight", weight, 1, 1))
    return s;
  if (weight->shape[0] != n)
    return fail(TL_STATUS_INVALID_ARGUMENT, "%s: 'weight' has %lld elements, x's rows %lld", fn,
                static_cast<long long>(weight->shape[0]), static_cast<long long>(n));
  if (bias) {
    if (tl_status s = check(fn, "bias", bias, 1, 1))
      return s;
    if (bias->shape[0] != n)
      return fail(TL_STATUS_INVALID_ARGUMENT, "%s: 'bias' has %lld elements, x's rows %lld", fn,
                  static_cast<long long>(bias->shape[0]), static_cast<long long>(n));
  }
  if (tl_status s = check(fn, "out", out, 2, 2))
    return s;
  if (out->shape[0] != rows || out->shape[1] != n)
    return fail(TL_STATUS_INVALID_ARGUMENT, "%s: 'out' is not x's shape", fn);
  if (tl_status s = check(fn, "stats", stats, 2, 2))
    return s;
  if (stats->dtype != TL_DTYPE_F32 || stats->shape[0] != rows || stats->shape[1] != 2)
    return fail(TL_STATUS_INVALID_ARGUMENT, "%s: 'stats' must be f32 of shape (%lld, 2)", fn,
                static_cast<long long>(rows));
  for (auto [arg, t] : {std::pair{"weight", weight}, {"bias", bias}, {"out", out}})
    if (tl_status s = same_dtype(fn, arg, t, x->dtype))
      return s;
  if (rows == 0 || n == 0)
    return nullptr;
  const tl_kernels_tensor *b = bias ? bias : weight; // rmsnorm's kernel does not read it
  return launch(kernels, stream, std::string(bias ? "layernorm_" : "rmsnorm_") + dt, rows, 1, 1,
                {tensor_arg(view(x, 2)), tensor_arg(view(weight, 1)), tensor_arg(view(b, 1)),
                 tensor_arg(view(out, 2)), tensor_arg(view(stats, 2)), scalar_f32(eps)});
}

namespace {

tl_arg scalar_i32(int64_t i) {
  tl_arg a;
  std::memset(&a, 0, sizeof a);
  a.struct_size = sizeof a;
  a.kind = TL_PARAM_SCALAR;
  a.dtype = TL_DTYPE_I32;
  a.i = i;
  return a;
}

// Split-K GEMM: gemm_splitk_partial_<dt> into an f32 workspace (splits batch, M, N), then
// gemm_splitk_reduce[_<act>][_bias_res]_<dt> (the partials in order s = 0 .. splits-1, the
// epilogue once); the workspace's release waits for both.
tl_status gemm_split(tl_kernels kernels, tl_stream stream, const char *fn, const View &a,
                     const View &b, const View &bias, const View &res, const View &o, unsigned act,
                     const char *dt, float alpha, bool has_bias, bool has_res, int64_t splits) {
  if (has_bias != has_res)
    return fail(TL_STATUS_UNIMPLEMENTED,
                "%s: split_k %lld needs bias and residual both or neither (the generated "
                "reductions)",
                fn, static_cast<long long>(splits));
  const int64_t batch = o.shape[0], m = o.shape[1], n = o.shape[2], kk = a.shape[2];
  const int64_t chunk = cdiv(cdiv(kk, splits), 32) * 32; // the partials' K block is 32
  tl_buffer_desc bd = {sizeof bd, static_cast<uint64_t>(splits * batch * m * n * 4),
                       TL_BUFFER_DEVICE_LOCAL};
  tl_buffer work = nullptr;
  if (tl_status s = tl_buffer_create(kernels->device, &bd, &work))
    return s;
  View part;
  part.buffer = work;
  part.dtype = TL_DTYPE_F32;
  part.rank = 3;
  part.shape[0] = splits * batch, part.shape[1] = m, part.shape[2] = n;
  part.strides[0] = m * n, part.strides[1] = n, part.strides[2] = 1;
  tl_status s =
      launch(kernels, stream, std::string("gemm_splitk_partial_") + dt, cdiv(m, 64), cdiv(n, 64),
             splits * batch, {tensor_arg(a), tensor_arg(b), tensor_arg(part), scalar_i32(chunk)});
  if (!s) {
    std::string name = "gemm_splitk_reduce";
    if (act != TL_KERNELS_ACT_NONE)
      name += std::string("_") + kActivation[act];
    name += std::string(has_bias ? "_bias_res" : "") + "_" + dt;
    s = launch(kernels, stream, name, cdiv(m, 64), cdiv(n, 64), batch,
               {tensor_arg(part), tensor_arg(bias), tensor_arg(res), tensor_arg(o),
                scalar_f32(alpha), scalar_i32(splits)});
  }
  tl_status r = tl_buffer_release(work); // synchronizes the device's streams first
  if (s) {
    tl_status_free(r);
    return s;
  }
  return r;
}

} // namespace

tl_status tl_kernels_gemm(tl_kernels kernels, tl_stream stream, const tl_kernels_gemm_desc *desc) {
  const char *fn = "tl_kernels_gemm";
  if (!kernels || !desc)
    return fail(TL_STATUS_INVALID_ARGUMENT, "%s: kernels or desc is NULL", fn);
  // descs from before split-K end at split_k: automatic
  if (desc->struct_size < offsetof(tl_kernels_gemm_desc, split_k))
    return fail(TL_STATUS_INVALID_ARGUMENT, "%s: desc struct_size is too small", fn);
  const uint32_t split_k = desc->struct_size >= sizeof(tl_kernels_gemm_desc) ? desc->split_k : 0;
  for (auto [arg, t] : {std::pair{"a", desc->a}, {"b", desc->b}, {"out", desc->out}})
    if (tl_status s = check(fn, arg, t, 2, 3))
      return s;
  const char *dt = suffix(desc->a->dtype);
  if (!dt)
    return fail(TL_STATUS_INVALID_ARGUMENT, "%s: 'a' is %s (f32, f16, bf16)", fn,
                tl_dtype_name(static_cast<tl_dtype>(desc->a->dtype)));
  View a = view(desc->a, 3), b = view(desc->b, 3), o = view(desc->out, 3);
  int64_t batch = o.shape[0], m = o.shape[1], n = o.shape[2];
  if (a.shape[2] != b.shape[1])
    return fail(TL_STATUS_INVALID_ARGUMENT, "%s: 'b' has %lld rows, a has %lld columns", fn,
                static_cast<long long>(b.shape[1]), static_cast<long long>(a.shape[2]));
  if (a.shape[1] != m || b.shape[2] != n)
    return fail(TL_STATUS_INVALID_ARGUMENT, "%s: 'out' is not (M, N) = (%lld, %lld)", fn,
                static_cast<long long>(a.shape[1]), static_cast<long long>(b.shape[2]));
  for (auto [arg, v, t] : {std::tuple{"a", &a, desc->a}, {"b", &b, desc->b}}) {
    if (v->shape[0] == batch)
      continue;
    if (t->rank != 2)
      return fail(TL_STATUS_INVALID_ARGUMENT, "%s: '%s' has batch %lld, the output %lld", fn, arg,
                  static_cast<long long>(v->shape[0]), static_cast<long long>(batch));
    v->shape[0] = batch; // shared by every batch entry
  }
  if (desc->bias) {
    if (tl_status s = check(fn, "bias", desc->bias, 1, 1))
      return s;
    if (desc->bias->shape[0] != n)
      return fail(TL_STATUS_INVALID_ARGUMENT, "%s: 'bias' has %lld elements, N is %lld", fn,
                  static_cast<long long>(desc->bias->shape[0]), static_cast<long long>(n));
  }
  View res = unread(desc->a, 3);
  if (desc->residual) {
    if (tl_status s = check(fn, "residual", desc->residual, 2, 3))
      return s;
    res = view(desc->residual, 3);
    if (res.shape[1] != m || res.shape[2] != n || (res.shape[0] != batch && res.shape[0] != 1))
      return fail(TL_STATUS_INVALID_ARGUMENT, "%s: 'residual' is not the output's shape", fn);
    res.shape[0] = batch;
  }
  for (auto [arg, t] : {std::pair{"b", desc->b},
                        {"bias", desc->bias},
                        {"residual", desc->residual},
                        {"out", desc->out}})
    if (tl_status s = same_dtype(fn, arg, t, desc->a->dtype))
      return s;
  unsigned act = desc->activation;
  if (act > TL_KERNELS_ACT_SILU)
    return fail(TL_STATUS_UNIMPLEMENTED,
                "%s: activation %u is not fused into GEMM (none, relu, "
                "gelu, gelu_tanh, silu)",
                fn, act);
  if (batch == 0 || m == 0 || n == 0)
    return nullptr;
  if (a.shape[2] == 0)
    return fail(TL_STATUS_INVALID_ARGUMENT, "%s: K is 0", fn);
  View bias = desc->bias ? view(desc->bias, 1) : unread(desc->a, 1);
  const int64_t kk = a.shape[2];
  int64_t splits = split_k;
  if (split_k == 0) { // tl.ops' linear.splitk_choice where TUNING["splitk_auto"] is on
    const bool auto_on = kernels->target == "tnpu" || kernels->target == "nvptx";
    const int64_t tiles = batch * cdiv(m, 64) * cdiv(n, 64);
    splits = 1;
    if (auto_on && tiles <= 4 && kk >= 2048 && !desc->bias == !desc->residual)
      splits = std::max<int64_t>(2, std::min<int64_t>(32, kk / 512));
  }
  if (splits > 1)
    return gemm_split(kernels, stream, fn, a, b, bias, res, o, act, dt, desc->alpha,
                      desc->bias != nullptr, desc->residual != nullptr, splits);
  std::string name = "gemm";
  if (act != TL_KERNELS_ACT_NONE)
    name += std::string("_") + kActivation[act];
  name += std::string(desc->bias ? "_bias" : "") + (desc->residual ? "_res" : "") + "_" + dt;
  return launch(kernels, stream, name, cdiv(m, 64), cdiv(n, 64), batch,
                {tensor_arg(a), tensor_arg(b), tensor_arg(bias), tensor_arg(res), tensor_arg(o),
                 scalar_f32(desc->alpha)});
}

tl_status tl_kernels_attention(tl_kernels kernels, tl_stream stream,
                               const tl_kernels_attention_desc *desc) {
  const char *fn = "tl_kernels_attention";
  if (!kernels || !desc)
    return fail(TL_STATUS_INVALID_ARGUMENT, "%s: kernels or desc is NULL", fn);
  // descs from before the padding masks end at key_lengths: they have none
  if (desc->struct_size < offsetof(tl_kernels_attention_desc, key_lengths))
    return fail(TL_STATUS_INVALID_ARGUMENT, "%s: desc struct_size is too small", fn);
  const tl_kernels_tensor *klen =
      desc->struct_size >= sizeof(tl_kernels_attention_desc) ? desc->key_lengths : nullptr;
  for (auto [arg, t] :
       {std::pair{"q", desc->q}, {"k", desc->k}, {"v", desc->v}, {"out", desc->out}})
    if (tl_status s = check(fn, arg, t, 3, 3))
      return s;
  if (tl_status s = check(fn, "lse", desc->lse, 2, 2))
    return s;
  const char *dt = suffix(desc->q->dtype);
  if (!dt)
    return fail(TL_STATUS_INVALID_ARGUMENT, "%s: 'q' is %s (f32, f16, bf16)", fn,
                tl_dtype_name(static_cast<tl_dtype>(desc->q->dtype)));
  for (auto [arg, t] : {std::pair{"k", desc->k}, {"v", desc->v}, {"out", desc->out}})
    if (tl_status s = same_dtype(fn, arg, t, desc->q->dtype))
      return s;
  const int64_t bh = desc->q->shape[0], s_len = desc->q->shape[1], d = desc->q->shape[2];
  const int64_t group = desc->group;
  if (group < 1 || bh % group)
    return fail(TL_STATUS_INVALID_ARGUMENT, "%s: 'group' %lld does not divide q's %lld heads", fn,
                static_cast<long long>(group), static_cast<long long>(bh));
  const tl_kernels_tensor *k = desc->k, *v = desc->v;
  if (k->shape[0] != bh / group || k->shape[2] != d)
    return fail(TL_STATUS_INVALID_ARGUMENT, "%s: 'k' is not (%lld, T, %lld)", fn,
                static_cast<long long>(bh / group), static_cast<long long>(d));
  for (uint32_t i = 0; i < 3; ++i)
    if (v->shape[i] != k->shape[i])
      return fail(TL_STATUS_INVALID_ARGUMENT, "%s: 'v' is not k's shape", fn);
  for (uint32_t i = 0; i < 3; ++i)
    if (desc->out->shape[i] != desc->q->shape[i])
      return fail(TL_STATUS_INVALID_ARGUMENT, "%s: 'out' is not q's shape", fn);
  const tl_kernels_tensor *lse = desc->lse;
  if (lse->dtype != TL_DTYPE_F32 || lse->shape[0] != bh || lse->shape[1] != s_len)
    return fail(TL_STATUS_INVALID_ARGUMENT, "%s: 'lse' must be f32 of shape (%lld, %lld)", fn,
                static_cast<long long>(bh), static_cast<long long>(s_len));
  if (d > 128)
    return fail(TL_STATUS_UNIMPLEMENTED, "%s: head dimension %lld is above 128", fn,
                static_cast<long long>(d));
  const int64_t heads = klen ? desc->heads : 1;
  if (klen) {
    if (tl_status s = check(fn, "key_lengths", klen, 1, 1))
      return s;
    if (heads < 1 || bh % heads || heads % group)
      return fail(TL_STATUS_INVALID_ARGUMENT,
                  "%s: 'heads' %lld must divide q's %lld rows and be a multiple of group %lld", fn,
                  static_cast<long long>(heads), static_cast<long long>(bh),
                  static_cast<long long>(group));
    if (klen->dtype != TL_DTYPE_I32 || klen->shape[0] != bh / heads)
      return fail(TL_STATUS_INVALID_ARGUMENT, "%s: 'key_lengths' must be i32 of shape (%lld)", fn,
                  static_cast<long long>(bh / heads));
    if (d > 64)
      return fail(TL_STATUS_UNIMPLEMENTED,
                  "%s: head dimension %lld is above 64 with key_lengths (the generated "
                  "specializations)",
                  fn, static_cast<long long>(d));
  }
  if (bh == 0 || s_len == 0 || d == 0)
    return nullptr;
  if (k->shape[1] == 0)
    return fail(TL_STATUS_INVALID_ARGUMENT, "%s: 'k' has no keys", fn);
  std::string name = std::string("attention") + (desc->causal ? "_causal" : "") +
                     (klen ? "_len" : "") + (d <= 64 ? "_d64_" : "_d128_") + dt;
  tl_arg g;
  std::memset(&g, 0, sizeof g);
  g.struct_size = sizeof g;
  g.kind = TL_PARAM_SCALAR;
  g.dtype = TL_DTYPE_I32;
  g.i = group;
  tl_arg h = g; // H: the padding-mask specializations' batch entry of row bh is bh / H
  h.i = heads;
  View lens = klen ? view(klen, 1) : unread(desc->q, 1); // unread without key_lengths
  lens.dtype = TL_DTYPE_I32;
  return launch(kernels, stream, name, cdiv(s_len, 32), bh, 1,
                {tensor_arg(view(desc->q, 3)), tensor_arg(view(k, 3)), tensor_arg(view(v, 3)),
                 tensor_arg(view(desc->out, 3)), tensor_arg(view(lse, 2)), scalar_f32(desc->scale),
                 g, tensor_arg(lens), h});
}

} // extern "C"
