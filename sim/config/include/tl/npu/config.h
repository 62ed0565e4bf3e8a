// The TNPU chip description: every figure the model uses, read from JSON (sim/configs/*.json).
// SPDX-License-Identifier: Apache-2.0
//
// Plain C++17 (the SystemC model includes it); JSON stays inside config.cpp. Quantities with units
// are strings in the file ("1 GHz", "256 GB/s", "100 ns", "4 MiB") and SI numbers here (Hz,
// bytes/s, seconds, bytes). sim/config/README.md lists every field.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>

namespace tl::npu {

struct HbmConfig {
  uint64_t size = 0;       ///< bytes
  int channels = 0;        ///< independent channels, addresses interleaved across them
  double bandwidth = 0;    ///< bytes/s, all channels together
  double latency = 0;      ///< seconds from a request's service to its data's arrival
  uint64_t interleave = 0; ///< bytes per channel before the next channel (power of two)
};

/// The host<->device link (PCIe or similar): what host copies cross, per direction.
struct HostLinkConfig {
  double bandwidth = 0; ///< bytes/s one direction
  double latency = 0;   ///< seconds before a transfer's first byte arrives
};

struct DmaConfig {
  int engines = 0;      ///< per core, each with its own queue (dma0..)
  double bandwidth = 0; ///< bytes/s one engine can issue
  double setup = 0;     ///< seconds to start a command (descriptor fetch)
};

struct SramConfig {
  uint64_t size = 0;  ///< bytes of scratchpad per core
  int banks = 0;      ///< power of two
  int bank_width = 0; ///< bytes one bank serves per cycle (power of two; the bank interleave)
};

/// What runs the matrix unit's commands: the C++ model (fast), the verilated RTL (sim/rtl), or
/// both on the same commands with the RTL's results and timing kept and the model's checked
/// against them (the cross-check report).
enum class MatrixKind { Model, Rtl, CrossCheck };
const char *matrix_kind_name(MatrixKind k);

struct MatrixConfig {
  int rows = 0;        ///< R: reduction depth of one pass (weights are R x C)
  int cols = 0;        ///< C: output columns of one pass
  int fp32_passes = 0; ///< streaming passes per row in f32 mode (bf16/f16/i8 take one)
  MatrixKind kind = MatrixKind::Model; ///< optional in the file ("model", "rtl", "cross-check")
};

struct VectorConfig {
  int lanes = 0;          ///< W elements per cycle (power of two)
  int pipeline_depth = 0; ///< cycles from issue to first result
  int exp_passes = 0;     ///< issue passes per element group for v.exp (the polynomial's length)
  /// Passes per element group of v.div, v.rem, v.sqrt, v.rsqrt (iterative digit recurrences);
  /// optional in the file.
  int div_passes = 4;
  /// Passes per element group of v.log, v.log2, v.exp2, v.tanh, v.erf, v.sigmoid, v.sin, v.cos,
  /// v.pow; optional in the file.
  int transcendental_passes = 8;
};

struct CoreConfig {
  int queue_depth = 0;      ///< commands each unit queue holds before the command processor stalls
  int issue_cycles = 0;     ///< cycles the command processor spends per instruction
  uint64_t accumulator = 0; ///< bytes of accumulator SRAM per core
  DmaConfig dma;
  SramConfig sram;
  MatrixConfig matrix;
  VectorConfig vector;
};

struct ChipConfig {
  std::string name;
  int cores = 0;
  double clock = 0; ///< Hz, one clock for every core and unit
  CoreConfig core;
  HbmConfig hbm;
  HostLinkConfig host_link;

  double cycle_seconds() const { return 1.0 / clock; }
  /// Bytes per core cycle.
  double hbm_bytes_per_cycle() const { return hbm.bandwidth / clock; }
  double dma_bytes_per_cycle() const { return core.dma.bandwidth / clock; }
};

/// A config the user got wrong; the message names the file and the field ("core.sram.banks").
class ConfigError : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

/// Parses and validates JSON text; `what` names the source in errors.
ChipConfig parse_config(const std::string &json_text, const std::string &what);
/// Reads a file and parses it.
ChipConfig load_config(const std::string &path);
/// The config as JSON text (units as strings), for stats files and round trips.
std::string config_to_json(const ChipConfig &c);

} // namespace tl::npu
