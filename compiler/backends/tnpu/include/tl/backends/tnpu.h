// The tnpu target's code blob: assembled TNPU programs, one per kernel, with their argument ABI.
// SPDX-License-Identifier: Apache-2.0
//
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

#include "tl/executable/executable.h"
#include "tl/ir/ir.h"
#include "tl/npu/isa.h"
#include "tl/passes/pass_registry.h"

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

/// What the Tile IR lowering compiles for: the chip's resources per core (sim/configs/*.json;
/// the default is the default chip's).
struct CompileOptions {
  uint64_t sram_bytes = uint64_t(4) << 20;
  uint64_t accumulator_bytes = uint64_t(512) << 10;
  int matrix_rows = 128, matrix_cols = 128; ///< R x C of the matrix unit
  int dma_engines = 2;                      ///< DMA queues used (at most 3)
  int pipeline_depth = 3;                   ///< buffers of a software-pipelined loop's loads (2..4)
  /// A kernel without loops whose loads can be prefetched becomes one program per core that
  /// loops over the core's grid programs itself, pipelined like a loop (Kernel::persistent).
  bool persistent = true;
};

/// The options for the chip config at `path` (sim/configs/*.json): its scratchpad, accumulator,
/// matrix unit and DMA engines. Throws std::runtime_error naming the file and field.
CompileOptions options_from_chip(const std::string &path);

/// The backend's planning passes, in order, to run after the default passes: each records its
/// decisions as `tnpu.*` attributes (tnpu-plan-pipelining: tnpu.buffers, tnpu.prefetch,
/// tnpu.dma_ordered, tnpu.persistent; tnpu-plan-memory: tnpu.addr, tnpu.mem, tnpu.stride,
/// tnpu.overflow, tnpu.sram_peak, tnpu.acc_peak; see README "Pipeline"), which the lowering only
/// reads. Running them again replaces their decisions.
std::vector<passes::PassInfo> planning_passes(const CompileOptions &options);

/// Lowers every kernel of a verified module to a code blob (kernel order kept): scalars in
/// registers (f32 scalar arithmetic on the vector unit), loops, if, assert, load / store and
/// gather / scatter / atomic_add by DMA, elementwise / cast / shape / reduce / scan ops on the
/// vector unit for bf16, f16, f32, i8, i32 and mask tiles, dot on the matrix unit (see
/// compiler/backends/tnpu/README.md for the full table). Anything else (print, f64 / i64 tiles,
/// ...) is an error `file:line:col: error: tnpu: ...` naming the op; the result is "" on success.
/// Commands are ordered by semaphores between the unit queues, tiles placed by liveness,
/// innermost loops (and persistent kernels' grid loops) software-pipelined (see README): the
/// planning passes run on a copy of the module, then the lowering reads their decisions.
std::string compile(const ir::Module &module, const CompileOptions &options,
                    std::vector<uint8_t> &code);

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
