// The tnpu lowering of loops: `for` (carried values), the grid loop of a persistent kernel, and
// the software pipeline both share (prefetch into rotating buffers, eager semaphores).
// SPDX-License-Identifier: Apache-2.0
#include "lowering.h"

namespace tl::tnpu::detail {

/// Lowers a `for`: iv and carried scalars in registers, carried tiles in their planned slots; the
/// loop itself is run_loop's.
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
    pipelined = pipelined || prefetched(*inner);
  Loop loop{&body, &op, iv, ub, 0, ub, {}, {}};
  if (pipelined) { // the iv of the next iteration to prefetch
    loop.ahead = new_reg(op);
    emit(isa::Opcode::Mov, loop.ahead, iv);
  }
  loop.bind = [&](bool ahead) { regs_[body.argument(0)] = ahead ? loop.ahead : iv; };
  loop.step = [&](bool ahead) {
    const uint8_t r = ahead ? loop.ahead : iv;
    emit(isa::Opcode::Add, r, r, step);
  };
  run_loop(loop, pipelined);
  for (unsigned i = 0; i < op.num_results(); ++i) {
    const ir::Value *slot = body.argument(i + 1);
    if (slot->type().is_tile())
      tiles_[op.result(i)] = tiles_[slot];
    else
      regs_[op.result(i)] = regs_[slot];
  }
}

/// A persistent kernel: the body runs in a loop over this core's grid programs (linear ids
/// coreid, coreid + ncores, ...), their program ids kept split (axis 0 fastest) and advanced by
/// ncores with carries, like the launch wrapper does; a program exists while its axis-2 id is
/// below the grid's. The next programs' loads are prefetched (run_loop).
void Lowering::lower_grid_loop() {
  const ir::Block &body = *kernel_.body();
  const ir::Operation &at = *body.ops().front();
  std::array<uint8_t, 3> grid{}, cur{}, ahead{};
  for (int axis = 0; axis < 3; ++axis)
    grid[size_t(axis)] = bind(at, BindKind::Grid, 0, uint16_t(axis));
  for (int axis = 0; axis < 3; ++axis) {
    cur[size_t(axis)] = new_reg(at), ahead[size_t(axis)] = new_reg(at);
    pinned_.push_back(cur[size_t(axis)]), pinned_.push_back(ahead[size_t(axis)]);
  }
  // Normalizes program ids p after p[0] grew: carry into axes 1 and 2.
  auto carry = [&](const std::array<uint8_t, 3> &p) {
    for (int axis = 0; axis < 2; ++axis) {
      const size_t top = out_.program.size();
      const size_t done = branch(isa::Opcode::Blt, p[size_t(axis)], grid[size_t(axis)]);
      emit(isa::Opcode::Sub, p[size_t(axis)], p[size_t(axis)], grid[size_t(axis)]);
      emit(isa::Opcode::Addi, p[size_t(axis + 1)], p[size_t(axis + 1)], 0, 1);
      emit(isa::Opcode::Jmp);
      out_.program.back().imm = int32_t(int64_t(top) - int64_t(out_.program.size() - 1));
      land(done);
    }
  };
  emit(isa::Opcode::Mul, kT0, grid[0], grid[1]);
  emit(isa::Opcode::Mul, kT0, kT0, grid[2]);
  const size_t empty = branch(isa::Opcode::Beq, kT0, 0); // (an empty grid cannot carry)
  emit(isa::Opcode::CoreId, cur[0]);
  li(cur[1], 0), li(cur[2], 0);
  carry(cur);
  for (size_t axis = 0; axis < 3; ++axis)
    emit(isa::Opcode::Mov, ahead[axis], cur[axis]);
  Loop loop{&body, &at, cur[2], grid[2], ahead[2], grid[2], {}, {}};
  loop.bind = [&](bool a) { pid_regs_ = a ? ahead : cur; };
  loop.step = [&](bool a) {
    const auto &p = a ? ahead : cur;
    emit(isa::Opcode::NCores, kT0);
    emit(isa::Opcode::Add, p[0], p[0], kT0);
    carry(p);
  };
  run_loop(loop, true);
  land(empty);
}

namespace {

/// Whether the matrix and vector units of a pipelined loop's body may order each other across
/// the back edge by tokens: at the end of copy b each unit signals its token b, and in copy b of
/// the next round the other waits for it (the other's work through copy b of the previous
/// round), where otherwise each waits in copy 0 for all the other's work (QueueSync's log does
/// not hold the previous round's later copies). Sound when no tile connects the units across
/// copies: every tile a dot reads or writes has a buffer per copy (tnpu.stride) or is defined
/// before the loop (read-only in it), no dot rounds its inputs (vector scratch the matrix unit
/// reads), and no dot sits in a nested region. Within a round QueueSync's ranges order the
/// units as before. Var's rows on npusim: the matrix unit's mean of the next block no longer
/// waits for the vector unit's last block of the round (4096 x 1024 f32: 0.076 -> 0.064 ms).
bool units_take_tokens(const ir::Block &body) {
  auto storage = [](const ir::Value *v) { // through views of the same memory
    while (const ir::Operation *d = v->def())
      if (d->opcode() == Opcode::Reshape || d->opcode() == Opcode::ExpandDims ||
          attr::has(d, attr::kFused))
        v = d->operand(0);
      else
        break;
    return v;
  };
  auto per_copy = [&](const ir::Value *v) {
    v = storage(v);
    if (v->owner() != &body)
      return true;
    return v->def() && attr::has(v->def(), attr::kStride); // (a block argument: carried)
  };
  std::function<bool(const ir::Block &)> has_dot = [&](const ir::Block &b) {
    for (const auto &op : b.ops()) {
      if (op->opcode() == Opcode::Dot)
        return true;
      for (unsigned r = 0; r < op->num_regions(); ++r)
        if (has_dot(*op->region(r)))
          return true;
    }
    return false;
  };
  bool dots = false;
  for (const auto &op : body.ops()) {
    bool nested = false;
    for (unsigned r = 0; r < op->num_regions(); ++r)
      nested = nested || has_dot(*op->region(r));
    if (nested)
      return false;
    if (op->opcode() != Opcode::Dot)
      continue;
    dots = true;
    const std::string *precision = op->attr_as<std::string>("input_precision");
    if ((precision && *precision != "ieee") || !attr::has(op.get(), attr::kStride))
      return false;
    for (unsigned i = 0; i < op->num_operands(); ++i)
      if (!per_copy(op->operand(i)))
        return false;
  }
  return dots;
}

} // namespace

/// Runs a loop. Not pipelined: one body, every queue synchronized at the back edge. Pipelined
/// (depth D = CompileOptions::pipeline_depth): the loads of the first D - 1 iterations go to
/// buffers 0..D-2 before the loop, and the body is emitted D times (buffer b in copy b). Each
/// copy
///  1. waits for the loads of its iteration: every queue waits for the signals each DMA engine
///     sent right behind that prefetch (eager semaphores: later commands on the engine, such
///     as the previous iteration's stores, are not waited for);
///  2. orders the DMA engines after the previous iteration's compute (the buffers the
///     prefetch overwrites) — in copy 0 (after the back edge) every queue — and the DMA
///     engines after each other where tnpu.dma_ordered says so;
///  3. prefetches the loads of iteration i + D - 1 into the buffer of iteration i - 1 and
///     signals behind them;
///  4. computes; its tiles that are stored have D buffers too, so the store of iteration i
///     overlaps the compute of the next ones.
/// The command processor does not wait (except to read back a scalar the vector unit computed);
/// the body copies' registers are released after each.
void Lowering::run_loop(Loop &loop, bool pipelined) {
  for (const auto &inner : loop.body->ops()) // (every buffered tile of a loop has as many)
    if (pipelined && inner->attr(attr::kBuffers))
      loop.depth = int(attr::get_int(*inner, attr::kBuffers));
  const int depth = loop.depth;
  Signals signalled(static_cast<size_t>(depth), std::vector<uint64_t>{});
  // A prefetched splat of a scalar the vector unit computed (before the loop) fills from a
  // register: read back once here, not in every prefetch.
  for (const auto &inner : loop.body->ops())
    if (pipelined && inner->opcode() == Opcode::Splat && prefetched(*inner) &&
        vscalars_.count(inner->operand(0)))
      scalar(*inner, inner->operand(0));
  // Everything before the loop ordered before it, once: a wait that the first copy's log found
  // for the work before the loop (the matrix unit reading a triangle the vector unit built)
  // would otherwise be emitted in copy 0 and paid in every round, draining the other queue
  // (cumsum's matrix form: the next block's dot waited for the vector unit's last block).
  if (pipelined)
    sync_.sync_all();
  for (int b = 0; b + 1 < depth; ++b)
    guarded_prefetch(loop, b, signalled[size_t(b)]);
  loop.tokens = pipelined && depth >= 2 && units_take_tokens(*loop.body);
  if (loop.tokens) // the previous round of the first: what the units did before the loop
    for (int b = 0; b < depth; ++b) {
      sync_.token_signal(sync_.vec(), b);
      sync_.token_signal(sync_.mx(), b);
    }
  const auto head = sync_.known();
  forget_config(); // the back edge joins here
  const size_t top = out_.program.size();
  std::vector<size_t> exits = {branch(isa::Opcode::Bge, loop.counter, loop.bound)};
  for (int buffer = 0; buffer < depth; ++buffer) {
    if (buffer > 0)
      exits.push_back(branch(isa::Opcode::Bge, loop.counter, loop.bound));
    lower_body(loop, pipelined ? buffer : -1, signalled);
    loop.step(false);
  }
  emit(isa::Opcode::Jmp);
  out_.program.back().imm = int32_t(int64_t(top) - int64_t(out_.program.size() - 1));
  for (size_t e : exits)
    land(e);
  if (loop.tokens) // every token holds one signal at every exit: taken, the semaphores are 0
    for (int b = 0; b < depth; ++b) {
      sync_.token_wait(sync_.mx(), sync_.vec(), b);
      sync_.token_wait(sync_.vec(), sync_.mx(), b);
    }
  sync_.restore(head); // the loop may run zero times
}

/// If the next iteration to prefetch exists: its pipelined loads into `buffer`, then each DMA
/// engine's eager signals (`signalled` gets the engines' issue counts at them); then, in any
/// case, on to the following iteration.
void Lowering::guarded_prefetch(Loop &loop, int buffer, std::vector<uint64_t> &signalled) {
  const auto before = sync_.known();
  const size_t last = branch(isa::Opcode::Bge, loop.ahead, loop.ahead_bound);
  prefetch(loop, buffer);
  for (int e = 0; e < sync_.num_dma(); ++e)
    sync_.signal_ahead(e);
  signalled = sync_.issued();
  land(last);
  sync_.restore(before);
  loop.step(true);
}

/// One copy of a loop body (see run_loop); buffer < 0: not pipelined.
void Lowering::lower_body(Loop &loop, int buffer, Signals &signalled) {
  const ir::Block &body = *loop.body;
  const auto regs = regs_;
  const auto tiles = tiles_;
  const auto free_regs = free_regs_;
  const uint8_t next_reg = next_reg_;
  const int outer_buffer = buffer_;
  loop.bind(false);
  if (buffer >= 0) {
    sync_.wait_ahead(signalled[size_t(buffer)]);
    // The DMA engines wait for the previous iteration's compute (the prefetch below overwrites
    // its buffers). The matrix and vector units wait for each other only in copy 0, after the
    // back edge, where QueueSync's log lacks the previous round's later copies; in a later copy
    // the log holds this round's earlier copies (everything older is behind copy 0's waits), so
    // their ranges order the units (attention: the next key block's scores on the matrix unit
    // overlap this block's softmax on the vector unit, bench/README.md npusim s11). With tokens
    // (units_take_tokens) each waits in every copy for the other's same copy a round before.
    for (int c : {sync_.mx(), sync_.vec()})
      for (int q = 0; q < sync_.vec() + 1; ++q)
        if (q != c && q < sync_.num_dma())
          sync_.order(c, q);
    if (loop.tokens) { // each unit: the other's work of this copy in the previous round
      sync_.token_wait(sync_.mx(), sync_.vec(), buffer);
      sync_.token_wait(sync_.vec(), sync_.mx(), buffer);
    } else if (buffer == 0) { // each unit: all the other's work
      sync_.order(sync_.mx(), sync_.vec());
      sync_.order(sync_.vec(), sync_.mx());
    }
    const bool dma_ordered = attr::has(attr::loop_op(*loop.body), attr::kDmaOrdered);
    for (int p = 0; p < sync_.num_dma() && dma_ordered; ++p)
      for (int q = 0; q < sync_.num_dma(); ++q)
        if (q != p)
          sync_.order(p, q);
    const int ahead = (buffer + loop.depth - 1) % loop.depth;
    guarded_prefetch(loop, ahead, signalled[size_t(ahead)]);
  }
  buffer_ = std::max(buffer, 0);
  for (const auto &inner : body.ops()) {
    if (inner->opcode() == Opcode::Yield)
      continue;
    if (buffer >= 0 && prefetched(*inner))
      alloc_tile(*inner); // prefetched
    else
      lower(*inner);
  }
  const ir::Operation *yield = body.terminator();
  for (unsigned i = 0; yield && yield->opcode() == Opcode::Yield && i < yield->num_operands(); ++i)
    move_to(*yield, yield->operand(i), body.argument(i + 1)); // (no swaps of carried values)
  if (buffer >= 0 && loop.tokens) {
    sync_.token_signal(sync_.vec(), buffer);
    sync_.token_signal(sync_.mx(), buffer);
  }
  if (buffer < 0)
    sync_.sync_all();
  regs_ = regs, tiles_ = tiles, free_regs_ = free_regs, next_reg_ = next_reg;
  buffer_ = outer_buffer;
}

/// The pipelined loads and fills of the loop's body for the iteration `loop.ahead` names, into
/// buffer `buffer` (the scalar ops they depend on are recomputed for that iteration).
void Lowering::prefetch(Loop &loop, int buffer) {
  const ir::Block &body = *loop.body;
  const auto regs = regs_;
  const auto pids = pid_regs_;
  const auto free_regs = free_regs_;
  const uint8_t next_reg = next_reg_;
  const int outer_buffer = buffer_;
  loop.bind(true);
  buffer_ = buffer;
  prefetching_ = true;
  for (const auto &inner : body.ops())
    if (inner->attr(attr::kPrefetch))
      lower(*inner);
  for (const auto &inner : body.ops())
    if (prefetched(*inner)) {
      if (inner->opcode() == Opcode::Load)
        lower_memory(*inner, true);
      else
        lower_fill(*inner);
    }
  regs_ = regs, pid_regs_ = pids, free_regs_ = free_regs, next_reg_ = next_reg;
  buffer_ = outer_buffer;
  prefetching_ = false;
}

} // namespace tl::tnpu::detail
