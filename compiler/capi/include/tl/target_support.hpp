// C++ side of a compiler-target plugin (tl/target.h): implement tl::sdk::CompilerTarget, then
// TL_DEFINE_COMPILER_TARGET(name, summary, YourTarget) defines the exported entry point, which
// parses and verifies the module, parses the options and turns exceptions into errors.
// Needs the SDK's IR library (TL::ir) and nlohmann/json.
// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "tl/ir/parser.h"
#include "tl/ir/verifier.h"
#include "tl/target.h"

#include <nlohmann/json.hpp>

#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace tl::sdk {

/// Target options: the JSON object of strings the host passed (`tlc compile --target-option
/// key=value`).
using TargetOptions = std::map<std::string, std::string>;

class CompilerTarget {
public:
  virtual ~CompilerTarget() = default;
  /// Lowers a verified module to the code blob of every kernel (kernel order kept). Returns ""
  /// or an error "file:line:col: error: <target>: ..." naming what cannot be lowered; may throw
  /// std::exception (reported as an error).
  virtual std::string compile(const ir::Module &module, const TargetOptions &options,
                              std::vector<uint8_t> &code) = 0;
};

namespace detail {

inline char *copy_message(const std::string &s) {
  char *m = static_cast<char *>(std::malloc(s.size() + 1));
  if (m)
    std::memcpy(m, s.c_str(), s.size() + 1);
  return m;
}

template <class Target>
int32_t compile(const char *tlir, size_t tlir_size, const char *file, const char *options_json,
                uint8_t **code, size_t *code_size, char **error) {
  if (!code || !code_size || !error)
    return 1;
  *code = nullptr;
  *code_size = 0;
  *error = nullptr;
  try {
    if (!tlir)
      throw std::invalid_argument("no module text");
    ir::Diagnostics diags;
    auto module = ir::parse(std::string_view(tlir, tlir_size), file ? file : "<module>", diags);
    if (!module || diags.has_errors() || !ir::verify(*module, diags))
      throw std::invalid_argument(diags.str());
    TargetOptions options;
    const nlohmann::json j = nlohmann::json::parse(options_json ? options_json : "{}");
    if (!j.is_object())
      throw std::invalid_argument("target options must be a JSON object");
    for (auto &[key, value] : j.items()) {
      if (!value.is_string())
        throw std::invalid_argument("target option '" + key + "' must be a string");
      options[key] = value.template get<std::string>();
    }
    std::vector<uint8_t> blob;
    Target target;
    if (std::string e = target.compile(*module, options, blob); !e.empty())
      throw std::invalid_argument(e);
    *code = static_cast<uint8_t *>(std::malloc(blob.empty() ? 1 : blob.size()));
    if (!*code)
      throw std::bad_alloc();
    std::memcpy(*code, blob.data(), blob.size());
    *code_size = blob.size();
    return 0;
  } catch (const std::exception &e) {
    *error = copy_message(e.what());
    return 1;
  } catch (...) {
    *error = copy_message("unknown error");
    return 1;
  }
}

} // namespace detail
} // namespace tl::sdk

/// Defines the plugin's exported entry point for target `name` implemented by class `Target`.
#define TL_DEFINE_COMPILER_TARGET(name, summary, Target)                                           \
  extern "C" __attribute__((visibility("default"))) const tl_target_plugin *                       \
  tl_target_plugin_entry(uint32_t) {                                                               \
    static const tl_target_plugin table = {sizeof(tl_target_plugin),                               \
                                           TL_TARGET_ABI_MAJOR,                                    \
                                           TL_TARGET_ABI_MINOR,                                    \
                                           name,                                                   \
                                           summary,                                                \
                                           &tl::sdk::detail::compile<Target>,                      \
                                           &std::free};                                            \
    return &table;                                                                                 \
  }
