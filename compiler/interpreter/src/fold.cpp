// Constant folding through the interpreter's lane semantics.
// SPDX-License-Identifier: Apache-2.0
#include "tl/interpreter/fold.h"

#include "lanes.h"

namespace tl::interp {

std::optional<ir::Attr> fold_scalar(const ir::Operation &op,
                                    const std::vector<ir::Attr> &operands) {
  if (!(op.flags() & ir::kElementwise) || op.num_results() != 1 ||
      operands.size() != op.num_operands() || !op.result()->type().is_scalar())
    return std::nullopt;
  if (operands.size() > LaneOp::kMaxOperands)
    return std::nullopt;
  std::vector<Lane> lanes(LaneOp::kMaxOperands); // apply() reads every slot (a fuzzer found it)
  for (size_t i = 0; i < operands.size(); ++i) {
    const ir::ScalarKind k = op.operand(i)->type().elem();
    if (auto *b = std::get_if<bool>(&operands[i]))
      lanes[i].i = *b;
    else if (auto *n = std::get_if<int64_t>(&operands[i]))
      ir::is_float(k) ? void(lanes[i].f = round_float(k, double(*n)))
                      : void(lanes[i].i = wrap_int(k, *n));
    else if (auto *d = std::get_if<double>(&operands[i]); d && ir::is_float(k))
      lanes[i].f = round_float(k, *d);
    else
      return std::nullopt;
  }
  try {
    LaneOp lane_op(op, /*fp64_reference=*/false);
    Lane r = lane_op.apply(lanes.data());
    const ir::ScalarKind out = op.result()->type().elem();
    if (out == ir::ScalarKind::I1)
      return ir::Attr(r.i != 0);
    if (ir::is_float(out))
      return ir::Attr(r.f);
    return ir::Attr(r.i);
  } catch (const LaneFault &) {
    return std::nullopt;
  }
}

} // namespace tl::interp
