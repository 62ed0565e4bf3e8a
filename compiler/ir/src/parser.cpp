// The `.tlir` parser: recursive descent over the lexer's tokens, building ops with SSA scopes.
// SPDX-License-Identifier: Apache-2.0
#include "tl/ir/parser.h"

#include "lexer.h"

#include <cctype>
#include <unordered_map>

namespace tl::ir {
namespace {

constexpr size_t kMaxNesting = 256; // bounds recursion on hostile input
constexpr int64_t kMaxTileElements = int64_t(1) << 32;

class Parser {
public:
  Parser(std::string_view text, std::string_view filename) : lex_(text, filename) {}

  std::unique_ptr<Module> parse_module() {
    auto module = std::make_unique<Module>();
    lex_.skip_space();
    while (!lex_.at_end()) {
      parse_kernel(*module);
      lex_.skip_space();
    }
    return module;
  }

  Type parse_type_only() {
    lex_.skip_space();
    Type t = parse_type();
    lex_.skip_space();
    if (!lex_.at_end())
      lex_.fail("unexpected text after type");
    return t;
  }

private:
  // ---- types ----
  Type parse_type() {
    Location loc = lex_.next_loc();
    std::string word = lex_.alnum_word();
    if (word == "tile" || word == "tensor")
      return parse_shaped_type(word, loc);
    auto k = parse_scalar_name(word);
    if (!k)
      lex_.fail_at(loc,
                   word.empty() ? "expected a type" + lex_.found() : "unknown type '" + word + "'");
    return Type::scalar(*k);
  }

  /// `tile<4x8xf32>` or `tensor<?x?xf16>`, after the keyword `word` (at `loc`).
  Type parse_shaped_type(const std::string &word, const Location &loc) {
    const bool tile = word == "tile";
    lex_.expect("<");
    std::vector<int64_t> shape = parse_dimensions(tile);
    std::string elem = lex_.alnum_word();
    auto k = parse_scalar_name(elem);
    if (!k)
      lex_.fail_at(loc, "unknown element type '" + elem + "'");
    if (shape.empty())
      lex_.fail_at(loc, word + " type needs at least one dimension");
    int64_t n = 1;
    for (int64_t d : shape) {
      if (d > 0 && d > kMaxTileElements / n)
        lex_.fail_at(loc, "tile has too many elements (at most 2^32)");
      if (d > 0)
        n *= d;
    }
    lex_.expect(">");
    return tile ? Type::tile(*k, shape) : Type::tensor(*k, static_cast<int>(shape.size()));
  }

  /// `4x8x` (tiles) or `?x?x` (tensors, -1 each), up to the element type.
  std::vector<int64_t> parse_dimensions(bool tile) {
    std::vector<int64_t> shape;
    for (;;) {
      lex_.skip_space();
      if (lex_.peek() == '?') {
        if (tile)
          lex_.fail("tile dimensions must be static");
        lex_.advance();
        shape.push_back(-1);
      } else if (std::isdigit(static_cast<unsigned char>(lex_.peek()))) {
        int64_t d = lex_.dimension(kMaxTileElements);
        if (!tile)
          lex_.fail("tensor dimensions are run-time values: write '?'");
        if (d < 1)
          lex_.fail("tile dimensions must be positive");
        shape.push_back(d);
      } else {
        return shape;
      }
      if (lex_.peek() != 'x')
        lex_.fail("expected 'x' after a dimension" + lex_.found());
      lex_.advance();
    }
  }

  // ---- attributes ----
  Attr parse_attr_value() {
    Location loc = lex_.next_loc();
    if (lex_.peek() == '"')
      return lex_.string_literal();
    if (lex_.peek() == '[') {
      lex_.advance();
      std::vector<int64_t> list;
      if (!lex_.try_consume("]")) {
        do
          list.push_back(lex_.integer("an integer"));
        while (lex_.try_consume(","));
        lex_.expect("]");
      }
      return list;
    }
    if (lex_.try_consume("true"))
      return true;
    if (lex_.try_consume("false"))
      return false;
    if (std::optional<Attr> n = lex_.number(loc))
      return *n;
    if (lex_.at_identifier() || lex_.peek() == '-')
      return parse_type();
    lex_.fail("expected an attribute value" + lex_.found());
  }

  void parse_attr_dict(Operation &op) {
    if (!lex_.at_attr_dict())
      return;
    lex_.expect("{");
    if (lex_.try_consume("}"))
      return;
    do {
      Location loc = lex_.here();
      std::string key = lex_.identifier("an attribute name");
      if (op.attr(key))
        lex_.fail_at(loc, "attribute '" + key + "' given twice");
      lex_.expect("=");
      op.set_attr(key, parse_attr_value());
    } while (lex_.try_consume(","));
    lex_.expect("}");
  }

  // ---- values and scopes ----
  Value *use_value() {
    Location loc = lex_.next_loc();
    std::string n = lex_.value_name();
    auto it = scope_.find(n);
    if (it == scope_.end() || it->second.empty())
      lex_.fail_at(loc, "use of undefined value '%" + n + "'");
    return it->second.back();
  }

  void define(const std::string &n, Value *v, const Location &loc) {
    auto &stack = scope_[n];
    if (!stack.empty())
      lex_.fail_at(loc, "redefinition of value '%" + n + "'");
    stack.push_back(v);
    scope_frames_.back().push_back(n);
    bool numeric = !n.empty() && n.find_first_not_of("0123456789") == std::string::npos;
    if (!numeric) // numbered names are the printer's; it renumbers them
      v->set_name(n);
  }

  void push_scope() { scope_frames_.emplace_back(); }
  void pop_scope() {
    for (auto &n : scope_frames_.back())
      scope_[n].pop_back();
    scope_frames_.pop_back();
  }

  // ---- kernels ----
  void parse_kernel(Module &module) {
    Location loc = lex_.here();
    std::string kw = lex_.identifier("'kernel'");
    if (kw != "kernel")
      lex_.fail_at(loc, "expected 'kernel', found '" + kw + "'");
    lex_.expect("@");
    std::string name = lex_.identifier("a kernel name");
    Kernel *k = module.add_kernel(name, loc);
    if (lex_.try_consume("<")) {
      do
        k->constexprs().push_back(parse_constexpr_param());
      while (lex_.try_consume(","));
      lex_.expect(">");
    }
    push_scope();
    parse_kernel_arguments(*k);
    lex_.expect("{");
    parse_block_body(*k->body());
    pop_scope();
  }

  /// `NAME: type = value`, the value converted to the type.
  ConstexprParam parse_constexpr_param() {
    std::string cname = lex_.identifier("a constexpr parameter name");
    lex_.expect(":");
    Location tloc = lex_.next_loc();
    Type t = parse_type();
    if (!t.is_scalar())
      lex_.fail_at(tloc, "constexpr parameter '" + cname + "' must have a scalar type");
    lex_.expect("=");
    Attr v = parse_attr_value();
    ConstexprParam p{cname, t.elem(), int64_t(0)};
    if (auto *b = std::get_if<bool>(&v); b && t.elem() == ScalarKind::I1)
      v = int64_t(*b);
    if (auto *i = std::get_if<int64_t>(&v); i && is_integer(t.elem()))
      p.value = *i;
    else if (auto *d = std::get_if<double>(&v); d && is_float(t.elem()))
      p.value = *d;
    else if (i && is_float(t.elem()))
      p.value = static_cast<double>(*i);
    else
      lex_.fail_at(tloc, "value of constexpr parameter '" + cname + "' does not match its type");
    return p;
  }

  /// `(%a: type, ...)`: the body's block arguments.
  void parse_kernel_arguments(Kernel &k) {
    lex_.expect("(");
    if (lex_.try_consume(")"))
      return;
    do {
      Location aloc = lex_.next_loc();
      std::string n = lex_.value_name();
      lex_.expect(":");
      Value *arg = k.body()->add_argument(parse_type());
      define(n, arg, aloc);
    } while (lex_.try_consume(","));
    lex_.expect(")");
  }

  // ---- blocks and ops ----
  /// Parses ops until the closing '}' (consumed).
  void parse_block_body(Block &block) {
    if (++depth_ > kMaxNesting)
      lex_.fail("regions are nested too deeply");
    for (;;) {
      lex_.skip_space();
      if (lex_.at_end())
        lex_.fail("expected '}' before end of file");
      if (lex_.peek() == '}') {
        lex_.advance();
        break;
      }
      parse_op(block);
    }
    --depth_;
  }

  void parse_op(Block &block) {
    Location loc = lex_.here();
    std::vector<std::pair<std::string, Location>> results;
    if (lex_.peek() == '%') {
      do {
        Location rloc = lex_.next_loc();
        results.push_back({lex_.value_name(), rloc});
      } while (lex_.try_consume(","));
      lex_.expect("=");
    }
    Location name_loc = lex_.next_loc();
    std::string name = lex_.identifier("an op name");
    auto code = parse_opcode(name);
    if (!code)
      lex_.fail_at(name_loc, "unknown op '" + name + "'");
    auto op = std::make_unique<Operation>(*code, loc);
    op->set_parent(&block);
    Operation *raw = op.get();
    block.ops().push_back(std::move(op));
    std::vector<Type> types;
    if (*code == Opcode::For)
      parse_for(*raw, types);
    else if (*code == Opcode::If)
      parse_if(*raw, types);
    else
      parse_generic(*raw, types);
    if (types.size() != results.size())
      lex_.fail_at(loc, "'" + name + "' names " + std::to_string(results.size()) +
                            " results but gives " + std::to_string(types.size()) + " result types");
    for (size_t i = 0; i < results.size(); ++i)
      define(results[i].first, raw->add_result(types[i]), results[i].second);
  }

  void parse_result_types(std::vector<Type> &types) {
    if (!lex_.try_consume(":"))
      return;
    do
      types.push_back(parse_type());
    while (lex_.try_consume(","));
  }

  void parse_generic(Operation &op, std::vector<Type> &types) {
    // Operands start on the op's own line, so that an op without operands (`print`, `return`)
    // never takes the next line's result for one.
    lex_.skip_blanks();
    if (lex_.peek() == '%') {
      do
        op.add_operand(use_value());
      while (lex_.try_consume(","));
    }
    parse_attr_dict(op);
    parse_result_types(types);
  }

  void parse_for(Operation &op, std::vector<Type> &types) {
    Location ivloc = lex_.next_loc();
    std::string iv = lex_.value_name();
    lex_.expect("=");
    op.add_operand(use_value());
    lex_.expect("to");
    op.add_operand(use_value());
    lex_.expect("step");
    op.add_operand(use_value());
    std::vector<std::pair<std::string, Location>> carried;
    if (lex_.try_consume("iter_args")) {
      lex_.expect("(");
      do {
        Location cloc = lex_.next_loc();
        carried.push_back({lex_.value_name(), cloc});
        lex_.expect("=");
        op.add_operand(use_value());
      } while (lex_.try_consume(","));
      lex_.expect(")");
    }
    parse_attr_dict(op);
    parse_result_types(types);
    if (types.size() != carried.size())
      lex_.fail_at(op.loc(), "'for' carries " + std::to_string(carried.size()) +
                                 " values but gives " + std::to_string(types.size()) +
                                 " result types");
    Block *body = op.add_region();
    push_scope();
    define(iv, body->add_argument(op.operand(0)->type()), ivloc);
    for (size_t i = 0; i < carried.size(); ++i)
      define(carried[i].first, body->add_argument(types[i]), carried[i].second);
    lex_.expect("{");
    parse_block_body(*body);
    pop_scope();
  }

  void parse_if(Operation &op, std::vector<Type> &types) {
    op.add_operand(use_value());
    parse_attr_dict(op);
    parse_result_types(types);
    for (int r = 0; r < 2; ++r) {
      if (r == 1 && !lex_.try_consume("else"))
        break;
      lex_.expect("{");
      push_scope();
      parse_block_body(*op.add_region());
      pop_scope();
    }
  }

  Lexer lex_;
  size_t depth_ = 0;
  std::unordered_map<std::string, std::vector<Value *>> scope_;
  std::vector<std::vector<std::string>> scope_frames_;
};

} // namespace

std::unique_ptr<Module> parse(std::string_view text, std::string_view filename,
                              Diagnostics &diags) {
  Parser p(text, filename);
  try {
    return p.parse_module();
  } catch (const ParseError &e) {
    diags.error(e.loc, e.message);
    return nullptr;
  }
}

std::optional<Type> parse_type(std::string_view text) {
  Parser p(text, "<type>");
  try {
    return p.parse_type_only();
  } catch (const ParseError &) {
    return std::nullopt;
  }
}

} // namespace tl::ir
