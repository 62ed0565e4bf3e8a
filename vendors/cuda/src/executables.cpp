// Executables of the cuda plugin: the nvptx blob's cubin or PTX loaded as a CUmodule, and launches
// whose CUDA parameters are built from the blob's per-kernel slots.
// SPDX-License-Identifier: Apache-2.0
#include "cuda_plugin.h"

#include <cmath>
#include <cstring>
#include <limits>

namespace tl::cuda {
namespace {

using nvptx::Slot;

/// f32 to IEEE binary16 bits, rounding to nearest even.
uint16_t to_f16(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  const uint32_t sign = (x >> 16) & 0x8000u, abs = x & 0x7fffffffu;
  if (abs >= 0x7f800000u) // inf, nan (quiet)
    return static_cast<uint16_t>(sign | 0x7c00u | (abs > 0x7f800000u ? 0x200u : 0u));
  if (abs >= 0x477ff000u) // 65520 and above round to inf
    return static_cast<uint16_t>(sign | 0x7c00u);
  if (abs < 0x38800000u) { // below 2^-14: a subnormal, exactly a * 2^24 units
    float a;
    std::memcpy(&a, &abs, 4);
    return static_cast<uint16_t>(sign | static_cast<uint32_t>(std::nearbyint(a * 16777216.0f)));
  }
  const uint32_t rounded = abs + 0xfffu + ((abs >> 13) & 1u);
  return static_cast<uint16_t>(sign | ((rounded - 0x38000000u) >> 13));
}

/// f32 to bfloat16 bits, rounding to nearest even.
uint16_t to_bf16(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  if ((x & 0x7fffffffu) > 0x7f800000u)
    return static_cast<uint16_t>((x >> 16) | 0x40u);
  return static_cast<uint16_t>((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
}

/// A scalar argument's bits in its dtype, in the low bytes of `out`.
Error scalar_bits(const tl_vendor_arg &a, uint64_t &out) {
  switch (a.dtype) {
  case TL_DTYPE_I1:
    out = a.i != 0;
    return {};
  case TL_DTYPE_I8:
  case TL_DTYPE_I16:
  case TL_DTYPE_I32:
  case TL_DTYPE_I64:
  case TL_DTYPE_U8:
  case TL_DTYPE_U16:
  case TL_DTYPE_U32:
    out = static_cast<uint64_t>(a.i); // the low bytes are the narrower type's two's complement
    return {};
  case TL_DTYPE_F16:
    out = to_f16(static_cast<float>(a.f));
    return {};
  case TL_DTYPE_BF16:
    out = to_bf16(static_cast<float>(a.f));
    return {};
  case TL_DTYPE_F32: {
    const float f = static_cast<float>(a.f);
    uint32_t bits;
    std::memcpy(&bits, &f, 4);
    out = bits;
    return {};
  }
  case TL_DTYPE_F64:
    std::memcpy(&out, &a.f, 8);
    return {};
  default: {
    const char *name = tl_dtype_spelling(a.dtype);
    return {TL_STATUS_UNIMPLEMENTED,
            std::string(name ? name : "unknown") + " scalar arguments are not supported"};
  }
  }
}

/// The blob's slots must name parameters the kernel has, of the right kind, dim and size.
Error check_slots(const nvptx::Kernel &k, const tl_vendor_kernel &meta) {
  for (size_t j = 0; j < k.params.size(); ++j) {
    const Slot &s = k.params[j];
    const std::string where = "kernel '" + k.name + "' CUDA parameter " + std::to_string(j);
    if (s.kind == Slot::Kind::Grid || s.kind == Slot::Kind::GridBase) {
      if (s.dim >= 3 || (s.kind == Slot::Kind::GridBase && (s.dim == 0 || s.size != 4)))
        return {TL_STATUS_DATA_LOSS, where + " reads grid axis " + std::to_string(s.dim) +
                                         " (size " + std::to_string(s.size) + ")"};
      continue;
    }
    if (s.kind == Slot::Kind::Status) {
      if (s.size != 8)
        return {TL_STATUS_DATA_LOSS,
                where + " (the status word's address) has size " + std::to_string(s.size)};
      continue;
    }
    if (s.arg >= meta.param_count)
      return {TL_STATUS_DATA_LOSS, where + " reads argument " + std::to_string(s.arg) + " of " +
                                       std::to_string(meta.param_count)};
    const tl_vendor_param &p = meta.params[s.arg];
    const bool tensor = p.kind == TL_PARAM_TENSOR;
    if ((s.kind == Slot::Kind::Scalar) == tensor)
      return {TL_STATUS_DATA_LOSS,
              where + " reads argument '" + p.name + "' as a " + (tensor ? "scalar" : "tensor")};
    if ((s.kind == Slot::Kind::Shape || s.kind == Slot::Kind::Stride) && s.dim >= p.rank)
      return {TL_STATUS_DATA_LOSS, where + " reads dim " + std::to_string(s.dim) + " of rank-" +
                                       std::to_string(p.rank) + " '" + p.name + "'"};
    const size_t want = s.kind == Slot::Kind::Pointer  ? 8
                        : s.kind == Slot::Kind::Scalar ? tl_dtype_bytes(p.dtype)
                                                       : s.size;
    if (s.size != want || (s.kind != Slot::Kind::Scalar && s.size != 4 && s.size != 8))
      return {TL_STATUS_DATA_LOSS, where + " has size " + std::to_string(s.size)};
  }
  return {};
}

/// Loads the module from the image the device should run; the JIT's log goes into the error.
Error load_module(Device &d, const nvptx::Image &im, CUmodule &out) {
  const Driver &drv = driver();
  const std::string what = std::string(im.kind == nvptx::Image::Kind::Cubin ? "cubin" : "PTX") +
                           " for sm_" + std::to_string(im.sm) + (im.arch_specific ? "a" : "") +
                           " on sm_" + std::to_string(d.sm);
  if (im.kind == nvptx::Image::Kind::Cubin) {
    TL_CU_CHECK("loading " + what, cuModuleLoadData, &out, im.bytes.data());
    return {};
  }
  std::string ptx(im.bytes.begin(), im.bytes.end()); // the driver wants a NUL-terminated text
  char log[8192] = {};
  CUjit_option options[] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
  void *values[] = {log, reinterpret_cast<void *>(static_cast<uintptr_t>(sizeof log - 1))};
  if (CUresult r = drv.cuModuleLoadDataEx(&out, ptx.c_str(), 2, options, values); r != CUDA_SUCCESS)
    return drv.error(r, TL_CUDA_SYMBOL(cuModuleLoadDataEx),
                     "JIT-compiling " + what + (log[0] ? ": " + std::string(log) : ""));
  return {};
}

} // namespace

Error load_executable(Device &d, const tl_vendor_executable_image &image,
                      std::unique_ptr<Executable> &out) {
  auto exe = std::make_unique<Executable>();
  exe->device = &d;
  std::string why;
  if (!nvptx::parse_code(image.code, image.code_size, exe->code, why))
    return {TL_STATUS_DATA_LOSS, why};
  if (exe->code.kernels.size() != image.kernel_count)
    return {TL_STATUS_DATA_LOSS, "the nvptx blob has " + std::to_string(exe->code.kernels.size()) +
                                     " kernels, the executable " +
                                     std::to_string(image.kernel_count)};
  const nvptx::Image *im = nvptx::select_image(exe->code, static_cast<uint32_t>(d.sm));
  if (!im)
    return {TL_STATUS_INCOMPATIBLE, "the executable has no cubin for sm_" + std::to_string(d.sm) +
                                        " and no PTX for sm_" + std::to_string(d.sm) + " or older"};
  if (Error e = d.bind(); !e.ok())
    return e;
  if (Error e = load_module(d, *im, exe->module); !e.ok())
    return e;
  exe->code.images.clear(); // the module holds the code now
  for (uint32_t i = 0; i < image.kernel_count; ++i) {
    const nvptx::Kernel &k = exe->code.kernels[i];
    if (Error e = check_slots(k, image.kernels[i]); !e.ok())
      return e;
    const uint64_t threads = uint64_t(k.block[0]) * k.block[1] * k.block[2];
    if (threads > 1024)
      return {TL_STATUS_INCOMPATIBLE,
              "kernel '" + k.name + "' wants " + std::to_string(threads) + " threads per block"};
    if (k.dynamic_shared_bytes + k.static_shared_bytes > d.info.onchip_memory_bytes)
      return {TL_STATUS_INCOMPATIBLE,
              "kernel '" + k.name + "' needs " +
                  std::to_string(k.dynamic_shared_bytes + k.static_shared_bytes) +
                  " bytes of shared memory; sm_" + std::to_string(d.sm) + " blocks have " +
                  std::to_string(d.info.onchip_memory_bytes)};
    CUfunction f = nullptr;
    TL_CU_CHECK("kernel '" + k.name + "'", cuModuleGetFunction, &f, exe->module, k.name.c_str());
    // Above 48 KiB, dynamic shared memory must be opted into per function.
    if (k.dynamic_shared_bytes > 48 * 1024)
      TL_CU_CHECK("kernel '" + k.name + "'", cuFuncSetAttribute, f,
                  CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                  static_cast<int>(k.dynamic_shared_bytes));
    exe->functions.push_back(f);
  }
  out = std::move(exe);
  return {};
}

/// One cuLaunchKernel of `count` programs from program `first` (null: the whole grid from 0).
Error launch_part(Stream &s, Executable &exe, const tl_vendor_launch &l, const uint64_t *first,
                  const uint64_t *count);

Error launch(Stream &s, Executable &exe, const tl_vendor_launch &l) {
  const nvptx::Kernel &k = exe.code.kernels.at(l.kernel);
  // Axes y and z past CUDA's limit run as several launches in stream order, each told its first
  // program (GridBase slots; code from before nvptx format 2 has none and is refused).
  bool based[3] = {};
  for (const Slot &slot : k.params)
    if (slot.kind == Slot::Kind::GridBase)
      based[slot.dim] = true;
  uint64_t part[3];
  for (int i = 0; i < 3; ++i) {
    if (l.grid[i] == 0)
      return {}; // launches nothing
    part[i] = std::min<uint64_t>(l.grid[i], s.device->launch_grid[i]);
    if (l.grid[i] > part[i] && !based[i])
      return {TL_STATUS_INVALID_ARGUMENT,
              "grid axis " + std::to_string(i) + " has " + std::to_string(l.grid[i]) +
                  " programs; CUDA launches " + std::to_string(s.device->launch_grid[i]) +
                  (i ? " (this kernel's code predates split grids: recompile it)" : "")};
  }
  if (l.grid[1] > part[1] || l.grid[2] > part[2])
    for (uint64_t z = 0; z < l.grid[2]; z += part[2])
      for (uint64_t y = 0; y < l.grid[1]; y += part[1]) {
        const uint64_t first[3] = {0, y, z};
        const uint64_t count[3] = {l.grid[0], std::min(part[1], l.grid[1] - y),
                                   std::min(part[2], l.grid[2] - z)};
        if (Error e = launch_part(s, exe, l, first, count); !e.ok())
          return e;
      }
  else if (Error e = launch_part(s, exe, l, nullptr, l.grid); !e.ok())
    return e;
  return {};
}

Error launch_part(Stream &s, Executable &exe, const tl_vendor_launch &l, const uint64_t *first,
                  const uint64_t *count) {
  const nvptx::Kernel &k = exe.code.kernels.at(l.kernel);
  // One 8-byte cell per parameter; the driver reads each parameter's size from its cell's start.
  // On the stack for up to 64 parameters (no allocation on a launch's hot path).
  constexpr size_t kStackParams = 64;
  const size_t n = k.params.size();
  uint64_t stack_cells[kStackParams];
  void *stack_pointers[kStackParams];
  std::vector<uint64_t> heap_cells(n > kStackParams ? n : 0);
  std::vector<void *> heap_pointers(n > kStackParams ? n : 0);
  uint64_t *cells = n > kStackParams ? heap_cells.data() : stack_cells;
  void **pointers = n > kStackParams ? heap_pointers.data() : stack_pointers;
  int status = -1; // the stream's status word this launch reports through, if it has asserts
  for (size_t j = 0; j < k.params.size(); ++j) {
    const Slot &slot = k.params[j];
    uint64_t v = 0;
    if (slot.kind == Slot::Kind::Grid) {
      v = l.grid[slot.dim];
    } else if (slot.kind == Slot::Kind::GridBase) {
      v = first ? first[slot.dim] : 0;
    } else if (slot.kind == Slot::Kind::Status) {
      // A kernel without error sites never writes its word: it gets none.
      if (k.asserts.empty())
        v = 0;
      else if (status < 0)
        if (Error e = take_status_word(s, k, status); !e.ok())
          return e;
      if (status >= 0)
        v = s.status.device + 4 * static_cast<uint64_t>(status);
    } else {
      const tl_vendor_arg &a = l.args[slot.arg];
      switch (slot.kind) {
      case Slot::Kind::Pointer:
        v = static_cast<Buffer *>(a.buffer)->ptr + a.offset_bytes;
        break;
      case Slot::Kind::Shape:
      case Slot::Kind::Stride: {
        const int64_t x = slot.kind == Slot::Kind::Shape ? a.shape[slot.dim] : a.strides[slot.dim];
        if (slot.size == 4 &&
            (x < std::numeric_limits<int32_t>::min() || x > std::numeric_limits<int32_t>::max()))
          return {TL_STATUS_OUT_OF_RANGE,
                  "kernel '" + k.name + "' takes 32-bit shapes and strides; argument " +
                      std::to_string(slot.arg) + " dim " + std::to_string(slot.dim) + " is " +
                      std::to_string(x)};
        v = static_cast<uint64_t>(x);
        break;
      }
      default:
        if (Error e = scalar_bits(a, v); !e.ok())
          return e;
      }
    }
    cells[j] = v; // little-endian: the low `size` bytes are the value
    pointers[j] = &cells[j];
  }
  if (Error e = s.device->bind(); !e.ok())
    return e;
  TL_CU_CHECK("launching '" + k.name + "'", cuLaunchKernel, exe.functions[l.kernel],
              static_cast<unsigned>(count[0]), static_cast<unsigned>(count[1]),
              static_cast<unsigned>(count[2]), k.block[0], k.block[1], k.block[2],
              k.dynamic_shared_bytes, s.stream, n ? pointers : nullptr, nullptr);
  return {};
}

Error take_status_word(Stream &s, const nvptx::Kernel &k, int &out) {
  StatusWords &w = s.status;
  if (!w.host) {
    TL_CU_CHECK("", cuMemHostAlloc, reinterpret_cast<void **>(&w.host),
                StatusWords::kCount * sizeof(uint32_t), 0);
    TL_CU_CHECK("", cuMemAlloc, &w.device, StatusWords::kCount * sizeof(uint32_t));
    TL_CU_CHECK("", cuMemsetD32Async, w.device, 0, StatusWords::kCount, s.stream);
  }
  if (w.pending.size() == StatusWords::kCount) // all in use: report them before reusing one
    if (Error e = check_status_words(s); !e.ok())
      return e;
  // Words are zero until used and zeroed again, all at once, where they are read back
  // (check_status_words): a launch queues nothing on the stream besides its kernel. A memset
  // before and a copy after each launch cost ~4 and ~10 us of the GPU's time on the H200.
  out = static_cast<int>(w.pending.size());
  w.pending.push_back({k.name, k.asserts});
  return {};
}

Error check_status_words(Stream &s) {
  StatusWords &w = s.status;
  if (w.pending.empty())
    return {};
  TL_CU_CHECK("a queued copy or kernel failed", cuStreamSynchronize, s.stream);
  const size_t used = w.pending.size();
  TL_CU_CHECK("", cuMemcpyDtoHAsync, w.host, w.device, used * sizeof(uint32_t), s.stream);
  TL_CU_CHECK("", cuMemsetD32Async, w.device, 0, used, s.stream); // for the next launches
  TL_CU_CHECK("", cuStreamSynchronize, s.stream);
  std::vector<StatusWords::Launch> pending = std::move(w.pending);
  w.pending.clear();
  for (size_t i = 0; i < pending.size(); ++i) {
    const uint32_t v = w.host[i];
    if (v == 0)
      continue;
    const auto &asserts = pending[i].asserts;
    return {TL_STATUS_ABORTED, "kernel '" + pending[i].kernel + "': " +
                                   (v <= asserts.size() ? "assert failed: " + asserts[v - 1]
                                                        : "unknown status " + std::to_string(v))};
  }
  return {};
}

} // namespace tl::cuda
