// The tnpu code blob: assembled TNPU programs, one per kernel, with their argument ABI.
// SPDX-License-Identifier: Apache-2.0
//
// Written by the tnpu compiler target (compiler/backends/tnpu), read by the npusim device.
// An executable of target "tnpu" carries, in exe::Executable::code, a `Code` blob: for each kernel
// (in the executable's kernel order) its program and the bindings that say which scalar register
// receives what at the start of each grid program. The device wraps the program per launch in a
// loop over the grid programs its core owns (core c runs linear ids c, c + ncores, ...); see
// vendors/npusim/README.md. Register conventions of a kernel body:
//  - r1..r23 are the body's; bound registers are set before every grid program;
//  - r24, r25, r26 hold program_id 0, 1, 2 (read-only); r27..r31 belong to the wrapper;
//  - `halt` ends the grid program (the wrapper fences all units, then runs the next one);
//  - r31 = i + 1 reports that assert i failed (Kernel::asserts).
#pragma once

#include "tl/format/executable.h"
#include "tl/npu/isa.h"

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace tl::tnpu {

inline constexpr const char *kTarget = "tnpu";
inline constexpr int kPidReg = 24; ///< r24..r26: program ids of axes 0..2
inline constexpr int kFirstWrapperReg = 27;

/// What a bound register receives.
enum class BindKind : uint8_t {
  Address,     ///< HBM address of tensor `param`'s first element (buffer + offset)
  Shape,       ///< extent `dim` of tensor `param`
  StrideBytes, ///< stride `dim` of tensor `param`, in bytes
  ScalarInt,   ///< integer scalar `param`
  ScalarF32,   ///< float scalar `param` as an f32 bit pattern (for v.adds / v.muls)
  Grid,        ///< programs on grid axis `dim`
};

/// Where a launch value goes: into register `reg` before each grid program (patch < 0), or into
/// the immediates of the body's `li` at index `patch` and the `lih` after it (no register held).
struct Binding {
  BindKind kind = BindKind::Address;
  uint8_t reg = 1;
  uint16_t param = 0;
  uint16_t dim = 0;
  int32_t patch = -1;
};

struct Kernel {
  std::vector<Binding> bindings;
  std::vector<npu::isa::Instr> program;
  /// Messages of the kernel's asserts: a failed assert i sets r31 = i + 1 and ends its program;
  /// the device reports the message (see kAssertReg).
  std::vector<std::string> asserts;
  /// The body runs once per core and loops over the core's grid programs itself (linear ids
  /// coreid, coreid + ncores, ..., split into program ids axis 0 first); r24..r26 are then the
  /// body's too.
  bool persistent = false;
};

/// The register a failed assert writes (its index + 1); the device reads it after the run.
inline constexpr int kAssertReg = 31;

/// The blob: magic "TNPUCODE", u32 version 2 (1 is still read), u32 kernel count, per kernel u32
/// binding count, bindings (kind, reg, param, dim, patch), the program file (isa::to_binary) with
/// a u64 length, u32 assert count and the messages (u32 length + bytes), then (version 2) u32
/// flags: bit 0 persistent.
std::vector<uint8_t> serialize_code(const std::vector<Kernel> &kernels);
/// Reads a blob; on failure returns false and sets `error` (lower case, names what is wrong).
bool parse_code(const void *data, size_t size, std::vector<Kernel> &kernels, std::string &error);

/// Assembles a hand-written kernel body; throws std::invalid_argument with `file:line:col`
/// diagnostics when the text does not assemble, or when the body writes a register >= r24.
Kernel assemble_kernel(const std::string &text, const std::string &file,
                       const std::vector<Binding> &bindings,
                       const std::map<std::string, int64_t> &defines = {});

/// Packages kernels (their table entries and code, in the same order) as a "tnpu" executable.
std::vector<uint8_t> package(const std::vector<exe::KernelInfo> &infos,
                             const std::vector<Kernel> &kernels,
                             const std::string &producer = "tl tnpu assembler");

/// Checks that a binding fits the kernel's parameters; "" when it does, else the problem.
std::string check_binding(const Binding &b, const exe::KernelInfo &info);

} // namespace tl::tnpu
