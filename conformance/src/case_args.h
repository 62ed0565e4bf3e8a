// The arguments of a corpus or library case (`NAME kernel=K grid=X,Y,Z ARG=SPEC ...`): parsing
// its items, and host tensors for the device, the interpreter and its fp64 mode.
// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "device_run.h"

#include "tl/interpreter/host_tensor.h"
#include "tl/ir/ir.h"

#include <array>
#include <cstdint>
#include <map>
#include <random>
#include <string>
#include <vector>

namespace tl::conform {

/// "AxBxC" as its dimensions.
std::vector<int64_t> parse_shape(const std::string &s);

/// A case's NAME=VALUE items (kernel, grid, and one per argument) after its leading name.
std::map<std::string, std::string> case_values(const std::string &line);

/// grid=X[,Y[,Z]], 1 where not given.
std::array<uint64_t, 3> case_grid(const std::string &spec);

/// A tensor argument from its SPEC: AxB (random: floats uniform in [-1, 1), integers in
/// [-100, 100]), zeros:AxB, iota:AxB, int:LO:HI:AxB (integers in [LO, HI)) or nan:AxB (an
/// output, poisoned: NaN for floats, -123 for integers, so that an element never written
/// differs from the reference).
interp::HostTensor case_tensor(ir::ScalarKind elem, const std::string &spec, std::mt19937_64 &rng);

/// The same arguments three times: for the device, the interpreter and its fp64 mode (tensors
/// copied; floats in f64 storage for fp64 mode).
struct CaseArgs {
  std::vector<interp::HostTensor> dev_t, ref_t, ref64_t;
  std::vector<KernelArg> dev_args, ref_args, ref64_args;
};

/// Fills `a` with the kernel's arguments from the case's values (`kv`: NAME=SPEC, a number for
/// a scalar); the error naming the argument, or "".
std::string make_case_args(const ir::Kernel &kernel, std::map<std::string, std::string> &kv,
                           uint64_t seed, CaseArgs &a);

} // namespace tl::conform
