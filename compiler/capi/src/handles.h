// The C API's handle structs and the helpers its files share: status objects, handle casts, types.
// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "tl/compiler.h"

#include "tl/ir/builder.h"

#include <list>
#include <memory>
#include <new>
#include <string>

struct tl_cstatus_s {
  std::string message;
};

/// One kernel being built: its builder and the current source location.
struct tl_kernel_s {
  tl::ir::Kernel *kernel;
  tl::ir::Builder builder;
  tl::ir::Location loc; // where the front end says it is building (named in errors)
  explicit tl_kernel_s(tl::ir::Kernel *k) : kernel(k), builder(*k) {
    loc.file = std::make_shared<const std::string>("<capi>");
  }
};

struct tl_module_s {
  std::unique_ptr<tl::ir::Module> module = std::make_unique<tl::ir::Module>();
  std::list<tl_kernel_s> kernels; // stable addresses: handles point into it
};

namespace tl::capi {

inline tl_cstatus make_status(std::string message) { return new tl_cstatus_s{std::move(message)}; }

/// The C API's one exception -> status boundary: runs `body` (which returns a tl_cstatus) and
/// turns anything it throws into a status "<fn>: <what>". No exception crosses the API.
template <class Body> tl_cstatus guard(const char *fn, Body &&body) noexcept {
  try {
    return body();
  } catch (const std::bad_alloc &) {
    return new (std::nothrow) tl_cstatus_s{std::string(fn) + ": out of memory"};
  } catch (const std::exception &e) {
    return make_status(std::string(fn) + ": " + e.what());
  } catch (...) {
    return make_status(std::string(fn) + ": unknown exception");
  }
}

/// A malloc'd copy (freed by tl_compiler_free), or null when out of memory.
char *copy_string(const std::string &s);

// Ops, blocks and values are handed out as the IR's own pointers.
inline ir::Value *unwrap(tl_ir_value v) { return reinterpret_cast<ir::Value *>(v); }
inline tl_ir_value wrap(ir::Value *v) { return reinterpret_cast<tl_ir_value>(v); }
inline ir::Operation *unwrap(tl_ir_op op) { return reinterpret_cast<ir::Operation *>(op); }
inline tl_ir_op wrap(ir::Operation *op) { return reinterpret_cast<tl_ir_op>(op); }
inline ir::Block *unwrap(tl_ir_block b) { return reinterpret_cast<ir::Block *>(b); }
inline tl_ir_block wrap(ir::Block *b) { return reinterpret_cast<tl_ir_block>(b); }

/// Converts a C type description; returns an error or "".
std::string to_type(const tl_ir_type *t, ir::Type *out);
void from_type(const ir::Type &t, tl_ir_type *out);
/// Converts a C attribute value (not its name); returns an error or "".
std::string to_attr(const tl_ir_attr &a, ir::Attr *out);

} // namespace tl::capi
