// The C API's modules: create, parse, verify, print, and compile for a target.
// SPDX-License-Identifier: Apache-2.0
#include "handles.h"

#include "tl/compiler/pipeline.h"
#include "tl/ir/parser.h"
#include "tl/ir/printer.h"
#include "tl/ir/verifier.h"

#include <cstdlib>
#include <cstring>

using namespace tl;
using capi::copy_string;
using capi::make_status;

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
  try {
    ir::Diagnostics diags;
    auto m = ir::parse(text, filename ? filename : "<text>", diags);
    if (!m || !ir::verify(*m, diags))
      return make_status(diags.str());
    auto *out = new tl_module_s;
    out->module = std::move(m);
    *out_module = out;
    return nullptr;
  } catch (const std::exception &e) {
    return make_status(std::string("tl_module_parse: ") + e.what());
  }
}

tl_cstatus tl_module_verify(tl_module module) {
  if (!module)
    return make_status("tl_module_verify: module is null");
  try {
    ir::Diagnostics diags;
    if (!ir::verify(*module->module, diags))
      return make_status(diags.str());
    return nullptr;
  } catch (const std::exception &e) {
    return make_status(std::string("tl_module_verify: ") + e.what());
  }
}

tl_cstatus tl_module_print(tl_module module, char **out_text) {
  if (!module || !out_text)
    return make_status("tl_module_print: null argument");
  *out_text = nullptr;
  try {
    *out_text = copy_string(ir::print(*module->module));
    return *out_text ? nullptr : make_status("tl_module_print: out of memory");
  } catch (const std::exception &e) {
    return make_status(std::string("tl_module_print: ") + e.what());
  }
}

tl_cstatus tl_module_compile(tl_module module, const char *target, const char *producer,
                             void **out_data, size_t *out_size) {
  if (!module || !target || !out_data || !out_size)
    return make_status("tl_module_compile: null argument");
  *out_data = nullptr;
  *out_size = 0;
  try {
    if (tl_cstatus s = tl_module_verify(module))
      return s;
    std::string error;
    std::vector<uint8_t> blob = compile::build_executable(
        *module->module, target, producer ? producer : "tl compiler C API", &error);
    if (blob.empty())
      return make_status(error.empty() ? "compilation failed" : error);
    void *p = std::malloc(blob.size());
    if (!p)
      return make_status("tl_module_compile: out of memory");
    std::memcpy(p, blob.data(), blob.size());
    *out_data = p;
    *out_size = blob.size();
    return nullptr;
  } catch (const std::exception &e) {
    return make_status(std::string("tl_module_compile: ") + e.what());
  }
}

} // extern "C"
