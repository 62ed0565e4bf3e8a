// The `.tlir` lexer: characters to identifiers, value names, numbers and strings, with locations.
// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "tl/ir/ir.h"

#include <optional>
#include <string>
#include <string_view>

namespace tl::ir {

/// A syntax error. Thrown by the lexer and the parser, caught once at the parser's entry points.
struct ParseError {
  Location loc;
  std::string message;
};

/// Characters of identifiers and value names (`%x.1`, `tl$tmp`).
bool is_ident_char(char c);

/// Reads `.tlir` text one token at a time. The grammar is small and context-sensitive (tile shapes
/// such as `64x32xbf16` are one run of characters), so the parser pulls tokens on demand rather
/// than from a token stream; the lexer keeps the position and the line and column of each token.
class Lexer {
public:
  Lexer(std::string_view text, std::string_view filename);

  // ---- position ----
  Location here() const { return Location{file_, line_, col_}; }
  /// Skips space and comments first: the location of the next token.
  Location next_loc() {
    skip_space();
    return here();
  }
  bool at_end() const { return pos_ >= text_.size(); }
  char peek(size_t ahead = 0) const {
    return pos_ + ahead < text_.size() ? text_[pos_ + ahead] : '\0';
  }
  void advance();
  /// Whitespace and `//` comments.
  void skip_space();
  /// Spaces and tabs only: stays on the current line.
  void skip_blanks();

  // ---- errors ----
  [[noreturn]] void fail(const std::string &msg) const { fail_at(here(), msg); }
  [[noreturn]] static void fail_at(const Location &loc, const std::string &msg) {
    throw ParseError{loc, msg};
  }
  /// ", found 'tok'" (or ", found end of file") for error messages; control bytes become '?'.
  std::string found();

  // ---- tokens ----
  /// Consumes `s` (after space) when the text continues with it.
  bool try_consume(std::string_view s);
  void expect(std::string_view s);
  /// A run of identifier characters; `what` names it in the error.
  std::string identifier(const char *what);
  /// Whether an identifier (a letter or '_') comes next.
  bool at_identifier();
  /// A run of letters and digits, possibly empty (type keywords and element types).
  std::string alnum_word();
  /// A tile dimension: decimal digits, at most `max`.
  int64_t dimension(int64_t max);
  /// A signed decimal integer that fits in 64 bits.
  int64_t integer(const char *what);
  /// An integer or a float (with '.', 'e', inf or nan); `loc` is where it starts (named in range
  /// errors). Not a number: nothing, the position rewound to the sign, if any (but not the
  /// column: a diagnostic after a lone sign names the column after it, as it always has).
  std::optional<Attr> number(const Location &loc);
  /// `%name`: the name without '%'.
  std::string value_name();
  /// A quoted string with escapes `\n`, `\"`, `\\` and `\XX` (hex).
  std::string string_literal();
  /// An attribute dictionary is `{}` or `{name = ...`; anything else after `{` is a region.
  bool at_attr_dict();

private:
  std::string_view text_;
  std::shared_ptr<const std::string> file_;
  size_t pos_ = 0;
  int line_ = 1, col_ = 1;
};

} // namespace tl::ir
