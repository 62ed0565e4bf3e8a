// Host anchors: how the kit judges the speed of a device that runs on the host (the cpu plugin)
// when no datasheet file applies. The kit measures the host itself with code the plugin does
// not provide: STREAM copy and triad (threads = the CPUs this process may run on, bytes counted
// STREAM's way) for memory bandwidth; for copies of buffers (the "link" is host memory, and
// device-to-device) the best of memcpy and the STREAM copy forms; and the f32 peak from the
// CPU's vector width and FMA pipes (CPUID) times a clock it times itself (a dependent add chain
// on every thread). Once before the plugin loads (the run's datasheet), then in paired rounds
// beside each timing test, with a guard that the plugin's threads stayed idle
// (conformance/README.md, "Host anchors", "Paired rounds").
// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "conform.h"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace tl::conform {

/// The piece sizes (f32 elements: 16, 64 and 256 KiB) the STREAM anchors hand to their threads:
/// the bandwidth suite's kernel blocks, one program per block on the device (suite_bandwidth.cpp
/// times each and the best counts), so the anchor gets every choice the device gets and a device
/// cannot look faster than the host's memory only because the kit chose a worse piece.
inline constexpr size_t kStreamPieces[] = {4096, 16384, 65536};
/// Timed passes of each anchor kernel at each piece size where a test does not set its own
/// (`anchor_reps`): 10 x 3 piece sizes, the 30 passes a kernel had when it had one piece size.
inline constexpr int kAnchorReps = 10;
/// memcpy's pieces (1 MiB of f32), as the cpu plugin's copies split theirs (vendors/cpu).
inline constexpr size_t kMemcpyPiece = size_t(1) << 18;

/// The anchors the kit measured: each figure is the best over the kernels' loop forms and piece
/// sizes of `reps` timed passes each.
struct HostAnchors {
  bool ok = false;
  int threads = 0;               // CPUs in this process's affinity mask
  uint64_t array_bytes = 0;      // each STREAM array, and each memcpy
  int reps = 0;                  // timed passes of each kernel at each piece size
  double copy_bytes_per_s = 0;   // c = a: 2 x array_bytes per pass
  double triad_bytes_per_s = 0;  // a = b + s c: 3 x array_bytes per pass
  double memcpy_bytes_per_s = 0; // threaded memcpy, each byte counted once
  /// Every kernel's best at every piece size, as "<kernel>/<piece elements>" (bytes counted as
  /// the figures above: STREAM's way, memcpy once): which choice gave each figure.
  json by_choice = json::object();
  double clock_hz = 0;       // per thread, timed concurrently on every thread (mean)
  double peak_flops_f32 = 0; // lanes x fma pipes x 2 x sum of the threads' clocks
  int f32_lanes = 0, fma_pipes = 0;
  std::string cpu, peak_rule; // CPUID vendor/family/model and the table row applied
  double wall_s = 0;          // the whole measurement
  double other_cpu_s = 0;     // process CPU time not spent by the anchor's own threads
  std::string loadavg;        // /proc/loadavg when measured (the host's other load)

  json to_json() const;
  static HostAnchors from_json(const json &j);
};

/// The anchors' kernels: STREAM copy and triad, each with plain stores and with streaming stores
/// in two loop forms (two lines an iteration; llvm-cpu's 1 KiB runs of loads, then of stores):
/// the best of the three counts; and memcpy in 1 MiB pieces.
enum class AnchorKernel {
  Copy,
  CopyStreaming,
  CopyStreamingKiB,
  Triad,
  TriadStreaming,
  TriadStreamingKiB,
  Memcpy
};
constexpr int kAnchorKernels = 7;
const char *anchor_kernel_name(AnchorKernel k);

/// One pass over the arrays in pieces of `piece` elements; the timed ones count (best of them
/// per kernel and piece size).
struct AnchorPass {
  AnchorKernel kernel;
  size_t piece;
  bool timed;
};

/// The passes measure_host_anchors makes, in order: each kernel at each of its piece sizes
/// (kStreamPieces; memcpy kMemcpyPiece) a warm-up pass, then `reps` timed ones, so that every
/// timed pass starts from the caches as the same kernel leaves them (as the device's timed runs
/// follow a warm-up of the same operation). Not interleaved: a pass that writes through the
/// caches leaves dirty lines that a following streaming-store pass pays to write back (the old
/// order measured STREAM copy 15 % low; conformance/README.md).
std::vector<AnchorPass> anchor_schedule(int reps);

/// The anchor's three arrays (first touched by the threads that stream them) and its kernels:
/// one pass at a time, for measure_host_anchors and for the rounds a bandwidth test pairs with
/// the device's repetitions (anchor_round).
class AnchorBench {
public:
  AnchorBench(uint64_t array_bytes, int threads);
  ~AnchorBench();
  /// One pass of `kernel` over the arrays in pieces of `piece` elements, on threads() threads:
  /// bytes per second counted as HostAnchors counts them (STREAM's way; memcpy once).
  double pass(AnchorKernel kernel, size_t piece);
  int threads() const;
  uint64_t array_bytes() const;
  double helper_cpu_s() const; // the passes' helper threads' CPU seconds so far
  /// Cycles per second per thread over one window of `window_s` seconds on every thread at
  /// once (a dependent add chain; the mean over the window, time the scheduler took counts).
  double clock_window(double window_s);
  /// "" or where the arrays are not what the passes must have left (STREAM's check), given
  /// whether copies and triads ran (copies first).
  std::string wrong_values(bool copied, bool triads) const;

private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// One paired round of a bandwidth test's anchor: each of its loop forms at each piece size
/// (the kernels of `kind`: copy and triad their three forms in kStreamPieces; d2d, h2d, d2h the
/// three STREAM copy forms and memcpy, all in kMemcpyPiece, the cpu plugin's pieces), a warm-up
/// pass then `reps` timed ones each; the best, counted as the test of `kind` counts its bytes:
/// copy -> STREAM copy, triad -> STREAM triad, d2d -> read + write, h2d/d2h -> each byte once;
/// "memory": all seven kernels, memcpy x 2 (the datasheet's memory bandwidth: the performance
/// suite's roofline). A bench runs one kind.
struct AnchorRound {
  double bytes_per_s = 0;
  double clock_hz = 0;                // clock_round's figure (per thread)
  std::string choice;                 // "<kernel>/<piece>" that gave it
  json by_choice = json::object();    // each choice's best this round
  int samples_per_choice = 0;         // timed passes of each choice
  double wall_s = 0, other_cpu_s = 0; // as HostAnchors': the plugin's threads must be idle
  std::string wrong;                  // STREAM's check after the round
};
AnchorRound anchor_round(AnchorBench &bench, const std::string &kind, int reps);
/// How many piece sizes anchor_round times each STREAM loop form at for `kind` (3 for memory,
/// copy and triad; 1 for the copies of buffers): a round of `reps` times each form this many x
/// `reps` times, and a device's figure is the best of as many samples (its blocks x intervals).
int anchor_pieces_per_form(const std::string &kind);

/// "" or why the round's anchor was disturbed by the plugin: the process's CPU time not spent
/// by the anchor's threads over 10 ms + 5 % of the round's wall time (a device judged on host
/// anchors must be idle while they run; a plugin that spins its threads to slow them fails).
std::string anchor_busy(const AnchorRound &ar, int round);

/// The index of the paired round (an object with "ratio") whose ratio is the median; with an
/// odd count of rounds, that round's own figures give the median ratio exactly.
size_t median_round(const json &rounds);

/// One paired round of the clock for the performance suite: `reps` windows of `window_s`
/// seconds (the paired work's own duration) of a dependent add chain on the bench's threads at
/// once; clock_hz is the best window's mean per thread (a window the scheduler interrupted
/// counts the lost time, as the paired work does).
AnchorRound clock_round(AnchorBench &bench, double window_s, int reps);

/// Measures the host's anchors (about 0.5-1 s). Never touches a plugin.
HostAnchors measure_host_anchors(uint64_t array_bytes, int reps);

/// The datasheet JSON the anchors make (device: `device_name`; source says how measured).
json anchors_datasheet(const HostAnchors &a, const std::string &device_name);

/// Whether a device runs on the host by the compiler's evidence: the kit compiles its tests for
/// `target` "llvm-cpu", machine code for this host's CPU, which only a host CPU executes. (The
/// timing suites add the run-time evidence: host_cpu_evidence.)
bool host_target(const std::string &target);

/// "" or why the timed work cannot have run on the host: over the timed loops the process used
/// under a tenth of `busy_s` CPU seconds, the timed executions' best intervals summed (a host
/// device keeps at least one CPU busy for its work; an offloading plugin that blocks in
/// synchronize uses ~1 % of that). A tenth: on a host loaded 8-fold (load average 16 on 2
/// CPUs) the best interval still holds time the process waited for a CPU, which CPU time does
/// not count (measured: 0.3 of busy_s there).
std::string host_cpu_evidence(double process_cpu_s, double busy_s);

/// Process CPU seconds (CLOCK_PROCESS_CPUTIME_ID: the kernel's count, which the plugin cannot
/// lower).
double process_cpu_seconds();

} // namespace tl::conform
