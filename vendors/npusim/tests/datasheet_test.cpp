// The npusim datasheet tl-conform judges against (conformance/data/datasheets/npusim.json) is
// the default chip config restated: recomputed here, so the two cannot drift apart.
// SPDX-License-Identifier: Apache-2.0
#include "tl/npu/config.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <fstream>

namespace {

TEST(NpusimDatasheet, MatchesTheChipConfig) {
  const tl::npu::ChipConfig c = tl::npu::load_config(TL_NPUSIM_CONFIGS "/default.json");
  std::ifstream f(TL_NPUSIM_DATASHEET);
  ASSERT_TRUE(f) << "cannot read " << TL_NPUSIM_DATASHEET;
  const nlohmann::json d = nlohmann::json::parse(f);
  // The device name the plugin reports for this chip (plugin.cpp's query).
  EXPECT_EQ(d.at("device"), "TNPU " + c.name + " (SystemC)");
  EXPECT_DOUBLE_EQ(d.at("memory_bandwidth_bytes_per_s").get<double>(), c.hbm.bandwidth);
  EXPECT_EQ(d.at("simulated_time"), true); // npusim's events count simulated time
  EXPECT_DOUBLE_EQ(d.at("link_bandwidth_bytes_per_s").get<double>(), c.host_link.bandwidth);
  // R x C MACs per cycle per core, 2 FLOPs each; f32 streams fp32_passes times per row.
  const double mx = 2.0 * c.core.matrix.rows * c.core.matrix.cols * c.clock * c.cores;
  const nlohmann::json &p = d.at("peak_flops");
  EXPECT_DOUBLE_EQ(p.at("f32").get<double>(), mx / c.core.matrix.fp32_passes);
  for (const char *dt : {"bf16", "f16", "i8"})
    EXPECT_DOUBLE_EQ(p.at(dt).get<double>(), mx) << dt;
  // The vector unit: `lanes` elements per cycle per core for a one-pass operation; exp takes
  // exp_passes (sim/model/src/vector.cpp's passes()).
  const double lanes = double(c.core.vector.lanes) * c.clock * c.cores;
  EXPECT_DOUBLE_EQ(d.at("vector_ops_per_s").get<double>(), lanes);
  EXPECT_DOUBLE_EQ(d.at("exp_ops_per_s").get<double>(), lanes / c.core.vector.exp_passes);
  // v.erf, v.tanh and v.sigmoid take transcendental_passes; a sigmoid may instead be v.exp, an
  // add and a v.div, so the roofline's rate is the faster of the two (a bound no kernel beats).
  const int special = std::min(c.core.vector.transcendental_passes,
                               c.core.vector.exp_passes + c.core.vector.div_passes + 1);
  EXPECT_DOUBLE_EQ(d.at("special_ops_per_s").get<double>(), lanes / special);
}

} // namespace
