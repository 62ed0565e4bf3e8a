// Blocked layouts: how the elements of a tile are spread over the threads of one program (a CUDA
// block). Each dimension d is cut into `per_thread[d]` consecutive elements of one thread, those
// into `lanes[d]` threads of a warp and `warps[d]` warps (`order` lists the dimensions fastest
// first: lane and warp ids count along it). A tile larger than one such block repeats it; a tile
// smaller wraps around, so several threads hold the same element (replication).
// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace tl::nvptx {

struct Layout {
  std::vector<int64_t> per_thread, lanes, warps, order;
  /// The accumulator (C-fragment) layout of mma.sync m16n8: warps=[wm, wn] tile the M x N
  /// result (warp w at row block w / wn, column block w % wn); inside a warp's block, each
  /// 16 x 8 instruction tile gives lane l rows l/4 and l/4 + 8, columns 2(l%4) and 2(l%4) + 1
  /// (registers c0..c3). per_thread = [1, 2] (two adjacent columns), lanes = [8, 4]. When the
  /// program has more warps than wm x wn, warp w acts as w mod (wm x wn) (replication).
  bool mma = false;
  std::vector<int64_t> instr; // [16, 8] when mma

  int rank() const { return static_cast<int>(order.size()); }
  int num_warps() const; // for mma, the distinct warps wm x wn
  /// "blocked<thread=[1,4], lanes=[2,16], warps=[4,1], order=[1,0]>" or
  /// "mma<v2, warps=[4,2], instr=[16,8]>" (the IR attribute).
  std::string str() const;
  static bool parse(const std::string &text, Layout &out);
  bool operator==(const Layout &) const = default;
};

/// The layout of a tile of `shape` (every dimension a power of two) for `num_warps` warps: up to
/// `vector` consecutive elements per thread along the last dimension (one 16-byte access for
/// 4-byte elements), lanes and then warps along the dimensions from last to first; threads left
/// over replicate the tile.
Layout default_layout(const std::vector<int64_t> &shape, int num_warps, int64_t vector = 4);

/// The layout of an M x N dot result computed on CUDA cores (an fma chain per element): up to
/// 4 x 4 adjacent elements per thread (fewer when the tile has fewer elements per thread), so a
/// thread reads its rows of A and its columns of B at one k as 16-byte vectors; lanes and warps
/// make each warp's and the program's block as square as the tile allows (fewest operand reads
/// per fma); the block repeats over the rest of the tile.
Layout fma_layout(int64_t M, int64_t N, int num_warps);

/// The mma accumulator layout of an M x N tile over `warps_m` x `warps_n` warps (M a multiple of
/// 16 warps_m, N of 8 warps_n).
Layout mma_layout(int64_t warps_m, int64_t warps_n);

/// Element coordinates of every register of every thread: coords(t, r)[d]. Registers per thread
/// and the map are static, so the emitter and the tests both read them from here.
struct ElementMap {
  int64_t threads = 0, registers = 0;
  std::vector<int64_t> shape;
  /// For thread t (0 <= t < threads), register r: the row-major index of its element.
  std::vector<int64_t> linear; // threads * registers
  int64_t at(int64_t thread, int64_t reg) const { return linear[thread * registers + reg]; }
};
ElementMap element_map(const Layout &layout, const std::vector<int64_t> &shape);

/// The per-thread part of a coordinate: coordinate d of register r of thread t is
/// (thread_base(t)[d] + register_offset(r)[d]) mod shape[d]. Blocked layouts are affine in this
/// sense, which is what lets the emitter compute one base per thread and constant offsets.
std::vector<int64_t> register_offset(const Layout &layout, const std::vector<int64_t> &shape,
                                     int64_t reg);
int64_t registers_per_thread(const Layout &layout, const std::vector<int64_t> &shape);
/// Thread (lane, warp)'s base coordinates in an mma layout (zeros for a blocked one).
std::vector<int64_t> mma_base(const Layout &layout, const std::vector<int64_t> &shape, int64_t lane,
                              int64_t warp);

/// Whether `n` is a power of two (tile dimensions must be, as Triton's).
inline bool is_pow2(int64_t n) { return n > 0 && (n & (n - 1)) == 0; }

} // namespace tl::nvptx
