// The `.tlir` printer. Value names come from name hints when unique, otherwise %0, %1, ...
// SPDX-License-Identifier: Apache-2.0
#include "tl/ir/printer.h"

#include <algorithm>
#include <set>
#include <unordered_map>

namespace tl::ir {
namespace {

class KernelPrinter {
public:
  KernelPrinter(const Kernel &k, std::vector<Location> *op_locs, size_t line_base)
      : kernel_(k), op_locs_(op_locs), line_base_(line_base) {
    // Reserve every hinted name first so that numbering never collides with one.
    walk_values([&](const Value *v) {
      if (!v->name().empty())
        hinted_.insert(v->name());
    });
  }

  std::string run() {
    out_ = "kernel @" + kernel_.name();
    if (!kernel_.constexprs().empty()) {
      out_ += "<";
      for (size_t i = 0; i < kernel_.constexprs().size(); ++i) {
        const ConstexprParam &c = kernel_.constexprs()[i];
        out_ += (i ? ", " : "") + c.name + ": " + std::string(scalar_name(c.type)) + " = ";
        out_ += std::visit([](auto v) { return attr_str(Attr(v)); }, c.value);
      }
      out_ += ">";
    }
    out_ += "(";
    const auto &args = kernel_.body()->arguments();
    for (size_t i = 0; i < args.size(); ++i)
      out_ += (i ? ", " : "") + name(args[i].get()) + ": " + args[i]->type().str();
    out_ += ") {\n";
    print_block(*kernel_.body(), 1);
    out_ += "}\n";
    return out_;
  }

private:
  template <class Fn> void walk_values(Fn fn) {
    for (auto &a : kernel_.body()->arguments())
      fn(a.get());
    walk(kernel_.body(), [&](Operation *op) {
      for (auto &r : op->results())
        fn(r.get());
      for (unsigned i = 0; i < op->num_regions(); ++i)
        for (auto &a : op->region(i)->arguments())
          fn(a.get());
    });
  }

  std::string name(const Value *v) {
    if (!v)
      return "%<null>";
    auto it = names_.find(v);
    if (it != names_.end())
      return it->second;
    std::string n;
    if (!v->name().empty() && used_.insert(v->name()).second) {
      n = v->name();
    } else {
      do
        n = std::to_string(next_++);
      while (hinted_.count(n) || !used_.insert(n).second);
    }
    return names_[v] = "%" + n;
  }

  void indent(int depth) { out_.append(2 * depth, ' '); }

  void print_block(const Block &b, int depth) {
    for (auto &op : b.ops())
      print_op(*op, depth);
  }

  std::string operand_list(const Operation &op, size_t from, size_t to) {
    std::string s;
    for (size_t i = from; i < to; ++i)
      s += (i > from ? ", " : "") + name(op.operand(i));
    return s;
  }

  void print_result_types(const Operation &op) {
    if (op.num_results() == 0)
      return;
    out_ += " : ";
    for (size_t i = 0; i < op.num_results(); ++i)
      out_ += (i ? ", " : "") + op.result(i)->type().str();
  }

  void print_op(const Operation &op, int depth) {
    if (op_locs_) { // the line this op starts on: lines counted so far in the module's text
      line_base_ += size_t(std::count(out_.begin() + counted_, out_.end(), '\n'));
      counted_ = out_.size();
      const size_t line = line_base_;
      if (op_locs_->size() <= line)
        op_locs_->resize(line + 1);
      (*op_locs_)[line] = op.loc();
    }
    indent(depth);
    if (op.num_results()) {
      for (size_t i = 0; i < op.num_results(); ++i)
        out_ += (i ? ", " : "") + name(op.result(i));
      out_ += " = ";
    }
    out_ += op.name();
    if (op.opcode() == Opcode::For) {
      Block *body = op.region(0);
      out_ += " " + name(body->argument(0)) + " = " + name(op.operand(0)) + " to " +
              name(op.operand(1)) + " step " + name(op.operand(2));
      if (op.num_operands() > 3) {
        out_ += " iter_args(";
        for (size_t i = 3; i < op.num_operands(); ++i)
          out_ += (i > 3 ? ", " : "") + name(body->argument(i - 2)) + " = " + name(op.operand(i));
        out_ += ")";
      }
    } else if (op.num_operands()) {
      out_ += " " + operand_list(op, 0, op.num_operands());
    }
    if (!op.attrs().empty()) {
      out_ += " {";
      for (size_t i = 0; i < op.attrs().size(); ++i)
        out_ += (i ? ", " : "") + op.attrs()[i].first + " = " + attr_str(op.attrs()[i].second);
      out_ += "}";
    }
    print_result_types(op);
    for (unsigned r = 0; r < op.num_regions(); ++r) {
      out_ += r ? " else {\n" : " {\n";
      print_block(*op.region(r), depth + 1);
      indent(depth);
      out_ += "}";
    }
    out_ += "\n";
  }

  const Kernel &kernel_;
  std::vector<Location> *op_locs_;
  size_t line_base_; // lines before out_[counted_]
  size_t counted_ = 0;
  std::string out_;
  std::unordered_map<const Value *, std::string> names_;
  std::set<std::string> hinted_, used_;
  int next_ = 0;
};

} // namespace

std::string print(const Kernel &kernel) { return KernelPrinter(kernel, nullptr, 0).run(); }

std::string print(const Module &module, std::vector<Location> *op_locs) {
  std::string s;
  if (op_locs)
    op_locs->clear();
  for (size_t i = 0; i < module.kernels().size(); ++i) {
    s += i ? "\n" : "";
    const size_t lines = size_t(std::count(s.begin(), s.end(), '\n'));
    s += KernelPrinter(*module.kernels()[i], op_locs, lines).run();
  }
  return s;
}

} // namespace tl::ir
