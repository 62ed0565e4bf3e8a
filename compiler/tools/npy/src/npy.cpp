// `.npy` files as host tensors: support/npy's arrays with NumPy dtypes mapped to Tile IR's.
// SPDX-License-Identifier: Apache-2.0
#include "tl/npy/npy.h"

#include <cstring>

namespace tl::npy {
using ir::ScalarKind;

namespace {

struct Descr {
  const char *text;
  ScalarKind kind;
};
constexpr Descr kDescrs[] = {
    {"|b1", ScalarKind::I1},  {"|i1", ScalarKind::I8},  {"<i2", ScalarKind::I16},
    {"<i4", ScalarKind::I32}, {"<i8", ScalarKind::I64}, {"|u1", ScalarKind::U8},
    {"<u2", ScalarKind::U16}, {"<u4", ScalarKind::U32}, {"<f2", ScalarKind::F16},
    {"<f4", ScalarKind::F32}, {"<f8", ScalarKind::F64},
};

interp::HostTensor to_tensor(const support::npy::Array &a, const std::string &what) {
  for (const Descr &d : kDescrs)
    if (a.descr == d.text) {
      interp::HostTensor t(d.kind, a.shape);
      std::memcpy(t.data(), a.data.data(), t.size_bytes()); // parse() checked the size
      return t;
    }
  throw NpyError(what + ": unsupported dtype '" + a.descr + "'");
}

} // namespace

interp::HostTensor parse(const std::string &bytes, const std::string &what) {
  return to_tensor(support::npy::parse(bytes, what), what);
}

interp::HostTensor load(const std::string &path) {
  return to_tensor(support::npy::load(path), path);
}

void save(const std::string &path, const interp::HostTensor &tensor) {
  const interp::HostTensor *t = &tensor;
  interp::HostTensor widened;
  const ScalarKind k = tensor.dtype();
  if (k == ScalarKind::BF16 || k == ScalarKind::F8E4M3 || k == ScalarKind::F8E5M2) {
    widened = tensor.converted(ScalarKind::F32);
    t = &widened;
  }
  support::npy::Array a;
  for (const Descr &d : kDescrs)
    if (d.kind == t->dtype())
      a.descr = d.text;
  a.shape = t->shape();
  a.data.assign(reinterpret_cast<const char *>(t->data()), t->size_bytes());
  support::npy::save(path, a);
}

} // namespace tl::npy
