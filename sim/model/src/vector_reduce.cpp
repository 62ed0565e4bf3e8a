// Vector unit: copies, row and column reductions, scans (see vector.h; orders in SPEC.md).
// SPDX-License-Identifier: Apache-2.0
#include "vector.h"

#include <vector>

namespace tl::npu::model {

using isa::Opcode;
using num::DType;

namespace {

enum class Fold { Sum, Max, Min, ArgMax };

Fold fold_of(Opcode op) {
  switch (op) {
  case Opcode::VRsum:
  case Opcode::VCsum:
  case Opcode::VCumsum:
    return Fold::Sum;
  case Opcode::VRmax:
  case Opcode::VCmax:
  case Opcode::VCummax:
    return Fold::Max;
  case Opcode::VRmin:
  case Opcode::VCmin:
  case Opcode::VCummin:
    return Fold::Min;
  default:
    return Fold::ArgMax;
  }
}

/// Typed fold of two elements (Sum, Max, Min).
struct Folder {
  Fold fold;
  DType t;
  bool u;
  uint32_t operator()(uint32_t acc, uint32_t x) const {
    const num::BinOp op = fold == Fold::Sum   ? num::BinOp::Add
                          : fold == Fold::Max ? num::BinOp::Max
                                              : num::BinOp::Min;
    return num::binary(op, t, acc, x, u);
  }
  /// The result of an empty reduction: 0, the lowest value (max) or the highest (min).
  uint32_t identity() const {
    const bool hi = fold == Fold::Min;
    if (fold == Fold::Sum || fold == Fold::ArgMax)
      return 0;
    switch (t) {
    case DType::F32:
      return hi ? 0x7f800000u : 0xff800000u;
    case DType::F16:
      return hi ? 0x7c00u : 0xfc00u;
    case DType::BF16:
      return hi ? 0x7f80u : 0xff80u;
    case DType::I8:
      return u ? (hi ? 0xffu : 0u) : (hi ? 0x7fu : 0x80u);
    default:
      return u ? (hi ? ~0u : 0u) : (hi ? 0x7fffffffu : 0x80000000u);
    }
  }
  /// Whether x replaces the best so far in an argmax: NaN counts as the largest value and the
  /// first of equal maxima wins.
  bool better(uint32_t x, uint32_t best) const {
    const bool fl = num::is_float(t);
    const bool x_nan = fl && num::compare(num::CmpOp::Ne, t, x, x);
    const bool best_nan = fl && num::compare(num::CmpOp::Ne, t, best, best);
    return !best_nan && (x_nan || num::compare(num::CmpOp::Gt, t, x, best, u));
  }
};

Folder folder(const Command &c) {
  const DType t = checked_dtype(c.vec.t, "t");
  if (c.vec.u > 1)
    throw ProgramError("vector u must be 0 (signed) or 1 (unsigned), got " +
                       std::to_string(c.vec.u));
  return {fold_of(c.op), t, c.vec.u != 0};
}

} // namespace

void VectorUnit::strided_copy(const Command &c) {
  const VecCfg &v = c.vec;
  const DType t = checked_dtype(v.src, "src");
  const uint64_t es = num::dtype_size(t);
  const bool strided = c.op == Opcode::VScopy;
  const uint64_t ea = strided ? v.ea : es, ed = strided ? v.ed : es;
  const char *name = isa::op_info(c.op).mnemonic;
  // Every read happens before any write, so overlapping ranges copy the old values.
  std::vector<uint32_t> buf(v.rows * v.n);
  for (uint64_t r = 0; r < v.rows; ++r)
    for (uint64_t i = 0; i < v.n; ++i)
      buf[r * v.n + i] = num::load_bits(t, core_.mem.span(c.b + r * v.sa + i * ea, es, name), 0);
  for (uint64_t r = 0; r < v.rows; ++r)
    for (uint64_t i = 0; i < v.n; ++i)
      num::store_bits(t, core_.mem.span(c.a + r * v.sd + i * ed, es, name), 0, buf[r * v.n + i]);
}

void VectorUnit::row_reduce(const Command &c) {
  const VecCfg &v = c.vec;
  const Folder f = folder(c);
  const uint64_t w = static_cast<uint64_t>(chip_.cfg.core.vector.lanes);
  const char *name = isa::op_info(c.op).mnemonic;
  const uint64_t es = num::dtype_size(f.t);
  std::vector<uint32_t> lane(w);
  for (uint64_t r = 0; r < v.rows; ++r) {
    const uint8_t *a = core_.mem.span(c.b + r * v.sa, v.n * es, name);
    if (f.fold == Fold::ArgMax) { // order-independent: the first index of the largest value
      uint64_t best = 0;
      for (uint64_t i = 1; i < v.n; ++i)
        if (f.better(num::load_bits(f.t, a, i), num::load_bits(f.t, a, best)))
          best = i;
      store(c.a + r * v.sd, 0, DType::I32, static_cast<uint32_t>(best), c);
      continue;
    }
    // Lane l folds elements l, l + W, ... in order, from the first one it gets.
    const uint64_t used = std::min(w, v.n);
    for (uint64_t l = 0; l < used; ++l) {
      uint32_t acc = num::load_bits(f.t, a, l);
      for (uint64_t i = l + w; i < v.n; i += w)
        acc = f(acc, num::load_bits(f.t, a, i));
      lane[l] = acc;
    }
    // Pairwise tree over the used lanes: (0,1), (2,3), ... then (0,2), ...
    for (uint64_t step = 1; step < used; step *= 2)
      for (uint64_t l = 0; l + step < used; l += 2 * step)
        lane[l] = f(lane[l], lane[l + step]);
    store(c.a + r * v.sd, 0, f.t, used == 0 ? f.identity() : lane[0], c);
  }
}

void VectorUnit::column_reduce(const Command &c) {
  const VecCfg &v = c.vec;
  const Folder f = folder(c);
  const char *name = isa::op_info(c.op).mnemonic;
  const uint64_t es = num::dtype_size(f.t);
  // Lane j holds column j and folds the rows in order: row 0, 1, ..., rows - 1.
  std::vector<uint32_t> acc(v.n, f.identity());
  std::vector<uint32_t> best(v.n, 0);
  for (uint64_t r = 0; r < v.rows; ++r) {
    const uint8_t *a = core_.mem.span(c.b + r * v.sa, v.n * es, name);
    for (uint64_t j = 0; j < v.n; ++j) {
      const uint32_t x = num::load_bits(f.t, a, j);
      if (r == 0) {
        acc[j] = x;
      } else if (f.fold != Fold::ArgMax) {
        acc[j] = f(acc[j], x);
      } else if (f.better(x, acc[j])) {
        acc[j] = x;
        best[j] = static_cast<uint32_t>(r);
      }
    }
  }
  const DType out = f.fold == Fold::ArgMax ? DType::I32 : f.t;
  for (uint64_t j = 0; j < v.n; ++j)
    store(c.a, j, out, f.fold == Fold::ArgMax ? best[j] : acc[j], c);
}

void VectorUnit::scan(const Command &c) {
  const VecCfg &v = c.vec;
  const Folder f = folder(c);
  const char *name = isa::op_info(c.op).mnemonic;
  const uint64_t es = num::dtype_size(f.t);
  std::vector<uint32_t> out(v.n);
  for (uint64_t r = 0; r < v.rows; ++r) {
    const uint8_t *a = core_.mem.span(c.b + r * v.sa, v.n * es, name);
    for (uint64_t i = 0; i < v.n; ++i) {
      const uint32_t x = num::load_bits(f.t, a, i);
      out[i] = i == 0 ? x : f(out[i - 1], x);
    }
    uint8_t *d = core_.mem.span(c.a + r * v.sd, v.n * es, name);
    for (uint64_t i = 0; i < v.n; ++i)
      num::store_bits(f.t, d, i, out[i]);
  }
}

} // namespace tl::npu::model
