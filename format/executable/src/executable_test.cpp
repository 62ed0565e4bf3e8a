// Unit tests of the executable container: round trips, kernel tables, and every error path.
// SPDX-License-Identifier: Apache-2.0
#include "tl/format/executable.h"

#include "executable_generated.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <random>

namespace tl::exe {
namespace {

Executable sample() {
  Executable exe;
  exe.target = "tlir";
  exe.producer = "test 1.0";
  exe.kernels.push_back({"add",
                         {{"a", ParamKind::Tensor, TL_DTYPE_F32, 2},
                          {"b", ParamKind::Tensor, TL_DTYPE_BF16, 1},
                          {"n", ParamKind::Scalar, TL_DTYPE_I32, 0}},
                         2,
                         4096});
  exe.kernels.push_back({"empty", {}, 1, 0});
  exe.code = {'k', 'e', 'r', 'n', 'e', 'l', 0, 1, 2, 255};
  return exe;
}

void expect_same(const Executable &a, const Executable &b) {
  EXPECT_EQ(a.target, b.target);
  EXPECT_EQ(a.producer, b.producer);
  EXPECT_EQ(a.code, b.code);
  ASSERT_EQ(a.kernels.size(), b.kernels.size());
  for (size_t i = 0; i < a.kernels.size(); ++i) {
    const KernelInfo &x = a.kernels[i], &y = b.kernels[i];
    EXPECT_EQ(x.name, y.name);
    EXPECT_EQ(x.grid_rank, y.grid_rank);
    EXPECT_EQ(x.onchip_memory_bytes, y.onchip_memory_bytes);
    ASSERT_EQ(x.params.size(), y.params.size());
    for (size_t j = 0; j < x.params.size(); ++j) {
      EXPECT_EQ(x.params[j].name, y.params[j].name);
      EXPECT_EQ(x.params[j].kind, y.params[j].kind);
      EXPECT_EQ(x.params[j].dtype, y.params[j].dtype);
      EXPECT_EQ(x.params[j].rank, y.params[j].rank);
    }
  }
}

std::vector<uint8_t> unhex(const std::string &hex) {
  std::vector<uint8_t> bytes;
  for (size_t i = 0; i + 1 < hex.size(); i += 2)
    bytes.push_back(static_cast<uint8_t>(std::stoi(hex.substr(i, 2), nullptr, 16)));
  return bytes;
}

/// A container around `body` with the given version and the body's true hash (unless `hash`).
std::vector<uint8_t> wrap(const std::vector<uint8_t> &body, uint16_t major, uint16_t minor,
                          bool identifier = true, const std::vector<uint8_t> *hash = nullptr) {
  const std::vector<uint8_t> digest = hash ? *hash : unhex(sha256_hex(body.data(), body.size()));
  flatbuffers::FlatBufferBuilder fbb;
  fbb.ForceVectorAlignment(body.size(), 1, 16);
  auto b = fbb.CreateVector(body);
  auto h = fbb.CreateVector(digest);
  auto root = fb::CreateContainer(fbb, major, minor, b, h);
  if (identifier)
    fb::FinishContainerBuffer(fbb, root);
  else
    fbb.Finish(root);
  return {fbb.GetBufferPointer(), fbb.GetBufferPointer() + fbb.GetSize()};
}

/// The body of serialize(sample()), taken out of its container.
std::vector<uint8_t> sample_body() {
  const std::vector<uint8_t> bytes = serialize(sample());
  const auto *body = fb::GetContainer(bytes.data())->body();
  return {body->begin(), body->end()};
}

struct BodyOptions {
  bool target = true, kernels = true, code = true;
  uint8_t kind = 0, dtype = 10, rank = 2, grid_rank = 1;
  std::vector<std::string> names = {"k"};
};

/// A body built field by field, to reach the checks serialize() never trips.
std::vector<uint8_t> hand_body(const BodyOptions &o) {
  flatbuffers::FlatBufferBuilder fbb;
  std::vector<flatbuffers::Offset<fb::Kernel>> kernels;
  for (const std::string &name : o.names) {
    auto param = fb::CreateParam(fbb, fbb.CreateString("p"), static_cast<fb::ParamKind>(o.kind),
                                 static_cast<fb::DType>(o.dtype), o.rank);
    kernels.push_back(fb::CreateKernel(fbb, fbb.CreateString(name),
                                       fbb.CreateVector(std::vector{param}), o.grid_rank, 0));
  }
  auto target = o.target ? fbb.CreateString("tlir") : 0;
  auto kvec = o.kernels ? fbb.CreateVector(kernels) : 0;
  auto code = o.code ? fbb.CreateVector(std::vector<uint8_t>{1, 2, 3}) : 0;
  fbb.Finish(fb::CreateBody(fbb, target, 0, kvec, code));
  return {fbb.GetBufferPointer(), fbb.GetBufferPointer() + fbb.GetSize()};
}

std::string load_error(const std::vector<uint8_t> &bytes) {
  LoadResult r = deserialize(bytes.data(), bytes.size());
  EXPECT_FALSE(r.ok);
  return r.error;
}

TEST(Executable, RoundTrip) {
  const std::vector<uint8_t> bytes = serialize(sample());
  EXPECT_EQ(bytes, serialize(sample())); // deterministic
  LoadResult r = deserialize(bytes.data(), bytes.size());
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_TRUE(r.error.empty());
  expect_same(sample(), r.exe);
  const auto *c = fb::GetContainer(bytes.data());
  EXPECT_EQ(c->format_major(), kFormatMajor);
  EXPECT_EQ(c->format_minor(), kFormatMinor);
  EXPECT_EQ(r.format_major, kFormatMajor);
  EXPECT_EQ(r.format_minor, kFormatMinor);
  EXPECT_EQ(r.sha256_hex, sha256_hex(c->body()->data(), c->body()->size()));
}

TEST(Executable, RoundTripEmptyAndLarge) {
  Executable exe;
  exe.target = "tlir";
  const std::vector<uint8_t> empty = serialize(exe);
  LoadResult r = deserialize(empty.data(), empty.size());
  ASSERT_TRUE(r.ok) << r.error;
  expect_same(exe, r.exe);
  exe.code.resize(1 << 20);
  for (size_t i = 0; i < exe.code.size(); ++i)
    exe.code[i] = static_cast<uint8_t>(i * 7);
  const std::vector<uint8_t> bytes = serialize(exe);
  r = deserialize(bytes.data(), bytes.size());
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_EQ(r.exe.code, exe.code);
}

TEST(Executable, UnalignedInput) {
  const std::vector<uint8_t> bytes = serialize(sample());
  std::vector<uint8_t> shifted(bytes.size() + 3);
  std::copy(bytes.begin(), bytes.end(), shifted.begin() + 3);
  LoadResult r = deserialize(shifted.data() + 3, bytes.size());
  ASSERT_TRUE(r.ok) << r.error;
  expect_same(sample(), r.exe);
}

TEST(Executable, Sha256KnownAnswers) {
  EXPECT_EQ(sha256_hex("", 0), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(sha256_hex("abc", 3),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

TEST(Executable, DTypeOrderMatchesTlDtype) {
  for (int i = 0; i <= static_cast<int>(fb::DType::MAX); ++i) {
    std::string name = fb::EnumNameDType(static_cast<fb::DType>(i));
    for (char &ch : name)
      ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    EXPECT_EQ(name, tl_dtype_spelling(i));
  }
}

TEST(ExecutableErrors, Empty) {
  EXPECT_EQ(deserialize(nullptr, 0).error, "executable is empty");
  EXPECT_FALSE(deserialize(nullptr, 0).ok);
}

TEST(ExecutableErrors, RandomBytes) {
  std::mt19937 rng(42);
  for (int n = 0; n < 2000; ++n) {
    std::vector<uint8_t> bytes(rng() % 300);
    for (uint8_t &b : bytes)
      b = static_cast<uint8_t>(rng());
    if (n % 2 && bytes.size() >= 8) // half of them get past the identifier check
      std::copy_n("TLEX", 4, bytes.begin() + 4);
    LoadResult r = deserialize(bytes.data(), bytes.size());
    EXPECT_FALSE(r.ok);
    EXPECT_FALSE(r.error.empty());
  }
}

TEST(ExecutableErrors, EveryTruncation) {
  const std::vector<uint8_t> bytes = serialize(sample());
  for (size_t len = 0; len < bytes.size(); ++len) {
    std::vector<uint8_t> cut(bytes.begin(), bytes.begin() + len); // exact size: ASan sees overreads
    LoadResult r = deserialize(cut.data(), cut.size());
    EXPECT_FALSE(r.ok) << "length " << len;
    EXPECT_FALSE(r.error.empty());
  }
  EXPECT_EQ(load_error({bytes.begin(), bytes.begin() + 5}),
            "executable is truncated or corrupt: 5 bytes, shorter than the 8-byte header");
  EXPECT_EQ(load_error({bytes.begin(), bytes.begin() + bytes.size() / 2}),
            "executable is truncated or corrupt: the container does not verify");
}

TEST(ExecutableErrors, FlippedBodyByteIsHashMismatch) {
  const std::vector<uint8_t> bytes = serialize(sample());
  const auto *body = fb::GetContainer(bytes.data())->body();
  const size_t begin = body->data() - bytes.data(), end = begin + body->size();
  for (size_t i = begin; i < end; ++i) {
    std::vector<uint8_t> bad = bytes;
    bad[i] ^= 0x20;
    const std::string e = load_error(bad);
    EXPECT_EQ(e.rfind("content hash mismatch: stored ", 0), 0u) << "byte " << i << ": " << e;
  }
  std::vector<uint8_t> bad = bytes;
  bad[end - 1] ^= 1;
  const std::string stored = sha256_hex(body->data(), body->size());
  const std::string computed = sha256_hex(bad.data() + begin, body->size());
  EXPECT_EQ(load_error(bad), "content hash mismatch: stored " + stored + ", computed " + computed);
}

TEST(ExecutableErrors, FlippedHeaderByte) {
  const std::vector<uint8_t> bytes = serialize(sample());
  const auto *body = fb::GetContainer(bytes.data())->body();
  const size_t begin = body->data() - bytes.data(), end = begin + body->size();
  std::vector<uint8_t> bad = bytes;
  bad[5] ^= 1; // the identifier
  EXPECT_EQ(load_error(bad), "not a TL executable: missing TLEX identifier");
  // Any other byte outside the body: an error, or (padding, the minor version) the same program.
  for (size_t i = 0; i < bytes.size(); ++i) {
    if (i >= begin && i < end)
      continue;
    for (uint8_t mask : {0x01, 0x80, 0xff}) {
      bad = bytes;
      bad[i] ^= mask;
      LoadResult r = deserialize(bad.data(), bad.size());
      if (r.ok)
        expect_same(sample(), r.exe);
      else
        EXPECT_FALSE(r.error.empty());
    }
  }
  // The stored hash itself.
  bad = bytes;
  const size_t hash_at = fb::GetContainer(bytes.data())->sha256()->data() - bytes.data();
  bad[hash_at] ^= 1;
  EXPECT_EQ(load_error(bad).rfind("content hash mismatch", 0), 0u);
}

TEST(ExecutableErrors, RandomMutations) {
  const std::vector<uint8_t> bytes = serialize(sample());
  std::mt19937 rng(7);
  for (int n = 0; n < 3000; ++n) {
    std::vector<uint8_t> bad = bytes;
    for (int k = 1 + rng() % 4; k > 0; --k)
      bad[rng() % bad.size()] = static_cast<uint8_t>(rng());
    if (rng() % 4 == 0)
      bad.resize(rng() % bad.size());
    LoadResult r = deserialize(bad.data(), bad.size());
    EXPECT_TRUE(r.ok || !r.error.empty());
  }
}

TEST(ExecutableErrors, RandomBodyMutationsWithValidHash) {
  // Past the hash check: the body's own verifier and field checks must hold on their own.
  const std::vector<uint8_t> body = sample_body();
  std::mt19937 rng(11);
  int accepted = 0;
  for (int n = 0; n < 3000; ++n) {
    std::vector<uint8_t> bad = body;
    for (int k = 1 + rng() % 4; k > 0; --k)
      bad[rng() % bad.size()] = static_cast<uint8_t>(rng());
    if (rng() % 4 == 0)
      bad.resize(rng() % bad.size());
    const std::vector<uint8_t> bytes = wrap(bad, 1, 0);
    LoadResult r = deserialize(bytes.data(), bytes.size());
    EXPECT_TRUE(r.ok || !r.error.empty());
    accepted += r.ok;
  }
  EXPECT_LT(accepted, 3000);
}

TEST(ExecutableErrors, NewerMajorVersion) {
  EXPECT_EQ(load_error(wrap(sample_body(), 2, 3)),
            "executable format 2.3 is newer than this reader's 1.0");
  const std::vector<uint8_t> newer = wrap(sample_body(), 2, 3);
  LoadResult r = deserialize(newer.data(), newer.size());
  EXPECT_EQ(r.format_major, 2); // the version is reported even when refused
  EXPECT_EQ(r.format_minor, 3);
  // A newer major may change the body entirely: the version is still what is reported.
  EXPECT_EQ(load_error(wrap({1, 2, 3, 4, 5}, 7, 0)),
            "executable format 7.0 is newer than this reader's 1.0");
  EXPECT_EQ(load_error(wrap(sample_body(), 0, 9)),
            "executable format 0.9 is older than this reader's 1.0 and no longer supported");
}

TEST(ExecutableErrors, NewerMinorVersionIsAccepted) {
  const std::vector<uint8_t> bytes = wrap(sample_body(), 1, 7);
  LoadResult r = deserialize(bytes.data(), bytes.size());
  ASSERT_TRUE(r.ok) << r.error;
  expect_same(sample(), r.exe);
  EXPECT_EQ(r.format_major, 1);
  EXPECT_EQ(r.format_minor, 7);
}

TEST(ExecutableErrors, MissingIdentifier) {
  EXPECT_EQ(load_error(wrap(sample_body(), 1, 0, /*identifier=*/false)),
            "not a TL executable: missing TLEX identifier");
  std::vector<uint8_t> text(64, 'x');
  EXPECT_EQ(load_error(text), "not a TL executable: missing TLEX identifier");
}

TEST(ExecutableErrors, BadHashLength) {
  const std::vector<uint8_t> short_hash(31, 0);
  EXPECT_EQ(load_error(wrap(sample_body(), 1, 0, true, &short_hash)),
            "executable is truncated or corrupt: the content hash is 31 bytes, expected 32");
}

TEST(ExecutableErrors, CorruptBodyWithMatchingHash) {
  EXPECT_EQ(load_error(wrap({1, 2, 3, 4, 5, 6, 7, 8, 9}, 1, 0)),
            "executable is truncated or corrupt: the body does not verify");
  EXPECT_EQ(load_error(wrap({}, 1, 0)),
            "executable is truncated or corrupt: the body does not verify");
}

TEST(ExecutableErrors, MissingFields) {
  BodyOptions o;
  const std::vector<uint8_t> good = wrap(hand_body(o), 1, 0);
  ASSERT_TRUE(deserialize(good.data(), good.size()).ok);
  o.target = false;
  EXPECT_EQ(load_error(wrap(hand_body(o), 1, 0)), "executable has no target");
  o = {};
  o.kernels = false;
  EXPECT_EQ(load_error(wrap(hand_body(o), 1, 0)), "executable has no kernel table");
  o = {};
  o.code = false;
  EXPECT_EQ(load_error(wrap(hand_body(o), 1, 0)), "executable has no code");
  o = {};
  o.names = {""};
  EXPECT_EQ(load_error(wrap(hand_body(o), 1, 0)), "kernel #0 has no name");
}

TEST(ExecutableErrors, BadKernelTable) {
  BodyOptions o;
  o.kind = 2;
  EXPECT_EQ(load_error(wrap(hand_body(o), 1, 0)), "kernel 'k' parameter 'p' has unknown kind 2");
  o = {};
  o.dtype = 14;
  EXPECT_EQ(load_error(wrap(hand_body(o), 1, 0)), "kernel 'k' parameter 'p' has unknown dtype 14");
  o = {};
  o.rank = 9;
  EXPECT_EQ(load_error(wrap(hand_body(o), 1, 0)),
            "kernel 'k' parameter 'p' has rank 9, more than 8");
  o = {};
  o.kind = 1;
  EXPECT_EQ(load_error(wrap(hand_body(o), 1, 0)), "kernel 'k' parameter 'p' is a scalar of rank 2");
  o.kind = 0;
  o.rank = 0;
  EXPECT_EQ(load_error(wrap(hand_body(o), 1, 0)), "kernel 'k' parameter 'p' is a tensor of rank 0");
  o = {};
  o.grid_rank = 0;
  EXPECT_EQ(load_error(wrap(hand_body(o), 1, 0)), "kernel 'k' has grid rank 0, expected 1 to 3");
  o.grid_rank = 4;
  EXPECT_EQ(load_error(wrap(hand_body(o), 1, 0)), "kernel 'k' has grid rank 4, expected 1 to 3");
  o = {};
  o.names = {"k", "j", "k"};
  EXPECT_EQ(load_error(wrap(hand_body(o), 1, 0)), "duplicate kernel name 'k'");
}

TEST(ExecutableFiles, SaveAndLoad) {
  const std::string path = testing::TempDir() + "/tl_executable_test.tlx";
  std::string error;
  ASSERT_TRUE(save_file(path, sample(), &error)) << error;
  LoadResult r = load_file(path);
  ASSERT_TRUE(r.ok) << r.error;
  expect_same(sample(), r.exe);
  std::filesystem::resize_file(path, 20);
  r = load_file(path);
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(r.error.rfind(path + ": executable is truncated or corrupt", 0), 0u) << r.error;
  std::remove(path.c_str());
}

TEST(ExecutableFiles, Errors) {
  LoadResult r = load_file("/nonexistent/dir/x.tlx");
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(r.error, "cannot open '/nonexistent/dir/x.tlx': No such file or directory");
  std::string error;
  EXPECT_FALSE(save_file("/nonexistent/dir/x.tlx", sample(), &error));
  EXPECT_EQ(error.rfind("cannot write '/nonexistent/dir/x.tlx'", 0), 0u) << error;
  EXPECT_FALSE(save_file("/nonexistent/dir/x.tlx", sample(), nullptr));
}

} // namespace
} // namespace tl::exe
