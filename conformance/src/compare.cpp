// Tolerance table, ULP and normwise errors for the precision suite.
// SPDX-License-Identifier: Apache-2.0
#include "compare.h"

#include "tl/reference/metrics.h"
#include "tl/reference/numerics.h"

#include <cmath>
#include <limits>
#include <sstream>
#include <stdexcept>

namespace tl::conform {
namespace num = tl::numerics;
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

std::optional<num::FloatFormat> format_of(ir::ScalarKind k) {
  switch (k) {
  case ir::ScalarKind::F16:
    return num::FloatFormat::F16;
  case ir::ScalarKind::BF16:
    return num::FloatFormat::BF16;
  case ir::ScalarKind::F32:
    return num::FloatFormat::F32;
  case ir::ScalarKind::F64:
    return num::FloatFormat::F64;
  case ir::ScalarKind::F8E4M3:
    return num::FloatFormat::F8E4M3;
  case ir::ScalarKind::F8E5M2:
    return num::FloatFormat::F8E5M2;
  default:
    return std::nullopt;
  }
}

Tolerance parse_entry(const json &j, const std::string &source) {
  Tolerance t;
  t.source = source;
  if (!j.is_object())
    throw std::runtime_error("tolerance entry " + source + " is not an object");
  for (auto &[key, v] : j.items()) {
    if (key == "ulp")
      t.ulp = v.get<double>();
    else if (key == "normwise")
      t.normwise = v.get<double>();
    else if (key == "gamma")
      t.gamma = v.get<double>();
    else if (key == "exact")
      t.exact = v.get<bool>();
    else if (key == "combine" && (v == "min" || v == "max" || v == "sum"))
      t.combine = v == "min"   ? Tolerance::Combine::Min
                  : v == "sum" ? Tolerance::Combine::Sum
                               : Tolerance::Combine::Max;
    else if (key == "accumulate") {
      const auto k = v.is_string() ? ir::parse_scalar_name(v.get<std::string>()) : std::nullopt;
      if (!k || !format_of(*k))
        throw std::runtime_error("tolerance entry " + source + ": accumulate must name a float " +
                                 "format (f32, f16, bf16, ...), got " + v.dump());
      t.accumulate = k;
    } else if (key == "bound")
      t.bound = v.get<std::string>();
    else if (key != "why")
      throw std::runtime_error("tolerance entry " + source + " has unknown key '" + key + "'");
  }
  return t;
}

bool same_float(double a, double b) {
  if (std::isnan(a) || std::isnan(b))
    return std::isnan(a) && std::isnan(b);
  return a == b && std::signbit(a) == std::signbit(b);
}

std::string num_str(double v) {
  std::ostringstream o;
  o.precision(9);
  o << v;
  return o.str();
}

} // namespace

json Tolerance::to_json() const {
  json j = json::object();
  if (ulp)
    j["ulp"] = *ulp;
  if (normwise)
    j["normwise"] = *normwise;
  if (gamma)
    j["gamma"] = *gamma;
  if (exact || (!ulp && !normwise && !gamma))
    j["exact"] = true;
  if (normwise && gamma)
    j["combine"] = combine == Combine::Min ? "min" : combine == Combine::Sum ? "sum" : "max";
  if (accumulate)
    j["accumulate"] = ir::scalar_name(*accumulate);
  if (!bound.empty())
    j["bound"] = bound;
  j["source"] = source;
  return j;
}

ToleranceTable ToleranceTable::load(const std::string &path) {
  ToleranceTable t;
  t.table_ = read_json(path);
  if (!t.table_.contains("default") || !t.table_.contains("entries"))
    throw std::runtime_error(path + ": a tolerance table needs 'default' and 'entries'");
  return t;
}

Tolerance ToleranceTable::lookup(const std::string &op, const std::string &dtype) const {
  const json &entries = table_["entries"];
  if (entries.contains(op)) {
    const json &e = entries[op];
    if (e.contains(dtype))
      return parse_entry(e[dtype], "entries." + op + "." + dtype);
    if (e.contains("*"))
      return parse_entry(e["*"], "entries." + op + ".*");
  }
  const json &d = table_["default"];
  if (d.contains(dtype))
    return parse_entry(d[dtype], "default." + dtype);
  Tolerance exact;
  exact.exact = true;
  exact.source = "exact (no entry for " + dtype + ")";
  return exact;
}

double ulp_error(ir::ScalarKind dtype, double actual, double ref) {
  auto fmt = format_of(dtype);
  if (!fmt)
    return actual == ref ? 0 : kInf;
  if (std::isnan(ref) || std::isnan(actual))
    return std::isnan(ref) && std::isnan(actual) ? 0 : kInf;
  const num::FormatInfo &f = num::format_info(*fmt);
  if (std::isinf(ref) || std::fabs(ref) > f.max_finite) {
    // Beyond the range: only the correctly rounded result (inf, or NaN for f8e4m3) is right,
    // unless the device's value is within bounds of the reference near max_finite.
    const double rounded = num::round_to(*fmt, ref);
    if (same_float(actual, rounded))
      return 0;
    if (std::isinf(ref) || !std::isfinite(actual))
      return kInf;
  }
  if (std::isinf(actual))
    return kInf;
  // ulp(ref): the spacing of the format at |ref| (the subnormal spacing below min_normal).
  const double mag = std::fabs(ref);
  const int emin = static_cast<int>(std::ilogb(f.min_normal));
  const int e = mag == 0 ? emin : std::max(static_cast<int>(std::ilogb(mag)), emin);
  const double ulp = std::ldexp(1.0, e - f.mantissa_bits);
  return std::fabs(actual - ref) / ulp;
}

const std::vector<double> &ulp_buckets() {
  static const std::vector<double> b = {0, 0.5, 1, 2, 4, 16, 256, kInf};
  return b;
}

namespace {

/// Per-element errors: the ULP histogram, the worst element, the first NaN where the reference
/// is finite, and how many elements differ at all.
struct ElementErrors {
  std::vector<int64_t> hist = std::vector<int64_t>(ulp_buckets().size(), 0);
  double max_ulp = 0;
  int64_t worst = -1, first_nan = -1, mismatches = 0;
};

ElementErrors element_errors(const CompareInput &in) {
  const std::vector<double> &a = *in.actual, &r = *in.ref;
  const int64_t n = static_cast<int64_t>(a.size());
  ElementErrors e;
  const bool is_float = ir::is_float(in.dtype);
  for (int64_t i = 0; i < n; ++i) {
    if (is_float && std::isnan(a[i]) && std::isfinite(r[i]) && e.first_nan < 0)
      e.first_nan = i;
    const double u = is_float ? ulp_error(in.dtype, a[i], r[i]) : (a[i] == r[i] ? 0 : kInf);
    if (is_float ? !same_float(a[i], r[i]) : a[i] != r[i])
      ++e.mismatches;
    for (size_t b = 0; b < e.hist.size(); ++b)
      if (u <= ulp_buckets()[b]) {
        ++e.hist[b];
        break;
      }
    if (e.worst < 0 || u > e.max_ulp) {
      e.max_ulp = u;
      e.worst = i;
    }
  }
  return e;
}

/// The reference with values beyond the format's range replaced by what the format holds (an
/// overflow to infinity is the right answer there), for normwise errors.
std::vector<double> ref_in_range(ir::ScalarKind dtype, const std::vector<double> &r) {
  std::vector<double> out = r;
  if (auto fmt = format_of(dtype))
    for (double &v : out)
      if (std::isfinite(v) && std::fabs(v) > num::format_info(*fmt).max_finite)
        v = num::round_to(*fmt, v);
  return out;
}

/// The normwise bound that applies: the normwise entry and the gamma bound c * n * u * cond,
/// combined by the entry's rule (the larger by default, the smaller for "min"); `used` names the
/// one that applies. -1 when the entry sets neither.
double normwise_bound(const CompareInput &in, const Tolerance &tol, const std::vector<double> &ref,
                      std::string &used, double &gamma_bound) {
  const int64_t n = static_cast<int64_t>(in.actual->size());
  double bound = -1;
  if (tol.normwise) {
    bound = *tol.normwise;
    used = "normwise";
  }
  if (tol.gamma) {
    double cond = 1;
    if (in.ref_abs && !in.ref_abs->empty()) {
      std::vector<double> zeros(in.ref_abs->size(), 0.0);
      const double na = tl::ref::normwise_relative_error(n, in.ref_abs->data(), zeros.data());
      const double nr = tl::ref::normwise_relative_error(n, ref.data(), zeros.data());
      cond = nr > 0 ? na / nr : 1;
    }
    double u = 0.5 * std::numeric_limits<float>::epsilon();
    if (auto fmt = format_of(tol.accumulate ? *tol.accumulate : in.dtype))
      u = std::ldexp(1.0, -num::format_info(*fmt).mantissa_bits - 1);
    gamma_bound = *tol.gamma * double(in.terms) * u * cond;
    if (bound >= 0 && tol.combine == Tolerance::Combine::Sum) {
      bound += gamma_bound;
      used = "normwise + gamma";
    } else if (bound < 0 || (tol.combine == Tolerance::Combine::Min ? gamma_bound < bound
                                                                    : gamma_bound > bound)) {
      bound = gamma_bound;
      used = "gamma";
    }
  }
  return bound;
}

json error_metrics(const CompareInput &in, const Tolerance &tol, const ElementErrors &e,
                   double normwise) {
  const std::vector<double> &a = *in.actual, &r = *in.ref;
  json m;
  m["elements"] = static_cast<int64_t>(a.size());
  m["mismatches"] = e.mismatches;
  m["normwise"] = std::isfinite(normwise) ? json(normwise) : json("inf");
  m["max_ulp"] = std::isfinite(e.max_ulp) ? json(e.max_ulp) : json("inf");
  m["ulp_histogram"] = e.hist;
  m["tolerance"] = tol.to_json();
  if (e.worst >= 0)
    m["worst"] = {
        {"index", e.worst}, {"actual", num_str(a[e.worst])}, {"expected", num_str(r[e.worst])}};
  return m;
}

} // namespace

CompareResult compare(const CompareInput &in, const Tolerance &tol) {
  const std::vector<double> &a = *in.actual, &r = *in.ref;
  const int64_t n = static_cast<int64_t>(a.size());
  const ElementErrors e = element_errors(in);
  const std::vector<double> ref = ref_in_range(in.dtype, r);
  const double normwise = tl::ref::normwise_relative_error(n, a.data(), ref.data());
  CompareResult res;
  res.metrics = error_metrics(in, tol, e, normwise);
  auto fail = [&](std::string msg) { // the first violated rule is the message
    if (res.ok) {
      res.ok = false;
      res.message = std::move(msg);
    }
  };
  if (e.first_nan >= 0)
    fail("NaN at element " + std::to_string(e.first_nan) + " where the reference is " +
         num_str(r[e.first_nan]));
  const bool exact = tol.exact || (!tol.ulp && !tol.normwise && !tol.gamma);
  if (exact && e.mismatches > 0)
    fail(std::to_string(e.mismatches) + " of " + std::to_string(n) +
         " elements differ (exact required); element " + std::to_string(e.worst) + " is " +
         num_str(a[e.worst]) + ", expected " + num_str(r[e.worst]));
  if (tol.ulp) {
    res.metrics["bound_ulp"] = *tol.ulp;
    if (!(e.max_ulp <= *tol.ulp))
      fail("max error " + num_str(e.max_ulp) + " ulp > " + num_str(*tol.ulp) + " ulp at element " +
           std::to_string(e.worst) + ": " + num_str(a[e.worst]) + ", expected " +
           num_str(r[e.worst]));
  }
  std::string used;
  double gamma_bound = -1;
  if (const double bound = normwise_bound(in, tol, ref, used, gamma_bound); bound >= 0) {
    res.metrics["bound_normwise"] = bound;
    // Which rule set the bound: "normwise" (the entry's figure, e.g. the fp32 contract),
    // "gamma" (the classical n u cond bound) or their sum, so that reports name it.
    res.metrics["bound_used"] = used;
    if (gamma_bound >= 0)
      res.metrics["bound_gamma"] = gamma_bound;
    if (!(normwise <= bound))
      fail("normwise relative error " + num_str(normwise) + " > " + num_str(bound) + " (" +
           (used == "gamma"              ? "n u cond, "
            : used == "normwise + gamma" ? "normwise + n u cond, "
                                         : "") +
           tol.source + (tol.bound.empty() ? "" : ": " + tol.bound) + ")");
  }
  return res;
}

} // namespace tl::conform
