// Where the default chip's config is: the one the npusim device simulates and the tnpu target
// compiles for when nothing names another.
// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <string>

namespace tl::npu {

/// The default chip (default.json): `chips/` beside the library or executable holding this code
/// (an installed Python package's tl/_lib, the build's lib/), else the source tree's sim/configs.
std::string default_config_path();

} // namespace tl::npu
