// The tnpu backend: Tile IR -> TNPU programs (the code blob of tl/format/tnpu_code.h).
// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "tl/format/tnpu_code.h"
#include "tl/ir/ir.h"
#include "tl/passes/pass_registry.h"

#include <cstdint>
#include <string>
#include <vector>

namespace tl::tnpu {

/// What the Tile IR lowering compiles for: the chip's resources per core (sim/configs/*.json;
/// the default is the default chip's).
struct CompileOptions {
  uint64_t sram_bytes = uint64_t(4) << 20;
  uint64_t accumulator_bytes = uint64_t(512) << 10;
  int matrix_rows = 128, matrix_cols = 128; ///< R x C of the matrix unit
  int dma_engines = 2;                      ///< DMA queues used (at most 3)
  int vector_lanes = 64;  ///< W elements per vector-unit cycle (the reductions' costs)
  int vector_depth = 8;   ///< the vector unit's pipeline depth: cycles every command adds
  int pipeline_depth = 3; ///< buffers of a software-pipelined loop's loads (2..4)
  /// A kernel without loops whose loads can be prefetched becomes one program per core that
  /// loops over the core's grid programs itself, pipelined like a loop (Kernel::persistent).
  bool persistent = true;
  /// The module already carries planning_passes()' decisions for these options (the compiler's
  /// pipeline ran them): lower it as it is instead of planning a copy first.
  bool planned = false;
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

} // namespace tl::tnpu
