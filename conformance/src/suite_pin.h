// The pinned suite: what a standard run uses is what this kit was built with, and what a run
// changes is recorded; a run that changes anything the verdict rests on is NON-STANDARD and can
// never be certified.
// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "conform.h"

#include <string>
#include <vector>

namespace tl::conform {

/// SHA-256 over every file of `dirs` (in order; within a dir sorted by relative path) as
/// "<relative path>\n<SHA-256 of the file>\n": cmake/hash_header.cmake (MODE=tree) computes the
/// same at build time. Empty when a dir cannot be read.
std::string tree_sha256(const std::vector<std::string> &dirs);

/// The hash of the kit's own data and corpus (tolerance table, expected failures, baselines,
/// compiler corpus), built in.
const char *kit_suite_files_sha256();

/// The record of what this run used: its options, the `TL_*` environment, the hash of the data
/// and corpus it read and of the CTS it runs, and `non_standard`: why the run is not the kit's
/// standard one (empty when it is).
json run_provenance(const Paths &paths);

} // namespace tl::conform
