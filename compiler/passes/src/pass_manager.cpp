// The pass manager: parses a pipeline string and runs its passes over every kernel of a module.
// SPDX-License-Identifier: Apache-2.0
#include "tl/passes/pass_manager.h"

#include "tl/ir/printer.h"
#include "tl/ir/verifier.h"
#include "tl/passes/rewrite.h"

#include <exception>
#include <iostream>

namespace tl::passes {
namespace {

std::string_view trim(std::string_view s) {
  const char *blanks = " \t\n\r";
  size_t b = s.find_first_not_of(blanks);
  if (b == std::string_view::npos)
    return {};
  return s.substr(b, s.find_last_not_of(blanks) - b + 1);
}

/// Installs a rewrite trace stream for the lifetime of the object (none: keeps the current one).
class ScopedTrace {
public:
  explicit ScopedTrace(std::ostream *os)
      : active_(os), prev_(os ? set_rewrite_trace(os) : nullptr) {}
  ~ScopedTrace() {
    if (active_)
      set_rewrite_trace(prev_);
  }

private:
  bool active_;
  std::ostream *prev_;
};

} // namespace

std::string default_pipeline() { return "canonicalize,constfold,cse,dce"; }

Status PassManager::add_pipeline(std::string_view pipeline) {
  if (trim(pipeline).empty())
    return Status::success();
  std::vector<PassInfo> found;
  for (size_t start = 0; start <= pipeline.size();) {
    size_t comma = pipeline.find(',', start);
    if (comma == std::string_view::npos)
      comma = pipeline.size();
    std::string_view name = trim(pipeline.substr(start, comma - start));
    const PassInfo *pass = find_pass(name);
    if (!pass)
      return Status::error((name.empty() ? std::string("empty pass name")
                                         : "unknown pass '" + std::string(name) + "'") +
                           " in pipeline '" + std::string(pipeline) +
                           "'; known passes: " + known_pass_names());
    found.push_back(*pass);
    start = comma + 1;
  }
  passes_.insert(passes_.end(), found.begin(), found.end());
  return Status::success();
}

Status PassManager::run_pass(const PassInfo &pass, ir::Module &module) const {
  try {
    for (auto &kernel : module.kernels())
      pass.run(*kernel);
  } catch (const std::exception &e) { // a builder rule broken by the pass: our bug, reported
    return Status::error("pass '" + std::string(pass.name) + "' failed: " + e.what());
  }
  if (options_.verify_each) {
    ir::Diagnostics diags;
    if (!ir::verify(module, diags))
      return Status::error("pass '" + std::string(pass.name) + "' produced invalid IR:\n" +
                           diags.str());
  }
  if (options_.print_after_all) {
    std::ostream &os = options_.print_stream ? *options_.print_stream : std::cerr;
    os << "// -----// IR after " << pass.name << " //----- //\n" << ir::print(module);
  }
  return Status::success();
}

Status PassManager::run(ir::Module &module) const {
  ScopedTrace trace(options_.rewrite_trace);
  for (const PassInfo &pass : passes_)
    if (Status s = run_pass(pass, module); !s)
      return s;
  return Status::success();
}

} // namespace tl::passes
