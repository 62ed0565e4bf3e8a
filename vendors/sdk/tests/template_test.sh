#!/bin/sh
# Installs the SDK from a TL build, builds vendors/sdk/template against it out of tree, and checks
# that the runtime loads the plugin (tl-info lists its device).
# Then that tlc compiles for the template's compiler target (libtl_target_null.so).
# Usage: template_test.sh <tl build dir> <template source dir> <tl-info> <generator> <tlc>
# SPDX-License-Identifier: Apache-2.0
set -eu
build=$1 template=$2 info=$3 generator=$4 tlc=$5
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cmake --install "$build" --component sdk --prefix "$work/prefix" >/dev/null
test -f "$work/prefix/include/tl/vendor.h"
test -f "$work/prefix/include/tl/hal.h"
test -f "$work/prefix/include/tl/vendor_plugin.hpp"
cmake -S "$template" -B "$work/build" -G "$generator" -DCMAKE_PREFIX_PATH="$work/prefix" >/dev/null
cmake --build "$work/build" >/dev/null
plugin="$work/build/libtl_plugin_null.so"
exports=$(nm -D --defined-only "$plugin" | awk '{print $3}')
[ "$exports" = "tl_vendor_plugin_entry" ] || { echo "unexpected exports: $exports"; exit 1; }
out=$(TL_PLUGIN_PATH="$plugin" "$info")
echo "$out"
echo "$out" | grep -q "null device"
target="$work/build/libtl_target_null.so"
exports=$(nm -D --defined-only "$target" | awk '{print $3}')
[ "$exports" = "tl_target_plugin_entry" ] || { echo "unexpected exports: $exports"; exit 1; }
cat > "$work/k.tlir" <<'TLIR'
kernel @scale(%x: tensor<?xf32>, %s: f32) {
  return
}
TLIR
TL_TARGET_PATH="$target" "$tlc" compile --target null "$work/k.tlir" -o "$work/k.tlx"
"$tlc" inspect "$work/k.tlx" | grep -q "target: null"
TL_TARGET_PATH="$target" "$tlc" compile --help | grep -q "null  the template's null target"
echo "template compiler target: ok"
