# Builds the PE-block library of a hierarchically verilated matrix unit (sim/rtl/CMakeLists.txt).
# `verilator --hierarchical` verilated the block (mx_pe_block.sv) into DIR/V<row>_<n>/ (n: Verilator's counter);
# this compiles its model archive and its block wrapper (the functions the array calls) and
# copies both to fixed names: DIR/block.a and DIR/block_wrapper.o.
# -D DIR, MAKE, CXX, LAUNCHER (may be empty), JOBS.
# SPDX-License-Identifier: Apache-2.0
file(GLOB children LIST_DIRECTORIES true "${DIR}/V*_hierMkArgs.f")
set(block "")
foreach(f ${children})
  get_filename_component(n "${f}" NAME)
  string(REGEX REPLACE "^V(.*)_hierMkArgs\\.f$" "\\1" n "${n}")
  if(IS_DIRECTORY "${DIR}/V${n}")
    list(APPEND block ${n})
  endif()
endforeach()
list(LENGTH block count)
if(NOT count EQUAL 1)
  message(FATAL_ERROR "expected one hierarchical block (the PE block) in ${DIR}, found: '${block}'")
endif()
set(child "${DIR}/V${block}")
set(launcher "")
if(LAUNCHER)
  set(launcher "OBJCACHE=${LAUNCHER}")
endif()
# The archive holds the block's classes only (not the Verilator runtime, built once for the whole
# build as tl_verilated); the wrapper object is the block's DPI interface.
execute_process(COMMAND ${MAKE} -C ${child} -f V${block}.mk -j ${JOBS} VM_PREFIX=V${block}
                        V${block}__ALL.a ${block}.o CXX=${CXX} ${launcher} OPT_FAST=-O2 OPT_SLOW=-O0
                        USER_CPPFLAGS=-fPIC COMMAND_ERROR_IS_FATAL ANY)
file(COPY_FILE "${child}/V${block}__ALL.a" "${DIR}/block.a")
file(COPY_FILE "${child}/${block}.o" "${DIR}/block_wrapper.o")
