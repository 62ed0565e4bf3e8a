// The TL executable container: serialize, deserialize (checked), files, hashes, kernel tables.
// SPDX-License-Identifier: Apache-2.0
#include "tl/format/executable.h"

#include "executable_generated.h"

#include <openssl/evp.h>

#include <algorithm>
#include <array>
#include <cassert>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <iterator>
#include <set>

namespace tl::exe {
namespace {

using Digest = std::array<uint8_t, 32>;

// The schema's DType is the wire form of tl_dtype (tl/dtype.h): same values, same order.
static_assert(static_cast<int>(fb::DType::MAX) == TL_DTYPE_COUNT - 1);
static_assert(static_cast<int>(fb::DType::F32) == TL_DTYPE_F32);
static_assert(static_cast<int>(fb::ParamKind::MAX) == static_cast<int>(ParamKind::Scalar));

Digest sha256(const void *data, size_t size) {
  static const uint8_t kNothing = 0;
  Digest digest{};
  unsigned len = 0;
  const int ok =
      EVP_Digest(size ? data : &kNothing, size, digest.data(), &len, EVP_sha256(), nullptr);
  assert(ok == 1 && len == digest.size() && "EVP_Digest(sha256) failed");
  (void)ok;
  return digest;
}

std::string to_hex(const uint8_t *bytes, size_t size) {
  static const char kDigits[] = "0123456789abcdef";
  std::string hex;
  hex.reserve(2 * size);
  for (size_t i = 0; i < size; ++i) {
    hex += kDigits[bytes[i] >> 4];
    hex += kDigits[bytes[i] & 15];
  }
  return hex;
}

std::string corrupt(const std::string &what) {
  return "executable is truncated or corrupt: " + what;
}

// ---- writing -------------------------------------------------------------------------------

flatbuffers::Offset<fb::Kernel> build_kernel(flatbuffers::FlatBufferBuilder &fbb,
                                             const KernelInfo &k) {
  std::vector<flatbuffers::Offset<fb::Param>> params;
  for (const ParamInfo &p : k.params) {
    assert(p.rank >= 0 && p.rank <= 255 && "parameter rank out of range");
    params.push_back(
        fb::CreateParam(fbb, fbb.CreateString(p.name), static_cast<fb::ParamKind>(p.kind),
                        static_cast<fb::DType>(p.dtype), static_cast<uint8_t>(p.rank)));
  }
  assert(k.grid_rank >= 0 && k.grid_rank <= 255 && "grid rank out of range");
  return fb::CreateKernel(fbb, fbb.CreateString(k.name), fbb.CreateVector(params),
                          static_cast<uint8_t>(k.grid_rank), k.onchip_memory_bytes);
}

std::vector<uint8_t> build_body(const Executable &exe) {
  flatbuffers::FlatBufferBuilder fbb(1024 + exe.code.size());
  // Code objects start 16-byte aligned (relative to the body), for loaders that map them as is.
  fbb.ForceVectorAlignment(exe.code.size(), 1, 16);
  auto code = fbb.CreateVector(exe.code);
  std::vector<flatbuffers::Offset<fb::Kernel>> kernels;
  for (const KernelInfo &k : exe.kernels)
    kernels.push_back(build_kernel(fbb, k));
  auto target = fbb.CreateString(exe.target);
  auto producer = fbb.CreateString(exe.producer);
  fbb.Finish(fb::CreateBody(fbb, target, producer, fbb.CreateVector(kernels), code));
  return {fbb.GetBufferPointer(), fbb.GetBufferPointer() + fbb.GetSize()};
}

// ---- reading -------------------------------------------------------------------------------

/// A 16-byte-aligned copy of `data` when it is not 8-byte aligned: FlatBuffers reads 64-bit
/// fields in place, and the verifier checks alignment only relative to the buffer's start.
const uint8_t *aligned(const void *data, size_t size, std::vector<uint8_t> &storage) {
  if (reinterpret_cast<uintptr_t>(data) % 8 == 0)
    return static_cast<const uint8_t *>(data);
  storage.assign(static_cast<const uint8_t *>(data), static_cast<const uint8_t *>(data) + size);
  return storage.data();
}

std::string version_str(unsigned major, unsigned minor) {
  return std::to_string(major) + "." + std::to_string(minor);
}

/// Checks everything up to the body; returns an error, or "" with `*out` set. Sets the
/// version in `result` once the header verifies.
std::string open_container(const uint8_t *buf, size_t size, const fb::Container **out,
                           LoadResult &result) {
  if (size == 0)
    return "executable is empty";
  if (size < 8)
    return corrupt(std::to_string(size) + " bytes, shorter than the 8-byte header");
  if (size >= FLATBUFFERS_MAX_BUFFER_SIZE)
    return "executable is too large: " + std::to_string(size) + " bytes";
  if (!fb::ContainerBufferHasIdentifier(buf))
    return "not a TL executable: missing TLEX identifier";
  // The version fields never move, so a reader names the version of a file it cannot read.
  flatbuffers::Verifier header_verifier(buf, size);
  if (!header_verifier.VerifyBuffer<fb::ContainerHeader>(fb::ContainerIdentifier()))
    return corrupt("the header does not verify");
  const auto *header = flatbuffers::GetRoot<fb::ContainerHeader>(buf);
  result.format_major = header->format_major();
  result.format_minor = header->format_minor();
  const unsigned major = result.format_major, minor = result.format_minor;
  const std::string mine = version_str(kFormatMajor, kFormatMinor);
  if (major > kFormatMajor)
    return "executable format " + version_str(major, minor) + " is newer than this reader's " +
           mine;
  if (major < kFormatMajor)
    return "executable format " + version_str(major, minor) + " is older than this reader's " +
           mine + " and no longer supported";
  flatbuffers::Verifier::Options opts;
  opts.check_nested_flatbuffers = false; // verified after the hash check, aligned
  flatbuffers::Verifier verifier(buf, size, opts);
  if (!fb::VerifyContainerBuffer(verifier))
    return corrupt("the container does not verify");
  const fb::Container *c = fb::GetContainer(buf);
  if (!c->body())
    return corrupt("the container has no body");
  if (!c->sha256() || c->sha256()->size() != 32)
    return corrupt("the content hash is " + std::to_string(c->sha256() ? c->sha256()->size() : 0) +
                   " bytes, expected 32");
  *out = c;
  return {};
}

std::string param_label(const fb::Param *p, size_t index) {
  if (p->name() && p->name()->size())
    return "'" + p->name()->str() + "'";
  return "#" + std::to_string(index);
}

std::string read_param(const fb::Param *p, size_t index, const std::string &kernel,
                       ParamInfo &out) {
  const std::string where = "kernel '" + kernel + "' parameter " + param_label(p, index);
  const unsigned kind = static_cast<unsigned>(p->kind()), dtype = static_cast<unsigned>(p->dtype());
  const int rank = p->rank();
  if (kind > static_cast<unsigned>(fb::ParamKind::MAX))
    return where + " has unknown kind " + std::to_string(kind);
  if (dtype > static_cast<unsigned>(fb::DType::MAX))
    return where + " has unknown dtype " + std::to_string(dtype);
  if (rank > kMaxRank)
    return where + " has rank " + std::to_string(rank) + ", more than " + std::to_string(kMaxRank);
  const auto k = static_cast<ParamKind>(kind);
  if (k == ParamKind::Scalar && rank != 0)
    return where + " is a scalar of rank " + std::to_string(rank);
  if (k == ParamKind::Tensor && rank == 0)
    return where + " is a tensor of rank 0";
  out = {p->name() ? p->name()->str() : std::string(), k, static_cast<tl_dtype>(dtype), rank};
  return {};
}

std::string read_kernel(const fb::Kernel *k, size_t index, KernelInfo &out) {
  if (!k->name() || k->name()->size() == 0)
    return "kernel #" + std::to_string(index) + " has no name";
  out.name = k->name()->str();
  out.grid_rank = k->grid_rank();
  out.onchip_memory_bytes = k->onchip_memory_bytes();
  if (out.grid_rank < 1 || out.grid_rank > 3)
    return "kernel '" + out.name + "' has grid rank " + std::to_string(out.grid_rank) +
           ", expected 1 to 3";
  if (!k->params())
    return {};
  for (size_t i = 0; i < k->params()->size(); ++i) {
    ParamInfo p;
    if (std::string e = read_param(k->params()->Get(i), i, out.name, p); !e.empty())
      return e;
    out.params.push_back(std::move(p));
  }
  return {};
}

/// Verifies the body's FlatBuffer and converts it; returns an error or "".
std::string read_body(const uint8_t *data, size_t size, Executable &exe) {
  std::vector<uint8_t> storage;
  const uint8_t *buf = aligned(data, size, storage);
  flatbuffers::Verifier verifier(buf, size);
  if (!verifier.VerifyBuffer<fb::Body>(nullptr))
    return corrupt("the body does not verify");
  const fb::Body *body = flatbuffers::GetRoot<fb::Body>(buf);
  if (!body->target() || body->target()->size() == 0)
    return "executable has no target";
  if (!body->kernels())
    return "executable has no kernel table";
  if (!body->code())
    return "executable has no code";
  exe.target = body->target()->str();
  exe.producer = body->producer() ? body->producer()->str() : std::string();
  std::set<std::string> names;
  for (size_t i = 0; i < body->kernels()->size(); ++i) {
    KernelInfo k;
    if (std::string e = read_kernel(body->kernels()->Get(i), i, k); !e.empty())
      return e;
    if (!names.insert(k.name).second)
      return "duplicate kernel name '" + k.name + "'";
    exe.kernels.push_back(std::move(k));
  }
  exe.code.assign(body->code()->begin(), body->code()->end());
  return {};
}

} // namespace

std::string sha256_hex(const void *data, size_t size) {
  const Digest d = sha256(data, size);
  return to_hex(d.data(), d.size());
}

std::vector<uint8_t> serialize(const Executable &exe) {
  const std::vector<uint8_t> body = build_body(exe);
  const Digest digest = sha256(body.data(), body.size());
  flatbuffers::FlatBufferBuilder fbb(body.size() + 256);
  fbb.ForceVectorAlignment(body.size(), 1, 16); // the nested body has 64-bit fields
  auto body_vec = fbb.CreateVector(body);
  auto hash_vec = fbb.CreateVector(digest.data(), digest.size());
  fb::FinishContainerBuffer(
      fbb, fb::CreateContainer(fbb, kFormatMajor, kFormatMinor, body_vec, hash_vec));
  return {fbb.GetBufferPointer(), fbb.GetBufferPointer() + fbb.GetSize()};
}

LoadResult deserialize(const void *data, size_t size) {
  LoadResult result;
  std::vector<uint8_t> storage;
  const uint8_t *buf = size ? aligned(data, size, storage) : nullptr;
  const fb::Container *c = nullptr;
  if (std::string e = open_container(buf, size, &c, result); !e.empty()) {
    result.error = std::move(e);
    return result;
  }
  // The hash comes before the body's own checks: a damaged body is reported as such.
  const Digest computed = sha256(c->body()->data(), c->body()->size());
  const std::string stored_hex = to_hex(c->sha256()->data(), 32);
  const std::string computed_hex = to_hex(computed.data(), computed.size());
  if (stored_hex != computed_hex) {
    result.error = "content hash mismatch: stored " + stored_hex + ", computed " + computed_hex;
    return result;
  }
  if (std::string e = read_body(c->body()->data(), c->body()->size(), result.exe); !e.empty()) {
    result.error = std::move(e);
    result.exe = {};
    return result;
  }
  result.ok = true;
  result.sha256_hex = stored_hex;
  return result;
}

LoadResult load_file(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    LoadResult r;
    r.error = "cannot open '" + path + "': " + std::strerror(errno);
    return r;
  }
  std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)),
                             std::istreambuf_iterator<char>());
  if (in.bad()) {
    LoadResult r;
    r.error = "cannot read '" + path + "': " + std::strerror(errno);
    return r;
  }
  LoadResult r = deserialize(bytes.data(), bytes.size());
  if (!r.ok)
    r.error = path + ": " + r.error;
  return r;
}

bool save_file(const std::string &path, const Executable &exe, std::string *error) {
  const std::vector<uint8_t> bytes = serialize(exe);
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (out)
    out.write(reinterpret_cast<const char *>(bytes.data()),
              static_cast<std::streamsize>(bytes.size()));
  if (out)
    out.close();
  if (!out) {
    if (error)
      *error = "cannot write '" + path + "': " + std::strerror(errno);
    return false;
  }
  return true;
}

} // namespace tl::exe
