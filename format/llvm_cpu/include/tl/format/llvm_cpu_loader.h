// The llvm-cpu blob's loader: links its object code into this process (ORC JIT) and hosts it.
// SPDX-License-Identifier: Apache-2.0
//
// The reader side of tl/format/llvm_cpu_abi.h, used by the cpu device and by the compiler's JIT
// path alike; it knows nothing of Tile IR. LLVM's headers stay inside loader.cpp.
#pragma once

#include "tl/format/llvm_cpu_abi.h"

#include <cstddef>
#include <memory>
#include <mutex>
#include <string>

namespace tl::llvm_cpu {

/// The `host` of a launch: collects the first run-time fault and the output of `print`
/// (thread-safe: programs of one launch run concurrently).
class LaunchHost {
public:
  explicit LaunchHost(std::string *print_sink = nullptr) : print_sink_(print_sink) {}
  bool failed() const;
  std::string first_error() const;
  void report(const char *message, int64_t x, int64_t y, int64_t z, int64_t lane, int64_t index);
  void print(const std::string &line);

private:
  mutable std::mutex mutex_;
  std::string first_error_;
  bool failed_ = false;
  std::string *print_sink_; // null: standard output
};

/// Object code linked into the running process.
class LoadedProgram {
public:
  virtual ~LoadedProgram() = default;
  /// The entry of kernel `name`, or null.
  virtual tl_cpu_kernel_fn find(const std::string &name) const = 0;
};

/// Links an llvm-cpu object into this process, resolving the host functions of the ABI, libc /
/// libm and TL_CPU_VECTOR_MATH_LIBRARY. Null with `error` on failure.
std::unique_ptr<LoadedProgram> load_object(const void *object, size_t size, std::string *error);

} // namespace tl::llvm_cpu
