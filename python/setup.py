# Packaging hook: copies the prebuilt TL libraries, every device's files and the kit's tolerance
# table into the package, so that an installed `import tl` needs no source tree. Nothing is
# compiled here.
# SPDX-License-Identifier: Apache-2.0
import os
import pathlib
import shutil

from setuptools import Distribution, setup
from setuptools.command.build_py import build_py

HERE = pathlib.Path(__file__).resolve().parent
# From the build's lib/ (TL_LIB_DIR): the compiler (with its built-in targets: llvm-cpu, nvptx,
# tnpu), the HAL, the device plugins, npusim's simulator process and the chips it simulates.
LIBS = ("libtl_compiler.so*", "libtl_hal.so*", "libtl_plugin_*.so",
        "_tl_launch.abi3.so",  # the C launch path (python/ext), when built
        "tl-npusim-worker", "chips/*.json")
# tl.testing's tolerances: tl-conform's own table, copied from its one file.
TOLERANCES = HERE.parent / "conformance" / "data" / "tolerances.json"


class BuildPyWithLibs(build_py):
    """build_py that also copies the libraries, plugins and device files from TL_LIB_DIR (default:
    ../build/lib) into tl/_lib, and the tolerance table into tl/_data."""

    def run(self):
        super().run()
        src = pathlib.Path(os.environ.get("TL_LIB_DIR", HERE.parent / "build" / "lib"))
        if not src.is_absolute():  # pip runs this in python/, not where the user typed it
            raise SystemExit(f"tl: TL_LIB_DIR={src} is relative; give an absolute path")
        if not (src / "libtl_compiler.so").exists():
            raise SystemExit(f"tl: no libtl_compiler.so in {src}: build TL first "
                             "(cmake -S . -B build -G Ninja && ninja -C build) or set TL_LIB_DIR")
        if (src / "libtl_plugin_npusim.so").exists() and not (src / "tl-npusim-worker").exists():
            raise SystemExit(f"tl: {src} has the npusim plugin but not its simulator process "
                             "tl-npusim-worker: build it (ninja -C build tl-npusim-worker)")
        dst = pathlib.Path(self.build_lib) / "tl" / "_lib"
        for pattern in LIBS:
            for f in src.glob(pattern):
                if f.is_file():
                    out = dst / f.relative_to(src)
                    out.parent.mkdir(parents=True, exist_ok=True)
                    shutil.copy2(f.resolve(), out)  # keeps the worker executable
        data = pathlib.Path(self.build_lib) / "tl" / "_data"
        data.mkdir(parents=True, exist_ok=True)
        if TOLERANCES.exists():
            shutil.copy2(TOLERANCES, data / TOLERANCES.name)


class BinaryDistribution(Distribution):
    """The package carries native libraries: its wheel is for this platform, not py3-none-any."""

    def has_ext_modules(self):
        return True


setup(cmdclass={"build_py": BuildPyWithLibs}, distclass=BinaryDistribution)
