// Lowering of one Tile IR module to LLVM IR: every value lives in a stack slot of its element
// type (scalars are promoted to registers by SROA; tiles stay arrays that loops walk, which the
// loop vectorizer turns into SIMD code for the target's features).
// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "tl/ir/ir.h"
#include "tl/ir/uses.h"
#include "x86_isa.h"

#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>

#include <functional>
#include <stdexcept>
#include <unordered_map>
#include <unordered_set>

namespace tl::llvm_cpu {

/// An op the backend cannot lower; the message names the op and its location.
struct LoweringError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// Adds `tl_kernel_<name>` for every kernel of `module` to `out`, as the planning passes decided
/// (planning_passes: their `cpu.*` attributes are read here, never decided); `vector_bits` is
/// the widest SIMD register of the target (128, 256 or 512), which shapes the dot micro-kernel;
/// `isa` the AVX-512 subsets it has (x86::finish_module must run after the optimization
/// pipeline).
void lower_module(const ir::Module &module, llvm::Module &out, unsigned vector_bits,
                  const x86::Isa &isa);

class KernelCodegen {
public:
  /// The loads and elementwise ops of a fused store's tree (cpu.fuse), operands before users.
  struct Fusion {
    std::vector<const ir::Operation *> loads;
    std::vector<const ir::Operation *> ops;
  };
  KernelCodegen(const ir::Kernel &kernel, llvm::Module &module, unsigned vector_bits,
                const x86::Isa &isa);
  void run();

private:
  struct Slot {
    llvm::Value *ptr; // [n x elem]
    llvm::Type *elem;
    int64_t n;
    /// A strided view's (cpu.strided_view) distance between rows in elements, read only by its
    /// transpose; null: rows back to back.
    llvm::Value *row_stride = nullptr;
  };
  using IndexFn = std::function<void(llvm::Value *)>;

  // Structure (codegen.cpp).
  void lower_block(const ir::Block &block, const ir::Operation *parent);
  void lower_op(const ir::Operation &op);
  void lower_for(const ir::Operation &op);
  void lower_if(const ir::Operation &op);
  void copy_yield(const ir::Operation &yield, const std::vector<Slot> &targets);
  /// A stack tile of t's held type (`elem` given: of that type).
  Slot new_slot(const ir::Type &t, llvm::Type *elem = nullptr);
  /// The type a value's tile holds where that is not its held type: a direct transpose's load
  /// and transpose (cpu-direct-transposes), and a load only stored (a copy), hold the stored
  /// bits (bf16 as i16: moved unchanged, neither widened nor rounded, so a NaN keeps its sign
  /// and payload); else null.
  llvm::Type *raw_storage(const ir::Value *v);
  /// Whether every use of `v`, through reshapes, is as the value a store writes (a copy).
  bool only_stored(const ir::Value *v) const;
  Slot &slot(const ir::Value *v);
  llvm::Value *scalar(const ir::Value *v);
  llvm::Value *elem_ptr(const Slot &s, llvm::Value *index);
  /// The alignment a slot's pointer is known to have: its elements' (it may be a view).
  llvm::MaybeAlign element_align(const Slot &s) const;
  void loop(llvm::Value *begin, llvm::Value *end, const IndexFn &body, const char *name,
            bool rolled = false);
  void loop(int64_t n, const IndexFn &body, const char *name = "i", bool rolled = false);
  /// Two versions of the same code, `emit(true)` where `cond` holds at run time, `emit(false)`
  /// elsewhere; only the latter where `cond` is null.
  void versions(llvm::Value *cond, const std::function<void(bool)> &emit, const char *name);
  /// loop() over the lanes of a tile, interleaved with prefetches of the open streams.
  /// `to_l1`: fetches of blocks of plan::kFetchAheadBytes or less go to L1, not L2 (a loop
  /// computing kFetchingLaneWork a lane or more: softmax's exponentials).
  void lane_loop(int64_t n, const IndexFn &body, bool fetch = true, bool to_l1 = false);
  /// The same over `rows` rows of `width` lanes (a fused store's block), body(row, column).
  using RowLaneFn = std::function<void(llvm::Value *row, llvm::Value *column)>;
  void lane_loop(int64_t rows, int64_t width, const RowLaneFn &body, const char *row_name,
                 const char *lane_name, bool fetch = true, bool to_l1 = false);
  /// A full reduction (one value) of a lane loop's values into slot `acc`.
  struct LaneReduce {
    std::string kind;
    ir::ScalarKind k;
    const Slot *acc;
  };
  /// lane_loop(n) whose body returns, for lane i, the value each of `reduces` combines (in
  /// order); running values per lane of a chunk where the loop fetches (fusion.cpp).
  using LaneValuesFn = std::function<std::vector<llvm::Value *>(llvm::Value *lane)>;
  void reduce_lanes(int64_t n, const std::vector<LaneReduce> &reduces, const LaneValuesFn &body,
                    bool fetch = true, bool to_l1 = false);
  /// The streams of the open blocks (streams_) a loop of `trips` fetches, at most
  /// `max_bytes_per_trip` each trip, and the fetches of one trip (fusion.cpp): into L2, or L1
  /// for blocks of plan::kFetchAheadBytes or less where `small_to_l1` (lane loops whose lanes
  /// compute a transcendental: their `to_l1`).
  struct Fetch {
    llvm::Value *base;
    int64_t bytes;
    int write;
  };
  std::vector<Fetch> open_streams(int64_t trips, int64_t max_bytes_per_trip);
  /// How lane_loop runs `rows` x `width` lanes: the streams it fetches (none unless `fetch`),
  /// and its chunk of lanes (a trip's fetches each) or 0 when it runs them in one loop.
  struct LanePlan {
    std::vector<Fetch> fetches;
    int64_t chunk;
  };
  LanePlan lane_plan(int64_t rows, int64_t width, bool fetch, int64_t jam = 1);
  /// Lanes of `n` whose share of `fetches` is one trip's: 256 bytes of the densest stream (4
  /// lines), 32 lanes at least.
  int64_t trip_lanes(const std::vector<Fetch> &fetches, int64_t n);
  /// The first column of the chunk lane_loop is emitting, or null outside a chunked loop.
  llvm::Value *chunk_first_ = nullptr;
  /// Set by a caller that loops over `rows` equal rows itself (a reduction's rows): the next
  /// one-row lane loop is row `row` of them, its fetches paced over them all (lane_loop takes
  /// and clears it).
  struct LaneRows {
    llvm::Value *row = nullptr;
    int64_t rows = 1;
    int64_t jam = 1; // rows of the block each lane of the loop reads (kJamRows)
  } lane_rows_;
  void fetch_trip(const std::vector<Fetch> &fetches, llvm::Value *trip, int64_t trips,
                  bool small_to_l1 = false);
  void fail_if(llvm::Value *cond, const ir::Operation &op, const std::string &what,
               llvm::Value *lane, llvm::Value *index);
  llvm::Value *arg_field(unsigned arg, unsigned field, llvm::Value *dim);
  llvm::Type *llvm_type(ir::ScalarKind k, const ir::Operation *where);
  // f16 and bf16 values live as f32 that is exactly representable in the type; every result is
  // rounded back to the type (computing in f32 and rounding once equals the interpreter's
  // "compute in f64, round once" for + - * / sqrt, since f32 carries more than 2p + 2 bits).
  llvm::Value *round_to(ir::ScalarKind k, llvm::Value *v);
  llvm::Value *f8_call(const char *name, std::vector<llvm::Value *> args, llvm::Type *ret);
  llvm::Value *f8_round(ir::ScalarKind k, llvm::Value *v, int mode);
  // fp8 conversions inline (exact, branch-free selects that vectorize): an f32 rounded to the
  // nearest-even fp8 value (as f32), an fp8-representable f32's bits, bits to f32.
  llvm::Value *f8_round_rne(ir::ScalarKind k, llvm::Value *v);
  llvm::Value *f8_encode(ir::ScalarKind k, llvm::Value *v);
  llvm::Value *f8_encode_rne(ir::ScalarKind k, llvm::Value *v);
  llvm::Value *f8_decode(ir::ScalarKind k, llvm::Value *bits);
  llvm::Type *storage_type(ir::ScalarKind k);
  /// A constant from an attribute (int, bool or float), rounded to element type `k`.
  llvm::Value *attr_constant(ir::ScalarKind k, const ir::Attr &a);
  llvm::Value *to_storage(ir::ScalarKind k, llvm::Value *v);
  llvm::Value *from_storage(ir::ScalarKind k, llvm::Value *bits);
  llvm::Value *i64(int64_t v) { return b_.getInt64(v); }
  /// off >= 0 and off + n <= shape, as off <= shape - n: an offset near INT64_MAX made off + n
  /// wrap negative, and the block outside the tensor counted as inside (it read before it).
  llvm::Value *extent_inside(llvm::Value *off, int64_t n, llvm::Value *shape) {
    return b_.CreateAnd(b_.CreateICmpSGE(off, i64(0)),
                        b_.CreateICmpSLE(off, b_.CreateSub(shape, i64(n))));
  }
  [[noreturn]] void unsupported(const ir::Operation &op, const std::string &what);

  // Ops (codegen_ops.cpp, codegen_memory.cpp).
  void lower_source(const ir::Operation &op);
  void lower_shape(const ir::Operation &op);
  bool transpose_8x8(const ir::Operation &op, const Slot &src, const Slot &out);
  /// dst = src^T for an M x N matrix (multiples of 8) of `elem`, rows `src_rs` and `dst_rs`
  /// elements apart, in register blocks; `stream` (null: never) writes dst with non-temporal
  /// stores at run time (whole lines; rows not whole lines: all but their ends' partial lines).
  void transpose_rows(llvm::Value *src, llvm::Value *src_rs, llvm::Value *dst, llvm::Value *dst_rs,
                      int64_t M, int64_t N, llvm::Type *elem, llvm::Value *stream);
  void lower_elementwise(const ir::Operation &op);
  llvm::Value *elementwise_lane(const ir::Operation &op, std::vector<llvm::Value *> a,
                                llvm::Value *lane);
  /// elementwise_lane plus the rounding of narrow float results to their type.
  llvm::Value *elementwise_value(const ir::Operation &op, std::vector<llvm::Value *> a,
                                 llvm::Value *lane);
  llvm::Value *float_lane(const ir::Operation &op, ir::ScalarKind k, std::vector<llvm::Value *> a);
  /// What the caller of exp_f32 needs of e^x (codegen_elementwise.cpp).
  enum class ExpRange {
    Full,        ///< every f32 x: subnormal results, 0 and inf exact
    Normal,      ///< x within [-87, 88] or NaN: no clamps, one power of two
    OnePlus,     ///< only 1 + e^x is used (sigmoid): e^x below 2^-126 and above 2^127.5 may be off
    NonPositive, ///< x at most 0 or NaN (cpu.exp_nonpositive): results below 2^-126.5 flushed
  };
  /// e^x; `base2`: x is given as x log2(e) (e^x = 2^x'), for a caller that folded log2(e) into
  /// its own constants.
  llvm::Value *exp_f32(llvm::Value *x, ExpRange range = ExpRange::Full, bool base2 = false);
  /// e^(r_scale r) 2^nf for an argument exp_f32 has reduced (r_scale r within +-ln2 / 2, nf
  /// integral or NaN): exp_f32's polynomial (its coefficients scaled by powers of r_scale) and
  /// power of two; `range` as exp_f32's (Full: nf within [-152, 129]).
  llvm::Value *exp_reduced_f32(llvm::Value *r, llvm::Value *nf, ExpRange range, double r_scale = 1);
  /// Whether exp_reduced_f32 scales by 2^n with vscalefps (AVX-512, lane code of type t).
  bool uses_scalef(llvm::Type *t) const { return isa_.avx512f && !t->isVectorTy(); }
  llvm::Value *erf_f32(llvm::Value *x);
  /// For sigmoid(v) with v = x * fma(m, B, A), B and A constants (the tanh GELU's argument):
  /// -v log2(e) computed as x * fma(m, -B log2 e, -A log2 e); else nullptr.
  llvm::Value *sigmoid_base2_argument(llvm::Value *v);
  /// Phi(u sqrt 2) = (1 + erf(u)) / 2 for the argument u of an erf_f32 (GELU's fma(erf, 1/2,
  /// 1/2)); u = x / sqrt 2 as GELU's product by 0.70710677 is folded into the rational.
  llvm::Value *gelu_phi_f32(llvm::Value *u);
  llvm::Value *tanh_f32(llvm::Value *x);
  llvm::Value *ndtr_f32(llvm::Value *x);
  llvm::Value *ndtr_f64(llvm::Value *x);
  llvm::Value *erfinv(llvm::Value *x);
  llvm::Value *int_lane(const ir::Operation &op, ir::ScalarKind k, std::vector<llvm::Value *> a,
                        llvm::Value *lane);
  llvm::Value *cast_lane(const ir::Operation &op, llvm::Value *v);
  llvm::Value *round_tf32(llvm::Value *x);
  llvm::Value *narrow(llvm::Value *x, ir::ScalarKind from, ir::ScalarKind to,
                      const std::string &mode);
  llvm::Value *f32_round_to_odd(llvm::Value *d);
  void lower_dot(const ir::Operation &op);
  void dot_microkernel(const Slot &a, const Slot &b, const Slot &c, int64_t M, int64_t K, int64_t N,
                       const ir::Block *block, int64_t *m_done, int64_t *n_done);
  std::vector<llvm::Value *> transpose8(const std::vector<llvm::Value *> &rows);
  std::vector<llvm::Value *> transpose16(const std::vector<llvm::Value *> &rows);
  std::vector<llvm::Value *> transpose_pairs(const std::vector<llvm::Value *> &rows);
  void lower_reduce_scan(const ir::Operation &op);
  void lower_row_argmax(const ir::Operation &op, const ir::Value &x, int64_t rows, int64_t len);
  void lower_row_scan_steps(const ir::Operation &op, const ir::Value &x, int64_t rows, int64_t len);
  void lower_column_reduce(const ir::Operation &op, const ir::Value &x, int64_t outer, int64_t len,
                           int64_t inner, int64_t block);
  llvm::Value *reduce_identity(const std::string &kind, ir::ScalarKind k, llvm::Type *t);
  llvm::Value *combine(const std::string &kind, ir::ScalarKind k, llvm::Value *acc, llvm::Value *x);
  void lower_block_access(const ir::Operation &op);
  void copy_block_access(const ir::Operation &op);
  struct BlockCopy { // copy_block_access's operands
    const ir::Type &tile_type;
    Slot &tile;
    llvm::Type *mem_t;
    llvm::Value *data;                        // the tensor's data pointer
    std::vector<llvm::Value *> off;           // the block's element offsets
    std::vector<llvm::Value *> shape, stride; // the tensor's, in elements
    bool is_store;
    int row_dim = 0; // the innermost dimension of extent > 1 (the last if none): rows of it
  };
  void pad_block(const ir::Operation &op, const BlockCopy &c);
  void copy_block_dims(const BlockCopy &c, int d, llvm::Value *row_index, llvm::Value *base);
  void copy_block_row(const BlockCopy &c, llvm::Value *row_index, llvm::Value *base);
  void copy_row_elements(const BlockCopy &c, llvm::Value *lo, llvm::Value *hi,
                         llvm::Value *row_index, llvm::Value *base, bool unit);
  llvm::Value *block_is_contiguous(unsigned arg, const std::vector<llvm::Value *> &off,
                                   const std::vector<int64_t> &tile_shape);
  /// The block of tensor `arg` at `off` of `tile_shape` is inside the tensor, its last dimension
  /// contiguous and its rows `row_stride` > 0 apart (a cpu.strided_view's or cpu.transpose_store's
  /// block: one wide dimension before the last).
  llvm::Value *rows_positively_strided(unsigned arg, const std::vector<llvm::Value *> &off,
                                       const std::vector<int64_t> &tile_shape,
                                       llvm::Value *&row_stride);
  void lower_strided_view(const ir::Operation &load);
  /// Where `ok` holds, the tile of `load` is read in place at `view`, else copied into its slot;
  /// the slot's pointer is the phi of the two. Returns the blocks of the two edges.
  std::pair<llvm::BasicBlock *, llvm::BasicBlock *> in_place_or_copy(const ir::Operation &load,
                                                                     llvm::Value *ok,
                                                                     llvm::Value *view,
                                                                     const std::string &name);
  void lower_transpose_store(const ir::Operation &store);
  llvm::Value *block_base(unsigned arg, const std::vector<llvm::Value *> &off, llvm::Type *mem_t);
  /// The element offsets (i64) of a load's or store's block: its index operands.
  std::vector<llvm::Value *> block_offsets(const ir::Operation &op);
  /// The bytes a tensor argument spans (its largest extent x stride), of elements of `esize`.
  llvm::Value *span_bytes(const ir::Value *tensor, int64_t esize);
  /// True (i1) when the kernel's tensors span plan::kStreamBytes or more in all: its stores
  /// planned non-temporal may stream.
  llvm::Value *touches_stream_bytes();
  /// Bytes of a tile of type `t` as stored in memory.
  int64_t tile_bytes(const ir::Type &t);
  void fetch_after(const ir::Operation &load, llvm::Value *at);
  void lower_indexed(const ir::Operation &op);
  /// Lanes a vector gather of elements `k` loads at once; 0: lane by lane.
  int64_t gather_width(ir::ScalarKind k) const;
  void lower_debug(const ir::Operation &op);

  // Emission of the planned fusions (fusion.cpp; the plan: plan_attrs.h).
  struct Access { // a block of a tensor: element i of row r (of the fused loop) at base + r rs + i
    llvm::Value *base;
    llvm::Type *mem;
    ir::ScalarKind elem;
    llvm::Value *row_stride = nullptr;
    llvm::Value *low = nullptr;       // the block's lowest byte, from base (rows may run back)
    llvm::Value *bytes = nullptr;     // from its lowest byte to its highest, inclusive of rows
    llvm::Value *row_bytes = nullptr; // the row stride in bytes, where rows may be strided
    int64_t width_bytes = 0;          // of a row
  };
  /// A fused store's loop (cpu.fuse): its tree, accesses and their run-time check.
  struct FusedLoop {
    const ir::Operation *store;
    Fusion f;
    int64_t n, width; // lanes, and lanes a row (the stored tile's innermost extent > 1)
    std::vector<Access> loads;
    Access out;
    llvm::Value *ok; // every block inside its tensor, with rows as the loop walks them
  };
  Fusion fusion_of(const ir::Operation &store);
  FusedLoop fused_loop(const ir::Operation &store);
  /// The stored value of lane i of a fused loop, given its row and column in the stored tile
  /// (both null: lane i of contiguous blocks).
  llvm::Value *fused_lane(const FusedLoop &fl, llvm::Value *i, llvm::Value *row, llvm::Value *col);
  void lower_fused_store(const FusedLoop &fl);
  void lower_fused_pair(const ir::Operation &first, const ir::Operation &second);
  /// The fused store planned to run with `store` (cpu.fuse_with its group), if any.
  const ir::Operation *paired_store(const ir::Operation &store);
  void emit_fused_loops(const std::vector<const FusedLoop *> &loops, llvm::BasicBlock *done);
  void stream_fused_stores(const std::vector<const FusedLoop *> &loops, int64_t width,
                           llvm::Value *streamable, llvm::BasicBlock *done, bool heads);
  /// True when the byte ranges of blocks a and b are disjoint.
  llvm::Value *disjoint(const Access &a, const Access &b);
  llvm::Value *block_rows_are_strided(unsigned arg, const std::vector<llvm::Value *> &off,
                                      const std::vector<int64_t> &tile_shape,
                                      llvm::Value *&row_stride);
  /// Element `index` (flat, row-major) of tile `v`, computed if `v` is inlined.
  llvm::Value *lane_value(const ir::Value *v, llvm::Value *index);
  /// While a reduction along the rows of a rank-2 tile evaluates its lanes: the lane's row and
  /// column, which an inlined row or column broadcast (plan_inlining.h) reads its element at.
  struct RowLane {
    llvm::Value *row = nullptr, *col = nullptr;
  } row_lane_;
  /// After load view `load`: the stores fetched for writing during the lane loops after it.
  void fetch_stores_after(const ir::Operation &load);

  const ir::Kernel &kernel_;
  const ir::UseList uses_;
  llvm::Module &module_;
  llvm::LLVMContext &ctx_;
  llvm::IRBuilder<> b_;
  llvm::Function *fn_ = nullptr;
  llvm::BasicBlock *entry_ = nullptr, *fail_ = nullptr;
  llvm::Value *launch_ = nullptr, *pid_[3] = {};
  unsigned vector_bits_;
  x86::Isa isa_;
  std::unordered_map<const ir::Value *, Slot> slots_;
  std::unordered_map<const ir::Value *, unsigned> arg_index_;
  // Lane values of f32 erf (-> its argument) and sigmoid (its 1 / d -> d), for the fused forms
  // of GELU (fma(erf(u), 1/2, 1/2)) and x * sigmoid (x / d) in float_lane.
  std::unordered_map<const llvm::Value *, llvm::Value *> erf_args_, sigmoid_denominators_;
  /// f8_round_rne's results: the f32 each rounds, and its format (f8_encode encodes the f32
  /// directly, rounding and encoding in one pass over the bits).
  std::unordered_map<const llvm::Value *, std::pair<ir::ScalarKind, llvm::Value *>> f8_rounded_;
  // Streaming prefetch (fusion.cpp): the memory after each load view, and the blocks that later
  // stores of its block write, fetched by lane_loop.
  struct Stream {
    llvm::Value *at;
    int64_t bytes;
    const ir::Block *block; // usable while this block is being lowered
    bool write;             // fetched for ownership (a store's block)
  };
  std::vector<Stream> streams_;
  // The next trip's block of a k-loop load (cpu.prefetch_next): `rows` rows (0 when the last
  // dimension is not contiguous) of `row_bytes` bytes, `stride` bytes apart from `at`, fetched
  // by the micro-kernel of a dot in `block` (dot_microkernel), `tile_rows` (the tile's) at most.
  struct RowStream {
    llvm::Value *at, *rows, *stride;
    int64_t tile_rows, row_bytes;
    const ir::Block *block;
  };
  std::vector<RowStream> row_streams_;
  /// A load marked cpu.prefetch_next: its next trip's block becomes a row stream.
  void stream_next_block(const ir::Operation &load);
  /// A cpu.prefetch_rows load: the block it reads plan::kRowsAhead trips later, fetched.
  void fetch_rows_ahead(const ir::Operation &load);
  /// Prefetches of the row streams of the dot's block, spread over `t` of `count` iterations.
  void fetch_next_rows(const ir::Block *block, llvm::Value *t, int64_t count);
  std::vector<const ir::Block *> open_blocks_; // blocks being lowered, outermost first
  // Load views a whole-tile reduction has read (lower_reduce_scan): a later reduction of the
  // same view reads it from the cache, a pass that can fetch the next block.
  std::unordered_set<const ir::Operation *> reduced_views_;
};

/// A rough count of the vector instructions a lane of `op` takes, a transcendental function as
/// kFetchingLaneWork (codegen_ops.cpp).
int lane_cost(const ir::Operation &op);
/// The same for x's inlined ops (lane_value's work for a lane of x); 0 unless they read a load
/// view (a tile in memory, computed before, is in L1) or `reads_view` is given (set where they
/// do).
int lane_work(const ir::Value &x, bool *reads_view = nullptr);
/// The load views x's lanes read: x itself, or through its inlined ops and reshapes (and
/// converting copies that stream as views do: cpu.stream_copy).
void inlined_views(const ir::Value &x, std::vector<const ir::Operation *> &views);
/// A widening cast of a narrow float tile (bf16, f16, fp8: held as f32) to f32: the identity on
/// the held values, so its tile may share its operand's (lower_elementwise).
bool widens_in_place(const ir::Operation &def);
/// A lane loop computing this much a lane or more (an exponential's) spreads its fetches
/// thinly enough to fetch every reduction's view, and into L1 (lane_loop).
inline constexpr int kFetchingLaneWork = 12;
/// Rows of a block reduced side by side, in one lane loop, where they read a load view
/// (lower_reduce_scan): four streams of lines in flight per thread instead of one.
inline constexpr int64_t kJamRows = 4;

} // namespace tl::llvm_cpu
