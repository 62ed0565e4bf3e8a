// Lowering of one Tile IR kernel to NVVM IR (LLVM IR for nvptx64-nvidia-cuda). A program is one
// CUDA block of 32 * num_warps threads; every tile value lives in registers, spread over the
// threads by its layout (layout.h, recorded as `nvptx.layout` by the planning pass); scalars are
// uniform: every thread holds them. Where an op's result wants its elements on other threads
// (broadcast, transpose, reduce, scan, dot operands) the tile goes through shared memory.
// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "layout.h"
#include "tl/format/nvptx_code.h"
#include "tl/ir/ir.h"

#include "folder.h"
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Module.h>

#include <stdexcept>
#include <unordered_map>
#include <unordered_set>

namespace tl::nvptx {

/// Shared memory a block may use on H100/H200 (opt-in, sm_90).
constexpr uint64_t kMaxShared = 227 * 1024;

/// An op the backend cannot lower; the message names the op and its location.
struct LoweringError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// Run-time errors of a kernel (an unmasked gather lane outside its tensor, a failed assert, a
/// non-positive loop step, an integer division by zero) go to the launch's status word (the
/// Status parameter of format/nvptx): the first error site's index + 1, whose message the device
/// reports at the next synchronize. The program goes on with defined values (no trap: a trap
/// poisons the CUDA context; no early exit: the other threads may wait at a barrier).

struct CompileOptions;
/// emit_ptx (tl/backends/nvptx.h) that also returns each kernel's launch metadata.
std::string emit_ptx_with_info(const ir::Module &module, const CompileOptions &options,
                               const std::string &arch, std::vector<Kernel> *infos,
                               std::string *error);

/// Every builder folds constants and integer identities as it goes (folder.h).
using Builder = llvm::IRBuilder<IdentityFolder>;

class KernelEmitter {
public:
  /// `arch` (sm_80, sm_90a, ...) picks the instructions: wgmma on sm_90a.
  KernelEmitter(const ir::Kernel &kernel, llvm::Module &module, int num_warps, std::string arch);
  Kernel run();

private:
  using Regs = std::vector<llvm::Value *>;
  struct TensorArg {
    llvm::Value *data; // ptr addrspace(1) to the first element
    std::vector<llvm::Value *> shape, strides;
    ir::ScalarKind elem;
  };
  struct Coords { // the element coordinates of a layout's registers, per thread
    std::vector<int64_t> shape;
    Layout layout;
    std::vector<llvm::Value *> base;          // per dimension, this thread's (i64)
    std::vector<std::vector<int64_t>> offset; // per register, per dimension
    /// Per dimension, the largest base any thread has: with max_base + the largest offset
    /// inside the tile, no coordinate wraps, and a thread's coordinates along d lie between
    /// base + the smallest and base + the largest offset.
    std::vector<int64_t> max_base;
  };

  // Structure (codegen.cpp).
  void lower_block(const ir::Block &block);
  void lower_op(const ir::Operation &op);
  void lower_for(const ir::Operation &op);
  void lower_if(const ir::Operation &op);
  Regs &regs(const ir::Value *v);
  llvm::Value *scalar(const ir::Value *v);
  /// Whether tile v has one value on every thread and register (full, splat, elementwise ops
  /// of those and scalars).
  bool uniform(const ir::Value *v);
  std::unordered_map<const ir::Value *, bool> uniform_;
  /// v's registers in layout `want`: v's own when they agree, else through shared memory.
  Regs regs_in(const ir::Value *v, const Layout &want);
  /// v's registers in the layout of `into` (a loop-carried or if-result tile it flows into).
  Regs carried_regs(const ir::Value *v, const ir::Value *into);
  /// The for op carrying v (its result or body argument) when nvptx.carried names v's layout.
  const ir::Operation *carrier(const ir::Value *v, std::string *layout);
  const Layout &layout_of(const ir::Value *v);
  Coords &coords(const Layout &layout, const std::vector<int64_t> &shape);
  Coords &coords_of(const ir::Value *tile) { return coords(layout_of(tile), tile->type().shape()); }
  /// Coordinate d of register r (i64), wrapped into the tile (replicated layouts).
  llvm::Value *coord(const Coords &c, int64_t reg, int d);
  llvm::Value *linear_index(const Coords &c, int64_t reg);
  [[noreturn]] void unsupported(const ir::Operation &op, const std::string &what);
  /// Records error site `what` of `op`: where `failed` holds, the status word gets its number.
  void record_error(const ir::Operation &op, const std::string &what, llvm::Value *failed);
  llvm::Value *special(const char *reg);
  /// A builder at the kernel's entry, after the thread's warp index (values every path uses).
  Builder at_entry();
  void barrier();

  // Values and types (codegen_math.cpp). f16 and bf16 compute as f32 holding values exact in the
  // type (each result rounded back), as llvm-cpu does; memory holds their storage bits.
  llvm::Type *value_type(ir::ScalarKind k, const ir::Operation &where);
  llvm::Type *memory_type(ir::ScalarKind k);
  llvm::Value *to_memory(ir::ScalarKind k, llvm::Value *v);
  llvm::Value *from_memory(ir::ScalarKind k, llvm::Value *bits);
  llvm::Value *round_to(ir::ScalarKind k, llvm::Value *v);
  llvm::Value *bf16_bits(llvm::Value *f32);
  /// fp8 (held as f32 in registers, one byte in memory): the value of `v` (f32 or f64) rounded
  /// once to the format by `mode`, as f32; the byte of an exact f8 value; the value of a byte.
  llvm::Value *f8_round(ir::ScalarKind k, llvm::Value *v, const std::string &mode);
  llvm::Value *f8_encode(ir::ScalarKind k, llvm::Value *v);
  llvm::Value *f8_decode(ir::ScalarKind k, llvm::Value *bits);
  llvm::Value *bf16_from_f64(llvm::Value *d);
  llvm::Value *constant(ir::ScalarKind k, const ir::Attr &a, const ir::Operation &where);
  llvm::Value *elementwise(const ir::Operation &op, const std::vector<llvm::Value *> &a);
  llvm::Value *float_op(const ir::Operation &op, ir::ScalarKind k,
                        const std::vector<llvm::Value *> &a);
  llvm::Value *int_op(const ir::Operation &op, ir::ScalarKind k,
                      const std::vector<llvm::Value *> &a);
  llvm::Value *cast(const ir::Operation &op, llvm::Value *v);
  /// A float narrowing (f64 -> f32/f16/bf16, f32 -> f16/bf16, f16 <-> bf16) under `mode`.
  llvm::Value *narrow(llvm::Value *v, ir::ScalarKind from, ir::ScalarKind to,
                      const std::string &mode);
  llvm::Value *libdevice(const char *name, ir::ScalarKind k, const std::vector<llvm::Value *> &a);
  llvm::Value *float_min_max(bool is_max, bool propagate_nan, llvm::Value *x, llvm::Value *y);
  llvm::Value *combine(const std::string &kind, ir::ScalarKind k, llvm::Value *acc, llvm::Value *x);

  // Tiles (codegen_tile.cpp).
  void lower_source(const ir::Operation &op);
  void lower_shape(const ir::Operation &op);
  void lower_load_store(const ir::Operation &op);
  void lower_indexed(const ir::Operation &op);
  /// Whether every run of `vec` registers of this thread (layout `c`, tile at `origin`) is inside
  /// the tensor, unit-stride and aligned; `addrs` receives each run's address.
  llvm::Value *vector_runs(const TensorArg &ta, const Coords &c,
                           const std::vector<llvm::Value *> &origin, int64_t vec, int64_t n,
                           const std::function<std::vector<llvm::Value *>(int64_t)> &index_of,
                           std::vector<llvm::Value *> &addrs);
  /// The tensor index of register `r` (i64, a run-time value) of layout `c` at `origin`, from a
  /// table of the layout's register offsets in constant memory.
  std::vector<llvm::Value *>
  register_index(const Coords &c, const std::vector<llvm::Value *> &origin, llvm::Value *r);
  /// The edge path of a vectorized access as a rolled loop over the thread's registers, `group`
  /// at a time, through an array in local memory: loads fill it (returned, one value a
  /// register), stores read `values` from it.
  Regs rolled_access(const TensorArg &ta, const Coords &c, const std::vector<llvm::Value *> &origin,
                     const Regs *values, llvm::Value *pad);
  /// The fast path of a load whose runs of `vec` elements are vector accesses (the loads back to
  /// back), joined with its edge path's `slow_bits`. Records the memory bits in load_bits_.
  void load_tile(const ir::Operation &op, const TensorArg &ta, llvm::BasicBlock *slow_end,
                 const std::vector<llvm::Value *> &addrs, int64_t vec, const Regs &slow_bits);
  size_t regs_count(const ir::Value *tile) {
    return static_cast<size_t>(registers_per_thread(layout_of(tile), tile->type().shape()));
  }
  /// One vector access of values.size() elements of memory type `t` at `addr` (aligned);
  /// returns the loaded elements.
  Regs vector_access(bool is_store, llvm::Value *addr, llvm::Type *t, const Regs &values);
  void lower_reduce(const ir::Operation &op);
  /// reduce by registers, warp shuffles and shared memory across warps; false when it does not
  /// apply (an mma layout, too many warps' partials), and lower_reduce's shared-memory loop runs
  /// instead.
  bool reduce_in_registers(const ir::Operation &op);
  /// Whether argmax's pair (ov, oi) replaces (v, i) (i32 indices) in a combination.
  llvm::Value *argmax_wins(ir::ScalarKind k, llvm::Value *v, llvm::Value *i, llvm::Value *ov,
                           llvm::Value *oi);
  /// A warp shuffle of v (any width: 32-bit pieces) by shfl.sync intrinsic `id`.
  llvm::Value *shuffle(llvm::Value *v, llvm::Intrinsic::ID id, int64_t amount, int32_t c);
  llvm::Value *shuffle_xor(llvm::Value *v, int64_t lane_mask);
  /// The value of the lane `delta` below this one (a lane below `delta`: its own).
  llvm::Value *shuffle_up(llvm::Value *v, int64_t delta);
  void lower_scan(const ir::Operation &op);
  // dot (codegen_dot.cpp; tensor cores in codegen_mma.cpp).
  void lower_dot(const ir::Operation &op);
  /// An f32 dot on CUDA cores in a blocked layout: A transposed in shared memory, B row-major,
  /// each thread's rows and columns read at one k as 16-byte vectors, one fma chain per element.
  void lower_dot_fma(const ir::Operation &op);
  /// A CUDA-core dot's thread: its distinct runs of `va` rows and `vb` columns (each run's
  /// first row or column, wrapped into the tile) and, per register, its run and place in it.
  struct FmaRuns {
    std::vector<llvm::Value *> m, n;
    std::vector<std::pair<int64_t, int64_t>> row, col;
  };
  FmaRuns fma_runs(const Coords &c, int64_t va, int64_t vb);
  /// acc[r] = fma(x[row run][place], y[column run][place], acc[r]) for every register r.
  void fma_step(const FmaRuns &runs, const std::vector<Regs> &x, const std::vector<Regs> &y,
                Regs &acc);
  /// lower_dot_fma on operands in a ring slot (a pipelined K loop): A at `a`, B at `b`.
  void lower_dot_fma_staged(const ir::Operation &op, llvm::Value *a, llvm::Value *b);
  /// The shared memory for a dot's operands (`bytes`): two static buffers of its own used in
  /// turn when they fit (no barrier before the writes), else the scratch after a barrier.
  llvm::Value *dot_buffer(uint64_t bytes);
  /// x (f32) rounded to a dot's input_precision ("tf32", "bf16"; none or "ieee": x).
  llvm::Value *round_dot_input(const std::string *precision, llvm::Value *x);
  /// dot on tensor cores (codegen_mma.cpp): operands staged in shared memory as 16-bit values
  /// with an XOR swizzle, fragments by ldmatrix, mma.sync m16n8k16 into the mma layout.
  void lower_dot_mma(const ir::Operation &op, const Layout &l);
  /// Writes 16-bit tile v ([rows][cols]) to shared `buffer` at byte `offset` (operand_offset).
  void stage_16bit(const ir::Value *v, llvm::Value *buffer, uint64_t offset);
  /// Byte offset of element (row, col) of a 16-bit [rows][cols] operand in shared memory:
  /// columns in atoms of W = min(cols, 64) ([cols / W][rows][W]), each row's 16-byte chunks
  /// XOR-swizzled by the row (the canonical 128/64/32-byte swizzles of wgmma's K-major A and
  /// N-major B; the 8 rows an ldmatrix reads hit 8 distinct bank groups).
  llvm::Value *operand_offset(llvm::Value *row, llvm::Value *col, int64_t rows, int64_t cols);
  /// Byte offset of element (row, col) of an f32 [rows][cols] operand in a ring slot (a
  /// CUDA-core dot's): row-major, 16-byte chunks XOR-swizzled by row / 4, so that the rows
  /// 4 i + j that a warp's lanes read at one k (fma_layout: 4 rows a thread) hit distinct bank
  /// groups; a row's chunks stay a permutation of themselves.
  llvm::Value *f32_operand_offset(llvm::Value *row, llvm::Value *col, int64_t cols);

  // Pipelined K loops (plan_pipeline; codegen_pipeline.cpp): the operand loads of a dot marked
  // nvptx.stages are cp.async copies into a ring of shared-memory slots.
  struct Ring {
    int64_t stages = 0;
    uint64_t offset = 0;     // in the dynamic shared memory
    uint64_t b_offset = 0;   // B's place in a slot (A at 0)
    uint64_t slot_bytes = 0; // 1024-aligned (the 128-byte swizzle's period)
  };
  /// Ring offsets of every pipelined dot (nested loops get disjoint rings); returns the end.
  uint64_t plan_rings(const ir::Block &block, uint64_t base);
  /// The pipelined dot in loop body `body`, or null.
  const ir::Operation *pipelined_dot(const ir::Block &body);
  /// Issues the cp.async copies of load `op` (its indices lowered for the iteration wanted)
  /// into the slot at shared pointer `slot` + `offset`: 16-byte chunks, zero-filled outside the
  /// tensor; element by element (synchronous stores) when the tile is not 16-byte aligned.
  void copy_tile_async(const ir::Operation &op, llvm::Value *slot, uint64_t offset);
  /// The slot of a cp.async'd dot operand in this iteration (set by lower_for).
  std::unordered_map<const ir::Value *, llvm::Value *> staged_;
  /// Whether pipelined `dot` runs on wgmma (sm_90a, the warps-along-M layout of its shape).
  bool uses_wgmma(const ir::Operation &dot);
  /// Whether its wgmma group may stay in flight past its iteration (wait_group 1): the result
  /// feeds only the loop's yield and the ring has 3 stages or more.
  bool wgmma_in_flight(const ir::Operation &dot);
  /// `acc` after wgmma.wait_group 0 (tied through, so nothing reads it earlier).
  Regs wgmma_wait(const Regs &acc);
  /// wgmma m64nNk16 (sm_90a) on operands in a ring slot, accumulating into `acc`.
  void wgmma_dot(const ir::Operation &op, llvm::Value *a, llvm::Value *b, Regs &acc);

  void lower_debug(const ir::Operation &op);
  void lower_print(const ir::Operation &op);
  /// Writes tile `v` to shared memory at `offset` bytes, row-major, in its value type; returns
  /// the base pointer. Ends with a barrier (readers may start).
  llvm::Value *spill(const ir::Value *v, uint64_t offset = 0);
  llvm::Value *shared_at(llvm::Value *base, llvm::Type *t, llvm::Value *index);
  void need_shared(uint64_t bytes);
  llvm::Value *element_address(const TensorArg &t, const std::vector<llvm::Value *> &index);
  llvm::Value *in_bounds(const TensorArg &t, const std::vector<llvm::Value *> &index);
  llvm::Value *guarded_load(llvm::Value *cond, llvm::Type *t, llvm::Value *ptr,
                            llvm::Value *otherwise);
  void guarded(llvm::Value *cond, const std::function<void()> &body);
  /// A counted loop 0 <= i < n (i64) emitted as IR (not unrolled) carrying `init`: `body` gets
  /// i and the carried values and returns the next ones (it may create blocks); returns the
  /// values after the last iteration. `rolled`: LLVM must not unroll it (code that runs rarely,
  /// where its size costs every compile more than its speed gains).
  using LoopBody = std::function<Regs(llvm::Value *, const Regs &)>;
  Regs loop(llvm::Value *n, const Regs &init, const LoopBody &body, bool rolled = false);
  /// Marks the loop whose back edge is `back_edge`: LLVM neither unrolls nor peels it.
  void no_unrolling(llvm::Instruction *back_edge);

  const ir::Kernel &kernel_;
  llvm::Module &module_;
  llvm::LLVMContext &ctx_;
  Builder b_;
  int num_warps_;
  std::string arch_;
  llvm::Function *fn_ = nullptr;
  llvm::Value *tid_ = nullptr, *lane_ = nullptr, *warp_ = nullptr;
  llvm::GlobalVariable *shared_ = nullptr; // dynamic shared memory: the rings, then scratch_
  llvm::Value *scratch_ = nullptr;         // spills and conversions (tl_shared + rings_end_)
  uint64_t rings_end_ = 0;
  std::unordered_map<const ir::Operation *, Ring> rings_; // by dot
  llvm::Value *status_ = nullptr; // ptr addrspace(1) to the launch's status word
  /// Grid axes y, z (index 1, 2): this launch's first program and the axis's programs (i32
  /// parameters: Slot::Kind::GridBase, Grid); x has no such split.
  llvm::Value *grid_base_[3] = {}, *grid_[3] = {};
  std::vector<std::string> errors_; // the error sites' messages, in status order
  /// While lowering ops for a loop iteration ahead of time: whether that iteration exists
  /// (record_error counts errors only then); else null.
  llvm::Value *speculative_ = nullptr;
  uint64_t shared_bytes_ = 0;
  uint64_t static_shared_bytes_ = 0; // the tensor-core dots' own buffers (codegen_mma.cpp)
  bool shared_in_use_ = false;       // a barrier must precede the next spill
  std::unordered_map<const ir::Value *, Regs> values_;
  std::unordered_map<const ir::Value *, TensorArg> tensors_;
  std::unordered_map<std::string, Coords> coords_;
  std::unordered_map<const ir::Value *, Layout> layouts_;
  std::unordered_set<const ir::Operation *> prefetched_;  // loads lowered ahead (lower_for)
  std::unordered_map<const ir::Value *, Regs> load_bits_; // a load's memory bits (load_tile)
};

} // namespace tl::nvptx
