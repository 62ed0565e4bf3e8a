// The object code records the x86 features it needs (TL_CPU_FEATURES_SYMBOL) and the loader
// refuses it on a host without them, with an error naming them, instead of running into an
// illegal instruction (an object compiled on another machine: a .tlx built elsewhere).
// SPDX-License-Identifier: Apache-2.0
#include "tl/backends/llvm_cpu.h"
#include "tl/ir/parser.h"
#include "tl/ir/verifier.h"

#include <gtest/gtest.h>

namespace tl::llvm_cpu {
namespace {

const char *kCopy = R"(
kernel @copy(%x: tensor<?xf32>, %o: tensor<?xf32>) {
  %z = constant {value = 0} : i32
  %t = load %x, %z : tile<64xf32>
  store %o, %z, %t
  return
}
)";

std::unique_ptr<ir::Module> parsed(const char *text) {
  ir::Diagnostics d;
  auto m = ir::parse(text, "test.tlir", d);
  if (!m || !ir::verify(*m, d))
    throw std::runtime_error(d.str());
  return m;
}

TEST(LlvmCpu, ObjectsNeedingFeaturesTheHostLacksAreRefused) {
  // A CPU with a feature this host lacks: every x86 host lacks one of the two. AVX-512 FP16
  // (Sapphire Rapids and later) is on no AMD host and no Intel one before 2023; those that have
  // it (Sapphire / Granite Rapids) lack AVX-512 VP2INTERSECT (Tiger Lake, which has no FP16).
  struct Foreign {
    const char *cpu, *feature;
    bool host_has;
  };
  const Foreign candidates[] = {
      {"sapphirerapids", "avx512fp16", bool(__builtin_cpu_supports("avx512fp16"))},
      {"tigerlake", "avx512vp2intersect", bool(__builtin_cpu_supports("avx512vp2intersect"))}};
  const Foreign *pick = nullptr;
  for (const Foreign &c : candidates)
    if (!c.host_has && !pick)
      pick = &c;
  ASSERT_NE(pick, nullptr) << "the host has both AVX-512 FP16 and VP2INTERSECT";
  auto m = parsed(kCopy);
  std::string error;
  CompileOptions other;
  other.cpu = pick->cpu;
  const std::vector<uint8_t> foreign = compile_object(*m, other, &error);
  ASSERT_FALSE(foreign.empty()) << error;
  EXPECT_EQ(load_object(foreign.data(), foreign.size(), &error), nullptr);
  EXPECT_NE(error.find("needs x86 features this host lacks"), std::string::npos) << error;
  EXPECT_NE(error.find(pick->feature), std::string::npos) << error;
  // The host's own object loads (catches a check that refuses everything).
  error.clear();
  const std::vector<uint8_t> own = compile_object(*m, CompileOptions{}, &error);
  ASSERT_FALSE(own.empty()) << error;
  EXPECT_NE(load_object(own.data(), own.size(), &error), nullptr) << error;
}

} // namespace
} // namespace tl::llvm_cpu
