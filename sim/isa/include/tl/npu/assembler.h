// TNPU assembly text <-> instructions: the assembler (errors with line:col) and the disassembler.
// SPDX-License-Identifier: Apache-2.0
//
// Syntax (sim/isa/README.md has the full grammar): one instruction per line, `label:` before it,
// `#` or `;` comments, `.equ NAME, expr` constants. Operands: r0..r31; queues cp, mx, vec,
// dma0..dma7; semaphores s0..s63; config field names; immediates are integer expressions with
// + - * / % << >> & | and parentheses over decimal/hex literals, `1.5f` (the f32 bit pattern) and
// symbols (.equ, predefined defines, the dtype names bf16 f16 f32 i8 i32, the rounding directions
// rne rtz rdn rup (0-3), and ACC, the accumulator base). `li` with a constant outside int32
// becomes `li` + `lih`. Branch targets are labels or `.+N` / `.-N` (relative, in instructions).
#pragma once

#include "tl/npu/isa.h"

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace tl::npu::isa {

struct Diagnostic {
  int line; ///< 1-based
  int col;  ///< 1-based
  std::string message;
};

struct Assembly {
  std::vector<Instr> code;
  std::vector<Diagnostic> errors; ///< empty on success
  bool ok() const { return errors.empty(); }
};

/// Assembles `text`; `defines` are symbols visible as if declared by .equ before the first line.
Assembly assemble(const std::string &text, const std::map<std::string, int64_t> &defines = {});

/// "file:line:col: error: message" lines, one per diagnostic.
std::string format_diagnostics(const std::string &file, const std::vector<Diagnostic> &errors);

/// Canonical text: labels `L<n>:` at branch targets, one instruction per line. assemble() of the
/// result gives `code` back exactly.
std::string disassemble(const std::vector<Instr> &code);

} // namespace tl::npu::isa
