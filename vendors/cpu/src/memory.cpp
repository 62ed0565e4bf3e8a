// Buffers, copies and fills of the cpu plugin (large ones on the device's workers).
// SPDX-License-Identifier: Apache-2.0
#include "cpu_plugin.h"

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <sys/mman.h>
#include <vector>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace tl::cpu {
namespace {

/// Below this a copy or fill runs on the stream's own thread; above it on the device's workers.
constexpr uint64_t kParallelBytes = uint64_t(4) << 20;
constexpr uint64_t kChunkBytes = uint64_t(1) << 20;
/// Copies at least this large bypass the caches (streaming stores): more than a Zen 3 L3, they
/// would evict it anyway, and without the read of each destination line before it is written
/// (write-allocate) a copy moves 2 bytes per byte copied instead of 3: 1.4-1.8x memcpy's rate
/// on the development VM (conformance/README.md, "Session 14"). Smaller copies keep their
/// destination in the caches for the next kernel.
constexpr uint64_t kStreamingCopyBytes = uint64_t(32) << 20;

char *at(Device::Buffer &buffer, uint64_t offset) {
  return static_cast<char *>(buffer.data) + offset;
}

/// Fills [dst, dst + size) with `pattern` by writing it once and doubling the filled prefix.
void fill_serial(char *dst, uint64_t size, const uint8_t *pattern, uint32_t pattern_size) {
  if (pattern_size == 1) {
    std::memset(dst, pattern[0], size);
    return;
  }
  uint64_t filled = std::min<uint64_t>(pattern_size, size);
  std::memcpy(dst, pattern, filled);
  while (filled < size) {
    uint64_t n = std::min(filled, size - filled);
    std::memcpy(dst + filled, dst, n);
    filled += n;
  }
}

/// Chunks start at multiples of the pattern size, so each one begins with the pattern's byte 0.
void fill_pattern(tbb::task_arena &arena, char *dst, uint64_t size, const uint8_t *pattern,
                  uint32_t pattern_size) {
  if (size < kParallelBytes) {
    fill_serial(dst, size, pattern, pattern_size);
    return;
  }
  uint64_t chunk = kChunkBytes - kChunkBytes % pattern_size;
  uint64_t chunks = (size + chunk - 1) / chunk;
  arena.execute([&] {
    tbb::parallel_for(uint64_t(0), chunks, [&](uint64_t c) {
      uint64_t begin = c * chunk;
      fill_serial(dst + begin, std::min(chunk, size - begin), pattern, pattern_size);
    });
  });
}

#if defined(__x86_64__)
/// 1 KiB a step: 32 unaligned loads, then 32 aligned streaming stores (the head up to the
/// destination's first line and the tail are plain copies). DRAM then sees reads and writes in
/// 1 KiB runs; two lines a step alternated them every 128 bytes (Zen 4: h2d 0.83 of the kit's
/// 1 KiB-run C copy; session 17).
__attribute__((target("avx"))) void streaming_copy_avx(char *dst, const char *src, uint64_t size) {
  constexpr int kVectors = 32;
  constexpr uint64_t kStep = kVectors * 32;
  const uint64_t head =
      std::min<uint64_t>((64 - (reinterpret_cast<uintptr_t>(dst) & 63)) & 63, size);
  std::memcpy(dst, src, head);
  dst += head, src += head, size -= head;
  for (; size >= kStep; size -= kStep, dst += kStep, src += kStep) {
    __m256i v[kVectors];
#pragma GCC unroll 32
    for (int i = 0; i < kVectors; ++i)
      v[i] = _mm256_loadu_si256(reinterpret_cast<const __m256i *>(src + 32 * i));
#pragma GCC unroll 32
    for (int i = 0; i < kVectors; ++i)
      _mm256_stream_si256(reinterpret_cast<__m256i *>(dst + 32 * i), v[i]);
  }
  for (; size >= 32; size -= 32, dst += 32, src += 32)
    _mm256_stream_si256(reinterpret_cast<__m256i *>(dst),
                        _mm256_loadu_si256(reinterpret_cast<const __m256i *>(src)));
  std::memcpy(dst, src, size);
}
#endif

/// One piece of a large copy with streaming stores where the CPU has AVX (else memcpy); fenced,
/// so that the piece's stores are visible before the copy is reported done.
void streaming_copy(char *dst, const char *src, uint64_t size) {
#if defined(__x86_64__)
  if (__builtin_cpu_supports("avx")) {
    streaming_copy_avx(dst, src, size);
    _mm_sfence();
    return;
  }
#endif
  std::memcpy(dst, src, size);
}

} // namespace

void parallel_copy(tbb::task_arena &arena, void *dst, const void *src, uint64_t size) {
  if (size < kParallelBytes) {
    std::memcpy(dst, src, size);
    return;
  }
  auto *d = static_cast<char *>(dst);
  auto *s = static_cast<const char *>(src);
  const bool streaming = size >= kStreamingCopyBytes;
  arena.execute([&] {
    tbb::parallel_for(tbb::blocked_range<uint64_t>(0, size, kChunkBytes),
                      [&](const tbb::blocked_range<uint64_t> &r) {
                        if (streaming)
                          streaming_copy(d + r.begin(), s + r.begin(), r.size());
                        else
                          std::memcpy(d + r.begin(), s + r.begin(), r.size());
                      });
  });
}

Error Device::enqueue_copy(WorkQueue &stream, void *dst, const void *src, uint64_t size) {
  tbb::task_arena *workers = arena.get();
  // memmove semantics are not promised; overlapping ranges of one buffer are the caller's bug.
  stream.enqueue([=] {
    parallel_copy(*workers, dst, src, size);
    return Error{};
  });
  return {};
}

// ---- buffers -----------------------------------------------------------------------------------

Error Device::allocate(const tl_buffer_desc &desc, std::unique_ptr<Buffer> &out) {
  // aligned_alloc wants a multiple of the alignment. Contents start uninitialized.
  uint64_t size = std::max<uint64_t>(desc.size_bytes, 1);
  uint64_t rounded = (size + kBufferAlignment - 1) / kBufferAlignment * kBufferAlignment;
  if (rounded < size)
    return {TL_STATUS_RESOURCE_EXHAUSTED, "buffer size overflows"};
  auto buffer = std::make_unique<Buffer>();
  if (rounded >= kHugePageMinBytes) {
    // Large buffers on 2 MiB pages where the kernel allows it (transparent huge pages, "madvise"
    // mode): streaming kernels then cross no 4 KiB page every 64 lines, where the hardware
    // prefetchers stop and a TLB walk begins (numpy and PyTorch advise so too). At most 2 MiB
    // of the last page is unused.
    const uint64_t huge = (rounded + kHugePage - 1) / kHugePage * kHugePage;
    buffer->data = std::aligned_alloc(kHugePage, huge);
    if (buffer->data)
      madvise(buffer->data, huge, MADV_HUGEPAGE); // advice only: failure leaves 4 KiB pages
  } else {
    buffer->data = std::aligned_alloc(kBufferAlignment, rounded);
  }
  if (!buffer->data)
    return {TL_STATUS_RESOURCE_EXHAUSTED,
            "cannot allocate " + std::to_string(desc.size_bytes) + " bytes of host memory"};
  buffer->size = desc.size_bytes;
  out = std::move(buffer);
  return {};
}

Error Device::import(const tl_buffer_import_desc &desc, std::unique_ptr<Buffer> &out) {
  // The runtime has checked the pointer, size and flags; any host pointer is device memory here.
  auto buffer = std::make_unique<Buffer>();
  buffer->data = desc.pointer;
  buffer->size = desc.size_bytes;
  buffer->owned = false;
  out = std::move(buffer);
  return {};
}

// ---- copies and fills --------------------------------------------------------------------------

Error Device::copy_to_device(WorkQueue &stream, const void *src, Buffer &dst, uint64_t dst_offset,
                             uint64_t size) {
  return enqueue_copy(stream, at(dst, dst_offset), src, size);
}

Error Device::copy_to_host(WorkQueue &stream, Buffer &src, uint64_t src_offset, void *dst,
                           uint64_t size) {
  return enqueue_copy(stream, dst, at(src, src_offset), size);
}

Error Device::copy_buffer(WorkQueue &stream, Buffer &src, uint64_t src_offset, Buffer &dst,
                          uint64_t dst_offset, uint64_t size) {
  return enqueue_copy(stream, at(dst, dst_offset), at(src, src_offset), size);
}

Error Device::fill(WorkQueue &stream, Buffer &dst, uint64_t offset, uint64_t size,
                   std::vector<uint8_t> pattern) {
  char *begin = at(dst, offset);
  tbb::task_arena *workers = arena.get();
  stream.enqueue([=, bytes = std::move(pattern)] {
    fill_pattern(*workers, begin, size, bytes.data(), static_cast<uint32_t>(bytes.size()));
    return Error{};
  });
  return {};
}

} // namespace tl::cpu
