// The C API's modules: create, parse, verify, print, and compile for a target.
// SPDX-License-Identifier: Apache-2.0
#include "handles.h"

#include "tl/compiler/pipeline.h"
#include "tl/ir/parser.h"
#include "tl/ir/printer.h"
#include "tl/ir/verifier.h"
#include "tl/support/blob_cache.h"
#include "tl_compiler_source_hash.h"

#include <nlohmann/json.hpp>

#include <cstdlib>
#include <cstring>

using namespace tl;
using capi::copy_string;
using capi::guard;
using capi::make_status;

extern "C" const char *tl_compiler_version(void) { return TL_COMPILER_SOURCE_HASH; }

namespace {

/// build_executable through the compile cache (kind "executables"): keyed by the module as given,
/// the target, the producer, the compiler's sources and what else decides the target's blob
/// (its identity: the host CPU, the chip config's content). A hit still optimizes the module in
/// place, as the API promises. A cached blob that does not load back (a damaged or foreign
/// file in the cache directory) is ignored and replaced, never returned.
std::vector<uint8_t> compile_cached(ir::Module &module, const std::string &target,
                                    const compile::TargetOptions &options,
                                    const std::string &producer, std::string *error) {
  const compile::RegisteredTarget *t = compile::find_target(target);
  if (!t) {
    *error = compile::unknown_target(target);
    return {};
  }
  const std::string key =
      support::cache_key({ir::print(module), target, producer, TL_COMPILER_SOURCE_HASH,
                          t->identity(options), nlohmann::json(options).dump()});
  std::vector<uint8_t> cached = support::cache_get("executables", key);
  if (!cached.empty()) {
    const exe::LoadResult check = exe::deserialize(cached.data(), cached.size());
    if (!check.ok || check.exe.target != target)
      cached.clear();
  }
  if (std::vector<uint8_t> blob = std::move(cached); !blob.empty()) {
    if (std::string e = compile::optimize(module, target, options); !e.empty()) {
      *error = e;
      return {};
    }
    return blob;
  }
  std::vector<uint8_t> blob = compile::build_executable(module, target, producer, error, options);
  if (!blob.empty())
    support::cache_put("executables", key, blob, /*replace=*/true);
  return blob;
}

} // namespace

extern "C" {

tl_cstatus tl_module_create(tl_module *out_module) {
  if (!out_module)
    return make_status("tl_module_create: out_module is null");
  *out_module = new tl_module_s;
  return nullptr;
}

void tl_module_destroy(tl_module module) { delete module; }

tl_cstatus tl_module_parse(const char *text, const char *filename, tl_module *out_module) {
  if (!out_module || !text)
    return make_status("tl_module_parse: null argument");
  *out_module = nullptr;
  return guard("tl_module_parse", [&]() -> tl_cstatus {
    ir::Diagnostics diags;
    auto m = ir::parse(text, filename ? filename : "<text>", diags);
    if (!m || !ir::verify(*m, diags))
      return make_status(diags.str());
    auto *out = new tl_module_s;
    out->module = std::move(m);
    *out_module = out;
    return nullptr;
  });
}

tl_cstatus tl_module_verify(tl_module module) {
  if (!module)
    return make_status("tl_module_verify: module is null");
  return guard("tl_module_verify", [&]() -> tl_cstatus {
    ir::Diagnostics diags;
    if (!ir::verify(*module->module, diags))
      return make_status(diags.str());
    return nullptr;
  });
}

tl_cstatus tl_module_print(tl_module module, char **out_text) {
  if (!module || !out_text)
    return make_status("tl_module_print: null argument");
  *out_text = nullptr;
  return guard("tl_module_print", [&]() -> tl_cstatus {
    *out_text = copy_string(ir::print(*module->module));
    return *out_text ? nullptr : make_status("tl_module_print: out of memory");
  });
}

tl_cstatus tl_module_compile(tl_module module, const char *target, const char *producer,
                             void **out_data, size_t *out_size) {
  return tl_module_compile_with_options(module, target, nullptr, producer, out_data, out_size);
}

tl_cstatus tl_module_compile_with_options(tl_module module, const char *target, const char *options,
                                          const char *producer, void **out_data, size_t *out_size) {
  if (!module || !target || !out_data || !out_size)
    return make_status("tl_module_compile: null argument");
  *out_data = nullptr;
  *out_size = 0;
  return guard("tl_module_compile", [&]() -> tl_cstatus {
    compile::TargetOptions parsed;
    if (options && *options) {
      const nlohmann::json j = nlohmann::json::parse(options, nullptr, /*allow_exceptions=*/false);
      if (!j.is_object())
        return make_status(std::string("tl_module_compile: target options for '") + target +
                           "' are not a JSON object of strings: " + options);
      for (const auto &[key, value] : j.items()) {
        if (!value.is_string())
          return make_status(std::string("tl_module_compile: target option '") + key +
                             "' is not a string: " + value.dump());
        parsed[key] = value.get<std::string>();
      }
    }
    if (tl_cstatus s = tl_module_verify(module))
      return s;
    std::string error;
    std::vector<uint8_t> blob = compile_cached(*module->module, target, parsed,
                                               producer ? producer : "tl compiler C API", &error);
    if (blob.empty())
      return make_status(error.empty() ? "compilation failed" : error);
    void *p = std::malloc(blob.size());
    if (!p)
      return make_status("tl_module_compile: out of memory");
    std::memcpy(p, blob.data(), blob.size());
    *out_data = p;
    *out_size = blob.size();
    return nullptr;
  });
}

} // extern "C"
