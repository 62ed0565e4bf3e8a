// The self-contained HTML report: summary, verdict, failures, and inline SVG charts (precision
// error distribution per op, bandwidth against peak, performance on the roofline). No scripts,
// fonts or images from the network.
// SPDX-License-Identifier: Apache-2.0
#include "compare.h"
#include "report.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <sstream>

namespace tl::conform {
namespace {

std::string esc(const std::string &s) {
  std::string o;
  for (char c : s) {
    if (c == '&')
      o += "&amp;";
    else if (c == '<')
      o += "&lt;";
    else if (c == '>')
      o += "&gt;";
    else if (c == '"')
      o += "&quot;";
    else
      o += c;
  }
  return o;
}

std::string fmt(double v, int prec = 3) {
  std::ostringstream o;
  o.precision(prec);
  o << v;
  return o.str();
}

double num(const json &j, const char *k) {
  if (!j.contains(k) || !j[k].is_number())
    return std::nan("");
  return j[k].get<double>();
}

const char *status_color(const std::string &s) {
  if (s == "pass")
    return "#2e7d32";
  if (s == "fail")
    return "#c62828";
  if (s == "crash")
    return "#6a1b9a";
  if (s == "timeout")
    return "#ef6c00";
  return "#757575";
}

/// Per op, the share of elements in each ULP-error bucket, as stacked horizontal bars.
std::string precision_chart(const json &results) {
  std::map<std::string, std::vector<double>> hist;
  std::map<std::string, double> worst_ratio;
  const size_t nb = ulp_buckets().size();
  for (const json &r : results["results"]) {
    if (r["suite"] != "precision" || !r["metrics"].contains("ulp_histogram"))
      continue;
    const std::string op = r["metrics"].value("op", "?");
    auto &h = hist[op];
    h.resize(nb, 0);
    const auto &src = r["metrics"]["ulp_histogram"];
    for (size_t b = 0; b < nb && b < src.size(); ++b)
      h[b] += src[b].get<double>();
    double ratio = 0;
    const double u = num(r["metrics"], "max_ulp"), ub = num(r["metrics"], "bound_ulp");
    const double nw = num(r["metrics"], "normwise"), nb2 = num(r["metrics"], "bound_normwise");
    if (ub > 0 && std::isfinite(u))
      ratio = std::max(ratio, u / ub);
    if (nb2 > 0 && std::isfinite(nw))
      ratio = std::max(ratio, nw / nb2);
    if (r["metrics"]["max_ulp"] == "inf" || r["status"] == "fail")
      ratio = std::max(ratio, 1.0 + 1e-9);
    worst_ratio[op] = std::max(worst_ratio[op], ratio);
  }
  if (hist.empty())
    return "<p>No precision results.</p>";
  const char *colors[] = {"#1b5e20", "#43a047", "#9ccc65", "#d4e157",
                          "#ffca28", "#ff9800", "#f4511e", "#b71c1c"};
  const int row = 18, left = 110, width = 520, top = 30;
  std::ostringstream o;
  const int h = top + row * int(hist.size()) + 20;
  o << "<svg xmlns='http://www.w3.org/2000/svg' width='" << left + width + 170 << "' height='" << h
    << "' font-family='sans-serif' font-size='11'>";
  const char *labels[] = {"0",        "&#8804;0.5", "&#8804;1",   "&#8804;2",
                          "&#8804;4", "&#8804;16",  "&#8804;256", "&gt;256"};
  for (size_t b = 0; b < nb; ++b)
    o << "<rect x='" << left + 65 * b << "' y='4' width='10' height='10' fill='" << colors[b]
      << "'/><text x='" << left + 65 * b + 13 << "' y='13'>" << labels[b] << " ulp</text>";
  int y = top;
  for (auto &[op, hv] : hist) {
    double total = 0;
    for (double v : hv)
      total += v;
    o << "<text x='" << left - 6 << "' y='" << y + 12 << "' text-anchor='end'>" << esc(op)
      << "</text>";
    double x = left;
    for (size_t b = 0; b < nb; ++b) {
      const double w = total > 0 ? width * hv[b] / total : 0;
      if (w > 0)
        o << "<rect x='" << x << "' y='" << y + 2 << "' width='" << w << "' height='" << row - 4
          << "' fill='" << colors[b] << "'><title>" << esc(op) << ": " << fmt(100 * hv[b] / total)
          << "% of elements in bucket " << labels[b] << "</title></rect>";
      x += w;
    }
    const double ratio = worst_ratio[op];
    o << "<text x='" << left + width + 8 << "' y='" << y + 12 << "' fill='"
      << (ratio > 1 ? "#c62828" : "#333") << "'>worst " << fmt(ratio, 2) << " of bound</text>";
    y += row;
  }
  o << "</svg>";
  return o.str();
}

/// Achieved bandwidth per test against its datasheet figure (link or memory bandwidth, each
/// test its own: a tick at the figure and one at the 85 % bar).
std::string bandwidth_chart(const json &results) {
  std::vector<const json *> rs;
  double maxv = 0;
  for (const json &r : results["results"])
    if (r["suite"] == "bandwidth" && r["metrics"].contains("achieved_bytes_per_s")) {
      rs.push_back(&r);
      maxv = std::max(
          {maxv, num(r["metrics"], "peak_bytes_per_s"), num(r["metrics"], "achieved_bytes_per_s")});
    }
  if (rs.empty() || !(maxv > 0))
    return "<p>No bandwidth results.</p>";
  const double scale = maxv * 1.1;
  const int left = 150, width = 500, row = 22, top = 20;
  const int h = top + row * int(rs.size()) + 30;
  std::ostringstream o;
  o << "<svg xmlns='http://www.w3.org/2000/svg' width='" << left + width + 260 << "' height='" << h
    << "' font-family='sans-serif' font-size='11'>";
  int y = top;
  for (const json *r : rs) {
    const json &m = (*r)["metrics"];
    const double v = num(m, "achieved_bytes_per_s"), peak = num(m, "peak_bytes_per_s");
    const std::string id = (*r)["id"];
    o << "<text x='" << left - 6 << "' y='" << y + 14 << "' text-anchor='end'>"
      << esc(id.substr(10)) << "</text><rect x='" << left << "' y='" << y + 3 << "' width='"
      << width * v / scale << "' height='" << row - 6 << "' fill='" << status_color((*r)["status"])
      << "'/><text x='" << left + width * v / scale + 4 << "' y='" << y + 14 << "'>" << fmt(v / 1e9)
      << " GB/s ("
      << (peak > 0 ? fmt(100 * v / peak, 3) + "% of " + fmt(peak / 1e9) + " GB/s"
                   : std::string("no datasheet"))
      << ")</text>";
    for (double frac : {1.0, 0.85})
      if (peak > 0) {
        const double x = left + width * frac * peak / scale;
        o << "<line x1='" << x << "' y1='" << y + 1 << "' x2='" << x << "' y2='" << y + row - 1
          << "' stroke='#000' stroke-dasharray='" << (frac < 1 ? "2,2" : "none") << "'/>";
      }
    y += row;
  }
  o << "<text x='" << left << "' y='" << y + 14 << "'>ticks: the datasheet figure (solid) and "
    << "85 % of it (dashed)</text></svg>";
  return o.str();
}

/// Attained FLOP/s against arithmetic intensity, under the roofline min(peak, AI x bandwidth).
std::string roofline_chart(const json &results) {
  std::vector<const json *> rs;
  double peak = 0, bw = 0;
  for (const json &r : results["results"])
    if (r["suite"] == "performance" && r["metrics"].contains("achieved_flops_per_s")) {
      rs.push_back(&r);
      peak = num(r["metrics"], "peak_flops_per_s");
      bw = num(r["metrics"], "peak_bytes_per_s");
    }
  if (rs.empty() || !(peak > 0) || !(bw > 0))
    return "<p>No performance results.</p>";
  double ymin = peak, ymax = peak * 3;
  for (const json *r : rs)
    ymin = std::min(ymin, std::max(1.0, num((*r)["metrics"], "achieved_flops_per_s")));
  ymin /= 5;
  const double xmin = 1e-2, xmax = 1e3;
  const int W = 560, H = 320, L = 70, B = 40;
  auto X = [&](double ai) {
    return L + (W - L - 20) * (std::log10(ai) - std::log10(xmin)) /
                   (std::log10(xmax) - std::log10(xmin));
  };
  auto Y = [&](double f) {
    return (H - B) - (H - B - 10) * (std::log10(f) - std::log10(ymin)) /
                         (std::log10(ymax) - std::log10(ymin));
  };
  std::ostringstream o;
  o << "<svg xmlns='http://www.w3.org/2000/svg' width='" << W + 200 << "' height='" << H
    << "' font-family='sans-serif' font-size='11'>";
  o << "<rect x='" << L << "' y='10' width='" << W - L - 20 << "' height='" << H - B - 10
    << "' fill='none' stroke='#999'/>";
  for (double ai = xmin; ai <= xmax * 1.01; ai *= 10)
    o << "<text x='" << X(ai) << "' y='" << H - B + 14 << "' text-anchor='middle'>" << fmt(ai)
      << "</text>";
  for (double f = std::pow(10, std::ceil(std::log10(ymin))); f <= ymax; f *= 100)
    o << "<text x='" << L - 4 << "' y='" << Y(f) + 4 << "' text-anchor='end'>" << fmt(f, 2)
      << "</text>";
  o << "<text x='" << (L + W) / 2 << "' y='" << H - 6
    << "' text-anchor='middle'>arithmetic intensity (FLOP/byte)</text>"
    << "<text x='14' y='" << (H - B) / 2 << "' transform='rotate(-90 14 " << (H - B) / 2
    << ")' text-anchor='middle'>FLOP/s</text>";
  // The roof: a bandwidth slope until the ridge point, then flat at the peak.
  std::ostringstream pts;
  for (double ai = xmin; ai <= xmax * 1.0001; ai *= 1.25) {
    const double f = std::min(peak, ai * bw);
    if (f >= ymin)
      pts << X(ai) << "," << Y(f) << " ";
  }
  o << "<polyline points='" << pts.str() << "' fill='none' stroke='#1565c0' stroke-width='2'/>"
    << "<text x='" << X(xmax) - 4 << "' y='" << Y(peak) - 5 << "' text-anchor='end' fill='#1565c0'>"
    << "peak " << fmt(peak / 1e9) << " GFLOP/s, " << fmt(bw / 1e9) << " GB/s</text>";
  for (const json *r : rs) {
    const json &m = (*r)["metrics"];
    const double ai = num(m, "intensity"), f = std::max(ymin, num(m, "achieved_flops_per_s"));
    const std::string id = (*r)["id"];
    o << "<circle cx='" << X(ai) << "' cy='" << Y(f) << "' r='5' fill='"
      << status_color((*r)["status"]) << "'><title>" << esc(id) << ": " << fmt(f / 1e9)
      << " GFLOP/s, " << fmt(100 * num(m, "fraction_of_roofline")) << "% of the roofline</title>"
      << "</circle><text x='" << X(ai) + 7 << "' y='" << Y(f) + 4 << "'>" << esc(id.substr(12))
      << " " << fmt(100 * num(m, "fraction_of_roofline"), 2) << "%</text>";
  }
  o << "</svg>";
  return o.str();
}

/// A rate in its unit, scaled to giga.
std::string rate(double v, const std::string &unit) {
  if (!std::isfinite(v))
    return "-";
  return fmt(v / 1e9) + " G" + unit;
}

/// The ops suite: one row per op x dtype (shape, status, largest error against its bound,
/// achieved rate, the roofline bound that limits it and the fraction reached).
std::string ops_table(const json &results) {
  std::ostringstream o;
  int rows = 0;
  o << "<table><tr><th>op</th><th>dtype</th><th>shape</th><th>status</th><th>tolerance</th>"
    << "<th>error nearest its bound (bound), "
       "argument</th><th>achieved</th><th>bound</th><th>fraction</th>"
    << "</tr>";
  for (const json &r : results["results"]) {
    if (r["suite"] != "ops")
      continue;
    ++rows;
    const json m = r.value("metrics", json::object());
    const std::string id = r["id"], st = r["status"];
    const std::string op = m.value("op", id.substr(4));
    // The tensor nearest its bound (or past it): its normwise or ULP error and that bound.
    double ratio = -1;
    std::string err = "-";
    for (const json &t : m.value("tensors", json::array())) {
      const bool ulp = t.contains("bound_ulp");
      const double e = num(t, ulp ? "max_ulp" : "normwise");
      const double b = num(t, ulp ? "bound_ulp" : "bound_normwise");
      const double q = std::isfinite(b) && b > 0 ? e / b : (e > 0 ? INFINITY : 0);
      if (!(q > ratio))
        continue;
      ratio = q;
      err = (ulp ? fmt(e) + " ulp" : fmt(e)) +
            (std::isfinite(b) ? " (" + fmt(b) + ")" : " (exact)") + " " + t.value("argument", "");
    }
    const json roof = m.value("roofline", json::object());
    const std::string unit = roof.value("unit", "B/s");
    const std::string kind =
        roof.contains("bound") && roof["bound"].is_string() ? roof["bound"].get<std::string>() : "";
    o << "<tr><td>" << esc(op) << "</td><td>" << esc(m.value("dtype", "")) << "</td><td>"
      << esc(m.value("shape", ""))
      << "</td><td><span class='st' style='background:" << status_color(st) << "'>" << esc(st)
      << "</span></td><td>" << esc(m.value("tolerance", "")) << "</td><td>" << esc(err)
      << "</td><td>" << rate(num(roof, "achieved_per_s"), unit) << "</td><td>"
      << (kind.empty() ? esc(roof.value("why_no_bound", "-"))
                       : kind + " " + rate(num(roof, "bound_per_s"), unit))
      << "</td><td>"
      << (kind.empty() ? "-" : fmt(100 * num(roof, "fraction_of_roofline"), 2) + " %")
      << "</td></tr>";
  }
  o << "</table>";
  if (rows == 0)
    return "<p>No ops results.</p>";
  return o.str();
}

} // namespace

std::string html_report(const json &results) {
  std::ostringstream o;
  const json &run = results["run"], &dev = results["device"], &s = results["summary"],
             &v = results["verdict"];
  const bool ok = v.value("certified", false);
  o << "<!DOCTYPE html>\n<html lang='en'><head><meta charset='utf-8'><title>tl-conform: "
    << esc(dev.value("name", run.value("device", ""))) << "</title><style>"
    << "body{font-family:sans-serif;margin:24px;max-width:1100px;color:#222}"
    << "table{border-collapse:collapse;font-size:13px}td,th{border:1px solid #ccc;padding:3px 6px;"
    << "text-align:left;vertical-align:top}.verdict{padding:10px;font-size:18px;color:#fff;"
    << "background:" << (ok ? "#2e7d32" : "#c62828") << "}pre{white-space:pre-wrap;margin:0;"
    << "font-size:12px}.st{color:#fff;padding:0 4px;border-radius:3px}</style></head><body>\n";
  o << "<h1>tl-conform report</h1><div class='verdict'>" << esc(verdict_line(v)) << "</div>\n";
  o << "<h2>Run</h2><table>";
  auto row = [&](const std::string &k, const std::string &val) {
    o << "<tr><th>" << esc(k) << "</th><td>" << esc(val) << "</td></tr>";
  };
  row("device", dev.value("name", "?") + " (" + dev.value("vendor", "?") + ")");
  row("plugin", results["plugin"].value("name", "?") + " " +
                    results["plugin"].value("version", "") + ", sha256 " +
                    results["plugin"].value("sha256", "?"));
  row("tool / suite", "tl-conform " + run.value("tool_version", "") + ", suite " +
                          run.value("suite_version", "") + ", sha256 " +
                          run.value("suite_sha256", ""));
  row("profile", run.value("profile", ""));
  row("seed", run["seed"].dump());
  row("declared by the plugin",
      fmt(dev.value("peak_bandwidth_bytes_per_s", 0.0) / 1e9) + " GB/s, f32 " +
          fmt(dev.value("peak_flops", json::object()).value("f32", 0.0) / 1e9) +
          " GFLOP/s (not what speed is judged on)");
  const json ds = run.value("datasheet", json::object());
  row("datasheet", ds.value("ok", false)
                       ? ds.value("path", "") + ", sha256 " + ds.value("sha256", "")
                       : "none that applies: " + ds.value("reason", "not recorded"));
  o << "</table>\n<h2>Summary</h2><table><tr><th>suite</th>";
  const char *sts[] = {"pass", "fail", "not-supported", "crash", "timeout"};
  for (const char *k : sts)
    o << "<th>" << k << "</th>";
  o << "</tr>";
  for (auto &[suite, counts] : s["suites"].items()) {
    o << "<tr><td>" << esc(suite) << "</td>";
    for (const char *k : sts)
      o << "<td>" << counts.value(k, 0) << "</td>";
    o << "</tr>";
  }
  o << "</table><p>" << s["expected_failures"] << " expected failure(s), " << s["unexpected_passes"]
    << " unexpected pass(es).</p>\n";
  o << "<h2>Precision: error distribution per op</h2>"
    << "<p>Share of result elements by error in ULPs of the result format against the fp64 "
       "reference; on the right, the worst test's error as a fraction of its bound.</p>"
    << precision_chart(results);
  o << "<h2>Bandwidth against the datasheet</h2>" << bandwidth_chart(results);
  o << "<h2>Performance on the roofline</h2>" << roofline_chart(results);
  o << "<h2>Op library: correctness and per-op roofline</h2>"
    << "<p>Each generated specialization (kernels/ops) on its ragged case: every output against "
       "the kernel in the interpreter's fp64 mode under the op's tolerance entry (the verdict), "
       "then its best time over a few launches against the least time its bytes, FLOPs and "
       "elementwise work need on the datasheet's figures (informative: small shapes, so "
       "launch latency dominates).</p>"
    << ops_table(results);
  o << "<h2>Failures</h2><table><tr><th>test</th><th>status</th><th>message</th></tr>";
  for (const json &r : results["results"]) {
    const std::string st = r["status"];
    if (st == "pass" && !r.value("unexpected_pass", false))
      continue;
    if (st == "not-supported")
      continue;
    o << "<tr><td>" << esc(r["id"])
      << "</td><td><span class='st' style='background:" << status_color(st) << "'>" << st
      << "</span>" << (r.value("unexpected_pass", false) ? " unexpected pass" : "")
      << (expected_failure(r) ? " (expected)" : "") << "</td><td><pre>"
      << esc(r.value("message", "")) << "</pre></td></tr>";
  }
  o << "</table>\n<h2>All results</h2><details><summary>" << s["total"]
    << " tests</summary><table><tr><th>test</th><th>status</th><th>time "
       "(s)</th><th>metrics</th></tr>";
  for (const json &r : results["results"]) {
    json m = r.value("metrics", json::object());
    if (m.is_object())
      m.erase("ulp_histogram");
    o << "<tr><td>" << esc(r["id"])
      << "</td><td><span class='st' style='background:" << status_color(r["status"]) << "'>"
      << r["status"].get<std::string>() << "</span></td><td>" << fmt(r.value("duration_s", 0.0))
      << "</td><td><pre>" << esc(m.dump()) << "</pre></td></tr>";
  }
  o << "</table></details></body></html>\n";
  return o.str();
}

} // namespace tl::conform
