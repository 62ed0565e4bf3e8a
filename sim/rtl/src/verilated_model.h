// The Model interface over one verilated mx_unit class (Vmx_unit_<rows>x<cols>): sets its input
// ports, clocks it, reads its output ports. Included only by the generated per-size sources.
// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "tl/npu/rtl/matrix_rtl.h"

#include "verilated.h"
#if VM_TRACE
#include "verilated_vcd_c.h"
#endif

#include <memory>
#include <string>
#include <vector>

namespace tl::npu::rtl {

// Lane access to a packed bus of 32-bit lanes, whatever C++ type Verilator gave it.
inline void put_lanes(IData &bus, const uint32_t *lanes, int) { bus = lanes[0]; }
inline void put_lanes(QData &bus, const uint32_t *lanes, int) {
  bus = static_cast<QData>(lanes[0]) | static_cast<QData>(lanes[1]) << 32;
}
template <std::size_t W> void put_lanes(VlWide<W> &bus, const uint32_t *lanes, int n) {
  for (int i = 0; i < n; ++i)
    bus[i] = lanes[i];
}
inline void get_lanes(const IData &bus, uint32_t *lanes, int) { lanes[0] = bus; }
inline void get_lanes(const QData &bus, uint32_t *lanes, int) {
  lanes[0] = static_cast<uint32_t>(bus);
  lanes[1] = static_cast<uint32_t>(bus >> 32);
}
template <std::size_t W> void get_lanes(const VlWide<W> &bus, uint32_t *lanes, int n) {
  for (int i = 0; i < n; ++i)
    lanes[i] = bus[i];
}

template <class V> class VerilatedModel final : public Model {
public:
  VerilatedModel(int rows, int cols, int fp32_passes)
      : rows_(rows), cols_(cols), fp32_passes_(fp32_passes), context_(make_context()),
        top_(std::make_unique<V>(context_.get(), "mx_unit")), c_data_(static_cast<size_t>(cols)) {}
  ~VerilatedModel() override {
    top_->final();
#if VM_TRACE
    if (vcd_)
      vcd_->close();
#endif
  }

  void open_trace(const std::string &path, uint64_t from, uint64_t to,
                  const uint64_t *cycle) override {
#if VM_TRACE
    vcd_ = std::make_unique<VerilatedVcdC>();
    top_->trace(vcd_.get(), 99);
    vcd_->open(path.c_str());
    if (!vcd_->isOpen())
      throw RtlError("matrix unit waveform: cannot open " + path);
    from_ = from;
    to_ = to;
    cycle_ = cycle;
#else
    (void)from, (void)to, (void)cycle;
    throw RtlError("matrix unit waveform " + path +
                   ": this build verilated the unit without waveforms; configure with "
                   "-DTL_NPU_RTL_TRACE=ON (it re-verilates every size with --trace)");
#endif
  }

  int rows() const override { return rows_; }
  int cols() const override { return cols_; }
  int fp32_passes() const override { return fp32_passes_; }

  void set_reset(bool active) override { top_->rst_n = !active; }

  void set_command(const Command *c) override {
    top_->cmd_valid = c != nullptr;
    if (!c)
      return;
    top_->cmd_op = static_cast<uint8_t>(c->op);
    top_->cmd_mode = c->mode;
    top_->cmd_k = c->k;
    top_->cmd_n = c->n;
    top_->cmd_m = c->m;
    top_->cmd_src_addr = c->src;
    top_->cmd_src_stride = c->src_stride;
    top_->cmd_dst_addr = c->dst;
    top_->cmd_dst_stride = c->dst_stride;
    top_->cmd_tag = c->tag;
  }

  void set_read_data(ReadPort port, const uint32_t *lanes) override {
    switch (port) {
    case ReadPort::Weights:
      put_lanes(top_->w_rd_data, lanes, cols_);
      break;
    case ReadPort::A:
      put_lanes(top_->a_rd_data, lanes, rows_);
      break;
    case ReadPort::Accumulator:
      put_lanes(top_->acc_rd_data, lanes, cols_);
      break;
    }
  }

  void set_read_ready(bool weights, bool a) override {
    top_->w_rd_ready = weights;
    top_->a_rd_ready = a;
  }

  bool settle() override {
    top_->clk = 0;
    top_->eval();
    dump(1); // the clock's low half before the next edge
    return top_->cmd_ready;
  }

  void rising_edge(Edge &e) override {
    top_->clk = 1;
    top_->eval();
    dump(2);
    e.weights = Read{static_cast<bool>(top_->w_rd_en), top_->w_rd_addr, top_->w_rd_count,
                     static_cast<num::DType>(top_->w_rd_mode)};
    e.a = Read{static_cast<bool>(top_->a_rd_en), top_->a_rd_addr, top_->a_rd_count,
               static_cast<num::DType>(top_->a_rd_mode)};
    e.accumulator = Read{static_cast<bool>(top_->acc_rd_en), top_->acc_rd_addr, top_->acc_rd_count,
                         num::DType::F32};
    e.c_write = top_->c_wr_en;
    if (e.c_write) {
      e.c_addr = top_->c_wr_addr;
      e.c_count = top_->c_wr_count;
      get_lanes(top_->c_wr_data, c_data_.data(), cols_);
    }
    e.c_data = c_data_.data();
    e.pre_done = top_->pre_done;
    e.pre_tag = top_->pre_done_tag;
    e.mm_done = top_->mm_done;
    e.mm_tag = top_->mm_done_tag;
    e.error = top_->err_valid;
    e.error_code = top_->err_code;
    e.error_tag = top_->err_tag;
  }

private:
  static std::unique_ptr<VerilatedContext> make_context() {
    auto c = std::make_unique<VerilatedContext>();
#if VM_TRACE
    c->traceEverOn(true); // before the model is built, or it has no trace code to call
#endif
    return c;
  }
  // Two VCD time steps per cycle: the low half (1) and the edge (2) after the driver's cycle.
  void dump(int half) {
#if VM_TRACE
    if (vcd_ && *cycle_ >= from_ && *cycle_ < to_)
      vcd_->dump(2 * *cycle_ + static_cast<uint64_t>(half));
#else
    (void)half;
#endif
  }

#if VM_TRACE
  std::unique_ptr<VerilatedVcdC> vcd_;
  uint64_t from_ = 0, to_ = 0;
  const uint64_t *cycle_ = nullptr;
#endif
  int rows_, cols_, fp32_passes_;
  std::unique_ptr<VerilatedContext> context_;
  std::unique_ptr<V> top_;
  std::vector<uint32_t> c_data_;
};

} // namespace tl::npu::rtl
