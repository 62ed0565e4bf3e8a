// Tile IR -> TNPU programs: a straight-line lowering of a subset (see tnpu.h). Scalars live in
// registers, tiles in the scratchpad (row-major, bump-allocated), every unit command is followed
// by a fence (no overlap yet: correctness first).
// SPDX-License-Identifier: Apache-2.0
#include "tl/backends/tnpu.h"

#include <cstring>
#include <map>
#include <tuple>

namespace tl::tnpu {
namespace {

using ir::Opcode;
using npu::isa::Instr;
namespace isa = npu::isa;

/// r1..r19 hold values and bound arguments; r20..r23 are scratch.
constexpr uint8_t kLastValueReg = 19, kT0 = 20, kT1 = 21, kT2 = 22, kT3 = 23;
constexpr uint64_t kTileAlign = 64;

struct Failure {
  std::string message;
};

class Lowering {
public:
  Lowering(const ir::Kernel &k, const CompileOptions &o) : kernel_(k), opts_(o) {
    for (unsigned i = 0; i < k.body()->arguments().size(); ++i)
      params_[k.body()->argument(i)] = i;
  }

  Kernel run() {
    for (const auto &op : kernel_.body()->ops())
      lower(*op);
    emit(isa::Opcode::Halt);
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
  void li(uint8_t rd, uint64_t v) {
    const auto lo = static_cast<int32_t>(static_cast<uint32_t>(v));
    emit(isa::Opcode::Li, rd, 0, 0, lo);
    if (static_cast<uint64_t>(static_cast<int64_t>(lo)) != v)
      emit(isa::Opcode::Lih, rd, 0, 0, static_cast<int32_t>(v >> 32));
  }
  void dmai(isa::DmaField f, int64_t v) { emit(isa::Opcode::DmaCfgi, uint8_t(f), 0, 0, v); }
  void dmar(isa::DmaField f, uint8_t r) { emit(isa::Opcode::DmaCfg, uint8_t(f), r); }
  void veci(isa::VecField f, int64_t v) { emit(isa::Opcode::VCfgi, uint8_t(f), 0, 0, v); }

  uint8_t new_reg(const ir::Operation &op) {
    if (next_reg_ > kLastValueReg)
      fail(op, "the kernel needs more than 19 scalar registers");
    return next_reg_++;
  }
  uint8_t bind(const ir::Operation &op, BindKind kind, uint16_t param, uint16_t dim) {
    auto key = std::make_tuple(int(kind), int(param), int(dim));
    if (auto it = bound_.find(key); it != bound_.end())
      return it->second;
    const uint8_t r = new_reg(op);
    out_.bindings.push_back({kind, r, param, dim});
    return bound_[key] = r;
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
      fail(op, "scalar arguments of type " + std::string(ir::scalar_name(e)) + " are not supported");
    }
    fail(op, "operand is not a scalar the target holds in a register");
  }
  uint64_t tile(const ir::Operation &op, const ir::Value *v) {
    auto it = tiles_.find(v);
    if (it == tiles_.end())
      fail(op, "operand is not a tile in the scratchpad");
    return it->second;
  }
  uint64_t alloc_tile(const ir::Operation &op) {
    const ir::Type &t = op.result()->type();
    if (t.rank() > 2)
      fail(op, "tiles of rank " + std::to_string(t.rank()) + " are not supported (rank 1 or 2)");
    const uint64_t bytes = uint64_t(t.num_elements()) * elem_bytes(op, t.elem());
    const uint64_t at = (sram_used_ + kTileAlign - 1) / kTileAlign * kTileAlign;
    if (at + bytes > opts_.sram_bytes)
      fail(op, "tile " + t.str() + " does not fit the scratchpad (" +
                   std::to_string(at + bytes) + " of " + std::to_string(opts_.sram_bytes) +
                   " bytes; the lowering does not reuse scratchpad yet)");
    sram_used_ = at + bytes;
    return tiles_[op.result()] = at;
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

  void lower(const ir::Operation &op);
  void lower_memory(const ir::Operation &op, bool is_load);
  void lower_scalar_binary(const ir::Operation &op);
  void lower_cmp(const ir::Operation &op);

  const ir::Kernel &kernel_;
  const CompileOptions &opts_;
  Kernel out_;
  std::map<const ir::Value *, unsigned> params_;
  std::map<const ir::Value *, uint8_t> regs_;
  std::map<const ir::Value *, uint64_t> tiles_;
  std::map<std::tuple<int, int, int>, uint8_t> bound_;
  uint8_t next_reg_ = 1;
  uint64_t sram_used_ = 0;
};

void Lowering::lower_scalar_binary(const ir::Operation &op) {
  if (!ir::is_integer(op.result()->type().elem()))
    fail(op, "scalar float arithmetic is not supported");
  const uint8_t a = scalar(op, op.operand(0)), b = scalar(op, op.operand(1));
  const uint8_t d = regs_[op.result()] = new_reg(op);
  static const std::map<Opcode, isa::Opcode> kOps = {
      {Opcode::Add, isa::Opcode::Add}, {Opcode::Sub, isa::Opcode::Sub},
      {Opcode::Mul, isa::Opcode::Mul}, {Opcode::And, isa::Opcode::And},
      {Opcode::Or, isa::Opcode::Or},   {Opcode::Xor, isa::Opcode::Xor},
      {Opcode::Min, isa::Opcode::Min}, {Opcode::Max, isa::Opcode::Max}};
  auto it = kOps.find(op.opcode());
  if (it == kOps.end())
    fail(op, "scalar '" + std::string(op.name()) + "' is not supported");
  if ((op.opcode() == Opcode::Min || op.opcode() == Opcode::Max) &&
      !ir::is_signed(op.result()->type().elem()))
    fail(op, "unsigned min/max is not supported");
  emit(it->second, d, a, b);
}

void Lowering::lower_cmp(const ir::Operation &op) {
  if (!op.result()->type().is_scalar() || !ir::is_integer(op.operand(0)->type().elem()) ||
      !ir::is_signed(op.operand(0)->type().elem()))
    fail(op, "'cmp' is supported on signed integer scalars only");
  const std::string pred = *op.attr_as<std::string>("pred");
  uint8_t a = scalar(op, op.operand(0)), b = scalar(op, op.operand(1));
  isa::Opcode br;
  if (pred == "eq")
    br = isa::Opcode::Beq;
  else if (pred == "ne")
    br = isa::Opcode::Bne;
  else if (pred == "lt" || pred == "gt")
    br = isa::Opcode::Blt;
  else if (pred == "ge" || pred == "le")
    br = isa::Opcode::Bge;
  else
    fail(op, "cmp predicate '" + pred + "' is not supported");
  if (pred == "gt" || pred == "le")
    std::swap(a, b);
  const uint8_t d = regs_[op.result()] = new_reg(op);
  emit(isa::Opcode::Li, d, 0, 0, 1);
  emit(br, a, b, 0, 2); // true: skip the li 0
  emit(isa::Opcode::Li, d, 0, 0, 0);
}

/// DMA between a tensor box and a row-major tile. Contiguous innermost dimension: rows of n0
/// elements; otherwise element by element (n0 = 1), chosen at run time from the stride.
void Lowering::lower_memory(const ir::Operation &op, bool is_load) {
  const ir::Value *tensor = op.operand(0);
  const unsigned p = param(op, tensor);
  const int rank = tensor->type().rank();
  const ir::Type &tt = is_load ? op.result()->type() : op.operand(1 + rank)->type();
  if (rank < 1 || rank > 2)
    fail(op, "'" + std::string(op.name()) + "' of a rank-" + std::to_string(rank) +
                 " tensor is not supported (rank 1 or 2)");
  const uint64_t es = elem_bytes(op, tt.elem());
  const uint64_t local = is_load ? alloc_tile(op) : tile(op, op.operand(1 + rank));
  if (is_load) {
    uint64_t pad = 0;
    if (const ir::Attr *a = op.attr("padding")) {
      double v = 0;
      if (auto *i = std::get_if<int64_t>(a))
        v = double(*i);
      else if (auto *d = std::get_if<double>(a))
        v = *d;
      if (tt.elem() == ir::ScalarKind::F32) {
        const float f = float(v);
        uint32_t bits;
        std::memcpy(&bits, &f, 4);
        pad = bits;
      } else if (ir::is_integer(tt.elem())) {
        pad = uint64_t(int64_t(v));
      } else if (v != 0) {
        fail(op, "padding of " + std::string(ir::scalar_name(tt.elem())) + " must be 0");
      }
    }
    li(kT0, pad);
    dmar(isa::DmaField::Pad, kT0);
  }
  dmai(isa::DmaField::ESize, int64_t(es));
  // kT1 = HBM address of the box's first element.
  emit(isa::Opcode::Mov, kT1, bind(op, BindKind::Address, p, 0));
  for (int d = 0; d < rank; ++d) {
    emit(isa::Opcode::Mul, kT0, scalar(op, op.operand(1 + d)), bind(op, BindKind::StrideBytes, p, d));
    emit(isa::Opcode::Add, kT1, kT1, kT0);
  }
  // valid extent of dim d: max(shape - offset, 0), into kT2 (inner) and kT3 (outer).
  auto valid = [&](uint8_t dst, int d) {
    emit(isa::Opcode::Sub, dst, bind(op, BindKind::Shape, p, d), scalar(op, op.operand(1 + d)));
    emit(isa::Opcode::Max, dst, dst, 0);
  };
  const int inner = rank - 1;
  const int64_t cols = tt.shape()[inner], rows = rank == 2 ? tt.shape()[0] : 1;
  valid(kT2, inner);
  if (rank == 2)
    valid(kT3, 0);
  else
    li(kT3, 1);
  const uint8_t inner_stride = bind(op, BindKind::StrideBytes, p, inner);
  const uint8_t outer_stride = rank == 2 ? bind(op, BindKind::StrideBytes, p, 0) : 0;
  li(kT0, es);
  const size_t branch = out_.program.size();
  emit(isa::Opcode::Bne, inner_stride, kT0); // -> strided
  // contiguous rows: (n0 = cols, n1 = rows, n2 = 1)
  dmai(isa::DmaField::N0, cols);
  dmai(isa::DmaField::N1, rows);
  dmai(isa::DmaField::N2, 1);
  dmar(isa::DmaField::HS1, outer_stride);
  dmai(isa::DmaField::LS1, cols * int64_t(es));
  dmar(isa::DmaField::V0, kT2);
  dmar(isa::DmaField::V1, kT3);
  dmai(isa::DmaField::V2, 1);
  const size_t jump = out_.program.size();
  emit(isa::Opcode::Jmp);
  out_.program[branch].imm = int32_t(out_.program.size() - branch);
  // strided: (n0 = 1, n1 = cols with the inner stride, n2 = rows with the outer stride)
  dmai(isa::DmaField::N0, 1);
  dmai(isa::DmaField::N1, cols);
  dmai(isa::DmaField::N2, rows);
  dmar(isa::DmaField::HS1, inner_stride);
  dmar(isa::DmaField::HS2, outer_stride);
  dmai(isa::DmaField::LS1, int64_t(es));
  dmai(isa::DmaField::LS2, cols * int64_t(es));
  dmai(isa::DmaField::V0, 1);
  dmar(isa::DmaField::V1, kT2);
  dmar(isa::DmaField::V2, kT3);
  out_.program[jump].imm = int32_t(out_.program.size() - jump);
  li(kT0, local);
  if (is_load)
    emit(isa::Opcode::DmaLd, uint8_t(isa::Queue::Dma0), kT0, kT1);
  else
    emit(isa::Opcode::DmaSt, uint8_t(isa::Queue::Dma0), kT1, kT0);
  emit(isa::Opcode::Fence);
}

void Lowering::lower(const ir::Operation &op) {
  const bool tile_result = op.num_results() == 1 && op.result()->type().is_tile();
  switch (op.opcode()) {
  case Opcode::ProgramId:
    regs_[op.result()] = uint8_t(kPidReg + *op.attr_as<int64_t>("axis"));
    return;
  case Opcode::NumPrograms:
    regs_[op.result()] = bind(op, BindKind::Grid, 0, uint16_t(*op.attr_as<int64_t>("axis")));
    return;
  case Opcode::TensorDim:
  case Opcode::TensorStride: {
    const unsigned p = param(op, op.operand(0));
    const auto axis = uint16_t(*op.attr_as<int64_t>("axis"));
    if (op.opcode() == Opcode::TensorDim) {
      regs_[op.result()] = bind(op, BindKind::Shape, p, axis);
      return;
    }
    const int es = elem_bytes(op, op.operand(0)->type().elem());
    const uint8_t d = regs_[op.result()] = new_reg(op);
    emit(isa::Opcode::Shri, d, bind(op, BindKind::StrideBytes, p, axis), 0,
         es == 1 ? 0 : es == 2 ? 1 : es == 4 ? 2 : 3);
    return;
  }
  case Opcode::Constant:
  case Opcode::Full: {
    const ir::Type &t = op.result()->type();
    uint64_t bits = 0;
    const ir::Attr *a = op.attr("value");
    double fv = 0;
    int64_t iv = 0;
    if (auto *i = std::get_if<int64_t>(a))
      iv = *i, fv = double(*i);
    else if (auto *d = std::get_if<double>(a))
      fv = *d, iv = int64_t(*d);
    else if (auto *b = std::get_if<bool>(a))
      iv = *b, fv = *b;
    if (t.elem() == ir::ScalarKind::F32) {
      const float f = float(fv);
      uint32_t u;
      std::memcpy(&u, &f, 4);
      bits = u;
    } else if (ir::is_integer(t.elem())) {
      bits = uint64_t(iv);
    } else {
      fail(op, "constants of type " + t.str() + " are not supported");
    }
    if (!tile_result) {
      li(regs_[op.result()] = new_reg(op), bits);
      return;
    }
    if (t.elem() != ir::ScalarKind::F32 && t.elem() != ir::ScalarKind::I32)
      fail(op, "tiles of " + t.str() + " cannot be filled (f32 and i32 only)");
    const uint64_t dst = alloc_tile(op);
    li(kT0, bits);
    li(kT1, dst);
    vec_shape(t.num_elements());
    veci(isa::VecField::Dst, t.elem() == ir::ScalarKind::F32 ? 2 : 4);
    emit(isa::Opcode::VFill, kT1, kT0);
    emit(isa::Opcode::Fence);
    return;
  }
  case Opcode::Splat: {
    const ir::Type &t = op.result()->type();
    if (t.elem() != ir::ScalarKind::F32 && t.elem() != ir::ScalarKind::I32)
      fail(op, "splat into " + t.str() + " is not supported (f32 and i32 only)");
    const uint8_t s = scalar(op, op.operand(0));
    const uint64_t dst = alloc_tile(op);
    li(kT1, dst);
    vec_shape(t.num_elements());
    veci(isa::VecField::Dst, t.elem() == ir::ScalarKind::F32 ? 2 : 4);
    emit(isa::Opcode::VFill, kT1, s);
    emit(isa::Opcode::Fence);
    return;
  }
  case Opcode::Load:
    lower_memory(op, true);
    return;
  case Opcode::Store:
    lower_memory(op, false);
    return;
  case Opcode::Add:
  case Opcode::Sub:
  case Opcode::Mul:
  case Opcode::Max:
  case Opcode::Min:
  case Opcode::Exp:
    if (!tile_result) {
      if (op.opcode() == Opcode::Exp)
        fail(op, "scalar 'exp' is not supported");
      lower_scalar_binary(op);
      return;
    }
    {
      require_f32_tile(op);
      static const std::map<Opcode, isa::Opcode> kOps = {
          {Opcode::Add, isa::Opcode::VAdd}, {Opcode::Sub, isa::Opcode::VSub},
          {Opcode::Mul, isa::Opcode::VMul}, {Opcode::Max, isa::Opcode::VMax},
          {Opcode::Min, isa::Opcode::VMin}, {Opcode::Exp, isa::Opcode::VExp}};
      const uint64_t a = tile(op, op.operand(0));
      const uint64_t b = op.num_operands() > 1 ? tile(op, op.operand(1)) : 0;
      const uint64_t d = alloc_tile(op);
      vec_shape(op.result()->type().num_elements());
      li(kT0, d), li(kT1, a), li(kT2, b);
      emit(kOps.at(op.opcode()), kT0, kT1, kT2);
      emit(isa::Opcode::Fence);
    }
    return;
  case Opcode::And:
  case Opcode::Or:
  case Opcode::Xor:
    if (tile_result)
      fail(op, "'" + std::string(op.name()) + "' on tiles is not supported");
    lower_scalar_binary(op);
    return;
  case Opcode::Cmp:
    lower_cmp(op);
    return;
  case Opcode::Assert: {
    if (!op.operand(0)->type().is_scalar())
      fail(op, "'assert' on tiles is not supported (scalars only)");
    const uint8_t c = scalar(op, op.operand(0));
    out_.asserts.push_back(*op.attr_as<std::string>("message"));
    emit(isa::Opcode::Bne, c, 0, 0, 3); // holds: skip the report
    li(kAssertReg, out_.asserts.size());
    emit(isa::Opcode::Halt); // ends this program (the wrapper turns it into a jump)
    return;
  }
  case Opcode::Return:
    return;
  default:
    fail(op, "'" + std::string(op.name()) + "' is not supported by the tnpu target yet");
  }
}

} // namespace

std::string compile(const ir::Module &module, const CompileOptions &options,
                    std::vector<uint8_t> &code) {
  std::vector<Kernel> kernels;
  try {
    for (const auto &k : module.kernels())
      kernels.push_back(Lowering(*k, options).run());
  } catch (const Failure &f) {
    return f.message;
  }
  code = serialize_code(kernels);
  return {};
}

} // namespace tl::tnpu
