// HBM (a shared-memory file), buffers, copies and fills of the npusim plugin.
// SPDX-License-Identifier: Apache-2.0
#include "npusim_plugin.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <utility>
#include <vector>

namespace tl::npusim {

// ---- HBM ---------------------------------------------------------------------------------------

Hbm::Hbm(uint64_t size) : size_(size) {
  fd_ = memfd_create("tnpu-hbm", MFD_CLOEXEC);
  if (fd_ < 0 || ftruncate(fd_, static_cast<off_t>(size)) != 0)
    throw std::runtime_error("cannot create the simulated HBM (" + std::to_string(size) +
                             " bytes): " + std::strerror(errno));
  void *p = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_NORESERVE, fd_, 0);
  if (p == MAP_FAILED)
    throw std::runtime_error(std::string("cannot map the simulated HBM: ") + std::strerror(errno));
  base_ = static_cast<char *>(p);
  free_[kHbmReserved] = size - kHbmReserved;
}

Hbm::~Hbm() {
  if (base_)
    munmap(base_, size_);
  if (fd_ >= 0)
    close(fd_);
}

uint64_t Hbm::allocate(uint64_t bytes) {
  if (bytes > size_) // also keeps the rounding below from wrapping around 2^64
    return 0;
  const uint64_t need =
      (std::max<uint64_t>(bytes, 1) + kBufferAlignment - 1) / kBufferAlignment * kBufferAlignment;
  std::lock_guard lock(mu_);
  for (auto it = free_.begin(); it != free_.end(); ++it) {
    if (it->second < need)
      continue;
    const uint64_t address = it->first, left = it->second - need;
    free_.erase(it);
    if (left)
      free_[address + need] = left;
    used_[address] = need;
    return address;
  }
  return 0;
}

void Hbm::free(uint64_t address) {
  std::lock_guard lock(mu_);
  auto u = used_.find(address);
  if (u == used_.end())
    return;
  uint64_t start = address, size = u->second;
  used_.erase(u);
  // Give the whole pages inside the buffer back to the host, then merge with the free
  // neighbours. MADV_REMOVE rounds its length up to a page: the buffer's own range would also
  // zero the start of a live neighbour sharing its last page.
  const uint64_t page = static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
  const uint64_t first = (start + page - 1) / page * page, last = (start + size) / page * page;
  if (first < last)
    madvise(base_ + first, last - first, MADV_REMOVE);
  auto next = free_.lower_bound(start);
  if (next != free_.end() && start + size == next->first) {
    size += next->second;
    next = free_.erase(next);
  }
  if (next != free_.begin()) {
    auto prev = std::prev(next);
    if (prev->first + prev->second == start) {
      prev->second += size;
      return;
    }
  }
  free_[start] = size;
}

namespace {

/// Simulated time of moving `bytes` through HBM `passes` times (a read, a write or both): the
/// HBM latency plus the bytes at the configured bandwidth.
double hbm_ns(const Device &d, uint64_t bytes, int passes) {
  return d.config.hbm.latency * 1e9 + double(bytes) * passes / d.config.hbm.bandwidth * 1e9;
}

/// Simulated time of a host copy: the bytes cross the host link once, streamed into (or out of)
/// HBM as they arrive, so the slower of the two sets the rate after the link's latency.
double link_ns(const Device &d, uint64_t bytes) {
  const double rate = std::min(d.config.host_link.bandwidth, d.config.hbm.bandwidth);
  return (d.config.host_link.latency + double(bytes) / rate) * 1e9;
}

} // namespace

Error Device::enqueue_copy(WorkQueue &stream, char *dst, const char *src, uint64_t size,
                           double ns) {
  stream.enqueue([this, dst, src, size, ns] {
    std::memcpy(dst, src, size);
    advance(ns);
    return Error{};
  });
  return {};
}

// ---- buffers -----------------------------------------------------------------------------------

Error Device::allocate(const tl_buffer_desc &desc, std::unique_ptr<Buffer> &out) {
  const uint64_t address = hbm->allocate(desc.size_bytes);
  if (address == 0)
    return {TL_STATUS_RESOURCE_EXHAUSTED,
            "no room for " + std::to_string(desc.size_bytes) + " bytes in the simulated HBM"};
  out = std::make_unique<Buffer>(hbm.get(), address, desc.size_bytes);
  return {};
}

// ---- copies and fills --------------------------------------------------------------------------

Error Device::copy_to_device(WorkQueue &stream, const void *src, Buffer &dst, uint64_t dst_offset,
                             uint64_t size) {
  return enqueue_copy(stream, hbm->at(dst.address + dst_offset), static_cast<const char *>(src),
                      size, link_ns(*this, size));
}

Error Device::copy_to_host(WorkQueue &stream, Buffer &src, uint64_t src_offset, void *dst,
                           uint64_t size) {
  return enqueue_copy(stream, static_cast<char *>(dst), hbm->at(src.address + src_offset), size,
                      link_ns(*this, size));
}

Error Device::copy_buffer(WorkQueue &stream, Buffer &src, uint64_t src_offset, Buffer &dst,
                          uint64_t dst_offset, uint64_t size) {
  return enqueue_copy(stream, hbm->at(dst.address + dst_offset), hbm->at(src.address + src_offset),
                      size, hbm_ns(*this, size, 2));
}

Error Device::fill(WorkQueue &stream, Buffer &dst, uint64_t offset, uint64_t size,
                   std::vector<uint8_t> pattern) {
  char *begin = hbm->at(dst.address + offset);
  stream.enqueue([this, begin, size, bytes = std::move(pattern)] {
    for (uint64_t i = 0; i < size; i += bytes.size())
      std::memcpy(begin + i, bytes.data(), bytes.size());
    advance(hbm_ns(*this, size, 1));
    return Error{};
  });
  return {};
}

} // namespace tl::npusim
