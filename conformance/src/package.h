// The certification package: one deterministic ustar archive holding the results, the device's
// capabilities, the suite manifest, hashes of the plugin and suite, versions, the seed and a
// statement, with SHA256SUMS over every member. verify_package() detects any changed byte: it
// checks every hash, recomputes the verdict, and re-serializes the archive to compare it byte
// for byte with the file (so headers, padding and trailer are covered too).
// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "conform.h"

#include <string>
#include <utility>
#include <vector>

namespace tl::conform {

using ArchiveEntries = std::vector<std::pair<std::string, std::string>>; // name, contents

/// A ustar archive of regular files (mode 0644, owner 0, mtime 0): the canonical form.
std::string write_tar(const ArchiveEntries &entries);
/// Parses a ustar archive written by write_tar; throws std::runtime_error on anything else.
ArchiveEntries read_tar(const std::string &bytes);

/// Writes `<out_dir>/certification-<plugin>-<profile>.tar`; returns its path.
std::string create_package(const std::string &out_dir, const json &results, const json &manifest);

struct VerifyResult {
  bool intact = false;
  std::vector<std::string> problems;
  json verdict;
  json package;  // package.json
  json results;  // results.json
  json manifest; // suite.json
};
VerifyResult verify_package(const std::string &path);

} // namespace tl::conform
