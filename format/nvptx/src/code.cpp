// Writer and reader of the nvptx code blob (tl/format/nvptx_code.h).
// SPDX-License-Identifier: Apache-2.0
#include "tl/format/nvptx_code.h"

#include <cstring>

namespace tl::nvptx {
namespace {

constexpr char kMagic[8] = {'T', 'L', 'N', 'V', 'P', 'T', 'X', '1'};

struct Writer {
  std::vector<uint8_t> out;
  template <class T> void put(T v) {
    for (size_t i = 0; i < sizeof(T); ++i)
      out.push_back(static_cast<uint8_t>(static_cast<uint64_t>(v) >> (8 * i)));
  }
  void bytes(const void *p, size_t n) {
    auto *b = static_cast<const uint8_t *>(p);
    out.insert(out.end(), b, b + n);
  }
};

/// Bounds-checked reads; the first failure names the field and its offset.
struct Reader {
  const uint8_t *p;
  size_t size, pos = 0;
  std::string &error;
  bool need(size_t n, const char *what) {
    if (!error.empty())
      return false;
    if (n > size - pos) {
      error =
          std::string("nvptx blob truncated reading ") + what + " at offset " + std::to_string(pos);
      return false;
    }
    return true;
  }
  template <class T> T get(const char *what) {
    if (!need(sizeof(T), what))
      return T{};
    uint64_t v = 0;
    for (size_t i = 0; i < sizeof(T); ++i)
      v |= static_cast<uint64_t>(p[pos + i]) << (8 * i);
    pos += sizeof(T);
    return static_cast<T>(v);
  }
  bool take(size_t n, std::vector<uint8_t> &dst, const char *what) {
    if (!need(n, what))
      return false;
    dst.assign(p + pos, p + pos + n);
    pos += n;
    return true;
  }
};

} // namespace

std::string exact_arch(uint32_t sm) {
  if (sm == 90)
    return "sm_90a";
  return sm == 80 || sm == 86 || sm == 87 || sm == 89 ? "sm_" + std::to_string(sm) : "";
}

std::vector<uint8_t> serialize_code(const Code &code) {
  Writer w;
  w.bytes(kMagic, sizeof kMagic);
  w.put<uint32_t>(kVersion);
  w.put<uint32_t>(static_cast<uint32_t>(code.images.size()));
  for (const Image &im : code.images) {
    w.put<uint8_t>(static_cast<uint8_t>(im.kind));
    w.put<uint8_t>(im.arch_specific ? 1 : 0);
    w.put<uint16_t>(0);
    w.put<uint32_t>(im.sm);
    w.put<uint64_t>(im.bytes.size());
    w.bytes(im.bytes.data(), im.bytes.size());
  }
  w.put<uint32_t>(static_cast<uint32_t>(code.kernels.size()));
  for (const Kernel &k : code.kernels) {
    w.put<uint32_t>(static_cast<uint32_t>(k.name.size()));
    w.bytes(k.name.data(), k.name.size());
    for (uint32_t b : k.block)
      w.put<uint32_t>(b);
    w.put<uint32_t>(k.static_shared_bytes);
    w.put<uint32_t>(k.dynamic_shared_bytes);
    w.put<uint32_t>(static_cast<uint32_t>(k.params.size()));
    for (const Slot &s : k.params) {
      w.put<uint8_t>(static_cast<uint8_t>(s.kind));
      w.put<uint8_t>(s.dim);
      w.put<uint16_t>(s.arg);
      w.put<uint8_t>(s.size);
      w.put<uint8_t>(0);
      w.put<uint16_t>(0);
    }
    w.put<uint32_t>(static_cast<uint32_t>(k.asserts.size()));
    for (const std::string &m : k.asserts) {
      w.put<uint32_t>(static_cast<uint32_t>(m.size()));
      w.bytes(m.data(), m.size());
    }
  }
  return w.out;
}

bool parse_code(const void *data, size_t size, Code &code, std::string &error) {
  error.clear();
  code = {};
  if (!data || size < sizeof kMagic || std::memcmp(data, kMagic, sizeof kMagic) != 0) {
    error = "not an nvptx blob (bad magic)";
    return false;
  }
  Reader r{static_cast<const uint8_t *>(data), size, sizeof kMagic, error};
  const auto version = r.get<uint32_t>("version");
  if (error.empty() && (version == 0 || version > kVersion)) {
    error = "nvptx blob version " + std::to_string(version) +
            " is not supported (this reader: " + std::to_string(kVersion) + ")";
    return false;
  }
  const auto images = r.get<uint32_t>("image count");
  for (uint32_t i = 0; i < images && error.empty(); ++i) {
    Image im;
    const auto kind = r.get<uint8_t>("image kind");
    if (error.empty() && kind > 1) {
      error = "image " + std::to_string(i) + " has unknown kind " + std::to_string(kind);
      break;
    }
    im.kind = static_cast<Image::Kind>(kind);
    im.arch_specific = r.get<uint8_t>("image arch flag") != 0;
    r.get<uint16_t>("image reserved");
    im.sm = r.get<uint32_t>("image sm");
    const auto n = r.get<uint64_t>("image length");
    if (r.take(n, im.bytes, "image bytes"))
      code.images.push_back(std::move(im));
  }
  const auto kernels = r.get<uint32_t>("kernel count");
  for (uint32_t i = 0; i < kernels && error.empty(); ++i) {
    Kernel k;
    std::vector<uint8_t> name;
    const auto n = r.get<uint32_t>("kernel name length");
    r.take(n, name, "kernel name");
    k.name.assign(name.begin(), name.end());
    for (uint32_t &b : k.block)
      b = r.get<uint32_t>("block size");
    k.static_shared_bytes = r.get<uint32_t>("static shared bytes");
    k.dynamic_shared_bytes = r.get<uint32_t>("dynamic shared bytes");
    const auto params = r.get<uint32_t>("param count");
    for (uint32_t j = 0; j < params && error.empty(); ++j) {
      Slot s;
      const auto kind = r.get<uint8_t>("param kind");
      s.dim = r.get<uint8_t>("param dim");
      s.arg = r.get<uint16_t>("param arg");
      s.size = r.get<uint8_t>("param size");
      r.get<uint8_t>("param reserved");
      r.get<uint16_t>("param reserved");
      if (error.empty() && kind > static_cast<uint8_t>(Slot::Kind::GridBase))
        error = "kernel '" + k.name + "' param " + std::to_string(j) + " has unknown kind " +
                std::to_string(kind);
      else if (error.empty() && (s.size == 0 || s.size > 8))
        error = "kernel '" + k.name + "' param " + std::to_string(j) + " has size " +
                std::to_string(s.size) + " (1..8 bytes)";
      s.kind = static_cast<Slot::Kind>(kind);
      k.params.push_back(s);
    }
    const auto asserts = r.get<uint32_t>("assert count");
    for (uint32_t j = 0; j < asserts && error.empty(); ++j) {
      std::vector<uint8_t> m;
      if (r.take(r.get<uint32_t>("assert message length"), m, "assert message"))
        k.asserts.emplace_back(m.begin(), m.end());
    }
    if (error.empty() && (k.block[0] == 0 || k.block[1] == 0 || k.block[2] == 0))
      error = "kernel '" + k.name + "' has an empty block";
    code.kernels.push_back(std::move(k));
  }
  if (error.empty() && r.pos != size)
    error = "nvptx blob has " + std::to_string(size - r.pos) + " trailing bytes";
  return error.empty();
}

const Image *select_image(const Code &code, uint32_t sm) {
  for (const Image &im : code.images)
    if (im.kind == Image::Kind::Cubin && im.sm == sm)
      return &im;
  const Image *best = nullptr;
  for (const Image &im : code.images) {
    if (im.kind != Image::Kind::Ptx || im.sm > sm || (im.arch_specific && im.sm != sm))
      continue;
    if (!best || im.sm > best->sm || (im.sm == best->sm && im.arch_specific))
      best = &im;
  }
  return best;
}

} // namespace tl::nvptx
