# Sanitizer builds (TL_SANITIZE=address|thread, set by the asan/tsan presets in CMakePresets.json).
# SPDX-License-Identifier: Apache-2.0
#
# address: ASan + UBSan; undefined behaviour aborts (-fno-sanitize-recover) so it fails the test.
# thread:  TSan. Third-party libraries (LLVM, SystemC, Python) are not instrumented; their reports
# are suppressed in ci/sanitizers/*.supp, each entry with its reason, never TL code.
set(TL_SANITIZE "" CACHE STRING "Sanitizer build: empty, address (ASan+UBSan) or thread (TSan)")
set_property(CACHE TL_SANITIZE PROPERTY STRINGS "" address thread)

# The shared sanitizer runtime, which a process that is not itself instrumented (the Python
# interpreter loading TL's libraries through CFFI) must LD_PRELOAD; empty when none is needed.
set(TL_SANITIZER_PRELOAD "")

if(TL_SANITIZE STREQUAL "address")
  set(tl_san_flags -fsanitize=address,undefined -fno-sanitize-recover=undefined
                   -fno-omit-frame-pointer)
elseif(TL_SANITIZE STREQUAL "thread")
  set(tl_san_flags -fsanitize=thread -fno-omit-frame-pointer)
elseif(NOT TL_SANITIZE STREQUAL "")
  message(FATAL_ERROR "TL_SANITIZE=${TL_SANITIZE}: expected address, thread or empty")
endif()

if(tl_san_flags)
  if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
    # gcc would link its own libasan, which clang-built fuzzers and the preload below do not match.
    message(FATAL_ERROR "TL_SANITIZE needs clang (the presets use clang-19), not ${CMAKE_CXX_COMPILER_ID}")
  endif()
  add_compile_options(${tl_san_flags})
  # Every program uses the one shared runtime (clang's default links a static copy into each
  # executable): the Python tests preload it to load TL's libraries, and the processes they
  # start (the npusim worker) inherit LD_PRELOAD, which a static copy would refuse.
  add_link_options(${tl_san_flags} -shared-libsan)
  if(TL_SANITIZE STREQUAL "address")
    set(tl_rt clang_rt.asan-x86_64)
  else()
    set(tl_rt clang_rt.tsan-x86_64)
  endif()
  execute_process(COMMAND ${CMAKE_CXX_COMPILER} -print-file-name=lib${tl_rt}.so
                  OUTPUT_VARIABLE TL_SANITIZER_PRELOAD OUTPUT_STRIP_TRAILING_WHITESPACE)
  if(NOT EXISTS "${TL_SANITIZER_PRELOAD}")
    execute_process(COMMAND ${CMAKE_CXX_COMPILER} -print-runtime-dir
                    OUTPUT_VARIABLE tl_rtdir OUTPUT_STRIP_TRAILING_WHITESPACE)
    set(TL_SANITIZER_PRELOAD "${tl_rtdir}/lib${tl_rt}.so")
  endif()
  get_filename_component(tl_rtdir "${TL_SANITIZER_PRELOAD}" DIRECTORY)
  add_link_options(-Wl,-rpath,${tl_rtdir})
  message(STATUS "TL_SANITIZE=${TL_SANITIZE}: runtime for preloading ${TL_SANITIZER_PRELOAD}")
endif()

# Source files that call JIT-compiled llvm-cpu kernels through tl_cpu_kernel_fn: that code has no
# UBSan function-type prefix, and -fsanitize=function reads the word before the callee, which
# faults when a kernel starts a page (LlvmCpu.SleefMathIsWithinOneAndAHalfUlps did). Call it in
# the directory that compiles them.
function(tl_calls_jit_code)
  if(TL_SANITIZE STREQUAL "address")
    set_property(SOURCE ${ARGN} APPEND PROPERTY COMPILE_OPTIONS -fno-sanitize=function)
  endif()
endfunction()
