// The precision suite's case table and kernel generator.
// SPDX-License-Identifier: Apache-2.0
#include "precision_cases.h"

#include <sstream>

namespace tl::conform {
namespace {

using ir::ScalarKind;
constexpr int64_t kBlock1 = 256; // 1-D tile
constexpr int64_t kBlock2 = 16;  // 2-D tiles and dot blocks

std::string dt(ScalarKind k) { return std::string(ir::scalar_name(k)); }

std::string shape_str(const std::vector<int64_t> &s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i)
    out += (i ? "x" : "") + std::to_string(s[i]);
  return out;
}

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }
int64_t pow2_at_least(int64_t n) {
  int64_t p = 1;
  while (p < n)
    p *= 2;
  return p;
}

// Elementwise shapes: the first (ragged against the 256-lane tile) is in the core profile.
const std::vector<std::vector<int64_t>> kElementwiseShapes = {{4099}, {1},     {256},
                                                              {257},  {65537}, {37, 45}};
const std::vector<std::vector<int64_t>> kReduceShapes = {{37, 45}, {1, 1}, {130, 300}};
const std::vector<std::vector<int64_t>> kDotShapes = {
    {37, 45, 70}, {1, 1, 1}, {64, 64, 64}, {100, 3, 257}};

void add_shapes(std::vector<PrecisionCase> &out, PrecisionCase base,
                const std::vector<std::vector<int64_t>> &shapes, const std::string &suffix = "") {
  for (size_t i = 0; i < shapes.size(); ++i) {
    PrecisionCase c = base;
    c.shape = shapes[i];
    c.core = i == 0;
    c.id = "precision." + base.id + "." + shape_str(c.shape) + suffix;
    out.push_back(std::move(c));
  }
}

PrecisionCase make_case(PrecisionKind kind, std::string op, std::string tol, ScalarKind in,
                        ScalarKind o) {
  PrecisionCase c;
  c.kind = kind;
  c.op = std::move(op);
  c.tol_key = std::move(tol);
  c.in = in;
  c.out = o;
  return c;
}

const ScalarKind kFloats[] = {ScalarKind::F32, ScalarKind::F16, ScalarKind::BF16};

/// Float math and arithmetic at every float type.
void add_float_cases(std::vector<PrecisionCase> &out) {
  for (const char *op : {"exp", "exp2", "log", "log2", "sqrt", "rsqrt", "tanh", "erf", "sigmoid",
                         "sin", "cos", "abs", "neg"})
    for (ScalarKind f : kFloats) {
      PrecisionCase c = make_case(PrecisionKind::Unary, op, op, f, f);
      c.id = std::string(op) + "." + dt(f);
      add_shapes(out, c, kElementwiseShapes);
    }
  for (const char *op : {"add", "sub", "mul", "div", "pow", "min", "max"})
    for (ScalarKind f : kFloats) {
      PrecisionCase c = make_case(PrecisionKind::Binary, op, op, f, f);
      c.id = std::string(op) + "." + dt(f);
      add_shapes(out, c, kElementwiseShapes);
    }
  for (ScalarKind f : kFloats) {
    PrecisionCase c = make_case(PrecisionKind::Fma, "fma", "fma", f, f);
    c.id = "fma." + dt(f);
    add_shapes(out, c, kElementwiseShapes);
  }
}

/// The ops of issue 19 at every float type, f64 included (the core profile requires it; npu-core
/// lists it optional), and their integer forms at the widths each profile names.
void add_issue19_cases(std::vector<PrecisionCase> &out) {
  const ScalarKind floats[] = {ScalarKind::F32, ScalarKind::F16, ScalarKind::BF16, ScalarKind::F64};
  const ScalarKind ints[] = {ScalarKind::I8, ScalarKind::I32, ScalarKind::I64, ScalarKind::U32};
  auto add = [&](PrecisionKind kind, const std::string &op, const std::string &tol, ScalarKind in,
                 ScalarKind o) {
    PrecisionCase c = make_case(kind, op, tol, in, o);
    c.id = op + "." + dt(in);
    add_shapes(out, c, kElementwiseShapes);
  };
  for (const char *op : {"tan", "asin", "acos", "atan", "sinh", "cosh", "log1p", "expm1", "erfinv",
                         "ndtr", "rint", "floor", "ceil", "trunc"})
    for (ScalarKind f : floats)
      add(PrecisionKind::Unary, op, op, f, f);
  for (const char *op : {"minnum", "maxnum", "atan2", "fmod", "copysign"})
    for (ScalarKind f : floats)
      add(PrecisionKind::Binary, op, op, f, f);
  for (const char *op : {"isnan", "isinf", "isfinite"})
    for (ScalarKind f : floats)
      // Stored as i8 (0 or 1): the test is of the op, not of i1 tensors, which not every
      // device stores.
      add(PrecisionKind::ClassTest, op, op, f, ScalarKind::I8);
  for (ScalarKind f : floats)
    add(PrecisionKind::Clamp, "clamp", "clamp", f, f);
  for (ScalarKind k : ints) {
    add(PrecisionKind::Clamp, "clamp", "int", k, k);
    add(PrecisionKind::IntUnary, "popcount", "int", k, k);
    add(PrecisionKind::IntUnary, "clz", "int", k, k);
  }
}

/// Integer ops: exact, wrapping.
void add_int_cases(std::vector<PrecisionCase> &out) {
  for (const char *op :
       {"add", "sub", "mul", "div", "rem", "and", "or", "xor", "shl", "shr", "min", "max"}) {
    PrecisionCase c =
        make_case(PrecisionKind::IntBinary, op, "int", ScalarKind::I32, ScalarKind::I32);
    c.id = std::string(op) + ".i32";
    add_shapes(out, c, kElementwiseShapes);
  }
  for (auto [op, k] : {std::pair{"add", ScalarKind::I8},
                       {"mul", ScalarKind::I8},
                       {"div", ScalarKind::U32},
                       {"shr", ScalarKind::U32},
                       {"min", ScalarKind::U32},
                       {"sub", ScalarKind::I16}}) {
    PrecisionCase c = make_case(PrecisionKind::IntBinary, op, "int", k, k);
    c.id = std::string(op) + "." + dt(k);
    add_shapes(out, c, kElementwiseShapes);
  }
  for (const char *op : {"neg", "abs", "not"}) {
    PrecisionCase c =
        make_case(PrecisionKind::IntUnary, op, "int", ScalarKind::I32, ScalarKind::I32);
    c.id = std::string(op) + ".i32";
    add_shapes(out, c, kElementwiseShapes);
  }
}

/// Casts: every rounding mode into the narrow float formats, widening, and float<->int.
void add_cast_cases(std::vector<PrecisionCase> &out) {
  struct CastSpec {
    ScalarKind from, to;
    std::vector<std::string> modes;
  };
  const std::vector<CastSpec> casts = {
      {ScalarKind::F32, ScalarKind::F16, {"rne", "rtz", "rd", "ru"}},
      {ScalarKind::F32, ScalarKind::BF16, {"rne", "rtz", "rd", "ru"}},
      {ScalarKind::F32, ScalarKind::F8E4M3, {"rne", "rtz"}},
      {ScalarKind::F32, ScalarKind::F8E5M2, {"rne", "rtz"}},
      {ScalarKind::F64, ScalarKind::F32, {"rne", "rd", "ru"}},
      {ScalarKind::F16, ScalarKind::F32, {""}},
      {ScalarKind::BF16, ScalarKind::F32, {""}},
      {ScalarKind::F32, ScalarKind::I32, {""}},
      {ScalarKind::I32, ScalarKind::F32, {""}},
      // float -> int rounds by the mode, then saturates (ir.h); "" is the default, rtz
      {ScalarKind::F32, ScalarKind::I32, {"rne", "rtz", "rd", "ru"}},
      {ScalarKind::F32, ScalarKind::I8, {"", "rne", "rtz", "rd", "ru"}},
  };
  for (const CastSpec &s : casts)
    for (const std::string &m : s.modes) {
      PrecisionCase c = make_case(PrecisionKind::Cast, "cast", "cast", s.from, s.to);
      c.rounding = m;
      c.id = "cast." + dt(s.from) + "-" + dt(s.to) + (m.empty() ? "" : "." + m);
      add_shapes(out, c, kElementwiseShapes);
    }
}

/// `c` over the reduction shapes along `axis`; only axis 1's first shape is in the core profile.
void add_axis_shapes(std::vector<PrecisionCase> &out, const PrecisionCase &c, int axis) {
  std::vector<PrecisionCase> tmp;
  add_shapes(tmp, c, kReduceShapes, ".axis" + std::to_string(axis));
  for (auto &t : tmp) {
    t.core = t.core && axis == 1;
    out.push_back(t);
  }
}

/// Reductions and scans over one axis of a matrix.
void add_axis_cases(std::vector<PrecisionCase> &out) {
  for (const char *kind : {"sum", "max", "min", "argmax"})
    for (ScalarKind f : kFloats)
      for (int axis : {1, 0}) {
        ScalarKind o = std::string(kind) == "argmax" ? ScalarKind::I32 : f;
        PrecisionCase c =
            make_case(PrecisionKind::Reduce, kind, std::string("reduce_") + kind, f, o);
        c.axis = axis;
        c.id = std::string("reduce_") + kind + "." + dt(f);
        add_axis_shapes(out, c, axis);
      }
  for (const char *kind : {"sum", "max"})
    for (ScalarKind f : kFloats)
      for (int axis : {1, 0}) {
        PrecisionCase c = make_case(PrecisionKind::Scan, kind, std::string("scan_") + kind, f, f);
        c.axis = axis;
        c.id = std::string("scan_") + kind + "." + dt(f);
        add_axis_shapes(out, c, axis);
      }
}

/// Dot products through a K loop: inputs x accumulator, and input precisions.
void add_dot_cases(std::vector<PrecisionCase> &out) {
  struct DotSpec {
    ScalarKind in, acc;
    std::string precision, tol;
  };
  for (const DotSpec &d :
       std::vector<DotSpec>{{ScalarKind::F32, ScalarKind::F32, "", "dot"},
                            {ScalarKind::F16, ScalarKind::F32, "", "dot"},
                            {ScalarKind::BF16, ScalarKind::F32, "", "dot"},
                            {ScalarKind::F32, ScalarKind::F32, "tf32", "dot_tf32"},
                            {ScalarKind::I8, ScalarKind::I32, "", "int"}}) {
    PrecisionCase c = make_case(PrecisionKind::Dot, "dot", d.tol, d.in, d.acc);
    c.input_precision = d.precision;
    c.id = "dot." + dt(d.in) + "-" + dt(d.acc) + (d.precision.empty() ? "" : "." + d.precision);
    add_shapes(out, c, kDotShapes);
  }
}

std::vector<PrecisionCase> build() {
  std::vector<PrecisionCase> out;
  add_float_cases(out);
  add_int_cases(out);
  add_cast_cases(out);
  add_axis_cases(out);
  add_dot_cases(out);
  add_issue19_cases(out);
  return out;
}

std::string tile1(const PrecisionCase &c, ScalarKind k) {
  if (c.shape.size() == 1)
    return "tile<" + std::to_string(kBlock1) + "x" + dt(k) + ">";
  return "tile<" + std::to_string(kBlock2) + "x" + std::to_string(kBlock2) + "x" + dt(k) + ">";
}

std::string tensor_of(size_t rank, ScalarKind k) {
  return rank == 1 ? "tensor<?x" + dt(k) + ">" : "tensor<?x?x" + dt(k) + ">";
}

std::string elementwise_kernel(const PrecisionCase &c) {
  std::ostringstream k;
  const size_t rank = c.shape.size();
  const int n = c.arity();
  k << "kernel @k(";
  for (int i = 0; i < n; ++i)
    k << "%x" << i << ": " << tensor_of(rank, c.in) << ", ";
  k << "%y: " << tensor_of(rank, c.out) << ") {\n";
  std::string offs;
  if (rank == 1) {
    k << "  %pid = program_id {axis = 0} : i32\n  %b = constant {value = " << kBlock1
      << "} : i32\n  %o = mul %pid, %b : i32\n";
    offs = "%o";
  } else {
    k << "  %p0 = program_id {axis = 0} : i32\n  %p1 = program_id {axis = 1} : i32\n"
      << "  %b = constant {value = " << kBlock2 << "} : i32\n"
      << "  %o0 = mul %p0, %b : i32\n  %o1 = mul %p1, %b : i32\n";
    offs = "%o0, %o1";
  }
  for (int i = 0; i < n; ++i)
    // Lanes past the tensor read 1: valid for every op (no division by zero, no log of 0).
    k << "  %a" << i << " = load %x" << i << ", " << offs << " {padding = 1} : " << tile1(c, c.in)
      << "\n";
  const bool class_test = c.kind == PrecisionKind::ClassTest; // i1 lanes, stored as i8
  k << "  %" << (class_test ? "t" : "r") << " = " << c.op << " %a0";
  for (int i = 1; i < n; ++i)
    k << ", %a" << i;
  if (!c.rounding.empty())
    k << " {rounding = \"" << c.rounding << "\"}";
  if (class_test)
    k << " : " << tile1(c, ScalarKind::I1) << "\n  %r = cast %t";
  k << " : " << tile1(c, c.out) << "\n  store %y, " << offs << ", %r\n  return\n}\n";
  return k.str();
}

std::string pad_of(const std::string &kind) {
  if (kind == "sum")
    return "0.0";
  if (kind == "min")
    return "inf";
  return "-inf";
}

std::string reduce_kernel(const PrecisionCase &c) {
  // One program per 16 rows (axis 1) or 16 columns (axis 0); the reduced extent fits one tile.
  const int64_t rows = c.shape[0], cols = c.shape[1];
  const int64_t red = pow2_at_least(c.axis == 1 ? cols : rows);
  const std::string tin = c.axis == 1 ? "tile<16x" + std::to_string(red) + "x" + dt(c.in) + ">"
                                      : "tile<" + std::to_string(red) + "x16x" + dt(c.in) + ">";
  const bool scan = c.kind == PrecisionKind::Scan;
  std::ostringstream k;
  k << "kernel @k(%x: tensor<?x?x" << dt(c.in) << ">, %y: " << (scan ? "tensor<?x?x" : "tensor<?x")
    << dt(c.out) << ">) {\n"
    << "  %p = program_id {axis = 0} : i32\n  %b = constant {value = 16} : i32\n"
    << "  %o = mul %p, %b : i32\n  %z = constant {value = 0} : i32\n";
  const std::string at = c.axis == 1 ? "%o, %z" : "%z, %o";
  k << "  %t = load %x, " << at << " {padding = " << pad_of(c.op) << "} : " << tin << "\n";
  if (scan) {
    k << "  %r = scan %t {axis = " << c.axis << ", kind = \"" << c.op << "\"} : " << tin
      << "\n  store %y, " << at << ", %r\n";
  } else {
    k << "  %r = reduce %t {axis = " << c.axis << ", kind = \"" << c.op << "\"} : tile<16x"
      << dt(c.out) << ">\n  store %y, %o, %r\n";
  }
  k << "  return\n}\n";
  return k.str();
}

std::string dot_kernel(const PrecisionCase &c) {
  const std::string tin = "tile<16x16x" + dt(c.in) + ">", tacc = "tile<16x16x" + dt(c.out) + ">";
  std::ostringstream k;
  k << "kernel @k(%a: tensor<?x?x" << dt(c.in) << ">, %b: tensor<?x?x" << dt(c.in)
    << ">, %c: tensor<?x?x" << dt(c.out) << ">) {\n"
    << "  %pm = program_id {axis = 0} : i32\n  %pn = program_id {axis = 1} : i32\n"
    << "  %bs = constant {value = 16} : i32\n  %m0 = mul %pm, %bs : i32\n"
    << "  %n0 = mul %pn, %bs : i32\n  %kd = dim %a {axis = 1} : i64\n"
    << "  %ke = cast %kd : i32\n  %zero = constant {value = 0} : i32\n"
    << "  %acc0 = full {value = 0} : " << tacc << "\n"
    << "  %acc = for %kk = %zero to %ke step %bs iter_args(%ai = %acc0) : " << tacc << " {\n"
    << "    %at = load %a, %m0, %kk : " << tin << "\n"
    << "    %bt = load %b, %kk, %n0 : " << tin << "\n"
    << "    %an = dot %at, %bt, %ai {acc_type = " << dt(c.out);
  if (!c.input_precision.empty())
    k << ", input_precision = \"" << c.input_precision << "\"";
  k << "} : " << tacc << "\n    yield %an\n  }\n  store %c, %m0, %n0, %acc\n  return\n}\n";
  return k.str();
}

} // namespace

int PrecisionCase::arity() const {
  switch (kind) {
  case PrecisionKind::Binary:
  case PrecisionKind::IntBinary:
    return 2;
  case PrecisionKind::Fma:
  case PrecisionKind::Clamp:
    return 3;
  default:
    return 1;
  }
}

json PrecisionCase::params() const {
  json j = {
      {"op", op}, {"in", dt(in)}, {"out", dt(out)}, {"shape", shape}, {"tolerance_entry", tol_key}};
  if (kind == PrecisionKind::Reduce || kind == PrecisionKind::Scan)
    j["axis"] = axis;
  if (!rounding.empty())
    j["rounding"] = rounding;
  if (!input_precision.empty())
    j["input_precision"] = input_precision;
  return j;
}

const std::vector<PrecisionCase> &precision_cases() {
  static const std::vector<PrecisionCase> cases = build();
  return cases;
}

std::string precision_kernel(const PrecisionCase &c) {
  switch (c.kind) {
  case PrecisionKind::Reduce:
  case PrecisionKind::Scan:
    return reduce_kernel(c);
  case PrecisionKind::Dot:
    return dot_kernel(c);
  default:
    return elementwise_kernel(c);
  }
}

std::array<uint64_t, 3> precision_grid(const PrecisionCase &c) {
  auto u = [](int64_t v) { return static_cast<uint64_t>(v); };
  switch (c.kind) {
  case PrecisionKind::Reduce:
  case PrecisionKind::Scan:
    return {u(ceil_div(c.axis == 1 ? c.shape[0] : c.shape[1], kBlock2)), 1, 1};
  case PrecisionKind::Dot:
    return {u(ceil_div(c.shape[0], kBlock2)), u(ceil_div(c.shape[1], kBlock2)), 1};
  default:
    if (c.shape.size() == 1)
      return {u(ceil_div(c.shape[0], kBlock1)), 1, 1};
    return {u(ceil_div(c.shape[0], kBlock2)), u(ceil_div(c.shape[1], kBlock2)), 1};
  }
}

} // namespace tl::conform
