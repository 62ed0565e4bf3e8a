// Shared helpers of the HAL tests: compile .tlir text into an executable for a device's target,
// and a runtime whose only plugins are the ones built here.
// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "tl/compiler/pipeline.h"
#include "tl/format/executable.h"
#include "tl/hal.hpp"
#include "tl/ir/parser.h"
#include "tl/ir/printer.h"
#include "tl/ir/verifier.h"

#include <stdexcept>
#include <string>
#include <vector>

namespace tl::hal::testing {

/// Builds an executable of `target` from Tile IR text through the compiler's pipeline; a target
/// no compiler has gets the text under that name (for mismatch tests).
inline std::vector<uint8_t> compile(const std::string &tlir,
                                    const std::string &target = "llvm-cpu") {
  ir::Diagnostics d;
  auto m = ir::parse(tlir, "test.tlir", d);
  if (!m || !ir::verify(*m, d))
    throw std::runtime_error(d.str());
  if (tl::compile::find_target(target)) {
    std::string error;
    std::vector<uint8_t> blob = tl::compile::build_executable(*m, target, "hal tests", &error);
    if (blob.empty())
      throw std::runtime_error(error);
    return blob;
  }
  exe::Executable e;
  e.target = target;
  e.producer = "hal tests";
  for (auto &k : m->kernels())
    e.kernels.push_back(tl::compile::kernel_info(*k));
  const std::string text = ir::print(*m);
  e.code.assign(text.begin(), text.end());
  return exe::serialize(e);
}

/// vector_add(x, y, out) over n elements, 256 per program; `scale` multiplies y.
inline const char *kVectorAdd = R"(
kernel @vector_add(%x: tensor<?xf32>, %y: tensor<?xf32>, %out: tensor<?xf32>, %scale: f32) {
  %pid = program_id {axis = 0} : i32
  %block = constant {value = 256} : i32
  %offset = mul %pid, %block : i32
  %xt = load %x, %offset : tile<256xf32>
  %yt = load %y, %offset : tile<256xf32>
  %s = splat %scale : tile<256xf32>
  %ys = mul %yt, %s : tile<256xf32>
  %sum = add %xt, %ys : tile<256xf32>
  store %out, %offset, %sum
  return
}

kernel @empty() {
  return
}

kernel @fails(%n: i32) {
  %zero = constant {value = 0} : i32
  %ok = cmp %n, %zero {pred = "lt"} : i1
  assert %ok {message = "n must be negative"}
  return
}

kernel @transpose_copy(%src: tensor<?x?xi32>, %dst: tensor<?x?xi32>) {
  %r = program_id {axis = 0} : i32
  %c = program_id {axis = 1} : i32
  %b = constant {value = 8} : i32
  %r0 = mul %r, %b : i32
  %c0 = mul %c, %b : i32
  %t = load %src, %r0, %c0 : tile<8x8xi32>
  store %dst, %r0, %c0, %t
  return
}
)";

} // namespace tl::hal::testing
