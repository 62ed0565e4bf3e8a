// C API: loading executables (container checks, target negotiation) and launching kernels with
// arguments checked against the kernel's metadata.
// SPDX-License-Identifier: Apache-2.0
#include "api_util.h"

#include "tl/format/executable.h"

#include <algorithm>
#include <array>
#include <cmath>

using namespace tl::hal;

namespace {

const tl_vendor_plugin &vt(const Device *d) { return *d->plugin->table; }

std::string join(const std::vector<std::string> &v) {
  std::string s;
  for (auto &x : v)
    s += (s.empty() ? "" : ", ") + x;
  return s;
}

void fill_meta(Executable &exe, const tl::exe::Executable &image) {
  for (const tl::exe::KernelInfo &k : image.kernels) {
    KernelMeta m;
    m.name = k.name;
    m.grid_rank = static_cast<uint32_t>(k.grid_rank);
    m.onchip_memory_bytes = k.onchip_memory_bytes;
    for (const tl::exe::ParamInfo &p : k.params)
      m.param_names.push_back(p.name);
    for (size_t i = 0; i < k.params.size(); ++i) {
      const tl::exe::ParamInfo &p = k.params[i];
      m.params.push_back(tl_vendor_param{
          nullptr, p.kind == tl::exe::ParamKind::Tensor ? TL_PARAM_TENSOR : TL_PARAM_SCALAR,
          static_cast<uint32_t>(p.dtype), static_cast<uint32_t>(p.rank)});
    }
    exe.kernels.push_back(std::move(m));
  }
  for (KernelMeta &m : exe.kernels) // names point into the (now stable) strings
    for (size_t i = 0; i < m.params.size(); ++i)
      m.params[i].name = m.param_names[i].c_str();
}

/// Byte range of a strided tensor view: [lo, hi) relative to its offset; empty when any dim is 0.
bool tensor_extent(const tl_arg &a, int64_t elem, int64_t *lo, int64_t *hi) {
  int64_t min_off = 0, max_off = 0;
  for (uint32_t d = 0; d < a.rank; ++d) {
    if (a.shape[d] == 0) {
      *lo = *hi = 0;
      return true;
    }
    __int128 span = static_cast<__int128>(a.shape[d] - 1) * a.strides[d];
    if (span > INT64_MAX / 2 || span < INT64_MIN / 2)
      return false;
    (span < 0 ? min_off : max_off) += static_cast<int64_t>(span);
  }
  *lo = min_off * elem;
  *hi = (max_off + 1) * elem;
  return true;
}

tl_status check_scalar(const char *fn, uint32_t i, const tl_arg &a) {
  const tl_dtype dt = static_cast<tl_dtype>(a.dtype);
  if (dt >= TL_DTYPE_F16 && dt <= TL_DTYPE_F8E5M2)
    return nullptr; // any double: rounded to the dtype by the device
  const int bits = dt == TL_DTYPE_I1 ? 1 : static_cast<int>(tl_dtype_size(dt) * 8);
  const bool is_signed = dt >= TL_DTYPE_I8 && dt <= TL_DTYPE_I64;
  if (bits == 64)
    return nullptr;
  const int64_t lo = is_signed ? -(int64_t(1) << (bits - 1)) : 0;
  const int64_t hi = is_signed ? (int64_t(1) << (bits - 1)) - 1 : (int64_t(1) << bits) - 1;
  if (a.i < lo || a.i > hi)
    return invalid(fn, "argument #" + std::to_string(i) + ": value " + std::to_string(a.i) +
                           " does not fit " + tl_dtype_name(dt));
  return nullptr;
}

tl_status check_tensor(const char *fn, uint32_t i, const tl_arg &a, const Buffer &b,
                       const Device *dev) {
  const std::string where = "argument #" + std::to_string(i) + ": ";
  if (b.device != dev)
    return invalid(fn, where + "buffer belongs to device '" + b.device->info.name + "'");
  const int64_t elem = static_cast<int64_t>(tl_dtype_size(static_cast<tl_dtype>(a.dtype)));
  if (a.offset_bytes % elem)
    return invalid(fn, where + "offset " + std::to_string(a.offset_bytes) +
                           " is not a multiple of the element size " + std::to_string(elem));
  for (uint32_t d = 0; d < a.rank; ++d)
    if (a.shape[d] < 0)
      return invalid(fn, where + "dimension " + std::to_string(d) + " is negative");
  int64_t lo, hi;
  if (!tensor_extent(a, elem, &lo, &hi))
    return invalid(fn, where + "shape and strides overflow", TL_STATUS_OUT_OF_RANGE);
  const int64_t start = static_cast<int64_t>(a.offset_bytes) + lo;
  const int64_t end = static_cast<int64_t>(a.offset_bytes) + hi;
  if (hi > lo && (start < 0 || end > static_cast<int64_t>(b.size)))
    return invalid(fn,
                   where + "tensor view spans bytes [" + std::to_string(start) + ", " +
                       std::to_string(end) + ") outside the buffer's " + std::to_string(b.size) +
                       " bytes",
                   TL_STATUS_OUT_OF_RANGE);
  return nullptr;
}

/// Checks one argument against its parameter (validation layer).
tl_status check_arg(const char *fn, uint32_t i, const tl_arg &a, const tl_vendor_param &p) {
  const std::string where = "argument #" + std::to_string(i) + " (" + p.name + "): ";
  if (a.kind != p.kind)
    return invalid(fn, where + (p.kind == TL_PARAM_TENSOR ? "expected a tensor, got a scalar"
                                                          : "expected a scalar, got a tensor"));
  if (a.dtype != p.dtype)
    return invalid(fn, where + "dtype " + tl_dtype_name(static_cast<tl_dtype>(a.dtype)) +
                           " does not match the kernel's " +
                           tl_dtype_name(static_cast<tl_dtype>(p.dtype)));
  if (p.kind == TL_PARAM_TENSOR && a.rank != p.rank)
    return invalid(fn, where + "rank " + std::to_string(a.rank) + " does not match the kernel's " +
                           std::to_string(p.rank));
  return nullptr;
}

} // namespace

extern "C" {

tl_status tl_executable_load(tl_device device, const void *data, size_t size_bytes,
                             tl_executable *out_executable) {
  const char *const kFn = __func__; // kFn inside the lambda would be "operator()"
  return guard(kFn, [&]() -> tl_status {
    if (!out_executable)
      return invalid(kFn, "out_executable is null");
    *out_executable = nullptr;
    Device *d;
    TL_RETURN_IF_ERROR(resolve(kFn, "device", device, HandleType::Device, &d));
    if (!data)
      return invalid(kFn, "data is null");
    tl::exe::LoadResult loaded = tl::exe::deserialize(data, size_bytes);
    if (!loaded.ok)
      return invalid(kFn, loaded.error,
                     loaded.error.find("version") != std::string::npos ? TL_STATUS_INCOMPATIBLE
                                                                       : TL_STATUS_DATA_LOSS);
    const tl::exe::Executable &image = loaded.exe;
    if (std::find(d->targets.begin(), d->targets.end(), image.target) == d->targets.end())
      return invalid(kFn,
                     "executable is for target '" + image.target + "' but device '" + d->info.name +
                         "' accepts: " + join(d->targets),
                     TL_STATUS_INCOMPATIBLE);
    auto exe = std::make_unique<Executable>();
    exe->device = d;
    exe->target = image.target;
    fill_meta(*exe, image);
    std::vector<tl_vendor_kernel> kernels;
    for (const KernelMeta &m : exe->kernels)
      kernels.push_back({m.name.c_str(), m.params.data(), static_cast<uint32_t>(m.params.size()),
                         m.grid_rank, m.onchip_memory_bytes});
    tl_vendor_executable_image vimg{sizeof(tl_vendor_executable_image),
                                    image.target.c_str(),
                                    image.code.data(),
                                    image.code.size(),
                                    kernels.data(),
                                    static_cast<uint32_t>(kernels.size())};
    TL_RETURN_IF_ERROR(from_plugin(kFn, vt(d).executable_load(d->object, &vimg, &exe->object)));
    exe->handle = HandleTable::global().insert(HandleType::Executable, exe.get());
    {
      std::lock_guard<std::mutex> lock(d->runtime->mutex);
      d->runtime->executables.insert(exe->handle);
    }
    *out_executable = to_handle<tl_executable>(exe.release()->handle);
    return nullptr;
  });
}

tl_status tl_executable_release(tl_executable executable) {
  const char *const kFn = __func__; // kFn inside the lambda would be "operator()"
  return guard(kFn, [&]() -> tl_status {
    Executable *e;
    TL_RETURN_IF_ERROR(resolve(kFn, "executable", executable, HandleType::Executable, &e));
    std::string why;
    if (!HandleTable::global().remove(e->handle, HandleType::Executable, &why))
      return invalid(kFn, "executable: " + why);
    {
      std::lock_guard<std::mutex> lock(e->device->runtime->mutex);
      e->device->runtime->executables.erase(e->handle);
    }
    drain_device(*e->device); // queued launches may still run its code
    vt(e->device).executable_free(e->device->object, e->object);
    delete e;
    return nullptr;
  });
}

tl_status tl_executable_kernel_count(tl_executable executable, uint32_t *out_count) {
  const char *const kFn = __func__; // kFn inside the lambda would be "operator()"
  return guard(kFn, [&]() -> tl_status {
    if (!out_count)
      return invalid(kFn, "out_count is null");
    *out_count = 0;
    Executable *e;
    TL_RETURN_IF_ERROR(resolve(kFn, "executable", executable, HandleType::Executable, &e));
    *out_count = static_cast<uint32_t>(e->kernels.size());
    return nullptr;
  });
}

tl_status tl_executable_kernel_info(tl_executable executable, uint32_t kernel,
                                    tl_kernel_info *out_info) {
  const char *const kFn = __func__; // kFn inside the lambda would be "operator()"
  return guard(kFn, [&]() -> tl_status {
    TL_RETURN_IF_ERROR(check_struct(kFn, "out_info", out_info, sizeof(tl_kernel_info)));
    Executable *e;
    TL_RETURN_IF_ERROR(resolve(kFn, "executable", executable, HandleType::Executable, &e));
    if (kernel >= e->kernels.size())
      return invalid(kFn,
                     "kernel index " + std::to_string(kernel) + " is out of range (" +
                         std::to_string(e->kernels.size()) + " kernels)",
                     TL_STATUS_OUT_OF_RANGE);
    const KernelMeta &m = e->kernels[kernel];
    *out_info =
        tl_kernel_info{sizeof(tl_kernel_info), m.name.c_str(),
                       static_cast<uint32_t>(m.params.size()), m.grid_rank, m.onchip_memory_bytes};
    return nullptr;
  });
}

tl_status tl_executable_param_info(tl_executable executable, uint32_t kernel, uint32_t param,
                                   tl_param_info *out_info) {
  const char *const kFn = __func__; // kFn inside the lambda would be "operator()"
  return guard(kFn, [&]() -> tl_status {
    TL_RETURN_IF_ERROR(check_struct(kFn, "out_info", out_info, sizeof(tl_param_info)));
    Executable *e;
    TL_RETURN_IF_ERROR(resolve(kFn, "executable", executable, HandleType::Executable, &e));
    if (kernel >= e->kernels.size() || param >= e->kernels[kernel].params.size())
      return invalid(kFn,
                     "kernel " + std::to_string(kernel) + " parameter " + std::to_string(param) +
                         " is out of range",
                     TL_STATUS_OUT_OF_RANGE);
    const tl_vendor_param &p = e->kernels[kernel].params[param];
    *out_info = tl_param_info{sizeof(tl_param_info), p.name, p.kind, p.dtype, p.rank};
    return nullptr;
  });
}

tl_status tl_executable_find_kernel(tl_executable executable, const char *name,
                                    uint32_t *out_kernel) {
  const char *const kFn = __func__; // kFn inside the lambda would be "operator()"
  return guard(kFn, [&]() -> tl_status {
    if (!out_kernel)
      return invalid(kFn, "out_kernel is null");
    *out_kernel = 0;
    if (!name)
      return invalid(kFn, "name is null");
    Executable *e;
    TL_RETURN_IF_ERROR(resolve(kFn, "executable", executable, HandleType::Executable, &e));
    std::vector<std::string> names;
    for (uint32_t i = 0; i < e->kernels.size(); ++i) {
      if (e->kernels[i].name == name) {
        *out_kernel = i;
        return nullptr;
      }
      names.push_back(e->kernels[i].name);
    }
    return invalid(kFn, std::string("no kernel '") + name + "' (kernels: " + join(names) + ")",
                   TL_STATUS_NOT_FOUND);
  });
}

tl_status tl_stream_launch(tl_stream stream, tl_executable executable,
                           const tl_launch_desc *launch) {
  const char *const kFn = __func__; // kFn inside the lambda would be "operator()"
  return guard(kFn, [&]() -> tl_status {
    Stream *s;
    Executable *e;
    TL_RETURN_IF_ERROR(resolve(kFn, "stream", stream, HandleType::Stream, &s));
    TL_RETURN_IF_ERROR(resolve(kFn, "executable", executable, HandleType::Executable, &e));
    TL_RETURN_IF_ERROR(check_struct(kFn, "launch", launch, sizeof(tl_launch_desc)));
    const bool validate = s->device->runtime->validate;
    if (e->device != s->device)
      return invalid(kFn, "the executable was loaded on device '" +
                              std::string(e->device->info.name) + "', not the stream's");
    if (launch->kernel >= e->kernels.size())
      return invalid(kFn,
                     "kernel index " + std::to_string(launch->kernel) + " is out of range (" +
                         std::to_string(e->kernels.size()) + " kernels)",
                     TL_STATUS_OUT_OF_RANGE);
    const KernelMeta &k = e->kernels[launch->kernel];
    if (launch->arg_count != k.params.size())
      return invalid(kFn, "kernel '" + k.name + "' takes " + std::to_string(k.params.size()) +
                              " arguments, got " + std::to_string(launch->arg_count));
    if (launch->arg_count && !launch->args)
      return invalid(kFn, "args is null");
    // Callers built against a later header pass larger tl_arg elements: step by their size.
    const size_t stride = launch->arg_count ? launch->args[0].struct_size : sizeof(tl_arg);
    if (launch->arg_count && stride < sizeof(tl_arg))
      return invalid(kFn, "args[0].struct_size is " + std::to_string(stride) +
                              ", expected at least " + std::to_string(sizeof(tl_arg)));
    for (int axis = 0; validate && axis < 3; ++axis)
      if (launch->grid[axis] > s->device->info.max_grid[axis] && s->device->info.max_grid[axis])
        return invalid(kFn,
                       "grid[" + std::to_string(axis) +
                           "] = " + std::to_string(launch->grid[axis]) + " exceeds the device's " +
                           std::to_string(s->device->info.max_grid[axis]),
                       TL_STATUS_OUT_OF_RANGE);
    // On the stack for up to 16 arguments (no allocation on a launch's hot path).
    std::array<tl_vendor_arg, 16> stack_args{};
    std::vector<tl_vendor_arg> heap_args(launch->arg_count > stack_args.size() ? launch->arg_count
                                                                               : 0);
    tl_vendor_arg *vargs = heap_args.empty() ? stack_args.data() : heap_args.data();
    for (uint32_t i = 0; i < launch->arg_count; ++i) {
      const tl_arg &a = *reinterpret_cast<const tl_arg *>(
          reinterpret_cast<const char *>(launch->args) + i * stride);
      if (a.struct_size != stride)
        return invalid(kFn, "args[" + std::to_string(i) + "].struct_size differs from args[0]'s");
      if (validate)
        TL_RETURN_IF_ERROR(check_arg(kFn, i, a, k.params[i]));
      tl_vendor_arg &v = vargs[i];
      v.kind = a.kind;
      v.dtype = a.dtype;
      v.i = a.i;
      v.f = a.f;
      if (a.kind == TL_PARAM_TENSOR) {
        if (a.rank > TL_HAL_MAX_RANK)
          return invalid(kFn, "argument #" + std::to_string(i) + ": rank exceeds " +
                                  std::to_string(TL_HAL_MAX_RANK));
        Buffer *b;
        TL_RETURN_IF_ERROR(resolve(kFn, ("args[" + std::to_string(i) + "].buffer").c_str(),
                                   a.buffer, HandleType::Buffer, &b));
        if (validate)
          TL_RETURN_IF_ERROR(check_tensor(kFn, i, a, *b, s->device));
        v.buffer = b->object;
        v.offset_bytes = a.offset_bytes;
        v.rank = a.rank;
        std::copy(a.shape, a.shape + a.rank, v.shape);
        std::copy(a.strides, a.strides + a.rank, v.strides);
      } else if (validate) {
        TL_RETURN_IF_ERROR(check_scalar(kFn, i, a));
      }
    }
    tl_vendor_launch vl{sizeof(tl_vendor_launch),
                        launch->kernel,
                        {launch->grid[0], launch->grid[1], launch->grid[2]},
                        vargs,
                        launch->arg_count};
    return from_plugin(kFn, vt(s->device).stream_launch(s->object, e->object, &vl));
  });
}

} // extern "C"
