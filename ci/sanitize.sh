#!/usr/bin/env bash
# Sanitizer builds and their tests (CMakePresets.json asan / tsan; ci/README.md "Sanitizers").
# SPDX-License-Identifier: Apache-2.0
#
# Usage: ci/sanitize.sh asan [--subset]   ASan+UBSan: the whole tree into build-asan, the whole
#                                         ctest suite; --subset builds and runs only the folders
#                                         labelled asan-subset (what ci/test.sh runs)
#        ci/sanitize.sh tsan              TSan: the HAL, the plugins (cpu, npusim and its worker),
#                                         the runtime and tl-conform's runner into build-tsan, and
#                                         the tests labelled tsan (those folders' tests)
# Env:   TL_JOBS (default nproc)
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
kind=${1:-}
subset=${2:-}
jobs="${TL_JOBS:-$(nproc)}"
supp="$root/ci/sanitizers"

# The folders whose tests each set runs; each folder's CMakeLists labels its tests
# (set_property(DIRECTORY APPEND PROPERTY LABELS ...)), and `<folder>/all` builds them.
tsan_dirs=(hal vendors/cpu vendors/npusim conformance)
asan_subset_dirs=(support format hal vendors/cpu vendors/npusim)

case "$kind" in
asan)
  build="$root/build-asan"
  label=""
  dirs=()
  if [ "$subset" = "--subset" ]; then
    label=asan-subset
    dirs=("${asan_subset_dirs[@]}")
  fi
  # Leaks are checked (LSan); UBSan stops at the first report so that the test fails. No fake
  # stacks (detect_stack_use_after_return): SystemC switches its threads' stacks (QuickThreads)
  # behind ASan's back, and the npusim worker then crashes in ASan's frame bookkeeping.
  export ASAN_OPTIONS="detect_leaks=1:detect_stack_use_after_return=0:strict_string_checks=1:suppressions=$supp/asan.supp"
  export LSAN_OPTIONS="suppressions=$supp/lsan.supp:print_suppressions=0"
  export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1:suppressions=$supp/ubsan.supp"
  ;;
tsan)
  build="$root/build-tsan"
  label=tsan
  dirs=("${tsan_dirs[@]}")
  export TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1:suppressions=$supp/tsan.supp"
  ;;
*)
  echo "usage: ci/sanitize.sh asan|tsan [--subset]" >&2
  exit 2
  ;;
esac

"$root/ci/setup.sh" >/dev/null
start=$(date +%s)
(cd "$root" && cmake --preset "$kind" >/dev/null)
targets=()
for d in "${dirs[@]}"; do
  targets+=("$d/all")
done
ninja -C "$build" -j "$jobs" "${targets[@]}"
built=$(date +%s)
filter=()
[ -n "$label" ] && filter=(-L "^$label\$")
status=0
ctest --test-dir "$build" --output-on-failure -j "$jobs" "${filter[@]}" || status=$?
end=$(date +%s)
echo "sanitize: $kind${subset:+ $subset}: build $((built - start)) s, tests $((end - built)) s," \
  "status $status"
exit "$status"
