# Checks that a generated op (kernels/ops/*.tlir) parses, verifies and compiles for each target
# in TARGETS (a ;-list: llvm-cpu, nvptx, and tnpu when the build has the simulator). A header
# line `// unsupported target: <target>: <why>` (generate.py: e.g. fp8 on the TNPU) says the
# target cannot take the kernel's element types: its compile must then fail (so the mark stays
# true), and the message says why instead of the test failing.
# SPDX-License-Identifier: Apache-2.0
string(MD5 h ${INPUT})
set(tmp "$ENV{TMPDIR}")
if(NOT tmp)
  set(tmp /tmp)
endif()
file(STRINGS ${INPUT} unsupported_lines REGEX "^// unsupported target: ")
foreach(target ${TARGETS})
  set(why "")
  foreach(line ${unsupported_lines})
    if(line MATCHES "^// unsupported target: ${target}: (.*)$")
      set(why "${CMAKE_MATCH_1}")
    endif()
  endforeach()
  set(out "${tmp}/tl-ops-${h}-${target}.tlx")
  execute_process(COMMAND ${TLC} compile --target ${target} ${INPUT} -o ${out}
                  RESULT_VARIABLE rc ERROR_VARIABLE err)
  file(REMOVE ${out})
  if(why)
    if(rc EQUAL 0)
      message(FATAL_ERROR "${INPUT} is marked unsupported on ${target} (${why}) but "
                          "compiles there: drop the mark (tl/ops/quant.py NO_FP8, generate.py)")
    endif()
    message(STATUS "${target}: not supported, as marked: ${why}")
  elseif(NOT rc EQUAL 0)
    message(FATAL_ERROR "tlc compile --target ${target} ${INPUT} failed:\n${err}")
  endif()
endforeach()
