// The generated specializations built into libtl_kernels (embedded.cpp, made by embed.cmake
// from kernels/ops/*.tlir at build time).
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

} // namespace tl::kernels

#endif // TL_KERNELS_EMBEDDED_H_
