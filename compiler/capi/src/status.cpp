// The C API's status objects, memory and version (tl/compiler.h, "status" section).
// SPDX-License-Identifier: Apache-2.0
#include "handles.h"

#include <cstdlib>
#include <cstring>

using namespace tl;

char *capi::copy_string(const std::string &s) {
  char *p = static_cast<char *>(std::malloc(s.size() + 1));
  if (p)
    std::memcpy(p, s.c_str(), s.size() + 1);
  return p;
}

extern "C" {

const char *tl_cstatus_message(tl_cstatus status) { return status ? status->message.c_str() : ""; }
void tl_cstatus_free(tl_cstatus status) { delete status; }
void tl_compiler_free(void *ptr) { std::free(ptr); }
uint32_t tl_compiler_api_version(void) { return TL_COMPILER_API_VERSION; }

} // extern "C"
