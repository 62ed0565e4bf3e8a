// The interpreter's executor: argument binding, control flow, elementwise ops, print and assert.
// SPDX-License-Identifier: Apache-2.0
#include "executor.h"

#include "storage.h"

#include <iostream>
#include <sstream>

namespace tl::interp {
using ir::Opcode;
using ir::ScalarKind;

Executor::Executor(const ir::Kernel &kernel, const std::vector<ArgValue> &args,
                   const RunOptions &opts)
    : kernel_(kernel), args_(args), opts_(opts) {}

void Executor::fail(const ir::Operation &op, const std::string &message) const {
  throw RunError{op.loc(), message};
}

const RtValue &Executor::get(const ir::Value *v) const {
  auto it = env_.find(v);
  if (it != env_.end())
    return it->second;
  return scalar_args_.at(v);
}

const TensorArg &Executor::tensor(const ir::Value *v) const { return *tensors_.at(v); }

void Executor::bind_arguments() {
  const auto &params = kernel_.body()->arguments();
  const ir::Location &loc = kernel_.loc();
  auto error = [&](size_t i, const std::string &msg) {
    throw RunError{loc, "argument #" + std::to_string(i) + " of @" + kernel_.name() + ": " + msg};
  };
  if (params.size() != args_.size())
    throw RunError{loc, "@" + kernel_.name() + " takes " + std::to_string(params.size()) +
                            " arguments, got " + std::to_string(args_.size())};
  for (size_t i = 0; i < params.size(); ++i) {
    const ir::Type &t = params[i]->type();
    if (t.is_tensor()) {
      const TensorArg *ta = std::get_if<TensorArg>(&args_[i]);
      if (!ta)
        error(i, "expected a tensor for " + t.str());
      ScalarKind want = opts_.fp64_reference && ir::is_float(t.elem()) ? ScalarKind::F64 : t.elem();
      if (ta->dtype != want)
        error(i, "tensor has element type " + std::string(ir::scalar_name(ta->dtype)) +
                     ", kernel expects " + std::string(ir::scalar_name(want)));
      if (ta->shape.size() != static_cast<size_t>(t.rank()) ||
          ta->strides.size() != ta->shape.size())
        error(i, "tensor must have rank " + std::to_string(t.rank()) + " (shape and strides)");
      int64_t n = 1;
      for (int64_t d : ta->shape) {
        if (d < 0)
          error(i, "tensor dimension is negative");
        n *= d;
      }
      if (n > 0 && !ta->data)
        error(i, "tensor data is null");
      tensors_[params[i].get()] = ta;
      continue;
    }
    RtValue v{t, {Lane{}}};
    if (auto *iv = std::get_if<int64_t>(&args_[i])) {
      if (ir::is_float(t.elem()))
        v.lanes[0].f = round(t.elem(), static_cast<double>(*iv));
      else
        v.lanes[0].i = wrap_int(t.elem(), *iv);
    } else if (auto *dv = std::get_if<double>(&args_[i])) {
      if (!ir::is_float(t.elem()))
        error(i, "expected an integer for " + t.str() + ", got a float");
      v.lanes[0].f = round(t.elem(), *dv);
    } else {
      error(i, "expected a scalar " + t.str() + ", got a tensor");
    }
    scalar_args_[params[i].get()] = std::move(v);
  }
}

void Executor::run_program(const std::array<int64_t, 3> &pid) {
  pid_ = pid;
  env_.clear();
  run_block(*kernel_.body(), nullptr);
}

void Executor::run_block(const ir::Block &block, std::vector<RtValue> *yielded) {
  for (auto &op : block.ops()) {
    if (++ops_executed_ > opts_.max_ops)
      fail(*op, "execution limit of " + std::to_string(opts_.max_ops) + " ops exceeded");
    if (op->opcode() == Opcode::Yield) {
      if (yielded)
        for (ir::Value *v : op->operands())
          yielded->push_back(get(v));
      return;
    }
    if (op->opcode() == Opcode::Return)
      return;
    exec(*op);
  }
}

void Executor::exec(const ir::Operation &op) {
  const unsigned flags = op.flags();
  for (auto &r : op.results())
    if (r->type().num_elements() > opts_.max_tile_elements)
      fail(op, "tile " + r->type().str() + " exceeds the interpreter's limit of " +
                   std::to_string(opts_.max_tile_elements) + " elements");
  try {
    switch (op.opcode()) {
    case Opcode::For:
      return exec_for(op);
    case Opcode::If:
      return exec_if(op);
    case Opcode::Print:
    case Opcode::Assert:
      return exec_debug(op);
    case Opcode::Store:
      return exec_store(op);
    case Opcode::Scatter:
      exec_indexed(op);
      return;
    default:
      break;
    }
    if (flags & ir::kElementwise)
      return exec_elementwise(op);
    RtValue r;
    switch (op.opcode()) {
    case Opcode::Splat:
    case Opcode::Broadcast:
    case Opcode::Reshape:
    case Opcode::Transpose:
    case Opcode::Slice:
    case Opcode::ExpandDims:
      r = exec_shape(op);
      break;
    case Opcode::Load:
      r = exec_load(op);
      break;
    case Opcode::Gather:
    case Opcode::AtomicAdd:
      r = exec_indexed(op);
      break;
    case Opcode::Dot:
      r = exec_dot(op);
      break;
    case Opcode::Reduce:
      r = exec_reduce(op);
      break;
    case Opcode::Scan:
      r = exec_scan(op);
      break;
    default:
      r = exec_source(op);
      break;
    }
    env_[op.result()] = std::move(r);
  } catch (const LaneFault &f) {
    fail(op, f.what());
  }
}

void Executor::exec_elementwise(const ir::Operation &op) {
  LaneOp lane_op(op, opts_.fp64_reference);
  const size_t n = op.num_operands();
  std::vector<const RtValue *> in(n);
  for (size_t i = 0; i < n; ++i)
    in[i] = &get(op.operand(i));
  RtValue r{op.result()->type(), std::vector<Lane>(op.result()->type().num_elements())};
  Lane args[LaneOp::kMaxOperands] = {};
  for (size_t lane = 0; lane < r.lanes.size(); ++lane) {
    for (size_t i = 0; i < n; ++i)
      args[i] = in[i]->lanes[lane];
    try {
      r.lanes[lane] = lane_op.apply(args);
    } catch (const LaneFault &f) {
      fail(op, std::string(f.what()) + " in lane " + std::to_string(lane));
    }
  }
  env_[op.result()] = std::move(r);
}

Lane Executor::attr_lane(const ir::Operation &op, const char *name, ScalarKind type) const {
  Lane l;
  const ir::Attr *a = op.attr(name);
  if (!a)
    return l;
  if (auto *b = std::get_if<bool>(a))
    l.i = *b;
  else if (auto *i = std::get_if<int64_t>(a))
    ir::is_float(type) ? void(l.f = round(type, double(*i))) : void(l.i = wrap_int(type, *i));
  else if (auto *d = std::get_if<double>(a))
    l.f = round(type, *d);
  return l;
}

RtValue Executor::exec_source(const ir::Operation &op) {
  const ir::Type &t = op.result()->type();
  RtValue r{t, std::vector<Lane>(t.num_elements())};
  switch (op.opcode()) {
  case Opcode::ProgramId:
    r.lanes[0].i = pid_[*op.attr_as<int64_t>("axis")];
    break;
  case Opcode::NumPrograms:
    r.lanes[0].i = opts_.grid[*op.attr_as<int64_t>("axis")];
    break;
  case Opcode::Constant:
  case Opcode::Full: {
    Lane v = attr_lane(op, "value", t.elem());
    std::fill(r.lanes.begin(), r.lanes.end(), v);
    break;
  }
  case Opcode::Constexpr: {
    const ir::ConstexprParam *p = kernel_.find_constexpr(*op.attr_as<std::string>("name"));
    if (auto *i = std::get_if<int64_t>(&p->value))
      ir::is_float(t.elem()) ? void(r.lanes[0].f = round(t.elem(), double(*i)))
                             : void(r.lanes[0].i = wrap_int(t.elem(), *i));
    else
      r.lanes[0].f = round(t.elem(), std::get<double>(p->value));
    break;
  }
  case Opcode::TensorDim:
  case Opcode::TensorStride: {
    const TensorArg &ta = tensor(op.operand(0));
    const int64_t axis = *op.attr_as<int64_t>("axis");
    r.lanes[0].i = op.opcode() == Opcode::TensorDim ? ta.shape[axis] : ta.strides[axis];
    break;
  }
  case Opcode::Arange: {
    const int64_t start = *op.attr_as<int64_t>("start");
    for (size_t i = 0; i < r.lanes.size(); ++i)
      r.lanes[i].i = wrap_int(t.elem(), start + static_cast<int64_t>(i));
    break;
  }
  default:
    fail(op, "the interpreter does not handle '" + std::string(op.name()) + "'");
  }
  return r;
}

void Executor::exec_for(const ir::Operation &op) {
  const ScalarKind it = op.operand(0)->type().elem();
  const int64_t lb = scalar_int(op.operand(0)), ub = scalar_int(op.operand(1));
  const int64_t step = scalar_int(op.operand(2));
  if (step <= 0)
    fail(op, "for step must be positive, got " + std::to_string(step));
  std::vector<RtValue> carried;
  for (size_t i = 3; i < op.num_operands(); ++i)
    carried.push_back(get(op.operand(i)));
  const ir::Block &body = *op.region(0);
  auto less = [&](int64_t a, int64_t b) {
    return ir::is_signed(it) ? a < b : static_cast<uint64_t>(a) < static_cast<uint64_t>(b);
  };
  for (int64_t iv = lb; less(iv, ub);) {
    env_[body.argument(0)] = RtValue{op.operand(0)->type(), {Lane{iv, 0}}};
    for (size_t i = 0; i < carried.size(); ++i)
      env_[body.argument(1 + i)] = std::move(carried[i]);
    std::vector<RtValue> next;
    run_block(body, &next);
    carried = std::move(next);
    const int64_t stepped = wrap_int(it, static_cast<int64_t>(static_cast<uint64_t>(iv) + step));
    if (!less(iv, stepped))
      break; // the induction variable would wrap around: the loop is over
    iv = stepped;
  }
  for (size_t i = 0; i < carried.size(); ++i)
    env_[op.result(i)] = std::move(carried[i]);
}

void Executor::exec_if(const ir::Operation &op) {
  const bool cond = scalar_int(op.operand(0)) != 0;
  std::vector<RtValue> results;
  if (cond)
    run_block(*op.region(0), &results);
  else if (op.num_regions() == 2)
    run_block(*op.region(1), &results);
  for (size_t i = 0; i < results.size(); ++i)
    env_[op.result(i)] = std::move(results[i]);
}

void Executor::exec_debug(const ir::Operation &op) {
  std::string where = "program (" + std::to_string(pid_[0]) + ", " + std::to_string(pid_[1]) +
                      ", " + std::to_string(pid_[2]) + ")";
  if (op.opcode() == Opcode::Assert) {
    const RtValue &c = get(op.operand(0));
    for (size_t i = 0; i < c.lanes.size(); ++i)
      if (!c.lanes[i].i)
        fail(op, "assertion failed: " + *op.attr_as<std::string>("message") + " (lane " +
                     std::to_string(i) + ")");
    return;
  }
  std::ostringstream s;
  s.precision(9);
  s << where << ":";
  if (const std::string *p = op.attr_as<std::string>("prefix"); p && !p->empty())
    s << " " << *p;
  for (ir::Value *v : op.operands()) {
    const RtValue &rv = get(v);
    const bool fl = ir::is_float(rv.type.elem());
    s << (rv.type.is_tile() ? " [" : " ");
    for (size_t i = 0; i < rv.lanes.size(); ++i) {
      if (i)
        s << ", ";
      if (fl)
        s << rv.lanes[i].f;
      else
        s << rv.lanes[i].i;
    }
    s << (rv.type.is_tile() ? "]" : "");
  }
  s << "\n";
  (opts_.print_stream ? *opts_.print_stream : std::cout) << s.str();
}

std::vector<int64_t> contiguous_strides(const std::vector<int64_t> &shape) {
  std::vector<int64_t> s(shape.size(), 1);
  for (int i = static_cast<int>(shape.size()) - 2; i >= 0; --i)
    s[i] = s[i + 1] * shape[i + 1];
  return s;
}

RunResult run_programs(const ir::Kernel &kernel, const std::vector<ArgValue> &args,
                       const RunOptions &opts, int64_t first, int64_t last) {
  Executor ex(kernel, args, opts);
  std::array<int64_t, 3> pid{};
  bool running = false;
  try {
    ex.bind_arguments();
    for (int64_t g : opts.grid)
      if (g < 0)
        return {false, kernel.loc().str() + ": error: grid dimensions must be non-negative"};
    running = true;
    const int64_t gx = opts.grid[0], gy = opts.grid[1];
    for (int64_t id = first; id < last; ++id) {
      pid = {id % gx, (id / gx) % gy, id / (gx * gy)};
      ex.run_program(pid);
    }
  } catch (const RunError &e) {
    std::string msg = e.loc.str() + ": error: " + e.message;
    if (running)
      msg += " in program (" + std::to_string(pid[0]) + ", " + std::to_string(pid[1]) + ", " +
             std::to_string(pid[2]) + ")";
    return {false, msg};
  }
  return {};
}

RunResult run(const ir::Kernel &kernel, const std::vector<ArgValue> &args, const RunOptions &opts) {
  int64_t n = 1;
  for (int64_t g : opts.grid)
    n *= std::max<int64_t>(g, 0);
  return run_programs(kernel, args, opts, 0, n);
}

} // namespace tl::interp
