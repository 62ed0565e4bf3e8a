# Packaging hook: copies the prebuilt TL libraries into the package (tl/_lib) so that an
# installed `import tl` finds them without the source tree. Nothing is compiled here.
# SPDX-License-Identifier: Apache-2.0
import os
import pathlib
import shutil

from setuptools import setup
from setuptools.command.build_py import build_py

HERE = pathlib.Path(__file__).resolve().parent
LIBS = ("libtl_compiler.so*", "libtl_hal.so*", "libtl_plugin_*.so",
        "_tl_launch.abi3.so")  # the C launch path (python/ext), when built


class BuildPyWithLibs(build_py):
    """build_py that also copies libtl_compiler, libtl_hal and the plugins from TL_LIB_DIR
    (default: ../build/lib) into tl/_lib of the build."""

    def run(self):
        super().run()
        src = pathlib.Path(os.environ.get("TL_LIB_DIR", HERE.parent / "build" / "lib"))
        if not (src / "libtl_compiler.so").exists():
            raise SystemExit(f"tl: no libtl_compiler.so in {src}: build TL first "
                             "(cmake -S . -B build -G Ninja && ninja -C build) or set TL_LIB_DIR")
        dst = pathlib.Path(self.build_lib) / "tl" / "_lib"
        dst.mkdir(parents=True, exist_ok=True)
        for pattern in LIBS:
            for f in src.glob(pattern):
                if f.is_file():
                    shutil.copy2(f.resolve(), dst / f.name)


setup(cmdclass={"build_py": BuildPyWithLibs})
