// Host tensors: owned, typed element storage for interpreter arguments, with type conversion.
// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "tl/interpreter/interpreter.h"

#include <cstddef>
#include <vector>

namespace tl::interp {

/// A dense row-major tensor in host memory holding elements of `dtype`.
class HostTensor {
public:
  HostTensor() = default;
  HostTensor(ir::ScalarKind dtype, std::vector<int64_t> shape);

  ir::ScalarKind dtype() const { return dtype_; }
  const std::vector<int64_t> &shape() const { return shape_; }
  int64_t num_elements() const;
  std::byte *data() { return bytes_.data(); }
  const std::byte *data() const { return bytes_.data(); }
  size_t size_bytes() const { return bytes_.size(); }

  /// Element i as a double (integers converted exactly up to 2^53).
  double get(int64_t i) const;
  /// Stores `v` at i, rounded to nearest-even (floats) or truncated and wrapped (integers).
  void set(int64_t i, double v);
  /// A copy converted to `dtype` element by element with the cast rules of tl/ir/ir.h.
  HostTensor converted(ir::ScalarKind dtype) const;
  /// The interpreter's view of this tensor (contiguous strides).
  TensorArg arg();

private:
  ir::ScalarKind dtype_ = ir::ScalarKind::F32;
  std::vector<int64_t> shape_;
  std::vector<std::byte> bytes_;
};

/// Bytes per element of storage type `dtype` (i1 is stored as one byte).
size_t element_size(ir::ScalarKind dtype);

} // namespace tl::interp
