// The matrix unit RTL driver (see matrix_rtl.h): a command queue, the scratchpad behind the
// unit's read and write ports, and the cycle count.
// SPDX-License-Identifier: Apache-2.0
#include "tl/npu/rtl/matrix_rtl.h"

#include <algorithm>
#include <cstring>
#include <sstream>

namespace tl::npu::rtl {

namespace {

// Why the unit rejected a command (mx_pkg::ERR_*).
const char *error_text(uint8_t code) {
  switch (code) {
  case 1:
    return "unknown mode (the matrix unit takes bf16, f16, f32 or i8)";
  case 2:
    return "the weight tile does not fit the array (1 <= k <= rows, 1 <= n <= cols)";
  case 3:
    return "no weights preloaded";
  case 4:
    return "mode differs from the preloaded weights'";
  case 5:
    return "unknown matrix operation";
  default:
    return "rejected";
  }
}

const char *op_name(MxOp op) {
  switch (op) {
  case MxOp::Preload:
    return "mx.pre";
  case MxOp::Multiply:
    return "mx.mm";
  case MxOp::MultiplyAccumulate:
    return "mx.mma";
  }
  return "mx.?";
}

const char *mode_name(num::DType t) {
  const auto code = static_cast<unsigned>(t);
  return code <= static_cast<unsigned>(num::DType::I32) ? num::dtype_name(t) : "?";
}

} // namespace

MatrixRtl::MatrixRtl(std::unique_ptr<Model> model, size_t memory_bytes)
    : model_(std::move(model)), owned_(memory_bytes, 0), memory_(&own_memory_) {
  reset();
}

MatrixRtl::MatrixRtl(std::unique_ptr<Model> model, Memory &memory)
    : model_(std::move(model)), memory_(&memory) {
  reset();
}

void MatrixRtl::reset() {
  std::fill(std::begin(in_flight_), std::end(in_flight_), -1);
  lanes_.resize(static_cast<size_t>(std::max(model_->rows(), model_->cols())));
  // Hold reset long enough for the skew buffers to clear, one entry per cycle.
  model_->set_command(nullptr);
  model_->set_read_ready(true, true);
  model_->set_reset(true);
  for (int i = 0; i < model_->rows() + model_->cols() + 2; ++i) {
    model_->settle();
    model_->rising_edge(edge_);
  }
  model_->set_reset(false);
}

uint8_t *MatrixRtl::OwnedMemory::span(uint32_t addr, size_t bytes, bool, const char *what) {
  if (static_cast<uint64_t>(addr) + bytes > bytes_.size()) {
    std::ostringstream s;
    s << "matrix unit: " << what << " of " << bytes << " bytes at 0x" << std::hex << addr
      << std::dec << " is outside the " << bytes_.size() << "-byte scratchpad";
    throw RtlError(s.str());
  }
  return bytes_.data() + addr;
}

// Any failure of the memory becomes an RtlError (the memory's message kept).
uint8_t *MatrixRtl::span(uint32_t addr, size_t bytes, bool write, const char *what) {
  try {
    return memory_->span(addr, bytes, write, what);
  } catch (const RtlError &) {
    throw;
  } catch (const std::exception &e) {
    throw RtlError(e.what());
  }
}

MatrixRtl::~MatrixRtl() = default;

void MatrixRtl::set_sram_banks(const SramBanks &b) {
  if (b.banks > 0 && b.width == 0)
    throw std::invalid_argument("matrix unit SRAM banks: a bank width of 0 bytes");
  banks_ = b;
  bank_words_.assign(b.banks, 0);
}

uint32_t MatrixRtl::bank_edges(std::initializer_list<std::pair<uint32_t, uint32_t>> rows) {
  if (banks_.banks == 0)
    return 1;
  std::fill(bank_words_.begin(), bank_words_.end(), 0u);
  uint32_t busiest = 0;
  for (const auto &[addr, bytes] : rows) {
    if (bytes == 0 || addr >= banks_.end)
      continue;
    const uint64_t first = addr / banks_.width;
    const uint64_t last = (static_cast<uint64_t>(addr) + bytes - 1) / banks_.width;
    for (uint64_t w = first; w <= last; ++w)
      busiest = std::max(busiest, ++bank_words_[w % banks_.banks]);
  }
  return std::max(busiest, 1u);
}

int MatrixRtl::rows() const { return model_->rows(); }
int MatrixRtl::cols() const { return model_->cols(); }
int MatrixRtl::fp32_passes() const { return model_->fp32_passes(); }

size_t MatrixRtl::submit(const MxCommand &c) {
  if (c.k > 0xffff || c.n > 0xffff)
    throw std::invalid_argument("matrix command: k and n must be at most 65535, got k = " +
                                std::to_string(c.k) + ", n = " + std::to_string(c.n));
  if (static_cast<unsigned>(c.mode) > 7)
    throw std::invalid_argument("matrix command: mode code " +
                                std::to_string(static_cast<unsigned>(c.mode)) +
                                " does not fit the 3-bit mode field");
  if (static_cast<unsigned>(c.op) > 2)
    throw std::invalid_argument("matrix command: unknown operation " +
                                std::to_string(static_cast<unsigned>(c.op)));
  commands_.push_back(c);
  cycles_.emplace_back();
  finished_.push_back(0);
  return commands_.size() - 1;
}

std::string MatrixRtl::describe(size_t index) const {
  const MxCommand &c = commands_[index];
  std::ostringstream s;
  s << "command " << index << " (" << op_name(c.op) << ' ' << mode_name(c.mode);
  if (c.op == MxOp::Preload)
    s << ", k = " << c.k << ", n = " << c.n;
  else
    s << ", m = " << c.m;
  s << ")";
  return s.str();
}

// Reads the elements a read port asked for and puts them on its lanes for the next edge.
void MatrixRtl::answer(Model::ReadPort port, const Model::Read &r, size_t lanes) {
  static const char *names[] = {"weight row read", "A row read", "accumulator row read"};
  const char *what = names[static_cast<int>(port)];
  if (r.count > lanes)
    throw RtlError(std::string("matrix unit: ") + what + " of " + std::to_string(r.count) +
                   " elements is wider than the array");
  const size_t es = static_cast<size_t>(num::dtype_size(r.dtype));
  const uint8_t *row = span(r.addr, r.count * es, false, what);
  std::fill(lanes_.begin(), lanes_.begin() + static_cast<std::ptrdiff_t>(lanes), 0u);
  for (uint32_t i = 0; i < r.count; ++i)
    lanes_[i] = num::load_bits(r.dtype, row, i);
  model_->set_read_data(port, lanes_.data());
}

// A C row leaving the array: it belongs to the oldest mm with rows still to come, at that
// command's next row address (anything else is the unit's bug); then it lands in memory.
void MatrixRtl::write_c_row(const Model::Edge &e) {
  if (e.c_count > static_cast<uint32_t>(cols()))
    throw RtlError("matrix unit: C row write of " + std::to_string(e.c_count) +
                   " elements is wider than the array");
  if (c_head_ == c_owed_.size())
    throw RtlError("matrix unit: a C row write that no command owes");
  const size_t index = c_owed_[c_head_];
  const MxCommand &c = commands_[index];
  const uint64_t expected = c.dst + static_cast<uint64_t>(c_row_) * c.dst_stride;
  if (e.c_addr != static_cast<uint32_t>(expected))
    throw RtlError("matrix unit: " + describe(index) + " wrote C row " + std::to_string(c_row_) +
                   " at " + std::to_string(e.c_addr) + ", not at " + std::to_string(expected));
  uint8_t *row = span(e.c_addr, 4ull * e.c_count, true, "C row write");
  if (on_c_row)
    on_c_row(CRow{index, c_row_, e.c_addr, e.c_count, e.c_data});
  std::memcpy(row, e.c_data, 4ull * e.c_count);
  if (++c_row_ == c.m) {
    c_row_ = 0;
    if (++c_head_ == c_owed_.size()) {
      c_owed_.clear();
      c_head_ = 0;
    }
  }
}

void MatrixRtl::complete(uint8_t tag, uint64_t edge) {
  const int64_t index = in_flight_[tag];
  if (index < 0)
    throw RtlError("matrix unit: completion for tag " + std::to_string(tag) +
                   " that no command in flight carries");
  in_flight_[tag] = -1;
  cycles_[static_cast<size_t>(index)].done = edge;
  finished_[static_cast<size_t>(index)] = 1;
  ++done_count_;
}

void MatrixRtl::step() {
  // Offer the next command unless its tag (index mod 256) is still in flight.
  Model::Command pc{};
  const bool offer = next_ < commands_.size() && in_flight_[next_ % 256] < 0;
  if (offer) {
    const MxCommand &c = commands_[next_];
    pc = Model::Command{c.op,
                        static_cast<uint8_t>(c.mode),
                        static_cast<uint16_t>(c.k),
                        static_cast<uint16_t>(c.n),
                        c.m,
                        c.src,
                        c.src_stride,
                        c.dst,
                        c.dst_stride,
                        static_cast<uint8_t>(next_ % 256)};
  }
  model_->set_command(offer ? &pc : nullptr);
  const bool accepted = model_->settle() && offer;
  model_->rising_edge(edge_);
  ++cycle_;
  if (accepted) {
    cycles_[next_].accepted = cycle_;
    in_flight_[next_ % 256] = static_cast<int64_t>(next_);
    const MxCommand &c = commands_[next_];
    if (c.op != MxOp::Preload && c.m > 0)
      c_owed_.push_back(next_);
    ++next_;
  }

  const Model::Edge &e = edge_;
  if (e.error) {
    const int64_t index = in_flight_[e.error_tag];
    throw RtlError("matrix unit rejected " +
                   (index >= 0 ? describe(static_cast<size_t>(index)) : std::string("a command")) +
                   ": " + error_text(e.error_code));
  }
  // The write lands before the reads issued at the same edge are answered (the unit relies on
  // it: its read-after-write check lets such a read go).
  if (e.c_write)
    write_c_row(e);
  if (e.pre_done)
    complete(e.pre_tag, cycle_);
  if (e.mm_done)
    complete(e.mm_tag, cycle_);
  if (e.weights.valid)
    answer(Model::ReadPort::Weights, e.weights, static_cast<size_t>(cols()));
  if (e.a.valid)
    answer(Model::ReadPort::A, e.a, static_cast<size_t>(rows()));
  if (e.accumulator.valid)
    answer(Model::ReadPort::Accumulator, e.accumulator, static_cast<size_t>(cols()));
  // The banks: a request taken at this edge keeps its port busy for the edges its words need
  // beyond this one.
  w_wait_ -= w_wait_ > 0;
  a_wait_ -= a_wait_ > 0;
  if (banks_.banks > 0) {
    const auto bytes = [](const Model::Read &r) {
      return r.valid ? r.count * static_cast<uint32_t>(num::dtype_size(r.dtype)) : 0u;
    };
    if (e.weights.valid)
      w_wait_ = bank_edges({{e.weights.addr, bytes(e.weights)}}) - 1;
    if (e.a.valid)
      a_wait_ =
          bank_edges({{e.a.addr, bytes(e.a)}, {e.accumulator.addr, bytes(e.accumulator)}}) - 1;
  }
  model_->set_read_ready(w_wait_ == 0, a_wait_ == 0);
  active_edges_ += next_ > done_count_;
}

bool MatrixRtl::would_accept() {
  if (next_ >= commands_.size() || in_flight_[next_ % 256] >= 0)
    return false;
  const MxCommand &c = commands_[next_];
  const Model::Command pc{c.op,
                          static_cast<uint8_t>(c.mode),
                          static_cast<uint16_t>(c.k),
                          static_cast<uint16_t>(c.n),
                          c.m,
                          c.src,
                          c.src_stride,
                          c.dst,
                          c.dst_stride,
                          static_cast<uint8_t>(next_ % 256)};
  model_->set_command(&pc);
  const bool ready = model_->settle();
  model_->set_command(nullptr); // step() offers it again if it is to be taken
  model_->settle();
  return ready;
}

void MatrixRtl::advance_to(uint64_t target) {
  // Once nothing is in flight (every command done: no row in the array, no C row or event to
  // come) the unit's clock can stop: the only activity left is the last preload's weights still
  // crossing the weight skew (column j up to j edges after pre_done), which resumes with the
  // clock and lands before any later row reaches column j (that takes more than j edges). So
  // pausing is exact (IdleGapKeepsWeights, the gap streams); a port's bank wait must be over.
  while (cycle_ < target) {
    if (!busy() && !pending() && w_wait_ == 0 && a_wait_ == 0) {
      cycle_ = target;
      return;
    }
    step();
  }
}

void MatrixRtl::run(uint64_t stall_limit) {
  uint64_t last_progress = cycle_;
  size_t accepted = next_, done = done_count_;
  while (busy()) {
    step();
    if (next_ != accepted || done_count_ != done) {
      accepted = next_;
      done = done_count_;
      last_progress = cycle_;
    } else if (cycle_ - last_progress > stall_limit) {
      size_t oldest = 0;
      while (oldest < finished_.size() && finished_[oldest])
        ++oldest;
      throw RtlError("matrix unit made no progress for " + std::to_string(stall_limit) +
                     " cycles; oldest unfinished: " + describe(oldest));
    }
  }
}

} // namespace tl::npu::rtl
