// The pass manager: parses a pipeline string and runs its passes over every kernel of a module.
// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "tl/ir/ir.h"
#include "tl/passes/pass_registry.h"

#include <iosfwd>
#include <string>
#include <string_view>
#include <vector>

namespace tl::passes {

/// The result of a pass-manager call; `message` says what went wrong when `ok` is false.
struct Status {
  bool ok = true;
  std::string message;

  static Status success() { return {}; }
  static Status error(std::string message) { return {false, std::move(message)}; }
  explicit operator bool() const { return ok; }
};

struct PassManagerOptions {
  /// After each pass, write `// -----// IR after <pass> //----- //` and the module to
  /// `print_stream` (std::cerr when null).
  bool print_after_all = false;
  std::ostream *print_stream = nullptr;
#ifdef NDEBUG
  bool verify_each = false;
#else
  /// Run the verifier after each pass and report a failure naming the pass (on in debug builds).
  bool verify_each = true;
#endif
  /// Log each named rewrite (`rewrite <name> at file:line:col`) here while the passes run;
  /// when null, the thread's current trace (TL_DEBUG_REWRITES=1: std::cerr) is used.
  std::ostream *rewrite_trace = nullptr;
};

/// The passes every target runs first, as a pipeline string.
std::string default_pipeline();

class PassManager {
public:
  explicit PassManager(PassManagerOptions options = {}) : options_(options) {}

  /// Appends the passes named in `pipeline` ("canonicalize,cse,dce"; blanks around names are
  /// ignored; an empty string adds nothing). On an unknown or empty name, returns an error that
  /// lists the known passes and adds none of them.
  Status add_pipeline(std::string_view pipeline);
  /// Appends one pass (a registered one, or any other, e.g. in tests).
  void add_pass(const PassInfo &pass) { passes_.push_back(pass); }
  const std::vector<PassInfo> &passes() const { return passes_; }

  /// Runs each pass over every kernel of `module`, in order. Stops at the first failure: the
  /// verifier rejecting a pass's output, or a pass failing to build an op.
  Status run(ir::Module &module) const;

private:
  Status run_pass(const PassInfo &pass, ir::Module &module) const;

  PassManagerOptions options_;
  std::vector<PassInfo> passes_;
};

} // namespace tl::passes
