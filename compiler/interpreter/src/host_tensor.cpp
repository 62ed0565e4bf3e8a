// Host tensors: owned storage and element conversion through the interpreter's lane semantics.
// SPDX-License-Identifier: Apache-2.0
#include "tl/interpreter/host_tensor.h"

#include "lanes.h"
#include "storage.h"

#include <cmath>

namespace tl::interp {

HostTensor::HostTensor(ir::ScalarKind dtype, std::vector<int64_t> shape)
    : dtype_(dtype), shape_(std::move(shape)) {
  bytes_.resize(static_cast<size_t>(num_elements()) * element_size(dtype_));
}

int64_t HostTensor::num_elements() const {
  int64_t n = 1;
  for (int64_t d : shape_)
    n *= d;
  return n;
}

double HostTensor::get(int64_t i) const {
  Lane l = read_element(bytes_.data(), dtype_, i);
  if (ir::is_float(dtype_))
    return l.f;
  return static_cast<double>(l.i);
}

void HostTensor::set(int64_t i, double v) {
  Lane in{0, v};
  write_element(bytes_.data(), dtype_, i,
                convert(ir::ScalarKind::F64, dtype_, in, "", /*fp64_reference=*/false));
}

HostTensor HostTensor::converted(ir::ScalarKind dtype) const {
  HostTensor out(dtype, shape_);
  const int64_t n = num_elements();
  for (int64_t i = 0; i < n; ++i)
    write_element(out.data(), dtype, i,
                  convert(dtype_, dtype, read_element(bytes_.data(), dtype_, i), "", false));
  return out;
}

TensorArg HostTensor::arg() {
  return TensorArg{bytes_.data(), dtype_, shape_, contiguous_strides(shape_)};
}

} // namespace tl::interp
