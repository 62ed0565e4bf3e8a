// The suite table, statuses, seeds, file and hashing helpers.
// SPDX-License-Identifier: Apache-2.0
#include "conform.h"

#include <openssl/evp.h>

#include <fstream>
#include <sstream>
#include <stdexcept>

namespace tl::conform {

Suite api_suite();
Suite precision_suite();
Suite bandwidth_suite();
Suite performance_suite();
Suite compiler_suite();
Suite ops_suite();

const std::vector<Suite> &suites() {
  static const std::vector<Suite> all = {api_suite(), precision_suite(), compiler_suite(),
                                         ops_suite(), bandwidth_suite(), performance_suite()};
  return all;
}

const Suite *find_suite(const std::string &name) {
  for (const Suite &s : suites())
    if (name == s.name)
      return &s;
  return nullptr;
}

const char *status_name(Status s) {
  switch (s) {
  case Status::Pass:
    return "pass";
  case Status::Fail:
    return "fail";
  case Status::NotSupported:
    return "not-supported";
  case Status::Crash:
    return "crash";
  case Status::Timeout:
    return "timeout";
  }
  return "?";
}

std::optional<Status> parse_status(const std::string &s) {
  for (Status st :
       {Status::Pass, Status::Fail, Status::NotSupported, Status::Crash, Status::Timeout})
    if (s == status_name(st))
      return st;
  return std::nullopt;
}

uint64_t test_seed(uint64_t run_seed, const std::string &id) {
  uint64_t h = 1469598103934665603ull; // FNV-1a of the id, then splitmix64 with the run seed
  for (unsigned char c : id)
    h = (h ^ c) * 1099511628211ull;
  uint64_t z = h + run_seed * 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

std::string read_file(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    throw std::runtime_error("cannot read " + path);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

json read_json(const std::string &path) {
  try {
    return json::parse(read_file(path));
  } catch (const json::exception &e) {
    throw std::runtime_error(path + ": " + e.what());
  }
}

std::string sha256_hex(const std::string &bytes) {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_Digest(bytes.data(), bytes.size(), md, &len, EVP_sha256(), nullptr);
  static const char *hex = "0123456789abcdef";
  std::string out;
  for (unsigned i = 0; i < len; ++i) {
    out += hex[md[i] >> 4];
    out += hex[md[i] & 15];
  }
  return out;
}

std::string sha256_file(const std::string &path) { return sha256_hex(read_file(path)); }

} // namespace tl::conform
