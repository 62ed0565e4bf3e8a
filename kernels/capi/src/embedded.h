// The generated specializations built into libtl_kernels (embedded.cpp, made by embed.cmake
// from kernels/ops/*.tlir and tuning.tsv at build time).
// SPDX-License-Identifier: Apache-2.0
#ifndef TL_KERNELS_EMBEDDED_H_
#define TL_KERNELS_EMBEDDED_H_

namespace tl::kernels {

struct EmbeddedOp {
  const char *name; // the file's name without .tlir: "add_f32"
  const char *text; // its Tile IR text
};

extern const EmbeddedOp kEmbeddedOps[];
extern const unsigned kEmbeddedOpCount;
/// kernels/ops/tuning.tsv: tl.ops' device choices, "name\ttarget\tvalue" rows (generate.py).
extern const char *const kEmbeddedTuning;

} // namespace tl::kernels

#endif // TL_KERNELS_EMBEDDED_H_
