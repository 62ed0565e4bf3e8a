// The C API's targets: the list (tl_compiler_targets) and the choice for a device.
// SPDX-License-Identifier: Apache-2.0
#include "handles.h"

#include "tl/compiler/targets.h"

#include <cstring>
#include <sstream>

using tl::capi::guard;
using tl::capi::make_status;

extern "C" const char *tl_compiler_targets(void) {
  static const std::string targets = tl::compile::known_targets();
  return targets.c_str();
}

extern "C" tl_cstatus tl_compiler_target_for_device(const char *preferred, const char *targets,
                                                    char *out_target, size_t out_size) {
  if (!preferred || !targets || !out_target || out_size == 0)
    return make_status("tl_compiler_target_for_device: null argument");
  out_target[0] = '\0';
  return guard("tl_compiler_target_for_device", [&]() -> tl_cstatus {
    std::string error;
    const std::string chosen = tl::compile::target_for_device(preferred, targets, &error);
    if (chosen.empty())
      return make_status(error);
    if (chosen.size() + 1 > out_size)
      return make_status("tl_compiler_target_for_device: out_target holds " +
                         std::to_string(out_size) + " bytes, '" + chosen + "' needs " +
                         std::to_string(chosen.size() + 1));
    std::memcpy(out_target, chosen.c_str(), chosen.size() + 1);
    return nullptr;
  });
}
