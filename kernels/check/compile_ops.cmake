# Checks that a generated op (kernels/ops/*.tlir) parses, verifies and compiles for each target
# in TARGETS (a ;-list: llvm-cpu, and tnpu when the build has the simulator).
# SPDX-License-Identifier: Apache-2.0
string(MD5 h ${INPUT})
set(tmp "$ENV{TMPDIR}")
if(NOT tmp)
  set(tmp /tmp)
endif()
foreach(target ${TARGETS})
  set(out "${tmp}/tl-ops-${h}-${target}.tlx")
  execute_process(COMMAND ${TLC} compile --target ${target} ${INPUT} -o ${out}
                  RESULT_VARIABLE rc ERROR_VARIABLE err)
  file(REMOVE ${out})
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "tlc compile --target ${target} ${INPUT} failed:\n${err}")
  endif()
endforeach()
