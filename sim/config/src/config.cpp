// Reading, validating and writing TNPU chip configs (nlohmann-json stays in this file).
// SPDX-License-Identifier: Apache-2.0
#include "tl/npu/config.h"

#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <set>
#include <sstream>

namespace tl::npu {
namespace {

using json = nlohmann::json;

struct Unit {
  const char *suffix;
  double scale;
};
const Unit kFrequency[] = {{"GHz", 1e9}, {"MHz", 1e6}, {"kHz", 1e3}, {"Hz", 1}};
const Unit kBandwidth[] = {
    {"TB/s", 1e12},          {"GB/s", 1e9},        {"MB/s", 1e6}, {"TiB/s", 1099511627776.0},
    {"GiB/s", 1073741824.0}, {"MiB/s", 1048576.0}, {"B/s", 1}};
const Unit kTime[] = {{"ns", 1e-9}, {"us", 1e-6}, {"ms", 1e-3}, {"ps", 1e-12}, {"s", 1}};
const Unit kSize[] = {
    {"KiB", 1024.0}, {"MiB", 1048576.0}, {"GiB", 1073741824.0}, {"TiB", 1099511627776.0},
    {"KB", 1e3},     {"MB", 1e6},        {"GB", 1e9},           {"B", 1}};

/// Walks one JSON object, remembering the path for errors and which keys were read.
class Reader {
public:
  Reader(const json &j, std::string path, std::string what)
      : j_(j), path_(std::move(path)), what_(std::move(what)) {
    if (!j_.is_object())
      fail(path_.empty() ? "the config must be a JSON object" : "expected an object");
  }

  [[noreturn]] void fail_field(const std::string &key, const std::string &msg) const {
    throw ConfigError(what_ + ": field '" + full(key) + "': " + msg);
  }

  Reader object(const std::string &key) { return Reader(get(key), full(key), what_); }

  std::string string(const std::string &key) {
    const json &v = get(key);
    if (!v.is_string())
      fail_field(key, "expected a string");
    return v.get<std::string>();
  }

  int count(const std::string &key, int lo, int hi, bool power_of_two = false) {
    const json &v = get(key);
    if (!v.is_number_integer())
      fail_field(key, "expected an integer, got " + v.dump());
    int64_t n = v.get<int64_t>();
    if (n < lo || n > hi)
      fail_field(key, "must be in [" + std::to_string(lo) + ", " + std::to_string(hi) + "], got " +
                          std::to_string(n));
    if (power_of_two && (n & (n - 1)) != 0)
      fail_field(key, "must be a power of two, got " + std::to_string(n));
    return static_cast<int>(n);
  }

  /// A positive quantity written as "<number> <unit>", e.g. "1.2 TB/s".
  template <size_t N>
  double quantity(const std::string &key, const Unit (&units)[N], const char *example) {
    const json &v = get(key);
    std::string s = v.is_string() ? v.get<std::string>() : v.dump();
    char *end = nullptr;
    double x = std::strtod(s.c_str(), &end);
    std::string unit = end;
    unit.erase(0, unit.find_first_not_of(' '));
    if (v.is_string() && end != s.c_str())
      for (const Unit &u : units)
        if (unit == u.suffix && std::isfinite(x) && x > 0)
          return x * u.scale;
    fail_field(key, std::string("expected a positive quantity like \"") + example + "\", got " +
                        v.dump());
  }

  /// One of `names` (an optional field: `fallback` when the key is absent); returns its index.
  template <size_t N>
  int choice_or(const std::string &key, const char *const (&names)[N], int fallback) {
    if (j_.find(key) == j_.end())
      return fallback;
    const json &v = get(key);
    std::string list;
    for (size_t i = 0; i < N; ++i) {
      if (v.is_string() && v.get<std::string>() == names[i])
        return static_cast<int>(i);
      list += std::string(i == 0 ? "" : i + 1 == N ? " or " : ", ") + "\"" + names[i] + "\"";
    }
    fail_field(key, "must be " + list + ", got " + v.dump());
  }

  /// count() of an optional field: `fallback` when the key is absent.
  int count_or(const std::string &key, int lo, int hi, int fallback) {
    if (j_.find(key) == j_.end())
      return fallback;
    return count(key, lo, hi);
  }

  /// A size in [min, max] bytes (no size is 0; none is larger than 1 PiB: what reads a config
  /// adds and multiplies these without overflowing).
  uint64_t bytes(const std::string &key, const char *example, bool power_of_two = false,
                 uint64_t min = 1, uint64_t max = uint64_t(1) << 50) {
    double b = quantity(key, kSize, example);
    if (b != std::floor(b) || b > 9.2e18)
      fail_field(key, "must be a whole number of bytes");
    uint64_t n = static_cast<uint64_t>(b);
    if (n < min || n > max)
      fail_field(key, "must be in [" + std::to_string(min) + ", " + std::to_string(max) +
                          "] bytes, got " + std::to_string(n));
    if (power_of_two && (n & (n - 1)) != 0)
      fail_field(key, "must be a power of two bytes");
    return n;
  }

  /// Every key of the object must have been read: a typo is an error, not a silent default.
  void finish() const {
    for (auto it = j_.begin(); it != j_.end(); ++it)
      if (read_.count(it.key()) == 0)
        throw ConfigError(what_ + ": unknown field '" + full(it.key()) + "'");
  }

private:
  [[noreturn]] void fail(const std::string &msg) const {
    throw ConfigError(what_ + (path_.empty() ? "" : ": field '" + path_ + "'") + ": " + msg);
  }
  std::string full(const std::string &key) const { return path_.empty() ? key : path_ + "." + key; }
  const json &get(const std::string &key) {
    auto it = j_.find(key);
    if (it == j_.end())
      throw ConfigError(what_ + ": missing field '" + full(key) + "'");
    read_.insert(key);
    return *it;
  }

  const json &j_;
  std::string path_, what_;
  std::set<std::string> read_;
};

const char *const kMatrixKinds[] = {"model", "rtl", "cross-check"};

void read_core(Reader r, CoreConfig &c) {
  c.queue_depth = r.count("queue_depth", 1, 4096);
  c.issue_cycles = r.count("issue_cycles", 0, 1000);
  c.accumulator = r.bytes("accumulator", "256 KiB");
  Reader dma = r.object("dma");
  c.dma.engines = dma.count("engines", 1, 8);
  c.dma.bandwidth = dma.quantity("bandwidth", kBandwidth, "64 GB/s");
  c.dma.setup = dma.quantity("setup", kTime, "20 ns");
  dma.finish();
  Reader sram = r.object("sram");
  c.sram.size = sram.bytes("size", "4 MiB");
  c.sram.banks = sram.count("banks", 1, 1024, true);
  c.sram.bank_width = static_cast<int>(sram.bytes("bank_width", "64 B", true));
  if (c.sram.bank_width > 4096)
    sram.fail_field("bank_width", "must be at most 4 KiB");
  sram.finish();
  Reader mx = r.object("matrix");
  c.matrix.rows = mx.count("rows", 1, 1024);
  c.matrix.cols = mx.count("cols", 1, 1024);
  c.matrix.fp32_passes = mx.count("fp32_passes", 1, 16);
  c.matrix.kind = static_cast<MatrixKind>(mx.choice_or("kind", kMatrixKinds, 0));
  mx.finish();
  // The RTL's ports carry 32-bit addresses: SRAM below 2 GiB, the accumulator above it.
  if (c.matrix.kind != MatrixKind::Model && c.sram.size > (uint64_t(1) << 31))
    sram.fail_field("size", "must be at most 2 GiB with an RTL matrix unit (32-bit addresses)");
  if (c.matrix.kind != MatrixKind::Model && c.accumulator > (uint64_t(1) << 31))
    r.fail_field("accumulator", "must be at most 2 GiB with an RTL matrix unit (32-bit addresses)");
  Reader vec = r.object("vector");
  c.vector.lanes = vec.count("lanes", 1, 4096, true);
  c.vector.pipeline_depth = vec.count("pipeline_depth", 1, 1000);
  c.vector.exp_passes = vec.count("exp_passes", 1, 100);
  c.vector.div_passes = vec.count_or("div_passes", 1, 100, c.vector.div_passes);
  c.vector.transcendental_passes =
      vec.count_or("transcendental_passes", 1, 100, c.vector.transcendental_passes);
  vec.finish();
  r.finish();
}

json quantity_json(double v, const char *unit, double scale) {
  std::ostringstream s;
  s.precision(12);
  s << v / scale << " " << unit;
  return s.str();
}

} // namespace

const char *matrix_kind_name(MatrixKind k) { return kMatrixKinds[static_cast<int>(k)]; }

ChipConfig parse_config(const std::string &json_text, const std::string &what) {
  json j;
  try {
    j = json::parse(json_text);
  } catch (const json::exception &e) { // a syntax error, or a number out of range (1e999)
    throw ConfigError(what + ": not valid JSON: " + e.what());
  }
  Reader r(j, "", what);
  ChipConfig c;
  c.name = r.string("name");
  c.cores = r.count("cores", 1, 256);
  c.clock = r.quantity("clock", kFrequency, "1 GHz");
  read_core(r.object("core"), c.core);
  Reader hbm = r.object("hbm");
  // At least 1 MiB: a device reserves its first page, and a buffer needs room after it.
  c.hbm.size = hbm.bytes("size", "16 GiB", false, uint64_t(1) << 20);
  c.hbm.channels = hbm.count("channels", 1, 1024);
  c.hbm.bandwidth = hbm.quantity("bandwidth", kBandwidth, "819 GB/s");
  c.hbm.latency = hbm.quantity("latency", kTime, "120 ns");
  c.hbm.interleave = hbm.bytes("interleave", "256 B", true);
  hbm.finish();
  // Required, like every figure: h2d/d2h are certified against it, so it is declared, never
  // a default nobody chose.
  Reader link = r.object("host_link");
  c.host_link.bandwidth = link.quantity("bandwidth", kBandwidth, "32 GB/s");
  c.host_link.latency = link.quantity("latency", kTime, "1 us");
  link.finish();
  r.finish();
  return c;
}

ChipConfig load_config(const std::string &path) {
  std::ifstream f(path);
  if (!f)
    throw ConfigError(path + ": cannot open the config file");
  std::stringstream ss;
  ss << f.rdbuf();
  return parse_config(ss.str(), path);
}

std::string config_to_json(const ChipConfig &c) {
  json j;
  j["name"] = c.name;
  j["cores"] = c.cores;
  j["clock"] = quantity_json(c.clock, "MHz", 1e6);
  json &core = j["core"];
  core["queue_depth"] = c.core.queue_depth;
  core["issue_cycles"] = c.core.issue_cycles;
  core["accumulator"] = quantity_json(static_cast<double>(c.core.accumulator), "B", 1);
  core["dma"] = {{"engines", c.core.dma.engines},
                 {"bandwidth", quantity_json(c.core.dma.bandwidth, "GB/s", 1e9)},
                 {"setup", quantity_json(c.core.dma.setup, "ns", 1e-9)}};
  core["sram"] = {{"size", quantity_json(static_cast<double>(c.core.sram.size), "B", 1)},
                  {"banks", c.core.sram.banks},
                  {"bank_width", quantity_json(c.core.sram.bank_width, "B", 1)}};
  core["matrix"] = {{"rows", c.core.matrix.rows},
                    {"cols", c.core.matrix.cols},
                    {"fp32_passes", c.core.matrix.fp32_passes},
                    {"kind", matrix_kind_name(c.core.matrix.kind)}};
  core["vector"] = {{"lanes", c.core.vector.lanes},
                    {"pipeline_depth", c.core.vector.pipeline_depth},
                    {"exp_passes", c.core.vector.exp_passes},
                    {"div_passes", c.core.vector.div_passes},
                    {"transcendental_passes", c.core.vector.transcendental_passes}};
  j["hbm"] = {{"size", quantity_json(static_cast<double>(c.hbm.size), "B", 1)},
              {"channels", c.hbm.channels},
              {"bandwidth", quantity_json(c.hbm.bandwidth, "GB/s", 1e9)},
              {"latency", quantity_json(c.hbm.latency, "ns", 1e-9)},
              {"interleave", quantity_json(static_cast<double>(c.hbm.interleave), "B", 1)}};
  j["host_link"] = {{"bandwidth", quantity_json(c.host_link.bandwidth, "GB/s", 1e9)},
                    {"latency", quantity_json(c.host_link.latency, "ns", 1e-9)}};
  return j.dump(2);
}

} // namespace tl::npu
