// Compiler-target plugins that are broken on purpose, one per BROKEN_KIND, for
// target_plugins_test.cpp: the compiler must refuse each with its reason, never crash.
// SPDX-License-Identifier: Apache-2.0
#include "tl/target.h"

#include <cstdlib>
#include <cstring>
#include <string>

namespace {

char *message(const char *text) {
  char *m = static_cast<char *>(std::malloc(std::strlen(text) + 1));
  std::strcpy(m, text);
  return m;
}

// "echo": copies the module text into the blob, unless its options ask for an error at line 3
// of the text it was given (the host maps that back to the source).
int32_t echo_compile(const char *tlir, size_t size, const char *file, const char *options,
                     uint8_t **code, size_t *code_size, char **error) {
  if (std::strstr(options, "fail")) {
    std::string e = std::string(file) + ":3:3: error: broken: cannot lower this op";
    *error = message(e.c_str());
    return 1;
  }
  if (std::strstr(options, "silent"))
    return 1; // fails without a message
  *code = static_cast<uint8_t *>(std::malloc(size));
  std::memcpy(*code, tlir, size);
  *code_size = size;
  return 0;
}

} // namespace

#if BROKEN_KIND != 0 // kind 0 exports no entry point at all
extern "C" __attribute__((visibility("default"))) const tl_target_plugin *
tl_target_plugin_entry(uint32_t) {
#if BROKEN_KIND == 1 // another ABI major
  static const tl_target_plugin t = {
      sizeof(tl_target_plugin), 99, 0, "future", "", echo_compile, std::free};
#elif BROKEN_KIND == 2 // no compile function
  static const tl_target_plugin t = {
      sizeof(tl_target_plugin), TL_TARGET_ABI_MAJOR, 0, "hollow", "", nullptr, std::free};
#elif BROKEN_KIND == 3 // no table
  return nullptr;
#else                  // 4: works: "echo"
  static const tl_target_plugin t = {
      sizeof(tl_target_plugin), TL_TARGET_ABI_MAJOR, 0,        "echo",
      "echoes the module",      echo_compile,        std::free};
#endif
#if BROKEN_KIND != 3
  return &t;
#endif
}
#endif
