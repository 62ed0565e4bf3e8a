// Random exact Tile IR programs for differential tests (random_programs.h).
// SPDX-License-Identifier: Apache-2.0
#include "tl/interpreter/random_programs.h"

#include "tl/ir/types.h"

#include <algorithm>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <vector>

namespace tl::interp {

std::string random_program(std::mt19937_64 &rng, int64_t R, int64_t C, const std::string &e) {
  const bool fl = e[0] != 'i';
  struct Val {
    std::string name;
    char kind; // 't' (R, C), 'r' (R,), 'c' (C,), 's' an i32 scalar
  };
  std::vector<Val> vals;
  std::ostringstream k;
  const std::string t = "tile<" + std::to_string(R) + "x" + std::to_string(C) + "x" + e + ">";
  const std::string tr = "tile<" + std::to_string(R) + "x" + e + ">";
  const std::string tc = "tile<" + std::to_string(C) + "x" + e + ">";
  const std::string T2 = "tensor<?x?x" + e + ">", T1 = "tensor<?x" + e + ">";
  k << "kernel @rand(%x: " << T2 << ", %y: " << T2 << ", %v: " << T1 << ", %o0: " << T2
    << ", %o1: " << T2 << ", %r0: " << T1 << ", %c0: " << T1 << ", %s0: tensor<?x?x?x" << e
    << ">, %q0: tensor<?xi32>, %a0: tensor<?xi32>) {\n"
       "  %z = constant {value = 0} : i32\n  %p = program_id {axis = 0} : i32\n"
       "  %rows = constant {value = "
    << R << "} : i32\n  %at = mul %p, %rows : i32\n"
    << "  %a = load %x, %at, %z : " << t << "\n  %b = load %y, %at, %z : " << t << "\n"
    << "  %c = load %v, %z : " << tc << "\n";
  vals = {{"%a", 't'}, {"%b", 't'}, {"%c", 'c'}, {"%p", 's'}, {"%at", 's'}};
  int n = 0;
  auto pick = [&](char kind) -> std::string {
    std::vector<std::string> of;
    for (const Val &v : vals)
      if (v.kind == kind)
        of.push_back(v.name);
    return of.empty() ? "" : of[rng() % of.size()];
  }; // (R, C) i32 tiles of each lane's row index (v rb) and column index (v cb)
  auto lane_indices = [&](const std::string &v, const std::string &ti) {
    k << "  " << v << "ra = arange {end = " << R << ", start = 0} : tile<" << R << "xi32>\n  " << v
      << "re = expand_dims " << v << "ra {axis = 1} : tile<" << R << "x1xi32>\n  " << v
      << "rb = broadcast " << v << "re : " << ti << "\n  " << v << "ca = arange {end = " << C
      << ", start = 0} : tile<" << C << "xi32>\n  " << v << "ce = expand_dims " << v
      << "ca {axis = 0} : tile<1x" << C << "xi32>\n  " << v << "cb = broadcast " << v
      << "ce : " << ti << "\n";
  };

  const std::vector<const char *> binary =
      fl ? std::vector<const char *>{"add", "sub", "mul", "div", "min", "max", "minnum", "maxnum"}
         : std::vector<const char *>{"add", "sub", "mul", "min", "max", "and", "or", "xor"};
  const std::vector<const char *> unary =
      fl ? std::vector<const char *>{"neg", "abs", "sqrt", "floor", "rint", "trunc"}
         : std::vector<const char *>{"neg", "abs", "not", "popcount", "clz"};
  const int steps = 5 + int(rng() % 8);
  for (int s = 0; s < steps; ++s) {
    const std::string v = "%v" + std::to_string(n++);
    switch (rng() % 22) {
    case 21: { // a slice: one column (or row) broadcast back, or the max down a half's columns
      const std::string src = pick('t');
      const int form = int(rng() % 3);
      if (form == 2 && R >= 2) {
        k << "  " << v << "h = slice " << src << " {offsets = [" << (rng() % 2 ? R / 2 : 0)
          << ", 0]} : tile<" << R / 2 << "x" << C << "x" << e << ">\n  " << v << " = reduce " << v
          << "h {axis = 0, kind = \"max\"} : " << tc << "\n";
        vals.push_back({v, 'c'});
        break;
      }
      const bool col = form == 0;
      const int64_t at = int64_t(rng() % uint64_t(col ? C : R));
      k << "  " << v << "s = slice " << src << " {offsets = [" << (col ? 0 : at) << ", "
        << (col ? at : 0) << "]} : tile<" << (col ? R : 1) << "x" << (col ? 1 : C) << "x" << e
        << ">\n  " << v << " = broadcast " << v << "s : " << t << "\n";
      vals.push_back({v, 't'});
      break;
    }
    case 20: { // every program adds a tile (as i32) into %a0 at (i C + j) & 63: an integer sum
      // in any order is exact, so the programs' atomic adds may interleave
      const std::string ti = "tile<" + std::to_string(R) + "x" + std::to_string(C) + "xi32>";
      const std::string src = pick('t');
      std::string val = src;
      if (e != "i32") {
        k << "  " << v << "i = cast " << src << " : " << ti << "\n";
        val = v + "i";
      }
      lane_indices(v, ti);
      k << "  " << v << "w = full {value = " << C << "} : " << ti << "\n  " << v
        << "m = full {value = 63} : " << ti << "\n  " << v << "rw = mul " << v << "rb, " << v
        << "w : " << ti << "\n  " << v << "lin = add " << v << "rw, " << v << "cb : " << ti
        << "\n  " << v << "at = and " << v << "lin, " << v << "m : " << ti << "\n  " << v
        << "old = atomic_add %a0, " << v << "at, " << val << " : " << ti << "\n";
      continue; // the old values depend on the programs' order: not a value of the program
    }
    case 18: // remainders, copysign, ceil, clamp, the class tests, the bits; integers: division
      // and remainder by a constant
      if (fl) {
        const std::string mask = "tile<" + std::to_string(R) + "x" + std::to_string(C) + "xi1>";
        switch (rng() % 5) {
        case 0:
          if (rng() % 2) {
            k << "  " << v << " = fmod " << pick('t') << ", " << pick('t') << " : " << t << "\n";
          } else { // the sign from a value that is not NaN (a NaN's sign is unspecified)
            k << "  " << v << "k = full {value = -1.0} : " << t << "\n  " << v << "s = maxnum "
              << pick('t') << ", " << v << "k : " << t << "\n  " << v << " = copysign " << pick('t')
              << ", " << v << "s : " << t << "\n";
          }
          break;
        case 1:
          k << "  " << v << " = ceil " << pick('t') << " : " << t << "\n";
          break;
        case 2:
          k << "  " << v << " = clamp " << pick('t') << ", " << pick('t') << ", " << pick('t')
            << " : " << t << "\n";
          break;
        case 3: {
          const char *tests[] = {"isnan", "isinf", "isfinite"};
          k << "  " << v << "m = " << tests[rng() % 3] << " " << pick('t') << " : " << mask
            << "\n  " << v << " = select " << v << "m, " << pick('t') << ", " << pick('t') << " : "
            << t << "\n";
          break;
        }
        default: { // the sign bit flipped as an integer, and back. Only the sign: a flip of a
          // mantissa bit can make a NaN of an infinity, and a NaN's payload is unspecified (the
          // interpreter keeps the canonical NaN), so flipping it back would not give the
          // infinity again everywhere
          const bool wide = e == "f32";
          const std::string it =
              "tile<" + std::to_string(R) + "x" + std::to_string(C) + (wide ? "xi32>" : "xi16>");
          k << "  " << v << "b = bitcast " << pick('t') << " : " << it << "\n  " << v
            << "k = full {value = " << (wide ? int64_t(INT32_MIN) : int64_t(INT16_MIN))
            << "} : " << it << "\n  " << v << "x = xor " << v << "b, " << v << "k : " << it
            << "\n  " << v << " = bitcast " << v << "x : " << t << "\n";
        }
        }
      } else {
        const int64_t divisors[] = {3, -7, 1000, 2, 65536};
        if (rng() % 3 == 0)
          k << "  " << v << " = clamp " << pick('t') << ", " << pick('t') << ", " << pick('t')
            << " : " << t << "\n";
        else
          k << "  " << v << "k = full {value = " << divisors[rng() % 5] << "} : " << t << "\n  "
            << v << " = " << (rng() % 2 ? "div " : "rem ") << pick('t') << ", " << v << "k : " << t
            << "\n";
      }
      vals.push_back({v, 't'});
      break;
    case 19: { // a gather of x's block (rows shifted by s & 3, columns reversed), lanes past
      // x's edges masked off
      const std::string ti = "tile<" + std::to_string(R) + "x" + std::to_string(C) + "xi32>";
      const std::string mask = "tile<" + std::to_string(R) + "x" + std::to_string(C) + "xi1>";
      lane_indices(v, ti);
      k << "  " << v << "three = constant {value = 3} : i32\n  " << v << "sh = and " << pick('s')
        << ", " << v << "three : i32\n  " << v << "r0 = add %at, " << v << "sh : i32\n  " << v
        << "rs = splat " << v << "r0 : " << ti << "\n  " << v << "ri = add " << v << "rb, " << v
        << "rs : " << ti << "\n  " << v << "last = full {value = " << C - 1 << "} : " << ti
        << "\n  " << v << "ci = sub " << v << "last, " << v << "cb : " << ti << "\n  " << v
        << "d0 = dim %x {axis = 0} : i64\n  " << v << "d1 = dim %x {axis = 1} : i64\n  " << v
        << "n0 = cast " << v << "d0 : i32\n  " << v << "n1 = cast " << v << "d1 : i32\n  " << v
        << "s0 = splat " << v << "n0 : " << ti << "\n  " << v << "s1 = splat " << v << "n1 : " << ti
        << "\n  " << v << "in0 = cmp " << v << "ri, " << v << "s0 {pred = \"lt\"} : " << mask
        << "\n  " << v << "in1 = cmp " << v << "ci, " << v << "s1 {pred = \"lt\"} : " << mask
        << "\n  " << v << "in = and " << v << "in0, " << v << "in1 : " << mask << "\n  " << v
        << " = gather %x, " << v << "ri, " << v << "ci, " << v
        << "in {other = " << (fl ? "-0.75" : "-5") << "} : " << t << "\n";
      vals.push_back({v, 't'});
      break;
    }
    case 16: { // i32 scalar arithmetic on the program id, its rows, earlier scalars (wrapping),
      // or a cast there and back through a narrower or differently signed type
      const char *ops[] = {"add", "sub", "mul", "min", "max", "and", "or", "xor"};
      const char *via[] = {"u8", "i8", "u16", "i16", "u32", "i64"};
      if (rng() % 3 == 0)
        k << "  " << v << "n = cast " << pick('s') << " : " << via[rng() % 6] << "\n  " << v
          << " = cast " << v << "n : i32\n";
      else
        k << "  " << v << "k = constant {value = " << int64_t(rng() % 2000) - 1000 << "} : i32\n  "
          << v << " = " << ops[rng() % 8] << " " << pick('s') << ", " << v << "k : i32\n";
      vals.push_back({v, 's'});
      break;
    }
    case 17: { // a scalar splat into a tile (cast to e), or a block at an offset computed from
      // a scalar, (s & 7) - 3 rows and columns
      if (rng() % 2) {
        const std::string ti = "tile<" + std::to_string(R) + "x" + std::to_string(C) + "xi32>";
        k << "  " << v << (fl ? "s" : "") << " = splat " << pick('s') << " : " << ti << "\n";
        if (fl)
          k << "  " << v << " = cast " << v << "s : " << t << "\n";
        vals.push_back({v, 't'});
        break;
      }
      k << "  " << v << "m = constant {value = 7} : i32\n  " << v << "three = constant {value = 3} "
        << ": i32\n  " << v << "a = and " << pick('s') << ", " << v << "m : i32\n  " << v
        << "o = sub " << v << "a, " << v << "three : i32\n  " << v << "r = add %at, " << v
        << "o : i32\n  " << v << " = load " << (rng() % 2 ? "%x" : "%y") << ", " << v << "r, " << v
        << "o {padding = " << (fl ? "-2.5" : "-9") << "} : " << t << "\n";
      vals.push_back({v, 't'});
      break;
    }
    case 13: { // a loop of 3 trips carrying a tile, its body reading a tile from outside
      const std::string in = pick('t'), add = pick('t');
      k << "  " << v << "c0 = constant {value = 0} : i32\n  " << v
        << "c3 = constant {value = 3} : i32\n  " << v << "c1 = constant {value = 1} : i32\n  " << v
        << " = for " << v << "i = " << v << "c0 to " << v << "c3 step " << v << "c1 iter_args(" << v
        << "s = " << in << ") : " << t << " {\n    " << v << "n = " << (fl ? "maxnum " : "add ")
        << v << "s, " << add << " : " << t << "\n    yield " << v << "n\n  }\n";
      vals.push_back({v, 't'});
      break;
    }
    case 14: { // a branch on the program
      k << "  " << v << "one = constant {value = 1} : i32\n  " << v << "b = cmp %p, " << v
        << "one {pred = \"eq\"} : i1\n  " << v << " = if " << v << "b : " << t << " {\n    yield "
        << pick('t') << "\n  } else {\n    yield " << pick('t') << "\n  }\n";
      vals.push_back({v, 't'});
      break;
    }
    case 15: { // a block shifted past the tensor's edges, its lanes outside read as padding
      k << "  " << v << "o = constant {value = " << int(rng() % 7) - 3 << "} : i32\n  " << v
        << "r = add %at, " << v << "o : i32\n  " << v << " = load " << (rng() % 2 ? "%x" : "%y")
        << ", " << v << "r, " << v << "o {padding = " << (fl ? "1.5" : "7") << "} : " << t << "\n";
      vals.push_back({v, 't'});
      break;
    }
    case 10: { // a running sum, max or min along the rows: exact against the interpreter in any
      // order but a float sum's, which asks for the ascending chain (ir.h)
      static const char *const kinds[] = {"sum", "max", "min"};
      const char *kind = kinds[rng() % 3];
      const bool exact = fl && kind == std::string("sum");
      k << "  " << v << " = scan " << pick('t') << " {axis = 1, kind = \"" << kind << "\""
        << (exact ? ", order = \"exact\"" : "") << "} : " << t << "\n";
      vals.push_back({v, 't'});
      break;
    }
    case 11: // square tiles: a transpose
      if (R != C)
        continue;
      k << "  " << v << " = transpose " << pick('t') << " {perm = [1, 0]} : " << t << "\n";
      vals.push_back({v, 't'});
      break;
    case 12: // square f32 tiles: a dot in order (one fma a step, as the interpreter)
      if (R != C || e != "f32")
        continue;
      k << "  " << v << " = dot " << pick('t') << ", " << pick('t') << ", " << pick('t')
        << " {order = \"exact\", acc_type = f32} : " << t << "\n";
      vals.push_back({v, 't'});
      break;
    case 0:
    case 1:
      k << "  " << v << " = " << binary[rng() % binary.size()] << " " << pick('t') << ", "
        << pick('t') << " : " << t << "\n";
      vals.push_back({v, 't'});
      break;
    case 2:
      k << "  " << v << " = " << unary[rng() % unary.size()] << " " << pick('t') << " : " << t
        << "\n";
      vals.push_back({v, 't'});
      break;
    case 3: { // a cast there and back
      const char *via[] = {"f32", "f16", "bf16", "i32", "i8"};
      std::string w = via[rng() % 5];
      if (w == e)
        w = "f32";
      k << "  " << v << "n = cast " << pick('t') << " : tile<" << R << "x" << C << "x" << w
        << ">\n  " << v << " = cast " << v << "n : " << t << "\n";
      vals.push_back({v, 't'});
      break;
    }
    case 4: { // a row value broadcast along the columns, or a column value along the rows
      const bool row = rng() % 2 && !pick('r').empty();
      const std::string src = row ? pick('r') : pick('c');
      k << "  " << v << "e = expand_dims " << src << " {axis = " << (row ? 1 : 0) << "} : tile<"
        << (row ? R : 1) << "x" << (row ? 1 : C) << "x" << e << ">\n  " << v << " = broadcast " << v
        << "e : " << t << "\n";
      vals.push_back({v, 't'});
      break;
    }
    case 5: { // along the rows: max, min (integers: sum too), or argmax cast
      const int which = int(rng() % (fl ? 3 : 4));
      if (which == 2)
        k << "  " << v << "i = reduce " << pick('t') << " {axis = 1, kind = \"argmax\"} : tile<"
          << R << "xi32>\n  " << v << " = cast " << v << "i : " << tr << "\n";
      else
        k << "  " << v << " = reduce " << pick('t') << " {axis = 1, kind = \""
          << (which == 3 ? "sum"
              : which    ? "min"
                         : "max")
          << "\"} : " << tr << "\n";
      vals.push_back({v, 'r'});
      break;
    }
    case 6: // along the columns
      k << "  " << v << " = reduce " << pick('t') << " {axis = 0, kind = \""
        << (rng() % 2 ? "min" : "max") << "\"} : " << tc << "\n";
      vals.push_back({v, 'c'});
      break;
    case 7: {
      const char *preds[] = {"lt", "le", "gt", "ge", "eq", "ne"};
      k << "  " << v << "m = cmp " << pick('t') << ", " << pick('t') << " {pred = \""
        << preds[rng() % 6] << "\"} : tile<" << R << "x" << C << "xi1>\n  " << v << " = select "
        << v << "m, " << pick('t') << ", " << pick('t') << " : " << t << "\n";
      vals.push_back({v, 't'});
      break;
    }
    case 8:
      if (!fl) { // integers: a shift by a constant
        k << "  " << v << "k = full {value = " << rng() % 40 << "} : " << t << "\n  " << v << " = "
          << (rng() % 2 ? "shl " : "shr ") << pick('t') << ", " << v << "k : " << t << "\n";
        vals.push_back({v, 't'});
        break;
      }
      k << "  " << v << " = fma " << pick('t') << ", " << pick('t') << ", " << pick('t') << " : "
        << t << "\n";
      vals.push_back({v, 't'});
      break;
    default: { // a constant operand
      const double cs[] = {0.5, -0.0, 3.0, 1e30, -1.5};
      const int64_t ci[] = {0, -1, 3, 2147483647, -77};
      k << "  " << v << "k = full {value = ";
      if (fl)
        k << cs[rng() % 5];
      else
        k << ci[rng() % 5];
      k << "} : " << t << "\n  " << v << " = " << binary[rng() % binary.size()] << " " << pick('t')
        << ", " << v << "k : " << t << "\n";
      vals.push_back({v, 't'});
      break;
    }
    }
  }
  std::string row = pick('r'), col = pick('c');
  k << "  store %o0, %at, %z, " << vals.back().name << "\n";
  if (vals.back().kind == 't')
    k << "  store %o1, %at, %z, " << pick('t') << "\n";
  else
    k << "  store %o1, %at, %z, %a\n";
  if (!row.empty())
    k << "  store %r0, %at, " << row << "\n";
  // each program's column value in its own block (the programs may run concurrently)
  k << "  %cols = constant {value = " << C << "} : i32\n  %cat = mul %p, %cols : i32\n"
    << "  store %c0, %cat, " << col << "\n";
  // a tile into the program's own plane of %s0, shifted by (s & 7) - 3 rows and a constant
  // number of columns (either may start before the plane or end past it)
  k << "  %sm = constant {value = 7} : i32\n  %s3 = constant {value = 3} : i32\n"
    << "  %sa = and " << pick('s') << ", %sm : i32\n  %sr = sub %sa, %s3 : i32\n"
    << "  %sc = constant {value = " << int(rng() % 7) - 3 << "} : i32\n"
    << "  %st = reshape " << pick('t') << " : tile<1x" << R << "x" << C << "x" << e << ">\n"
    << "  store %s0, %p, %sr, %sc, %st\n";
  // every scalar observed: their xor, program p's at q0[p]
  std::string h = "%p";
  int hn = 0;
  for (const Val &s : vals)
    if (s.kind == 's' && s.name != "%p") {
      const std::string next = "%h" + std::to_string(hn++);
      k << "  " << next << " = xor " << h << ", " << s.name << " : i32\n";
      h = next;
    }
  k << "  %hq = splat " << h << " : tile<1xi32>\n  store %q0, %p, %hq\n  return\n}\n";
  std::string text = k.str();
  if (vals.back().kind != 't') { // the last value is a row or column: store a tile instead
    const std::string last = pick('t');
    text.replace(text.find("store %o0, %at, %z, " + vals.back().name),
                 std::string("store %o0, %at, %z, " + vals.back().name).size(),
                 "store %o0, %at, %z, " + last);
  }
  return text;
}

RandomProgramCase random_program_case(std::mt19937_64 &rng) {
  const auto [R, C] = kRandomProgramBlocks[rng() % kRandomProgramBlocks.size()];
  const char *elems[] = {"f32", "f32", "bf16", "f16", "i32"};
  const std::string e = elems[rng() % 5];
  const ir::ScalarKind kind = *ir::parse_scalar_name(e);
  RandomProgramCase c;
  c.text = random_program(rng, R, C, e);
  // three programs; the tensors' edges cut the last block's rows and every block's columns
  const int64_t rows = 2 * R + int64_t(rng() % R) + 1, cols = C - int64_t(rng() % 5);
  // each program's plane of %s0, a little smaller than a block: shifted stores clip on all sides
  const int64_t plane_rows = std::max<int64_t>(1, R - int64_t(rng() % 2)),
                plane_cols = C - int64_t(rng() % 3);
  auto input = [&](std::vector<int64_t> shape) {
    HostTensor h(kind, std::move(shape));
    for (int64_t j = 0; j < h.num_elements(); ++j) {
      if (rng() % 16 == 0)
        h.set(j, ir::is_float(kind) ? kFloatSpecials[rng() % 9] : kIntSpecials[rng() % 5]);
      else if (ir::is_float(kind))
        h.set(j, std::uniform_real_distribution<double>(-2, 2)(rng));
      else
        h.set(j, double(std::uniform_int_distribution<int>(-100, 100)(rng)));
    }
    return h;
  };
  auto output = [&](ir::ScalarKind k, std::vector<int64_t> shape) {
    HostTensor h(k, std::move(shape));
    std::memset(h.data(), 0x5a, h.size_bytes());
    return h;
  };
  c.tensors.push_back(input({rows, cols}));
  c.tensors.push_back(input({rows, cols}));
  c.tensors.push_back(input({cols}));
  c.tensors.push_back(output(kind, {rows, cols}));
  c.tensors.push_back(output(kind, {rows, cols}));
  c.tensors.push_back(output(kind, {rows}));
  c.tensors.push_back(output(kind, {3 * C}));
  c.tensors.push_back(output(kind, {3, plane_rows, plane_cols}));
  c.tensors.push_back(output(ir::ScalarKind::I32, {3}));
  c.tensors.push_back(output(ir::ScalarKind::I32, {64}));
  return c;
}

RandomProgramBatch random_program_batch(int programs) {
  RandomProgramBatch b{programs, 2026};
  if (const char *env = std::getenv("TL_RANDOM_PROGRAMS")) {
    b.programs = std::atoi(env);
    if (const char *colon = std::strchr(env, ':'))
      b.seed = std::strtoull(colon + 1, nullptr, 10);
  }
  return b;
}

} // namespace tl::interp
