// Status objects and element-type helpers of the C API.
// SPDX-License-Identifier: Apache-2.0
#include "runtime.h"

#include <cstring>
#include <new>

struct tl_status_s {
  tl_status_code code;
  std::string message;
};

extern "C" {

tl_status tl_status_make(tl_status_code code, const char *message) {
  if (code == TL_STATUS_OK)
    return nullptr;
  try {
    return new tl_status_s{code, message ? message : ""};
  } catch (const std::bad_alloc &) {
    // A static status for out-of-memory: tl_status_free recognises and keeps it.
    static tl_status_s oom{TL_STATUS_RESOURCE_EXHAUSTED, "out of host memory"};
    return &oom;
  }
}

tl_status_code tl_status_get_code(tl_status status) { return status ? status->code : TL_STATUS_OK; }

const char *tl_status_get_message(tl_status status) {
  return status ? status->message.c_str() : "";
}

void tl_status_free(tl_status status) {
  if (status &&
      !(status->code == TL_STATUS_RESOURCE_EXHAUSTED && status->message == "out of host memory"))
    delete status;
}

const char *tl_status_code_name(tl_status_code code) {
  switch (code) {
  case TL_STATUS_OK:
    return "OK";
  case TL_STATUS_INVALID_ARGUMENT:
    return "INVALID_ARGUMENT";
  case TL_STATUS_NOT_FOUND:
    return "NOT_FOUND";
  case TL_STATUS_OUT_OF_RANGE:
    return "OUT_OF_RANGE";
  case TL_STATUS_FAILED_PRECONDITION:
    return "FAILED_PRECONDITION";
  case TL_STATUS_UNAVAILABLE:
    return "UNAVAILABLE";
  case TL_STATUS_UNIMPLEMENTED:
    return "UNIMPLEMENTED";
  case TL_STATUS_RESOURCE_EXHAUSTED:
    return "RESOURCE_EXHAUSTED";
  case TL_STATUS_INCOMPATIBLE:
    return "INCOMPATIBLE";
  case TL_STATUS_DATA_LOSS:
    return "DATA_LOSS";
  case TL_STATUS_INTERNAL:
    return "INTERNAL";
  case TL_STATUS_ABORTED:
    return "ABORTED";
  }
  return "UNKNOWN";
}

size_t tl_dtype_size(tl_dtype dtype) { return tl_dtype_bytes(dtype); }

const char *tl_dtype_name(tl_dtype dtype) {
  const char *name = tl_dtype_spelling(dtype);
  return name ? name : "invalid";
}

} // extern "C"

namespace tl::hal {
tl_status make_status(tl_status_code code, std::string message) {
  return tl_status_make(code, message.c_str());
}
} // namespace tl::hal
