// The tnpu lowering's state and helpers, shared by lower.cpp (ops), lower_memory.cpp (DMA) and
// lower_loop.cpp (loops and the software pipeline). Scalars live in registers; tiles at the
// addresses plan.h gives them; unit commands are ordered by semaphores (sync.h), never fenced.
// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "plan.h"
#include "sync.h"

#include "tl/backends/tnpu.h"

#include <algorithm>
#include <array>
#include <functional>
#include <map>
#include <string>
#include <tuple>
#include <vector>

namespace tl::tnpu::detail {

using ir::Opcode;
using npu::isa::Instr;
namespace isa = npu::isa;

/// r1..r17 hold values (from r1 up) and register-bound arguments (from r17 down); r18..r23 are
/// scratch.
constexpr uint8_t kLastValueReg = 17, kT0 = 18, kT1 = 19, kT2 = 20, kT3 = 21, kT4 = 22, kT5 = 23;
/// Transfers at least this large are split by rows over every DMA engine.
constexpr uint64_t kSplitBytes = 32 << 10;
/// What a DMA command's setup and HBM latency are worth in bytes (~140 ns at 128 GB/s).
constexpr uint64_t kCommandBytes = 18 << 10;

struct Failure {
  std::string message;
};

class Lowering {
public:
  Lowering(const ir::Kernel &k, const CompileOptions &o)
      : kernel_(k), opts_(o), plan_(plan_tiles(k, o)),
        sync_(std::clamp(o.dma_engines, 1, 3), out_.program) {
    for (unsigned i = 0; i < k.body()->arguments().size(); ++i)
      params_[k.body()->argument(i)] = i;
  }

  Kernel run() {
    if (plan_.persistent)
      lower_grid_loop();
    else
      for (const auto &op : kernel_.body()->ops())
        lower(*op);
    emit(isa::Opcode::Halt);
    out_.persistent = plan_.persistent;
    return std::move(out_);
  }

private:
  [[noreturn]] void fail(const ir::Operation &op, const std::string &what) {
    throw Failure{op.loc().str() + ": error: tnpu: " + what};
  }

  void emit(isa::Opcode op, uint8_t a = 0, uint8_t b = 0, uint8_t c = 0, int64_t imm = 0) {
    Instr in;
    in.op = op;
    in.slot[0] = a, in.slot[1] = b, in.slot[2] = c;
    in.imm = static_cast<int32_t>(imm);
    out_.program.push_back(in);
  }
  /// A forward branch to patch with `land`.
  size_t branch(isa::Opcode op, uint8_t a = 0, uint8_t b = 0) {
    emit(op, a, b);
    return out_.program.size() - 1;
  }
  void land(size_t at) { out_.program[at].imm = int32_t(out_.program.size() - at); }
  void li(uint8_t rd, uint64_t v) {
    const auto lo = static_cast<int32_t>(static_cast<uint32_t>(v));
    emit(isa::Opcode::Li, rd, 0, 0, lo);
    if (static_cast<uint64_t>(static_cast<int64_t>(lo)) != v)
      emit(isa::Opcode::Lih, rd, 0, 0, static_cast<int32_t>(v >> 32));
  }
  void dmai(isa::DmaField f, int64_t v) { emit(isa::Opcode::DmaCfgi, uint8_t(f), 0, 0, v); }
  void dmar(isa::DmaField f, uint8_t r) { emit(isa::Opcode::DmaCfg, uint8_t(f), r); }
  void veci(isa::VecField f, int64_t v) { emit(isa::Opcode::VCfgi, uint8_t(f), 0, 0, v); }
  void mxi(isa::MxField f, int64_t v) { emit(isa::Opcode::MxCfgi, uint8_t(f), 0, 0, v); }

  /// A unit command on queue q (a QueueSync index), ordered after what it conflicts with.
  void command(int q, isa::Opcode op, uint8_t a, uint8_t b, const std::vector<Range> &reads,
               const std::vector<Range> &writes, int group = 0) {
    sync_.issue(q, reads, writes, group);
    if (q < sync_.num_dma())
      emit(op, QueueSync::isa_queue(q, sync_.num_dma()), a, b);
    else
      emit(op, a, b);
  }
  /// The DMA engine with the least work so far (estimated in bytes: a transfer's bytes plus
  /// what its setup and HBM latency are worth), charged with `cost`; `fixed` >= 0 takes that one.
  int next_dma(uint64_t cost, int fixed = -1) {
    int q = std::max(fixed, 0);
    for (int e = 1; fixed < 0 && e < sync_.num_dma(); ++e)
      if (dma_work_[size_t(e)] < dma_work_[size_t(q)])
        q = e;
    dma_work_[size_t(q)] += cost;
    return q;
  }
  Range range(const ir::Operation &op, uint64_t at, const ir::Type &t) {
    return {at, at + uint64_t(t.num_elements()) * elem_bytes(op, t.elem())};
  }
  Range tile_range(const ir::Operation &op, const ir::Value *v) {
    return range(op, tile(op, v), v->type());
  }

  uint8_t new_reg(const ir::Operation &op) {
    if (next_reg_ > next_bound_)
      fail(op, "the kernel needs more than 17 scalar registers");
    return next_reg_++;
  }
  uint8_t bind(const ir::Operation &op, BindKind kind, uint16_t param, uint16_t dim) {
    auto key = std::make_tuple(int(kind), int(param), int(dim));
    if (auto it = bound_.find(key); it != bound_.end())
      return it->second;
    if (next_reg_ > next_bound_)
      fail(op, "the kernel needs more than 17 scalar registers");
    const uint8_t r = next_bound_--;
    out_.bindings.push_back({kind, r, param, dim});
    return bound_[key] = r;
  }
  /// rd = a launch value, patched into li + lih by the device (holds no register).
  void load_bound(uint8_t rd, BindKind kind, uint16_t param, uint16_t dim) {
    out_.bindings.push_back({kind, 0, param, dim, int32_t(out_.program.size())});
    emit(isa::Opcode::Li, rd);
    emit(isa::Opcode::Lih, rd);
  }
  unsigned param(const ir::Operation &op, const ir::Value *v) {
    auto it = params_.find(v);
    if (it == params_.end())
      fail(op, "expected a kernel argument");
    return it->second;
  }
  uint8_t scalar(const ir::Operation &op, const ir::Value *v) {
    if (auto it = regs_.find(v); it != regs_.end())
      return it->second;
    if (auto it = params_.find(v); it != params_.end()) {
      const ir::ScalarKind e = v->type().elem();
      if (e == ir::ScalarKind::F32)
        return regs_[v] = bind(op, BindKind::ScalarF32, it->second, 0);
      if (ir::is_integer(e))
        return regs_[v] = bind(op, BindKind::ScalarInt, it->second, 0);
      fail(op,
           "scalar arguments of type " + std::string(ir::scalar_name(e)) + " are not supported");
    }
    fail(op, "operand is not a scalar the target holds in a register");
  }
  uint64_t tile(const ir::Operation &op, const ir::Value *v) {
    auto it = tiles_.find(v);
    if (it == tiles_.end())
      fail(op, "operand is not a tile in the scratchpad");
    return it->second;
  }
  uint64_t alloc_tile(const ir::Operation &op) { return alloc_tile(op, op.result()); }
  /// The planned address of a tile (plan.h).
  uint64_t alloc_tile(const ir::Operation &op, const ir::Value *v) {
    const ir::Type &t = v->type();
    if (t.rank() > 2)
      fail(op, "tiles of rank " + std::to_string(t.rank()) + " are not supported (rank 1 or 2)");
    elem_bytes(op, t.elem());
    if (auto it = plan_.overflow.find(v); it != plan_.overflow.end())
      fail(op, it->second);
    uint64_t at = plan_.address.at(v);
    if (auto it = plan_.pipelined.find(v->def()); v->def() && it != plan_.pipelined.end())
      at += uint64_t(buffer_) * it->second; // pipelined: this body copy's buffer
    return tiles_[v] = at;
  }
  int elem_bytes(const ir::Operation &op, ir::ScalarKind e) {
    const int bits = ir::bit_width(e);
    if (bits < 8)
      fail(op, "element type " + std::string(ir::scalar_name(e)) + " is not supported");
    return bits / 8;
  }
  void require_f32_tile(const ir::Operation &op) {
    const ir::Type &t = op.result()->type();
    if (!t.is_tile() || t.elem() != ir::ScalarKind::F32)
      fail(op, "'" + std::string(op.name()) + "' on " + t.str() +
                   " is not supported (the vector unit computes f32 tiles)");
  }
  void vec_shape(int64_t n) {
    veci(isa::VecField::N, n);
    veci(isa::VecField::Rows, 1);
  }

  /// The vector / matrix unit's dtype code (isa dtype names), or -1.
  static int dtype_code(ir::ScalarKind e) {
    switch (e) {
    case ir::ScalarKind::BF16:
      return 0;
    case ir::ScalarKind::F16:
      return 1;
    case ir::ScalarKind::F32:
      return 2;
    case ir::ScalarKind::I8:
      return 3;
    case ir::ScalarKind::I32:
      return 4;
    default:
      return -1;
    }
  }
  int unit_dtype(const ir::Operation &op, ir::ScalarKind e) {
    const int c = dtype_code(e);
    if (c < 0)
      fail(op, "tiles of " + std::string(ir::scalar_name(e)) +
                   " are not supported by the vector unit (bf16, f16, f32, i8, i32)");
    return c;
  }
  /// The bit pattern of constant `a` as an element of type e (a DMA pad value).
  uint64_t const_bits(const ir::Operation &op, const ir::Attr *a, ir::ScalarKind e);
  /// dst = src, a tile of type t (v.copy).
  void copy_tile(const ir::Operation &op, uint64_t dst, uint64_t src, const ir::Type &t) {
    vec_shape(t.num_elements());
    veci(isa::VecField::Src, unit_dtype(op, t.elem()));
    veci(isa::VecField::Dst, unit_dtype(op, t.elem()));
    li(kT0, dst), li(kT1, src);
    command(sync_.vec(), isa::Opcode::VCopy, kT0, kT1, {range(op, src, t)}, {range(op, dst, t)});
  }
  /// Moves a value into a carried slot (a register or a tile), unless it is already there.
  void move_to(const ir::Operation &op, const ir::Value *from, const ir::Value *slot) {
    if (!slot->type().is_tile())
      emit(isa::Opcode::Mov, scalar(op, slot), scalar(op, from));
    else if (tile(op, from) != tile(op, slot))
      copy_tile(op, tile(op, slot), tile(op, from), slot->type());
  }

  void lower(const ir::Operation &op);
  /// A loop for run_loop: it runs while `counter` < `bound`; `ahead` / `ahead_bound` say the
  /// same of the next iteration to prefetch; `bind` makes the body's scalars name the current
  /// (false) or the prefetched (true) iteration; `step` moves either on by one iteration.
  struct Loop {
    const ir::Block *body;
    const ir::Operation *at;
    uint8_t counter, bound, ahead, ahead_bound;
    std::function<void(bool)> bind, step;
  };
  using Signals = std::vector<std::vector<uint64_t>>; ///< per buffer: issue counts at its signals
  void lower_for(const ir::Operation &op);
  void lower_grid_loop();
  void run_loop(Loop &loop, bool pipelined);
  void lower_body(Loop &loop, int buffer, Signals &signalled);
  void prefetch(Loop &loop, int buffer);
  void guarded_prefetch(Loop &loop, int buffer, std::vector<uint64_t> &signalled);
  void lower_dot(const ir::Operation &op);
  void lower_reduce(const ir::Operation &op);
  void lower_cast(const ir::Operation &op);
  void lower_fill(const ir::Operation &op);
  void lower_memory(const ir::Operation &op, bool is_load);
  void lower_scalar_binary(const ir::Operation &op);
  void lower_cmp(const ir::Operation &op);

  const ir::Kernel &kernel_;
  const CompileOptions &opts_;
  Kernel out_;
  TilePlan plan_;
  QueueSync sync_;
  std::array<uint64_t, 8> dma_work_{}; ///< see next_dma
  int groups_ = 0;
  int buffer_ = 0; ///< the buffer of pipelined tiles in the body copy being lowered
  std::array<uint8_t, 3> pid_regs_ = {kPidReg, kPidReg + 1, kPidReg + 2}; ///< program ids
  std::map<const ir::Value *, unsigned> params_;
  std::map<const ir::Value *, uint8_t> regs_;
  std::map<const ir::Value *, uint64_t> tiles_;
  std::map<std::tuple<int, int, int>, uint8_t> bound_;
  std::map<const ir::Operation *, int> store_engine_; ///< a single-engine store's engine
  uint8_t next_reg_ = 1, next_bound_ = kLastValueReg;
};

} // namespace tl::tnpu::detail
