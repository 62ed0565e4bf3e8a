# tl_source_hash(<target> <macro> <dir>...): a generated header <macro_lower>.h in the target's
# build tree defining <macro> as the hash of the sources under the dirs (cmake/source_hash.cmake),
# regenerated when any of them changes; the target includes it privately.
# SPDX-License-Identifier: Apache-2.0
function(tl_source_hash target macro)
  string(TOLOWER "${macro}" name)
  set(out "${CMAKE_CURRENT_BINARY_DIR}/generated/${name}.h")
  set(deps "")
  foreach(dir IN LISTS ARGN)
    file(GLOB_RECURSE found CONFIGURE_DEPENDS "${dir}/*.cpp" "${dir}/*.h" "${dir}/*.hpp"
         "${dir}/*.def" "${dir}/*.fbs")
    list(APPEND deps ${found})
  endforeach()
  string(REPLACE ";" "|" dirs "${ARGN}") # ';' does not survive a custom command's arguments
  add_custom_command(OUTPUT "${out}"
    COMMAND ${CMAKE_COMMAND} "-DDIRS=${dirs}" "-DMACRO=${macro}" "-DOUT=${out}"
            -P "${PROJECT_SOURCE_DIR}/cmake/source_hash.cmake"
    DEPENDS ${deps} "${PROJECT_SOURCE_DIR}/cmake/source_hash.cmake"
    VERBATIM
    COMMENT "Hashing the sources of ${target} (${macro}, a compile cache key)")
  target_sources(${target} PRIVATE "${out}")
  target_include_directories(${target} PRIVATE "${CMAKE_CURRENT_BINARY_DIR}/generated")
endfunction()

# tl_tree_hash(<target> <macro> <dir>...): like tl_source_hash, over every file of the dirs with
# their relative paths (cmake/tree_hash.cmake): pins data (a tolerance table, a corpus).
function(tl_tree_hash target macro)
  string(TOLOWER "${macro}" name)
  set(out "${CMAKE_CURRENT_BINARY_DIR}/generated/${name}.h")
  set(deps "")
  foreach(dir IN LISTS ARGN)
    file(GLOB_RECURSE found CONFIGURE_DEPENDS "${dir}/*")
    list(APPEND deps ${found})
  endforeach()
  string(REPLACE ";" "|" dirs "${ARGN}") # ';' does not survive a custom command's arguments
  add_custom_command(OUTPUT "${out}"
    COMMAND ${CMAKE_COMMAND} "-DDIRS=${dirs}" "-DMACRO=${macro}" "-DOUT=${out}"
            -P "${PROJECT_SOURCE_DIR}/cmake/tree_hash.cmake"
    DEPENDS ${deps} "${PROJECT_SOURCE_DIR}/cmake/tree_hash.cmake"
    VERBATIM
    COMMENT "Hashing the files of ${target}'s pinned data (${macro})")
  target_sources(${target} PRIVATE "${out}")
  target_include_directories(${target} PRIVATE "${CMAKE_CURRENT_BINARY_DIR}/generated")
endfunction()
