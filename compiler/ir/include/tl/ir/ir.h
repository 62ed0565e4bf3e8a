// Tile IR: the portable contract between front ends, compiler backends and the conformance kit.
// SPDX-License-Identifier: Apache-2.0
//
// Semantics (the reference interpreter is the executable definition):
// - A kernel runs as a grid of independent programs; program_id(axis) names one. Programs may run
//   in any order and concurrently; only atomic_add orders writes between programs.
// - Values are SSA: scalars or tiles of static shape. Elementwise ops take operands of one type
//   (no implicit broadcasting: use splat/broadcast/expand_dims). slice {offsets} is the block of
//   its result's shape from those offsets (static, inside the operand; the same rank).
// - Integers wrap around (two's complement); shifts use the amount modulo the bit width; integer
//   division rounds toward zero, and division by zero is a run-time error in the interpreter
//   (backends may return any value). Signedness comes from the type (iN signed, uN unsigned).
// - Floats follow IEEE 754 binary arithmetic, each op rounded to the result type with
//   round-to-nearest-even; subnormals are kept. f8e4m3 has no infinities: overflow becomes NaN.
//   The sign and payload of a NaN result are unspecified.
// - cast's `rounding` ("rne", "rtz", "rd", "ru") applies to float narrowing (default rne) and to
//   float->int casts (default rtz, as C and Triton): float->int first rounds to an integral value
//   by the mode (rne: nearest, ties to even; rtz: toward zero; rd: floor; ru: ceil), then converts,
//   saturating to the integer type's range (so out-of-range values, infinities included, become
//   its min or max); NaN becomes 0. A cast to i1 is x != 0 (NaN: 0) whatever the mode.
//   cast_rounding() gives the mode a cast applies.
// - Elementwise min/max propagate NaN (IEEE 754-2019 minimum/maximum, -0 < +0); minnum/maxnum
//   ignore a NaN operand (minimumNumber/maximumNumber: NaN only when both are, -0 < +0).
//   clamp(x, lo, hi) = min(max(x, lo), hi) for any numeric type (a NaN x or bound gives NaN).
//   rint (nearest, ties to even), floor, ceil and trunc round to an integral value of the same
//   float type; fmod(x, y) = x - trunc(x / y) * y computed exactly (the sign of x; NaN for y = 0);
//   copysign(x, y) = |x| with y's sign bit. These, abs, neg and the class tests isnan, isinf and
//   isfinite (float in, i1 out) are exact. Transcendental math (exp ... cos, tan, asin, acos, atan,
//   atan2(y, x), sinh, cosh, log1p, expm1, erfinv, ndtr) is within the ULP bound that
//   tl-conform's tolerance table states per op and type, and exact at the C99 Annex F special
//   values (e.g. log1p(-1) = -inf, erfinv(+-1) = +-inf, |x| > 1 gives NaN for asin/acos/erfinv).
//   ndtr(x) = Phi(x) = erfc(-x / sqrt 2) / 2, the standard normal distribution function (0 at
//   -inf, 1 at inf): relatively accurate in the lower tail, where 1/2 + erf(x / sqrt 2) / 2
//   cancels (the exact GELU is x ndtr(x)).
//   popcount, clz (integers, not i1): set bits, leading zeros (clz(0) = bit width), same type.
// - load reads a tile at element offsets of a tensor; lanes outside the tensor read `padding`.
//   store writes only the lanes inside the tensor. gather/scatter/atomic_add take one index tile
//   per tensor dimension and an optional mask; an unmasked lane outside the tensor is a run-time
//   error naming the program and index. Lanes of one scatter that hit the same element are written
//   in row-major lane order (the last wins).
// - dot c[i,j] = acc[i,j] + sum_k a[i,k] * b[k,j] (acc: the acc operand, or zero) in `acc_type`,
//   in an unspecified order and grouping (tensor cores add several products per step): each
//   product is exact or rounded once to acc_type, and the float result errs from the exact sum by
//   at most 2 (K + 1) u (sum_k |a[i,k] b[k,j]| + |acc[i,j]|) (u: acc_type's unit roundoff; the 2
//   allows additions that truncate, as tensor cores' do), as reduce sum. Integer dots wrap and
//   are exact in any order. `order = "exact"` asks for one fused multiply-add per step instead,
//   acc = fma(a, b, acc) rounded once to acc_type over k in ascending order (the interpreter,
//   llvm-cpu and tnpu compute every dot so; nvptx keeps such a dot on CUDA cores). input_precision
//   "tf32"/"bf16" first rounds the inputs to that precision.
// - for runs its body for iv = lb, lb + step, ... while iv < ub (compared per the bounds'
//   signedness); step must be positive (a run-time error otherwise); it ends when iv + step wraps.
// - reduce and scan combine along one axis. Integer sums and max/min are exact in any order;
//   argmax returns the first maximal index as i32; max/min propagate NaN. A float sum may
//   associate in any order (backends vectorize a reduce, nvptx scans a line in parallel, the
//   interpreter adds in ascending order): a reduce within rounding error, a scan's k-th sum
//   within (k - 1) u sum_{i<=k} |x_i| (u: unit roundoff). A scan's `order = "exact"` pins the
//   ascending chain, one rounding a step (as the interpreter, llvm-cpu and tnpu scan).
#pragma once

#include "tl/ir/types.h"

#include <list>
#include <memory>
#include <string>
#include <variant>
#include <vector>

namespace tl::ir {

enum class Opcode : uint8_t {
#define TL_OP(id, text, flags) id,
#include "tl/ir/ops.def"
#undef TL_OP
};

enum OpFlags : unsigned {
  kPure = 1,         // no side effects: may be CSE'd, DCE'd, hoisted
  kElementwise = 2,  // result lane i depends only on operand lanes i
  kReadsMemory = 4,  // reads tensors; removable when unused, not CSE-able across writes
  kWritesMemory = 8, // side effects: never removed or merged
  kHasRegions = 16,  // owns nested blocks (for, if)
  kTerminator = 32,  // ends a block
};

std::string_view opcode_name(Opcode op);
std::optional<Opcode> parse_opcode(std::string_view name);
unsigned opcode_flags(Opcode op);

/// A source position: `file:line:col`. Builder-made ops carry the location the builder was given.
struct Location {
  std::shared_ptr<const std::string> file;
  int line = 0;
  int col = 0;
  std::string str() const;
};

/// Attribute values. Floats keep full precision through print/parse.
using Attr = std::variant<bool, int64_t, double, std::string, std::vector<int64_t>, Type>;
std::string attr_str(const Attr &a);

class Operation;
class Block;

class Value {
public:
  Value(Type type, Operation *def, Block *owner, unsigned index)
      : type_(std::move(type)), def_(def), owner_(owner), index_(index) {}
  const Type &type() const { return type_; }
  /// The defining op, or null for a block argument.
  Operation *def() const { return def_; }
  /// The block this value is an argument of, or whose op defines it.
  Block *owner() const;
  unsigned index() const { return index_; }
  /// A name hint used by the printer (may be empty).
  const std::string &name() const { return name_; }
  void set_name(std::string n) { name_ = std::move(n); }

private:
  Type type_;
  Operation *def_;
  Block *owner_;
  unsigned index_;
  std::string name_;
};

class Block {
public:
  explicit Block(Operation *parent) : parent_(parent) {}
  Value *add_argument(Type t);
  const std::vector<std::unique_ptr<Value>> &arguments() const { return args_; }
  Value *argument(unsigned i) const { return args_[i].get(); }
  std::list<std::unique_ptr<Operation>> &ops() { return ops_; }
  const std::list<std::unique_ptr<Operation>> &ops() const { return ops_; }
  /// The op owning this block, or null for a kernel body.
  Operation *parent() const { return parent_; }
  Operation *terminator() const;

private:
  Operation *parent_;
  std::vector<std::unique_ptr<Value>> args_;
  std::list<std::unique_ptr<Operation>> ops_;
};

class Operation {
public:
  Operation(Opcode opcode, Location loc) : opcode_(opcode), loc_(std::move(loc)) {}
  Opcode opcode() const { return opcode_; }
  std::string_view name() const { return opcode_name(opcode_); }
  unsigned flags() const { return opcode_flags(opcode_); }
  const Location &loc() const { return loc_; }

  const std::vector<Value *> &operands() const { return operands_; }
  Value *operand(unsigned i) const { return operands_[i]; }
  size_t num_operands() const { return operands_.size(); }
  void set_operand(unsigned i, Value *v) { operands_[i] = v; }
  void add_operand(Value *v) { operands_.push_back(v); }

  size_t num_results() const { return results_.size(); }
  Value *result(unsigned i = 0) const { return results_[i].get(); }
  const std::vector<std::unique_ptr<Value>> &results() const { return results_; }
  Value *add_result(Type t);

  size_t num_regions() const { return regions_.size(); }
  Block *region(unsigned i) const { return regions_[i].get(); }
  Block *add_region();

  Block *parent() const { return parent_; }
  void set_parent(Block *b) { parent_ = b; }

  /// Attributes are kept sorted by name so that printing is deterministic.
  const std::vector<std::pair<std::string, Attr>> &attrs() const { return attrs_; }
  /// Names are the op's own attributes (verify_op.cpp lists them) or a target's decisions,
  /// `<target>.<name>` (e.g. `tnpu.addr`), which any op may carry.
  const Attr *attr(std::string_view name) const;
  void set_attr(std::string name, Attr value);
  /// Removes attribute `name`; returns whether the op had it.
  bool remove_attr(std::string_view name);

  template <class T> const T *attr_as(std::string_view name) const {
    const Attr *a = attr(name);
    return a ? std::get_if<T>(a) : nullptr;
  }

private:
  Opcode opcode_;
  Location loc_;
  std::vector<Value *> operands_;
  std::vector<std::unique_ptr<Value>> results_;
  std::vector<std::unique_ptr<Block>> regions_;
  std::vector<std::pair<std::string, Attr>> attrs_;
  Block *parent_ = nullptr;
};

/// A compile-time constant parameter: its value is fixed when the kernel is specialized.
struct ConstexprParam {
  std::string name;
  ScalarKind type;
  std::variant<int64_t, double> value;
};

class Kernel {
public:
  explicit Kernel(std::string name, Location loc)
      : name_(std::move(name)), loc_(std::move(loc)), body_(std::make_unique<Block>(nullptr)) {}
  const std::string &name() const { return name_; }
  const Location &loc() const { return loc_; }
  /// Kernel arguments are the body's block arguments: tensors or scalars.
  Block *body() const { return body_.get(); }
  std::vector<ConstexprParam> &constexprs() { return constexprs_; }
  const std::vector<ConstexprParam> &constexprs() const { return constexprs_; }
  const ConstexprParam *find_constexpr(std::string_view name) const;

private:
  std::string name_;
  Location loc_;
  std::unique_ptr<Block> body_;
  std::vector<ConstexprParam> constexprs_;
};

class Module {
public:
  std::vector<std::unique_ptr<Kernel>> &kernels() { return kernels_; }
  const std::vector<std::unique_ptr<Kernel>> &kernels() const { return kernels_; }
  Kernel *find_kernel(std::string_view name) const;
  Kernel *add_kernel(std::string name, Location loc);

private:
  std::vector<std::unique_ptr<Kernel>> kernels_;
};

/// The rounding mode cast `op` applies: its `rounding` attribute, else the default of its
/// conversion ("rtz" for float -> integer, "rne" otherwise).
std::string_view cast_rounding(const Operation &op);

/// Calls `fn(op)` on every op nested in `block`, parents before their regions' ops.
template <class Fn> void walk(Block *block, Fn &&fn) {
  for (auto &op : block->ops()) {
    fn(op.get());
    for (unsigned r = 0; r < op->num_regions(); ++r)
      walk(op->region(r), fn);
  }
}

} // namespace tl::ir
