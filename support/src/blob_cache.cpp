// The compile cache (see blob_cache.h).
// SPDX-License-Identifier: Apache-2.0
#include "tl/support/blob_cache.h"

#include <openssl/evp.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <map>
#include <mutex>

namespace tl::support {
namespace {

struct MemoryCache {
  std::mutex mutex;
  std::map<std::string, std::vector<uint8_t>> blobs; // "<kind>/<key>"
};

MemoryCache &memory() {
  static MemoryCache *c = new MemoryCache(); // never destroyed: used from any thread at exit
  return *c;
}

} // namespace

std::string cache_key(std::initializer_list<std::string_view> parts) {
  EVP_MD_CTX *ctx = EVP_MD_CTX_new();
  EVP_DigestInit_ex(ctx, EVP_sha256(), nullptr);
  for (std::string_view p : parts) {
    EVP_DigestUpdate(ctx, p.data(), p.size());
    EVP_DigestUpdate(ctx, "", 1);
  }
  unsigned char digest[32];
  unsigned int n = 0;
  EVP_DigestFinal_ex(ctx, digest, &n);
  EVP_MD_CTX_free(ctx);
  std::string hex;
  for (unsigned i = 0; i < n; ++i) {
    char buf[3];
    std::snprintf(buf, sizeof buf, "%02x", digest[i]);
    hex += buf;
  }
  return hex;
}

std::filesystem::path cache_dir(const std::string &kind) {
  if (const char *d = std::getenv("TL_CACHE_DIR"))
    return *d ? std::filesystem::path(d) / kind : std::filesystem::path();
  if (const char *home = std::getenv("HOME"))
    return std::filesystem::path(home) / ".cache" / "tl" / kind;
  return {};
}

std::vector<uint8_t> cache_get(const std::string &kind, const std::string &key) {
  MemoryCache &c = memory();
  {
    std::lock_guard<std::mutex> lock(c.mutex);
    if (auto it = c.blobs.find(kind + "/" + key); it != c.blobs.end())
      return it->second;
  }
  const std::filesystem::path dir = cache_dir(kind);
  if (dir.empty())
    return {};
  std::ifstream in(dir / key, std::ios::binary);
  std::vector<uint8_t> blob((std::istreambuf_iterator<char>(in)), {});
  if (!blob.empty()) {
    std::lock_guard<std::mutex> lock(c.mutex);
    c.blobs.emplace(kind + "/" + key, blob);
  }
  return blob;
}

void cache_put(const std::string &kind, const std::string &key, const std::vector<uint8_t> &blob,
               bool replace) {
  {
    MemoryCache &c = memory();
    std::lock_guard<std::mutex> lock(c.mutex);
    if (replace)
      c.blobs[kind + "/" + key] = blob;
    else
      c.blobs.emplace(kind + "/" + key, blob);
  }
  const std::filesystem::path dir = cache_dir(kind);
  if (dir.empty())
    return;
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  const std::filesystem::path file = dir / key;
  // A name of this write alone: two threads putting one key must not share a temporary file
  // (the first rename would publish the other's half-written bytes).
  static std::atomic<uint64_t> writes{0};
  const std::filesystem::path tmp = file.string() + ".tmp" + std::to_string(::getpid()) + "." +
                                    std::to_string(writes.fetch_add(1));
  {
    std::ofstream out(tmp, std::ios::binary);
    out.write(reinterpret_cast<const char *>(blob.data()), std::streamsize(blob.size()));
    if (!out) {
      std::filesystem::remove(tmp, ec);
      return;
    }
  }
  std::filesystem::rename(tmp, file, ec);
  if (ec)
    std::filesystem::remove(tmp, ec);
}

} // namespace tl::support
