// The nvptx code blob: PTX and/or cubin images and each kernel's launch metadata.
// SPDX-License-Identifier: Apache-2.0
//
// Written by the nvptx compiler target (compiler/backends/nvptx), read by the cuda device
// (vendors/cuda). An executable of target "nvptx" carries a `Code` blob in exe::Executable::code.
// Launch convention: TL program ids (axes 0, 1, 2) are blockIdx.x, .y, .z; the grid is the TL
// grid; each program is one CUDA block of `block` threads. The kernel's CUDA parameters are the
// `params` slots in order, each filled from the launch's arguments (see Slot).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace tl::nvptx {

inline constexpr const char *kTarget = "nvptx";
inline constexpr uint32_t kVersion = 2; ///< 2: Slot::Kind::GridBase

/// The architecture to build for to run on exactly a GPU of compute capability `sm` (major * 10 +
/// minor): "sm_90a" for 90 (wgmma: Hopper's arch-specific PTX), "sm_<sm>" for 80, 86, 87, 89; ""
/// where TL's nvptx target builds nothing exact (before sm_80: no cp.async or bf16 mma; past
/// sm_90a: not in LLVM 19), so that a JIT falls back to the target's default images.
std::string exact_arch(uint32_t sm);

/// One loadable image of the whole module.
struct Image {
  enum class Kind : uint8_t { Ptx = 0, Cubin = 1 };
  Kind kind = Kind::Ptx;
  /// Compute capability as major * 10 + minor (80, 90); `arch_specific` marks sm_90a-style
  /// targets, which run only on exactly that capability.
  uint32_t sm = 80;
  bool arch_specific = false;
  std::vector<uint8_t> bytes; ///< PTX text (without a trailing NUL) or an ELF cubin
};

/// Where a CUDA kernel parameter's value comes from.
struct Slot {
  enum class Kind : uint8_t {
    Pointer = 0, ///< device address of tensor `arg`'s first element (buffer + offset); 8 bytes
    Shape = 1,   ///< extent `dim` of tensor `arg`; `size` 4 (i32) or 8 (i64)
    Stride = 2,  ///< stride `dim` of tensor `arg`, in elements; `size` 4 or 8
    Scalar = 3,  ///< scalar `arg` in its dtype's bits; `size` = the dtype's size (i1: 1 byte)
    Grid = 4,    ///< programs on grid axis `dim`; `size` 4 or 8
    /// address of a zeroed device u32 (8 bytes): a failing assert i stores i + 1 there and ends
    /// its program (no trap: a trap would poison the CUDA context); the device then reports
    /// Kernel::asserts[i] as the launch's failure at the next synchronize
    Status = 5,
    /// the first program of this launch on grid axis `dim` (1 or 2; `size` 4): a grid past
    /// the device's programs on that axis runs as several launches (version 2)
    GridBase = 6,
  };
  Kind kind = Kind::Pointer;
  uint16_t arg = 0;
  uint8_t dim = 0;
  uint8_t size = 8;
};

struct Kernel {
  std::string name;                  ///< the PTX entry symbol (.entry)
  uint32_t block[3] = {1, 1, 1};     ///< threads per program (block), x y z
  uint32_t static_shared_bytes = 0;  ///< informational: declared .shared in the code
  uint32_t dynamic_shared_bytes = 0; ///< passed as cuLaunchKernel's sharedMemBytes
  std::vector<Slot> params;
  std::vector<std::string> asserts; ///< messages of the kernel's asserts (see Slot::Status)
};

struct Code {
  std::vector<Image> images;
  std::vector<Kernel> kernels; ///< in the executable's kernel order
};

/// The blob, little-endian: magic "TLNVPTX1", u32 version, u32 image count, per image u8 kind,
/// u8 arch_specific, u16 reserved (0), u32 sm, u64 length and the bytes; u32 kernel count, per
/// kernel u32 name length + name, u32 block[3], u32 static shared, u32 dynamic shared, u32 param
/// count and per param u8 kind, u8 dim, u16 arg, u8 size, u8[3] reserved (0), then u32 assert
/// count and per assert u32 length + message.
std::vector<uint8_t> serialize_code(const Code &code);
/// Reads a blob; on failure returns false and sets `error` (lower case, names what is wrong and
/// where). A newer version is refused by number.
bool parse_code(const void *data, size_t size, Code &code, std::string &error);

/// The image a device of capability `sm` should load, or null: a cubin built for exactly `sm`
/// (cubins are tied to one capability), else the PTX of the highest capability <= `sm` (an
/// arch-specific PTX only for exactly `sm`), which the driver JIT-compiles.
const Image *select_image(const Code &code, uint32_t sm);

} // namespace tl::nvptx
