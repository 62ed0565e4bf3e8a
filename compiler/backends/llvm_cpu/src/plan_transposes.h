// llvm-cpu planning pass cpu-direct-transposes (see plan_attrs.h for the attributes).
// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "tl/ir/ir.h"

namespace tl::llvm_cpu {

/// A load, a transpose of its tile's two wide dimensions (multiples of 8) and a store of the
/// result, linked only through reshapes and with no write to memory between the load and the
/// store (`ops.transpose`'s block): group G marks the load `cpu.strided_view = G`, the transpose
/// `cpu.transpose_at = G` and the store `cpu.transpose_store = G`. The emitter then transposes
/// from tensor to tensor in 8 x 8 register blocks when both blocks are inside their tensors with
/// unit innermost strides and do not overlap (checked at run time); otherwise through stack
/// tiles, as before. Runs first: the store fusion and the views leave the group alone.
bool plan_transposes(ir::Kernel &kernel);

} // namespace tl::llvm_cpu
