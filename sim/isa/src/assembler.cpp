// The TNPU assembler: two passes (labels, then operands), diagnostics with line:col.
// SPDX-License-Identifier: Apache-2.0
#include "tl/npu/assembler.h"

#include <cctype>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <sstream>

namespace tl::npu::isa {
namespace {

struct Token {
  std::string text;
  int col;
};

/// One source line after splitting: optional labels, a mnemonic and its comma-separated operands.
struct Line {
  int number;
  std::vector<Token> labels;
  Token mnemonic;
  std::vector<Token> operands;
};

/// Thrown inside the assembler only; becomes a Diagnostic.
struct Error {
  int col;
  std::string message;
};

bool ident_start(char c) {
  return std::isalpha(static_cast<unsigned char>(c)) || c == '_' || c == '.';
}
bool ident_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.';
}

std::string trim(const std::string &s, int &col) {
  size_t b = s.find_first_not_of(" \t\r");
  if (b == std::string::npos)
    return "";
  size_t e = s.find_last_not_of(" \t\r");
  col += static_cast<int>(b);
  return s.substr(b, e + 1 - b);
}

Line split_line(const std::string &raw, int number) {
  Line line{number, {}, {"", 0}, {}};
  std::string text = raw.substr(0, raw.find_first_of("#;"));
  size_t pos = 0;
  for (;;) { // leading `label:` prefixes
    size_t b = text.find_first_not_of(" \t\r", pos);
    if (b == std::string::npos)
      return line;
    size_t e = b;
    while (e < text.size() && ident_char(text[e]))
      ++e;
    if (e > b && e < text.size() && text[e] == ':') {
      line.labels.push_back({text.substr(b, e - b), static_cast<int>(b) + 1});
      pos = e + 1;
      continue;
    }
    pos = b;
    break;
  }
  size_t e = pos;
  while (e < text.size() && !std::isspace(static_cast<unsigned char>(text[e])))
    ++e;
  line.mnemonic = {text.substr(pos, e - pos), static_cast<int>(pos) + 1};
  size_t start = e;
  while (start < text.size()) {
    size_t comma = text.find(',', start);
    std::string part =
        text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    int col = static_cast<int>(start) + 1;
    std::string t = trim(part, col);
    if (t.empty() && (comma != std::string::npos || !line.operands.empty()))
      throw Error{col, "empty operand"};
    if (!t.empty())
      line.operands.push_back({t, col});
    if (comma == std::string::npos)
      break;
    start = comma + 1;
  }
  return line;
}

/// Integer expression evaluator over one operand's text.
class Expr {
public:
  Expr(const Token &tok, const std::map<std::string, int64_t> &symbols)
      : s_(tok.text), col0_(tok.col), symbols_(symbols) {}

  int64_t evaluate() {
    int64_t v = parse_or();
    skip_space();
    if (p_ != s_.size())
      fail("unexpected '" + std::string(1, s_[p_]) + "' in expression");
    return v;
  }

private:
  [[noreturn]] void fail(const std::string &msg) { throw Error{col0_ + static_cast<int>(p_), msg}; }
  void skip_space() {
    while (p_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[p_])))
      ++p_;
  }
  bool eat(const char *op) {
    skip_space();
    size_t n = std::strlen(op);
    if (s_.compare(p_, n, op) != 0)
      return false;
    p_ += n;
    return true;
  }
  int64_t parse_or() {
    int64_t v = parse_and();
    while (eat("|"))
      v |= parse_and();
    return v;
  }
  int64_t parse_and() {
    int64_t v = parse_shift();
    while (eat("&"))
      v &= parse_shift();
    return v;
  }
  int64_t parse_shift() {
    int64_t v = parse_sum();
    for (;;) {
      if (eat("<<"))
        v = static_cast<int64_t>(static_cast<uint64_t>(v) << (parse_sum() & 63));
      else if (eat(">>"))
        v >>= (parse_sum() & 63);
      else
        return v;
    }
  }
  /// a op b, or a located error where the result does not fit 64 bits.
  int64_t checked(char op, int64_t a, int64_t b, size_t at) {
    int64_t r = 0;
    const bool overflow = op == '+'   ? __builtin_add_overflow(a, b, &r)
                          : op == '-' ? __builtin_sub_overflow(a, b, &r)
                          : op == '*' ? __builtin_mul_overflow(a, b, &r)
                                      : b == -1 && a == INT64_MIN; // '/' and '%'
    if (overflow) {
      p_ = at;
      fail("integer overflow: the value does not fit 64 bits");
    }
    return op == '+' || op == '-' || op == '*' ? r : (op == '/' ? a / b : a % b);
  }
  int64_t parse_sum() {
    int64_t v = parse_product();
    for (;;) {
      skip_space();
      const size_t at = p_; // the operator, where an overflow is reported
      if (eat("+"))
        v = checked('+', v, parse_product(), at);
      else if (eat("-"))
        v = checked('-', v, parse_product(), at);
      else
        return v;
    }
  }
  int64_t parse_product() {
    int64_t v = parse_unary();
    for (;;) {
      skip_space();
      const size_t op_at = p_; // the operator, where an overflow is reported
      char op = 0;
      if (eat("*"))
        op = '*';
      else if (eat("/"))
        op = '/';
      else if (eat("%"))
        op = '%';
      else
        return v;
      size_t at = p_;
      int64_t r = parse_unary();
      if (op != '*' && r == 0) {
        p_ = at;
        fail("division by zero");
      }
      v = checked(op, v, r, op_at);
    }
  }
  int64_t parse_unary() {
    if (const size_t at = p_; eat("-"))
      return checked('-', 0, parse_unary(), at);
    if (eat("~"))
      return ~parse_unary();
    if (eat("(")) {
      int64_t v = parse_or();
      if (!eat(")"))
        fail("expected ')'");
      return v;
    }
    skip_space();
    if (p_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[p_])))
      return parse_number();
    if (p_ < s_.size() && ident_start(s_[p_])) {
      size_t b = p_;
      while (p_ < s_.size() && ident_char(s_[p_]))
        ++p_;
      std::string name = s_.substr(b, p_ - b);
      auto it = symbols_.find(name);
      if (it == symbols_.end()) {
        p_ = b;
        fail("unknown symbol '" + name + "'");
      }
      return it->second;
    }
    fail(p_ < s_.size() ? "expected a number or symbol" : "expected an expression");
  }
  int64_t parse_number() {
    size_t b = p_;
    while (p_ < s_.size() &&
           (std::isalnum(static_cast<unsigned char>(s_[p_])) || s_[p_] == '.' ||
            ((s_[p_] == '+' || s_[p_] == '-') && (s_[p_ - 1] == 'e' || s_[p_ - 1] == 'E') &&
             s_.compare(b, 2, "0x") != 0)))
      ++p_;
    std::string t = s_.substr(b, p_ - b);
    char *end = nullptr;
    if (t.size() > 1 && t.back() == 'f' && t.compare(0, 2, "0x") != 0) { // f32 literal
      float f = std::strtof(t.c_str(), &end);
      if (end != t.c_str() + t.size() - 1) {
        p_ = b;
        fail("malformed f32 literal '" + t + "'");
      }
      uint32_t bits;
      std::memcpy(&bits, &f, 4);
      return bits;
    }
    errno = 0;
    unsigned long long v = std::strtoull(t.c_str(), &end, 0);
    if (end != t.c_str() + t.size() || errno == ERANGE) {
      p_ = b;
      fail("malformed number '" + t + "'");
    }
    return static_cast<int64_t>(v);
  }

  std::string s_;
  size_t p_ = 0;
  int col0_;
  const std::map<std::string, int64_t> &symbols_;
};

/// Parses a `prefix<N>` operand (r5, s3) with N < limit.
int parse_indexed(const Token &t, char prefix, int limit, const char *what) {
  const std::string &s = t.text;
  if (s.size() < 2 || s[0] != prefix || !std::isdigit(static_cast<unsigned char>(s[1])))
    throw Error{t.col, std::string("expected a ") + what + " (" + prefix + "0.." + prefix +
                           std::to_string(limit - 1) + "), got '" + s + "'"};
  char *end = nullptr;
  long v = std::strtol(s.c_str() + 1, &end, 10);
  if (*end != 0 || v >= limit)
    throw Error{t.col, std::string("no ") + what + " '" + s + "'"};
  return static_cast<int>(v);
}

class Assembler {
public:
  explicit Assembler(const std::map<std::string, int64_t> &defines) : symbols_(defines) {
    static const char *const kDtypes[] = {"bf16", "f16", "f32", "i8", "i32"};
    for (int i = 0; i < 5; ++i)
      symbols_.emplace(kDtypes[i], i);
    symbols_.emplace("ACC", static_cast<int64_t>(kAccBase));
    static const char *const kRounding[] = {"rne", "rtz", "rdn", "rup"}; // v.cfgi rm, ...
    for (int i = 0; i < 4; ++i)
      symbols_.emplace(kRounding[i], i);
  }

  Assembly run(const std::string &text) {
    std::vector<Line> lines;
    std::istringstream in(text);
    std::string raw;
    for (int n = 1; std::getline(in, raw); ++n)
      guarded(n, [&] { first_pass(split_line(raw, n), lines); });
    for (const Line &l : lines)
      guarded(l.number, [&] { emit(l); });
    return std::move(out_);
  }

private:
  template <class F> void guarded(int line, F &&f) {
    try {
      f();
    } catch (const Error &e) {
      out_.errors.push_back({line, e.col, e.message});
    }
  }

  /// Records labels and .equ, counts instruction words (li may take two).
  void first_pass(Line line, std::vector<Line> &lines) {
    for (const Token &l : line.labels) {
      if (labels_.count(l.text) != 0)
        throw Error{l.col, "label '" + l.text + "' is already defined"};
      labels_[l.text] = pc_;
    }
    if (line.mnemonic.text.empty())
      return;
    if (line.mnemonic.text == ".equ") {
      if (line.operands.size() != 2)
        throw Error{line.mnemonic.col, ".equ takes a name and a value"};
      const Token &name = line.operands[0];
      if (!ident_start(name.text[0]))
        throw Error{name.col, "bad symbol name '" + name.text + "'"};
      symbols_[name.text] = Expr(line.operands[1], symbols_).evaluate();
      return;
    }
    const OpInfo *info = find_op(line.mnemonic.text);
    if (info == nullptr)
      throw Error{line.mnemonic.col, "unknown instruction '" + line.mnemonic.text + "'"};
    pc_ += words(*info, line);
    lines.push_back(std::move(line));
  }

  int words(const OpInfo &info, const Line &line) {
    if (info.op != Opcode::Li || line.operands.size() != 2)
      return 1;
    int64_t v = Expr(line.operands[1], symbols_).evaluate();
    return v == static_cast<int32_t>(v) ? 1 : 2;
  }

  void emit(const Line &line) {
    const OpInfo &info = *find_op(line.mnemonic.text);
    std::vector<char> kinds;
    for (const char *k = info.operands; *k != 0; ++k)
      if (*k != ',')
        kinds.push_back(*k);
    if (line.operands.size() != kinds.size())
      throw Error{line.mnemonic.col, std::string(info.mnemonic) + " takes " +
                                         std::to_string(kinds.size()) + " operand(s), got " +
                                         std::to_string(line.operands.size())};
    Instr in;
    in.op = info.op;
    int slot = 0;
    int64_t imm = 0;
    int imm_col = 0;
    for (size_t i = 0; i < kinds.size(); ++i) {
      const Token &t = line.operands[i];
      if (kinds[i] == 'i' || kinds[i] == 'l') {
        imm = kinds[i] == 'i' ? Expr(t, symbols_).evaluate() : target(t);
        imm_col = t.col;
        continue;
      }
      in.slot[slot++] = static_cast<uint8_t>(operand(info, kinds[i], t));
    }
    if (info.op == Opcode::Li && imm != static_cast<int32_t>(imm)) {
      in.imm = static_cast<int32_t>(static_cast<uint32_t>(imm));
      out_.code.push_back(in);
      in.op = Opcode::Lih;
      in.imm = static_cast<int32_t>(static_cast<uint32_t>(static_cast<uint64_t>(imm) >> 32));
      out_.code.push_back(in);
      return;
    }
    if (imm < INT32_MIN || imm > UINT32_MAX)
      throw Error{imm_col, "immediate " + std::to_string(imm) + " does not fit in 32 bits"};
    in.imm = static_cast<int32_t>(static_cast<uint32_t>(imm));
    out_.code.push_back(in);
  }

  int operand(const OpInfo &info, char kind, const Token &t) {
    switch (kind) {
    case 'r':
      return parse_indexed(t, 'r', kNumRegs, "register");
    case 's':
      return parse_indexed(t, 's', kNumSemaphores, "semaphore");
    case 'q':
      for (int q = 0; q < 16; ++q) {
        const char *n = queue_name(q);
        if (n != nullptr && t.text == n) {
          if (info.unit == Unit::Dma && q < static_cast<int>(Queue::Dma0))
            throw Error{t.col, std::string(info.mnemonic) + " needs a DMA queue (dma0..dma7)"};
          return q;
        }
      }
      throw Error{t.col, "expected a queue (cp, mx, vec, dma0..dma7), got '" + t.text + "'"};
    default: // 'f'
      for (int f = 0; f < field_count(info.unit); ++f)
        if (t.text == field_name(info.unit, f))
          return f;
      std::string names;
      for (int f = 0; f < field_count(info.unit); ++f)
        names += (f != 0 ? ", " : "") + std::string(field_name(info.unit, f));
      throw Error{t.col, "unknown field '" + t.text + "' for " + info.mnemonic + " (one of " +
                             names + ")"};
    }
  }

  /// Relative offset to a label or `.+N` / `.-N`.
  int64_t target(const Token &t) {
    int64_t here = static_cast<int64_t>(out_.code.size());
    if (t.text.size() > 1 && t.text[0] == '.' && (t.text[1] == '+' || t.text[1] == '-')) {
      const int64_t v = Expr({t.text.substr(2), t.col + 2}, symbols_).evaluate();
      return t.text[1] == '-' ? -v : v; // the expression has no unary plus: strip the sign
    }
    auto it = labels_.find(t.text);
    if (it == labels_.end())
      throw Error{t.col, "unknown label '" + t.text + "'"};
    return it->second - here;
  }

  std::map<std::string, int64_t> symbols_;
  std::map<std::string, int64_t> labels_;
  int64_t pc_ = 0;
  Assembly out_;
};

} // namespace

Assembly assemble(const std::string &text, const std::map<std::string, int64_t> &defines) {
  return Assembler(defines).run(text);
}

std::string format_diagnostics(const std::string &file, const std::vector<Diagnostic> &errors) {
  std::string out;
  for (const Diagnostic &d : errors)
    out += file + ":" + std::to_string(d.line) + ":" + std::to_string(d.col) +
           ": error: " + d.message + "\n";
  return out;
}

} // namespace tl::npu::isa
