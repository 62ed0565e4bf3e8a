#!/usr/bin/env bash
# Installs every system and Python dependency TL needs; idempotent and quick when all is present.
# SPDX-License-Identifier: Apache-2.0
#
# Usage: ci/setup.sh            (system packages via apt, then the Python venv in .venv/)
#        ci/setup.sh --runtime  (only the shared libraries an installed tl wheel loads)
# Env:   TL_SETUP_SKIP_APT=1    skip apt (when packages are managed elsewhere)
#        TL_SETUP_SKIP_TORCH=1  skip PyTorch (ci/requirements-torch.txt; tl.torch's tests skip)
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

# What the tl wheel's libraries, plugins and npusim worker link (ldd of python/tl/_lib), for a
# machine that runs kernels without building TL; ci/templates/*.yml install the same list.
runtime_packages=(libllvm19 libsystemc libtbb12 libssl3 libstdc++6 libgcc-s1)

debian_packages=(
  # build tools
  cmake ninja-build ccache pkg-config g++ lld-19 clang-19 libclang-rt-19-dev clang-format
  # compiler: LLVM 19 (ORC JIT, NVPTX), FileCheck
  llvm-19-dev llvm-19-tools libzstd-dev zlib1g-dev libedit-dev libxml2-dev libcurl4-openssl-dev libffi-dev
  # simulator: SystemC TLM-2.0 and Verilator
  libsystemc-dev verilator
  # libraries
  libboost-program-options-dev nlohmann-json3-dev libflatbuffers-dev flatbuffers-compiler
  libtbb-dev libsleef-dev libssl-dev libsodium-dev libopenblas-dev
  # tests and benchmarks
  libgtest-dev libgmock-dev libbenchmark-dev
  # Python environment
  python3 python3-venv python3-dev
)

if [ "${1:-}" = "--runtime" ]; then
  debian_packages=("${runtime_packages[@]}")
fi
missing=()
for p in "${debian_packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ "${#missing[@]}" -gt 0 ] && [ -z "${TL_SETUP_SKIP_APT:-}" ]; then
  echo "setup: installing ${missing[*]}"
  sudo_cmd=()
  [ "$(id -u)" -ne 0 ] && sudo_cmd=(sudo)
  export DEBIAN_FRONTEND=noninteractive
  "${sudo_cmd[@]}" apt-get update -qq
  "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
else
  echo "setup: all Debian packages present"
fi

if [ "${1:-}" = "--runtime" ]; then
  exit 0
fi

# Debian's python3, not whatever python3 is first on PATH: the build names this interpreter.
venv="$root/.venv"
if [ ! -x "$venv/bin/python" ]; then
  /usr/bin/python3 -m venv "$venv"
fi
stamp="$venv/.tl-requirements"
if ! cmp -s "$root/ci/requirements.txt" "$stamp"; then
  "$venv/bin/python" -m pip install -q --disable-pip-version-check -r "$root/ci/requirements.txt"
  cp "$root/ci/requirements.txt" "$stamp"
else
  echo "setup: Python environment up to date"
fi

# PyTorch for tl.torch's tests (ci/requirements-torch.txt): ~2.5 min and 4.6 GB on a fresh venv.
# TL_SETUP_SKIP_TORCH=1 leaves it out (those tests then skip, saying so).
torch_requirements="$root/ci/requirements-torch.txt"
if [ -z "${TL_SETUP_SKIP_TORCH:-}" ] && ! cmp -s "$torch_requirements" "$venv/.tl-requirements-torch"; then
  echo "setup: installing PyTorch (ci/requirements-torch.txt)"
  "$venv/bin/python" -m pip install -q --disable-pip-version-check -r "$torch_requirements"
  cp "$torch_requirements" "$venv/.tl-requirements-torch"
fi

# The wheelhouse the install test (ci/templates/install_test.py) installs a fresh venv from,
# without the network: the wheels a kernel project needs beside tl's own.
wheelhouse="$venv/wheelhouse"
user_requirements="$root/ci/templates/requirements.txt"
if ! cmp -s "$user_requirements" "$wheelhouse/.tl-requirements"; then
  "$venv/bin/python" -m pip download -q --disable-pip-version-check -d "$wheelhouse" \
    -r "$user_requirements"
  cp "$user_requirements" "$wheelhouse/.tl-requirements"
fi
