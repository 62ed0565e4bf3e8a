// The command processor (see core.h).
// SPDX-License-Identifier: Apache-2.0
#include "core.h"

#include "matrix_rtl_unit.h"

#include <algorithm>
#include <cstring>

namespace tl::npu::model {

using isa::Opcode;

Core::Core(sc_core::sc_module_name name, ChipContext &chip, int id, Barrier &barrier)
    : sc_module(name), state(chip, id), chip_(chip), barrier_(barrier),
      issue_ps_(chip.cycles_ps(chip.cfg.core.issue_cycles)),
      instructions_(chip.stats.add(state.prefix() + ".cp.instructions", "instructions",
                                   "instructions the command processor executed")),
      stall_(chip.stats.add(state.prefix() + ".cp.stall_cycles", "cycles",
                            "cycles the command processor waited on queues, semaphores, fences")) {
  int track = 0;
  if (chip.cfg.core.matrix.kind == MatrixKind::Model)
    mx = std::make_unique<MatrixUnit>("mx", state, ++track);
  else
    mx = std::make_unique<RtlMatrixUnit>("mx", state, ++track);
  vec = std::make_unique<VectorUnit>("vec", state, ++track);
  for (int i = 0; i < chip.cfg.core.dma.engines; ++i)
    dma.push_back(
        std::make_unique<DmaEngine>(("dma" + std::to_string(i)).c_str(), state, i, ++track));
  chip.trace.name_track(id, 0, "cp");
  SC_HAS_PROCESS(Core);
  SC_THREAD(run);
}

std::string Core::describe() const {
  if (halted)
    return "";
  std::string s = state.prefix() + " cp: at pc " + std::to_string(pc_);
  if (!waiting_.empty())
    s += ", waiting for " + waiting_;
  for (const Unit *u : std::initializer_list<const Unit *>{mx.get(), vec.get()})
    if (!u->describe().empty())
      s += "; " + u->describe();
  for (const auto &d : dma)
    if (!d->describe().empty())
      s += "; " + d->describe();
  return s;
}

void Core::sync() {
  if (local_ps_ > 0) {
    sc_core::wait(ChipContext::ps(local_ps_));
    local_ps_ = 0;
  }
}

void Core::run() {
  try {
    for (;;) {
      if (pc_ >= program.size()) {
        if (program.empty())
          break; // no program: halt at once
        throw ProgramError("pc " + std::to_string(pc_) + " is past the end of the program");
      }
      if (instructions_.value >= static_cast<double>(chip_.opts.max_instructions)) {
        chip_.fail(SimStatus::InstructionLimit, state.prefix() + " cp: more than " +
                                                    std::to_string(chip_.opts.max_instructions) +
                                                    " instructions (pc " + std::to_string(pc_) +
                                                    ")");
        return;
      }
      instructions_ += 1;
      local_ps_ += issue_ps_;
      if (!step(program[pc_]))
        break;
      if (local_ps_ > 1000 * issue_ps_) // let other processes and the watchdog run
        sync();
    }
    sync();
    fence();
  } catch (const ProgramError &e) {
    chip_.fail(SimStatus::ProgramError,
               state.prefix() + " cp at pc " + std::to_string(pc_) + ": " + e.what());
    return;
  }
  halted = true;
  halt_ps = ChipContext::now_ps();
  on_halt();
}

bool Core::step(const isa::Instr &in) {
  const isa::OpInfo &info = isa::op_info(in.op);
  switch (info.unit) {
  case isa::Unit::Scalar:
    if (in.op == Opcode::Halt)
      return false;
    exec_scalar(in);
    return true;
  case isa::Unit::Sync:
    exec_sync(in);
    break;
  default:
    if (in.op == Opcode::DmaCfg || in.op == Opcode::DmaCfgi || in.op == Opcode::MxCfg ||
        in.op == Opcode::MxCfgi || in.op == Opcode::VCfg || in.op == Opcode::VCfgi)
      exec_config(in);
    else
      dispatch(in);
  }
  ++pc_;
  return true;
}

void Core::exec_scalar(const isa::Instr &in) {
  const uint64_t a = regs[in.slot[1]], b = regs[in.slot[2]];
  const int64_t sa = static_cast<int64_t>(a), sb = static_cast<int64_t>(b);
  const uint64_t imm = static_cast<uint64_t>(static_cast<int64_t>(in.imm));
  const uint64_t rd_val = regs[in.slot[0]];
  uint64_t next = pc_ + 1;
  switch (in.op) {
  case Opcode::Nop:
    break;
  case Opcode::Li:
    set_reg(in.slot[0], imm);
    break;
  case Opcode::Lih:
    set_reg(in.slot[0], (rd_val & 0xffffffffu) | (imm << 32));
    break;
  case Opcode::Mov:
    set_reg(in.slot[0], a);
    break;
  case Opcode::Add:
    set_reg(in.slot[0], a + b);
    break;
  case Opcode::Sub:
    set_reg(in.slot[0], a - b);
    break;
  case Opcode::Mul:
    set_reg(in.slot[0], a * b);
    break;
  case Opcode::And:
    set_reg(in.slot[0], a & b);
    break;
  case Opcode::Or:
    set_reg(in.slot[0], a | b);
    break;
  case Opcode::Xor:
    set_reg(in.slot[0], a ^ b);
    break;
  case Opcode::Shl:
    set_reg(in.slot[0], a << (b & 63));
    break;
  case Opcode::Shr:
    set_reg(in.slot[0], a >> (b & 63));
    break;
  case Opcode::Sra:
    set_reg(in.slot[0], static_cast<uint64_t>(sa >> (b & 63)));
    break;
  case Opcode::Div: // RISC-V rules: x / 0 = -1, x % 0 = x, INT64_MIN / -1 wraps
    set_reg(in.slot[0], b == 0                          ? ~uint64_t{0}
                        : (sa == INT64_MIN && sb == -1) ? a
                                                        : static_cast<uint64_t>(sa / sb));
    break;
  case Opcode::Rem:
    set_reg(in.slot[0], b == 0                          ? a
                        : (sa == INT64_MIN && sb == -1) ? 0
                                                        : static_cast<uint64_t>(sa % sb));
    break;
  case Opcode::Divu:
    set_reg(in.slot[0], b == 0 ? ~uint64_t{0} : a / b);
    break;
  case Opcode::Remu:
    set_reg(in.slot[0], b == 0 ? a : a % b);
    break;
  case Opcode::Bltu:
    if (regs[in.slot[0]] < regs[in.slot[1]])
      next = pc_ + imm;
    break;
  case Opcode::Bgeu:
    if (regs[in.slot[0]] >= regs[in.slot[1]])
      next = pc_ + imm;
    break;
  case Opcode::Trap:
    throw ProgramError("trap " + std::to_string(in.imm));
  case Opcode::Ld:
  case Opcode::Ldw:
  case Opcode::Ldb:
  case Opcode::St:
  case Opcode::Stw:
  case Opcode::Stb:
    exec_memory(in);
    break;
  case Opcode::Min:
    set_reg(in.slot[0], static_cast<uint64_t>(std::min(sa, sb)));
    break;
  case Opcode::Max:
    set_reg(in.slot[0], static_cast<uint64_t>(std::max(sa, sb)));
    break;
  case Opcode::Addi:
    set_reg(in.slot[0], a + imm);
    break;
  case Opcode::Muli:
    set_reg(in.slot[0], a * imm);
    break;
  case Opcode::Andi:
    set_reg(in.slot[0], a & imm);
    break;
  case Opcode::Shli:
    set_reg(in.slot[0], a << (imm & 63));
    break;
  case Opcode::Shri:
    set_reg(in.slot[0], a >> (imm & 63));
    break;
  case Opcode::CoreId:
    set_reg(in.slot[0], static_cast<uint64_t>(state.id));
    break;
  case Opcode::NCores:
    set_reg(in.slot[0], static_cast<uint64_t>(chip_.cfg.cores));
    break;
  case Opcode::Beq:
    if (regs[in.slot[0]] == regs[in.slot[1]])
      next = pc_ + imm;
    break;
  case Opcode::Bne:
    if (regs[in.slot[0]] != regs[in.slot[1]])
      next = pc_ + imm;
    break;
  case Opcode::Blt:
    if (static_cast<int64_t>(regs[in.slot[0]]) < static_cast<int64_t>(regs[in.slot[1]]))
      next = pc_ + imm;
    break;
  case Opcode::Bge:
    if (static_cast<int64_t>(regs[in.slot[0]]) >= static_cast<int64_t>(regs[in.slot[1]]))
      next = pc_ + imm;
    break;
  case Opcode::Jmp:
    next = pc_ + imm;
    break;
  case Opcode::Dbnz:
    set_reg(in.slot[0], rd_val - 1);
    if (regs[in.slot[0]] != 0)
      next = pc_ + imm;
    break;
  default:
    sc_assert(false && "not a scalar instruction");
  }
  pc_ = next;
}

void Core::exec_memory(const isa::Instr &in) {
  sync(); // the units have run up to the command processor's time: their writes are visible
  const uint64_t addr = regs[in.slot[1]] + static_cast<uint64_t>(static_cast<int64_t>(in.imm));
  const bool load = in.op == Opcode::Ld || in.op == Opcode::Ldw || in.op == Opcode::Ldb;
  const uint64_t bytes = (in.op == Opcode::Ld || in.op == Opcode::St)     ? 8
                         : (in.op == Opcode::Ldw || in.op == Opcode::Stw) ? 4
                                                                          : 1;
  uint8_t *p = state.mem.span(addr, bytes, isa::op_info(in.op).mnemonic);
  if (!load) {
    const uint64_t v = regs[in.slot[0]];
    std::memcpy(p, &v, bytes); // little-endian host
    state.mem.set_stale(addr, bytes, false);
    return;
  }
  if (state.mem.any_stale(addr, bytes)) // a register value steers control flow and addresses
    throw ProgramError(std::string(isa::op_info(in.op).mnemonic) +
                       ": the value loaded depends on matrix arithmetic that "
                       "arithmetic-off mode skipped (run with compute_data on)");
  uint64_t v = 0;
  std::memcpy(&v, p, bytes);
  if (bytes < 8) // sign-extend
    v = static_cast<uint64_t>(static_cast<int64_t>(v << (64 - 8 * bytes)) >> (64 - 8 * bytes));
  set_reg(in.slot[0], v);
}

void Core::exec_config(const isa::Instr &in) {
  const bool imm = in.op == Opcode::DmaCfgi || in.op == Opcode::MxCfgi || in.op == Opcode::VCfgi;
  const uint64_t v = imm ? static_cast<uint64_t>(static_cast<int64_t>(in.imm)) : regs[in.slot[1]];
  const int f = in.slot[0];
  switch (in.op) {
  case Opcode::DmaCfg:
  case Opcode::DmaCfgi: {
    uint64_t *fields[] = {&dma_.esize, &dma_.n[0],  &dma_.n[1],  &dma_.n[2], &dma_.hs[1],
                          &dma_.hs[2], &dma_.ls[1], &dma_.ls[2], &dma_.v[0], &dma_.v[1],
                          &dma_.v[2],  &dma_.pad,   &dma_.isz,   &dma_.adt,  &dma_.oob,
                          &dma_.l[0],  &dma_.l[1],  &dma_.l[2]};
    *fields[f] = v;
    break;
  }
  case Opcode::MxCfg:
  case Opcode::MxCfgi: {
    uint64_t *fields[] = {&mx_.mode, &mx_.m, &mx_.k, &mx_.n, &mx_.lda, &mx_.ldw, &mx_.ldc};
    *fields[f] = v;
    break;
  }
  default: {
    uint64_t *fields[] = {&vec_.n, &vec_.rows, &vec_.sd, &vec_.sa, &vec_.sb, &vec_.src, &vec_.dst,
                          &vec_.t, &vec_.u,    &vec_.rm, &vec_.sc, &vec_.ea, &vec_.ed};
    *fields[f] = v;
  }
  }
}

Unit &Core::queue(int q) {
  if (q == static_cast<int>(isa::Queue::Mx))
    return *mx;
  if (q == static_cast<int>(isa::Queue::Vec))
    return *vec;
  const int i = q - static_cast<int>(isa::Queue::Dma0);
  if (i < 0 || i >= static_cast<int>(dma.size()))
    throw ProgramError(std::string(isa::queue_name(q)) + " does not exist: the core has " +
                       std::to_string(dma.size()) + " DMA engine(s)");
  return *dma[i];
}

void Core::dispatch(const isa::Instr &in) {
  Command c;
  c.op = in.op;
  c.pc = static_cast<uint32_t>(pc_);
  const isa::Unit u = isa::op_info(in.op).unit;
  Unit *target;
  if (u == isa::Unit::Dma) {
    target = &queue(in.slot[0]);
    c.a = regs[in.slot[1]];
    c.b = regs[in.slot[2]];
    c.c = regs[in.slot[3]]; // the index tile of dma.gather / dma.scatter / dma.atadd
    c.dma = dma_;
  } else {
    target = u == isa::Unit::Matrix ? static_cast<Unit *>(mx.get()) : vec.get();
    c.a = regs[in.slot[0]];
    c.b = regs[in.slot[1]];
    c.c = regs[in.slot[2]];
    c.d = regs[in.slot[3]]; // v.fma / v.sel
    c.mx = mx_;
    c.vec = vec_;
  }
  sync();
  const uint64_t t0 = ChipContext::now_ps();
  waiting_ = "a free slot in " + target->label() + "'s queue";
  target->push(c);
  waiting_.clear();
  stall_ += static_cast<double>(ChipContext::now_ps() - t0) / chip_.ps_per_cycle;
  chip_.progress();
}

void Core::exec_sync(const isa::Instr &in) {
  sync();
  const uint64_t t0 = ChipContext::now_ps();
  if (in.op == Opcode::Fence) {
    fence();
  } else if (in.op == Opcode::Barrier) {
    fence();
    barrier();
  } else if (in.slot[0] != static_cast<int>(isa::Queue::Cp)) {
    Command c;
    c.op = in.op;
    c.pc = static_cast<uint32_t>(pc_);
    c.sem = in.slot[1];
    c.count = in.imm;
    queue(in.slot[0]).push(c);
  } else if (in.op == Opcode::SemSig) {
    state.sem[in.slot[1]] += in.imm;
    state.sem_changed.notify(sc_core::SC_ZERO_TIME);
  } else {
    waiting_ = "semaphore s" + std::to_string(in.slot[1]) + " >= " + std::to_string(in.imm);
    while (state.sem[in.slot[1]] < in.imm)
      sc_core::wait(state.sem_changed);
    state.sem[in.slot[1]] -= in.imm;
    waiting_.clear();
  }
  stall_ += static_cast<double>(ChipContext::now_ps() - t0) / chip_.ps_per_cycle;
}

void Core::fence() {
  auto idle = [&] {
    if (!mx->idle() || !vec->idle())
      return false;
    return std::all_of(dma.begin(), dma.end(), [](const auto &d) { return d->idle(); });
  };
  waiting_ = "its units to drain (fence)";
  while (!idle())
    sc_core::wait(state.unit_done);
  waiting_.clear();
}

void Core::barrier() {
  waiting_ = "the other cores at a barrier";
  const uint64_t gen = barrier_.generation;
  if (++barrier_.arrived == barrier_.cores) {
    barrier_.arrived = 0;
    ++barrier_.generation;
    barrier_.released.notify(sc_core::SC_ZERO_TIME);
  }
  while (barrier_.generation == gen)
    sc_core::wait(barrier_.released);
  waiting_.clear();
}

} // namespace tl::npu::model
