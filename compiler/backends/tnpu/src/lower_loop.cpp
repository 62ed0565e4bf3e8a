// The tnpu lowering of `for`: carried values, and the software pipeline (prefetch into rotating
// buffers, eager semaphores).
// SPDX-License-Identifier: Apache-2.0
#include "lowering.h"

namespace tl::tnpu::detail {

/// Lowers a `for` (iv and carried scalars in registers, carried tiles in their planned slots).
/// Without pipelined loads: one body, every queue synchronized at the back edge. With them
/// (software pipelining, depth D = CompileOptions::pipeline_depth): the loads of the first D - 1
/// iterations go to buffers 0..D-2 before the loop, and the body is emitted D times (buffer b in
/// copy b). Each copy
///  1. waits for the loads of its iteration: every queue waits for the signals each DMA engine
///     sent right behind that prefetch (eager semaphores: later commands on the engine, such
///     as the previous iteration's stores, are not waited for);
///  2. orders every other queue after the previous iteration's compute (the buffers the
///     prefetch overwrites) and the DMA engines after each other (stores in order);
///  3. prefetches the loads of iteration i + D - 1 into the buffer of iteration i - 1 and
///     signals behind them;
///  4. computes; its tiles that are stored have D buffers too, so the store of iteration i
///     overlaps the compute of the next ones.
/// The command processor never waits; the body copies' registers are released after each.
void Lowering::lower_for(const ir::Operation &op) {
  const ir::Block &body = *op.region(0);
  const uint8_t iv = regs_[body.argument(0)] = new_reg(op);
  emit(isa::Opcode::Mov, iv, scalar(op, op.operand(0)));
  const uint8_t ub = scalar(op, op.operand(1)), step = scalar(op, op.operand(2));
  for (unsigned i = 3; i < op.num_operands(); ++i) {
    const ir::Value *slot = body.argument(i - 2);
    if (slot->type().is_tile())
      alloc_tile(op, slot);
    else
      regs_[slot] = new_reg(op);
    move_to(op, op.operand(i), slot);
  }
  bool pipelined = false;
  for (const auto &inner : body.ops())
    pipelined =
        pipelined || (inner->opcode() == Opcode::Load && plan_.pipelined.count(inner.get()));
  const int depth = pipelined ? plan_.depth : 1;
  Signals signalled(static_cast<size_t>(depth), std::vector<uint64_t>{});
  for (int b = 0; b + 1 < depth; ++b) { // the first depth - 1 iterations' loads
    uint8_t ivb = iv;
    if (b > 0) {
      ivb = new_reg(op);
      emit(isa::Opcode::Mov, ivb, iv);
      for (int i = 0; i < b; ++i)
        emit(isa::Opcode::Add, ivb, ivb, step);
    }
    guarded_prefetch(op, ivb, b, signalled[size_t(b)]);
  }
  const auto head = sync_.known();
  const size_t loop = out_.program.size();
  std::vector<size_t> exits = {branch(isa::Opcode::Bge, iv, ub)};
  for (int buffer = 0; buffer < depth; ++buffer) {
    if (buffer > 0)
      exits.push_back(branch(isa::Opcode::Bge, iv, ub));
    lower_body(op, pipelined ? buffer : -1, signalled);
    emit(isa::Opcode::Add, iv, iv, step);
  }
  emit(isa::Opcode::Jmp);
  out_.program.back().imm = int32_t(int64_t(loop) - int64_t(out_.program.size() - 1));
  for (size_t e : exits)
    land(e);
  sync_.restore(head); // the loop may run zero times
  for (unsigned i = 0; i < op.num_results(); ++i) {
    const ir::Value *slot = body.argument(i + 1);
    if (slot->type().is_tile())
      tiles_[op.result(i)] = tiles_[slot];
    else
      regs_[op.result(i)] = regs_[slot];
  }
}

/// If iv < ub: the pipelined loads for iv into `buffer`, then each DMA engine's eager signals;
/// `signalled` gets the engines' issue counts at the signals.
void Lowering::guarded_prefetch(const ir::Operation &loop, uint8_t iv, int buffer,
                                std::vector<uint64_t> &signalled) {
  const auto before = sync_.known();
  const size_t last = branch(isa::Opcode::Bge, iv, scalar(loop, loop.operand(1)));
  prefetch(loop, iv, buffer);
  for (int e = 0; e < sync_.num_dma(); ++e)
    sync_.signal_ahead(e);
  signalled = sync_.issued();
  land(last);
  sync_.restore(before);
}

/// One copy of a loop body (see lower_for); buffer < 0: not pipelined.
void Lowering::lower_body(const ir::Operation &loop, int buffer, Signals &signalled) {
  const ir::Block &body = *loop.region(0);
  const auto regs = regs_;
  const auto tiles = tiles_;
  const uint8_t next_reg = next_reg_;
  const int outer_buffer = buffer_;
  const uint8_t iv = regs_[body.argument(0)], step = scalar(loop, loop.operand(2));
  if (buffer >= 0) {
    sync_.wait_ahead(signalled[size_t(buffer)]);
    for (int c : {sync_.mx(), sync_.vec()})
      for (int q = 0; q < sync_.vec() + 1; ++q)
        if (q != c)
          sync_.order(c, q);
    for (int p = 0; p < sync_.num_dma(); ++p)
      for (int q = 0; q < sync_.num_dma(); ++q)
        if (q != p)
          sync_.order(p, q);
    const uint8_t ivn = new_reg(loop);
    emit(isa::Opcode::Add, ivn, iv, step);
    for (int i = 2; i < plan_.depth; ++i)
      emit(isa::Opcode::Add, ivn, ivn, step);
    const int ahead = (buffer + plan_.depth - 1) % plan_.depth;
    guarded_prefetch(loop, ivn, ahead, signalled[size_t(ahead)]);
  }
  buffer_ = std::max(buffer, 0);
  for (const auto &inner : body.ops()) {
    if (inner->opcode() == Opcode::Yield)
      continue;
    if (inner->opcode() == Opcode::Load && buffer >= 0 && plan_.pipelined.count(inner.get()))
      alloc_tile(*inner); // prefetched
    else
      lower(*inner);
  }
  const ir::Operation *yield = body.terminator();
  for (unsigned i = 0; yield && i < yield->num_operands(); ++i)
    move_to(*yield, yield->operand(i), body.argument(i + 1)); // (no swaps of carried values)
  if (buffer < 0)
    sync_.sync_all();
  regs_ = regs, tiles_ = tiles, next_reg_ = next_reg, buffer_ = outer_buffer;
}

/// The pipelined loads of the loop's body for the iteration whose induction variable is in `iv`,
/// into buffer `buffer` (the scalar ops they depend on are recomputed from iv).
void Lowering::prefetch(const ir::Operation &loop, uint8_t iv, int buffer) {
  const ir::Block &body = *loop.region(0);
  const auto regs = regs_;
  const uint8_t next_reg = next_reg_;
  const int outer_buffer = buffer_;
  regs_[body.argument(0)] = iv;
  buffer_ = buffer;
  for (const auto &inner : body.ops())
    if (plan_.prefetch_scalars.count(inner.get()))
      lower(*inner);
  for (const auto &inner : body.ops())
    if (inner->opcode() == Opcode::Load && plan_.pipelined.count(inner.get()))
      lower_memory(*inner, true);
  regs_ = regs, next_reg_ = next_reg, buffer_ = outer_buffer;
}

} // namespace tl::tnpu::detail
