#!/usr/bin/env bash
# Builds TL here and packs what the GPU machine needs into one archive: the libraries, tools and
# test binaries of the build, plus the shared libraries they load that the GPU machine (Ubuntu
# 24.04: glibc 2.39, a newer libstdc++, driver 580) lacks (LLVM 19, TBB, SLEEF, Boost, SystemC...).
# SPDX-License-Identifier: Apache-2.0
#
# usage: bench/cuda/pack.sh [OUT]    (default OUT: build/cuda-pack/tl-cuda.tar.xz)
# env:   TL_BUILD_DIR (default build), TL_JOBS (default 2), TL_PACK_LIMIT_MIB (default 60),
#        TL_PACK_NO_BUILD=1 to pack the build as it is.
# Then, with the device tool: carry OUT and run bench/cuda/run_on_device.sh OUT (see README.md).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
build="${TL_BUILD_DIR:-$root/build}"
out="${1:-$build/cuda-pack/tl-cuda.tar.xz}"
limit_mib="${TL_PACK_LIMIT_MIB:-60}"

if [ "${TL_PACK_NO_BUILD:-0}" != 1 ]; then
  TL_JOBS="${TL_JOBS:-2}" nice -n 10 "$root/ci/build.sh"
fi

stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/lib" "$stage/bin" "$stage/deps"

# What runs there: the runtime, plugins and compiler (build/lib), the tools, the tests of the cuda
# device and of the HAL, and the compiler's target plugins wherever the build put them.
cp -a "$build"/lib/*.so* "$stage/lib/"
[ -e "$build/lib/tl-npusim-worker" ] && cp -a "$build/lib/tl-npusim-worker" "$stage/lib/"
for exe in hal/tools/tl-info compiler/tools/tlc/tlc conformance/tl-conform \
           vendors/cuda/tl_plugin_cuda_tests vendors/cuda/tl_cuda_device_tests \
           format/nvptx/tl_nvptx_code_tests \
           hal/tests/tl_hal_cts hal/tests/tl_hal_import_tests bench/tl_hal_bench \
           bench/tl_cuda_launch_bench; do
  found=$(find "$build" -path "$build/cuda-pack" -prune -o -type f -name "$(basename "$exe")" \
          -perm -u+x -print -quit)
  if [ -n "$found" ]; then cp "$found" "$stage/bin/"; else echo "pack: no $exe in the build (skipped)"; fi
done
# (not the loader tests' purpose-built broken targets)
find "$build" \( -path "$build/cuda-pack" -o -path '*broken*' -o -path '*/tests/*' \) -prune \
  -o -name 'libtl_target_*.so' -print | while read -r t; do cp -n "$t" "$stage/lib/"; done

# Shared libraries outside the build that these load, except what the GPU machine has and must
# use its own of: glibc (2.39 there), libstdc++/libgcc_s (newer there), the CUDA driver, and the
# base system's compression, terminal, crypto and ffi libraries (same sonames, newer there:
# shipping ours would hand older copies to every program run under LD_LIBRARY_PATH, python too).
skip='^(linux-vdso|ld-linux|libc\.|libm\.|libdl\.|librt\.|libpthread\.|libresolv\.|libutil\.|libstdc\+\+|libgcc_s|libcuda\.|libnvidia-|libz\.so|libzstd\.|liblzma\.|libtinfo\.|libcrypto\.|libssl\.|libffi\.)'
for f in "$stage"/lib/* "$stage"/bin/*; do
  LD_LIBRARY_PATH="$build/lib" ldd "$f" 2>/dev/null | awk '$2 == "=>" && $3 ~ /^\// {print $1, $3}'
done | sort -u | while read -r name path; do
  [[ "$name" =~ $skip ]] && continue
  [ -e "$stage/lib/$name" ] && continue
  cp -L "$path" "$stage/deps/$name"
done
# Loaded with dlopen, so ldd does not list them: the cpu device's vector math.
for name in libsleef.so.3; do
  path=$(ldconfig -p | awk -v n="$name" '$1 == n {print $NF; exit}')
  if [ -n "$path" ]; then cp -L "$path" "$stage/deps/$name"; else echo "pack: no $name here"; fi
done

# cffi (the Python package's FFI) for the GPU machine's Python, which may lack it and cannot
# install it there; run_on_device.sh unpacks the wheels only if `import cffi` fails.
py="${TL_PACK_PYTHON_VERSION:-3.12}"
mkdir -p "$stage/wheels"
"${TL_PYTHON:-$root/.venv/bin/python}" -m pip download -q cffi pycparser --only-binary=:all: \
  --python-version "$py" --platform manylinux2014_x86_64 --platform manylinux_2_17_x86_64 \
  -d "$stage/wheels" || echo "pack: no cffi wheels for Python $py (Python tests need cffi there)"

cat > "$stage/MANIFEST" <<MANIFEST
built: $(date -u +%FT%TZ) on $(uname -n), commit $(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)
glibc here: $(ldd --version | head -1)
$(cd "$stage" && find . -type f | sort | xargs du -k | awk '{printf "%8d KiB  %s\n", $1, $2}')
MANIFEST

mkdir -p "$(dirname "$out")"
raw=$(du -sm "$stage" | cut -f1)
# Debug info is most of the raw size and no use there. The HAL CTS stays as built: tl-conform
# pins its hash (a stripped copy would make every run there NON-STANDARD).
find "$stage" -type f \( -name '*.so*' -o -perm -u+x \) ! -name tl_hal_cts \
  -exec strip --strip-debug {} + 2>/dev/null || true
XZ_OPT="-9 -T${TL_JOBS:-2}" nice -n 10 tar -C "$stage" -cJf "$out" .
size=$(stat -c %s "$out")
echo "pack: $out: $((size / 1024 / 1024)) MiB compressed (${raw} MiB raw before strip)"
if [ "$size" -gt $((limit_mib * 1024 * 1024)) ]; then
  echo "pack: over the ${limit_mib} MiB limit; largest files:" >&2
  (cd "$stage" && find . -type f -exec du -k {} + | sort -rn | head -15) >&2
  exit 1
fi
