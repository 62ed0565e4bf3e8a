// Certification package: a canonical ustar writer/reader, creation and verification.
// SPDX-License-Identifier: Apache-2.0
#include "package.h"

#include "report.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <stdexcept>

namespace tl::conform {
namespace {

namespace fs = std::filesystem;
constexpr size_t kBlock = 512;

void put_octal(char *field, size_t width, uint64_t v) {
  // width - 1 octal digits and a NUL, as ustar writes numbers.
  std::snprintf(field, width, "%0*llo", int(width - 1), static_cast<unsigned long long>(v));
}

std::string header(const std::string &name, uint64_t size) {
  if (name.size() >= 100)
    throw std::runtime_error("archive member name too long: " + name);
  char h[kBlock] = {};
  std::memcpy(h, name.data(), name.size());
  put_octal(h + 100, 8, 0644);
  put_octal(h + 108, 8, 0);
  put_octal(h + 116, 8, 0);
  put_octal(h + 124, 12, size);
  put_octal(h + 136, 12, 0);
  h[156] = '0';
  std::memcpy(h + 257, "ustar", 6);
  std::memcpy(h + 263, "00", 2);
  std::memset(h + 148, ' ', 8);
  unsigned sum = 0;
  for (size_t i = 0; i < kBlock; ++i)
    sum += static_cast<unsigned char>(h[i]);
  std::snprintf(h + 148, 8, "%06o", sum); // six digits, NUL, then the space left in place
  h[155] = ' ';
  return std::string(h, kBlock);
}

uint64_t parse_octal(const char *f, size_t width) {
  uint64_t v = 0;
  for (size_t i = 0; i < width && f[i] >= '0' && f[i] <= '7'; ++i)
    v = v * 8 + uint64_t(f[i] - '0');
  return v;
}

const char *kMembers[] = {"statement.txt", "package.json", "results.json", "suite.json",
                          "device.json",   "junit.xml",    "report.html",  "results.jsonl"};

/// The declared spec the timing tests were judged against (datasheet.h), or why there was none.
std::string datasheet_lines(const json &d) {
  std::ostringstream o;
  if (d.value("sha256", "").empty()) {
    o << "Datasheet: none (" << d.value("reason", "not recorded") << ")\n";
    return o.str();
  }
  const json c = d.value("content", json::object());
  // The content is the file as read, valid or not: every field is checked before use.
  auto str = [&](const char *k) {
    return c.is_object() && c.contains(k) && c[k].is_string() ? c[k].get<std::string>() : "?";
  };
  auto gb = [&](const char *k) {
    if (!(c.is_object() && c.contains(k) && c[k].is_number()))
      return std::string("not declared");
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.1f GB/s", c[k].get<double>() / 1e9);
    return std::string(buf);
  };
  o << "Datasheet: " << d.value("path", "?") << (d.value("given", false) ? " (--datasheet)" : "")
    << "\n          SHA-256 " << d["sha256"].get<std::string>() << "\n          device "
    << str("device") << "\n          memory " << gb("memory_bandwidth_bytes_per_s") << ", link "
    << gb("link_bandwidth_bytes_per_s") << "\n";
  if (c.is_object() && c.contains("peak_flops") && c["peak_flops"].is_object())
    for (auto it = c["peak_flops"].begin(); it != c["peak_flops"].end(); ++it)
      if (it.value().is_number())
        o << "          peak " << it.key() << " " << it.value().get<double>() / 1e9 << " GFLOP/s\n";
  o << "          source: " << str("source") << "\n";
  if (!d.value("ok", false))
    o << "          not used: " << d.value("reason", "") << "\n";
  return o.str();
}

std::string statement(const json &results, const json &pkg) {
  std::ostringstream o;
  const json &d = results["device"], &p = results["plugin"], &s = results["summary"];
  o << "TL conformance statement\n========================\n\n"
    << "Device:   " << d.value("name", "?") << " (" << d.value("vendor", "?") << ")\n"
    << "Plugin:   " << p.value("name", "?") << " " << p.value("version", "") << ", "
    << p.value("path", "?") << "\n          SHA-256 " << p.value("sha256", "?") << "\n"
    << "Tool:     tl-conform " << pkg["tool_version"].get<std::string>() << ", suite "
    << pkg["suite_version"].get<std::string>() << "\n          suite SHA-256 "
    << pkg["suite_sha256"].get<std::string>() << "\n"
    << "Profile:  " << pkg["profile"].get<std::string>() << "\nSeed:     " << pkg["seed"] << "\n"
    << datasheet_lines(results["run"].value("datasheet", json::object()))
    << "\nResults:  " << s["total"] << " tests:";
  for (const char *k : {"pass", "fail", "not-supported", "crash", "timeout"})
    o << " " << s.value(k, 0) << " " << k << ";";
  o << " " << s["expected_failures"] << " of the failures are listed as expected\n\n"
    << "Verdict:  " << verdict_line(results["verdict"]) << "\n";
  for (const json &f : results["verdict"]["failing"])
    o << "  " << f["status"].get<std::string>() << "  " << f["id"].get<std::string>() << "\n";
  const json none = json::array();
  const json &exempt =
      results["verdict"].contains("not_supported") ? results["verdict"]["not_supported"] : none;
  if (!exempt.empty())
    o << "\nNot supported, each exempted by the profile:\n";
  for (const json &n : exempt)
    o << "  " << n["id"].get<std::string>() << ": " << n.value("reason", "") << " ("
      << n.value("exempt_because", "") << ")\n";
  o << "\nEvery member of this package is listed with its SHA-256 in SHA256SUMS;\n"
    << "`tl-conform verify <package>` checks them, re-derives the verdict from results.json\n"
    << "and suite.json, and detects any changed byte of the archive.\n";
  return o.str();
}

std::string sums(const ArchiveEntries &entries) {
  std::string s;
  for (const auto &[name, data] : entries)
    s += sha256_hex(data) + "  " + name + "\n";
  return s;
}

} // namespace

std::string write_tar(const ArchiveEntries &entries) {
  std::string out;
  for (const auto &[name, data] : entries) {
    out += header(name, data.size());
    out += data;
    out.append((kBlock - data.size() % kBlock) % kBlock, '\0');
  }
  out.append(2 * kBlock, '\0');
  return out;
}

ArchiveEntries read_tar(const std::string &bytes) {
  ArchiveEntries out;
  size_t pos = 0;
  for (;;) {
    if (pos + kBlock > bytes.size())
      throw std::runtime_error("truncated archive at byte " + std::to_string(pos));
    const char *h = bytes.data() + pos;
    if (std::all_of(h, h + kBlock, [](char c) { return c == 0; }))
      break;
    std::string hc(h, kBlock);
    std::memset(hc.data() + 148, ' ', 8);
    unsigned sum = 0;
    for (char c : hc)
      sum += static_cast<unsigned char>(c);
    if (sum != parse_octal(h + 148, 8))
      throw std::runtime_error("bad header checksum at byte " + std::to_string(pos));
    if (h[156] != '0' || std::memcmp(h + 257, "ustar", 6) != 0)
      throw std::runtime_error("not a regular ustar member at byte " + std::to_string(pos));
    const std::string name(h, strnlen(h, 100));
    const uint64_t size = parse_octal(h + 124, 12);
    pos += kBlock;
    if (pos + size > bytes.size())
      throw std::runtime_error("member " + name + " is truncated");
    out.emplace_back(name, bytes.substr(pos, size));
    pos += (size + kBlock - 1) / kBlock * kBlock;
  }
  return out;
}

std::string create_package(const std::string &out_dir, const json &results, const json &manifest) {
  const json &run = results["run"];
  const std::string plugin = results["plugin"].value("name", run.value("device", "device"));
  json pkg = {{"format", "tl-conform certification package 1"},
              {"tool", "tl-conform"},
              {"tool_version", run["tool_version"]},
              {"suite_version", run["suite_version"]},
              {"suite_sha256", run["suite_sha256"]},
              {"plugin", results["plugin"]},
              {"device", results["device"].value("name", "")},
              {"profile", run["profile"]},
              {"seed", run["seed"]},
              {"verdict", results["verdict"]}};
  const json device = {{"capabilities", results["device"]},
                       {"plugin", results["plugin"]},
                       {"plugins", results["plugins"]}};
  ArchiveEntries e;
  e.emplace_back("statement.txt", statement(results, pkg));
  e.emplace_back("package.json", pkg.dump(2) + "\n");
  e.emplace_back("results.json", results.dump(2) + "\n");
  e.emplace_back("suite.json", manifest.dump(2) + "\n");
  e.emplace_back("device.json", device.dump(2) + "\n");
  e.emplace_back("junit.xml", read_file(out_dir + "/junit.xml"));
  e.emplace_back("report.html", read_file(out_dir + "/report.html"));
  e.emplace_back("results.jsonl", read_file(out_dir + "/results.jsonl"));
  e.emplace_back("SHA256SUMS", sums(e));
  const std::string path =
      out_dir + "/certification-" + plugin + "-" + run["profile"].get<std::string>() + ".tar";
  std::ofstream(path, std::ios::binary) << write_tar(e);
  return path;
}

VerifyResult verify_package(const std::string &path) {
  VerifyResult v;
  auto problem = [&](std::string p) { v.problems.push_back(std::move(p)); };
  std::string bytes;
  ArchiveEntries e;
  try {
    bytes = read_file(path);
    e = read_tar(bytes);
  } catch (const std::exception &ex) {
    problem(ex.what());
    return v;
  }
  if (write_tar(e) != bytes)
    problem("the archive is not in its canonical form: a header, padding or trailer byte changed");
  std::map<std::string, std::string> files;
  for (const auto &[name, data] : e)
    if (!files.emplace(name, data).second)
      problem("duplicate member " + name);
  for (const char *m : kMembers)
    if (!files.count(m))
      problem(std::string("missing member ") + m);
  if (!files.count("SHA256SUMS")) {
    problem("missing SHA256SUMS");
    return v;
  }
  if (e.empty() || e.back().first != "SHA256SUMS")
    problem("SHA256SUMS is not the last member");
  ArchiveEntries covered(e.begin(), e.end());
  if (!covered.empty() && covered.back().first == "SHA256SUMS")
    covered.pop_back();
  if (sums(covered) != files["SHA256SUMS"]) {
    std::istringstream in(files["SHA256SUMS"]);
    std::map<std::string, std::string> listed;
    for (std::string h, n; in >> h >> n;)
      listed[n] = h;
    for (const auto &[name, data] : covered)
      if (!listed.count(name))
        problem("member " + name + " is not listed in SHA256SUMS");
      else if (listed[name] != sha256_hex(data))
        problem("member " + name + " does not match its SHA-256");
    if (listed.size() != covered.size())
      problem("SHA256SUMS lists members the archive lacks");
    if (v.problems.empty())
      problem("SHA256SUMS was changed");
    return v; // a changed member is not read further: it need not even be well-formed
  }
  try {
    v.results = json::parse(files["results.json"]);
    v.manifest = json::parse(files["suite.json"]);
    check_results_document(v.results, v.manifest, "results.json");
    const json &results = v.results, &manifest = v.manifest;
    v.package = json::parse(files["package.json"]);
    v.verdict = compute_verdict(results, manifest);
    if (v.package["suite_sha256"] != sha256_hex(manifest.dump()))
      problem("suite.json does not match the suite SHA-256 in package.json");
    if (v.package["suite_sha256"] != results["run"]["suite_sha256"])
      problem("package.json and results.json name different suites");
    if (v.package["seed"] != results["run"]["seed"])
      problem("package.json and results.json name different seeds");
    if (v.package["plugin"] != results["plugin"])
      problem("package.json and results.json name different plugins");
    if (v.verdict != results["verdict"] || v.verdict != v.package["verdict"])
      problem("the recorded verdict is not the one the results give");
  } catch (const std::exception &ex) {
    problem(std::string("unreadable package contents: ") + ex.what());
  }
  v.intact = v.problems.empty();
  return v;
}

} // namespace tl::conform
