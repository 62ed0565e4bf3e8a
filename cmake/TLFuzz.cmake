# tl_fuzz_target(<name> SOURCES <file>... LIBS <target>... [REPLAY <folder>...] [DEFINES <d>...]
#                [ENVIRONMENT <VAR=value>...])
# With TL_FUZZ (clang-19, ci/fuzz.sh): <name>, a libFuzzer executable under ASan and UBSan.
# Otherwise, when testing: <name>_replay, the same source with support/fuzz/replay_main.cpp, and
# the ctest fuzz.<name>, which feeds it every file of the REPLAY folders (the seeds and the inputs
# of crashes found and fixed) once: the regression tests of what the fuzzers found.
# SPDX-License-Identifier: Apache-2.0
function(tl_fuzz_target name)
  cmake_parse_arguments(F "" "" "SOURCES;LIBS;REPLAY;DEFINES;ENVIRONMENT" ${ARGN})
  if(TL_FUZZ)
    set(exe ${name})
    add_executable(${exe} ${F_SOURCES})
    target_link_options(${exe} PRIVATE -fsanitize=fuzzer,address,undefined)
  elseif(BUILD_TESTING)
    set(exe ${name}_replay)
    add_executable(${exe} ${F_SOURCES} ${PROJECT_SOURCE_DIR}/support/fuzz/replay_main.cpp)
    set(folders "")
    foreach(f IN LISTS F_REPLAY) # a regressions folder exists once a crash was found
      if(EXISTS ${f})
        list(APPEND folders ${f})
      endif()
    endforeach()
    add_test(NAME fuzz.${name} COMMAND ${exe} ${folders})
    if(F_ENVIRONMENT)
      set_tests_properties(fuzz.${name} PROPERTIES ENVIRONMENT "${F_ENVIRONMENT}")
    endif()
  else()
    return()
  endif()
  target_link_libraries(${exe} PRIVATE ${F_LIBS})
  if(F_DEFINES)
    target_compile_definitions(${exe} PRIVATE ${F_DEFINES})
  endif()
endfunction()
