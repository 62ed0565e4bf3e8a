// tlc verify and tlc print, including MLIR-style --verify-diagnostics over split inputs.
// SPDX-License-Identifier: Apache-2.0
#include "tlc.h"

#include "tl/ir/parser.h"
#include "tl/ir/printer.h"
#include "tl/ir/verifier.h"

#include <boost/program_options.hpp>

#include <iostream>
#include <sstream>

namespace po = boost::program_options;

namespace tl::tlc {
namespace {

struct Expected {
  int line;
  std::string message;
  bool seen = false;
};

std::vector<std::string> split_lines(const std::string &text) {
  std::vector<std::string> lines;
  std::stringstream ss(text);
  std::string l;
  while (std::getline(ss, l))
    lines.push_back(l);
  return lines;
}

/// Chunks separated by `// -----` lines; each keeps its original line numbers by blanking the rest.
std::vector<std::string> split_input(const std::string &text, bool split) {
  if (!split)
    return {text};
  std::vector<std::string> lines = split_lines(text);
  std::vector<std::string> chunks;
  size_t begin = 0;
  for (size_t i = 0; i <= lines.size(); ++i) {
    if (i < lines.size() && lines[i].rfind("// -----", 0) != 0)
      continue;
    std::string chunk;
    for (size_t j = 0; j < i; ++j)
      chunk += (j >= begin ? lines[j] : "") + "\n";
    chunks.push_back(chunk);
    begin = i + 1;
  }
  return chunks;
}

/// Parses `expected-error[@(+|-)N] {{message}}` on one line (by hand: std::regex recurses per
/// character and overflows the stack on long annotations).
std::optional<Expected> parse_expectation(const std::string &line, int line_no) {
  const std::string tag = "expected-error";
  size_t p = line.find(tag);
  if (p == std::string::npos)
    return std::nullopt;
  p += tag.size();
  int target = line_no;
  if (p < line.size() && line[p] == '@') {
    ++p;
    const bool neg = p < line.size() && line[p] == '-';
    if (p < line.size() && (line[p] == '+' || line[p] == '-'))
      ++p;
    size_t digits = 0;
    int offset = 0;
    while (p < line.size() && std::isdigit(static_cast<unsigned char>(line[p])) && digits < 7) {
      offset = offset * 10 + (line[p++] - '0');
      ++digits;
    }
    if (digits == 0 || (p < line.size() && std::isdigit(static_cast<unsigned char>(line[p]))))
      throw std::runtime_error("line " + std::to_string(line_no) +
                               ": malformed expected-error line offset");
    target += neg ? -offset : offset;
  }
  while (p < line.size() && line[p] == ' ')
    ++p;
  if (line.compare(p, 2, "{{") != 0)
    throw std::runtime_error("line " + std::to_string(line_no) +
                             ": expected-error needs a {{message}}");
  const size_t close = line.find("}}", p + 2);
  if (close == std::string::npos)
    throw std::runtime_error("line " + std::to_string(line_no) + ": unterminated {{message}}");
  return Expected{target, line.substr(p + 2, close - p - 2)};
}

std::vector<Expected> expected_errors(const std::string &chunk) {
  std::vector<Expected> out;
  std::vector<std::string> lines = split_lines(chunk);
  for (size_t i = 0; i < lines.size(); ++i)
    if (auto e = parse_expectation(lines[i], static_cast<int>(i) + 1))
      out.push_back(*e);
  return out;
}

ir::Diagnostics check(const std::string &chunk, const std::string &name) {
  ir::Diagnostics diags;
  auto module = ir::parse(chunk, name, diags);
  if (module)
    ir::verify(*module, diags);
  return diags;
}

/// Every produced diagnostic must be expected on its line and every expectation met.
bool verify_diagnostics(const std::string &chunk, const std::string &name) {
  std::vector<Expected> expected = expected_errors(chunk);
  ir::Diagnostics diags = check(chunk, name);
  bool ok = true;
  for (const ir::Diagnostic &d : diags.list()) {
    bool matched = false;
    for (Expected &e : expected)
      if (e.line == d.loc.line && d.message.find(e.message) != std::string::npos) {
        e.seen = matched = true;
        break;
      }
    if (!matched) {
      std::cerr << d.str() << "  (unexpected diagnostic)\n";
      ok = false;
    }
  }
  for (const Expected &e : expected)
    if (!e.seen) {
      std::cerr << name << ":" << e.line << ": error: expected error not produced: " << e.message
                << "\n";
      ok = false;
    }
  return ok;
}

struct CommonArgs {
  std::string input;
  bool split = false;
  bool verify_diags = false;
};

std::optional<CommonArgs> parse_args(int argc, char **argv, const char *what, bool diag_opts) {
  CommonArgs a;
  po::options_description desc(std::string("tlc ") + what + " options");
  desc.add_options()("help,h", "show this help")("input", po::value(&a.input), "input .tlir");
  if (diag_opts)
    desc.add_options()("split-input-file", po::bool_switch(&a.split),
                       "treat '// -----' lines as separators of independent inputs")(
        "verify-diagnostics", po::bool_switch(&a.verify_diags),
        "check diagnostics against 'expected-error@+N {{...}}' comments");
  if (!parse_options(argc, argv, desc,
                     std::string("usage: tlc ") + what + " [options] <file.tlir | ->\n"))
    return std::nullopt;
  if (a.input.empty())
    throw std::runtime_error("no input file (use - for standard input)");
  return a;
}

} // namespace

int cmd_verify(int argc, char **argv) {
  auto args = parse_args(argc, argv, "verify", true);
  if (!args)
    return 0;
  auto text = read_input(args->input);
  if (!text)
    return 1;
  const std::string name = args->input == "-" ? "<stdin>" : args->input;
  bool ok = true;
  for (const std::string &chunk : split_input(*text, args->split)) {
    if (args->verify_diags) {
      ok &= verify_diagnostics(chunk, name);
    } else {
      ir::Diagnostics d = check(chunk, name);
      std::cerr << d.str();
      ok &= !d.has_errors();
    }
  }
  return ok ? 0 : 1;
}

int cmd_print(int argc, char **argv) {
  auto args = parse_args(argc, argv, "print", false);
  if (!args)
    return 0;
  auto module = load_module(args->input);
  if (!module)
    return 1;
  std::cout << ir::print(*module);
  return 0;
}

} // namespace tl::tlc
