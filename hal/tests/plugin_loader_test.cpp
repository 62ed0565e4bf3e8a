// Plugin-loader tests: every kind of broken plugin is listed as unavailable with a clear reason,
// and the working plugins keep working beside them.
// SPDX-License-Identifier: Apache-2.0
#include "test_support.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>

namespace tl::hal::testing {
namespace {

std::map<std::string, tl_plugin_info> by_file(const Runtime &rt) {
  std::map<std::string, tl_plugin_info> out;
  for (const tl_plugin_info &p : rt.plugins())
    out[std::filesystem::path(p.path).filename().string()] = p;
  return out;
}

TEST(PluginLoader, BrokenPluginsGetReasonsAndTheCpuDeviceStillWorks) {
  const std::string path = std::string(TL_CPU_PLUGIN) + ":" + TL_BROKEN_PLUGIN_DIR;
  Runtime rt(path.c_str(), 1);
  auto plugins = by_file(rt);
  const std::map<std::string, std::string> expected = {
      {"libtl_plugin_broken_no_entry.so", "does not export the entry point tl_vendor_plugin_entry"},
      {"libtl_plugin_broken_null_table.so", "returned no function table for ABI 1"},
      {"libtl_plugin_broken_wrong_major.so",
       "plugin ABI 99.3 does not match the runtime's ABI 1.2"},
      {"libtl_plugin_broken_small_table.so", "function table is too small (16 bytes"},
      {"libtl_plugin_broken_missing_function.so", "function table lacks stream_launch"},
      {"libtl_plugin_broken_init_fails.so", "initialize failed: no accelerator attached"},
      {"libtl_plugin_broken_unresolved.so", "tl_symbol_that_does_not_exist"},
      {"libtl_plugin_broken_device_count_fails.so", "device_count failed: driver query failed"},
      {"libtl_plugin_broken_duplicate.so", "another plugin named 'cpu' was loaded first"},
  };
  for (auto &[file, reason] : expected) {
    ASSERT_TRUE(plugins.count(file)) << file << " was not found";
    EXPECT_FALSE(plugins[file].available) << file;
    EXPECT_NE(std::string(plugins[file].reason).find(reason), std::string::npos)
        << file << ": " << plugins[file].reason;
  }
  ASSERT_TRUE(plugins.count("libtl_plugin_cpu.so"));
  EXPECT_TRUE(plugins["libtl_plugin_cpu.so"].available) << plugins["libtl_plugin_cpu.so"].reason;
  // The working device still runs a kernel.
  Device dev = rt.device("cpu");
  auto blob = compile(kVectorAdd);
  Executable exe = dev.load(blob.data(), blob.size());
  Stream s = dev.stream();
  std::vector<float> x(300, 2.0f), out(300);
  Buffer b = dev.buffer(1200);
  s.copy_to_device(x.data(), b, 1200);
  s.launch(exe, exe.find_kernel("vector_add"), {2, 1, 1},
           {tensor_arg(b, TL_DTYPE_F32, {300}), tensor_arg(b, TL_DTYPE_F32, {300}),
            tensor_arg(b, TL_DTYPE_F32, {300}), float_arg(TL_DTYPE_F32, 0.5)});
  s.copy_to_host(b, out.data(), 1200);
  s.synchronize();
  EXPECT_EQ(out, std::vector<float>(300, 3.0f));
}

TEST(PluginLoader, HalOneZeroPluginReadsTheNewFieldsAsZero) {
  // A plugin built against 1.0 fills the shorter tl_device_info: it loads, its device works, and
  // the 1.1 fields (link bandwidth, flags) read as 0, never as bytes it did not write.
  Runtime rt(TL_HAL10_PLUGIN, 1);
  auto plugins = by_file(rt);
  const tl_plugin_info &p = plugins["libtl_plugin_hal10.so"];
  ASSERT_TRUE(p.available) << p.reason;
  EXPECT_EQ(p.abi_minor, 0u);
  const tl_device_info i = rt.device("hal10").info();
  EXPECT_GT(std::strlen(i.name), 0u);
  EXPECT_GT(i.peak_bandwidth_bytes_per_s, 0.0);
  EXPECT_EQ(i.link_bandwidth_bytes_per_s, 0.0);
  EXPECT_EQ(i.flags, 0u);
  // Its table ends before the 1.2 functions (their slots hold poison): an import is refused as
  // unsupported and elapsed times come from timestamps, never through those slots.
  float mem[4];
  tl_buffer_import_desc desc{sizeof desc, mem, sizeof mem, 0};
  tl_buffer b = nullptr;
  tl_status s = tl_buffer_import(rt.device("hal10").get(), &desc, &b);
  EXPECT_EQ(tl_status_get_code(s), TL_STATUS_UNIMPLEMENTED) << tl_status_get_message(s);
  tl_status_free(s);
  Stream st = rt.device("hal10").stream();
  Event e0 = rt.device("hal10").event(), e1 = rt.device("hal10").event();
  check(tl_stream_record_event(st.get(), e0.get()));
  check(tl_stream_record_event(st.get(), e1.get()));
  st.synchronize();
  double ms = -1;
  check(tl_event_elapsed_ms(e0.get(), e1.get(), &ms));
  EXPECT_GE(ms, 0.0);
}

TEST(PluginLoader, ManifestsAndMissingFiles) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("tl-manifests-" + std::to_string(getpid()));
  fs::create_directories(dir);
  std::ofstream(dir / "a_cpu.json") << R"({"library": ")" << TL_CPU_PLUGIN << R"("})";
  std::ofstream(dir / "b_bad.json") << "{ this is not json";
  std::ofstream(dir / "c_missing.json") << R"({"library": "no/such/libtl_plugin_x.so"})";
  std::ofstream(dir / "d_nokey.json") << R"({"lib": "x.so"})";
  setenv("TL_PLUGIN_MANIFEST_DIR", dir.c_str(), 1);
  setenv("TL_PLUGIN_NO_DEFAULTS", "1", 1);
  {
    Runtime rt("/no/such/plugin.so", 1);
    auto plugins = rt.plugins();
    std::map<std::string, std::string> reasons;
    for (auto &p : plugins)
      reasons[fs::path(p.path).filename().string()] = p.reason;
    EXPECT_EQ(reasons["plugin.so"], "no such file");
    EXPECT_NE(reasons["b_bad.json"].find("bad manifest"), std::string::npos)
        << reasons["b_bad.json"];
    EXPECT_NE(reasons["d_nokey.json"].find("bad manifest"), std::string::npos);
    EXPECT_NE(reasons["libtl_plugin_x.so"].find("cannot load library"), std::string::npos)
        << reasons["libtl_plugin_x.so"];
    EXPECT_EQ(reasons["libtl_plugin_cpu.so"], "");
    EXPECT_NO_THROW(rt.device("cpu"));
  }
  unsetenv("TL_PLUGIN_MANIFEST_DIR");
  unsetenv("TL_PLUGIN_NO_DEFAULTS");
  fs::remove_all(dir);
}

TEST(PluginLoader, NoPluginsMeansNoDevicesNotACrash) {
  setenv("TL_PLUGIN_NO_DEFAULTS", "1", 1);
  setenv("TL_PLUGIN_MANIFEST_DIR", "/nonexistent", 1);
  {
    Runtime rt(nullptr, 1);
    EXPECT_TRUE(rt.devices().empty());
    try {
      rt.device("cpu");
      FAIL();
    } catch (const Error &e) {
      EXPECT_EQ(e.code(), TL_STATUS_NOT_FOUND);
      EXPECT_NE(std::string(e.what()).find("devices: none"), std::string::npos);
    }
  }
  unsetenv("TL_PLUGIN_NO_DEFAULTS");
  unsetenv("TL_PLUGIN_MANIFEST_DIR");
}

} // namespace
} // namespace tl::hal::testing
