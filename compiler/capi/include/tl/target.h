/* TL compiler-target plugin ABI: how a vendor adds a compiler target (Tile IR -> the code blob its
 * device plugin runs) without changing TL. Version 1.0.
 * SPDX-License-Identifier: Apache-2.0
 *
 * A target plugin is a shared library named libtl_target_<name>.so that exports one symbol,
 * tl_target_plugin_entry. TL's compiler (tlc, libtl_compiler.so, the Python front end) finds it
 * on TL_TARGET_PATH (files or directories, ':'-separated), beside libtl_compiler.so, or in the
 * build's library directory, and then compiles with `--target <name>` like a built-in target.
 *
 * The module crosses the boundary as .tlir text (the versioned, exactly round-tripping Tile IR
 * format), already verified and optimized by TL's pass pipeline; the plugin parses it with the
 * SDK's IR library (tl/target_support.hpp does this and hands a C++ target an ir::Module). No C++
 * object crosses the boundary, so host and plugin may be built by different compilers.
 *
 * Errors name where: "<file>:<line>:<col>: error: <target>: <what>" with the file name the host
 * passed; the host maps lines of its text back to the user's source locations.
 */
#ifndef TL_TARGET_H_
#define TL_TARGET_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define TL_TARGET_ABI_MAJOR 1
#define TL_TARGET_ABI_MINOR 0

typedef struct tl_target_plugin {
  size_t struct_size; /* sizeof(tl_target_plugin) of the plugin's build */
  uint32_t abi_major; /* TL_TARGET_ABI_MAJOR the plugin was built with */
  uint32_t abi_minor;
  const char *name;    /* the target: recorded in executables, accepted by devices ("tnpu") */
  const char *summary; /* one line for `tlc compile --help` */
  /* Compiles `tlir` (tlir_size bytes of .tlir text, named `file` in diagnostics) with
   * `options_json`, a JSON object of strings ("{}" when none; e.g. {"chip": "edge.json"}), into
   * a code blob. Returns 0 and sets *code / *code_size (memory from `allocate`), or returns
   * nonzero and sets *error (a NUL-terminated message from `allocate`). Never throws. */
  int32_t (*compile)(const char *tlir, size_t tlir_size, const char *file, const char *options_json,
                     uint8_t **code, size_t *code_size, char **error);
  /* Frees what compile returned. */
  void (*release)(void *memory);
} tl_target_plugin;

/* The exported entry point: the plugin's table (static storage), whatever major the host asks
 * for; the host refuses a table of another major, naming both versions. */
typedef const tl_target_plugin *(*tl_target_plugin_entry_fn)(uint32_t host_abi_major);
#define TL_TARGET_PLUGIN_ENTRY "tl_target_plugin_entry"

#ifdef __cplusplus
}
#endif

#endif /* TL_TARGET_H_ */
