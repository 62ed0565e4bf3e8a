#!/bin/sh
# Installs the SDK from a TL build, builds vendors/sdk/template against it out of tree, and checks
# that the runtime loads the plugin (tl-info lists its device).
# Usage: template_test.sh <tl build dir> <template source dir> <tl-info> [generator]
# SPDX-License-Identifier: Apache-2.0
set -eu
build=$1 template=$2 info=$3 generator=${4:-Ninja}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cmake --install "$build" --component sdk --prefix "$work/prefix" >/dev/null
test -f "$work/prefix/include/tl/vendor.h"
test -f "$work/prefix/include/tl/hal.h"
cmake -S "$template" -B "$work/build" -G "$generator" -DCMAKE_PREFIX_PATH="$work/prefix" >/dev/null
cmake --build "$work/build" >/dev/null
plugin="$work/build/libtl_plugin_null.so"
exports=$(nm -D --defined-only "$plugin" | awk '{print $3}')
[ "$exports" = "tl_vendor_plugin_entry" ] || { echo "unexpected exports: $exports"; exit 1; }
out=$(TL_PLUGIN_PATH="$plugin" "$info")
echo "$out"
echo "$out" | grep -q "null device"
