// The `.tlir` parser: a hand-written recursive-descent reader over characters.
// SPDX-License-Identifier: Apache-2.0
#include "tl/ir/parser.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <unordered_map>

namespace tl::ir {
namespace {

struct ParseError {
  Location loc;
  std::string message;
};

constexpr size_t kMaxNesting = 256; // bounds recursion on hostile input
constexpr int64_t kMaxTileElements = int64_t(1) << 32;

bool is_ident_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '$';
}

class Parser {
public:
  Parser(std::string_view text, std::string_view filename)
      : text_(text), file_(std::make_shared<const std::string>(filename)) {}

  std::unique_ptr<Module> parse_module() {
    auto module = std::make_unique<Module>();
    skip_space();
    while (pos_ < text_.size()) {
      parse_kernel(*module);
      skip_space();
    }
    return module;
  }

  Type parse_type_only() {
    skip_space();
    Type t = parse_type();
    skip_space();
    if (pos_ != text_.size())
      fail("unexpected text after type");
    return t;
  }

  [[noreturn]] void fail(const std::string &msg) { fail_at(here(), msg); }
  [[noreturn]] void fail_at(const Location &loc, const std::string &msg) {
    throw ParseError{loc, msg};
  }

private:
  // ---- lexical helpers ----
  Location here() const { return Location{file_, line_, col_}; }
  char peek(size_t ahead = 0) const {
    return pos_ + ahead < text_.size() ? text_[pos_ + ahead] : '\0';
  }
  void advance() {
    if (text_[pos_] == '\n') {
      ++line_;
      col_ = 1;
    } else {
      ++col_;
    }
    ++pos_;
  }
  void skip_space() {
    while (pos_ < text_.size()) {
      if (std::isspace(static_cast<unsigned char>(peek()))) {
        advance();
      } else if (peek() == '/' && peek(1) == '/') {
        while (pos_ < text_.size() && peek() != '\n')
          advance();
      } else {
        break;
      }
    }
  }
  bool try_consume(std::string_view s) {
    skip_space();
    if (text_.substr(pos_, s.size()) != s)
      return false;
    for (size_t i = 0; i < s.size(); ++i)
      advance();
    return true;
  }
  void expect(std::string_view s) {
    if (!try_consume(s))
      fail("expected '" + std::string(s) + "'" + found());
  }
  std::string found() {
    skip_space();
    if (pos_ >= text_.size())
      return ", found end of file";
    size_t n = 1;
    while (n < 12 && pos_ + n < text_.size() && is_ident_char(text_[pos_ + n]) &&
           is_ident_char(text_[pos_]))
      ++n;
    std::string tok(text_.substr(pos_, n));
    for (char &c : tok)
      if (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) >= 0x7f)
        c = '?';
    return ", found '" + tok + "'";
  }
  std::string identifier(const char *what) {
    skip_space();
    size_t start = pos_;
    while (pos_ < text_.size() && is_ident_char(peek()))
      advance();
    if (start == pos_)
      fail(std::string("expected ") + what + found());
    return std::string(text_.substr(start, pos_ - start));
  }
  bool at_identifier() {
    skip_space();
    return std::isalpha(static_cast<unsigned char>(peek())) || peek() == '_';
  }

  int64_t integer(const char *what) {
    skip_space();
    Location loc = here();
    size_t start = pos_;
    if (peek() == '-' || peek() == '+')
      advance();
    while (std::isdigit(static_cast<unsigned char>(peek())))
      advance();
    std::string s(text_.substr(start, pos_ - start));
    if (s.empty() || s == "-" || s == "+")
      fail_at(loc, std::string("expected ") + what + found());
    errno = 0;
    long long v = std::strtoll(s.c_str(), nullptr, 10);
    if (errno == ERANGE)
      fail_at(loc, "integer " + s + " does not fit in 64 bits");
    return v;
  }

  // ---- types ----
  Type parse_type() {
    skip_space();
    Location loc = here();
    std::string word;
    while (std::isalnum(static_cast<unsigned char>(peek())))
      word += peek(), advance();
    if (word == "tile" || word == "tensor") {
      const bool tile = word == "tile";
      expect("<");
      std::vector<int64_t> shape;
      for (;;) {
        skip_space();
        if (peek() == '?') {
          if (tile)
            fail("tile dimensions must be static");
          advance();
          shape.push_back(-1);
        } else if (std::isdigit(static_cast<unsigned char>(peek()))) {
          int64_t d = 0;
          while (std::isdigit(static_cast<unsigned char>(peek()))) {
            d = d * 10 + (peek() - '0');
            if (d > kMaxTileElements)
              fail("dimension is too large");
            advance();
          }
          if (!tile)
            fail("tensor dimensions are run-time values: write '?'");
          if (d < 1)
            fail("tile dimensions must be positive");
          shape.push_back(d);
        } else {
          break;
        }
        if (peek() != 'x')
          fail("expected 'x' after a dimension" + found());
        advance();
      }
      std::string elem;
      while (std::isalnum(static_cast<unsigned char>(peek())))
        elem += peek(), advance();
      auto k = parse_scalar_name(elem);
      if (!k)
        fail_at(loc, "unknown element type '" + elem + "'");
      if (shape.empty())
        fail_at(loc, word + " type needs at least one dimension");
      int64_t n = 1;
      for (int64_t d : shape) {
        if (d > 0 && d > kMaxTileElements / n)
          fail_at(loc, "tile has too many elements (at most 2^32)");
        if (d > 0)
          n *= d;
      }
      expect(">");
      return tile ? Type::tile(*k, shape) : Type::tensor(*k, static_cast<int>(shape.size()));
    }
    auto k = parse_scalar_name(word);
    if (!k)
      fail_at(loc, word.empty() ? "expected a type" + found() : "unknown type '" + word + "'");
    return Type::scalar(*k);
  }

  // ---- attributes ----
  Attr parse_attr_value() {
    skip_space();
    Location loc = here();
    if (peek() == '"')
      return parse_string();
    if (peek() == '[') {
      advance();
      std::vector<int64_t> list;
      if (!try_consume("]")) {
        do
          list.push_back(integer("an integer"));
        while (try_consume(","));
        expect("]");
      }
      return list;
    }
    if (try_consume("true"))
      return true;
    if (try_consume("false"))
      return false;
    // Numbers: integers unless they carry '.', 'e', inf or nan.
    size_t start = pos_;
    if (peek() == '-' || peek() == '+')
      advance();
    if (text_.substr(pos_, 3) == "inf" || text_.substr(pos_, 3) == "nan") {
      bool neg = text_[start] == '-';
      bool nan = text_.substr(pos_, 3) == "nan";
      for (int i = 0; i < 3; ++i)
        advance();
      return nan ? std::nan("") : (neg ? -HUGE_VAL : HUGE_VAL);
    }
    if (std::isdigit(static_cast<unsigned char>(peek()))) {
      bool is_float = false;
      while (std::isdigit(static_cast<unsigned char>(peek())) || peek() == '.' || peek() == 'e' ||
             peek() == 'E' ||
             ((peek() == '-' || peek() == '+') && (text_[pos_ - 1] == 'e' || text_[pos_ - 1] == 'E'))) {
        is_float |= peek() == '.' || peek() == 'e' || peek() == 'E';
        advance();
      }
      std::string s(text_.substr(start, pos_ - start));
      char *end = nullptr;
      errno = 0;
      if (is_float) {
        double d = std::strtod(s.c_str(), &end);
        if (*end != '\0')
          fail_at(loc, "malformed number '" + s + "'");
        return d;
      }
      long long v = std::strtoll(s.c_str(), &end, 10);
      if (errno == ERANGE)
        fail_at(loc, "integer " + s + " does not fit in 64 bits");
      return static_cast<int64_t>(v);
    }
    pos_ = start; // a sign alone is not a value; rewind before reporting
    if (at_identifier() || peek() == '-')
      return parse_type();
    fail("expected an attribute value" + found());
  }

  std::string parse_string() {
    expect("\"");
    std::string s;
    for (;;) {
      if (pos_ >= text_.size() || peek() == '\n')
        fail("unterminated string");
      char c = peek();
      advance();
      if (c == '"')
        return s;
      if (c != '\\') {
        s += c;
        continue;
      }
      char e = peek();
      if (pos_ >= text_.size())
        fail("unterminated string");
      advance();
      if (e == 'n') {
        s += '\n';
      } else if (e == '"' || e == '\\') {
        s += e;
      } else if (std::isxdigit(static_cast<unsigned char>(e)) &&
                 std::isxdigit(static_cast<unsigned char>(peek()))) {
        char hex[3] = {e, peek(), 0};
        advance();
        s += static_cast<char>(std::strtol(hex, nullptr, 16));
      } else {
        fail("unknown escape in string");
      }
    }
  }

  /// An attribute dictionary is `{}` or `{name = ...`; anything else after `{` is a region.
  bool at_attr_dict() {
    skip_space();
    if (peek() != '{')
      return false;
    size_t p = pos_ + 1;
    auto skip = [&] {
      while (p < text_.size() && std::isspace(static_cast<unsigned char>(text_[p])))
        ++p;
    };
    skip();
    if (p < text_.size() && text_[p] == '}')
      return true;
    size_t start = p;
    while (p < text_.size() && is_ident_char(text_[p]))
      ++p;
    if (p == start)
      return false;
    skip();
    return p < text_.size() && text_[p] == '=';
  }

  void parse_attr_dict(Operation &op) {
    if (!at_attr_dict())
      return;
    expect("{");
    if (try_consume("}"))
      return;
    do {
      Location loc = here();
      std::string key = identifier("an attribute name");
      if (op.attr(key))
        fail_at(loc, "attribute '" + key + "' given twice");
      expect("=");
      op.set_attr(key, parse_attr_value());
    } while (try_consume(","));
    expect("}");
  }

  // ---- values and scopes ----
  std::string value_name() {
    skip_space();
    if (peek() != '%')
      fail("expected a value name like %x" + found());
    advance();
    size_t start = pos_;
    while (is_ident_char(peek()))
      advance();
    if (start == pos_)
      fail("expected a value name after '%'");
    return std::string(text_.substr(start, pos_ - start));
  }

  Value *use_value() {
    Location loc = (skip_space(), here());
    std::string n = value_name();
    auto it = scope_.find(n);
    if (it == scope_.end() || it->second.empty())
      fail_at(loc, "use of undefined value '%" + n + "'");
    return it->second.back();
  }

  void define(const std::string &n, Value *v, const Location &loc) {
    auto &stack = scope_[n];
    if (!stack.empty())
      fail_at(loc, "redefinition of value '%" + n + "'");
    stack.push_back(v);
    scope_frames_.back().push_back(n);
    bool numeric = !n.empty() && n.find_first_not_of("0123456789") == std::string::npos;
    if (!numeric)
      v->set_name(n);
  }

  void push_scope() { scope_frames_.emplace_back(); }
  void pop_scope() {
    for (auto &n : scope_frames_.back())
      scope_[n].pop_back();
    scope_frames_.pop_back();
  }

  // ---- kernels, blocks, ops ----
  void parse_kernel(Module &module) {
    Location loc = here();
    std::string kw = identifier("'kernel'");
    if (kw != "kernel")
      fail_at(loc, "expected 'kernel', found '" + kw + "'");
    expect("@");
    std::string name = identifier("a kernel name");
    Kernel *k = module.add_kernel(name, loc);
    kernel_ = k;
    if (try_consume("<")) {
      do {
        std::string cname = identifier("a constexpr parameter name");
        expect(":");
        Location tloc = (skip_space(), here());
        Type t = parse_type();
        if (!t.is_scalar())
          fail_at(tloc, "constexpr parameter '" + cname + "' must have a scalar type");
        expect("=");
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
          fail_at(tloc, "value of constexpr parameter '" + cname + "' does not match its type");
        k->constexprs().push_back(p);
      } while (try_consume(","));
      expect(">");
    }
    push_scope();
    expect("(");
    if (!try_consume(")")) {
      do {
        Location aloc = (skip_space(), here());
        std::string n = value_name();
        expect(":");
        Value *arg = k->body()->add_argument(parse_type());
        define(n, arg, aloc);
      } while (try_consume(","));
      expect(")");
    }
    expect("{");
    parse_block_body(*k->body());
    pop_scope();
  }

  /// Parses ops until the closing '}' (consumed).
  void parse_block_body(Block &block) {
    if (++depth_ > kMaxNesting)
      fail("regions are nested too deeply");
    for (;;) {
      skip_space();
      if (pos_ >= text_.size())
        fail("expected '}' before end of file");
      if (peek() == '}') {
        advance();
        break;
      }
      parse_op(block);
    }
    --depth_;
  }

  void parse_op(Block &block) {
    Location loc = here();
    std::vector<std::pair<std::string, Location>> results;
    if (peek() == '%') {
      do {
        Location rloc = (skip_space(), here());
        results.push_back({value_name(), rloc});
      } while (try_consume(","));
      expect("=");
    }
    Location name_loc = (skip_space(), here());
    std::string name = identifier("an op name");
    auto code = parse_opcode(name);
    if (!code)
      fail_at(name_loc, "unknown op '" + name + "'");
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
      fail_at(loc, "'" + name + "' names " + std::to_string(results.size()) + " results but gives " +
                       std::to_string(types.size()) + " result types");
    for (size_t i = 0; i < results.size(); ++i)
      define(results[i].first, raw->add_result(types[i]), results[i].second);
  }

  void parse_result_types(std::vector<Type> &types) {
    if (!try_consume(":"))
      return;
    do
      types.push_back(parse_type());
    while (try_consume(","));
  }

  void parse_generic(Operation &op, std::vector<Type> &types) {
    // Operands start on the op's own line, so that an op without operands (`print`, `return`)
    // never takes the next line's result for one.
    while (peek() == ' ' || peek() == '\t')
      advance();
    if (peek() == '%') {
      do
        op.add_operand(use_value());
      while (try_consume(","));
    }
    parse_attr_dict(op);
    parse_result_types(types);
  }

  void parse_for(Operation &op, std::vector<Type> &types) {
    Location ivloc = (skip_space(), here());
    std::string iv = value_name();
    expect("=");
    op.add_operand(use_value());
    expect("to");
    op.add_operand(use_value());
    expect("step");
    op.add_operand(use_value());
    std::vector<std::pair<std::string, Location>> carried;
    if (try_consume("iter_args")) {
      expect("(");
      do {
        Location cloc = (skip_space(), here());
        carried.push_back({value_name(), cloc});
        expect("=");
        op.add_operand(use_value());
      } while (try_consume(","));
      expect(")");
    }
    parse_attr_dict(op);
    parse_result_types(types);
    if (types.size() != carried.size())
      fail_at(op.loc(), "'for' carries " + std::to_string(carried.size()) + " values but gives " +
                            std::to_string(types.size()) + " result types");
    Block *body = op.add_region();
    push_scope();
    define(iv, body->add_argument(op.operand(0)->type()), ivloc);
    for (size_t i = 0; i < carried.size(); ++i)
      define(carried[i].first, body->add_argument(types[i]), carried[i].second);
    expect("{");
    parse_block_body(*body);
    pop_scope();
  }

  void parse_if(Operation &op, std::vector<Type> &types) {
    op.add_operand(use_value());
    parse_attr_dict(op);
    parse_result_types(types);
    for (int r = 0; r < 2; ++r) {
      if (r == 1 && !try_consume("else"))
        break;
      expect("{");
      push_scope();
      parse_block_body(*op.add_region());
      pop_scope();
    }
  }

  std::string_view text_;
  std::shared_ptr<const std::string> file_;
  size_t pos_ = 0;
  int line_ = 1, col_ = 1;
  size_t depth_ = 0;
  Kernel *kernel_ = nullptr;
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
