# Generated headers defining a hash of some inputs (cmake/hash_header.cmake), included privately
# by a target; each is regenerated when its inputs change.
#   tl_source_hash(<target> <macro> <dir>...)  the source files under the dirs (a cache key)
#   tl_tree_hash(<target> <macro> <dir>...)    every file under the dirs (pinned data)
#   tl_file_hash(<target> <macro> <producing target>)  that target's built file (a pinned program)
# SPDX-License-Identifier: Apache-2.0
function(_tl_hash_header target macro mode inputs depends)
  string(TOLOWER "${macro}" name)
  set(out "${CMAKE_CURRENT_BINARY_DIR}/generated/${name}.h")
  string(REPLACE ";" "|" dirs "${inputs}") # ';' does not survive a custom command's arguments
  set(file "")
  if(mode STREQUAL "file")
    set(file "$<TARGET_FILE:${inputs}>")
    set(dirs "")
  endif()
  add_custom_command(OUTPUT "${out}"
    COMMAND ${CMAKE_COMMAND} "-DMODE=${mode}" "-DDIRS=${dirs}" "-DFILE=${file}"
            "-DMACRO=${macro}" "-DOUT=${out}" -P "${PROJECT_SOURCE_DIR}/cmake/hash_header.cmake"
    DEPENDS ${depends} "${PROJECT_SOURCE_DIR}/cmake/hash_header.cmake"
    VERBATIM
    COMMENT "Hashing the inputs of ${target}'s ${macro}")
  target_sources(${target} PRIVATE "${out}")
  target_include_directories(${target} PRIVATE "${CMAKE_CURRENT_BINARY_DIR}/generated")
endfunction()

function(_tl_files_under out_var)
  set(files "")
  foreach(dir IN LISTS ARGN)
    file(GLOB_RECURSE found CONFIGURE_DEPENDS "${dir}/*")
    list(APPEND files ${found})
  endforeach()
  set(${out_var} ${files} PARENT_SCOPE)
endfunction()

function(tl_source_hash target macro)
  _tl_files_under(deps ${ARGN})
  list(FILTER deps INCLUDE REGEX "\\.(cpp|h|hpp|def|fbs)$")
  _tl_hash_header(${target} ${macro} sources "${ARGN}" "${deps}")
endfunction()

function(tl_tree_hash target macro)
  _tl_files_under(deps ${ARGN})
  _tl_hash_header(${target} ${macro} tree "${ARGN}" "${deps}")
endfunction()

function(tl_file_hash target macro producer)
  _tl_hash_header(${target} ${macro} file "${producer}" "${producer}")
endfunction()
