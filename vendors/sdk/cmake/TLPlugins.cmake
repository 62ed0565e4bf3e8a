# tl_add_vendor_plugin(name sources...) and tl_add_compiler_target(name sources...): how a TL
# plugin is built, in this tree (vendors/CMakeLists.txt) and out of it (TLConfig.cmake) alike.
# They link TL::sdk (the ABI headers); a compiler target also TL::ir and nlohmann_json.
# SPDX-License-Identifier: Apache-2.0

# A plugin the TL runtime finds as lib<name>.so (name it tl_plugin_<device>): hidden symbols but
# the entry point, and every symbol resolved at link time (a stray reference fails the build, not
# the runtime's dlopen).
function(tl_add_vendor_plugin name)
  set(map "${CMAKE_CURRENT_FUNCTION_LIST_DIR}/tl_plugin_exports.map")
  add_library(${name} MODULE ${ARGN})
  set_target_properties(${name} PROPERTIES PREFIX "lib" CXX_VISIBILITY_PRESET hidden
    VISIBILITY_INLINES_HIDDEN ON LINK_DEPENDS "${map}")
  target_link_libraries(${name} PRIVATE TL::sdk)
  target_link_options(${name} PRIVATE "-Wl,--version-script=${map}" -Wl,--no-undefined)
endfunction()

# A compiler target TL's compiler finds as lib<name>.so (name it tl_target_<isa>), exporting only
# tl_target_plugin_entry; it links its own copy of the IR library (modules arrive as .tlir text).
function(tl_add_compiler_target name)
  set(map "${CMAKE_CURRENT_FUNCTION_LIST_DIR}/tl_target_exports.map")
  add_library(${name} MODULE ${ARGN})
  set_target_properties(${name} PROPERTIES PREFIX "lib" CXX_VISIBILITY_PRESET hidden
    VISIBILITY_INLINES_HIDDEN ON LINK_DEPENDS "${map}")
  target_compile_features(${name} PRIVATE cxx_std_20)
  target_link_libraries(${name} PRIVATE TL::sdk TL::ir nlohmann_json::nlohmann_json)
  target_link_options(${name} PRIVATE "-Wl,--version-script=${map}" -Wl,--no-undefined)
endfunction()
