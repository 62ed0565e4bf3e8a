// The matrix unit's pipeline timing (see matrix_timing.h).
// SPDX-License-Identifier: Apache-2.0
#include "matrix_timing.h"

#include "memory.h"

#include <algorithm>

namespace tl::npu::model {

namespace {

// The largest j < count whose row [base + j * stride, + bytes) overlaps [lo, hi), or -1.
int64_t last_overlap(uint64_t base, uint64_t stride, uint64_t bytes, uint64_t count, uint64_t lo,
                     uint64_t hi) {
  if (count == 0 || hi <= base || lo >= hi)
    return -1;
  const uint64_t j = stride == 0 ? count - 1 : std::min(count - 1, (hi - base - 1) / stride);
  return base + j * stride + bytes > lo ? static_cast<int64_t>(j) : -1;
}

} // namespace

uint64_t MatrixTiming::clear_after(uint64_t lo, uint64_t hi) const {
  uint64_t edge = 0;
  for (const Flight &f : flights_) {
    const int64_t j = last_overlap(f.dst, f.stride, f.bytes, f.write.size(), lo, hi);
    if (j >= 0)
      edge = std::max(edge, f.write[static_cast<size_t>(j)]);
  }
  return edge;
}

uint64_t MatrixTiming::bank_edges(std::initializer_list<std::pair<uint64_t, uint64_t>> rows) const {
  if (banks_.banks == 0)
    return 1;
  BankCounter counter(static_cast<int>(banks_.banks), static_cast<int>(banks_.width));
  for (const auto &[lo, bytes] : rows)
    if (lo < banks_.end)
      counter.touch(lo, bytes);
  return std::max<uint64_t>(1, counter.busiest());
}

MxTimes MatrixTiming::command(const MxTimingCommand &c, uint64_t issue) {
  // Rows written by the time this command is offered can no longer hold anything back.
  while (!flights_.empty() && flights_.front().write.back() <= issue)
    flights_.pop_front();
  MxTimes t;
  const uint64_t latency = rows_ + cols_ + 1; // row slot -> its C row written
  if (c.preload) {
    t.accept = std::max({issue + 1, last_accept_ + 1, ld_free_});
    uint64_t edge = t.accept;
    for (uint64_t r = 0; r < rows_; ++r) { // rows k.. are written without a read
      edge += 1;
      if (r < c.k) {
        const uint64_t lo = c.src + r * c.src_stride, bytes = c.n * c.elem_bytes;
        edge = std::max({edge, clear_after(lo, lo + bytes), w_ready_});
        w_ready_ = edge + bank_edges({{lo, bytes}});
      }
    }
    ld_free_ = edge;
    t.done = edge + 1;
  } else {
    const auto p = static_cast<uint64_t>(c.passes);
    t.accept = std::max({issue + 1, last_accept_ + 1, st_free_, ld_free_});
    if (c.m == 0) { // one marker slot, no row
      st_free_ = t.accept + 1;
      t.done = t.accept + 1 + latency;
    } else {
      Flight f{c.dst, c.dst_stride, 4 * c.n, {}};
      f.write.reserve(c.m);
      uint64_t slot = 0;
      for (uint64_t i = 0; i < c.m; ++i) {
        slot = i == 0 ? t.accept + 1 : slot + p;
        const uint64_t a = c.src + i * c.src_stride, cr = c.dst + i * c.dst_stride;
        uint64_t clear = clear_after(a, a + c.k * c.elem_bytes);
        if (c.accumulate)
          clear = std::max(clear, clear_after(cr, cr + 4 * c.n));
        // This command's own earlier rows are in flight too.
        const auto own = [&](uint64_t lo, uint64_t hi) {
          const int64_t j = last_overlap(f.dst, f.stride, f.bytes, f.write.size(), lo, hi);
          return j >= 0 ? f.write[static_cast<size_t>(j)] : 0;
        };
        clear = std::max(clear, own(a, a + c.k * c.elem_bytes));
        if (c.accumulate)
          clear = std::max(clear, own(cr, cr + 4 * c.n));
        slot = std::max({slot, clear, a_ready_});
        a_ready_ = slot + bank_edges({{a, c.k * c.elem_bytes}, {cr, c.accumulate ? 4 * c.n : 0}});
        f.write.push_back(slot + latency);
      }
      st_free_ = slot + p - 1;
      t.done = f.write.back();
      flights_.push_back(std::move(f));
    }
  }
  last_accept_ = t.accept;
  done_ = std::max(done_, t.done);
  return t;
}

} // namespace tl::npu::model
