// The tnpu backend: Tile IR -> TNPU programs (the code blob of tl/format/tnpu_code.h).
// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "tl/format/tnpu_code.h"
#include "tl/ir/ir.h"

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
  int pipeline_depth = 3;                   ///< buffers of a software-pipelined loop's loads (2..4)
  /// A kernel without loops whose loads can be prefetched becomes one program per core that
  /// loops over the core's grid programs itself, pipelined like a loop (Kernel::persistent).
  bool persistent = true;
};

/// Lowers every kernel of a verified module to a code blob (kernel order kept): scalars in
/// registers (f32 scalar arithmetic on the vector unit), loops, if, assert, load / store and
/// gather / scatter / atomic_add by DMA, elementwise / cast / shape / reduce / scan ops on the
/// vector unit for bf16, f16, f32, i8, i32 and mask tiles, dot on the matrix unit (see
/// compiler/backends/tnpu/README.md for the full table). Anything else (print, f64 / i64 tiles,
/// ...) is an error `file:line:col: error: tnpu: ...` naming the op; the result is "" on success.
/// Commands are ordered by semaphores between the unit queues, tiles placed by liveness,
/// innermost loops (and persistent kernels' grid loops) software-pipelined (see README).
std::string compile(const ir::Module &module, const CompileOptions &options,
                    std::vector<uint8_t> &code);

} // namespace tl::tnpu
