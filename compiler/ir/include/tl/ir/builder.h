// The Tile IR builder: the only way code outside the parser makes ops; each op is checked as made.
// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "tl/ir/ir.h"

#include <stdexcept>

namespace tl::ir {

/// Thrown when a builder call would make an invalid op; the message says which rule failed.
class BuildError : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

class Builder {
public:
  /// Appends to the end of `kernel`'s body; `loc` is stamped on every op made.
  explicit Builder(Kernel &kernel, Location loc = {});

  Kernel &kernel() const { return kernel_; }
  Block *insertion_block() const { return block_; }
  /// New ops are appended to `block` (or inserted before `before` when given).
  void set_insertion_point(Block *block, std::list<std::unique_ptr<Operation>>::iterator before);
  void set_insertion_point_to_end(Block *block);
  void set_location(Location loc) { loc_ = std::move(loc); }

  Value *add_argument(Type type, std::string name = "");

  /// Makes any op. Ops without regions are checked immediately (BuildError on a broken rule).
  Operation *create(Opcode opcode, std::vector<Value *> operands, std::vector<Type> result_types,
                    std::vector<std::pair<std::string, Attr>> attrs = {});

  // Typed helpers. Those of ops whose result types follow from operands and attributes take them
  // from infer_result_types (infer.h), as the C API does; the others compute the chosen type.
  Value *program_id(int axis);
  Value *num_programs(int axis);
  Value *constant(ScalarKind type, int64_t value);
  Value *constant(ScalarKind type, double value);
  Value *constexpr_param(std::string_view name);
  Value *dim(Value *tensor, int axis);
  Value *stride(Value *tensor, int axis);

  Value *arange(int64_t start, int64_t end, ScalarKind type = ScalarKind::I32);
  Value *full(const Type &tile, Attr value);
  Value *splat(Value *scalar, std::vector<int64_t> shape);
  Value *broadcast(Value *tile, std::vector<int64_t> shape);
  Value *reshape(Value *tile, std::vector<int64_t> shape);
  Value *transpose(Value *tile, std::vector<int64_t> perm);
  /// The block of `shape` of `tile` from `offsets` on (one per dimension, inside the tile).
  Value *slice(Value *tile, std::vector<int64_t> offsets, std::vector<int64_t> shape);
  Value *expand_dims(Value *value, int axis);

  Value *load(Value *tensor, std::vector<Value *> offsets, std::vector<int64_t> shape,
              std::optional<Attr> padding = std::nullopt);
  void store(Value *tensor, std::vector<Value *> offsets, Value *tile);
  Value *gather(Value *tensor, std::vector<Value *> indices, Value *mask = nullptr,
                std::optional<Attr> other = std::nullopt);
  void scatter(Value *tensor, std::vector<Value *> indices, Value *value, Value *mask = nullptr);
  Value *atomic_add(Value *tensor, std::vector<Value *> indices, Value *value,
                    Value *mask = nullptr);

  /// Elementwise ops whose result type is the first value operand's type.
  Value *elementwise(Opcode opcode, std::vector<Value *> operands);
  Value *cmp(std::string_view pred, Value *a, Value *b);
  Value *select(Value *cond, Value *a, Value *b);
  /// `rounding` empty or the conversion's default (rtz float -> int, rne otherwise) adds no
  /// attribute; see cast_rounding() in ir.h.
  Value *cast(Value *value, ScalarKind to, std::string_view rounding = "");
  Value *bitcast(Value *value, ScalarKind to);

  /// `exact_order` adds `order = "exact"` (ir.h: one fma per k in ascending order).
  Value *dot(Value *a, Value *b, Value *acc, ScalarKind acc_type,
             std::string_view input_precision = "ieee", bool exact_order = false);
  Value *reduce(std::string_view kind, Value *tile, int axis);
  /// `exact_order` adds `order = "exact"` (ir.h: a float sum in ascending order).
  Value *scan(std::string_view kind, Value *tile, int axis, bool exact_order = false);

  /// A for loop carrying `inits`; its body (region 0) has the induction variable and one argument
  /// per carried value. Build the body with set_insertion_point_to_end and finish it with yield.
  Operation *create_for(Value *lb, Value *ub, Value *step, std::vector<Value *> inits);
  /// An if with the given result types; region 0 is "then", region 1 (when `with_else`) "else".
  Operation *create_if(Value *cond, std::vector<Type> result_types, bool with_else);
  void yield(std::vector<Value *> values);
  void ret();
  void print(std::vector<Value *> values, std::string prefix = "");
  void assert_true(Value *cond, std::string message);

private:
  Operation *insert(std::unique_ptr<Operation> op);
  /// create() with the result types infer_result_types gives (BuildError naming the op if none).
  Operation *create_inferred(Opcode opcode, std::vector<Value *> operands,
                             std::vector<std::pair<std::string, Attr>> attrs = {});

  Kernel &kernel_;
  Location loc_;
  Block *block_;
  std::list<std::unique_ptr<Operation>>::iterator before_;
};

} // namespace tl::ir
