#!/usr/bin/env python3
"""Self-test of ci/check_layers.py: on a small tree with one upward include and one upward link
it must fail and name both; on the same tree without them it must pass."""
# SPDX-License-Identifier: Apache-2.0
import pathlib
import subprocess
import sys
import tempfile

CHECK = pathlib.Path(__file__).resolve().parent / "check_layers.py"
FILES = {
    "compiler/ir/include/tl/ir/ir.h": "#pragma once\n",
    "compiler/ir/CMakeLists.txt": "add_library(tl_ir STATIC src/ir.cpp)\n",
    "compiler/ir/src/ir.cpp": '#include "tl/ir/ir.h"\n',
    "hal/include/tl/hal.h": "#pragma once\n",
    "hal/CMakeLists.txt": "add_library(tl_hal SHARED src/api.cpp)\n",
    "hal/src/api.cpp": '#include "tl/hal.h"\n',
}


def run(root):
    return subprocess.run([sys.executable, str(CHECK), str(root)], capture_output=True, text=True)


def main():
    with tempfile.TemporaryDirectory() as d:
        root = pathlib.Path(d)
        for name, text in FILES.items():
            (root / name).parent.mkdir(parents=True, exist_ok=True)
            (root / name).write_text(text)
        clean = run(root)
        assert clean.returncode == 0, f"a clean tree failed:\n{clean.stdout}"
        # The HAL reaching into the compiler, by include and by link: two edges.
        (root / "hal/src/api.cpp").write_text('#include "tl/hal.h"\n#include "tl/ir/ir.h"\n')
        (root / "hal/CMakeLists.txt").write_text(
            "add_library(tl_hal SHARED src/api.cpp)\ntarget_link_libraries(tl_hal PRIVATE tl_ir)\n")
        bad = run(root)
        assert bad.returncode == 1, f"upward edges passed:\n{bad.stdout}"
        assert "hal/src/api.cpp:2: hal -> ir (includes tl/ir/ir.h)" in bad.stdout, bad.stdout
        assert "hal -> ir (tl_hal links tl_ir)" in bad.stdout, bad.stdout
    print("check_layers self-test: ok")


if __name__ == "__main__":
    main()
