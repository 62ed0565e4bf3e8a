// The tnpu-plan-memory pass (see plan_memory.h).
// SPDX-License-Identifier: Apache-2.0
#include "plan_memory.h"

#include "attrs.h"
#include "tl/ir/uses.h"
#include "vector_codes.h"

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace tl::tnpu {
namespace {

using ir::Opcode;
constexpr uint64_t kAlign = 64;

uint64_t align(uint64_t v) { return (v + kAlign - 1) / kAlign * kAlign; }
uint64_t bytes_of(const ir::Type &t) {
  return uint64_t(t.num_elements()) * uint64_t(std::max(ir::bit_width(t.elem()) / 8, 1));
}
bool is_tile(const ir::Value *v) { return v->type().is_tile(); }
bool is_alias(const ir::Operation *op) { // same data, another shape
  return op->opcode() == Opcode::ExpandDims || op->opcode() == Opcode::Reshape;
}
/// A broadcast of one row to R > 1 rows (w[None, :] in a layernorm).
bool row_broadcast(const ir::Operation *op) {
  if (op->opcode() != Opcode::Broadcast)
    return false;
  const ir::Type &in = op->operand(0)->type(), &out = op->result()->type();
  return in.rank() == 2 && out.rank() == 2 && in.shape()[0] == 1 && out.shape()[0] > 1 &&
         in.shape()[1] == out.shape()[1];
}
/// A broadcast of one column to C > 1 columns (m[:, None] in a softmax).
bool column_broadcast(const ir::Operation *op) {
  if (op->opcode() != Opcode::Broadcast)
    return false;
  const ir::Type &in = op->operand(0)->type(), &out = op->result()->type();
  return in.rank() == 2 && out.rank() == 2 && in.shape()[1] == 1 && out.shape()[1] > 1 &&
         in.shape()[0] == out.shape()[0];
}
/// u is lowered as one elementwise vector command over tiles of v's shape with a row stride
/// per operand (lower_elementwise's general case: binary and ternary ops but clamp).
bool strided_user(const ir::Operation *u, const ir::Value *v) {
  if (u->num_results() != 1 || !u->result()->type().is_tile() ||
      u->result()->type().shape() != v->type().shape() || u->num_operands() < 2 ||
      u->num_operands() > 3)
    return false;
  switch (u->opcode()) {
  case Opcode::Cmp:
  case Opcode::Cast:
  case Opcode::Bitcast:
  case Opcode::Reduce:
  case Opcode::Scan:
  case Opcode::Arange:
  case Opcode::Broadcast:
  case Opcode::Transpose:
  case Opcode::Slice:
  case Opcode::Clamp:
    return false;
  default:
    return detail::vector_opcode(u->opcode()) != npu::isa::Opcode::Nop;
  }
}
/// The innermost `for` op whose body holds op (directly or inside `if`s), or null.
const ir::Operation *loop_of(const ir::Operation *op) {
  for (const ir::Block *b = op->parent(); b;) {
    const ir::Operation *p = b->parent();
    if (!p || p->opcode() == Opcode::For)
      return p;
    b = p->parent();
  }
  return nullptr;
}
/// A tile the pipeline buffers (tnpu-plan-pipelining).
bool buffered(const ir::Value *v) { return attr::has(v->def(), attr::kBuffers); }
/// The op defining y writes its result element by element over x (same element size).
bool elementwise_over(const ir::Value *y, const ir::Value *x) {
  const ir::Operation *d = y->def();
  if (!d)
    return false;
  switch (d->opcode()) {
  case Opcode::Add:
  case Opcode::Sub:
  case Opcode::Mul:
  case Opcode::Max:
  case Opcode::Min:
  case Opcode::Exp:
    return ir::bit_width(x->type().elem()) == ir::bit_width(y->type().elem());
  case Opcode::Dot:
    return d->num_operands() > 2 && d->operand(2) == x;
  default:
    return false;
  }
}

/// Values that share one place, and where it is.
struct Slot {
  const ir::Value *first = nullptr; ///< the member defined first (errors name it)
  int64_t start = INT64_MAX, end = -1;
  size_t seq = 0; ///< first's place in the order the parser makes values (breaks ties)
  uint64_t bytes = 0;
  bool matrix = false;
  const ir::Operation *pipelined = nullptr;
  const ir::Operation *loop = nullptr; ///< the `for` whose one iteration holds the whole slot
  std::vector<const ir::Value *> members;
};

/// Where the scan put a value: an address, or the overflow error.
struct Place {
  int64_t at = -1;
  bool acc = false;
  std::string overflow;
};

class MemoryPlanner {
public:
  MemoryPlanner(const ir::Kernel &k, const CompileOptions &o)
      : kernel_(k), opts_(o), uses_(*k.body()) {}

  void run(ir::Kernel &kernel) {
    number(*kernel_.body());
    share_slots();
    allocate(false);
    const Plan packed = save();
    allocate(true);
    if (!keep_spread(packed))
      restore(packed);
    record(kernel);
  }

private:
  void number(const ir::Block &b);
  void share_slots();
  void share_carried(const ir::Operation &loop);
  /// The columns Wn of a column broadcast's copy (R x C, read by `users` elementwise ops) with
  /// the fewest vector cycles: a command costs depth + R ceil(n / W); C: not narrowed.
  int64_t narrow_columns(int64_t rows, int64_t cols, size_t users) const {
    const int64_t w = std::max(1, opts_.vector_lanes), u = int64_t(users);
    auto cmd = [&](int64_t n) { return opts_.vector_depth + rows * ((n + w - 1) / w); };
    int64_t best = cols, least = (1 + u) * cmd(cols);
    for (int64_t n = w; n < cols && cols % n == 0; n *= 2)
      if (const int64_t c = cmd(n) * (1 + u * (cols / n)); c < least)
        best = n, least = c;
    return best;
  }
  /// The bytes v's tile takes (a narrowed column broadcast: its R x Wn copy).
  uint64_t tile_bytes(const ir::Value *v) const {
    const auto it = narrow_.find(v->def());
    if (it == narrow_.end())
      return bytes_of(v->type());
    return bytes_of(v->type()) / uint64_t(v->type().shape()[1]) * uint64_t(it->second);
  }
  std::vector<Slot *> slots_in_order(std::map<const ir::Value *, Slot> &slots, bool spread);
  void allocate(bool spread);
  void record(ir::Kernel &kernel);

  /// The outcome of one allocation, to compare the packed plan with the spread one.
  struct Plan {
    std::map<const ir::Value *, Place> place;
    std::map<const ir::Operation *, uint64_t> stride;
    uint64_t sram_peak = 0, acc_peak = 0, matrix_in_sram = 0, max_tile = 0;
    bool overflow = false;
  };
  Plan save() const {
    return {place_, stride_, sram_peak_, acc_peak_, matrix_in_sram_, max_tile_, overflow_};
  }
  void restore(const Plan &p) {
    place_ = p.place, stride_ = p.stride, sram_peak_ = p.sram_peak, acc_peak_ = p.acc_peak;
  }
  /// The spread plan is kept when everything fits as it did packed (no matrix result moves
  /// from the accumulator to the scratchpad) and it leaves the lowering's temporaries (above
  /// the tiles) the room the packed plan left them, or four of the largest tiles.
  bool keep_spread(const Plan &packed) const {
    if (overflow_ || packed.overflow || matrix_in_sram_ > packed.matrix_in_sram)
      return false;
    const uint64_t room = std::min(opts_.sram_bytes - packed.sram_peak, 4 * packed.max_tile);
    return sram_peak_ + room <= opts_.sram_bytes;
  }

  bool inside(const ir::Value *v, const ir::Operation *loop) {
    return def_[v] >= pos_[loop] && def_[v] <= end_[loop] && v->def() != loop;
  }
  /// Where a use keeps v alive: the user, or the end of the outermost loop around the user that
  /// v is defined outside of (the loop reads it again every iteration).
  int64_t use_pos(const ir::Value *v, const ir::Operation *user) {
    int64_t p = pos_[user];
    for (const ir::Operation *f = loop_of(user); f; f = loop_of(f)) {
      if (inside(v, f))
        break;
      p = std::max(p, end_[f]);
    }
    return p;
  }
  /// The last position v (or a reshape / expand_dims of it) is used at.
  int64_t last_use(const ir::Value *v) {
    int64_t last = def_[v];
    for (const ir::Operation *u : uses_.users(v)) {
      last = std::max(last, use_pos(v, u));
      if (is_alias(u) || fused_.count(u))
        last = std::max(last, last_use(u->result()));
    }
    return last;
  }
  /// The last position the data of v is read at: through every view of the tile v is a view of
  /// (a reshape of a zeros tile read again later must not be written in place before then).
  int64_t data_last_use(const ir::Value *v) {
    while (v->def() && (is_alias(v->def()) || fused_.count(v->def())))
      v = v->def()->operand(0);
    return last_use(v);
  }
  const ir::Value *find(const ir::Value *v) {
    auto it = parent_.find(v);
    if (it == parent_.end() || it->second == v)
      return v;
    return it->second = find(it->second);
  }
  void unite(const ir::Value *a, const ir::Value *b) { parent_[find(a)] = find(b); }

  const ir::Kernel &kernel_;
  const CompileOptions &opts_;
  ir::UseList uses_;
  std::set<const ir::Operation *> fused_;           ///< row broadcasts their users read in place
  std::map<const ir::Operation *, int64_t> narrow_; ///< column broadcasts' copies' columns
  std::set<const ir::Operation *> row_gathers_;     ///< gathers lowered as row gathers
  int64_t next_ = 0;
  std::map<const ir::Operation *, int64_t> pos_, end_;
  std::map<const ir::Value *, int64_t> def_;
  std::vector<const ir::Value *> values_;    ///< every value, in the order the parser makes them
  std::vector<const ir::Operation *> loops_; ///< every `for`, in program order
  std::map<const ir::Value *, const ir::Value *> parent_;
  std::map<const ir::Value *, Place> place_;
  std::map<const ir::Operation *, uint64_t> stride_; ///< of each buffered tile's buffers
  uint64_t sram_peak_ = 0, acc_peak_ = 0, matrix_in_sram_ = 0, max_tile_ = 0;
  bool overflow_ = false;
};

/// Positions in program order: an op's, its results' and its regions' arguments' (one), and
/// the last position inside its regions.
void MemoryPlanner::number(const ir::Block &b) {
  for (const auto &op : b.ops()) {
    const int64_t p = pos_[op.get()] = next_++;
    if (op->opcode() == Opcode::For)
      loops_.push_back(op.get());
    for (const auto &r : op->results())
      def_[r.get()] = p;
    for (unsigned r = 0; r < op->num_regions(); ++r) {
      for (const auto &a : op->region(r)->arguments())
        def_[a.get()] = p, values_.push_back(a.get());
      number(*op->region(r));
    }
    for (const auto &r : op->results()) // (after the regions, as the parser makes them)
      values_.push_back(r.get());
    end_[op.get()] = next_ - 1;
  }
}

void MemoryPlanner::share_slots() {
  ir::walk(kernel_.body(), [&](const ir::Operation *op) {
    if (is_alias(op))
      unite(op->result(), op->operand(0));
  });
  // A row broadcast is an alias of its row when every user reads it with a row stride of 0
  // (not a buffered broadcast: its users would need its own buffer). A row the pipeline
  // prefetches into rotating buffers (layernorm's w and b in the grid loop) fuses too: the
  // users read the body copy's buffer of the row (the lowering's tile address of the row), and
  // the buffers hold the row through the whole loop.
  ir::walk(kernel_.body(), [&](const ir::Operation *op) {
    if (!row_broadcast(op) || buffered(op->result()) || uses_.users(op->result()).empty())
      return;
    for (const ir::Operation *u : uses_.users(op->result()))
      if (!strided_user(u, op->result()))
        return;
    fused_.insert(op);
    unite(op->result(), op->operand(0));
  });
  // A column broadcast has no stride-0 element form as an operand (element strides exist only
  // in v.scopy): its copy is narrowed to R x Wn when its users' C / Wn commands over column
  // chunks, plus the narrow copy, take fewer vector cycles than the R x C copy and one command
  // each (softmax's and the norms' m[:, None], issue 18 s12).
  ir::walk(kernel_.body(), [&](const ir::Operation *op) {
    if (!column_broadcast(op) || buffered(op->result()) || uses_.users(op->result()).empty())
      return;
    for (const ir::Operation *u : uses_.users(op->result()))
      if (!strided_user(u, op->result()))
        return;
    const ir::Type &t = op->result()->type();
    const int64_t wn = narrow_columns(t.shape()[0], t.shape()[1], uses_.users(op->result()).size());
    if (wn < t.shape()[1])
      narrow_[op] = wn;
  });
  // A row gather (attr::row_gather: embedding's rows) reads its ids and its column run from
  // the broadcasts' inputs, so the broadcasts, R x C i32 copies each, are not made when every
  // user of theirs is such a gather reading them in the same place.
  ir::walk(kernel_.body(), [&](const ir::Operation *op) {
    const auto g = attr::row_gather(*op);
    if (!g)
      return;
    for (const ir::Operation *b : {g->rows, g->cols}) {
      if (buffered(b->result()))
        return;
      for (const ir::Operation *u : uses_.users(b->result())) {
        const auto ug = attr::row_gather(*u);
        if (!ug || (b == g->rows ? ug->rows : ug->cols) != b)
          return;
      }
    }
    row_gathers_.insert(op);
    for (const ir::Operation *b : {g->rows, g->cols})
      if (fused_.insert(b).second)
        unite(b->result(), b->operand(0));
  });
  ir::walk(kernel_.body(), [&](const ir::Operation *op) {
    if (op->opcode() == Opcode::Dot && op->num_operands() > 2 &&
        data_last_use(op->operand(2)) == pos_[op] && !buffered(op->operand(2)))
      unite(op->result(), op->operand(2)); // accumulated in place
  });
  ir::walk(kernel_.body(), [&](const ir::Operation *op) {
    if (op->opcode() == Opcode::For)
      share_carried(*op);
  });
}

/// A loop's carried tile shares its result's slot, its init's when the init's data (every view
/// of it) dies at the loop,
/// its yielded value's when the carried value is dead by the time that is written.
void MemoryPlanner::share_carried(const ir::Operation &op) {
  const ir::Block &body = *op.region(0);
  const ir::Operation *yield = body.terminator();
  for (unsigned i = 0; i < op.num_results(); ++i) {
    const ir::Value *arg = body.argument(i + 1), *init = op.operand(3 + i);
    if (!is_tile(arg))
      continue;
    unite(op.result(i), arg);
    const auto inits = std::count(op.operands().begin(), op.operands().end(), init);
    if (inits == 1 && data_last_use(init) == pos_[&op] && !buffered(init) && def_[init] < pos_[&op])
      unite(init, arg);
    if (!yield || i >= yield->num_operands())
      continue;
    const ir::Value *y = yield->operand(i);
    const auto ys = std::count(yield->operands().begin(), yield->operands().end(), y);
    const int64_t dead = last_use(arg);
    if (ys == 1 && inside(y, &op) && y->def() && !buffered(y) &&
        (dead < def_[y] || (dead == def_[y] && elementwise_over(y, arg))))
      unite(y, arg);
  }
}

/// The slots in the order the scan places them: by start, larger first, then program order. A
/// buffered slot holds all its buffers through its whole loop (the kernel, for the grid loop).
/// `spread`: a slot that lives within one iteration of a `for` holds its place to the end of
/// the loop's body, so no other tile of that body reuses it. Reuse within a body orders the
/// next iteration's first commands after this iteration's last ones (a write after read across
/// the back edge: attention's transpose of the next key block on the vector unit waited for
/// the matrix unit's last dot of the previous block, whose operand took the transpose's place),
/// which keeps the units from overlapping iterations.
std::vector<Slot *> MemoryPlanner::slots_in_order(std::map<const ir::Value *, Slot> &slots,
                                                  bool spread) {
  for (size_t i = 0; i < values_.size(); ++i) {
    const ir::Value *v = values_[i];
    const int64_t d = def_[v];
    if (!is_tile(v))
      continue;
    Slot &s = slots[find(v)];
    s.members.push_back(v);
    if (d < s.start)
      s.start = d, s.first = v, s.seq = i;
    s.end = std::max(s.end, last_use(v));
    if (!fused_.count(v->def())) // a fused broadcast takes no room of its own
      s.bytes = std::max(s.bytes, tile_bytes(v));
    s.matrix = s.matrix || (v->def() && v->def()->opcode() == Opcode::Dot);
    if (buffered(v))
      s.pipelined = v->def();
  }
  std::vector<Slot *> order;
  for (auto &[root, s] : slots) {
    max_tile_ = std::max(max_tile_, s.bytes);
    if (s.pipelined) {
      const ir::Operation *loop = loop_of(s.pipelined); // null: the grid loop
      s.start = loop ? std::min(s.start, pos_[loop]) : 0;
      s.end = loop ? std::max(s.end, end_[loop]) : next_;
      stride_[s.pipelined] = align(s.bytes);
      s.bytes = uint64_t(attr::get_int(*s.pipelined, attr::kBuffers)) * align(s.bytes);
    } else if (spread) {
      for (const ir::Operation *f : loops_) // the innermost loop whose body holds the slot
        if (pos_[f] < s.start && s.end <= end_[f])
          s.loop = f;
      if (s.loop)
        s.end = end_[s.loop];
    }
    order.push_back(&s);
  }
  std::sort(order.begin(), order.end(), [](const Slot *a, const Slot *b) {
    if (a->start != b->start)
      return a->start < b->start;
    return a->bytes != b->bytes ? a->bytes > b->bytes : a->seq < b->seq;
  });
  return order;
}

void MemoryPlanner::allocate(bool spread) {
  std::map<const ir::Value *, Slot> slots;
  place_.clear(), stride_.clear();
  sram_peak_ = acc_peak_ = matrix_in_sram_ = 0, overflow_ = false;
  struct Live {
    uint64_t lo, hi;
    int64_t end;
  };
  std::vector<Live> sram, acc;
  auto place = [&](std::vector<Live> &live, uint64_t size, const Slot &s, uint64_t &at) {
    std::erase_if(live, [&](const Live &l) { return l.end < s.start; });
    std::sort(live.begin(), live.end(), [](const Live &a, const Live &b) { return a.lo < b.lo; });
    uint64_t lo = 0;
    for (const Live &l : live) {
      if (lo + s.bytes <= l.lo)
        break;
      lo = std::max(lo, align(l.hi));
    }
    if (lo + s.bytes > size)
      return false;
    live.push_back({lo, lo + s.bytes, s.end});
    at = lo;
    return true;
  };
  auto live_bytes = [](const std::vector<Live> &live) {
    uint64_t n = 0;
    for (const Live &l : live)
      n += l.hi - l.lo;
    return n;
  };
  for (const Slot *s : slots_in_order(slots, spread)) {
    Place p;
    uint64_t at = 0;
    if (s->matrix && place(acc, opts_.accumulator_bytes, *s, at)) {
      p.at = int64_t(at), p.acc = true;
      acc_peak_ = std::max(acc_peak_, at + s->bytes);
    } else if (place(sram, opts_.sram_bytes, *s, at)) {
      p.at = int64_t(at);
      sram_peak_ = std::max(sram_peak_, at + s->bytes);
      matrix_in_sram_ += s->matrix ? s->bytes : 0;
    } else {
      overflow_ = true;
      const std::string &name = s->first->name();
      const int64_t buffers = s->pipelined ? attr::get_int(*s->pipelined, attr::kBuffers) : 1;
      p.overflow = "tile " + s->first->type().str() + " does not fit the scratchpad (tile " +
                   (name.empty() ? std::string("") : "%" + name + ", ") + std::to_string(s->bytes) +
                   " bytes" + (s->pipelined ? " in " + std::to_string(buffers) + " buffers" : "") +
                   ", while " + std::to_string(live_bytes(sram)) +
                   " bytes of other tiles are live, of " + std::to_string(opts_.sram_bytes) + ")";
    }
    for (const ir::Value *m : s->members)
      place_[m] = p;
  }
}

/// Writes the places as attributes on the ops that define the tiles (a `for`'s body arguments
/// share its results' places), and the peaks on the `return`.
void MemoryPlanner::record(ir::Kernel &kernel) {
  ir::walk(kernel.body(), [&](ir::Operation *op) {
    std::vector<int64_t> at;
    std::string mem, overflow;
    bool tiles = false;
    for (const auto &r : op->results()) {
      const auto it = place_.find(r.get());
      const bool placed = it != place_.end() && it->second.at >= 0;
      tiles = tiles || it != place_.end();
      at.push_back(placed ? it->second.at : -1);
      mem += std::string(mem.empty() ? "" : ",") + (!placed          ? "-"
                                                    : it->second.acc ? "acc"
                                                                     : "sram");
      if (it != place_.end() && !placed && overflow.empty())
        overflow = it->second.overflow;
    }
    if (!tiles)
      return;
    if (op->num_regions() == 0 && op->num_results() == 1)
      op->set_attr(attr::kAddr, at[0]);
    else
      op->set_attr(attr::kAddr, at);
    if (mem != "-")
      op->set_attr(attr::kMem, mem);
    if (!overflow.empty())
      op->set_attr(attr::kOverflow, overflow);
    if (const auto it = stride_.find(op); it != stride_.end())
      op->set_attr(attr::kStride, int64_t(it->second));
    if (fused_.count(op))
      op->set_attr(attr::kFused, int64_t(1));
    if (row_gathers_.count(op))
      op->set_attr(attr::kRowGather, int64_t(1));
    if (const auto it = narrow_.find(op); it != narrow_.end())
      op->set_attr(attr::kNarrow, it->second);
  });
  ir::Operation *ret = kernel.body()->terminator();
  ret->set_attr(attr::kSramPeak, int64_t(sram_peak_));
  ret->set_attr(attr::kAccPeak, int64_t(acc_peak_));
}

} // namespace

bool plan_memory(ir::Kernel &kernel, const CompileOptions &options) {
  attr::clear(kernel, {attr::kAddr, attr::kMem, attr::kStride, attr::kOverflow, attr::kSramPeak,
                       attr::kAccPeak, attr::kFused, attr::kNarrow, attr::kRowGather});
  MemoryPlanner(kernel, options).run(kernel);
  return true;
}

} // namespace tl::tnpu
