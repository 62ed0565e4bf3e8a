// The tnpu lowering's state and helpers, shared by lower.cpp (scalar ops, dot, the op dispatch),
// lower_memory.cpp (load / store / fills: DMA), lower_loop.cpp (loops and the software
// pipeline), lower_vector*.cpp / lower_reduce.cpp / lower_shape.cpp / vector_unit.cpp (tiles and
// float scalars on the vector unit), lower_control.cpp (integer scalars, if, assert) and
// lower_indexed.cpp (gather / scatter / atomic_add). Scalars
// live in registers (or, computed by the vector unit, in scratchpad slots); tiles at the
// addresses the planning passes recorded (attrs.h: the lowering only reads those decisions);
// unit commands are ordered by semaphores (sync.h), never fenced.
// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "tl/backends/tnpu.h"

#include "attrs.h"
#include "lower.h"
#include "sync.h"

#include <algorithm>
#include <array>
#include <functional>
#include <map>
#include <optional>
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
      : kernel_(k), opts_(o), sync_(std::clamp(o.dma_engines, 1, 3), out_.program),
        temp_base_((uint64_t(attr::get_int(*k.body()->terminator(), attr::kSramPeak)) + 63) / 64 *
                   64) {
    for (unsigned i = 0; i < k.body()->arguments().size(); ++i)
      params_[k.body()->argument(i)] = i;
    lifetimes(*k.body());
  }

  Kernel run() {
    const bool persistent = attr::has(kernel_.body()->terminator(), attr::kPersistent);
    if (persistent)
      lower_grid_loop();
    else
      for (const auto &op : kernel_.body()->ops())
        lower(*op);
    emit(isa::Opcode::Halt);
    out_.persistent = persistent;
    return std::move(out_);
  }

private:
  [[noreturn]] void fail(const ir::Operation &op, const std::string &what) {
    throw Failure{op.loc().str() + ": error: tnpu: " + what};
  }

  void emit(isa::Opcode op, uint8_t a = 0, uint8_t b = 0, uint8_t c = 0, int64_t imm = 0,
            uint8_t d = 0) {
    Instr in;
    in.op = op;
    in.slot[0] = a, in.slot[1] = b, in.slot[2] = c, in.slot[3] = d;
    in.imm = static_cast<int32_t>(imm);
    out_.program.push_back(in);
  }
  /// A forward branch to patch with `land` (the units' configuration here is kept for it).
  size_t branch(isa::Opcode op, uint8_t a = 0, uint8_t b = 0) {
    emit(op, a, b);
    const size_t at = out_.program.size() - 1;
    config_at_branch_[at] = {vcfg_, dcfg_};
    return at;
  }
  /// Patches a forward branch to land here. The units' configuration is what all paths agree
  /// on: the branch's, the fall-through's unless an unconditional jump ends it, and those of
  /// the branches that landed here before (a loop's exits: the top one, taken when it runs zero
  /// times, knows nothing its body set).
  void land(size_t at) {
    const size_t here = out_.program.size();
    out_.program[at].imm = int32_t(here - at);
    const bool joined = landed_at_ == here; // another branch landed here already
    landed_at_ = here;
    const auto it = config_at_branch_.find(at);
    if (it == config_at_branch_.end()) {
      forget_config();
      return;
    }
    const bool fall_through =
        joined || here - 1 == at || out_.program.back().op != isa::Opcode::Jmp;
    auto meet = [&](auto &known, const auto &other) {
      for (size_t f = 0; f < known.size(); ++f)
        if (!fall_through)
          known[f] = other[f];
        else if (known[f] != other[f])
          known[f] = std::nullopt;
    };
    meet(vcfg_, it->second.first);
    meet(dcfg_, it->second.second);
    config_at_branch_.erase(it);
  }
  void li(uint8_t rd, uint64_t v) {
    const auto lo = static_cast<int32_t>(static_cast<uint32_t>(v));
    emit(isa::Opcode::Li, rd, 0, 0, lo);
    if (static_cast<uint64_t>(static_cast<int64_t>(lo)) != v)
      emit(isa::Opcode::Lih, rd, 0, 0, static_cast<int32_t>(v >> 32));
  }
  /// Sets a unit's configuration field (`op`: an immediate form) unless `known` says it holds v
  /// already: straight-line code and forward joins only (`land`; `forget_config` at loop heads).
  void config_imm(isa::Opcode op, uint8_t f, std::optional<int64_t> &known, int64_t v) {
    if (known && *known == v)
      return;
    emit(op, f, 0, 0, v);
    known = v;
  }
  /// A DMA descriptor field: the descriptor keeps its fields across transfers, so a box's first
  /// indices, its element size and the like are set once for a run of transfers.
  void dmai(isa::DmaField f, int64_t v) {
    config_imm(isa::Opcode::DmaCfgi, uint8_t(f), dcfg_[size_t(f)], v);
  }
  /// Sets a DMA descriptor field from a register (its value unknown here).
  void dmar(isa::DmaField f, uint8_t r) {
    emit(isa::Opcode::DmaCfg, uint8_t(f), r);
    dcfg_[size_t(f)] = std::nullopt;
  }
  /// A vector configuration field.
  void veci(isa::VecField f, int64_t v) {
    config_imm(isa::Opcode::VCfgi, uint8_t(f), vcfg_[size_t(f)], v);
  }
  /// At a join or a loop head the vector unit's configuration and the DMA descriptor are
  /// whatever the paths into it left.
  void forget_config() {
    vcfg_.fill(std::nullopt);
    dcfg_.fill(std::nullopt);
  }
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
    if (!free_regs_.empty()) { // a dead value's
      const uint8_t r = free_regs_.back();
      free_regs_.pop_back();
      return r;
    }
    if (next_reg_ > next_bound_)
      fail(op, "the kernel needs more than 17 scalar registers live at once");
    return next_reg_++;
  }
  /// The scalars of each block whose last use (in the block, or by an op holding it in a
  /// region) is an op: dies_after_[op]. Block arguments are not in it (a loop's carried values
  /// live in their slots from iteration to iteration). A scalar feeding a tile lives as long as
  /// that tile (and the tiles made from it): lowerings match patterns through tiles to their
  /// scalars (a row gather's column start is the splat's scalar, read at the gather).
  void lifetimes(const ir::Block &block) {
    std::map<const ir::Operation *, size_t> index;
    std::vector<const ir::Operation *> ops;
    for (const auto &op : block.ops())
      index[op.get()] = ops.size(), ops.push_back(op.get());
    std::map<const ir::Value *, size_t> last;
    std::function<void(const ir::Operation &, size_t)> uses = [&](const ir::Operation &op,
                                                                  size_t at) {
      for (const ir::Value *v : op.operands())
        if (v->def() && index.count(v->def()))
          last[v] = std::max(last[v], at);
      for (unsigned r = 0; r < op.num_regions(); ++r)
        for (const auto &inner : op.region(r)->ops())
          uses(*inner, at);
    };
    for (size_t i = 0; i < ops.size(); ++i) {
      for (unsigned r = 0; r < ops[i]->num_results(); ++r)
        last.emplace(ops[i]->result(r), i); // unused: dead after its op
      uses(*ops[i], i);
      for (unsigned r = 0; r < ops[i]->num_regions(); ++r)
        lifetimes(*ops[i]->region(r));
    }
    for (size_t i = ops.size(); i-- > 0;) // through tiles, the later ops' first
      for (unsigned r = 0; r < ops[i]->num_results(); ++r)
        if (ops[i]->result(r)->type().is_tile())
          for (const ir::Value *v : ops[i]->operands())
            if (auto it = last.find(v); it != last.end())
              it->second = std::max(it->second, last[ops[i]->result(r)]);
    for (const auto &[v, i] : last)
      if (!v->type().is_tile())
        dies_after_[ops[i]].push_back(v);
  }
  /// After `op`: the registers of the scalars it used last go back to free_regs_, unless another
  /// live value shares the register (an alias: program ids, a loop's results) or it is a program
  /// id's of a persistent kernel. Not while prefetching (it lowers a body's ops out of order).
  void release_dead(const ir::Operation &op) {
    auto it = dies_after_.find(&op);
    if (prefetching_ || it == dies_after_.end())
      return;
    for (const ir::Value *v : it->second) {
      auto r = regs_.find(v);
      if (r == regs_.end())
        continue;
      const uint8_t reg = r->second;
      regs_.erase(r);
      if (reg == 0 || reg >= next_reg_ ||
          std::find(pinned_.begin(), pinned_.end(), reg) != pinned_.end())
        continue;
      bool shared = false;
      for (const auto &[other, o] : regs_)
        shared = shared || o == reg;
      if (!shared)
        free_regs_.push_back(reg);
    }
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
    if (auto it = vscalars_.find(v); it != vscalars_.end())
      return materialize(op, v, it->second);
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
  /// The planned address of a tile (tnpu.addr / tnpu.mem; tnpu.overflow when it has none).
  uint64_t alloc_tile(const ir::Operation &op, const ir::Value *v) {
    const ir::Type &t = v->type();
    if (t.rank() > 3 || (t.rank() == 3 && t.shape()[0] != 1))
      fail(op, "tiles " + t.str() + " are not supported (rank 1 or 2, or 1 x R x C)");
    elem_bytes(op, t.elem());
    const ir::Operation *holder = nullptr;
    const std::optional<uint64_t> planned = attr::address(v, &holder);
    if (!planned) {
      const std::string *overflow = holder->attr_as<std::string>(attr::kOverflow);
      fail(op, overflow ? *overflow : "tile " + t.str() + " has no planned address");
    }
    uint64_t at = *planned;
    if (v->def()) // pipelined: this body copy's buffer
      at += uint64_t(buffer_) * uint64_t(attr::get_int(*v->def(), attr::kStride));
    return tiles_[v] = at;
  }
  /// A load or fill the pipeline prefetches.
  static bool prefetched(const ir::Operation &op) {
    return attr::prefetchable(op) && op.attr(attr::kBuffers);
  }
  int elem_bytes(const ir::Operation &op, ir::ScalarKind e) {
    const int bits = e == ir::ScalarKind::I1 ? 8 : ir::bit_width(e); // masks: one byte a lane
    if (bits < 8)
      fail(op, "element type " + std::string(ir::scalar_name(e)) + " is not supported");
    return bits / 8;
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
  /// The unit dtype of tiles of e (masks and u8 as i8, u32 as i32, with `u`), or an error.
  int unit_dtype(const ir::Operation &op, ir::ScalarKind e);
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

  void lower(const ir::Operation &op); ///< lower_op, then release_dead
  void lower_op(const ir::Operation &op);
  bool lower_scalar(const ir::Operation &op); ///< false: not a command-processor scalar op
  void lower_launch_value(const ir::Operation &op);
  void lower_scalar_constant(const ir::Operation &op);
  void lower_constexpr(const ir::Operation &op);
  /// A loop for run_loop: it runs while `counter` < `bound`; `ahead` / `ahead_bound` say the
  /// same of the next iteration to prefetch; `bind` makes the body's scalars name the current
  /// (false) or the prefetched (true) iteration; `step` moves either on by one iteration.
  struct Loop {
    const ir::Block *body;
    const ir::Operation *at;
    uint8_t counter, bound, ahead, ahead_bound;
    std::function<void(bool)> bind, step;
    int depth = 1; ///< body copies (the buffers of its pipelined tiles), set by run_loop
    /// The matrix and vector units order each other across the back edge by tokens, not by
    /// waiting for all the other's work (units_take_tokens), set by run_loop.
    bool tokens = false;
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
  // lower_memory.cpp: the pieces of a load / store's DMA box (see there).
  void box_address(const ir::Operation &op, unsigned p, int rank);
  void box_valid_extents(const ir::Operation &op, unsigned p, int rank);
  int box_first(uint8_t dst, const ir::Operation &op, const ir::Value *offset);
  void box_dims(const ir::Operation &op, unsigned p, int rank, int64_t cols, uint64_t es);
  void box_transfers(const ir::Operation &op, bool is_load, unsigned p, uint64_t local,
                     int64_t rows, int64_t cols, uint64_t es, const ir::Value *row_offset);
  uint8_t box_part_rows(const ir::Operation &op, int64_t r0, int64_t n,
                        const ir::Value *row_offset);
  int box_engine(const ir::Operation &op, bool is_load, int parts, int part, uint64_t bytes);
  void lower_scalar_binary(const ir::Operation &op);
  void lower_cmp(const ir::Operation &op);

  // lower_vector.cpp: tiles on the vector unit, and scalars the command processor cannot compute
  // (lower_vector_scalar.cpp); reductions and scans in lower_reduce.cpp, shape ops in
  // lower_shape.cpp; the commands they share in vector_unit.cpp.
  bool lower_vector(const ir::Operation &op); ///< false: not a vector-unit op
  void lower_elementwise(const ir::Operation &op);
  void lower_tile_cmp(const ir::Operation &op);
  void lower_tile_cast(const ir::Operation &op);
  void lower_shape(const ir::Operation &op);
  void lower_scan(const ir::Operation &op);
  void lower_scalar_on_vec(const ir::Operation &op);
  /// Sets n, rows, t, u (and the row strides of every operand to n elements of t).
  void vec_setup(int64_t n, int64_t rows, int t, bool is_unsigned = false);
  /// An elementwise op (2 or 3 operands) reading a fused row broadcast (attr::kFused: row
  /// stride 0) or a narrowed column broadcast (attr::kNarrow: one command per chunk of Wn
  /// columns, each reading the R x Wn copy) as an operand, into d; false when it reads neither.
  bool lower_strided(const ir::Operation &op, isa::Opcode vop, int t, bool is_unsigned, uint64_t d);
  /// Converts between the unit's dtypes (v.cvt with rounding `rm`, or v.icvt when both are
  /// integers).
  void convert(const ir::Operation &op, uint64_t dst, uint64_t src, ir::ScalarKind from,
               ir::ScalarKind to, int64_t n, int rm);
  /// dst = transpose of the rows x cols tile at src (elements of es bytes, dtype code t).
  void transpose(const ir::Operation &op, uint64_t dst, uint64_t src, int64_t rows, int64_t cols,
                 int t, int es);
  /// A copy of f32 tile v with every element rounded to `precision` (tf32 or bf16), in temporary
  /// space at byte offset `at` (twice v's size).
  Range rounded_input(const ir::Operation &op, const ir::Value *v, const std::string &precision,
                      uint64_t at);
  /// n copies of the low bits of register r as dtype t at dst.
  void fill(const ir::Operation &op, uint64_t dst, int64_t n, int t, uint8_t r);
  /// A vector command: `addrs` (local addresses, into kT0..kT3) then register operands `regs`.
  void vcmd(isa::Opcode op, std::initializer_list<uint64_t> addrs, const std::vector<Range> &reads,
            const std::vector<Range> &writes, std::initializer_list<uint8_t> regs = {});
  /// The command processor waits until the vector unit has run everything issued so far.
  void cp_wait_vec();
  /// Above the planned tiles: kScalarSlots 8-byte scalar slots (0..3 for read-backs within one
  /// op, the rest each hold a scalar the vector unit computed, see vscalars_), then temporary
  /// space valid within one op's lowering (`temp`, from byte offset `at`).
  static constexpr int kScalarSlots = 128;
  uint64_t scalar_slot(int slot) const { return temp_base_ + uint64_t(slot) * 8; }
  /// The slot of a scalar read back at once (an assert's or an index check's).
  uint64_t readback_slot(const ir::Operation &op);
  /// A fresh slot for a scalar the vector unit computes.
  uint64_t vector_scalar_slot(const ir::Operation &op);
  /// The slot of scalar v for a vector command: its own, or a v.fill of its register.
  uint64_t vector_operand(const ir::Operation &op, const ir::Value *v);
  /// Reads vector-resident scalar v (at `at`) into a register, after the vector unit ran.
  uint8_t materialize(const ir::Operation &op, const ir::Value *v, uint64_t at);
  /// A splat of a vector-resident scalar: v.scopy with a zero source stride.
  void broadcast_scalar(const ir::Operation &op, uint64_t at);
  uint64_t temp(const ir::Operation &op, uint64_t at, uint64_t bytes);
  /// Reads a scalar the vector unit wrote at `at` (after cp_wait_vec) into register rd.
  void read_scalar(uint8_t rd, uint64_t at, ir::ScalarKind e);

  // lower_control.cpp: integer scalar ops beyond lower_scalar_binary's, if, assert.
  void lower_scalar_int(const ir::Operation &op);
  /// Wraps register r to the width of integer type e (sign- or zero-extended again).
  void wrap_scalar(uint8_t r, ir::ScalarKind e);
  void lower_if(const ir::Operation &op);
  void lower_assert(const ir::Operation &op);
  /// Ends the program reporting `message` (the assert channel) when register c is zero.
  void report_unless(uint8_t c, const std::string &message);

  // lower_indexed.cpp: gather, scatter, atomic_add.
  struct Lanes { ///< an indexed op's lanes and temporaries
    int64_t n = 0;
    bool masked = false;
    uint64_t valid = 0, good = 0, t8 = 0, k = 0, s = 0, probe = 0;
  };
  void lower_indexed(const ir::Operation &op);
  void check_indices(const ir::Operation &op, const Lanes &l);
  void name_bad_index(const ir::Operation &op, const Lanes &l);
  void element_offsets(const ir::Operation &op, const Lanes &l);
  void indexed_transfer(const ir::Operation &op, const Lanes &l);
  void lower_row_gather(const ir::Operation &op, const attr::RowGather &g);

  const ir::Kernel &kernel_;
  const CompileOptions &opts_;
  Kernel out_;
  QueueSync sync_;
  std::array<uint64_t, 8> dma_work_{}; ///< see next_dma
  int groups_ = 0;
  int buffer_ = 0; ///< the buffer of pipelined tiles in the body copy being lowered
  /// Lowering a prefetch: a splat of a scalar the vector unit computed reads it back into a
  /// register (a DMA fill) rather than broadcasting it on the vector unit, whose commands the
  /// body copies do not wait for as they wait for the DMA engines' prefetches.
  bool prefetching_ = false;
  std::array<uint8_t, 3> pid_regs_ = {kPidReg, kPidReg + 1, kPidReg + 2}; ///< program ids
  std::map<const ir::Value *, unsigned> params_;
  std::map<const ir::Value *, uint8_t> regs_;
  std::map<const ir::Value *, uint64_t> tiles_;
  /// Scalars the vector unit computed, in their slots: read into a register (`scalar`) only when
  /// the command processor needs them, so chains of float scalar ops do not wait.
  std::map<const ir::Value *, uint64_t> vscalars_;
  int next_vslot_ = 4;
  std::map<std::tuple<int, int, int>, uint8_t> bound_;
  std::map<const ir::Operation *, int> store_engine_; ///< a single-engine store's engine
  uint8_t next_reg_ = 1, next_bound_ = kLastValueReg;
  std::vector<uint8_t> free_regs_; ///< below next_reg_, their values dead (release_dead)
  std::map<const ir::Operation *, std::vector<const ir::Value *>> dies_after_; ///< lifetimes
  std::vector<uint8_t> pinned_; ///< never freed: a persistent kernel's program ids
  uint64_t temp_base_ = 0;      ///< the first scratchpad byte above every planned tile
  std::array<std::optional<int64_t>, size_t(isa::VecField::Count)> vcfg_;
  std::array<std::optional<int64_t>, size_t(isa::DmaField::Count)> dcfg_;
  /// vcfg_ and dcfg_ where each forward branch not yet landed was taken.
  std::map<size_t, std::pair<decltype(vcfg_), decltype(dcfg_)>> config_at_branch_;
  size_t landed_at_ = SIZE_MAX; // where the last branch landed (land)
};

} // namespace tl::tnpu::detail
