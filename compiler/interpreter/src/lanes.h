// Scalar ("lane") semantics of every elementwise op and element type: the one place they live.
// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "tl/ir/ir.h"

#include <cstdint>
#include <stdexcept>
#include <string>

namespace tl::interp {

/// One element. Integer types use `i` (already wrapped to the type's width and signedness);
/// float types use `f` (a double exactly representable in the type, unless computing in fp64).
struct Lane {
  int64_t i = 0;
  double f = 0;
};

/// A run-time fault of one lane (e.g. integer division by zero).
struct LaneFault : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// Wraps an integer to the width and signedness of `k` (i1 keeps the low bit).
int64_t wrap_int(ir::ScalarKind k, int64_t v);
/// Rounds a double to float type `k` (identity for f64) with rounding mode "rne"/"rtz"/"rd"/"ru".
double round_float(ir::ScalarKind k, double v, std::string_view rounding = "rne");
/// Converts lane `v` of type `from` to type `to` per the cast rules in tl/ir/ir.h; `rounding`
/// empty means the conversion's default (rtz float -> integer, rne otherwise).
Lane convert(ir::ScalarKind from, ir::ScalarKind to, Lane v, std::string_view rounding,
             bool fp64_reference);
/// Reinterprets the bits of `v` (type `from`) as type `to` of the same width.
Lane bitcast(ir::ScalarKind from, ir::ScalarKind to, Lane v);

/// IEEE minimum/maximum that propagate NaN and order -0 below +0.
double float_min(double a, double b);
double float_max(double a, double b);

/// An elementwise op prepared once (attributes decoded) and applied lane by lane.
class LaneOp {
public:
  LaneOp(const ir::Operation &op, bool fp64_reference);
  /// `args` holds kMaxOperands lanes whatever the op's arity (the unused ones are read, not used).
  Lane apply(const Lane *args) const;
  static constexpr size_t kMaxOperands = 3;
  ir::ScalarKind in_type() const { return in_; }
  ir::ScalarKind out_type() const { return out_; }

private:
  Lane apply_float(const Lane *args) const;
  Lane apply_int(const Lane *args) const;

  ir::Opcode code_;
  ir::ScalarKind in_, out_;
  std::string mode_; // cmp predicate or cast rounding mode
  bool fp64_reference_;
};

} // namespace tl::interp
