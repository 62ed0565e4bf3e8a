// Tests of the .npy reader/writer: round trip, and clear errors for corrupt or truncated files.
// SPDX-License-Identifier: Apache-2.0
#include "tl/npy/npy.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <sstream>

namespace tl::npy {
namespace {

std::string read_all(const std::string &p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

TEST(Npy, RoundTripsEveryStorageType) {
  using ir::ScalarKind;
  for (ScalarKind k : {ScalarKind::I1, ScalarKind::I8, ScalarKind::I32, ScalarKind::I64,
                       ScalarKind::U16, ScalarKind::F16, ScalarKind::F32, ScalarKind::F64}) {
    interp::HostTensor t(k, {3, 2});
    for (int i = 0; i < 6; ++i)
      t.set(i, k == ScalarKind::I1 ? i % 2 : i - 2);
    std::string path = testing::TempDir() + "rt.npy";
    save(path, t);
    interp::HostTensor u = load(path);
    EXPECT_EQ(u.dtype(), k);
    EXPECT_EQ(u.shape(), (std::vector<int64_t>{3, 2}));
    for (int i = 0; i < 6; ++i)
      EXPECT_EQ(u.get(i), t.get(i));
  }
}

TEST(Npy, Bf16IsWrittenAsFloat32) {
  interp::HostTensor t(ir::ScalarKind::BF16, {2});
  t.set(0, 1.5);
  t.set(1, -3.0);
  std::string path = testing::TempDir() + "bf.npy";
  save(path, t);
  interp::HostTensor u = load(path);
  EXPECT_EQ(u.dtype(), ir::ScalarKind::F32);
  EXPECT_EQ(u.get(1), -3.0);
}

TEST(Npy, CorruptAndTruncatedFilesAreClearErrors) {
  interp::HostTensor t(ir::ScalarKind::F32, {4});
  std::string path = testing::TempDir() + "ok.npy";
  save(path, t);
  std::string good = read_all(path);
  auto expect_error = [](const std::string &bytes, const std::string &fragment) {
    try {
      parse(bytes, "x.npy");
      ADD_FAILURE() << "no error for " << fragment;
    } catch (const NpyError &e) {
      EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
    }
  };
  expect_error(good.substr(0, good.size() - 3), "truncated file");
  expect_error(good.substr(0, 20), "truncated header");
  expect_error("garbage", "bad magic");
  std::string fortran = good;
  fortran.replace(fortran.find("False"), 5, "True ");
  expect_error(fortran, "Fortran-order");
  std::string dtype = good;
  dtype.replace(dtype.find("<f4"), 3, ">f4");
  expect_error(dtype, "unsupported dtype");
  EXPECT_THROW(load("/nonexistent/file.npy"), NpyError);
}

} // namespace
} // namespace tl::npy
