// Profiles (see profiles.h).
// SPDX-License-Identifier: Apache-2.0
#include "profiles.h"

#include <stdexcept>

namespace tl::conform {
namespace {

json load_table(const std::string &data_dir) {
  const std::string path = data_dir + "/profiles.json";
  json table = read_json(path);
  if (!table.contains("profiles") || !table["profiles"].is_object())
    throw std::runtime_error(path + ": no \"profiles\" object");
  return table;
}

} // namespace

std::vector<std::string> profile_names(const std::string &data_dir) {
  std::vector<std::string> names;
  for (const auto &[name, _] : load_table(data_dir)["profiles"].items())
    names.push_back(name);
  return names;
}

Profile load_profile(const std::string &data_dir, const std::string &name) {
  const json table = load_table(data_dir);
  const json &all = table["profiles"];
  if (!all.contains(name)) {
    std::string known;
    for (const auto &[n, _] : all.items())
      known += (known.empty() ? "" : ", ") + n;
    throw std::runtime_error("no profile '" + name + "' in " + data_dir +
                             "/profiles.json (profiles: " + known + ")");
  }
  const json &j = all[name];
  Profile p{name, j.value("tests", ""), j.value("about", ""), {}};
  if (p.tests != "core" && p.tests != "full")
    throw std::runtime_error(data_dir + "/profiles.json: profile '" + name + "' has tests \"" +
                             p.tests + "\" (core or full)");
  const json optional = j.value("optional", json::object());
  for (const auto &[item, why] : optional.items())
    p.optional[item] = why.get<std::string>();
  return p;
}

bool in_profile(const Profile &p, const TestDef &t) {
  return p.tests == "full" || t.profile == "core";
}

std::vector<std::string> needs_of(const TestDef &t) {
  std::vector<std::string> needs;
  for (const char *k : {"in", "out"})
    if (t.params.contains(k) && t.params[k].is_string())
      needs.push_back(t.params[k]);
  for (const json &n : t.params.value("needs", json::array()))
    needs.push_back(n);
  return needs;
}

std::string optional_because(const Profile &p, const TestDef &t) {
  std::string why;
  for (const std::string &n : needs_of(t))
    if (auto it = p.optional.find(n); it != p.optional.end())
      if (why.find(n + ": ") == std::string::npos)
        why += (why.empty() ? "" : "; ") + n + ": " + it->second;
  return why;
}

} // namespace tl::conform
