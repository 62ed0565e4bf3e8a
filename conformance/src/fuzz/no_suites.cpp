// The readers' fuzz targets link conform.cpp for its file and hash helpers; its suite table
// names the six suites, which live with the runner (HAL, compiler) that these targets leave
// out. The readers never ask for a suite: reaching one of these is a bug in the fuzz build.
// SPDX-License-Identifier: Apache-2.0
#include "conform.h"

#include <stdexcept>

namespace tl::conform {
namespace {
[[noreturn]] Suite no_suite(const char *name) {
  throw std::logic_error(std::string("the conformance readers' fuzz build has no ") + name +
                         " suite");
}
} // namespace

Suite api_suite() { no_suite("api"); }
Suite precision_suite() { no_suite("precision"); }
Suite bandwidth_suite() { no_suite("bandwidth"); }
Suite performance_suite() { no_suite("performance"); }
Suite compiler_suite() { no_suite("compiler"); }
Suite ops_suite() { no_suite("ops"); }

} // namespace tl::conform
