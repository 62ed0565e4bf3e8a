// The precision suite's cases: every elementwise, math, reduction, scan, dot and cast op at each
// dtype and shape, with the Tile IR kernel that computes it.
// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "conform.h"

#include "tl/ir/types.h"

#include <array>
#include <string>
#include <vector>

namespace tl::conform {

/// Clamp: clamp(x, lo, hi) of floats or integers; ClassTest: isnan/isinf/isfinite (float -> i1).
enum class PrecisionKind {
  Unary,
  Binary,
  Fma,
  IntUnary,
  IntBinary,
  Cast,
  Reduce,
  Scan,
  Dot,
  Clamp,
  ClassTest
};

struct PrecisionCase {
  std::string id;
  std::string op;      // Tile IR op name ("exp", "reduce" kinds are "sum", ...)
  std::string tol_key; // the tolerance-table entry ("exp", "reduce_sum", "cast", ...)
  PrecisionKind kind;
  ir::ScalarKind in = ir::ScalarKind::F32;
  ir::ScalarKind out = ir::ScalarKind::F32;
  std::vector<int64_t> shape; // elementwise: the tensor; reduce/scan: rows x cols; dot: M, N, K
  int axis = 0;
  std::string rounding;        // casts
  std::string input_precision; // dot
  bool core = false;

  int arity() const;
  json params() const;
};

/// Every case, in a fixed order (core ones first within each op).
const std::vector<PrecisionCase> &precision_cases();

/// The kernel `@k` computing the case, and its launch grid.
std::string precision_kernel(const PrecisionCase &c);
std::array<uint64_t, 3> precision_grid(const PrecisionCase &c);

/// The fp32 contract cases (precision.contract.*, suite_contract.cpp): library kernels and
/// blocked sums at user sizes against the interpreter's fp64 mode, normwise <= 1e-6.
std::vector<TestDef> list_contract(const ListContext &ctx);
Outcome run_contract(WorkerContext &ctx, const TestDef &t);

} // namespace tl::conform
