// Scratchpad and accumulator planning by liveness (see plan.h).
// SPDX-License-Identifier: Apache-2.0
#include "plan.h"

#include <algorithm>
#include <functional>
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

class Planner {
public:
  Planner(const ir::Kernel &k, const CompileOptions &o) : kernel_(k), opts_(o) {}

  TilePlan run() {
    plan_.depth = std::clamp(opts_.pipeline_depth, 2, 4);
    number(*kernel_.body());
    walk(*kernel_.body(), [&](const ir::Operation &op) {
      if (op.opcode() == Opcode::For)
        find_pipelined(*op.region(0), &op);
    });
    if (opts_.persistent) { // the grid loop around the kernel body
      find_pipelined(*kernel_.body(), nullptr);
      plan_.persistent =
          std::any_of(kernel_.body()->ops().begin(), kernel_.body()->ops().end(),
                      [&](const auto &op) { return plan_.pipelined.count(op.get()) > 0; });
    }
    share_slots();
    allocate();
    return std::move(plan_);
  }

private:
  void walk(const ir::Block &b, const std::function<void(const ir::Operation &)> &f) {
    for (const auto &op : b.ops()) {
      f(*op);
      for (unsigned r = 0; r < op->num_regions(); ++r)
        walk(*op->region(r), f);
    }
  }
  void number(const ir::Block &b) {
    for (const auto &op : b.ops()) {
      const int64_t p = pos_[op.get()] = next_++;
      for (const auto &r : op->results())
        def_[r.get()] = p;
      for (const ir::Value *v : op->operands())
        users_[v].push_back(op.get());
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
    for (const ir::Operation *u : users_[v]) {
      last = std::max(last, use_pos(v, u));
      if (u->opcode() == Opcode::ExpandDims || u->opcode() == Opcode::Reshape)
        last = std::max(last, last_use(u->result()));
    }
    return last;
  }

  const ir::Value *find(const ir::Value *v) {
    auto it = parent_.find(v);
    if (it == parent_.end() || it->second == v)
      return v;
    return it->second = find(it->second);
  }
  void unite(const ir::Value *a, const ir::Value *b) { parent_[find(a)] = find(b); }

  unsigned param(const ir::Value *v) {
    const auto &args = kernel_.body()->arguments();
    for (unsigned i = 0; i < args.size(); ++i)
      if (args[i].get() == v)
        return i;
    return ~0u;
  }
  static bool pure_scalar(const ir::Operation &op) {
    switch (op.opcode()) {
    case Opcode::Constant:
    case Opcode::Add:
    case Opcode::Sub:
    case Opcode::Mul:
    case Opcode::And:
    case Opcode::Or:
    case Opcode::Xor:
    case Opcode::Min:
    case Opcode::Max:
    case Opcode::Cast:
    case Opcode::Cmp:
    case Opcode::Constexpr:
    case Opcode::TensorDim:
    case Opcode::TensorStride:
    case Opcode::ProgramId:
    case Opcode::NumPrograms:
      // (float scalars are vector-unit commands, which a prefetch does not issue)
      for (const ir::Value *v : op.operands())
        if (ir::is_float(v->type().elem()))
          return false;
      return op.num_results() == 1 && !op.result()->type().is_tile() &&
             (op.opcode() == Opcode::Constant || !ir::is_float(op.result()->type().elem()));
    default:
      return false;
    }
  }
  /// v can be computed for the next iteration (of `loop`, or of the grid loop around the kernel
  /// body when null) before this one's body runs.
  bool hoistable(const ir::Value *v, const ir::Block &body, const ir::Operation *loop) {
    if (loop ? v == body.argument(0) || !inside(v, loop) : !v->def())
      return true;
    const ir::Operation *d = v->def();
    if (!d || d->parent() != &body || !pure_scalar(*d))
      return false;
    for (const ir::Value *o : d->operands())
      if (!hoistable(o, body, loop))
        return false;
    plan_.prefetch_scalars.insert(d);
    return true;
  }
  bool yielded(const ir::Value *v) {
    for (const ir::Operation *u : users_[v])
      if (u->opcode() == Opcode::Yield || u->opcode() == Opcode::For ||
          ((u->opcode() == Opcode::ExpandDims || u->opcode() == Opcode::Reshape) &&
           yielded(u->result())))
        return true;
    return false;
  }
  /// Loads of a loop's body that do not read a tensor the loop stores to and whose indices are
  /// known before the iteration starts: given several buffers, prefetched ahead.
  void find_pipelined(const ir::Block &body, const ir::Operation *loop) {
    std::set<unsigned> stored;
    bool nested = false;
    bool unprefetched = false; // DMA the pipeline cannot prefetch: indexed ops, loads in `if`s
    walk(body, [&](const ir::Operation &op) {
      const bool writes = op.opcode() == Opcode::Store || op.opcode() == Opcode::Scatter ||
                          op.opcode() == Opcode::AtomicAdd;
      if (writes)
        stored.insert(param(op.operand(0)));
      unprefetched = unprefetched || (writes && op.opcode() != Opcode::Store) ||
                     op.opcode() == Opcode::Gather ||
                     (op.opcode() == Opcode::Load && op.parent() != &body);
      // (a store inside an `if` is not a direct child the buffering below can see)
      nested = nested || op.opcode() == Opcode::For ||
               (op.opcode() == Opcode::Store && op.parent() != &body);
    });
    if (nested) // innermost loops only: their eager semaphores must not interleave
      return;
    std::vector<const ir::Operation *> mine;
    for (const auto &op : body.ops()) {
      if (!prefetchable(*op) || yielded(op->result()) ||
          (op->opcode() == Opcode::Load && stored.count(param(op->operand(0)))))
        continue;
      bool ok = true;
      for (unsigned i = op->opcode() == Opcode::Load ? 1 : 0; i < op->num_operands(); ++i)
        ok = ok && !op->operand(i)->type().is_tile() && hoistable(op->operand(i), body, loop);
      if (ok)
        mine.push_back(op.get());
    }
    if (mine.empty())
      return;
    // Tiles the body computes and stores: buffered like the loads, so that the store of one
    // iteration overlaps the compute of the next.
    for (const auto &op : body.ops()) {
      if (op->num_results() != 1 || !is_tile(op->result()) || prefetchable(*op) ||
          (op->opcode() == Opcode::Dot && op->num_operands() > 2) || yielded(op->result()))
        continue;
      for (const ir::Operation *u : users_[op->result()])
        if (u->opcode() == Opcode::Store && u->parent() == &body)
          mine.push_back(op.get());
    }
    // A store runs behind the prefetch on its engine, so the next iterations' compute does not
    // wait for it: every stored tile must have its own buffers, else no pipelining.
    for (const auto &op : body.ops()) {
      if (op->opcode() != Opcode::Store)
        continue;
      const ir::Value *v = op->operand(op->num_operands() - 1);
      while (v->def() &&
             (v->def()->opcode() == Opcode::ExpandDims || v->def()->opcode() == Opcode::Reshape))
        v = v->def()->operand(0);
      if (!v->def() || std::find(mine.begin(), mine.end(), v->def()) == mine.end())
        return;
    }
    for (const ir::Operation *op : mine)
      plan_.pipelined[op] = 0;
    // Across iterations the DMA engines must wait for each other when a store reads a
    // prefetched buffer (the prefetch overwrites it), when the body loads without prefetching
    // (or moves indexed elements), or when two stores write one tensor (each store op keeps its
    // engine).
    if (unprefetched)
      plan_.dma_ordered.insert(&body);
    std::set<unsigned> store_params;
    for (const auto &op : body.ops()) {
      bool order = op->opcode() == Opcode::Load && !plan_.pipelined.count(op.get());
      if (op->opcode() == Opcode::Store) {
        const ir::Value *v = op->operand(op->num_operands() - 1);
        while (v->def() &&
               (v->def()->opcode() == Opcode::ExpandDims || v->def()->opcode() == Opcode::Reshape))
          v = v->def()->operand(0);
        order = prefetchable(*v->def()) || !store_params.insert(param(op->operand(0))).second;
      }
      if (order)
        plan_.dma_ordered.insert(&body);
    }
  }
  bool pipelined_value(const ir::Value *v) { return v->def() && plan_.pipelined.count(v->def()); }
  /// The op defining y writes its result element by element over x (same element size).
  static bool elementwise_over(const ir::Value *y, const ir::Value *x) {
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

  void share_slots() {
    walk(*kernel_.body(), [&](const ir::Operation &op) {
      if (op.opcode() == Opcode::ExpandDims || op.opcode() == Opcode::Reshape)
        unite(op.result(), op.operand(0));
    });
    walk(*kernel_.body(), [&](const ir::Operation &op) {
      if (op.opcode() == Opcode::Dot && op.num_operands() > 2 &&
          last_use(op.operand(2)) == pos_[&op] && !pipelined_value(op.operand(2)))
        unite(op.result(), op.operand(2));
    });
    walk(*kernel_.body(), [&](const ir::Operation &op) {
      if (op.opcode() != Opcode::For)
        return;
      const ir::Block &body = *op.region(0);
      const ir::Operation *yield = body.terminator();
      for (unsigned i = 0; i < op.num_results(); ++i) {
        const ir::Value *arg = body.argument(i + 1), *init = op.operand(3 + i);
        if (!is_tile(arg))
          continue;
        unite(op.result(i), arg);
        const auto inits = std::count(op.operands().begin(), op.operands().end(), init);
        if (inits == 1 && last_use(init) == pos_[&op] && !pipelined_value(init) &&
            def_[init] < pos_[&op])
          unite(init, arg);
        if (!yield || i >= yield->num_operands())
          continue;
        const ir::Value *y = yield->operand(i);
        const auto ys = std::count(yield->operands().begin(), yield->operands().end(), y);
        const int64_t dead = last_use(arg);
        if (ys == 1 && inside(y, &op) && y->def() && !pipelined_value(y) &&
            (dead < def_[y] || (dead == def_[y] && elementwise_over(y, arg))))
          unite(y, arg);
      }
    });
  }

  struct Slot {
    const ir::Value *first = nullptr; ///< the member defined first (errors name it)
    int64_t start = INT64_MAX, end = -1;
    size_t seq = 0; ///< first's place in values_ (ties are broken in program order)
    uint64_t bytes = 0;
    bool matrix = false;
    const ir::Operation *pipelined = nullptr;
    std::vector<const ir::Value *> members;
  };

  void allocate() {
    std::map<const ir::Value *, Slot> slots;
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
      s.bytes = std::max(s.bytes, bytes_of(v->type()));
      s.matrix = s.matrix || (v->def() && v->def()->opcode() == Opcode::Dot);
      if (pipelined_value(v))
        s.pipelined = v->def();
    }
    std::vector<Slot *> order;
    for (auto &[root, s] : slots) {
      if (s.pipelined) { // both buffers live through the whole loop
        const ir::Operation *loop = loop_of(s.pipelined); // null: the grid loop
        s.start = loop ? std::min(s.start, pos_[loop]) : 0;
        s.end = loop ? std::max(s.end, end_[loop]) : next_;
        plan_.pipelined[s.pipelined] = align(s.bytes);
        s.bytes = uint64_t(plan_.depth) * align(s.bytes);
      }
      order.push_back(&s);
    }
    std::sort(order.begin(), order.end(), [](const Slot *a, const Slot *b) {
      if (a->start != b->start)
        return a->start < b->start;
      return a->bytes != b->bytes ? a->bytes > b->bytes : a->seq < b->seq;
    });
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
    for (const Slot *s : order) {
      uint64_t at = 0;
      if (s->matrix && place(acc, opts_.accumulator_bytes, *s, at)) {
        at += npu::isa::kAccBase;
        plan_.acc_peak = std::max(plan_.acc_peak, at - npu::isa::kAccBase + s->bytes);
      } else if (place(sram, opts_.sram_bytes, *s, at)) {
        plan_.sram_peak = std::max(plan_.sram_peak, at + s->bytes);
      } else {
        const std::string &name = s->first->name();
        const std::string msg =
            "tile " + s->first->type().str() + " does not fit the scratchpad (tile " +
            (name.empty() ? std::string("") : "%" + name + ", ") + std::to_string(s->bytes) +
            " bytes" + (s->pipelined ? " in " + std::to_string(plan_.depth) + " buffers" : "") +
            ", while " + std::to_string(live_bytes(sram)) + " bytes of other tiles are live, of " +
            std::to_string(opts_.sram_bytes) + ")";
        for (const ir::Value *m : s->members)
          plan_.overflow[m] = msg;
        continue;
      }
      for (const ir::Value *m : s->members)
        plan_.address[m] = at;
    }
  }

  const ir::Kernel &kernel_;
  const CompileOptions &opts_;
  TilePlan plan_;
  int64_t next_ = 0;
  std::map<const ir::Operation *, int64_t> pos_, end_;
  std::map<const ir::Value *, int64_t> def_;
  std::vector<const ir::Value *> values_; ///< every value, in the order the parser makes them
  std::map<const ir::Value *, std::vector<const ir::Operation *>> users_;
  std::map<const ir::Value *, const ir::Value *> parent_;
};

} // namespace

bool prefetchable(const ir::Operation &op) {
  switch (op.opcode()) {
  case ir::Opcode::Load:
  case ir::Opcode::Full:
  case ir::Opcode::Splat:
  case ir::Opcode::Constant:
    return op.num_results() == 1 && op.result()->type().is_tile();
  default:
    return false;
  }
}

TilePlan plan_tiles(const ir::Kernel &kernel, const CompileOptions &options) {
  return Planner(kernel, options).run();
}

} // namespace tl::tnpu
