// The pinned suite (see suite_pin.h).
// SPDX-License-Identifier: Apache-2.0
#include "suite_pin.h"

#include "tl_conform_cts_sha256.h"
#include "tl_conform_suite_files_sha256.h"

#include <algorithm>
#include <cstring>
#include <filesystem>

extern char **environ;

namespace tl::conform {
namespace {

/// Environment variables that change what the verdict rests on (a device's declared peak, the
/// simulator a device runs): set, they make a run non-standard. Every other TL_* is recorded.
constexpr const char *kVerdictVariables[] = {"TL_CPU_PEAK_BANDWIDTH", "TL_NPUSIM_WORKER"};

json tl_environment() {
  json env = json::object();
  for (char **e = environ; e && *e; ++e)
    if (std::strncmp(*e, "TL_", 3) == 0)
      if (const char *eq = std::strchr(*e, '='))
        env[std::string(*e, static_cast<size_t>(eq - *e))] = std::string(eq + 1);
  return env;
}

} // namespace

std::string tree_sha256(const std::vector<std::string> &dirs) {
  namespace fs = std::filesystem;
  std::string all;
  for (const std::string &dir : dirs) {
    std::error_code ec;
    std::vector<std::string> files;
    for (fs::recursive_directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec))
      if (it->is_regular_file(ec))
        files.push_back(fs::relative(it->path(), dir, ec).generic_string());
    if (ec)
      return {};
    std::sort(files.begin(), files.end());
    for (const std::string &f : files)
      all += f + "\n" + sha256_file(dir + "/" + f) + "\n";
  }
  return sha256_hex(all);
}

const char *kit_suite_files_sha256() { return TL_CONFORM_SUITE_FILES_SHA256; }

json run_provenance(const Paths &paths) {
  json p = {{"options",
             {{"data_dir", paths.data_dir},
              {"corpus_dir", paths.corpus_dir},
              {"cts", paths.cts},
              {"target", paths.target}}},
            {"environment", tl_environment()}};
  json reasons = json::array();
  const std::string files = tree_sha256({paths.data_dir, paths.corpus_dir});
  p["suite_files_sha256"] = files;
  p["kit_suite_files_sha256"] = kit_suite_files_sha256();
  if (files != kit_suite_files_sha256())
    reasons.push_back("the tolerance table, expected failures, baselines or corpus (" +
                      paths.data_dir + ", " + paths.corpus_dir + ") differ from the kit's");
  std::error_code ec;
  p["cts_sha256"] = std::filesystem::is_regular_file(paths.cts, ec) ? sha256_file(paths.cts) : "";
  p["kit_cts_sha256"] = TL_CONFORM_CTS_SHA256;
  if (p["cts_sha256"] != TL_CONFORM_CTS_SHA256)
    reasons.push_back("the conformance test program " + paths.cts + " is not the kit's");
  if (!paths.target.empty())
    reasons.push_back("--target " + paths.target +
                      " instead of the compiler's choice for the device");
  for (const char *v : kVerdictVariables)
    if (p["environment"].contains(v))
      reasons.push_back(std::string(v) + " is set");
  p["non_standard"] = reasons;
  return p;
}

} // namespace tl::conform
