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
#include <initializer_list>
#include <map>
#include <mutex>
#include <numeric>
#include <sstream>
#include <string>
#include <vector>

struct tl_kernels_s {
  tl_device device = nullptr;
  std::string target, options;
  uint64_t supported_dtypes = 0; // the HAL's bit per dtype
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

// A one-element view of `t`'s buffer for a parameter the specialization does not read (t must
// hold an element of the view's type: the output, not an input that may be empty).
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

// tl.ops' choice `name` for the target (kernels/ops/tuning.tsv, generated from _common.TUNING:
// the same choices the Python ops make): the target's row, else the default's (generate.py
// writes one for every name in its C_API_TUNING); empty if neither (the generic choice then).
std::vector<int64_t> tuned(const tl_kernels_s &k, const std::string &name) {
  static const std::map<std::pair<std::string, std::string>, std::vector<int64_t>> table = [] {
    std::map<std::pair<std::string, std::string>, std::vector<int64_t>> t;
    std::istringstream in(tl::kernels::kEmbeddedTuning);
    for (std::string line; std::getline(in, line);) {
      std::istringstream row(line);
      std::string key, target, value;
      if (line.empty() || line[0] == '#' || !std::getline(row, key, '\t') ||
          !std::getline(row, target, '\t') || !std::getline(row, value) || key == "name")
        continue;
      std::vector<int64_t> v;
      std::istringstream vs(value);
      for (std::string x; std::getline(vs, x, ',');)
        v.push_back(std::stoll(x));
      t[{key, target}] = v;
    }
    return t;
  }();
  auto it = table.find({name, k.target});
  if (it == table.end())
    it = table.find({name, "default"});
  return it == table.end() ? std::vector<int64_t>{} : it->second;
}

int64_t tuned_int(const tl_kernels_s &k, const std::string &name) {
  const std::vector<int64_t> v = tuned(k, name);
  return v.empty() ? 0 : v[0];
}

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
  // The generated kernels index in int32 (tl.program_id, x.shape, block offsets): along an
  // extent of 2^31 or more they would wrap and touch the wrong elements.
  for (const tl_arg &a : args)
    for (uint32_t i = 0; a.kind == TL_PARAM_TENSOR && i < a.rank; ++i)
      if (a.shape[i] >= (int64_t{1} << 31))
        return fail(TL_STATUS_INVALID_ARGUMENT,
                    "%s: an operand has %lld elements along one dimension (of its merged view): "
                    "the kernels index in int32, so at most 2^31 - 1",
                    name.c_str(), static_cast<long long>(a.shape[i]));
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

tl_arg scalar_i32(int64_t i) {
  tl_arg a;
  std::memset(&a, 0, sizeof a);
  a.struct_size = sizeof a;
  a.kind = TL_PARAM_SCALAR;
  a.dtype = TL_DTYPE_I32;
  a.i = i;
  return a;
}

size_t esize(uint32_t dtype) { return tl_dtype_size(static_cast<tl_dtype>(dtype)); }

// The bytes [lo, hi) `t` spans in its buffer (strides of either sign); empty for no element.
std::pair<int64_t, int64_t> byte_span(const tl_kernels_tensor *t) {
  int64_t lo = 0, hi = 0;
  for (uint32_t d = 0; d < t->rank; ++d) {
    if (t->shape[d] == 0)
      return {0, 0};
    const int64_t reach = (t->shape[d] - 1) * t->strides[d];
    (reach < 0 ? lo : hi) += reach;
  }
  const int64_t e = static_cast<int64_t>(esize(t->dtype));
  const int64_t at = static_cast<int64_t>(t->offset_bytes);
  return {at + lo * e, at + (hi + 1) * e};
}

// An output two of whose elements are one memory location: the programs' writes would race.
// Checked exactly for each pair of dimensions of extent above 1 (strides a <= b, in absolute
// value, extents m and n): a stride of 0, or di a = dj b for some di < m, dj < n not both 0,
// whose smallest solution is dj = a / gcd(a, b), di = b / gcd(a, b). (A greedy test, each
// stride past the span of the smaller ones, also refused layouts that do not overlap, as
// strides (2, 3) of a (3, 2) tensor.) Overlaps only among three or more dimensions pass.
tl_status self_overlapping(const char *fn, const char *arg, const tl_kernels_tensor *t) {
  for (uint32_t d = 0; d < t->rank; ++d)
    for (uint32_t e = d + 1; e < t->rank; ++e) {
      if (t->shape[d] < 2 || t->shape[e] < 2)
        continue;
      int64_t a = std::abs(t->strides[d]), b = std::abs(t->strides[e]);
      int64_t m = t->shape[d], n = t->shape[e];
      if (a > b)
        std::swap(a, b), std::swap(m, n);
      const int64_t g = a ? std::gcd(a, b) : 1;
      if (a == 0 || (a / g < n && b / g < m))
        return fail(TL_STATUS_INVALID_ARGUMENT,
                    "%s: '%s' overlaps itself (dimensions %u and %u, strides %lld and %lld): "
                    "an element would be written more than once",
                    fn, arg, d, e, static_cast<long long>(t->strides[d]),
                    static_cast<long long>(t->strides[e]));
    }
  for (uint32_t d = 0; d < t->rank; ++d) // a single dimension of stride 0
    if (t->shape[d] > 1 && t->strides[d] == 0)
      return fail(TL_STATUS_INVALID_ARGUMENT,
                  "%s: '%s' overlaps itself (dimension %u has stride 0): an element would be "
                  "written more than once",
                  fn, arg, d);
  return nullptr;
}

// `out` and input `in` in one buffer with overlapping bytes: an entry that reads `in` while
// other programs write `out` (a transpose in place) computes garbage.
tl_status overlapping(const char *fn, const char *in_arg, const tl_kernels_tensor *in,
                      const tl_kernels_tensor *out) {
  if (in->buffer != out->buffer)
    return nullptr;
  auto [a0, a1] = byte_span(in);
  auto [b0, b1] = byte_span(out);
  if (a0 < a1 && b0 < b1 && a0 < b1 && b0 < a1)
    return fail(TL_STATUS_INVALID_ARGUMENT, "%s: 'out' overlaps '%s' (in place is not supported)",
                fn, in_arg);
  return nullptr;
}

const char *dname(uint32_t dtype) { return tl_dtype_name(static_cast<tl_dtype>(dtype)); }

// `t`'s dtype suffix; fails naming `arg` unless it is f32, f16 or bf16.
tl_status float_dtype(const char *fn, const char *arg, const tl_kernels_tensor *t,
                      const char **dt) {
  *dt = suffix(t->dtype);
  if (!*dt)
    return fail(TL_STATUS_INVALID_ARGUMENT, "%s: '%s' is %s (f32, f16, bf16)", fn, arg,
                dname(t->dtype));
  return nullptr;
}

tl_status need_dtype(const char *fn, const char *arg, const tl_kernels_tensor *t, uint32_t dtype) {
  if (t->dtype != dtype)
    return fail(TL_STATUS_INVALID_ARGUMENT, "%s: '%s' is %s, expected %s", fn, arg, dname(t->dtype),
                dname(dtype));
  return nullptr;
}

std::string shape_text(const int64_t *dims, size_t n) {
  std::string s = "(";
  for (size_t i = 0; i < n; ++i)
    s += (i ? ", " : "") + std::to_string(dims[i]);
  return s + ")";
}

// Fails naming `arg` unless t's shape is `dims`.
tl_status need_shape(const char *fn, const char *arg, const tl_kernels_tensor *t,
                     std::initializer_list<int64_t> dims) {
  bool same = t->rank == dims.size();
  for (size_t d = 0; same && d < dims.size(); ++d)
    same = t->shape[d] == dims.begin()[d];
  if (!same)
    return fail(TL_STATUS_INVALID_ARGUMENT, "%s: '%s' has shape %s, expected %s", fn, arg,
                shape_text(t->shape, t->rank).c_str(),
                shape_text(dims.begin(), dims.size()).c_str());
  return nullptr;
}

// Dimensions [lo, hi) of `t` as one: their extent and the stride of a dense block. False when
// they are not one (no reshape without a copy).
bool merge(const tl_kernels_tensor *t, uint32_t lo, uint32_t hi, int64_t *extent, int64_t *stride) {
  *extent = 1;
  *stride = 0;
  for (uint32_t d = lo; d < hi; ++d)
    *extent *= t->shape[d];
  if (*extent == 0)
    return true;
  int64_t next = -1; // the extent times stride the next outer dimension must have
  for (uint32_t d = hi; d-- > lo;) {
    if (t->shape[d] == 1)
      continue;
    if (next < 0)
      *stride = t->strides[d];
    else if (t->strides[d] != next)
      return false;
    next = t->strides[d] * t->shape[d];
  }
  return true;
}

tl_status merged(const char *fn, const char *arg, const tl_kernels_tensor *t, uint32_t lo,
                 uint32_t hi, int64_t *extent, int64_t *stride) {
  if (!merge(t, lo, hi, extent, stride))
    return fail(TL_STATUS_INVALID_ARGUMENT,
                "%s: '%s': dimensions %u to %u do not merge into one (their strides are not a "
                "dense block)",
                fn, arg, lo, hi - 1);
  return nullptr;
}

// `t` as the (outer, n, inner) view around `axis` (already in range).
tl_status axis_view(const char *fn, const char *arg, const tl_kernels_tensor *t, uint32_t axis,
                    View *v) {
  *v = over(t, 3);
  if (tl_status s = merged(fn, arg, t, 0, axis, &v->shape[0], &v->strides[0]))
    return s;
  v->shape[1] = t->shape[axis];
  v->strides[1] = t->strides[axis];
  return merged(fn, arg, t, axis + 1, t->rank, &v->shape[2], &v->strides[2]);
}

tl_status normalize_axis(const char *fn, const tl_kernels_tensor *t, int32_t axis, uint32_t *out) {
  int64_t a = axis < 0 ? axis + static_cast<int64_t>(t->rank) : axis;
  if (a < 0 || a >= t->rank)
    return fail(TL_STATUS_INVALID_ARGUMENT, "%s: 'axis' %d is out of range for rank %u", fn, axis,
                t->rank);
  *out = static_cast<uint32_t>(a);
  return nullptr;
}

// `t` viewed with extent `extent` along dimension `d` from element `start` (a slice).
View slice(View v, int d, int64_t start, int64_t extent) {
  v.offset += static_cast<uint64_t>(start * v.strides[d]) * esize(v.dtype);
  v.shape[d] = extent;
  return v;
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
  k->supported_dtypes = info.supported_dtypes;
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
  if (tl_status s = self_overlapping(fn, "out", out))
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
  if (tl_status s = self_overlapping(fn, "out", out))
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
  // Rows of at most 4096 columns: the one-pass form of the narrowest width that holds them (x
  // read once: ~1.9x the two-pass form on cpu, bench/README.md); wider rows: two passes.
  std::string name = log ? "log_softmax_" : "softmax_";
  for (int64_t block = 1024; block <= 4096; block *= 2)
    if (x->shape[1] <= block) {
      name += "onepass" + std::to_string(block) + "_";
      break;
    }
  return launch(kernels, stream, name + dt, x->shape[0], 1, 1,
                {tensor_arg(view(x, 2)), tensor_arg(view(out, 2))});
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

// Split-K GEMM: gemm_splitk_partial_<dt> into an f32 workspace (splits batch, M, N), then
// gemm_splitk_reduce[_<act>][_bias_res]_<dt> (the partials in order s = 0 .. splits-1, the
// epilogue once); the workspace's release waits for both.
// Attention's padding masks (forward and backward): checks key_lengths (B) i32 or key_mask (B,
// T) i32 (not both) against q's bh rows of `heads` each and the head dimension d, and gives the
// kernels' klen argument (a one-element placeholder without either) and the name's tag.
tl_status padding_masks(const char *fn, const tl_kernels_tensor *q, const tl_kernels_tensor *klen,
                        const tl_kernels_tensor *kmask, int64_t heads, int64_t group, int64_t t_len,
                        View *arg, const char **tag) {
  const int64_t bh = q->shape[0], d = q->shape[2];
  *tag = "";
  *arg = unread(q, 1);
  arg->dtype = TL_DTYPE_I32;
  if (!klen && !kmask)
    return nullptr;
  if (klen && kmask)
    return fail(TL_STATUS_INVALID_ARGUMENT,
                "%s: 'key_mask': give key_lengths or key_mask, not both", fn);
  const char *name = klen ? "key_lengths" : "key_mask";
  const tl_kernels_tensor *t = klen ? klen : kmask;
  if (tl_status s = check(fn, name, t, klen ? 1 : 2, klen ? 1 : 2))
    return s;
  if (heads < 1 || bh % heads || heads % group)
    return fail(TL_STATUS_INVALID_ARGUMENT,
                "%s: 'heads' %lld must divide q's %lld rows and be a multiple of group %lld", fn,
                static_cast<long long>(heads), static_cast<long long>(bh),
                static_cast<long long>(group));
  if (klen && (klen->dtype != TL_DTYPE_I32 || klen->shape[0] != bh / heads))
    return fail(TL_STATUS_INVALID_ARGUMENT, "%s: 'key_lengths' must be i32 of shape (%lld)", fn,
                static_cast<long long>(bh / heads));
  if (kmask &&
      (kmask->dtype != TL_DTYPE_I32 || kmask->shape[0] != bh / heads || kmask->shape[1] != t_len))
    return fail(TL_STATUS_INVALID_ARGUMENT,
                "%s: 'key_mask' must be i32 of shape (%lld, %lld) (batch, keys), got %s %s", fn,
                static_cast<long long>(bh / heads), static_cast<long long>(t_len),
                dname(kmask->dtype), shape_text(kmask->shape, kmask->rank).c_str());
  if (d > 64)
    return fail(TL_STATUS_UNIMPLEMENTED,
                "%s: head dimension %lld is above 64 with %s (the generated specializations)", fn,
                static_cast<long long>(d), name);
  *arg = view(t, klen ? 1 : 2);
  *tag = klen ? "_len" : "_mask";
  return nullptr;
}

tl_status gemm_split(tl_kernels kernels, tl_stream stream, const View &a, const View &b,
                     const View &bias, const View &res, const View &o, unsigned act, const char *dt,
                     float alpha, bool has_bias, bool has_res, int64_t splits) {
  const int64_t batch = o.shape[0], m = o.shape[1], n = o.shape[2], kk = a.shape[2];
  // The reductions take bias and residual both or neither: one alone is paired with a zero
  // view of the other (stride 0 over 4 zero bytes: + 0 is exact).
  tl_buffer zero = nullptr;
  View bias_v = bias, res_v = res;
  if (has_bias != has_res) {
    tl_buffer_desc zd = {sizeof zd, 4, TL_BUFFER_DEVICE_LOCAL};
    if (tl_status s = tl_buffer_create(kernels->device, &zd, &zero))
      return s;
    const uint32_t zbits = 0;
    if (tl_status s = tl_stream_fill(stream, zero, 0, 4, &zbits, 4)) {
      tl_status_free(tl_buffer_release(zero));
      return s;
    }
    View z;
    z.buffer = zero;
    z.dtype = o.dtype;
    z.rank = 3;
    z.shape[0] = batch, z.shape[1] = m, z.shape[2] = n;
    if (has_bias) {
      res_v = z;
    } else {
      z.rank = 1, z.shape[0] = n, z.shape[1] = z.shape[2] = 0;
      bias_v = z;
    }
    has_bias = has_res = true;
  }
  const int64_t chunk = cdiv(cdiv(kk, splits), 32) * 32; // the partials' K block is 32
  tl_buffer_desc bd = {sizeof bd, static_cast<uint64_t>(splits * batch * m * n * 4),
                       TL_BUFFER_DEVICE_LOCAL};
  tl_buffer work = nullptr;
  if (tl_status s = tl_buffer_create(kernels->device, &bd, &work)) {
    if (zero)
      tl_status_free(tl_buffer_release(zero));
    return s;
  }
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
               {tensor_arg(part), tensor_arg(bias_v), tensor_arg(res_v), tensor_arg(o),
                scalar_f32(alpha), scalar_i32(splits)});
  }
  tl_status r = tl_buffer_release(work); // synchronizes the device's streams first
  if (zero) {
    tl_status rz = tl_buffer_release(zero);
    if (!r)
      r = rz;
    else
      tl_status_free(rz);
  }
  if (s) {
    tl_status_free(r);
    return s;
  }
  return r;
}

tl_status gemm_unsplit(tl_kernels kernels, tl_stream stream, const View &a, const View &b,
                       const View &bias, const View &res, const View &o, unsigned act,
                       const char *dt, float alpha, bool has_bias, bool has_res) {
  const int64_t batch = o.shape[0], m = o.shape[1], n = o.shape[2];
  std::string name = "gemm";
  if (act != TL_KERNELS_ACT_NONE)
    name += std::string("_") + kActivation[act];
  name += std::string(has_bias ? "_bias" : "") + (has_res ? "_res" : "") + "_" + dt;
  // The plain GEMM at the target's tile (TUNING["gemm_tile"]: gemm_tile<BM>x<BN>x<BK>_<dt>);
  // the fused epilogues at 64 x 64 x 32, generated once for every target.
  int64_t bm = 64, bn = 64;
  if (name == std::string("gemm_") + dt) {
    const std::vector<int64_t> tile = tuned(*kernels, "gemm_tile");
    if (tile.size() == 3 && tile != std::vector<int64_t>{64, 64, 32}) {
      bm = tile[0], bn = tile[1];
      name = "gemm_tile" + std::to_string(tile[0]) + "x" + std::to_string(tile[1]) + "x" +
             std::to_string(tile[2]) + "_" + dt;
    }
  }
  return launch(kernels, stream, name, cdiv(m, bm), cdiv(n, bn), batch,
                {tensor_arg(a), tensor_arg(b), tensor_arg(bias), tensor_arg(res), tensor_arg(o),
                 scalar_f32(alpha)});
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
  View res = unread(desc->out, 3); // out's buffer: a's may hold no element (K = 0)
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
  View bias = desc->bias ? view(desc->bias, 1) : unread(desc->out, 1);
  if (a.shape[2] == 0) { // a @ b is zeros, as numpy's and torch's: the epilogue of a K of 1
    const uint64_t bytes =
        (static_cast<uint64_t>(batch * std::max(m, n)) * esize(a.dtype) + 3) / 4 * 4;
    tl_buffer_desc zd = {sizeof zd, bytes, TL_BUFFER_DEVICE_LOCAL};
    tl_buffer zero = nullptr;
    if (tl_status s = tl_buffer_create(kernels->device, &zd, &zero))
      return s;
    const uint32_t zbits = 0;
    tl_status s = tl_stream_fill(stream, zero, 0, bytes, &zbits, 4);
    View za = a, zb = b; // (batch, m, 1) and (batch, 1, n) zeros, dense
    za.buffer = zb.buffer = zero, za.offset = zb.offset = 0, za.rank = zb.rank = 3;
    za.shape[2] = zb.shape[1] = 1;
    za.strides[0] = m, za.strides[1] = za.strides[2] = 1;
    zb.strides[0] = zb.strides[1] = n, zb.strides[2] = 1;
    if (!s)
      s = gemm_unsplit(kernels, stream, za, zb, bias, res, o, act, dt, desc->alpha,
                       desc->bias != nullptr, desc->residual != nullptr);
    tl_status r = tl_buffer_release(zero); // synchronizes the device's streams first
    if (s) {
      tl_status_free(r);
      return s;
    }
    return r;
  }
  const int64_t kk = a.shape[2];
  int64_t splits = split_k;
  if (split_k == 0) { // tl.ops' linear.splitk_choice where TUNING["splitk_auto"] is on
    const bool auto_on = tuned_int(*kernels, "splitk_auto") != 0;
    const int64_t tiles = batch * cdiv(m, 64) * cdiv(n, 64);
    splits = 1;
    if (auto_on && tiles <= 4 && kk >= 2048)
      splits = std::max<int64_t>(2, std::min<int64_t>(32, kk / 512));
  }
  if (splits > 1)
    return gemm_split(kernels, stream, a, b, bias, res, o, act, dt, desc->alpha,
                      desc->bias != nullptr, desc->residual != nullptr, splits);
  return gemm_unsplit(kernels, stream, a, b, bias, res, o, act, dt, desc->alpha,
                      desc->bias != nullptr, desc->residual != nullptr);
}

tl_status tl_kernels_attention(tl_kernels kernels, tl_stream stream,
                               const tl_kernels_attention_desc *desc) {
  const char *fn = "tl_kernels_attention";
  if (!kernels || !desc)
    return fail(TL_STATUS_INVALID_ARGUMENT, "%s: kernels or desc is NULL", fn);
  // descs from before the padding masks end at key_lengths: they have none
  if (desc->struct_size < offsetof(tl_kernels_attention_desc, key_lengths))
    return fail(TL_STATUS_INVALID_ARGUMENT, "%s: desc struct_size is too small", fn);
  // minor 1's descs end at key_mask: key lengths and heads but no mask
  const bool has_lengths = desc->struct_size >= offsetof(tl_kernels_attention_desc, key_mask);
  const tl_kernels_tensor *klen = has_lengths ? desc->key_lengths : nullptr;
  const tl_kernels_tensor *kmask =
      desc->struct_size >= sizeof(tl_kernels_attention_desc) ? desc->key_mask : nullptr;
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
  const int64_t heads = klen || kmask ? desc->heads : 1;
  View lens;
  const char *mask_tag = "";
  if (tl_status s =
          padding_masks(fn, desc->q, klen, kmask, heads, group, k->shape[1], &lens, &mask_tag))
    return s;
  if (bh == 0 || s_len == 0 || d == 0)
    return nullptr;
  if (k->shape[1] == 0)
    return fail(TL_STATUS_INVALID_ARGUMENT, "%s: 'k' has no keys", fn);
  std::string name = std::string("attention") + (desc->causal ? "_causal" : "") + mask_tag +
                     (d <= 64 ? "_d64_" : "_d128_") + dt;
  tl_arg g;
  std::memset(&g, 0, sizeof g);
  g.struct_size = sizeof g;
  g.kind = TL_PARAM_SCALAR;
  g.dtype = TL_DTYPE_I32;
  g.i = group;
  tl_arg h = g; // H: the padding-mask specializations' batch entry of row bh is bh / H
  h.i = heads;
  return launch(kernels, stream, name, cdiv(s_len, 32), bh, 1,
                {tensor_arg(view(desc->q, 3)), tensor_arg(view(k, 3)), tensor_arg(view(v, 3)),
                 tensor_arg(view(desc->out, 3)), tensor_arg(view(lse, 2)), scalar_f32(desc->scale),
                 g, tensor_arg(lens), h});
}

#define TLK_REQUIRE(expr)                                                                          \
  do {                                                                                             \
    if (tl_status s_ = (expr))                                                                     \
      return s_;                                                                                   \
  } while (0)

static const char *const kReduction[] = {"sum", "mean", "max", "min", "argmax", "var"};

tl_status tl_kernels_reduce(tl_kernels kernels, tl_stream stream, tl_kernels_reduction op,
                            const tl_kernels_tensor *x, int32_t axis, float correction,
                            const tl_kernels_tensor *out) {
  const char *fn = "tl_kernels_reduce";
  if (!kernels)
    return fail(TL_STATUS_INVALID_ARGUMENT, "%s: kernels is NULL", fn);
  if (static_cast<unsigned>(op) > TL_KERNELS_VAR)
    return fail(TL_STATUS_INVALID_ARGUMENT, "%s: 'op' %d is not a reduction", fn,
                static_cast<int>(op));
  TLK_REQUIRE(check(fn, "x", x, 1, TL_HAL_MAX_RANK));
  TLK_REQUIRE(check(fn, "out", out, 1, TL_HAL_MAX_RANK));
  const char *dt = nullptr;
  TLK_REQUIRE(float_dtype(fn, "x", x, &dt));
  uint32_t ax = 0;
  TLK_REQUIRE(normalize_axis(fn, x, axis, &ax));
  // out: x's shape without the axis (rank 1 of extent 1 for a rank-1 x).
  bool same = x->rank == 1 ? out->rank == 1 && out->shape[0] == 1 : out->rank == x->rank - 1;
  for (uint32_t d = 0, o = 0; same && x->rank > 1 && d < x->rank; ++d)
    if (d != ax)
      same = out->shape[o++] == x->shape[d];
  if (!same)
    return fail(TL_STATUS_INVALID_ARGUMENT, "%s: 'out' has shape %s, x %s without axis %u", fn,
                shape_text(out->shape, out->rank).c_str(), shape_text(x->shape, x->rank).c_str(),
                ax);
  TLK_REQUIRE(
      need_dtype(fn, "out", out, op == TL_KERNELS_ARGMAX ? uint32_t{TL_DTYPE_I32} : x->dtype));
  View x3, o2 = over(out, 2);
  TLK_REQUIRE(axis_view(fn, "x", x, ax, &x3));
  uint32_t orank = x->rank == 1 ? 0 : out->rank;
  TLK_REQUIRE(merged(fn, "out", out, 0, std::min(ax, orank), &o2.shape[0], &o2.strides[0]));
  TLK_REQUIRE(merged(fn, "out", out, std::min(ax, orank), orank, &o2.shape[1], &o2.strides[1]));
  const int64_t outer = x3.shape[0], n = x3.shape[1], inner = x3.shape[2];
  if (outer == 0 || inner == 0)
    return nullptr;
  if (n == 0 && (op == TL_KERNELS_MAX || op == TL_KERNELS_MIN || op == TL_KERNELS_ARGMAX))
    return fail(TL_STATUS_INVALID_ARGUMENT,
                "%s: %s over axis %u of extent 0: no element, no value (numpy and torch refuse "
                "too)",
                fn, kReduction[op], ax);
  // n = 0, as numpy and torch: the sum 0, the mean and var NaN. The inner form's loop runs no
  // chunk: 0 times 1/0 is NaN, and var's sum of no squares over 0 - 0 too.
  const bool rows = inner == 1 && n > 0;
  // n - correction below 0 divides by 0, as numpy's and torch's max(n - c, 0)
  const float corr = n == 0 ? 0.0f : std::min(correction, static_cast<float>(n));
  return launch(
      kernels, stream, std::string(kReduction[op]) + (rows ? "_rows_" : "_inner_") + dt, outer,
      rows ? inner : cdiv(inner, 64), 1,
      {tensor_arg(x3), tensor_arg(o2), scalar_f32(1.0f / static_cast<float>(n)), scalar_f32(corr)});
}

tl_status tl_kernels_cumsum(tl_kernels kernels, tl_stream stream, const tl_kernels_tensor *x,
                            int32_t axis, const tl_kernels_tensor *out) {
  const char *fn = "tl_kernels_cumsum";
  if (!kernels)
    return fail(TL_STATUS_INVALID_ARGUMENT, "%s: kernels is NULL", fn);
  TLK_REQUIRE(check(fn, "x", x, 1, TL_HAL_MAX_RANK));
  TLK_REQUIRE(check(fn, "out", out, 1, TL_HAL_MAX_RANK));
  const char *dt = nullptr;
  TLK_REQUIRE(float_dtype(fn, "x", x, &dt));
  TLK_REQUIRE(need_dtype(fn, "out", out, x->dtype));
  bool same = out->rank == x->rank;
  for (uint32_t d = 0; same && d < x->rank; ++d)
    same = out->shape[d] == x->shape[d];
  if (!same)
    return fail(TL_STATUS_INVALID_ARGUMENT, "%s: 'out' has shape %s, x %s", fn,
                shape_text(out->shape, out->rank).c_str(), shape_text(x->shape, x->rank).c_str());
  uint32_t ax = 0;
  TLK_REQUIRE(normalize_axis(fn, x, axis, &ax));
  View x3, o3;
  TLK_REQUIRE(axis_view(fn, "x", x, ax, &x3));
  TLK_REQUIRE(axis_view(fn, "out", out, ax, &o3));
  if (x3.shape[0] == 0 || x3.shape[1] == 0 || x3.shape[2] == 0)
    return nullptr;
  const bool rows = x3.shape[2] == 1;
  // Along the last axis, where a device scans whole rows faster (TUNING["scan_rows"] of
  // python/tl/ops: 4 rows a program on nvptx, 32 threads a row; 8 on llvm-cpu, their add chains
  // interleaved; 64 on the tnpu, v.cumsum per row where a (n, 1) column is a transpose and a
  // one-lane scan): the rows as a (1, rows, n) view.
  const int64_t r = tuned_int(*kernels, "scan_rows");
  if (rows && r) {
    View x1 = x3, o1 = o3;
    for (View *v : {&x1, &o1}) {
      v->shape[2] = v->shape[1], v->strides[2] = v->strides[1];
      v->shape[1] = v->shape[0], v->strides[1] = v->strides[0];
      v->shape[0] = 1, v->strides[0] = 0;
    }
    return launch(kernels, stream, "cumsum_lastaxis_r" + std::to_string(r) + "_" + dt, 1,
                  cdiv(x3.shape[0], r), 1, {tensor_arg(x1), tensor_arg(o1)});
  }
  return launch(kernels, stream, std::string("cumsum") + (rows ? "_rows_" : "_inner_") + dt,
                x3.shape[0], rows ? 1 : cdiv(x3.shape[2], 64), 1, {tensor_arg(x3), tensor_arg(o3)});
}

tl_status tl_kernels_transpose(tl_kernels kernels, tl_stream stream, const tl_kernels_tensor *x,
                               const tl_kernels_tensor *out) {
  const char *fn = "tl_kernels_transpose";
  if (!kernels)
    return fail(TL_STATUS_INVALID_ARGUMENT, "%s: kernels is NULL", fn);
  TLK_REQUIRE(check(fn, "x", x, 2, 3));
  TLK_REQUIRE(check(fn, "out", out, 2, 3));
  const char *dt = nullptr;
  TLK_REQUIRE(float_dtype(fn, "x", x, &dt));
  TLK_REQUIRE(need_dtype(fn, "out", out, x->dtype));
  View x3 = view(x, 3), o3 = view(out, 3);
  const int64_t batch = x3.shape[0], rows = x3.shape[1], cols = x3.shape[2];
  if (x->rank == 3)
    TLK_REQUIRE(need_shape(fn, "out", out, {batch, cols, rows}));
  else
    TLK_REQUIRE(need_shape(fn, "out", out, {cols, rows}));
  TLK_REQUIRE(self_overlapping(fn, "out", out));
  TLK_REQUIRE(overlapping(fn, "x", x, out));
  if (batch == 0 || rows == 0 || cols == 0)
    return nullptr;
  return launch(kernels, stream, std::string("transpose_") + dt, cdiv(rows, 64), cdiv(cols, 64),
                batch, {tensor_arg(x3), tensor_arg(o3)});
}

tl_status tl_kernels_concat(tl_kernels kernels, tl_stream stream, uint32_t count,
                            const tl_kernels_tensor *const *inputs, int32_t axis,
                            const tl_kernels_tensor *out) {
  const char *fn = "tl_kernels_concat";
  if (!kernels)
    return fail(TL_STATUS_INVALID_ARGUMENT, "%s: kernels is NULL", fn);
  if (count == 0 || !inputs)
    return fail(TL_STATUS_INVALID_ARGUMENT, "%s: 'inputs' is empty", fn);
  TLK_REQUIRE(check(fn, "out", out, 1, TL_HAL_MAX_RANK));
  const char *dt = out->dtype == TL_DTYPE_I32 ? "i32" : suffix(out->dtype);
  if (!dt)
    return fail(TL_STATUS_INVALID_ARGUMENT, "%s: 'out' is %s (f32, f16, bf16, i32)", fn,
                dname(out->dtype));
  uint32_t ax = 0;
  TLK_REQUIRE(normalize_axis(fn, out, axis, &ax));
  int64_t total = 0;
  char arg[32];
  for (uint32_t i = 0; i < count; ++i) {
    std::snprintf(arg, sizeof arg, "inputs[%u]", i);
    const tl_kernels_tensor *t = inputs[i];
    TLK_REQUIRE(check(fn, arg, t, 1, TL_HAL_MAX_RANK));
    TLK_REQUIRE(need_dtype(fn, arg, t, out->dtype));
    bool same = t->rank == out->rank;
    for (uint32_t d = 0; same && d < t->rank; ++d)
      same = d == ax || t->shape[d] == out->shape[d];
    if (!same)
      return fail(TL_STATUS_INVALID_ARGUMENT, "%s: '%s' has shape %s, out %s outside axis %u", fn,
                  arg, shape_text(t->shape, t->rank).c_str(),
                  shape_text(out->shape, out->rank).c_str(), ax);
    total += t->shape[ax];
  }
  if (total != out->shape[ax])
    return fail(TL_STATUS_INVALID_ARGUMENT,
                "%s: 'out' has extent %lld along axis %u, the inputs %lld in all", fn,
                static_cast<long long>(out->shape[ax]), ax, static_cast<long long>(total));
  View o3;
  TLK_REQUIRE(axis_view(fn, "out", out, ax, &o3));
  std::vector<View> pieces(count);
  for (uint32_t i = 0; i < count; ++i) {
    std::snprintf(arg, sizeof arg, "inputs[%u]", i);
    TLK_REQUIRE(axis_view(fn, arg, inputs[i], ax, &pieces[i]));
  }
  int64_t at = 0;
  for (uint32_t i = 0; i < count; ++i) {
    const View &x3 = pieces[i];
    const int64_t n = x3.shape[1];
    if (x3.shape[0] && n && x3.shape[2])
      TLK_REQUIRE(launch(kernels, stream, std::string("copy_") + dt, x3.shape[0], cdiv(n, 64),
                         cdiv(x3.shape[2], 64), {tensor_arg(x3), tensor_arg(slice(o3, 1, at, n))}));
    at += n;
  }
  return nullptr;
}

tl_status tl_kernels_embedding(tl_kernels kernels, tl_stream stream, const tl_kernels_tensor *table,
                               const tl_kernels_tensor *ids, const tl_kernels_tensor *out) {
  const char *fn = "tl_kernels_embedding";
  if (!kernels)
    return fail(TL_STATUS_INVALID_ARGUMENT, "%s: kernels is NULL", fn);
  TLK_REQUIRE(check(fn, "table", table, 2, 2));
  TLK_REQUIRE(check(fn, "ids", ids, 1, 1));
  TLK_REQUIRE(check(fn, "out", out, 2, 2));
  const char *dt = nullptr;
  TLK_REQUIRE(float_dtype(fn, "table", table, &dt));
  TLK_REQUIRE(need_dtype(fn, "ids", ids, TL_DTYPE_I32));
  TLK_REQUIRE(need_dtype(fn, "out", out, table->dtype));
  const int64_t n = ids->shape[0], d = table->shape[1];
  TLK_REQUIRE(need_shape(fn, "out", out, {n, d}));
  if (n == 0 || d == 0)
    return nullptr;
  if (table->shape[0] == 0)
    return fail(TL_STATUS_INVALID_ARGUMENT, "%s: 'table' has no rows", fn);
  // the tnpu: row gathers of 256-column runs (tl.ops' TUNING["embedding_gather"]; one
  // dma.gather of 64 rows where each row was a DMA command of its own)
  const bool rows = tuned_int(*kernels, "embedding_gather") != 0 && d >= 256;
  return launch(kernels, stream, std::string(rows ? "embedding_rows_" : "embedding_") + dt,
                cdiv(n, rows ? 64 : 16), 1, 1,
                {tensor_arg(view(table, 2)), tensor_arg(view(ids, 1)), tensor_arg(view(out, 2))});
}

tl_status tl_kernels_embedding_backward(tl_kernels kernels, tl_stream stream,
                                        const tl_kernels_tensor *dout, const tl_kernels_tensor *ids,
                                        const tl_kernels_tensor *dtable) {
  const char *fn = "tl_kernels_embedding_backward";
  if (!kernels)
    return fail(TL_STATUS_INVALID_ARGUMENT, "%s: kernels is NULL", fn);
  TLK_REQUIRE(check(fn, "dout", dout, 2, 2));
  TLK_REQUIRE(check(fn, "ids", ids, 1, 1));
  TLK_REQUIRE(check(fn, "dtable", dtable, 2, 2));
  const char *dt = nullptr;
  TLK_REQUIRE(float_dtype(fn, "dout", dout, &dt));
  TLK_REQUIRE(need_dtype(fn, "ids", ids, TL_DTYPE_I32));
  TLK_REQUIRE(need_dtype(fn, "dtable", dtable, TL_DTYPE_F32));
  const int64_t n = ids->shape[0], d = dout->shape[1], v = dtable->shape[0];
  TLK_REQUIRE(need_shape(fn, "dout", dout, {n, d}));
  TLK_REQUIRE(need_shape(fn, "dtable", dtable, {v, d}));
  if ((v > 1 && dtable->strides[0] != d) || (d > 1 && dtable->strides[1] != 1))
    return fail(TL_STATUS_INVALID_ARGUMENT, "%s: 'dtable' is not dense (row-major)", fn);
  if (v == 0 || d == 0)
    return nullptr;
  const uint32_t zero = 0;
  TLK_REQUIRE(tl_stream_fill(stream, dtable->buffer, dtable->offset_bytes,
                             static_cast<uint64_t>(v * d) * 4, &zero, 4));
  if (n == 0)
    return nullptr;
  return launch(kernels, stream, std::string("embedding_backward_") + dt, cdiv(n, 16), 1, 1,
                {tensor_arg(view(dout, 2)), tensor_arg(view(ids, 1)), tensor_arg(view(dtable, 2))});
}

// logits (N, C) float, target (N) i32: the checks cross-entropy's entries share.
static tl_status cross_entropy_args(const char *fn, const tl_kernels_tensor *logits,
                                    const tl_kernels_tensor *target, const char **dt) {
  TLK_REQUIRE(check(fn, "logits", logits, 2, 2));
  TLK_REQUIRE(check(fn, "target", target, 1, 1));
  TLK_REQUIRE(float_dtype(fn, "logits", logits, dt));
  TLK_REQUIRE(need_dtype(fn, "target", target, TL_DTYPE_I32));
  return need_shape(fn, "target", target, {logits->shape[0]});
}

tl_status tl_kernels_cross_entropy(tl_kernels kernels, tl_stream stream,
                                   const tl_kernels_tensor *logits, const tl_kernels_tensor *target,
                                   int32_t ignore_index, const tl_kernels_tensor *loss) {
  const char *fn = "tl_kernels_cross_entropy";
  if (!kernels)
    return fail(TL_STATUS_INVALID_ARGUMENT, "%s: kernels is NULL", fn);
  const char *dt = nullptr;
  TLK_REQUIRE(cross_entropy_args(fn, logits, target, &dt));
  TLK_REQUIRE(check(fn, "loss", loss, 1, 1));
  TLK_REQUIRE(need_dtype(fn, "loss", loss, TL_DTYPE_F32));
  TLK_REQUIRE(need_shape(fn, "loss", loss, {logits->shape[0]}));
  if (logits->shape[0] == 0)
    return nullptr;
  if (logits->shape[1] == 0)
    return fail(TL_STATUS_INVALID_ARGUMENT, "%s: 'logits' has no classes", fn);
  return launch(kernels, stream, std::string("cross_entropy_") + dt, logits->shape[0], 1, 1,
                {tensor_arg(view(logits, 2)), tensor_arg(view(target, 1)),
                 tensor_arg(view(loss, 1)), scalar_i32(ignore_index)});
}

tl_status tl_kernels_cross_entropy_backward(tl_kernels kernels, tl_stream stream,
                                            const tl_kernels_tensor *logits,
                                            const tl_kernels_tensor *target,
                                            const tl_kernels_tensor *scale, int32_t ignore_index,
                                            const tl_kernels_tensor *dlogits) {
  const char *fn = "tl_kernels_cross_entropy_backward";
  if (!kernels)
    return fail(TL_STATUS_INVALID_ARGUMENT, "%s: kernels is NULL", fn);
  const char *dt = nullptr;
  TLK_REQUIRE(cross_entropy_args(fn, logits, target, &dt));
  TLK_REQUIRE(check(fn, "scale", scale, 1, 1));
  TLK_REQUIRE(need_dtype(fn, "scale", scale, TL_DTYPE_F32));
  TLK_REQUIRE(need_shape(fn, "scale", scale, {logits->shape[0]}));
  TLK_REQUIRE(check(fn, "dlogits", dlogits, 2, 2));
  TLK_REQUIRE(need_dtype(fn, "dlogits", dlogits, logits->dtype));
  TLK_REQUIRE(need_shape(fn, "dlogits", dlogits, {logits->shape[0], logits->shape[1]}));
  if (logits->shape[0] == 0 || logits->shape[1] == 0)
    return nullptr;
  return launch(
      kernels, stream, std::string("cross_entropy_backward_") + dt, logits->shape[0], 1, 1,
      {tensor_arg(view(logits, 2)), tensor_arg(view(target, 1)), tensor_arg(view(scale, 1)),
       tensor_arg(view(dlogits, 2)), scalar_i32(ignore_index)});
}

tl_status tl_kernels_rope(tl_kernels kernels, tl_stream stream, const tl_kernels_tensor *x,
                          const tl_kernels_tensor *cos, const tl_kernels_tensor *sin,
                          const tl_kernels_tensor *out) {
  const char *fn = "tl_kernels_rope";
  if (!kernels)
    return fail(TL_STATUS_INVALID_ARGUMENT, "%s: kernels is NULL", fn);
  TLK_REQUIRE(check(fn, "x", x, 2, 3));
  TLK_REQUIRE(check(fn, "cos", cos, 2, 2));
  TLK_REQUIRE(check(fn, "sin", sin, 2, 2));
  TLK_REQUIRE(check(fn, "out", out, 2, 3));
  const char *dt = nullptr;
  TLK_REQUIRE(float_dtype(fn, "x", x, &dt));
  for (auto [arg, t] : {std::pair{"cos", cos}, {"sin", sin}, {"out", out}})
    TLK_REQUIRE(same_dtype(fn, arg, t, x->dtype));
  View x3 = view(x, 3), o3 = view(out, 3);
  const int64_t rows = x3.shape[0], s = x3.shape[1], d = x3.shape[2], h = d / 2;
  if (d % 2)
    return fail(TL_STATUS_INVALID_ARGUMENT, "%s: 'x' has an odd last dimension %lld", fn,
                static_cast<long long>(d));
  TLK_REQUIRE(need_shape(fn, "cos", cos, {s, h}));
  TLK_REQUIRE(need_shape(fn, "sin", sin, {s, h}));
  if (out->rank != x->rank || o3.shape[0] != rows || o3.shape[1] != s || o3.shape[2] != d)
    return fail(TL_STATUS_INVALID_ARGUMENT, "%s: 'out' has shape %s, x %s", fn,
                shape_text(out->shape, out->rank).c_str(), shape_text(x->shape, x->rank).c_str());
  if (rows == 0 || s == 0 || h == 0)
    return nullptr;
  return launch(kernels, stream, std::string("rope_") + dt, cdiv(s, 16), rows, 1,
                {tensor_arg(slice(x3, 2, 0, h)), tensor_arg(slice(x3, 2, h, h)),
                 tensor_arg(view(cos, 2)), tensor_arg(view(sin, 2)), tensor_arg(slice(o3, 2, 0, h)),
                 tensor_arg(slice(o3, 2, h, h))});
}

tl_status tl_kernels_gemv(tl_kernels kernels, tl_stream stream, const tl_kernels_tensor *a,
                          const tl_kernels_tensor *x, const tl_kernels_tensor *bias, float alpha,
                          const tl_kernels_tensor *out) {
  const char *fn = "tl_kernels_gemv";
  if (!kernels)
    return fail(TL_STATUS_INVALID_ARGUMENT, "%s: kernels is NULL", fn);
  TLK_REQUIRE(check(fn, "a", a, 2, 2));
  TLK_REQUIRE(check(fn, "x", x, 1, 1));
  TLK_REQUIRE(check(fn, "out", out, 1, 1));
  const char *dt = nullptr;
  TLK_REQUIRE(float_dtype(fn, "a", a, &dt));
  const int64_t m = a->shape[0], k = a->shape[1];
  TLK_REQUIRE(need_shape(fn, "x", x, {k}));
  TLK_REQUIRE(need_shape(fn, "out", out, {m}));
  if (bias) {
    TLK_REQUIRE(check(fn, "bias", bias, 1, 1));
    TLK_REQUIRE(need_shape(fn, "bias", bias, {m}));
  }
  for (auto [arg, t] : {std::pair{"x", x}, {"bias", bias}, {"out", out}})
    TLK_REQUIRE(same_dtype(fn, arg, t, a->dtype));
  if (m == 0)
    return nullptr;
  // The target's tile (TUNING["gemv_block_k"], ["gemv_elements"]: gemv[_bias]_tile<BM>x<BK>_<dt>
  // where it is not the default 16 x 512): llvm-cpu reads whole rows of up to 4096 columns, the
  // tnpu 128 x 1024 blocks.
  const int64_t bk = tuned_int(*kernels, "gemv_block_k");
  const int64_t bm = bk > 0 ? std::max<int64_t>(1, tuned_int(*kernels, "gemv_elements") / bk) : 16;
  std::string name = bias ? "gemv_bias_" : "gemv_";
  if (bm != 16 || bk != 512)
    name += "tile" + std::to_string(bm) + "x" + std::to_string(bk) + "_";
  return launch(kernels, stream, name + dt, cdiv(m, bm), 1, 1,
                {tensor_arg(view(a, 2)), tensor_arg(view(x, 1)),
                 tensor_arg(bias ? view(bias, 1) : unread(out, 1)), tensor_arg(view(out, 1)),
                 scalar_f32(alpha)});
}

tl_status tl_kernels_conv2d(tl_kernels kernels, tl_stream stream,
                            const tl_kernels_conv2d_desc *desc) {
  const char *fn = "tl_kernels_conv2d";
  if (!kernels || !desc)
    return fail(TL_STATUS_INVALID_ARGUMENT, "%s: kernels or desc is NULL", fn);
  // minor 1's descs end at dilation (their size may cover it as padding: both new fields or none)
  if (desc->struct_size < offsetof(tl_kernels_conv2d_desc, dilation))
    return fail(TL_STATUS_INVALID_ARGUMENT, "%s: desc struct_size is too small", fn);
  const bool v2 = desc->struct_size >= offsetof(tl_kernels_conv2d_desc, groups) + sizeof(uint32_t);
  const int64_t dil = v2 && desc->dilation ? desc->dilation : 1;
  const int64_t groups = v2 && desc->groups ? desc->groups : 1;
  const tl_kernels_tensor *x = desc->x, *w = desc->weight, *out = desc->out;
  for (auto [arg, t] : {std::pair{"x", x}, {"weight", w}, {"out", out}})
    TLK_REQUIRE(check(fn, arg, t, 4, 4));
  const char *dt = nullptr;
  TLK_REQUIRE(float_dtype(fn, "x", x, &dt));
  const int64_t n = x->shape[0], ch = x->shape[1], h = x->shape[2], wd = x->shape[3];
  const int64_t oc = w->shape[0], kh = w->shape[2], kw = w->shape[3];
  if (ch % groups || oc % groups)
    return fail(TL_STATUS_INVALID_ARGUMENT,
                "%s: 'groups' %lld does not divide x's %lld channels and weight's %lld outputs", fn,
                static_cast<long long>(groups), static_cast<long long>(ch),
                static_cast<long long>(oc));
  const int64_t cg = ch / groups, og = oc / groups;
  if (w->shape[1] != cg)
    return fail(TL_STATUS_INVALID_ARGUMENT,
                "%s: 'weight' has %lld input channels, expected C/groups = %lld", fn,
                static_cast<long long>(w->shape[1]), static_cast<long long>(cg));
  if (desc->bias) {
    TLK_REQUIRE(check(fn, "bias", desc->bias, 1, 1));
    TLK_REQUIRE(need_shape(fn, "bias", desc->bias, {oc}));
  }
  for (auto [arg, t] : {std::pair{"weight", w}, {"bias", desc->bias}, {"out", out}})
    TLK_REQUIRE(same_dtype(fn, arg, t, x->dtype));
  const int64_t st = desc->stride, pad = desc->padding;
  if (st < 1)
    return fail(TL_STATUS_INVALID_ARGUMENT, "%s: 'stride' is 0", fn);
  const int64_t ekh = dil * (kh - 1) + 1, ekw = dil * (kw - 1) + 1; // the dilated window
  const int64_t oh = (h + 2 * pad - ekh) / st + 1, ow = (wd + 2 * pad - ekw) / st + 1;
  if (h + 2 * pad < ekh || wd + 2 * pad < ekw)
    return fail(TL_STATUS_INVALID_ARGUMENT,
                "%s: 'weight''s window (dilation %lld) does not fit the padded x", fn,
                static_cast<long long>(dil));
  TLK_REQUIRE(need_shape(fn, "out", out, {n, oc, oh, ow}));
  if (desc->activation != TL_KERNELS_ACT_NONE && desc->activation != TL_KERNELS_ACT_RELU)
    return fail(TL_STATUS_UNIMPLEMENTED,
                "%s: 'activation' %u is not fused into conv2d (none, "
                "relu)",
                fn, desc->activation);
  const bool built = kh == kw && ((dil == 1 && kh == 3 && st == 1 && pad == 1) ||
                                  (dil == 1 && kh == 3 && st == 2 && pad == 1) ||
                                  (dil == 1 && kh == 1 && st == 1 && pad == 0) ||
                                  (dil == 2 && kh == 3 && st == 1 && pad == 2));
  if (!built)
    return fail(TL_STATUS_UNIMPLEMENTED,
                "%s: no specialization for a %lldx%lld window at stride %lld, padding %lld, "
                "dilation %lld (3x3 s1 p1, 3x3 s2 p1, 1x1 s1 p0, 3x3 s1 p2 dilation 2)",
                fn, static_cast<long long>(kh), static_cast<long long>(kw),
                static_cast<long long>(st), static_cast<long long>(pad),
                static_cast<long long>(dil));
  // The kernel's views per (image, group): x (N groups, C/groups, H W), w (groups, C/groups KH
  // KW, OC/groups) (each group's weight transposed), bias (groups, OC/groups), out (N groups,
  // OC/groups, OH OW): N and C (and N and OC) merge, each image's channels split in groups.
  View x3 = over(x, 3), w3 = over(w, 3), o3 = over(out, 3);
  int64_t nc = 0;
  TLK_REQUIRE(merged(fn, "x", x, 0, 2, &nc, &x3.strides[1]));
  x3.shape[0] = n * groups, x3.strides[0] = cg * x3.strides[1], x3.shape[1] = cg;
  TLK_REQUIRE(merged(fn, "x", x, 2, 4, &x3.shape[2], &x3.strides[2]));
  w3.shape[0] = groups, w3.strides[0] = og * w->strides[0];
  TLK_REQUIRE(merged(fn, "weight", w, 1, 4, &w3.shape[1], &w3.strides[1]));
  w3.shape[2] = og, w3.strides[2] = w->strides[0];
  TLK_REQUIRE(merged(fn, "out", out, 0, 2, &nc, &o3.strides[1]));
  o3.shape[0] = n * groups, o3.strides[0] = og * o3.strides[1], o3.shape[1] = og;
  TLK_REQUIRE(merged(fn, "out", out, 2, 4, &o3.shape[2], &o3.strides[2]));
  View b2 = unread(x, 2);
  if (desc->bias) {
    b2 = over(desc->bias, 2);
    b2.shape[0] = groups, b2.strides[0] = og * desc->bias->strides[0];
    b2.shape[1] = og, b2.strides[1] = desc->bias->strides[0];
  }
  if (n == 0 || oc == 0 || oh * ow == 0)
    return nullptr;
  if (ch == 0)
    return fail(TL_STATUS_INVALID_ARGUMENT, "%s: 'x' has no channels", fn);
  std::string name = "conv2d_k" + std::to_string(kh) + "s" + std::to_string(st) + "p" +
                     std::to_string(pad) + (dil > 1 ? "d" + std::to_string(dil) : "") +
                     (desc->bias ? "_bias" : "") +
                     (desc->activation == TL_KERNELS_ACT_RELU ? "_relu_" : "_") + dt;
  return launch(kernels, stream, name, cdiv(oh * ow, 64), cdiv(og, 64), n * groups,
                {tensor_arg(x3), tensor_arg(w3), tensor_arg(b2), tensor_arg(o3), scalar_i32(h),
                 scalar_i32(wd), scalar_i32(ow), scalar_i32(groups)});
}

// `t` (N, C, H, W) or (N C, H, W) as the (N C, H, W) view.
static tl_status planes(const char *fn, const char *arg, const tl_kernels_tensor *t, View *v) {
  *v = over(t, 3);
  TLK_REQUIRE(merged(fn, arg, t, 0, t->rank - 2, &v->shape[0], &v->strides[0]));
  for (int d = 1; d < 3; ++d)
    v->shape[d] = t->shape[t->rank - 3 + d], v->strides[d] = t->strides[t->rank - 3 + d];
  return nullptr;
}

tl_status tl_kernels_pool2d(tl_kernels kernels, tl_stream stream, int32_t avg, uint32_t kernel_size,
                            uint32_t stride, const tl_kernels_tensor *x,
                            const tl_kernels_tensor *out) {
  const char *fn = "tl_kernels_pool2d";
  if (!kernels)
    return fail(TL_STATUS_INVALID_ARGUMENT, "%s: kernels is NULL", fn);
  TLK_REQUIRE(check(fn, "x", x, 3, 4));
  TLK_REQUIRE(check(fn, "out", out, 3, 4));
  const char *dt = nullptr;
  TLK_REQUIRE(float_dtype(fn, "x", x, &dt));
  TLK_REQUIRE(need_dtype(fn, "out", out, x->dtype));
  const int64_t k = kernel_size, st = stride;
  if (k < 1 || st < 1)
    return fail(TL_STATUS_INVALID_ARGUMENT, "%s: 'kernel_size' and 'stride' must be >= 1", fn);
  const int64_t h = x->shape[x->rank - 2], w = x->shape[x->rank - 1];
  if (h < k || w < k)
    return fail(TL_STATUS_INVALID_ARGUMENT, "%s: 'x' (%lld x %lld) is smaller than the window %lld",
                fn, static_cast<long long>(h), static_cast<long long>(w),
                static_cast<long long>(k));
  const int64_t oh = (h - k) / st + 1, ow = (w - k) / st + 1;
  bool same =
      out->rank == x->rank && out->shape[out->rank - 2] == oh && out->shape[out->rank - 1] == ow;
  for (uint32_t d = 0; same && d + 2 < x->rank; ++d)
    same = out->shape[d] == x->shape[d];
  if (!same)
    return fail(TL_STATUS_INVALID_ARGUMENT,
                "%s: 'out' has shape %s, expected x's with (OH, OW) = "
                "(%lld, %lld)",
                fn, shape_text(out->shape, out->rank).c_str(), static_cast<long long>(oh),
                static_cast<long long>(ow));
  if (!((k == 2 && st == 2) || (k == 3 && st == 2) || (k == 3 && st == 1)))
    return fail(TL_STATUS_UNIMPLEMENTED,
                "%s: no specialization for window %lld at stride %lld (2 s2, 3 s2, 3 s1)", fn,
                static_cast<long long>(k), static_cast<long long>(st));
  View x3, o3;
  TLK_REQUIRE(planes(fn, "x", x, &x3));
  TLK_REQUIRE(planes(fn, "out", out, &o3));
  if (x3.shape[0] == 0)
    return nullptr;
  std::string name = std::string(avg ? "avg" : "max") + "_pool2d_k" + std::to_string(k) + "s" +
                     std::to_string(st) + "_" + dt;
  return launch(kernels, stream, name, x3.shape[0], cdiv(oh, 16), cdiv(ow, 64),
                {tensor_arg(x3), tensor_arg(o3)});
}

static constexpr int64_t kTopkBlock = 4096;

static uint64_t align256(uint64_t bytes) { return (bytes + 255) / 256 * 256; }

// The candidates of a topk round of `segments` segments: values then i32 indices, each aligned.
static uint64_t topk_region(int64_t rows, int64_t segments, int64_t k, uint32_t dtype) {
  const uint64_t count = static_cast<uint64_t>(rows * segments * k);
  return align256(count * esize(dtype)) + align256(count * 4);
}

// The width of a row after a round over `width` columns: every segment's k candidates, the last
// (ragged) segment's at most its width.
static int64_t topk_next(int64_t width, int64_t k) {
  const int64_t segments = cdiv(width, kTopkBlock);
  return (segments - 1) * k + std::min(k, width - (segments - 1) * kTopkBlock);
}

uint64_t tl_kernels_topk_workspace_bytes(int64_t rows, int64_t n, uint32_t k, uint32_t dtype) {
  if (rows <= 0 || n <= kTopkBlock || k < 1 || !suffix(dtype))
    return 0;
  // Rounds alternate between two regions: the first round's (the widest) and the second's.
  const int64_t s2 = cdiv(topk_next(n, k), kTopkBlock);
  return topk_region(rows, cdiv(n, kTopkBlock), k, dtype) +
         (s2 > 1 ? topk_region(rows, s2, k, dtype) : 0);
}

tl_status tl_kernels_topk(tl_kernels kernels, tl_stream stream, const tl_kernels_tensor *x,
                          uint32_t k, const tl_kernels_tensor *values,
                          const tl_kernels_tensor *indices, tl_buffer workspace) {
  const char *fn = "tl_kernels_topk";
  if (!kernels)
    return fail(TL_STATUS_INVALID_ARGUMENT, "%s: kernels is NULL", fn);
  TLK_REQUIRE(check(fn, "x", x, 2, 2));
  TLK_REQUIRE(check(fn, "values", values, 2, 2));
  TLK_REQUIRE(check(fn, "indices", indices, 2, 2));
  const char *dt = nullptr;
  TLK_REQUIRE(float_dtype(fn, "x", x, &dt));
  TLK_REQUIRE(need_dtype(fn, "values", values, x->dtype));
  TLK_REQUIRE(need_dtype(fn, "indices", indices, TL_DTYPE_I32));
  const int64_t rows = x->shape[0], n = x->shape[1], kk = k;
  if (k < 1 || kk > std::min(n, kTopkBlock))
    return fail(TL_STATUS_INVALID_ARGUMENT, "%s: 'k' %u is not in [1, %lld]", fn, k,
                static_cast<long long>(std::min(n, kTopkBlock)));
  TLK_REQUIRE(need_shape(fn, "values", values, {rows, kk}));
  TLK_REQUIRE(need_shape(fn, "indices", indices, {rows, kk}));
  if (k != 2 && k != 8)
    return fail(TL_STATUS_UNIMPLEMENTED, "%s: no specialization for 'k' %u (2, 8)", fn, k);
  if (n > kTopkBlock && !workspace && rows > 0)
    return fail(
        TL_STATUS_INVALID_ARGUMENT,
        "%s: 'workspace' is NULL for rows of %lld (over 4096: %llu bytes needed)", fn,
        static_cast<long long>(n),
        static_cast<unsigned long long>(tl_kernels_topk_workspace_bytes(rows, n, k, x->dtype)));
  if (rows == 0)
    return nullptr;
  const std::string kd = "_k" + std::to_string(k) + "_" + dt;
  if (n <= kTopkBlock)
    return launch(
        kernels, stream, "topk" + kd, rows, 1, 1,
        {tensor_arg(view(x, 2)), tensor_arg(view(values, 2)), tensor_arg(view(indices, 2))});
  // Rounds: the candidates alternate between region 0 (the first round's, the widest) and
  // region 1 (the second's); a row's width at least halves each round (k < 4096 < width).
  const uint64_t region1 = topk_region(rows, cdiv(n, kTopkBlock), kk, x->dtype);
  View cur = view(x, 2), cur_idx = unread(indices, 2);
  int64_t width = n;
  for (int round = 0;; ++round) {
    const int64_t segments = cdiv(width, kTopkBlock);
    View out_v = view(values, 2), out_i = view(indices, 2);
    if (segments > 1) {
      const uint64_t at = round % 2 ? region1 : 0,
                     count = static_cast<uint64_t>(rows * segments * kk);
      for (View *v : {&out_v, &out_i}) {
        *v = View{};
        v->buffer = workspace;
        v->rank = 2;
        v->shape[0] = rows, v->shape[1] = segments * kk;
        v->strides[0] = segments * kk, v->strides[1] = 1;
      }
      out_v.dtype = x->dtype, out_v.offset = at;
      out_i.dtype = TL_DTYPE_I32, out_i.offset = at + align256(count * esize(x->dtype));
    }
    TLK_REQUIRE(launch(
        kernels, stream, std::string("topk_segments") + (round ? "_gather" : "") + kd, rows,
        segments, 1, {tensor_arg(cur), tensor_arg(cur_idx), tensor_arg(out_v), tensor_arg(out_i)}));
    if (segments == 1)
      return nullptr;
    width = topk_next(width, kk);
    cur = slice(out_v, 1, 0, width);
    cur_idx = slice(out_i, 1, 0, width);
  }
}

tl_status tl_kernels_quantize_int8(tl_kernels kernels, tl_stream stream, const tl_kernels_tensor *x,
                                   const tl_kernels_tensor *q, const tl_kernels_tensor *scale) {
  const char *fn = "tl_kernels_quantize_int8";
  if (!kernels)
    return fail(TL_STATUS_INVALID_ARGUMENT, "%s: kernels is NULL", fn);
  TLK_REQUIRE(check(fn, "x", x, 2, 2));
  TLK_REQUIRE(check(fn, "q", q, 2, 2));
  TLK_REQUIRE(check(fn, "scale", scale, 1, 1));
  const char *dt = nullptr;
  TLK_REQUIRE(float_dtype(fn, "x", x, &dt));
  TLK_REQUIRE(need_dtype(fn, "q", q, TL_DTYPE_I8));
  TLK_REQUIRE(need_dtype(fn, "scale", scale, TL_DTYPE_F32));
  TLK_REQUIRE(need_shape(fn, "q", q, {x->shape[0], x->shape[1]}));
  TLK_REQUIRE(need_shape(fn, "scale", scale, {x->shape[0]}));
  if (x->shape[0] == 0)
    return nullptr;
  // As tl.ops.quantize_int8: the scales (a pass over each row), then the values.
  TLK_REQUIRE(launch(kernels, stream, std::string("quant_scale_int8_") + dt, x->shape[0], 1, 1,
                     {tensor_arg(view(x, 2)), tensor_arg(view(scale, 1))}));
  if (x->shape[1] == 0)
    return nullptr;
  return launch(kernels, stream, std::string("quantize_int8_") + dt, cdiv(x->shape[0], 4),
                cdiv(x->shape[1], 1024), 1,
                {tensor_arg(view(x, 2)), tensor_arg(view(scale, 1)), tensor_arg(view(q, 2))});
}

tl_status tl_kernels_dequantize_int8(tl_kernels kernels, tl_stream stream,
                                     const tl_kernels_tensor *q, const tl_kernels_tensor *scale,
                                     const tl_kernels_tensor *out) {
  const char *fn = "tl_kernels_dequantize_int8";
  if (!kernels)
    return fail(TL_STATUS_INVALID_ARGUMENT, "%s: kernels is NULL", fn);
  TLK_REQUIRE(check(fn, "q", q, 2, 2));
  TLK_REQUIRE(check(fn, "scale", scale, 1, 1));
  TLK_REQUIRE(check(fn, "out", out, 2, 2));
  const char *dt = nullptr;
  TLK_REQUIRE(need_dtype(fn, "q", q, TL_DTYPE_I8));
  TLK_REQUIRE(need_dtype(fn, "scale", scale, TL_DTYPE_F32));
  TLK_REQUIRE(float_dtype(fn, "out", out, &dt));
  TLK_REQUIRE(need_shape(fn, "scale", scale, {q->shape[0]}));
  TLK_REQUIRE(need_shape(fn, "out", out, {q->shape[0], q->shape[1]}));
  if (q->shape[0] == 0 || q->shape[1] == 0)
    return nullptr;
  return launch(kernels, stream, std::string("dequantize_int8_") + dt, cdiv(q->shape[0], 4),
                cdiv(q->shape[1], 1024), 1,
                {tensor_arg(view(q, 2)), tensor_arg(view(scale, 1)), tensor_arg(view(out, 2))});
}

tl_status tl_kernels_activation_backward(tl_kernels kernels, tl_stream stream,
                                         tl_kernels_activation act, float alpha,
                                         const tl_kernels_tensor *x, const tl_kernels_tensor *dy,
                                         const tl_kernels_tensor *dx) {
  const char *fn = "tl_kernels_activation_backward";
  if (!kernels)
    return fail(TL_STATUS_INVALID_ARGUMENT, "%s: kernels is NULL", fn);
  if (act == TL_KERNELS_ACT_NONE || static_cast<unsigned>(act) > TL_KERNELS_ACT_LEAKY_RELU)
    return fail(TL_STATUS_INVALID_ARGUMENT, "%s: 'act' %d is not an activation", fn,
                static_cast<int>(act));
  TLK_REQUIRE(check(fn, "dx", dx, 1, 2));
  const char *dt = nullptr;
  TLK_REQUIRE(float_dtype(fn, "dx", dx, &dt));
  View o = view(dx, 2), vx, vdy;
  TLK_REQUIRE(broadcast2(fn, "x", x, o, &vx));
  TLK_REQUIRE(broadcast2(fn, "dy", dy, o, &vdy));
  TLK_REQUIRE(same_dtype(fn, "x", x, dx->dtype));
  TLK_REQUIRE(same_dtype(fn, "dy", dy, dx->dtype));
  if (o.shape[0] == 0 || o.shape[1] == 0)
    return nullptr;
  return launch(kernels, stream, std::string(kActivation[act]) + "_backward_" + dt,
                cdiv(o.shape[0], 4), cdiv(o.shape[1], 1024), 1,
                {tensor_arg(vx), tensor_arg(vdy), tensor_arg(o), scalar_f32(alpha)});
}

tl_status tl_kernels_softmax_backward(tl_kernels kernels, tl_stream stream, int32_t log,
                                      const tl_kernels_tensor *y, const tl_kernels_tensor *dy,
                                      const tl_kernels_tensor *dx) {
  const char *fn = "tl_kernels_softmax_backward";
  if (!kernels)
    return fail(TL_STATUS_INVALID_ARGUMENT, "%s: kernels is NULL", fn);
  for (auto [arg, t] : {std::pair{"y", y}, {"dy", dy}, {"dx", dx}})
    TLK_REQUIRE(check(fn, arg, t, 2, 2));
  const char *dt = nullptr;
  TLK_REQUIRE(float_dtype(fn, "y", y, &dt));
  for (auto [arg, t] : {std::pair{"dy", dy}, {"dx", dx}}) {
    TLK_REQUIRE(same_dtype(fn, arg, t, y->dtype));
    TLK_REQUIRE(need_shape(fn, arg, t, {y->shape[0], y->shape[1]}));
  }
  if (y->shape[0] == 0 || y->shape[1] == 0)
    return nullptr;
  return launch(kernels, stream,
                std::string(log ? "log_softmax_backward_" : "softmax_backward_") + dt, y->shape[0],
                1, 1, {tensor_arg(view(y, 2)), tensor_arg(view(dy, 2)), tensor_arg(view(dx, 2))});
}

tl_status tl_kernels_layernorm_backward(tl_kernels kernels, tl_stream stream, int32_t rms,
                                        const tl_kernels_tensor *x, const tl_kernels_tensor *weight,
                                        const tl_kernels_tensor *dy, const tl_kernels_tensor *stats,
                                        const tl_kernels_tensor *dx,
                                        const tl_kernels_tensor *dweight,
                                        const tl_kernels_tensor *dbias) {
  const char *fn = "tl_kernels_layernorm_backward";
  if (!kernels)
    return fail(TL_STATUS_INVALID_ARGUMENT, "%s: kernels is NULL", fn);
  TLK_REQUIRE(check(fn, "x", x, 2, 2));
  const char *dt = nullptr;
  TLK_REQUIRE(float_dtype(fn, "x", x, &dt));
  const int64_t rows = x->shape[0], n = x->shape[1];
  TLK_REQUIRE(check(fn, "weight", weight, 1, 1));
  TLK_REQUIRE(need_shape(fn, "weight", weight, {n}));
  for (auto [arg, t] : {std::pair{"dy", dy}, {"dx", dx}}) {
    TLK_REQUIRE(check(fn, arg, t, 2, 2));
    TLK_REQUIRE(need_shape(fn, arg, t, {rows, n}));
  }
  for (auto [arg, t] : {std::pair{"weight", weight}, {"dy", dy}, {"dx", dx}})
    TLK_REQUIRE(same_dtype(fn, arg, t, x->dtype));
  TLK_REQUIRE(check(fn, "stats", stats, 2, 2));
  TLK_REQUIRE(need_dtype(fn, "stats", stats, TL_DTYPE_F32));
  TLK_REQUIRE(need_shape(fn, "stats", stats, {rows, 2}));
  if (!dweight != !dbias)
    return fail(TL_STATUS_INVALID_ARGUMENT, "%s: '%s' is NULL, the other parameter gradient not",
                fn, dweight ? "dbias" : "dweight");
  if (dweight)
    for (auto [arg, t] : {std::pair{"dweight", dweight}, {"dbias", dbias}}) {
      TLK_REQUIRE(check(fn, arg, t, 1, 1));
      TLK_REQUIRE(need_dtype(fn, arg, t, TL_DTYPE_F32));
      TLK_REQUIRE(need_shape(fn, arg, t, {n}));
    }
  if (n == 0)
    return nullptr;
  if (rows)
    TLK_REQUIRE(
        launch(kernels, stream, std::string(rms ? "rmsnorm_backward_" : "layernorm_backward_") + dt,
               rows, 1, 1,
               {tensor_arg(view(x, 2)), tensor_arg(view(weight, 1)), tensor_arg(view(dy, 2)),
                tensor_arg(view(stats, 2)), tensor_arg(view(dx, 2))}));
  if (!dweight)
    return nullptr;
  // rmsnorm's stats hold a mean of 0: the same parameter kernel (xhat = x rstd).
  return launch(kernels, stream, std::string("norm_param_backward_") + dt, cdiv(n, 64), 1, 1,
                {tensor_arg(view(x, 2)), tensor_arg(view(dy, 2)), tensor_arg(view(stats, 2)),
                 tensor_arg(view(dweight, 1)), tensor_arg(view(dbias, 1))});
}

tl_status tl_kernels_attention_backward(tl_kernels kernels, tl_stream stream,
                                        const tl_kernels_attention_backward_desc *desc) {
  const char *fn = "tl_kernels_attention_backward";
  if (!kernels || !desc)
    return fail(TL_STATUS_INVALID_ARGUMENT, "%s: kernels or desc is NULL", fn);
  // minor 1's descs end at key_lengths: no padding masks
  if (desc->struct_size < offsetof(tl_kernels_attention_backward_desc, key_lengths))
    return fail(TL_STATUS_INVALID_ARGUMENT, "%s: desc struct_size is too small", fn);
  const bool has_masks = desc->struct_size >= sizeof(tl_kernels_attention_backward_desc);
  const tl_kernels_tensor *klen = has_masks ? desc->key_lengths : nullptr;
  const tl_kernels_tensor *kmask = has_masks ? desc->key_mask : nullptr;
  const tl_kernels_tensor *q = desc->q, *k = desc->k, *v = desc->v;
  for (auto [arg, t] : {std::pair{"q", q},
                        {"k", k},
                        {"v", v},
                        {"out", desc->out},
                        {"dout", desc->dout},
                        {"dq", desc->dq},
                        {"dk", desc->dk},
                        {"dv", desc->dv}})
    TLK_REQUIRE(check(fn, arg, t, 3, 3));
  TLK_REQUIRE(check(fn, "lse", desc->lse, 2, 2));
  TLK_REQUIRE(check(fn, "delta", desc->delta, 2, 2));
  const char *dt = nullptr;
  TLK_REQUIRE(float_dtype(fn, "q", q, &dt));
  for (auto [arg, t] :
       {std::pair{"k", k}, {"v", v}, {"out", desc->out}, {"dout", desc->dout}, {"dq", desc->dq}})
    TLK_REQUIRE(same_dtype(fn, arg, t, q->dtype));
  const int64_t bh = q->shape[0], s_len = q->shape[1], d = q->shape[2];
  const int64_t group = desc->group;
  if (group < 1 || bh % group)
    return fail(TL_STATUS_INVALID_ARGUMENT, "%s: 'group' %lld does not divide q's %lld heads", fn,
                static_cast<long long>(group), static_cast<long long>(bh));
  const int64_t t_len = k->shape[1];
  for (auto [arg, t] : {std::pair{"k", k}, {"v", v}})
    TLK_REQUIRE(need_shape(fn, arg, t, {bh / group, t_len, d}));
  for (auto [arg, t] : {std::pair{"out", desc->out}, {"dout", desc->dout}, {"dq", desc->dq}})
    TLK_REQUIRE(need_shape(fn, arg, t, {bh, s_len, d}));
  for (auto [arg, t] : {std::pair{"dk", desc->dk}, {"dv", desc->dv}}) {
    TLK_REQUIRE(need_dtype(fn, arg, t, TL_DTYPE_F32));
    TLK_REQUIRE(need_shape(fn, arg, t, {bh / group, t_len, d}));
  }
  for (auto [arg, t] : {std::pair{"lse", desc->lse}, {"delta", desc->delta}}) {
    TLK_REQUIRE(need_dtype(fn, arg, t, TL_DTYPE_F32));
    TLK_REQUIRE(need_shape(fn, arg, t, {bh, s_len}));
  }
  if (group > 1 && !desc->workspace)
    return fail(TL_STATUS_INVALID_ARGUMENT, "%s: 'workspace' is NULL with group %lld", fn,
                static_cast<long long>(group));
  if (d > 128)
    return fail(TL_STATUS_UNIMPLEMENTED, "%s: head dimension %lld is above 128", fn,
                static_cast<long long>(d));
  const int64_t heads = klen || kmask ? desc->heads : 1;
  View lens;
  const char *mask_tag = "";
  TLK_REQUIRE(padding_masks(fn, q, klen, kmask, heads, group, t_len, &lens, &mask_tag));
  if (bh == 0 || s_len == 0 || d == 0 || t_len == 0)
    return nullptr; // nothing to write (dk and dv of no keys, or of no queries: left as they are)
  View sums[2];     // dk, dv as (B Hkv, T D): the group sums' outputs
  for (int i = 0; i < 2; ++i) {
    const tl_kernels_tensor *dst = i ? desc->dv : desc->dk;
    sums[i] = over(dst, 2);
    sums[i].shape[0] = dst->shape[0], sums[i].strides[0] = dst->strides[0];
    if (group > 1)
      TLK_REQUIRE(merged(fn, i ? "dv" : "dk", dst, 1, 3, &sums[i].shape[1], &sums[i].strides[1]));
  }
  const bool small = d <= 64;
  const int64_t bm = small ? 32 : 16;
  const std::string tag =
      std::string(desc->causal ? "_causal" : "") + mask_tag + (small ? "_d64_" : "_d128_") + dt;
  const View q3 = view(q, 3), k3 = view(k, 3), v3 = view(v, 3), o3 = view(desc->out, 3),
             do3 = view(desc->dout, 3), lse = view(desc->lse, 2), delta = view(desc->delta, 2);
  TLK_REQUIRE(launch(kernels, stream,
                     std::string("attention_backward_delta") + (small ? "_d64_" : "_d128_") + dt,
                     cdiv(s_len, 32), bh, 1, {tensor_arg(o3), tensor_arg(do3), tensor_arg(delta)}));
  TLK_REQUIRE(
      launch(kernels, stream, "attention_backward_dq" + tag, cdiv(s_len, bm), bh, 1,
             {tensor_arg(q3), tensor_arg(k3), tensor_arg(v3), tensor_arg(do3), tensor_arg(lse),
              tensor_arg(delta), tensor_arg(view(desc->dq, 3)), scalar_f32(desc->scale),
              scalar_i32(group), tensor_arg(lens), scalar_i32(heads)}));
  View dk = view(desc->dk, 3), dv = view(desc->dv, 3);
  if (group > 1) { // per query head into the workspace: (B H, T, D) each, dense
    for (View *w : {&dk, &dv}) {
      *w = View{};
      w->buffer = desc->workspace;
      w->dtype = TL_DTYPE_F32;
      w->rank = 3;
      w->shape[0] = bh, w->shape[1] = t_len, w->shape[2] = d;
      w->strides[0] = t_len * d, w->strides[1] = d, w->strides[2] = 1;
    }
    dv.offset = static_cast<uint64_t>(bh * t_len * d) * 4;
  }
  TLK_REQUIRE(
      launch(kernels, stream, "attention_backward_dkv" + tag, cdiv(t_len, bm), bh, 1,
             {tensor_arg(q3), tensor_arg(k3), tensor_arg(v3), tensor_arg(do3), tensor_arg(lse),
              tensor_arg(delta), tensor_arg(dk), tensor_arg(dv), scalar_f32(desc->scale),
              scalar_i32(group), tensor_arg(lens), scalar_i32(heads)}));
  if (group == 1)
    return nullptr;
  // Each kv head's gradient: the sum over its group of query heads, (B Hkv, group, T D) -> (B
  // Hkv, T D), in order (as tl.ops' sum).
  for (int i = 0; i < 2; ++i) {
    View x3 = i ? dv : dk;
    x3.shape[0] = bh / group, x3.strides[0] = group * t_len * d;
    x3.shape[1] = group, x3.strides[1] = t_len * d;
    x3.shape[2] = t_len * d, x3.strides[2] = 1;
    TLK_REQUIRE(
        launch(kernels, stream, "sum_inner_f32", x3.shape[0], cdiv(t_len * d, 64), 1,
               {tensor_arg(x3), tensor_arg(sums[i]), scalar_f32(1.0f / group), scalar_f32(0)}));
  }
  return nullptr;
}

// The quantized format of dtype `q`: "int8", "f8e4m3" or "f8e5m2" (nullptr for another), its
// qmax in *qmax.
static const char *quant_format(uint32_t q, float *qmax) {
  switch (q) {
  case TL_DTYPE_I8:
    return *qmax = 127.0f, "int8";
  case TL_DTYPE_F8E4M3:
    return *qmax = 448.0f, "f8e4m3";
  case TL_DTYPE_F8E5M2:
    return *qmax = 57344.0f, "f8e5m2";
  default:
    return nullptr;
  }
}

// UNIMPLEMENTED naming `arg` when its fp8 dtype is not one the device declares.
static tl_status device_supports(tl_kernels k, const char *fn, const char *arg,
                                 const tl_kernels_tensor *t) {
  if (t->dtype == TL_DTYPE_I8 || ((k->supported_dtypes >> t->dtype) & 1))
    return nullptr;
  return fail(TL_STATUS_UNIMPLEMENTED,
              "%s: '%s' is %s, which this device (target %s) does not support (not in its HAL "
              "supported_dtypes%s)",
              fn, arg, dname(t->dtype), k->target.c_str(),
              k->target == "tnpu" ? ": the TNPU's vector and matrix units have no fp8" : "");
}

// (rows, n) `t` as a rank-2 view, transposed (n, rows) when `cols`.
static View rows_view(const tl_kernels_tensor *t, bool cols) {
  View v = view(t, 2);
  if (cols) {
    std::swap(v.shape[0], v.shape[1]);
    std::swap(v.strides[0], v.strides[1]);
  }
  return v;
}

static tl_status quant_axis(const char *fn, int32_t axis) {
  if (axis != 0 && axis != 1 && axis != -1)
    return fail(TL_STATUS_INVALID_ARGUMENT,
                "%s: 'axis' %d is not 0 (per row), 1 (per column) or -1 (per tensor)", fn, axis);
  return nullptr;
}

tl_status tl_kernels_quantize(tl_kernels kernels, tl_stream stream, const tl_kernels_tensor *x,
                              int32_t axis, const tl_kernels_tensor *q,
                              const tl_kernels_tensor *scale) {
  const char *fn = "tl_kernels_quantize";
  if (!kernels)
    return fail(TL_STATUS_INVALID_ARGUMENT, "%s: kernels is NULL", fn);
  TLK_REQUIRE(check(fn, "x", x, 2, 2));
  TLK_REQUIRE(check(fn, "q", q, 2, 2));
  TLK_REQUIRE(check(fn, "scale", scale, 1, 1));
  TLK_REQUIRE(quant_axis(fn, axis));
  const char *dt = nullptr;
  TLK_REQUIRE(float_dtype(fn, "x", x, &dt));
  float qmax = 0;
  const char *fmt = quant_format(q->dtype, &qmax);
  if (!fmt)
    return fail(TL_STATUS_INVALID_ARGUMENT, "%s: 'q' is %s (i8, f8e4m3, f8e5m2)", fn,
                dname(q->dtype));
  TLK_REQUIRE(need_dtype(fn, "scale", scale, TL_DTYPE_F32));
  const int64_t rows = x->shape[0], n = x->shape[1];
  TLK_REQUIRE(need_shape(fn, "q", q, {rows, n}));
  TLK_REQUIRE(need_shape(fn, "scale", scale, {axis == -1 ? 1 : x->shape[axis]}));
  TLK_REQUIRE(device_supports(kernels, fn, "q", q));
  const bool cols = axis == 1;
  const View xv = rows_view(x, cols), qv = rows_view(q, cols);
  const int64_t r = xv.shape[0], c = xv.shape[1]; // the scales' rows
  View sv = view(scale, 1);
  if (axis == -1) {
    if (rows == 0 || n == 0) { // no data: the scale of all zeros, 1
      static const float one = 1.0f;
      return tl_stream_fill(stream, scale->buffer, scale->offset_bytes, 4, &one, 4);
    }
    // amax per row into a workspace, then the scale of those maxima
    tl_buffer_desc bd = {sizeof bd, static_cast<uint64_t>(rows) * 4, TL_BUFFER_DEVICE_LOCAL};
    tl_buffer work = nullptr;
    TLK_REQUIRE(tl_buffer_create(kernels->device, &bd, &work));
    View amax;
    amax.buffer = work, amax.dtype = TL_DTYPE_F32, amax.rank = 1;
    amax.shape[0] = rows, amax.strides[0] = 1;
    View amax2 = amax;
    amax2.rank = 2, amax2.shape[0] = 1, amax2.shape[1] = rows;
    amax2.strides[0] = 0, amax2.strides[1] = 1;
    tl_status st = launch(kernels, stream, std::string("absmax_") + dt, rows, 1, 1,
                          {tensor_arg(xv), tensor_arg(amax)});
    if (!st)
      st = launch(kernels, stream, std::string("quant_scale_") + fmt + "_f32", 1, 1, 1,
                  {tensor_arg(amax2), tensor_arg(sv)});
    sv.shape[0] = rows, sv.strides[0] = 0; // the one scale for every row
    if (!st)
      st = launch(kernels, stream, std::string("quantize_") + fmt + "_" + dt, cdiv(rows, 4),
                  cdiv(n, 1024), 1, {tensor_arg(xv), tensor_arg(sv), tensor_arg(qv)});
    tl_status rel = tl_buffer_release(work); // synchronizes the device's streams first
    if (st) {
      tl_status_free(rel);
      return st;
    }
    return rel;
  }
  if (r == 0)
    return nullptr;
  // As tl.ops: the scales (a pass over each row, or each column of a transposed view), then
  // the values.
  TLK_REQUIRE(launch(kernels, stream, std::string("quant_scale_") + fmt + "_" + dt, r, 1, 1,
                     {tensor_arg(xv), tensor_arg(sv)}));
  if (c == 0)
    return nullptr;
  return launch(kernels, stream, std::string("quantize_") + fmt + "_" + dt, cdiv(r, 4),
                cdiv(c, 1024), 1, {tensor_arg(xv), tensor_arg(sv), tensor_arg(qv)});
}

tl_status tl_kernels_dequantize(tl_kernels kernels, tl_stream stream, const tl_kernels_tensor *q,
                                const tl_kernels_tensor *scale, int32_t axis,
                                const tl_kernels_tensor *out) {
  const char *fn = "tl_kernels_dequantize";
  if (!kernels)
    return fail(TL_STATUS_INVALID_ARGUMENT, "%s: kernels is NULL", fn);
  TLK_REQUIRE(check(fn, "q", q, 2, 2));
  TLK_REQUIRE(check(fn, "scale", scale, 1, 1));
  TLK_REQUIRE(check(fn, "out", out, 2, 2));
  TLK_REQUIRE(quant_axis(fn, axis));
  float qmax = 0;
  const char *fmt = quant_format(q->dtype, &qmax);
  if (!fmt)
    return fail(TL_STATUS_INVALID_ARGUMENT, "%s: 'q' is %s (i8, f8e4m3, f8e5m2)", fn,
                dname(q->dtype));
  const char *dt = nullptr;
  TLK_REQUIRE(float_dtype(fn, "out", out, &dt));
  TLK_REQUIRE(need_dtype(fn, "scale", scale, TL_DTYPE_F32));
  TLK_REQUIRE(need_shape(fn, "scale", scale, {axis == -1 ? 1 : q->shape[axis]}));
  TLK_REQUIRE(need_shape(fn, "out", out, {q->shape[0], q->shape[1]}));
  TLK_REQUIRE(device_supports(kernels, fn, "q", q));
  const View qv = rows_view(q, axis == 1), ov = rows_view(out, axis == 1);
  View sv = view(scale, 1);
  if (axis == -1)
    sv.shape[0] = qv.shape[0], sv.strides[0] = 0;
  if (qv.shape[0] == 0 || qv.shape[1] == 0)
    return nullptr;
  return launch(kernels, stream, std::string("dequantize_") + fmt + "_" + dt, cdiv(qv.shape[0], 4),
                cdiv(qv.shape[1], 1024), 1, {tensor_arg(qv), tensor_arg(sv), tensor_arg(ov)});
}

tl_status tl_kernels_gemm_quantized(tl_kernels kernels, tl_stream stream,
                                    const tl_kernels_gemm_quantized_desc *desc) {
  const char *fn = "tl_kernels_gemm_quantized";
  if (!kernels || !desc)
    return fail(TL_STATUS_INVALID_ARGUMENT, "%s: kernels or desc is NULL", fn);
  if (desc->struct_size < sizeof(tl_kernels_gemm_quantized_desc))
    return fail(TL_STATUS_INVALID_ARGUMENT, "%s: desc struct_size is too small", fn);
  const tl_kernels_tensor *a = desc->a, *b = desc->b, *out = desc->out;
  for (auto [arg, t] : {std::pair{"a", a}, {"b", b}, {"out", out}})
    TLK_REQUIRE(check(fn, arg, t, 2, 2));
  float qmax = 0;
  const char *fmt = quant_format(a->dtype, &qmax);
  if (!fmt)
    return fail(TL_STATUS_INVALID_ARGUMENT, "%s: 'a' is %s (i8, f8e4m3, f8e5m2)", fn,
                dname(a->dtype));
  TLK_REQUIRE(same_dtype(fn, "b", b, a->dtype));
  const int64_t m = a->shape[0], kk = a->shape[1], n = b->shape[1];
  if (b->shape[0] != kk)
    return fail(TL_STATUS_INVALID_ARGUMENT, "%s: 'b' has %lld rows, a has %lld columns", fn,
                static_cast<long long>(b->shape[0]), static_cast<long long>(kk));
  TLK_REQUIRE(need_shape(fn, "out", out, {m, n}));
  const bool raw = !desc->scale_a;
  const bool is_int = a->dtype == TL_DTYPE_I8;
  if (is_int && kk > 131071)
    return fail(TL_STATUS_INVALID_ARGUMENT,
                "%s: K = %lld: int8 sums are exact in i32 up to K = 131071", fn,
                static_cast<long long>(kk));
  const char *dt = nullptr;
  if (raw) {
    if (!is_int || desc->scale_b || desc->bias || desc->activation != TL_KERNELS_ACT_NONE)
      return fail(TL_STATUS_INVALID_ARGUMENT,
                  "%s: 'scale_a' is NULL: raw sums are int8 only, without scale_b, bias or "
                  "activation",
                  fn);
    TLK_REQUIRE(need_dtype(fn, "out", out, TL_DTYPE_I32));
    dt = "i32";
  } else {
    if (!desc->scale_b)
      return fail(TL_STATUS_INVALID_ARGUMENT, "%s: 'scale_b' is NULL (scale_a is given)", fn);
    TLK_REQUIRE(check(fn, "scale_a", desc->scale_a, 1, 1));
    TLK_REQUIRE(check(fn, "scale_b", desc->scale_b, 1, 1));
    TLK_REQUIRE(need_dtype(fn, "scale_a", desc->scale_a, TL_DTYPE_F32));
    TLK_REQUIRE(need_dtype(fn, "scale_b", desc->scale_b, TL_DTYPE_F32));
    TLK_REQUIRE(need_shape(fn, "scale_a", desc->scale_a, {m}));
    TLK_REQUIRE(need_shape(fn, "scale_b", desc->scale_b, {n}));
    TLK_REQUIRE(float_dtype(fn, "out", out, &dt));
    if (desc->bias) {
      TLK_REQUIRE(check(fn, "bias", desc->bias, 1, 1));
      TLK_REQUIRE(need_shape(fn, "bias", desc->bias, {n}));
      TLK_REQUIRE(same_dtype(fn, "bias", desc->bias, out->dtype));
    }
  }
  const bool gelu = desc->activation == TL_KERNELS_ACT_GELU;
  if (desc->activation != TL_KERNELS_ACT_NONE && !gelu)
    return fail(TL_STATUS_UNIMPLEMENTED, "%s: 'activation' %u is not built (none, or gelu)", fn,
                desc->activation);
  if (!raw && (gelu != (desc->bias != nullptr)))
    return fail(TL_STATUS_UNIMPLEMENTED,
                "%s: built epilogues: none, or bias and gelu together (bias %s, activation %u)", fn,
                desc->bias ? "given" : "NULL", desc->activation);
  if (a->dtype == TL_DTYPE_F8E5M2 && (desc->bias || out->dtype != TL_DTYPE_F32))
    return fail(TL_STATUS_UNIMPLEMENTED, "%s: f8e5m2 operands are built without bias into f32 only",
                fn);
  TLK_REQUIRE(device_supports(kernels, fn, "a", a));
  if (m == 0 || n == 0)
    return nullptr;
  std::string name = std::string("gemm_") + fmt + (gelu ? "_bias_gelu_" : "_") + dt;
  View dummy = unread(out, 1); // raw: out is i32 (4 bytes an element); a may hold none (K = 0)
  dummy.dtype = TL_DTYPE_F32;
  View bias = desc->bias ? view(desc->bias, 1) : unread(out, 1);
  if (raw)
    bias = dummy;
  return launch(kernels, stream, name, cdiv(m, 64), cdiv(n, 64), 1,
                {tensor_arg(view(a, 2)), tensor_arg(view(b, 2)),
                 tensor_arg(raw ? dummy : view(desc->scale_a, 1)),
                 tensor_arg(raw ? dummy : view(desc->scale_b, 1)), tensor_arg(bias),
                 tensor_arg(view(out, 2))});
}

} // extern "C"
