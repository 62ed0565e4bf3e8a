// Helpers shared by the C API entry points: exception guards, handle resolution, checks.
// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "runtime.h"

#include <new>

namespace tl::hal {

/// Runs an entry point's body; no exception crosses the C ABI. Entry points pass their name as
/// kFn = __func__ taken outside the lambda (inside it, __func__ is "operator()").
template <class F> tl_status guard(const char *fn, F &&body) {
  try {
    return body();
  } catch (const std::bad_alloc &) {
    return make_status(TL_STATUS_RESOURCE_EXHAUSTED, std::string(fn) + ": out of host memory");
  } catch (const std::exception &e) {
    return make_status(TL_STATUS_INTERNAL, std::string(fn) + ": internal error: " + e.what());
  }
}

inline uint64_t handle_value(const void *h) { return reinterpret_cast<uint64_t>(h); }
template <class H> H to_handle(uint64_t v) { return reinterpret_cast<H>(v); }

/// Resolves `handle` to its object, or an INVALID_ARGUMENT status naming the function and
/// parameter (null, foreign, wrong type, released).
template <class T>
tl_status resolve(const char *fn, const char *param, const void *handle, HandleType type, T **out) {
  std::string why;
  void *o = HandleTable::global().lookup(handle_value(handle), type, &why);
  if (!o)
    return make_status(TL_STATUS_INVALID_ARGUMENT, std::string(fn) + ": " + param + ": " + why);
  *out = static_cast<T *>(o);
  return nullptr;
}

inline tl_status invalid(const char *fn, const std::string &msg,
                         tl_status_code code = TL_STATUS_INVALID_ARGUMENT) {
  return make_status(code, std::string(fn) + ": " + msg);
}

/// A caller struct must be non-null and at least as large as its first version.
inline tl_status check_struct(const char *fn, const char *param, const void *p, size_t min_size) {
  if (!p)
    return invalid(fn, std::string(param) + " is null");
  const size_t size = *static_cast<const size_t *>(p);
  if (size < min_size)
    return invalid(fn, std::string(param) + "->struct_size is " + std::to_string(size) +
                           ", expected at least " + std::to_string(min_size));
  return nullptr;
}

/// Prefixes a plugin's error with the entry point, keeping its code.
inline tl_status from_plugin(const char *fn, tl_status s) {
  if (!s)
    return nullptr;
  tl_status out =
      make_status(tl_status_get_code(s), std::string(fn) + ": " + tl_status_get_message(s));
  tl_status_free(s);
  return out;
}

#define TL_RETURN_IF_ERROR(expr)                                                                   \
  do {                                                                                             \
    if (tl_status s_ = (expr))                                                                     \
      return s_;                                                                                   \
  } while (0)

} // namespace tl::hal
