// Local memory, HBM store, channel calendar and SRAM bank counting (see memory.h).
// SPDX-License-Identifier: Apache-2.0
#include "memory.h"

#include "tl/npu/isa.h"

#include <algorithm>
#include <cstring>
#include <sstream>

namespace tl::npu::model {

LocalMemory::LocalMemory(uint64_t sram_size, uint64_t acc_size)
    : sram_(sram_size), acc_(acc_size) {}

bool LocalMemory::is_acc(uint64_t address) { return address >= isa::kAccBase; }

uint8_t *LocalMemory::span(uint64_t address, uint64_t bytes, const char *what) {
  const uint8_t *p = static_cast<const LocalMemory *>(this)->span(address, bytes, what);
  return const_cast<uint8_t *>(p);
}

const uint8_t *LocalMemory::span(uint64_t address, uint64_t bytes, const char *what) const {
  const bool acc = is_acc(address);
  const std::vector<uint8_t> &region = acc ? acc_ : sram_;
  const uint64_t offset = acc ? address - isa::kAccBase : address;
  if (offset > region.size() || bytes > region.size() - offset) {
    std::ostringstream s;
    s << what << ": local range [0x" << std::hex << address << ", 0x" << address + bytes
      << ") is outside the " << (acc ? "accumulator" : "SRAM") << " (" << std::dec << region.size()
      << " bytes)";
    throw ProgramError(s.str());
  }
  if (recording_)
    touched_.emplace_back(address, bytes);
  return region.data() + offset;
}

void LocalMemory::track_stale() {
  stale_sram_.assign(sram_.size() + 1, 0); // + 1: non-empty even for a zero-sized region
  stale_acc_.assign(acc_.size() + 1, 0);
}

void LocalMemory::set_stale(uint64_t address, uint64_t bytes, bool stale) {
  if (!tracking())
    return;
  std::vector<uint8_t> &flags = is_acc(address) ? stale_acc_ : stale_sram_;
  const uint64_t offset = is_acc(address) ? address - isa::kAccBase : address;
  std::fill_n(flags.begin() + static_cast<std::ptrdiff_t>(offset), bytes, stale ? 1 : 0);
}

bool LocalMemory::any_stale(uint64_t address, uint64_t bytes) const {
  if (!tracking())
    return false;
  const std::vector<uint8_t> &flags = is_acc(address) ? stale_acc_ : stale_sram_;
  const uint64_t offset = is_acc(address) ? address - isa::kAccBase : address;
  const auto first = flags.begin() + static_cast<std::ptrdiff_t>(offset);
  return std::find(first, first + static_cast<std::ptrdiff_t>(bytes), 1) !=
         first + static_cast<std::ptrdiff_t>(bytes);
}

void LocalMemory::begin_command() {
  touched_.clear();
  recording_ = tracking();
}

void LocalMemory::end_command() {
  recording_ = false;
  bool stale = false;
  for (const auto &[a, n] : touched_)
    stale = stale || any_stale(a, n);
  if (stale)
    for (const auto &[a, n] : touched_)
      set_stale(a, n, true);
  touched_.clear();
}

HbmStore::HbmStore(uint64_t size) : size_(size), pages_((size >> kPageBits) + 1) {}

void HbmStore::check(uint64_t address, uint64_t bytes) const {
  if (address > size_ || bytes > size_ - address) {
    std::ostringstream s;
    s << "HBM range [0x" << std::hex << address << ", 0x" << address + bytes << ") is outside HBM ("
      << std::dec << size_ << " bytes)";
    throw std::out_of_range(s.str());
  }
}

void HbmStore::read(uint64_t address, void *out, uint64_t bytes) const {
  check(address, bytes);
  auto *dst = static_cast<uint8_t *>(out);
  while (bytes > 0) {
    uint64_t page = address >> kPageBits, off = address & ((1u << kPageBits) - 1);
    uint64_t n = std::min(bytes, (uint64_t{1} << kPageBits) - off);
    if (pages_[page])
      std::memcpy(dst, pages_[page].get() + off, n);
    else
      std::memset(dst, 0, n);
    dst += n;
    address += n;
    bytes -= n;
  }
}

void HbmStore::write(uint64_t address, const void *in, uint64_t bytes) {
  check(address, bytes);
  auto *src = static_cast<const uint8_t *>(in);
  while (bytes > 0) {
    uint64_t page = address >> kPageBits, off = address & ((1u << kPageBits) - 1);
    uint64_t n = std::min(bytes, (uint64_t{1} << kPageBits) - off);
    if (!pages_[page]) {
      pages_[page].reset(new uint8_t[uint64_t{1} << kPageBits]);
      std::memset(pages_[page].get(), 0, uint64_t{1} << kPageBits);
    }
    std::memcpy(pages_[page].get() + off, src, n);
    src += n;
    address += n;
    bytes -= n;
  }
}

uint64_t ChannelCalendar::reserve(uint64_t now, uint64_t arrival, uint64_t duration) {
  while (head_ < busy_.size() && busy_[head_].second <= now)
    ++head_;
  if (head_ > 64 && head_ * 2 > busy_.size()) { // compact now and then
    busy_.erase(busy_.begin(), busy_.begin() + static_cast<std::ptrdiff_t>(head_));
    head_ = 0;
  }
  // First interval that ends after the arrival: every earlier one is irrelevant.
  size_t i = static_cast<size_t>(
      std::upper_bound(busy_.begin() + static_cast<std::ptrdiff_t>(head_), busy_.end(), arrival,
                       [](uint64_t t, const auto &iv) { return t < iv.second; }) -
      busy_.begin());
  uint64_t cur = arrival, remaining = duration;
  std::vector<std::pair<uint64_t, uint64_t>> pieces;
  while (remaining > 0) {
    const uint64_t gap_end = i < busy_.size() ? busy_[i].first : UINT64_MAX;
    if (cur < gap_end) {
      const uint64_t take = std::min(remaining, gap_end - cur);
      pieces.emplace_back(cur, cur + take);
      cur += take;
      remaining -= take;
      if (remaining == 0)
        break;
    }
    cur = std::max(cur, busy_[i].second);
    ++i;
  }
  for (const auto &p : pieces)
    insert(p.first, p.second);
  return cur;
}

void ChannelCalendar::insert(uint64_t start, uint64_t end) {
  auto it = std::lower_bound(busy_.begin() + static_cast<std::ptrdiff_t>(head_), busy_.end(), start,
                             [](const auto &iv, uint64_t t) { return iv.first < t; });
  const bool join_prev =
      it != busy_.begin() + static_cast<std::ptrdiff_t>(head_) && std::prev(it)->second == start;
  const bool join_next = it != busy_.end() && it->first == end;
  if (join_prev && join_next) {
    std::prev(it)->second = it->second;
    busy_.erase(it);
  } else if (join_prev) {
    std::prev(it)->second = end;
  } else if (join_next) {
    it->first = start;
  } else {
    busy_.insert(it, {start, end});
  }
}

void BankCounter::touch(uint64_t address, uint64_t bytes) {
  if (bytes == 0)
    return;
  const uint64_t first = address / width_, last = (address + bytes - 1) / width_;
  const uint64_t banks = counts_.size();
  const uint64_t words = last - first + 1;
  const uint64_t full = words / banks, rest = words % banks;
  if (full > 0)
    for (uint64_t &c : counts_)
      c += full;
  for (uint64_t w = 0; w < rest; ++w)
    ++counts_[(first + w) % banks];
}

uint64_t BankCounter::busiest() const {
  return counts_.empty() ? 0 : *std::max_element(counts_.begin(), counts_.end());
}

} // namespace tl::npu::model
