// Tile IR core objects: op table, attributes, blocks, ops, kernels, modules.
// SPDX-License-Identifier: Apache-2.0
#include "tl/ir/ir.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>

namespace tl::ir {
namespace {
struct OpInfo {
  std::string_view name;
  unsigned flags;
};
constexpr OpInfo kOps[] = {
#define TL_OP(id, text, flags) {text, flags},
#include "tl/ir/ops.def"
#undef TL_OP
};
} // namespace

std::string_view opcode_name(Opcode op) { return kOps[static_cast<size_t>(op)].name; }
unsigned opcode_flags(Opcode op) { return kOps[static_cast<size_t>(op)].flags; }

std::optional<Opcode> parse_opcode(std::string_view name) {
  for (size_t i = 0; i < std::size(kOps); ++i)
    if (kOps[i].name == name)
      return static_cast<Opcode>(i);
  return std::nullopt;
}

std::string Location::str() const {
  return (file ? *file : std::string("<unknown>")) + ":" + std::to_string(line) + ":" +
         std::to_string(col);
}

namespace {
/// Shortest text that parses back to exactly `d`, always recognisable as a float.
std::string float_str(double d) {
  if (std::isnan(d))
    return "nan";
  if (std::isinf(d))
    return d < 0 ? "-inf" : "inf";
  char buf[64];
  for (int prec = 1; prec <= 17; ++prec) {
    std::snprintf(buf, sizeof buf, "%.*g", prec, d);
    if (std::strtod(buf, nullptr) == d)
      break;
  }
  std::string s = buf;
  if (s.find_first_of(".en") == std::string::npos)
    s += ".0";
  return s;
}

std::string quote(const std::string &s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (c == '\n') {
      out += "\\n";
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\%02x", static_cast<unsigned char>(c));
      out += buf;
    } else {
      out += c;
    }
  }
  return out + "\"";
}
} // namespace

std::string attr_str(const Attr &a) {
  struct Printer {
    std::string operator()(bool b) const { return b ? "true" : "false"; }
    std::string operator()(int64_t i) const { return std::to_string(i); }
    std::string operator()(double d) const { return float_str(d); }
    std::string operator()(const std::string &s) const { return quote(s); }
    std::string operator()(const std::vector<int64_t> &v) const {
      std::string s = "[";
      for (size_t i = 0; i < v.size(); ++i)
        s += (i ? ", " : "") + std::to_string(v[i]);
      return s + "]";
    }
    std::string operator()(const Type &t) const { return t.str(); }
  };
  return std::visit(Printer{}, a);
}

Block *Value::owner() const { return def_ ? def_->parent() : owner_; }

Value *Block::add_argument(Type t) {
  args_.push_back(std::make_unique<Value>(std::move(t), nullptr, this, args_.size()));
  return args_.back().get();
}

Operation *Block::terminator() const {
  if (ops_.empty() || !(ops_.back()->flags() & kTerminator))
    return nullptr;
  return ops_.back().get();
}

Value *Operation::add_result(Type t) {
  results_.push_back(std::make_unique<Value>(std::move(t), this, parent_, results_.size()));
  return results_.back().get();
}

Block *Operation::add_region() {
  regions_.push_back(std::make_unique<Block>(this));
  return regions_.back().get();
}

const Attr *Operation::attr(std::string_view name) const {
  for (auto &[k, v] : attrs_)
    if (k == name)
      return &v;
  return nullptr;
}

void Operation::set_attr(std::string name, Attr value) {
  auto it = std::lower_bound(attrs_.begin(), attrs_.end(), name,
                             [](const auto &kv, const std::string &n) { return kv.first < n; });
  if (it != attrs_.end() && it->first == name)
    it->second = std::move(value);
  else
    attrs_.insert(it, {std::move(name), std::move(value)});
}

bool Operation::remove_attr(std::string_view name) {
  return std::erase_if(attrs_, [&](const auto &kv) { return kv.first == name; }) > 0;
}

const ConstexprParam *Kernel::find_constexpr(std::string_view name) const {
  for (auto &c : constexprs_)
    if (c.name == name)
      return &c;
  return nullptr;
}

Kernel *Module::find_kernel(std::string_view name) const {
  for (auto &k : kernels_)
    if (k->name() == name)
      return k.get();
  return nullptr;
}

Kernel *Module::add_kernel(std::string name, Location loc) {
  kernels_.push_back(std::make_unique<Kernel>(std::move(name), std::move(loc)));
  return kernels_.back().get();
}

std::string_view cast_rounding(const Operation &op) {
  if (const std::string *r = op.attr_as<std::string>("rounding"))
    return *r;
  const bool float_to_int =
      is_float(op.operand(0)->type().elem()) && !is_float(op.result()->type().elem());
  return float_to_int ? "rtz" : "rne";
}

} // namespace tl::ir
