// llvm-cpu planning pass cpu-stream-stores: non-temporal fused stores (see
// plan_streaming_stores.h).
// SPDX-License-Identifier: Apache-2.0
#include "plan_streaming_stores.h"

#include "plan_attrs.h"

namespace tl::llvm_cpu {
namespace {

/// Bytes of one element of type `k` in memory (i1 as a byte).
int64_t stored_bytes(ir::ScalarKind k) {
  return k == ir::ScalarKind::I1 ? 1 : ir::bit_width(k) / 8;
}

} // namespace

bool plan_streaming_stores(ir::Kernel &kernel) {
  bool changed = plan::clear(kernel, plan::kNontemporal);
  ir::walk(kernel.body(), [&](ir::Operation *store) {
    if (store->opcode() != ir::Opcode::Store || !store->attr(plan::kFuse))
      return;
    const int64_t n = store->operand(store->num_operands() - 1)->type().num_elements();
    const int64_t esize = stored_bytes(store->operand(0)->type().elem());
    // Enough lanes to be worth the copy, whole 64-byte vectors per chunk. Any number of lanes:
    // a contiguous block, or rows of 1 KiB or more, stream their whole lines and store their
    // partial ones plainly; narrower row-strided rows stream only where they are whole lines
    // (fusion.cpp). Such a block that does not stream at run time is stored plainly without
    // the ownership fetches below (cpu.prefetch_after), which streamed stores must not have.
    if (n * esize < plan::kStreamMinBytes || (plan::kStreamChunk * esize) % 64 != 0)
      return;
    store->set_attr(std::string(plan::kNontemporal), true);
    // A late store (a row op's output after its reductions) streams too: fetching its block
    // for ownership (cpu-prefetch-stores) read every output line from DRAM before it was
    // overwritten, a third more traffic (the 0.67 cap of bench/README.md).
    store->remove_attr(plan::kPrefetchAfter);
    changed = true;
  });
  return changed;
}

} // namespace tl::llvm_cpu
