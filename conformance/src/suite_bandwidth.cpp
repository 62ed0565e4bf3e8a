// The bandwidth suite: host<->device and device<->device copies and on-device copy/triad
// kernels, best of N after a warm-up, against the device's datasheet (datasheet.h), never the
// plugin's own figures: host copies count the bytes crossing the link against its bandwidth;
// the rest count by STREAM's rules (bytes the program asks to read plus those it asks to write)
// against the memory bandwidth. Rates above 1.05x the datasheet, or device intervals shorter
// than the host's wall clock allows, fail as implausible.
// SPDX-License-Identifier: Apache-2.0
#include "datasheet.h"
#include "device_run.h"
#include "host_anchor.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <iterator>
#include <memory>
#include <optional>
#include <thread>
#include <vector>

namespace tl::conform {
namespace {

constexpr double kPassFraction = 0.85;

struct BandwidthCase {
  const char *name;
  const char *kind; // h2d, d2h, d2d, copy, triad
  uint64_t mib;
  bool core;
};

const std::vector<BandwidthCase> &cases() {
  static const std::vector<BandwidthCase> c = {{"h2d", "h2d", 64, true},
                                               {"d2h", "d2h", 64, true},
                                               {"d2d", "d2d", 64, true},
                                               {"kernel_copy", "copy", 64, true},
                                               {"kernel_triad", "triad", 64, true},
                                               {"h2d.256MiB", "h2d", 256, false},
                                               {"d2h.256MiB", "d2h", 256, false},
                                               {"d2d.256MiB", "d2d", 256, false},
                                               {"kernel_triad.16MiB", "triad", 16, false}};
  return c;
}

// The on-device kernels, one program per BLOCK elements. Devices stream best at different block
// sizes (a CPU at a few pages, an NPU's DMA at hundreds of KiB), so each block size of kBlocks
// runs and the best counts, as STREAM leaves its array sizes to the tester; every block's figure
// is in the test's metrics.
// The host anchors hand out pieces of the same sizes (kStreamPieces: the anchor gets the choices
// the device gets).
constexpr int64_t kBlocks[] = {int64_t(kStreamPieces[0]), int64_t(kStreamPieces[1]),
                               int64_t(kStreamPieces[2])};
static_assert(std::size(kBlocks) == std::size(kStreamPieces));

/// Timed repetitions of each operation (each block of a kernel) against a datasheet file: on a
/// wall-clock device each times the op on an idle stream and queued behind itself (time_op),
/// 2 x kReps intervals.
constexpr int kReps = 5;
/// Against the kit's host anchors (a device on the host, no datasheet file): rounds of
/// kPairedReps repetitions of each block (2 intervals each), each round followed by the anchor's
/// 2 x kPairedReps timed passes of each loop form and piece size, so that neither side is the
/// best of a larger sample (on a noisy host the larger sample finds the higher maximum: h2d at
/// 0.79 of an anchor that was the best of 60 passes against the device's 10); an odd count of
/// rounds, so that one round's ratio is the median.
constexpr int kPairedRounds = 9, kPairedReps = 1;
constexpr const char *kKernels = R"(
kernel @copy(%a: tensor<?xf32>, %c: tensor<?xf32>) {
  %pid = program_id {axis = 0} : i32
  %b = constant {value = BLOCK} : i32
  %o = mul %pid, %b : i32
  %t = load %a, %o : tile<BLOCKxf32>
  store %c, %o, %t
  return
}

kernel @triad(%b: tensor<?xf32>, %c: tensor<?xf32>, %a: tensor<?xf32>, %s: f32) {
  %pid = program_id {axis = 0} : i32
  %blk = constant {value = BLOCK} : i32
  %o = mul %pid, %blk : i32
  %bt = load %b, %o : tile<BLOCKxf32>
  %ct = load %c, %o : tile<BLOCKxf32>
  %ss = splat %s : tile<BLOCKxf32>
  %sc = mul %ss, %ct : tile<BLOCKxf32>
  %at = add %bt, %sc : tile<BLOCKxf32>
  store %a, %o, %at
  return
}
)";

std::string kernels_for_block(int64_t block) {
  std::string text = kKernels;
  const std::string b = std::to_string(block);
  for (size_t at = text.find("BLOCK"); at != std::string::npos; at = text.find("BLOCK", at + 1))
    text.replace(at, 5, b);
  return text;
}

/// After the timed runs: whether the destination holds what the operation must have written
/// (a copy: the source's bytes, 0x01 each; the triad: b + 3c of those floats, within 2 ulp).
/// "" or what is wrong: a plugin whose copies or launches skip the work cannot pass on speed.
std::string check_output(const std::string &kind, const std::vector<char> &got) {
  if (kind != "triad") {
    for (size_t i = 0; i < got.size(); ++i)
      if (got[i] != 1)
        return "byte " + std::to_string(i) + " of the destination is " +
               std::to_string(int(got[i])) + " after the timed " + kind + ", not the source's 1";
    return {};
  }
  float x;
  const uint32_t bits = 0x01010101u;
  std::memcpy(&x, &bits, 4);
  const double want = double(x) + 3.0 * double(x);
  for (size_t i = 0; i + 4 <= got.size(); i += 4) {
    float v;
    std::memcpy(&v, &got[i], 4);
    if (!(std::fabs(double(v) - want) <= 2 * std::ldexp(std::fabs(want), -23)))
      return "element " + std::to_string(i / 4) + " of the triad's output is " + std::to_string(v) +
             " after the timed launches, not b + 3c = " + std::to_string(want);
  }
  return {};
}

/// The shortest pass a bandwidth test times at the datasheet's peak (see run_bandwidth).
constexpr double kMinPassSeconds = 5e-5;

/// Host copies cross the link; everything else moves through device memory.
bool over_link(const std::string &kind) { return kind == "h2d" || kind == "d2h"; }
const char *peak_figure(const std::string &kind) {
  return over_link(kind) ? "link_bandwidth_bytes_per_s" : "memory_bandwidth_bytes_per_s";
}

/// The kit's figure a test of `kind` is judged on where the device runs on the host: STREAM copy
/// or triad for the kernels; for a copy of buffers the host's best copy (memcpy or a STREAM copy
/// form, anchor_round), read + write counted for d2d, each byte once over the "link".
std::string host_anchor_figure(const std::string &kind) {
  return kind == "copy"    ? "stream_copy"
         : kind == "triad" ? "stream_triad"
         : kind == "d2d"   ? "host_copy_x2"
                           : "host_copy";
}

std::vector<TestDef> list_bandwidth(const ListContext &) {
  std::vector<TestDef> out;
  for (const BandwidthCase &c : cases())
    out.push_back({std::string("bandwidth.") + c.name,
                   "bandwidth",
                   c.core ? "core" : "full",
                   300,
                   true,
                   {{"kind", c.kind},
                    {"size_mib", c.mib},
                    {"min_pass_s", kMinPassSeconds},
                    {"warmup", 1},
                    {"reps", kReps},
                    {"anchor_reps", kReps}, // the worker's measurement before the plugin loads
                    {"paired_rounds", kPairedRounds},
                    {"paired_reps", kPairedReps},
                    {"blocks", c.kind == std::string("copy") || c.kind == std::string("triad")
                                   ? json(kBlocks)
                                   : json::array()},
                    {"pass_fraction_of_peak", kPassFraction},
                    {"peak", std::string("datasheet.") + peak_figure(c.kind)},
                    // no datasheet file, a device on the host: the kit's own measurement
                    {"host_anchor", host_anchor_figure(c.kind)},
                    {"implausible_above_fraction", kImplausibleFraction},
                    {"implausible_device_s_below", "0.5 * wall_s - 0.00025"}}});
  return out;
}

Outcome run_bandwidth(WorkerContext &ctx, const TestDef &t) {
  const std::string kind = t.params["kind"];
  uint64_t size = t.params["size_mib"].get<uint64_t>() << 20;
  // No verdict without the datasheet: its error (a missing or misspelt figure, named) before
  // anything is timed, so that no timing check can stand in for it.
  const Datasheet ds = datasheet_for(ctx);
  if (!ds.ok)
    return Outcome::fail(ds.reason, {{"datasheet", ds.summary()}});
  // STREAM's rule, sized by the datasheet: a pass moves at least min_pass_s of traffic at the
  // declared peak, so that a fast memory is measured past its caches and the launch overhead
  // (64 MiB is 13 us of an H200's HBM, about its L2); power-of-two MiB, never below size_mib.
  const double want = (over_link(kind) ? ds.link_bandwidth : ds.memory_bandwidth) *
                      t.params["min_pass_s"].get<double>();
  while (static_cast<double>(size) < want && size < (uint64_t(1) << 30)) // i32 offsets
    size *= 2;
  const int warmup = t.params["warmup"], reps = t.params["reps"];
  if (ctx.info.memory_bytes < 4 * size)
    return Outcome::not_supported("the device has less than 4x the " + std::to_string(size >> 20) +
                                  " MiB the test needs");
  hal::Device dev(ctx.device);
  hal::Stream s = dev.stream();
  hal::Buffer a = dev.buffer(size, TL_BUFFER_DEVICE_LOCAL),
              b = dev.buffer(size, TL_BUFFER_DEVICE_LOCAL),
              c = dev.buffer(size, TL_BUFFER_DEVICE_LOCAL);
  std::vector<char> host(size, 1);
  std::memset(host.data(), 1, size); // touch every page before timing
  s.copy_to_device(host.data(), b, size);
  s.copy_to_device(host.data(), c, size);
  s.synchronize(); // the uploads read `host`, which the d2h case overwrites below
  const bool kernel = kind == "copy" || kind == "triad";
  const bool link = over_link(kind);
  // The host side of a link test: a host-visible buffer's memory, mapped, where the device has
  // one (a GPU's pinned memory: its DMA reads and writes it at link speed, which is what CUDA's
  // bandwidthTest measures), else the heap (pageable memory through the plugin's staging).
  std::optional<hal::Buffer> pinned;
  char *link_host = host.data();
  if (link) {
    try {
      pinned.emplace(dev.buffer(size, TL_BUFFER_HOST_VISIBLE));
      link_host = static_cast<char *>(pinned->map());
      std::memset(link_host, 1, size);
    } catch (const hal::Error &) {
      pinned.reset();
      link_host = host.data();
    }
  }
  // A host copy moves each byte across the link once; on the device a copy reads and writes
  // `size` bytes, and a = b + s * c reads two arrays and writes one.
  const double counted = (link ? 1.0 : kind == "triad" ? 3.0 : 2.0) * double(size);
  const int64_t n = static_cast<int64_t>(size / 4);
  if (kernel && compile_target(ctx.info, ctx.paths).empty())
    return Outcome::not_supported("no compiler backend for the device's targets");
  std::vector<char> readback(kind == "d2h" ? 0 : size);
  // The operations, one per block (kernels compiled once, before any timing).
  std::vector<int64_t> blocks = kernel
                                    ? std::vector<int64_t>(std::begin(kBlocks), std::end(kBlocks))
                                    : std::vector<int64_t>{0};
  std::vector<LoadedKernel> loaded(blocks.size());
  std::vector<std::function<void()>> ops;
  for (size_t bi = 0; bi < blocks.size(); ++bi) {
    const uint64_t grid =
        kernel ? static_cast<uint64_t>((n + blocks[bi] - 1) / blocks[bi]) : uint64_t(0);
    if (kind == "h2d") {
      ops.push_back([&] { s.copy_to_device(link_host, a, size); });
    } else if (kind == "d2h") {
      ops.push_back([&] { s.copy_to_host(b, link_host, size); });
    } else if (kind == "d2d") {
      ops.push_back([&] { s.copy(b, a, size); });
    } else {
      loaded[bi] = load_kernel(ctx, kernels_for_block(blocks[bi]), kind);
      const LoadedKernel &k = loaded[bi]; // loaded is not resized: the reference stays valid
      if (kind == "copy") {
        ops.push_back([&s, &k, &a, &b, grid, n] {
          s.launch(k.exe, k.index, {grid, 1, 1},
                   {hal::tensor_arg(b, TL_DTYPE_F32, {n}), hal::tensor_arg(a, TL_DTYPE_F32, {n})});
        });
      } else {
        ops.push_back([&s, &k, &a, &b, &c, grid, n] {
          s.launch(k.exe, k.index, {grid, 1, 1},
                   {hal::tensor_arg(b, TL_DTYPE_F32, {n}), hal::tensor_arg(c, TL_DTYPE_F32, {n}),
                    hal::tensor_arg(a, TL_DTYPE_F32, {n}), hal::float_arg(TL_DTYPE_F32, 3.0)});
        });
      }
    }
  }
  // A device on the host (a measured datasheet) is judged in paired rounds: each round times
  // every block, then the kit's anchor of the same operation (every loop form and piece size),
  // and the test's fraction is the median of the rounds' ratios. The anchor thereby sees the
  // same host as the device did a moment before: on a VM whose memory bandwidth swings 1.7x
  // from minute to minute, a best-of before and after the test judged the device on another
  // minute's memory (conformance/README.md, "Paired rounds").
  const bool paired = ds.measured;
  const int rounds = paired ? t.params["paired_rounds"].get<int>() : 1;
  const int reps_per_round = paired ? t.params["paired_reps"].get<int>() : reps;
  std::unique_ptr<AnchorBench> bench;
  if (paired)
    bench = std::make_unique<AnchorBench>(size, 0);
  json pairs = json::array();
  double best = 0;
  json per_block = json::object();
  int64_t best_block = 0;
  Timing best_timing;
  double cpu_s = 0, loop_wall_s = 0; // over every timed repetition: where the work ran
  double busy_s = 0;                 // executions x their best interval, over the blocks
  size_t device_samples = 0;         // timed intervals of each block (the same for every block)
  size_t anchor_samples = 0;         // timed passes of each anchor choice, over the rounds
  // Each block's repetitions over every round, its clock judged once on all of them.
  std::vector<Timing> clock_samples(blocks.size());
  for (int round = 0; round < rounds; ++round) {
    double round_best = 0; // the device's best rate this round, over the blocks
    for (size_t bi = 0; bi < blocks.size(); ++bi) {
      const int64_t block = blocks[bi];
      // The destination starts as zeros, so an operation that writes nothing is seen
      // afterwards. d2h writes `host`; the others write `a`, read back into `readback` (the
      // same stream orders the zeros' upload before the timed work and the read-back after).
      if (kind == "d2h") {
        std::memset(link_host, 0, size);
      } else {
        std::fill(readback.begin(), readback.end(), 0);
        s.copy_to_device(readback.data(), a, size);
      }
      const Timing timing = time_op(dev, s, ops[bi], warmup, reps_per_round);
      const double t = timing.best_s;
      cpu_s += timing.cpu_s;
      if (bi == 0)
        device_samples += timing.device_s.size() + timing.queued_s.size();
      loop_wall_s += timing.loop_wall_s;
      busy_s += timing.ops_timed * t;
      if (kind != "d2h") {
        s.copy_to_host(a, readback.data(), size);
        s.synchronize();
      } else if (link_host != host.data()) {
        s.synchronize();
        std::memcpy(host.data(), link_host, size);
      }
      const std::string at = kernel ? " (block " + std::to_string(block) + ")" : "";
      if (std::string wrong = check_output(kind, kind == "d2h" ? host : readback); !wrong.empty())
        return Outcome::fail(wrong + at);
      append_samples(clock_samples[bi], timing);
      const double rate = t > 0 ? counted / t : 0;
      if (kernel)
        per_block[std::to_string(block)] =
            std::max(per_block.value(std::to_string(block), 0.0), rate);
      round_best = std::max(round_best, rate);
      if (t > 0 && (best == 0 || t < best)) {
        best = t;
        best_block = block;
        best_timing = timing;
      }
    }
    if (!paired)
      continue;
    std::this_thread::sleep_for(std::chrono::milliseconds(50)); // the plugin's pool sleeps
    const AnchorRound ar = anchor_round(*bench, kind, 2 * reps_per_round);
    if (!ar.wrong.empty())
      return Outcome::fail(ar.wrong);
    anchor_samples += ar.samples_per_choice;
    pairs.push_back({{"device_bytes_per_s", round_best},
                     {"anchor_bytes_per_s", ar.bytes_per_s},
                     {"anchor_choice", ar.choice},
                     {"anchor_by_choice", ar.by_choice},
                     {"ratio", ar.bytes_per_s > 0 ? round_best / ar.bytes_per_s : 0},
                     {"anchor_wall_s", ar.wall_s},
                     {"anchor_other_cpu_s", ar.other_cpu_s}});
    if (std::string why = anchor_busy(ar, round); !why.empty())
      return Outcome::fail(why, {{"paired_rounds", pairs}});
  }
  for (size_t bi = 0; bi < blocks.size(); ++bi) {
    const Timing &all = clock_samples[bi];
    if (std::string why = implausible_clock(all, ds.simulated_time); !why.empty())
      return Outcome::fail(why + (kernel ? " (block " + std::to_string(blocks[bi]) + ")" : ""),
                           {{"device_s", all.device_s}, {"wall_s", all.wall_s}});
  }
  // The device's figure and the anchor it is judged on: with paired rounds, the round whose
  // ratio is the median (an odd count of rounds: that round's two figures give the fraction
  // exactly); otherwise the datasheet file's figure.
  const std::string figure =
      ds.measured ? std::string("host_anchor.") + host_anchor_figure(kind) : peak_figure(kind);
  double achieved = best > 0 ? counted / best : 0;
  double peak = link ? ds.link_bandwidth : ds.memory_bandwidth;
  if (paired && !pairs.empty()) {
    const json &median = pairs[median_round(pairs)];
    achieved = median["device_bytes_per_s"];
    peak = median["anchor_bytes_per_s"];
  }
  json m = {{"kind", kind},
            {"size_bytes", size},
            {"bytes_counted", counted},
            {"best_s", best},
            {"best_bytes_per_s", best > 0 ? counted / best : 0},
            {"reps", reps_per_round},
            {"device_s", best_timing.device_s},
            {"queued_s", best_timing.queued_s},
            {"wall_s", best_timing.wall_s},
            {"achieved_bytes_per_s", achieved},
            {"peak_bytes_per_s", peak},
            {"peak_figure", figure},
            {"datasheet", ds.summary()},
            {"declared_by_plugin_bytes_per_s",
             link ? ctx.info.link_bandwidth_bytes_per_s : ctx.info.peak_bandwidth_bytes_per_s},
            {"fraction_of_peak", peak > 0 ? achieved / peak : 0},
            {"host_memory", !link    ? "none"
                            : pinned ? "host-visible buffer"
                                     : "heap"},
            {"pass_fraction", kPassFraction},
            {"implausible_fraction", kImplausibleFraction},
            {"process_cpu_s", cpu_s},
            {"timed_wall_s", loop_wall_s},
            {"busy_s", busy_s}};
  // The sample sizes behind each side's figures (README "Host anchors": they must be equal).
  m["device_samples_per_choice"] = device_samples;
  if (paired) {
    m["paired_rounds"] = pairs;
    m["anchor_samples_per_choice"] = anchor_samples;
    m["host_anchors_before"] = ctx.host_anchors; // the run's datasheet, before the plugin loaded
  }
  if (kernel) {
    m["block"] = best_block;
    m["achieved_bytes_per_s_by_block"] = per_block;
  }
  if (ds.measured)
    if (std::string why = host_cpu_evidence(cpu_s, busy_s); !why.empty())
      return Outcome::fail(why, m);
  if (peak <= 0)
    return Outcome::fail("datasheet " + ds.path + " declares no " + figure, m);
  const std::string what = ds.measured
                               ? "the kit's " + figure + " in the same rounds (the median of " +
                                     std::to_string(rounds) + " rounds' ratios)"
                               : "the datasheet's " + figure;
  if (std::string why = implausible_fraction(achieved, peak, what); !why.empty())
    return Outcome::fail(why, m);
  if (achieved <= kPassFraction * peak)
    return Outcome::fail("achieved " + std::to_string(achieved / 1e9) +
                             " GB/s = " + std::to_string(100 * achieved / peak) + "% of " + what +
                             " " + std::to_string(peak / 1e9) + " GB/s (needs > 85%)",
                         m);
  return Outcome::pass(m);
}

} // namespace

Suite bandwidth_suite() { return {"bandwidth", list_bandwidth, run_bandwidth}; }

} // namespace tl::conform
