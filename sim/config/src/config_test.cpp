// Config tests: the shipped chips load; every kind of mistake is reported with its field.
// SPDX-License-Identifier: Apache-2.0
#include "tl/npu/config.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

namespace tl::npu {
namespace {

std::string read(const std::string &path) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

TEST(ChipConfig, ShippedConfigsLoad) {
  ChipConfig d = load_config(TL_NPU_CONFIGS "/default.json");
  EXPECT_EQ(d.cores, 4);
  EXPECT_DOUBLE_EQ(d.clock, 1e9);
  EXPECT_DOUBLE_EQ(d.hbm.bandwidth, 819.2e9);
  EXPECT_DOUBLE_EQ(d.hbm.latency, 120e-9);
  EXPECT_EQ(d.core.sram.size, 4u << 20);
  EXPECT_EQ(d.core.matrix.rows, 128);
  ChipConfig e = load_config(TL_NPU_CONFIGS "/edge.json");
  ChipConfig dc = load_config(TL_NPU_CONFIGS "/datacenter.json");
  EXPECT_LT(e.core.matrix.rows, d.core.matrix.rows);
  EXPECT_GT(dc.cores, d.cores);
  EXPECT_EQ(dc.hbm.size, uint64_t{96} << 30);
  // Writing and reading back gives the same figures.
  ChipConfig again = parse_config(config_to_json(dc), "rt");
  EXPECT_EQ(again.hbm.size, dc.hbm.size);
  EXPECT_DOUBLE_EQ(again.clock, dc.clock);
  EXPECT_DOUBLE_EQ(again.hbm.bandwidth, dc.hbm.bandwidth);
  EXPECT_DOUBLE_EQ(d.host_link.bandwidth, 32e9);
  EXPECT_DOUBLE_EQ(d.host_link.latency, 1e-6);
  EXPECT_DOUBLE_EQ(again.host_link.bandwidth, dc.host_link.bandwidth);
  EXPECT_DOUBLE_EQ(again.host_link.latency, dc.host_link.latency);
}

/// The default config with `from` replaced by `to`; expects an error containing `message`.
void expect_error(const std::string &from, const std::string &to, const std::string &message) {
  std::string text = read(TL_NPU_CONFIGS "/default.json");
  size_t p = text.find(from);
  ASSERT_NE(p, std::string::npos) << from;
  text.replace(p, from.size(), to);
  try {
    parse_config(text, "bad.json");
    ADD_FAILURE() << "no error for " << to;
  } catch (const ConfigError &e) {
    EXPECT_NE(std::string(e.what()).find(message), std::string::npos) << e.what();
  }
}

TEST(ChipConfig, ErrorsNameTheField) {
  expect_error("\"banks\": 32", "\"banks\": 12",
               "bad.json: field 'core.sram.banks': must be a power of two, got 12");
  expect_error("\"banks\": 32", "\"bnks\": 32", "bad.json: missing field 'core.sram.banks'");
  expect_error("\"cores\": 4", "\"cores\": 4, \"colour\": 1", "unknown field 'colour'");
  expect_error(
      "\"819.2 GB/s\"", "\"fast\"",
      "field 'hbm.bandwidth': expected a positive quantity like \"819 GB/s\", got \"fast\"");
  expect_error("\"120 ns\"", "120", "field 'hbm.latency': expected a positive quantity");
  expect_error("\"1 GHz\"", "\"-1 GHz\"", "field 'clock'");
  expect_error("\"rows\": 128", "\"rows\": 0", "field 'core.matrix.rows': must be in [1, 1024]");
  expect_error("\"engines\": 2", "\"engines\": 2.5",
               "field 'core.dma.engines': expected an integer");
  expect_error("\"interleave\": \"256 B\"", "\"interleave\": \"300 B\"",
               "field 'hbm.interleave': must be a power of two");
  expect_error("\"name\": \"tnpu-default\",", "", "missing field 'name'");
  expect_error("{", "[", "not valid JSON");
  // Sizes are bounded: a 1 KiB HBM (under the page a device reserves) or a 2 PiB SRAM is an
  // error here, not an underflow or overflow in whatever reads the config.
  expect_error("\"8 GiB\"", "\"1 KiB\"", "field 'hbm.size': must be in [1048576, ");
  expect_error("\"4 MiB\"", "\"2048 TiB\"",
               "field 'core.sram.size': must be in [1, 1125899906842624] bytes");
  // The host link is required: a config written before it existed says what is missing.
  const std::string link =
      ",\n  \"host_link\": { \"bandwidth\": \"32 GB/s\", \"latency\": \"1 us\" }";
  expect_error(link, "", "bad.json: missing field 'host_link'");
  expect_error("\"32 GB/s\"", "\"32 GHz\"", "field 'host_link.bandwidth': expected a positive");
}

TEST(ChipConfig, OptionalVectorPassesDefault) {
  std::string text = read(TL_NPU_CONFIGS "/default.json");
  const std::string opt = ", \"div_passes\": 4, \"transcendental_passes\": 8";
  const size_t p = text.find(opt);
  ASSERT_NE(p, std::string::npos);
  ChipConfig shipped = parse_config(text, "default.json");
  text.erase(p, opt.size());
  ChipConfig bare = parse_config(text, "bare.json");
  EXPECT_EQ(bare.core.vector.div_passes, 4);
  EXPECT_EQ(bare.core.vector.transcendental_passes, 8);
  EXPECT_EQ(load_config(TL_NPU_CONFIGS "/edge.json").core.vector.transcendental_passes, 12);
  EXPECT_EQ(parse_config(config_to_json(shipped), "rt").core.vector.div_passes, 4);
  expect_error("\"div_passes\": 4", "\"div_passes\": 0",
               "field 'core.vector.div_passes': must be in [1, 100], got 0");
  expect_error("\"transcendental_passes\": 8", "\"transcendental_passes\": \"8\"",
               "field 'core.vector.transcendental_passes': expected an integer");
}

// Fails if the kind is dropped on the way in or out, if an unknown kind is accepted (a typo
// would silently run the fast model), or if an RTL unit gets addresses its 32-bit ports cannot
// carry.
TEST(ChipConfig, MatrixKind) {
  EXPECT_EQ(load_config(TL_NPU_CONFIGS "/default.json").core.matrix.kind, MatrixKind::Model);
  std::string text = read(TL_NPU_CONFIGS "/default.json");
  const std::string from = "\"fp32_passes\": 4";
  const size_t p = text.find(from);
  ASSERT_NE(p, std::string::npos);
  for (MatrixKind k : {MatrixKind::Model, MatrixKind::Rtl, MatrixKind::CrossCheck}) {
    std::string t = text;
    t.replace(p, from.size(), from + ", \"kind\": \"" + matrix_kind_name(k) + "\"");
    const ChipConfig c = parse_config(t, "kind.json");
    EXPECT_EQ(c.core.matrix.kind, k);
    EXPECT_EQ(parse_config(config_to_json(c), "rt").core.matrix.kind, k);
  }
  expect_error(from, from + ", \"kind\": \"verilog\"",
               "bad.json: field 'core.matrix.kind': must be \"model\", \"rtl\" or "
               "\"cross-check\", got \"verilog\"");
  expect_error(from, from + ", \"kind\": 1", "field 'core.matrix.kind': must be");
  std::string big = text;
  big.replace(big.find("\"4 MiB\""), 7, "\"4 GiB\"");
  EXPECT_NO_THROW(parse_config(big, "big.json")); // the fast model has no such limit
  big.replace(big.find(from), from.size(), from + ", \"kind\": \"rtl\"");
  EXPECT_THROW(
      {
        try {
          parse_config(big, "big.json");
        } catch (const ConfigError &e) {
          EXPECT_NE(std::string(e.what()).find("field 'core.sram.size': must be at most 2 GiB "
                                               "with an RTL matrix unit"),
                    std::string::npos)
              << e.what();
          throw;
        }
      },
      ConfigError);
}

TEST(ChipConfig, MissingFileIsAnError) {
  EXPECT_THROW(load_config("/nonexistent/chip.json"), ConfigError);
}

} // namespace
} // namespace tl::npu
