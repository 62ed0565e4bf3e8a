// Running generated Tile IR on a HAL device: compile for the device's target, move host tensors
// in and out, launch, and time operations with device events.
// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "conform.h"

#include "tl/interpreter/host_tensor.h"

#include <array>
#include <functional>
#include <string>
#include <variant>
#include <vector>

namespace tl::conform {

/// An executable for `target` from Tile IR text through the compiler's pipeline (default passes,
/// the target's planning passes, its code generator), as a user's compile would; throws
/// std::runtime_error with the diagnostics.
std::vector<uint8_t> compile_tlir(const std::string &tlir, const std::string &target,
                                  const Paths &paths);

/// The target a test compiles for: paths.target when the device accepts it, else what
/// compile::target_for_device chooses from the device's targets ("" when none).
std::string compile_target(const tl_device_info &info, const Paths &paths);

/// A kernel argument: a host tensor (copied in, and back out after the launch) or a scalar.
using KernelArg = std::variant<interp::HostTensor *, int64_t, double>;

/// Compiles `tlir`, runs `kernel` once over `grid` on the device and copies every tensor back.
/// HAL errors surface as hal::Error.
void run_on_device(WorkerContext &ctx, const std::string &tlir, const std::string &kernel,
                   std::array<uint64_t, 3> grid, const std::vector<KernelArg> &args);

/// Runs the same kernel on the reference interpreter (the golden semantics). With
/// `fp64_reference`, every float op is computed in fp64 without rounding (the ideal answer the
/// fp32 contract is measured against); float tensors must then hold f64 storage.
void run_on_interpreter(const std::string &tlir, const std::string &kernel,
                        std::array<uint64_t, 3> grid, const std::vector<KernelArg> &args,
                        bool fp64_reference = false);

/// Every repetition on both clocks (on a device with simulated time, repetitions stop once two
/// in a row agree: the rest would repeat them): the device's events, and the host's steady_clock
/// around record, op, record and the event's synchronize (which a device interval cannot beat).
struct Timing {
  double best_s = 0; // the shortest device interval of either kind below
  /// Per repetition: one op between two events on an idle stream (the host's launch latency
  /// inside) and the host's wall clock around it (what implausible_clock compares).
  std::vector<double> device_s, wall_s;
  /// Per repetition, on wall-clock devices: the same op queued behind a leading one, so that
  /// the stream is busy while the host queues the events and the op: the device's time alone.
  std::vector<double> queued_s;
  /// The process's CPU seconds (the kernel's count) and the host's wall seconds over all the
  /// timed repetitions: whether the work ran on this host's CPUs (host_cpu_evidence).
  double cpu_s = 0, loop_wall_s = 0;
  int ops_timed = 0; // the op's executions inside that loop (warm-ups excluded)
};
Timing time_op(const hal::Device &device, const hal::Stream &stream,
               const std::function<void()> &op, int warmup, int reps);

/// "" or why the device's clock cannot be right: on a device with wall-time events, the
/// repetition with the shortest wall time took less than 0.5 x that wall time - 0.25 ms on the
/// device (room for launch overhead and queueing, none for a clock running 2x fast). Simulated
/// time is exempt: `simulated_time` comes from the device's datasheet, never from the plugin's
/// own TL_DEVICE_SIMULATED_TIME flag (a plugin could claim it to escape the check).
std::string implausible_clock(const Timing &t, bool simulated_time);
/// Adds `more`'s per-repetition intervals (device, wall, queued) to `all`: paired rounds time
/// one repetition a round, and their clock is judged once over every round's (a single
/// repetition's wall time is as long as the scheduler made it).
void append_samples(Timing &all, const Timing &more);

/// A ready-to-launch kernel with device buffers for timing loops.
struct LoadedKernel {
  hal::Executable exe;
  uint32_t index = 0;
};
LoadedKernel load_kernel(WorkerContext &ctx, const std::string &tlir, const std::string &kernel);

} // namespace tl::conform
