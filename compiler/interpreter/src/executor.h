// The interpreter's executor: runs one kernel's programs op by op over host tensors.
// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "tl/interpreter/interpreter.h"

#include "lanes.h"

#include <unordered_map>

namespace tl::interp {

/// The value of an SSA value at run time: one Lane per element, row-major.
struct RtValue {
  ir::Type type;
  std::vector<Lane> lanes;
};

/// A run-time error at an op; the executor adds the program id.
struct RunError {
  ir::Location loc;
  std::string message;
};

class Executor {
public:
  Executor(const ir::Kernel &kernel, const std::vector<ArgValue> &args, const RunOptions &opts);
  /// Checks the arguments against the kernel signature; throws RunError.
  void bind_arguments();
  void run_program(const std::array<int64_t, 3> &pid);

private:
  // Control (executor.cpp).
  void run_block(const ir::Block &block, std::vector<RtValue> *yielded);
  void exec(const ir::Operation &op);
  void exec_for(const ir::Operation &op);
  void exec_if(const ir::Operation &op);
  void exec_debug(const ir::Operation &op);
  void exec_elementwise(const ir::Operation &op);
  RtValue exec_source(const ir::Operation &op);

  // Tiles and memory (tile_ops.cpp).
  RtValue exec_shape(const ir::Operation &op);
  RtValue exec_load(const ir::Operation &op);
  void exec_store(const ir::Operation &op);
  RtValue exec_indexed(const ir::Operation &op);
  RtValue exec_dot(const ir::Operation &op);
  RtValue exec_reduce(const ir::Operation &op);
  RtValue exec_scan(const ir::Operation &op);

  const RtValue &get(const ir::Value *v) const;
  const TensorArg &tensor(const ir::Value *v) const;
  int64_t scalar_int(const ir::Value *v) const { return get(v).lanes[0].i; }
  Lane attr_lane(const ir::Operation &op, const char *name, ir::ScalarKind type) const;
  double round(ir::ScalarKind k, double v) const {
    return opts_.fp64_reference ? v : round_float(k, v);
  }
  [[noreturn]] void fail(const ir::Operation &op, const std::string &message) const;

  const ir::Kernel &kernel_;
  const std::vector<ArgValue> &args_;
  const RunOptions &opts_;
  std::array<int64_t, 3> pid_{};
  std::unordered_map<const ir::Value *, RtValue> env_;
  std::unordered_map<const ir::Value *, const TensorArg *> tensors_;
  std::unordered_map<const ir::Value *, RtValue> scalar_args_;
  uint64_t ops_executed_ = 0;
};

} // namespace tl::interp
