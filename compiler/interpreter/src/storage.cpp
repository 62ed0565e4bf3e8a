// Tensor element access: integers by width, floats through the numerics library's encodings.
// SPDX-License-Identifier: Apache-2.0
#include "storage.h"

#include "tl/reference/numerics.h"

#include <cstring>

namespace tl::interp {
using ir::ScalarKind;
namespace num = tl::numerics;

namespace {
template <class T> T load_as(const void *base, int64_t index) {
  T v;
  std::memcpy(&v, static_cast<const char *>(base) + index * sizeof(T), sizeof(T));
  return v;
}
template <class T> void store_as(void *base, int64_t index, T v) {
  std::memcpy(static_cast<char *>(base) + index * sizeof(T), &v, sizeof(T));
}
} // namespace

size_t element_size(ScalarKind dtype) {
  return dtype == ScalarKind::I1 ? 1 : static_cast<size_t>(ir::bit_width(dtype) / 8);
}

Lane read_element(const void *base, ScalarKind dtype, int64_t index) {
  Lane l;
  switch (dtype) {
  case ScalarKind::I1:
    l.i = load_as<uint8_t>(base, index) != 0;
    break;
  case ScalarKind::I8:
    l.i = load_as<int8_t>(base, index);
    break;
  case ScalarKind::I16:
    l.i = load_as<int16_t>(base, index);
    break;
  case ScalarKind::I32:
    l.i = load_as<int32_t>(base, index);
    break;
  case ScalarKind::I64:
    l.i = load_as<int64_t>(base, index);
    break;
  case ScalarKind::U8:
    l.i = load_as<uint8_t>(base, index);
    break;
  case ScalarKind::U16:
    l.i = load_as<uint16_t>(base, index);
    break;
  case ScalarKind::U32:
    l.i = load_as<uint32_t>(base, index);
    break;
  case ScalarKind::F32:
    l.f = load_as<float>(base, index);
    break;
  case ScalarKind::F64:
    l.f = load_as<double>(base, index);
    break;
  case ScalarKind::F16:
    l.f = num::decode(num::FloatFormat::F16, load_as<uint16_t>(base, index));
    break;
  case ScalarKind::BF16:
    l.f = num::decode(num::FloatFormat::BF16, load_as<uint16_t>(base, index));
    break;
  case ScalarKind::F8E4M3:
    l.f = num::decode(num::FloatFormat::F8E4M3, load_as<uint8_t>(base, index));
    break;
  case ScalarKind::F8E5M2:
    l.f = num::decode(num::FloatFormat::F8E5M2, load_as<uint8_t>(base, index));
    break;
  }
  return l;
}

void write_element(void *base, ScalarKind dtype, int64_t index, Lane v) {
  switch (dtype) {
  case ScalarKind::I1:
    store_as<uint8_t>(base, index, v.i != 0);
    break;
  case ScalarKind::I8:
  case ScalarKind::U8:
    store_as<uint8_t>(base, index, uint8_t(v.i));
    break;
  case ScalarKind::I16:
  case ScalarKind::U16:
    store_as<uint16_t>(base, index, uint16_t(v.i));
    break;
  case ScalarKind::I32:
  case ScalarKind::U32:
    store_as<uint32_t>(base, index, uint32_t(v.i));
    break;
  case ScalarKind::I64:
    store_as<int64_t>(base, index, v.i);
    break;
  case ScalarKind::F32:
    store_as<float>(base, index, static_cast<float>(v.f));
    break;
  case ScalarKind::F64:
    store_as<double>(base, index, v.f);
    break;
  case ScalarKind::F16:
    store_as<uint16_t>(base, index, uint16_t(num::encode(num::FloatFormat::F16, v.f)));
    break;
  case ScalarKind::BF16:
    store_as<uint16_t>(base, index, uint16_t(num::encode(num::FloatFormat::BF16, v.f)));
    break;
  case ScalarKind::F8E4M3:
    store_as<uint8_t>(base, index, uint8_t(num::encode(num::FloatFormat::F8E4M3, v.f)));
    break;
  case ScalarKind::F8E5M2:
    store_as<uint8_t>(base, index, uint8_t(num::encode(num::FloatFormat::F8E5M2, v.f)));
    break;
  }
}

} // namespace tl::interp
