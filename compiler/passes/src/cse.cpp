// The cse pass: a scoped hash table of available ops, walked in dominance (program) order.
// SPDX-License-Identifier: Apache-2.0
#include "tl/passes/cse.h"

#include "match.h"
#include "tl/passes/rewrite.h"

#include <bit>
#include <functional>
#include <unordered_map>

namespace tl::passes {
namespace {

size_t hash_combine(size_t seed, size_t v) {
  return seed ^ (v + 0x9e3779b97f4a7c15ULL + (seed << 6) + (seed >> 2));
}

size_t hash_attr(const ir::Attr &a) {
  if (auto *d = std::get_if<double>(&a))
    return std::hash<uint64_t>{}(std::bit_cast<uint64_t>(*d));
  if (auto *i = std::get_if<int64_t>(&a))
    return std::hash<int64_t>{}(*i);
  return std::hash<std::string>{}(ir::attr_str(a));
}

/// Hashes and compares ops by what they compute, not by identity.
struct OpHash {
  size_t operator()(const ir::Operation *op) const {
    size_t h = static_cast<size_t>(op->opcode());
    for (const ir::Value *v : op->operands())
      h = hash_combine(h, std::hash<const ir::Value *>{}(v));
    for (auto &[name, value] : op->attrs())
      h = hash_combine(hash_combine(h, std::hash<std::string>{}(name)), hash_attr(value));
    for (auto &r : op->results())
      h = hash_combine(h, std::hash<std::string>{}(r->type().str()));
    return h;
  }
};

struct OpEqual {
  bool operator()(const ir::Operation *a, const ir::Operation *b) const {
    if (a->opcode() != b->opcode() || a->operands() != b->operands() ||
        a->num_results() != b->num_results() || a->attrs().size() != b->attrs().size())
      return false;
    for (size_t i = 0; i < a->num_results(); ++i)
      if (a->result(i)->type() != b->result(i)->type())
        return false;
    for (size_t i = 0; i < a->attrs().size(); ++i)
      if (a->attrs()[i].first != b->attrs()[i].first ||
          !same_attr(a->attrs()[i].second, b->attrs()[i].second))
        return false;
    return true;
  }
};

/// Writes tensors. print and assert have side effects but leave memory as it was, so reads
/// stay valid across them.
bool clobbers_memory(const ir::Operation &op) {
  return (op.flags() & ir::kWritesMemory) && op.opcode() != ir::Opcode::Print &&
         op.opcode() != ir::Opcode::Assert;
}

bool contains_write(const ir::Operation &op) {
  if (clobbers_memory(op))
    return true;
  for (unsigned r = 0; r < op.num_regions(); ++r)
    for (auto &inner : op.region(r)->ops())
      if (contains_write(*inner))
        return true;
  return false;
}

class Cse {
public:
  explicit Cse(ir::Kernel &kernel) : rw_(kernel) {}

  bool run(ir::Block *block) {
    std::vector<ir::Operation *> inserted; // this scope's entries, removed on exit
    for (auto it = block->ops().begin(); it != block->ops().end();) {
      auto next = std::next(it);
      ir::Operation *op = it->get();
      rw_.remap_operands(*op);
      if (op->num_regions())
        visit_region_op(*op);
      else if (is_candidate(*op))
        visit_candidate(it, inserted);
      else if (clobbers_memory(*op))
        ++epoch_;
      it = next;
    }
    for (ir::Operation *op : inserted)
      available_.erase(op);
    return changed_;
  }

private:
  struct Entry {
    ir::Operation *op;
    unsigned epoch; // for memory reads: valid while no write has happened since
  };

  static bool is_candidate(const ir::Operation &op) {
    const unsigned f = op.flags();
    return (f & (ir::kPure | ir::kReadsMemory)) && !(f & ir::kWritesMemory) &&
           !(f & ir::kTerminator) && op.num_results() > 0;
  }

  void visit_region_op(ir::Operation &op) {
    // A region that may write sees no outside reads (a loop's later iteration runs after its
    // writes), and after it no earlier read is valid.
    const bool writes = contains_write(op);
    if (writes)
      ++epoch_;
    for (unsigned r = 0; r < op.num_regions(); ++r)
      run(op.region(r));
    if (writes)
      ++epoch_;
  }

  void visit_candidate(OpIterator it, std::vector<ir::Operation *> &inserted) {
    ir::Operation *op = it->get();
    const bool reads = op->flags() & ir::kReadsMemory;
    auto found = available_.find(op);
    if (found != available_.end() && (!reads || found->second.epoch == epoch_)) {
      std::vector<ir::Value *> results;
      for (auto &r : found->second.op->results())
        results.push_back(r.get());
      trace_rewrite("cse-" + std::string(op->name()), op->loc());
      rw_.replace_op(it, results);
      changed_ = true;
      return;
    }
    if (found != available_.end()) { // a stale read: the newer one takes its place
      found->second = {op, epoch_};
      inserted.push_back(op);
      return;
    }
    available_.emplace(op, Entry{op, epoch_});
    inserted.push_back(op);
  }

  Rewriter rw_;
  std::unordered_map<ir::Operation *, Entry, OpHash, OpEqual> available_;
  unsigned epoch_ = 0;
  bool changed_ = false;
};

} // namespace

bool run_cse(ir::Kernel &kernel) { return Cse(kernel).run(kernel.body()); }

} // namespace tl::passes
