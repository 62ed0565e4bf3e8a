// The nvptx blob: round trip, image selection and the reader's errors on damaged blobs.
// SPDX-License-Identifier: Apache-2.0
#include "tl/format/nvptx_code.h"

#include <gtest/gtest.h>

namespace tl::nvptx {
namespace {

Image image(Image::Kind kind, uint32_t sm, bool arch_specific, const std::string &text) {
  Image im;
  im.kind = kind;
  im.sm = sm;
  im.arch_specific = arch_specific;
  im.bytes.assign(text.begin(), text.end());
  return im;
}

Code sample() {
  Code c;
  c.images.push_back(image(Image::Kind::Ptx, 80, false, ".version 7.0 ptx80"));
  c.images.push_back(image(Image::Kind::Ptx, 90, true, ".version 8.0 ptx90a"));
  c.images.push_back(image(Image::Kind::Cubin, 90, true,
                           "\x7f"
                           "ELF cubin90"));
  Kernel k;
  k.name = "add_kernel";
  k.block[0] = 128;
  k.dynamic_shared_bytes = 4096;
  k.params = {{Slot::Kind::Pointer, 0, 0, 8}, {Slot::Kind::Shape, 0, 1, 4},
              {Slot::Kind::Stride, 1, 2, 8},  {Slot::Kind::Scalar, 2, 0, 2},
              {Slot::Kind::Grid, 0, 2, 4},    {Slot::Kind::Status, 0, 0, 8},
              {Slot::Kind::GridBase, 0, 1, 4}};
  k.asserts = {"n must be positive", "i < n"};
  c.kernels.push_back(k);
  return c;
}

TEST(NvptxCode, ExactArchIsTheOneTheTargetBuildsForThatGpu) {
  EXPECT_EQ(tl::nvptx::exact_arch(90), "sm_90a"); // wgmma needs the arch-specific target
  EXPECT_EQ(tl::nvptx::exact_arch(80), "sm_80");
  EXPECT_EQ(tl::nvptx::exact_arch(86), "sm_86");
  EXPECT_EQ(tl::nvptx::exact_arch(89), "sm_89");
  EXPECT_EQ(tl::nvptx::exact_arch(85), "");  // no such GPU, and no such LLVM processor
  EXPECT_EQ(tl::nvptx::exact_arch(75), "");  // no cp.async: the default images (and their error)
  EXPECT_EQ(tl::nvptx::exact_arch(100), ""); // past LLVM 19: sm_80 PTX, JIT-compiled forward
  EXPECT_EQ(tl::nvptx::exact_arch(120), "");
}

TEST(NvptxCode, RoundTripKeepsEveryField) {
  const Code in = sample();
  const std::vector<uint8_t> blob = serialize_code(in);
  Code out;
  std::string error;
  ASSERT_TRUE(parse_code(blob.data(), blob.size(), out, error)) << error;
  ASSERT_EQ(out.images.size(), 3u);
  EXPECT_EQ(out.images[1].sm, 90u);
  EXPECT_TRUE(out.images[1].arch_specific);
  EXPECT_EQ(out.images[2].kind, Image::Kind::Cubin);
  EXPECT_EQ(out.images[2].bytes, in.images[2].bytes);
  ASSERT_EQ(out.kernels.size(), 1u);
  const Kernel &k = out.kernels[0];
  EXPECT_EQ(k.name, "add_kernel");
  EXPECT_EQ(k.block[0], 128u);
  EXPECT_EQ(k.dynamic_shared_bytes, 4096u);
  ASSERT_EQ(k.params.size(), 7u);
  EXPECT_EQ(k.params[5].kind, Slot::Kind::Status);
  EXPECT_EQ(k.params[6].kind, Slot::Kind::GridBase);
  EXPECT_EQ(k.params[6].dim, 1);
  EXPECT_EQ(k.asserts, (std::vector<std::string>{"n must be positive", "i < n"}));
  EXPECT_EQ(k.params[1].kind, Slot::Kind::Shape);
  EXPECT_EQ(k.params[1].dim, 1);
  EXPECT_EQ(k.params[1].size, 4);
  EXPECT_EQ(k.params[2].arg, 1);
  EXPECT_EQ(k.params[3].size, 2);
  EXPECT_EQ(k.params[4].kind, Slot::Kind::Grid);
}

// The loader facts: an sm_80 cubin does not load on sm_90 and arch-specific code runs only on its
// exact capability, so a device takes its exact cubin, else the best PTX it may JIT.
TEST(NvptxCode, SelectsExactCubinElseBestPtx) {
  const Code c = sample();
  EXPECT_EQ(select_image(c, 90), &c.images[2]);  // sm_90 cubin
  EXPECT_EQ(select_image(c, 89), &c.images[0]);  // sm_90a PTX is not for 8.9: sm_80 PTX
  EXPECT_EQ(select_image(c, 100), &c.images[0]); // sm_90a neither; the cubin neither
  EXPECT_EQ(select_image(c, 75), nullptr);
  Code ptx_only = c;
  ptx_only.images.pop_back();
  EXPECT_EQ(select_image(ptx_only, 90), &ptx_only.images[1]); // 90a PTX beats 80 PTX on sm_90
}

TEST(NvptxCode, EveryTruncationIsAnErrorNamingTheField) {
  const std::vector<uint8_t> blob = serialize_code(sample());
  for (size_t n = 0; n < blob.size(); ++n) {
    Code out;
    std::string error;
    EXPECT_FALSE(parse_code(blob.data(), n, out, error)) << "length " << n;
    EXPECT_FALSE(error.empty());
  }
  Code out;
  std::string error;
  ASSERT_FALSE(parse_code(blob.data(), 16, out, error));
  EXPECT_NE(error.find("truncated reading image kind at offset 16"), std::string::npos) << error;
}

TEST(NvptxCode, RefusesBadMagicNewerVersionAndBadFields) {
  std::vector<uint8_t> blob = serialize_code(sample());
  Code out;
  std::string error;
  std::vector<uint8_t> bad = blob;
  bad[0] = 'X';
  EXPECT_FALSE(parse_code(bad.data(), bad.size(), out, error));
  EXPECT_EQ(error, "not an nvptx blob (bad magic)");
  bad = blob;
  bad[8] = 3; // version 3
  EXPECT_FALSE(parse_code(bad.data(), bad.size(), out, error));
  EXPECT_EQ(error, "nvptx blob version 3 is not supported (this reader: 2)");
  bad = blob;
  bad.push_back(0);
  EXPECT_FALSE(parse_code(bad.data(), bad.size(), out, error));
  EXPECT_EQ(error, "nvptx blob has 1 trailing bytes");
  Code c = sample();
  c.kernels[0].params[6].kind = static_cast<Slot::Kind>(7); // past GridBase
  bad = serialize_code(c);
  EXPECT_FALSE(parse_code(bad.data(), bad.size(), out, error));
  EXPECT_EQ(error, "kernel 'add_kernel' param 6 has unknown kind 7");
  c = sample();
  c.kernels[0].params[0].size = 9;
  bad = serialize_code(c);
  EXPECT_FALSE(parse_code(bad.data(), bad.size(), out, error));
  EXPECT_EQ(error, "kernel 'add_kernel' param 0 has size 9 (1..8 bytes)");
}

} // namespace
} // namespace tl::nvptx
