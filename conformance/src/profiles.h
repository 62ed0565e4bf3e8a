// Profiles: which tests a certification covers and what a device may leave unsupported. The
// table is data/profiles.json (pinned with the rest of data/): a test of the profile may be
// not-supported only when it needs an item the profile names as optional, with its reason.
// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "conform.h"

#include <map>
#include <string>
#include <vector>

namespace tl::conform {

struct Profile {
  std::string name;
  std::string tests; // "core" (the core tests) or "full" (every test)
  std::string about;
  std::map<std::string, std::string> optional; // item (a dtype name) -> why it may be missing
};

/// The profile `name` of `<data_dir>/profiles.json`; throws std::runtime_error naming the file
/// and the profiles it has when there is no such profile or the file is malformed.
Profile load_profile(const std::string &data_dir, const std::string &name);
std::vector<std::string> profile_names(const std::string &data_dir);

/// Whether `t` belongs to the profile's test set.
bool in_profile(const Profile &p, const TestDef &t);

/// The items a test needs: the dtypes of its params "in" / "out", plus its params "needs".
std::vector<std::string> needs_of(const TestDef &t);

/// Why `t` may be not-supported under `p` ("" when it must run): the reasons of its optional needs.
std::string optional_because(const Profile &p, const TestDef &t);

} // namespace tl::conform
