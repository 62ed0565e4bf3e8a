// The llvm-cpu planning pipeline: the backend's decisions, in order, as Tile IR passes that
// record them as `cpu.*` attributes (plan_attrs.h); the emitter (codegen*.cpp, fusion.cpp) only
// reads them. Runs after the default passes; `tlc opt --target llvm-cpu --print-after-all`
// shows the IR after each step.
// SPDX-License-Identifier: Apache-2.0
#include "tl/backends/llvm_cpu.h"

#include "plan_exp_ranges.h"
#include "plan_inlining.h"
#include "plan_paired_stores.h"
#include "plan_prefetch.h"
#include "plan_prefetch_next.h"
#include "plan_prefetch_rows.h"
#include "plan_reduce_fusion.h"
#include "plan_store_fusion.h"
#include "plan_streaming_stores.h"
#include "plan_transposes.h"
#include "plan_views.h"

namespace tl::llvm_cpu {
namespace {

// Objects and the JIT target the host CPU (jit.cpp), so the target is x86 when this process is.
#if defined(__x86_64__) || defined(__i386__) || defined(_M_X64)
constexpr bool kTargetIsX86 = true;
#else
constexpr bool kTargetIsX86 = false;
#endif

} // namespace

// The options pick no pass today: the CPU and features shape the emitted code (vector width,
// AVX-512 helpers), not these decisions; the architecture is the host's.
std::vector<passes::PassInfo> planning_passes(const CompileOptions &) {
  std::vector<passes::PassInfo> p;
  // 0. A loaded block transposed and stored goes from tensor to tensor (no stack tiles).
  p.push_back({"cpu-direct-transposes", "transpose loaded blocks straight into their store",
               plan_transposes});
  // 1. Stores of elementwise trees over loads run as one loop from tensor to tensor.
  p.push_back({"cpu-fuse-stores", "fuse elementwise trees and their loads into their store",
               plan_store_fusion});
  // 2. Splats and single-use elementwise ops are computed inside their users' lane loops.
  p.push_back({"cpu-inline-lanes", "compute splats and single-use elementwise ops per lane",
               plan_inlining});
  // 3. Full reductions of a materialized elementwise result accumulate in its loop.
  p.push_back({"cpu-fuse-reduces", "accumulate full reductions in their producer's loop",
               plan_reduce_fusion});
  // 4. Loads whose users all run before any write read the tensor in place (where they are
  //    evaluated: needs 1-3).
  p.push_back({"cpu-plan-views", "let loads read their tensor in place", plan_views});
  // 5. Later stores of a view's block are fetched for writing during its lane loops.
  p.push_back(
      {"cpu-prefetch-stores", "fetch stores' blocks for writing after a view", plan_prefetch});
  // 6. A k loop's loads read by its dot are fetched one trip ahead, during the dot.
  p.push_back(
      {"cpu-prefetch-next", "fetch a loop's next tiles during its dot", plan_prefetch_next});
  // 6b. Rows at indices a loop reads from memory are fetched a few trips ahead.
  p.push_back({"cpu-prefetch-rows", "fetch rows at indices read from memory a few trips ahead",
               plan_prefetch_rows});
  // 7. Large fused stores not fetched for ownership stream with non-temporal stores (x86).
  if (kTargetIsX86)
    p.push_back({"cpu-stream-stores", "write large fused stores with non-temporal stores",
                 plan_streaming_stores});
  // 8. Exps of a value minus its maximum (softmax) skip their overflow clamp and subnormal scaling.
  p.push_back({"cpu-exp-ranges", "mark exps whose argument is at most 0", plan_exp_ranges});
  // 9. Consecutive fused stores of one tile shape run as one loop (after 7: the same streaming).
  p.push_back({"cpu-pair-stores", "run consecutive fused stores of one tile as one loop",
               plan_paired_stores});
  return p;
}

} // namespace tl::llvm_cpu
