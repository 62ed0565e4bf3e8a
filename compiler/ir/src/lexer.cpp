// The `.tlir` lexer: characters to identifiers, value names, numbers and strings, with locations.
// SPDX-License-Identifier: Apache-2.0
#include "lexer.h"

#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>

namespace tl::ir {

bool is_ident_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '$';
}

Lexer::Lexer(std::string_view text, std::string_view filename)
    : text_(text), file_(std::make_shared<const std::string>(filename)) {}

void Lexer::advance() {
  if (text_[pos_] == '\n') {
    ++line_;
    col_ = 1;
  } else {
    ++col_;
  }
  ++pos_;
}

void Lexer::skip_space() {
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

void Lexer::skip_blanks() {
  while (peek() == ' ' || peek() == '\t')
    advance();
}

std::string Lexer::found() {
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

bool Lexer::try_consume(std::string_view s) {
  skip_space();
  if (text_.substr(pos_, s.size()) != s)
    return false;
  for (size_t i = 0; i < s.size(); ++i)
    advance();
  return true;
}

void Lexer::expect(std::string_view s) {
  if (!try_consume(s))
    fail("expected '" + std::string(s) + "'" + found());
}

std::string Lexer::identifier(const char *what) {
  skip_space();
  size_t start = pos_;
  while (pos_ < text_.size() && is_ident_char(peek()))
    advance();
  if (start == pos_)
    fail(std::string("expected ") + what + found());
  return std::string(text_.substr(start, pos_ - start));
}

bool Lexer::at_identifier() {
  skip_space();
  return std::isalpha(static_cast<unsigned char>(peek())) || peek() == '_';
}

std::string Lexer::alnum_word() {
  std::string word;
  while (std::isalnum(static_cast<unsigned char>(peek())))
    word += peek(), advance();
  return word;
}

int64_t Lexer::dimension(int64_t max) {
  int64_t d = 0;
  while (std::isdigit(static_cast<unsigned char>(peek()))) {
    d = d * 10 + (peek() - '0');
    if (d > max) // before it can overflow
      fail("dimension is too large");
    advance();
  }
  return d;
}

int64_t Lexer::integer(const char *what) {
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

std::optional<Attr> Lexer::number(const Location &loc) {
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
  if (!std::isdigit(static_cast<unsigned char>(peek()))) {
    pos_ = start; // a sign alone is not a number
    return std::nullopt;
  }
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

std::string Lexer::value_name() {
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

std::string Lexer::string_literal() {
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

bool Lexer::at_attr_dict() {
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

} // namespace tl::ir
