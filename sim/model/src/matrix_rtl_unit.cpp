// The matrix unit as RTL (see matrix_rtl_unit.h).
// SPDX-License-Identifier: Apache-2.0
#include "matrix_rtl_unit.h"

#include "tl/npu/rtl/built_arrays.h"

#include <cmath>
#include <sstream>
#include <stdexcept>

namespace tl::npu::model {

namespace {

constexpr uint64_t kRtlAccBase = uint64_t{1} << 31;

std::unique_ptr<rtl::Model> make_model(const MatrixConfig &mc) {
  std::string built;
  for (const rtl::BuiltArray &a : rtl::built_arrays()) {
    if (a.rows == mc.rows && a.cols == mc.cols && a.fp32_passes == mc.fp32_passes)
      return a.make();
    built += (built.empty() ? "" : ", ") + std::to_string(a.rows) + "x" + std::to_string(a.cols) +
             ":" + std::to_string(a.fp32_passes);
  }
  const std::string want = std::to_string(mc.rows) + "x" + std::to_string(mc.cols) + ":" +
                           std::to_string(mc.fp32_passes);
  throw ConfigError("field 'core.matrix.kind' is \"" + std::string(matrix_kind_name(mc.kind)) +
                    "\", but this build has no " + want +
                    " (rows x cols : fp32_passes) matrix unit RTL; it has " + built + " (" +
                    rtl::built_arrays_option() + "): add " + want +
                    " to TL_NPU_RTL_ARRAYS and rebuild, or use an array size it has");
}

} // namespace

uint8_t *RtlMatrixUnit::CoreMemory::span(uint32_t addr, size_t bytes, bool write,
                                         const char *what) {
  const uint64_t local = addr >= kRtlAccBase ? isa::kAccBase + (addr - kRtlAccBase) : addr;
  uint8_t *p = mem_.span(local, bytes, what);
  // Arithmetic off: the model skips the MACs and marks C stale; the RTL computes, but from
  // inputs that may be stale, so its C is marked the same way (LocalMemory::track_stale).
  if (write)
    mem_.set_stale(local, bytes, true);
  return p;
}

RtlMatrixUnit::RtlMatrixUnit(sc_core::sc_module_name name, CoreState &core, int track)
    // A large verilated array's evaluation keeps hundreds of KiB on the stack (128x128: one
    // function's frame is 300 KiB), far more than a SystemC thread's default.
    : Unit(name, core, "mx", track, 64 << 20), memory_(core.mem) {
  const MatrixConfig &mc = chip_.cfg.core.matrix;
  rtl_ = std::make_unique<rtl::MatrixRtl>(make_model(mc), memory_);
  // The SRAM's banks limit the read ports (the accumulator, from 2^31 on, is not banked).
  const SramConfig &sram = chip_.cfg.core.sram;
  rtl_->set_sram_banks(rtl::SramBanks{static_cast<uint32_t>(sram.banks),
                                      static_cast<uint32_t>(sram.bank_width),
                                      static_cast<uint32_t>(kRtlAccBase)});
  base_ = rtl_->cycle();
  if (!chip_.opts.rtl_vcd.empty()) {
    std::string path = chip_.opts.rtl_vcd;
    if (core.id > 0) {
      const size_t dot = path.rfind('.');
      const std::string ext = dot != std::string::npos && path.find('/', dot) == std::string::npos
                                  ? path.substr(dot)
                                  : "";
      path = path.substr(0, path.size() - ext.size()) + ".core" + std::to_string(core.id) + ext;
    }
    try {
      rtl_->trace(path, base_ + chip_.opts.vcd_from, base_ + chip_.opts.vcd_to);
    } catch (const rtl::RtlError &e) {
      throw ConfigError(e.what());
    }
  }
  if (mc.kind == MatrixKind::CrossCheck) {
    check_ = std::make_unique<MatrixCrossCheck>(mc, memory_,
                                                MatrixTiming::sram_banks(sram, kRtlAccBase));
    rtl_->on_c_row = [this](const rtl::CRow &row) { check_->c_row(row); };
  }
}

RtlMatrixUnit::~RtlMatrixUnit() = default;

rtl::MxCommand RtlMatrixUnit::translate(const Command &c) const {
  const MxCfg &m = c.mx;
  const auto address = [](uint64_t local, const char *what) -> uint32_t {
    const bool acc = local >= isa::kAccBase;
    const uint64_t offset = acc ? local - isa::kAccBase : local;
    if (offset >= kRtlAccBase) {
      std::ostringstream s;
      s << what << " address 0x" << std::hex << local << " is outside the "
        << (acc ? "accumulator" : "SRAM");
      throw ProgramError(s.str());
    }
    return static_cast<uint32_t>(acc ? kRtlAccBase + offset : offset);
  };
  const auto field = [](uint64_t v, const char *what) -> uint32_t {
    if (v > 0xffffffffu)
      throw ProgramError(std::string("matrix ") + what + " " + std::to_string(v) +
                         " does not fit the unit's 32-bit field");
    return static_cast<uint32_t>(v);
  };
  if (m.mode > 7)
    throw ProgramError("matrix mode must be bf16, f16, i8 or f32, got " + std::to_string(m.mode));
  rtl::MxCommand r;
  r.mode = static_cast<num::DType>(m.mode);
  if (c.op == isa::Opcode::MxPre) {
    r.op = rtl::MxOp::Preload;
    // Larger than the array: the RTL rejects it and says so; clamp only what its ports carry.
    r.k = static_cast<uint32_t>(std::min<uint64_t>(m.k, 0xffff));
    r.n = static_cast<uint32_t>(std::min<uint64_t>(m.n, 0xffff));
    r.src = address(c.a, "mx.pre weights");
    r.src_stride = field(m.ldw, "weight stride");
  } else {
    r.op = c.op == isa::Opcode::MxMma ? rtl::MxOp::MultiplyAccumulate : rtl::MxOp::Multiply;
    r.m = field(m.m, "row count m");
    r.src = address(c.b, "mx A");
    r.src_stride = field(m.lda, "A stride");
    r.dst = address(c.a, "mx C");
    r.dst_stride = field(m.ldc, "C stride");
  }
  return r;
}

uint64_t RtlMatrixUnit::catch_up() {
  // A command queued between two edges is offered at the next one.
  rtl_->advance_to(base_ + chip_.edge_at_or_after(ChipContext::now_ps()));
  return rtl_->cycle() - base_;
}

uint64_t RtlMatrixUnit::ps_until_rtl() const {
  const auto at = static_cast<uint64_t>(
      std::llround(static_cast<double>(rtl_->cycle() - base_) * chip_.ps_per_cycle));
  const uint64_t now = ChipContext::now_ps();
  return at > now ? at - now : 0;
}

uint64_t RtlMatrixUnit::execute(const Command &c) {
  const rtl::MxCommand cmd = translate(c);
  try {
    if (!chip_.timed()) { // functional: no time passes, the command runs to its end
      const size_t index = rtl_->submit(cmd);
      if (check_)
        check_->command(index, cmd, rtl_->cycle() - base_);
      rtl_->run(chip_.opts.hang_timeout_cycles);
    } else {
      const uint64_t issue = catch_up();
      const size_t index = rtl_->submit(cmd);
      if (check_)
        check_->command(index, cmd, issue);
      while (rtl_->pending()) {
        rtl_->step();
        if (rtl_->cycle() - base_ - issue > chip_.opts.hang_timeout_cycles)
          throw ProgramError("the matrix unit RTL did not take the command in " +
                             std::to_string(chip_.opts.hang_timeout_cycles) + " cycles");
      }
    }
  } catch (const rtl::RtlError &e) {
    throw ProgramError(e.what());
  } catch (const std::invalid_argument &e) {
    throw ProgramError(e.what());
  }
  if (cmd.op == rtl::MxOp::Preload) {
    wk_ = c.mx.k;
    wn_ = c.mx.n;
  }
  if (!chip_.timed())
    return 0; // the RTL's edges are not simulated time here
  count_busy();
  return ps_until_rtl();
}

bool RtlMatrixUnit::results_pending() const { return rtl_->busy(); }

// Clocks the edges up to now, then waits for the next one: an edge is clocked only once its
// time has come, so a command queued meanwhile is still offered at it.
uint64_t RtlMatrixUnit::advance_results() {
  try {
    catch_up();
  } catch (const rtl::RtlError &e) {
    throw ProgramError(e.what());
  }
  count_busy();
  if (!rtl_->busy())
    return 0;
  const auto at = static_cast<uint64_t>(
      std::llround(static_cast<double>(rtl_->cycle() + 1 - base_) * chip_.ps_per_cycle));
  return at - std::min(at, ChipContext::now_ps());
}

void RtlMatrixUnit::count_busy() {
  add_busy(static_cast<double>(rtl_->active_edges() - counted_));
  counted_ = rtl_->active_edges();
}

double RtlMatrixUnit::flops(const Command &c) const {
  return c.op == isa::Opcode::MxPre ? 0 : 2.0 * static_cast<double>(c.mx.m * wk_ * wn_);
}

std::string RtlMatrixUnit::cross_check_json() const {
  if (!check_)
    return "";
  std::vector<uint64_t> done;
  for (const rtl::CommandCycles &cc : rtl_->cycles())
    done.push_back(cc.done >= base_ ? cc.done - base_ : 0);
  return check_->report_json(done);
}

} // namespace tl::npu::model
