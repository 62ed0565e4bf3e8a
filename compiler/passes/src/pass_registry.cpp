// The table of passes: one entry (name, summary, function) per pass, the only list of them.
// SPDX-License-Identifier: Apache-2.0
#include "tl/passes/pass_registry.h"

#include "tl/passes/canonicalize.h"
#include "tl/passes/constfold.h"
#include "tl/passes/cse.h"
#include "tl/passes/dce.h"

namespace tl::passes {
namespace {

const PassInfo kPasses[] = {
    {"canonicalize",
     "apply named local simplifications (identities, constant conditions) to a fixpoint",
     run_canonicalize},
    {"constfold", "evaluate elementwise ops on scalar constants with the interpreter's semantics",
     run_constfold},
    {"cse", "merge identical pure ops and memory reads not separated by a write", run_cse},
    {"dce", "remove unused side-effect-free ops, loops and conditionals", run_dce},
};

} // namespace

std::span<const PassInfo> all_passes() { return kPasses; }

const PassInfo *find_pass(std::string_view name) {
  for (const PassInfo &p : kPasses)
    if (p.name == name)
      return &p;
  return nullptr;
}

std::string known_pass_names() {
  std::string s;
  for (const PassInfo &p : kPasses)
    s += (s.empty() ? "" : ", ") + std::string(p.name);
  return s;
}

} // namespace tl::passes
