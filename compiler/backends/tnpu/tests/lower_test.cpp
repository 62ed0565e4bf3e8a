// The shape of the tnpu lowering's programs: semaphores instead of fences, the DMA engines used,
// dots accumulating in place, software-pipelined loops, scratchpad planning, the vector
// configuration and DMA descriptor caches, scalar read-backs. Results against the interpreter
// are checked on the simulator in vendors/npusim/tests.
// SPDX-License-Identifier: Apache-2.0
#include "tl/backends/tnpu.h"
#include "tl/ir/parser.h"
#include "tl/ir/verifier.h"
#include "tl/npu/assembler.h"

#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <regex>
#include <sstream>

namespace tl::tnpu {
namespace {

std::string read_text(const std::string &path) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

/// The first kernel of `text` compiled with `o`.
Kernel compile_first(const std::string &text, const CompileOptions &o = {}) {
  ir::Diagnostics d;
  auto m = ir::parse(text, "test.tlir", d);
  if (!m || !ir::verify(*m, d))
    throw std::runtime_error(d.str());
  std::vector<uint8_t> code;
  if (std::string e = compile(*m, o, code); !e.empty())
    throw std::runtime_error(e);
  std::vector<Kernel> kernels;
  std::string error;
  if (!parse_code(code.data(), code.size(), kernels, error))
    throw std::runtime_error(error);
  return kernels.at(0);
}

/// Its disassembly.
std::string lower(const std::string &text, const CompileOptions &o = {}) {
  return npu::isa::disassemble(compile_first(text, o).program);
}

int count(const std::string &text, const std::string &re) {
  const std::regex r(re);
  return int(
      std::distance(std::sregex_iterator(text.begin(), text.end(), r), std::sregex_iterator()));
}

const char *kElementwise = R"(
kernel @k(%x: tensor<?x?xf32>, %y: tensor<?x?xf32>) {
  %i = program_id {axis = 0} : i32
  %z = constant {value = 0} : i32
  %a = load %x, %i, %z : tile<64x64xf32>
  %b = exp %a : tile<64x64xf32>
  %c = add %a, %b : tile<64x64xf32>
  store %y, %i, %z, %c
  %d = load %y, %i, %z : tile<64x64xf32>
  store %x, %i, %z, %d
  return
}
)";

TEST(TnpuLower, SemaphoresInsteadOfFencesAndTheyBalance) {
  const std::string s = lower(kElementwise);
  EXPECT_EQ(count(s, "fence"), 0) << s;
  // Straight-line code: every semaphore is signalled as often as it is waited for.
  std::map<std::string, int> balance;
  const std::regex sem(R"(sem\.(sig|wait) \w+, (s\d+), 1)");
  for (auto it = std::sregex_iterator(s.begin(), s.end(), sem); it != std::sregex_iterator(); ++it)
    balance[(*it)[2]] += (*it)[1] == "sig" ? 1 : -1;
  EXPECT_FALSE(balance.empty()) << s;
  for (const auto &[name, n] : balance)
    EXPECT_EQ(n, 0) << name;
  // The load of y waits for the store to y (read after write through HBM) on the other engine.
  EXPECT_GE(count(s, R"(sem\.wait dma\d)"), 1) << s;
}

TEST(TnpuLower, DmaEnginesFromTheOptions) {
  CompileOptions one;
  one.dma_engines = 1;
  EXPECT_EQ(count(lower(kElementwise, one), "dma1"), 0);
  EXPECT_GE(count(lower(kElementwise), R"(dma\.(ld|st) dma1)"), 1);
}

TEST(TnpuLower, KLoopAccumulatesInPlace) {
  // kernels/tlir/gemm.tlir: the carried accumulator, the dot's result and the loop's result share
  // one slot: no copies, mx.mma into it; its loads are prefetched (the body is emitted once per
  // buffer).
  const std::string s = lower(read_text(TL_KERNELS_DIR "/gemm.tlir"));
  EXPECT_EQ(count(s, R"(v\.copy)"), 0) << s;
  EXPECT_EQ(count(s, R"(mx\.mm )"), 0) << s;
  EXPECT_EQ(count(s, R"(mx\.mma)"), 3) << s; // 32x16 @ 16x32: one weight block per copy
}

TEST(TnpuLower, PipelineDepthAndSplitTransfers) {
  const std::string text = read_text(TL_KERNELS_DIR "/gemm_tnpu.tlir");
  for (int depth : {2, 3, 4}) {
    CompileOptions o;
    o.pipeline_depth = depth;
    const std::string s = lower(text, o);
    // 1024x256 of b in 128x128 weight blocks, once per body copy.
    EXPECT_EQ(count(s, R"(mx\.pre)"), 16 * depth) << depth;
    // Each 256 KiB chunk of a: split over both engines, prefetched depth - 1 times before the
    // loop and once per copy; b's slice once, the stores once per copy.
    EXPECT_EQ(count(s, R"(dma\.ld dma0)"), 1 + (depth - 1) + depth) << depth;
    EXPECT_EQ(count(s, R"(dma\.st dma1)"), depth) << depth;
  }
}

TEST(TnpuLower, LoopFreeKernelsBecomePersistent) {
  // The vector add of kernels/tlir: its loads are prefetched across the core's grid programs.
  const std::string text = read_text(TL_KERNELS_DIR "/vector_add.tlir");
  const Kernel k = compile_first(text);
  EXPECT_TRUE(k.persistent);
  const std::string s = npu::isa::disassemble(k.program);
  EXPECT_EQ(count(s, "coreid"), 1) << s;
  EXPECT_EQ(count(s, "fence"), 0) << s;
  CompileOptions plain;
  plain.persistent = false;
  EXPECT_FALSE(compile_first(text, plain).persistent);
  // Too many scalars for the grid loop's registers: lowered the ordinary way.
  std::string many = "kernel @k(%x: tensor<?xf32>, %y: tensor<?xf32>";
  std::string body = "  %i = program_id {axis = 0} : i32\n  %t = load %x, %i : tile<64xf32>\n";
  std::string last = "%t";
  for (int i = 0; i < 12; ++i) {
    const std::string n = std::to_string(i);
    many += ", %s" + n + ": f32";
    body += "  %v" + n + " = splat %s" + n + " : tile<64xf32>\n  %a" + n + " = add " + last +
            ", %v" + n + " : tile<64xf32>\n";
    last = "%a" + n;
  }
  many += ") {\n" + body + "  store %y, %i, " + last + "\n  return\n}\n";
  EXPECT_FALSE(compile_first(many).persistent);
}

TEST(TnpuLower, ScratchpadOverflowNamesTheTile) {
  CompileOptions small;
  small.sram_bytes = 40 << 10; // a, b and c are live at once (48 KiB); d reuses their space
  try {
    lower(kElementwise, small);
    FAIL() << "expected an overflow";
  } catch (const std::runtime_error &e) {
    EXPECT_EQ(std::string(e.what()),
              "test.tlir:7:3: error: tnpu: tile tile<64x64xf32> does not fit the scratchpad (tile "
              "%c, 16384 bytes, while 32768 bytes of other tiles are live, of 40960)");
  }
}

TEST(TnpuLower, FloatToIntCastsRoundByTheirModeOnTheConvert) {
  // v.cvt's rm carries the cast's mode (rd 2, ru 3, rne 0); a cast without one truncates (rtz 1).
  const std::string s = lower(R"(
kernel @k(%x: tensor<?xf32>, %a: tensor<?xi32>, %b: tensor<?xi8>, %c: tensor<?xi8>,
          %d: tensor<?xi32>) {
  %z = constant {value = 0} : i32
  %v = load %x, %z : tile<64xf32>
  %p = cast %v {rounding = "rd"} : tile<64xi32>
  store %a, %z, %p
  %q = cast %v {rounding = "ru"} : tile<64xi8>
  store %b, %z, %q
  %r = cast %v {rounding = "rne"} : tile<64xi8>
  store %c, %z, %r
  %t = cast %v : tile<64xi32>
  store %d, %z, %t
  return
}
)");
  // The rm each v.cvt runs with, in program order (the program may repeat the four casts).
  std::string modes;
  const std::regex cfg(R"(v\.cfgi rm, (\d)|v\.cvt )");
  char rm = '?';
  for (auto it = std::sregex_iterator(s.begin(), s.end(), cfg); it != std::sregex_iterator(); ++it)
    if ((*it)[1].matched)
      rm = (*it)[1].str()[0];
    else
      modes += rm;
  ASSERT_FALSE(modes.empty()) << s;
  for (size_t i = 0; i < modes.size(); i += 4)
    EXPECT_EQ(modes.substr(i, 4), "2301") << s;
}

TEST(TnpuLower, VectorConfigurationIsSetOnlyWhenItChanges) {
  // exp and add: one n / rows / t / u for both; the loop head forgets what is known.
  const std::string s = lower(kElementwise);
  EXPECT_EQ(count(s, R"(v\.cfgi n, 4096)"), 1) << s;
  EXPECT_EQ(count(s, R"(v\.cfgi t, )"), 1) << s;
  const std::string loop = lower(R"(
kernel @k(%x: tensor<?xf32>, %n: i32) {
  %z = constant {value = 0} : i32
  %one = constant {value = 1} : i32
  %a = load %x, %z : tile<64xf32>
  %b = exp %a : tile<64xf32>
  %r = for %i = %z to %n step %one iter_args(%c = %b) : tile<64xf32> {
    %d = mul %c, %c : tile<64xf32>
    yield %d
  }
  store %x, %z, %r
  return
}
)");
  EXPECT_EQ(count(loop, R"(v\.cfgi n, 64)"), 2) << loop;
}

// The DMA descriptor keeps its fields across transfers: two loads and a store of same-typed
// blocks set the element size and the first indices once (the layouts' two paths set l0 and l1
// alike, so the join after them keeps them), and again after a loop (its head forgets what is
// known). A cache that forgot nothing would set them once in all (and run a transfer after the
// loop with what the loop body left); one that kept nothing, per transfer (4 each).
TEST(TnpuLower, DmaDescriptorIsSetOnlyWhenItChanges) {
  const std::string s = lower(R"(
kernel @k(%x: tensor<?x?xf32>, %y: tensor<?x?xf32>, %o: tensor<?x?xf32>, %n: i32) {
  %z = constant {value = 0} : i32
  %a = load %x, %z, %z : tile<16x64xf32>
  %b = load %y, %z, %z : tile<16x64xf32>
  %c = add %a, %b : tile<16x64xf32>
  store %o, %z, %z, %c
  %one = constant {value = 1} : i32
  %r = for %i = %z to %n step %one iter_args(%s = %c) : tile<16x64xf32> {
    %d = add %s, %a : tile<16x64xf32>
    yield %d
  }
  store %o, %z, %z, %r
  return
}
)");
  EXPECT_EQ(count(s, R"(dma\.cfgi esize, 4)"), 2) << s;
  EXPECT_EQ(count(s, R"(dma\.cfgi l2, 0)"), 2) << s;
  EXPECT_EQ(count(s, R"(dma\.(ld|st) )"), 4) << s;
}

TEST(TnpuLower, ScalarsFromTilesWaitForTheVectorUnitOnly) {
  // softmax.tlir reduces tiles to f32 scalars and computes with them: each read-back is a
  // vec -> cp semaphore pair (s63, outside QueueSync's), never a fence.
  const std::string s = lower(read_text(TL_KERNELS_DIR "/softmax.tlir"));
  EXPECT_EQ(count(s, "fence"), 0) << s;
  const int waits = count(s, R"(sem\.wait cp, s63, 1)");
  EXPECT_GE(waits, 2) << s;
  EXPECT_EQ(count(s, R"(sem\.sig vec, s63, 1)"), waits) << s;
  EXPECT_GE(count(s, R"(ldw r\d+, r0, )"), waits) << s;
}

TEST(TnpuLower, IndexedOpsFenceOnlyOnTheirErrorPath) {
  // The index check reads one byte back; only the path that names an out-of-bounds index fences
  // (its probing gather must fault before the program ends).
  const char *text = R"(
kernel @k(%x: tensor<?xf32>, %i: tensor<?xi32>, %y: tensor<?xf32>) {
  %z = constant {value = 0} : i32
  %idx = load %i, %z : tile<16xi32>
  %g = gather %x, %idx : tile<16xf32>
  scatter %y, %idx, %g
  return
}
)";
  CompileOptions plain;
  plain.persistent = false;
  const std::string s = lower(text, plain);
  EXPECT_EQ(count(s, "fence"), 2) << s;
  EXPECT_EQ(count(s, R"(dma\.gather)"), 3) << s; // the gather and each op's probe
  EXPECT_EQ(count(s, R"(dma\.scatter)"), 1) << s;
  // Persistent (the default): the same in each of the grid loop's body copies.
  const std::string p = lower(text);
  EXPECT_EQ(count(p, "fence"), 2 * plain.pipeline_depth) << p;
  EXPECT_EQ(count(p, R"(dma\.scatter)"), plain.pipeline_depth) << p;
}

TEST(TnpuLower, PrefetchedSplatOfAVectorScalarIsADmaFill) {
  // %ms splats a scalar the vector unit computed before the loop; the pipelined loop prefetches
  // it like a load, so it is a DMA fill of the scalar read back once before the loop, never a
  // v.scopy broadcast that the body copies would not wait for.
  const std::string s = lower(R"(
kernel @k(%x: tensor<?xf32>, %y: tensor<?xf32>) {
  %z = constant {value = 0} : i32
  %c64 = constant {value = 64} : i32
  %first = load %x, %z {padding = 0.0} : tile<64xf32>
  %m = reduce %first {axis = 0, kind = "max"} : f32
  %n64 = dim %x {axis = 0} : i64
  %n = cast %n64 : i32
  for %j = %z to %n step %c64 {
    %t = load %x, %j {padding = 0.0} : tile<64xf32>
    %ms = splat %m : tile<64xf32>
    %d = sub %t, %ms : tile<64xf32>
    store %y, %j, %d
    yield
  }
  return
}
)");
  EXPECT_EQ(count(s, R"(v\.scopy)"), 0) << s;
  const int depth = CompileOptions{}.pipeline_depth;
  EXPECT_EQ(count(s, R"(v\.sub)"), depth) << s; // the body once per buffer: pipelined
  EXPECT_EQ(count(s, R"(sem\.wait cp, s63, 1)"), 1) << s;
}

} // namespace
} // namespace tl::tnpu
