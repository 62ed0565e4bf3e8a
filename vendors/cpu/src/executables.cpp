// Executables and launches of the cpu plugin: llvm-cpu native code run on oneTBB workers.
// SPDX-License-Identifier: Apache-2.0
#include "cpu_plugin.h"

#include "tl/format/llvm_cpu_loader.h"

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>

#include <algorithm>
#include <atomic>
#include <limits>
#include <string_view>
#include <vector>

namespace tl::cpu {

/// What a launch needs, shared with queued launches so that freeing the executable is safe: the
/// linked object code and each kernel's entry, in the image's kernel order.
struct Program {
  std::unique_ptr<llvm_cpu::LoadedProgram> native;
  std::vector<tl_cpu_kernel_fn> entries;
  std::vector<std::string> names;
  std::vector<uint32_t> param_counts;
};

namespace {

/// Links llvm-cpu object code and resolves every kernel of the image.
std::string load_native(const tl_vendor_executable_image &image, Program &program) {
  if (!image.code || image.code_size == 0)
    return "the executable has no code";
  std::string error;
  program.native = llvm_cpu::load_object(image.code, image.code_size, &error);
  if (!program.native)
    return error;
  for (uint32_t k = 0; k < image.kernel_count; ++k) {
    const std::string name = image.kernels[k].name ? image.kernels[k].name : "";
    tl_cpu_kernel_fn fn = program.native->find(name);
    if (!fn)
      return "kernel '" + name + "' is not in the executable's object code";
    program.entries.push_back(fn);
  }
  return "";
}

/// Orders this thread's earlier non-temporal stores before its later stores (x86 sfence).
inline void fence_streaming_stores() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_sfence();
#endif
}

/// Runs a native kernel over the grid on the device's workers; the first fault becomes ABORTED.
Error run_native_grid(tbb::task_arena &arena, tl_cpu_kernel_fn fn, const std::string &name,
                      const std::vector<tl_cpu_arg> &args, const std::array<int64_t, 3> &grid) {
  const int64_t total = grid[0] * grid[1] * grid[2];
  llvm_cpu::LaunchHost host;
  tl_cpu_launch launch{args.data(), {grid[0], grid[1], grid[2]}, &host};
  const int64_t workers = std::max(1, arena.max_concurrency());
  const int64_t grain = std::max<int64_t>(1, total / (workers * 8));
  std::atomic<bool> failed{false};
  arena.execute([&] {
    tbb::parallel_for(
        tbb::blocked_range<int64_t>(0, total, grain),
        [&](const tbb::blocked_range<int64_t> &r) {
          for (int64_t id = r.begin(); id < r.end(); ++id) {
            if (failed.load(std::memory_order_relaxed))
              break;
            if (fn(&launch, id % grid[0], (id / grid[0]) % grid[1], id / (grid[0] * grid[1])))
              failed.store(true, std::memory_order_relaxed);
          }
          // The programs' non-temporal stores are weakly ordered (llvm_cpu_abi.h): drain them
          // before this worker reports the range done.
          fence_streaming_stores();
        },
        tbb::simple_partitioner());
  });
  if (!failed.load())
    return {};
  return {TL_STATUS_ABORTED, "kernel @" + name + " failed: " + host.first_error()};
}

tl_cpu_arg native_arg(const tl_vendor_arg &a) {
  tl_cpu_arg n{};
  if (a.kind == TL_PARAM_TENSOR) {
    n.data = a.buffer ? static_cast<char *>(static_cast<Device::Buffer *>(a.buffer)->data) +
                            a.offset_bytes
                      : nullptr;
    for (uint32_t d = 0; d < a.rank && d < TL_CPU_MAX_RANK; ++d) {
      n.shape[d] = a.shape[d];
      n.strides[d] = a.strides[d];
    }
  }
  n.i = a.i;
  n.f = a.f;
  return n;
}

/// The grid as program ids; false if its program count does not fit in int64.
bool grid_of(const tl_vendor_launch &launch, std::array<int64_t, 3> &grid) {
  int64_t total = 1;
  for (int i = 0; i < 3; ++i) {
    if (launch.grid[i] > uint64_t(std::numeric_limits<int64_t>::max()))
      return false;
    grid[i] = static_cast<int64_t>(launch.grid[i]);
    if (__builtin_mul_overflow(total, grid[i], &total))
      return false;
  }
  return true;
}

} // namespace

Error Device::load(const tl_vendor_executable_image &image, std::unique_ptr<Executable> &out) {
  std::string target = image.target ? image.target : "";
  if (target != "llvm-cpu")
    return {TL_STATUS_INCOMPATIBLE,
            "the executable is for target '" + target + "'; the cpu device runs 'llvm-cpu'"};
  auto program = std::make_shared<Program>();
  for (uint32_t k = 0; k < image.kernel_count; ++k) {
    program->names.push_back(image.kernels[k].name ? image.kernels[k].name : "");
    program->param_counts.push_back(image.kernels[k].param_count);
  }
  if (std::string msg = load_native(image, *program); !msg.empty())
    return {TL_STATUS_DATA_LOSS, std::move(msg)};
  out = std::make_unique<Executable>(Executable{std::move(program)});
  return {};
}

Error Device::launch(WorkQueue &stream, Executable &exe, const tl_vendor_launch &launch) {
  if (launch.kernel >= exe.program->names.size())
    return {TL_STATUS_NOT_FOUND,
            "no kernel #" + std::to_string(launch.kernel) + " in the executable"};
  const std::string &name = exe.program->names[launch.kernel];
  const uint32_t params = exe.program->param_counts[launch.kernel];
  if (launch.arg_count != params)
    return {TL_STATUS_INVALID_ARGUMENT, "@" + name + " takes " + std::to_string(params) +
                                            " arguments, got " + std::to_string(launch.arg_count)};
  std::array<int64_t, 3> grid{};
  if (!grid_of(launch, grid))
    return {TL_STATUS_OUT_OF_RANGE, "the launch grid has too many programs"};
  if (grid[0] == 0 || grid[1] == 0 || grid[2] == 0)
    return {}; // an empty grid launches nothing
  std::vector<tl_cpu_arg> native_args;
  for (uint32_t i = 0; i < launch.arg_count; ++i) {
    const tl_vendor_arg &a = launch.args[i];
    if (a.dtype >= TL_DTYPE_COUNT || a.rank > TL_HAL_MAX_RANK)
      return {TL_STATUS_INVALID_ARGUMENT,
              "argument #" + std::to_string(i) + " has an invalid dtype or rank"};
    native_args.push_back(native_arg(a));
  }
  tbb::task_arena *workers = arena.get();
  tl_cpu_kernel_fn fn = exe.program->entries[launch.kernel];
  stream.enqueue([program = exe.program, fn, name, args = std::move(native_args), grid, workers] {
    return run_native_grid(*workers, fn, name, args, grid);
  });
  return {};
}

} // namespace tl::cpu
