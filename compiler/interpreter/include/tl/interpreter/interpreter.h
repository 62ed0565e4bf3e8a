// The reference interpreter: the executable definition of Tile IR semantics (see tl/ir/ir.h).
// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "tl/ir/ir.h"

#include <array>
#include <iosfwd>
#include <string>
#include <variant>
#include <vector>

namespace tl::interp {

/// A tensor in host memory: `data` holds elements of `dtype`; strides are in elements.
struct TensorArg {
  void *data = nullptr;
  ir::ScalarKind dtype = ir::ScalarKind::F32;
  std::vector<int64_t> shape;
  std::vector<int64_t> strides;
};

/// One kernel argument: a tensor, an integer scalar or a floating-point scalar.
using ArgValue = std::variant<TensorArg, int64_t, double>;

struct RunOptions {
  std::array<int64_t, 3> grid = {1, 1, 1};
  /// Compute every floating-point op in fp64 without rounding to the op's type (the "ideal"
  /// answer). Floating-point tensors must then be passed as f64 storage.
  bool fp64_reference = false;
  /// Where `print` writes (null: standard output).
  std::ostream *print_stream = nullptr;
  /// Stops a runaway kernel (e.g. a loop of 2^60 trips) with an error instead of hanging.
  uint64_t max_ops = uint64_t(1) << 32;
  /// Tiles larger than this are refused with an error rather than exhausting host memory.
  int64_t max_tile_elements = int64_t(1) << 24;
};

struct RunResult {
  bool ok = true;
  /// On failure: `file:line:col: error: ...` naming the op, the program and the lane.
  std::string error;
};

/// Runs `kernel` over the grid, programs in row-major order of (z, y, x) ids. Argument mismatches,
/// out-of-bounds gathers/scatters, failed asserts and integer division by zero are reported.
RunResult run(const ir::Kernel &kernel, const std::vector<ArgValue> &args, const RunOptions &opts);

/// Runs programs [first, last) of the grid by linear id (x fastest, then y, then z): the building
/// block for devices that spread a grid over worker threads. Concurrent calls on the same tensors
/// are safe as far as the kernel's own semantics allow (atomic_add is atomic across calls).
RunResult run_programs(const ir::Kernel &kernel, const std::vector<ArgValue> &args,
                       const RunOptions &opts, int64_t first, int64_t last);

/// Row-major contiguous strides for `shape`.
std::vector<int64_t> contiguous_strides(const std::vector<int64_t> &shape);

} // namespace tl::interp
