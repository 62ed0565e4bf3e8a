#!/usr/bin/env python3
"""The kernel author's path, end to end, as CI runs it (ctest `install.wheel_and_templates`):

0. The templates install the runtime libraries `ci/setup.sh --runtime` lists, and run the same
   lines between their `tl-ci` markers.
1. `pip wheel ./python` of this build; the wheel must carry every device (the npusim worker,
   the chip configs, the plugins; the tnpu target is built into libtl_compiler.so) and tl.testing.
2. A fresh venv (`python3 -m venv`, no system site-packages), the wheel installed into it with
   the templates' own command. Offline: pip takes numpy, cffi and pytest from the wheelhouse
   ci/setup.sh fills (PIP_NO_INDEX, PIP_FIND_LINKS), so the test needs no network.
3. In a copy of examples/kernel-project, outside the source tree and with nothing of the checkout
   in the environment (TL_LIB_DIR, PYTHONPATH unset): the lines between the templates' `tl-ci`
   markers. The JUnit file must show tests passed on both devices, none failed.
4. From the venv: the devices listed include cpu and npusim, a kernel runs on both, and every
   TL library loaded comes from the venv.
5. The example's BLOCK changed: the performance test must fail, giving both cycle figures.
6. The chip npusim simulates is the package's own: renamed in the venv's chips/default.json, the
   device's name follows (the source tree's copy is not what an installed package reads).

Usage: install_test.py --source ROOT --lib BUILD/lib [--keep]
"""
# SPDX-License-Identifier: Apache-2.0
import argparse
import json
import os
import pathlib
import re
import shutil
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
import zipfile

MARK_BEGIN, MARK_END = "# tl-ci: begin", "# tl-ci: end"
# What the wheel must hold (tl/_lib: the libraries, every device, the chips; tl/_data: the table).
WHEEL_MUST_HAVE = ["tl/_lib/libtl_compiler.so", "tl/_lib/libtl_hal.so",
                   "tl/_lib/libtl_plugin_cpu.so", "tl/_lib/libtl_plugin_npusim.so",
                   "tl/_lib/tl-npusim-worker", "tl/_lib/chips/default.json",
                   "tl/_data/tolerances.json", "tl/testing/plugin.py"]

SMOKE = r'''
import pathlib, sys
import numpy as np
import tl
devices = tl.devices()
print("devices:", devices)
assert "cpu" in devices and "npusim" in devices, f"expected cpu and npusim in {devices}"

@tl.kernel
def scale_add(x: tl.tensor, y: tl.tensor, z: tl.tensor, BLOCK: tl.constexpr):
    i = tl.program_id(0) * BLOCK
    tl.store(z + (i,), tl.load(x + (i,), (BLOCK,)) * 2 + tl.load(y + (i,), (BLOCK,)))

x = np.arange(1000, dtype=np.float32); y = np.ones(1000, np.float32)
for d in ("cpu", "npusim"):
    z = np.zeros_like(x)
    scale_add[(tl.cdiv(1000, 256),)](x, y, z, BLOCK=256, device=d)
    assert (z == 2 * x + 1).all(), f"wrong result on {d}"
    print("ran scale_add on", d)
venv = pathlib.Path(sys.prefix).resolve()
loaded = {l.split()[-1] for l in open("/proc/self/maps") if "libtl_" in l}
assert loaded and all(pathlib.Path(p).resolve().is_relative_to(venv) for p in loaded), loaded
print("TL libraries loaded from the venv:", len(loaded))
'''


def fail(msg):
    print(f"install_test: FAIL: {msg}", file=sys.stderr)
    sys.exit(1)


def run(cmd, **kw):
    print("+", cmd if isinstance(cmd, str) else " ".join(map(str, cmd)), flush=True)
    return subprocess.run(cmd, text=True, **kw)


def template_block(path):
    """The lines between the tl-ci markers, dedented."""
    lines = path.read_text().splitlines()
    starts = [i for i, l in enumerate(lines) if l.strip() == MARK_BEGIN]
    ends = [i for i, l in enumerate(lines) if l.strip() == MARK_END]
    if len(starts) != 1 or len(ends) != 1 or ends[0] < starts[0]:
        fail(f"{path}: expected one '{MARK_BEGIN}' ... '{MARK_END}' block")
    return [l.strip() for l in lines[starts[0] + 1:ends[0]] if l.strip()]


def check_runtime_packages(src, templates):
    """Every template installs the runtime libraries ci/setup.sh --runtime names."""
    m = re.search(r"^runtime_packages=\(([^)]*)\)", (src / "ci/setup.sh").read_text(), re.M)
    if not m:
        fail("ci/setup.sh has no runtime_packages=(...) list")
    for path in templates:
        words = set(path.read_text().split())
        missing = [p for p in m.group(1).split() if p not in words]
        if missing:
            fail(f"{path} does not install {missing} (ci/setup.sh --runtime's list)")


def build_wheel(src, lib, out):
    env = dict(os.environ, TL_LIB_DIR=str(lib))
    r = run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation",
             "--disable-pip-version-check", "-w", str(out), str(src / "python")], env=env)
    # The in-tree build's leftovers: tl.egg-info would register tl.testing's entry point for any
    # pytest run from python/, and build/ would keep stale copies of the libraries.
    for leftover in ("tl.egg-info", "build"):
        shutil.rmtree(src / "python" / leftover, ignore_errors=True)
    if r.returncode:
        fail("pip wheel ./python failed")
    wheels = list(out.glob("tl-*.whl"))
    if len(wheels) != 1:
        fail(f"expected one tl wheel in {out}, got {wheels}")
    with zipfile.ZipFile(wheels[0]) as z:
        names = set(z.namelist())
        missing = [n for n in WHEEL_MUST_HAVE if n not in names]
        if missing:
            fail(f"{wheels[0].name} lacks {missing}")
        if not (z.getinfo("tl/_lib/tl-npusim-worker").external_attr >> 16) & 0o111:
            fail("tl-npusim-worker is not executable in the wheel")
        if "none-any" in wheels[0].name:
            fail(f"{wheels[0].name} claims to be pure Python but carries native code")
    print("wheel:", wheels[0].name, f"({wheels[0].stat().st_size >> 20} MiB)")
    return wheels[0]


def user_env(venv, wheel, wheelhouse, home):
    """The environment of a user's CI job: the venv first on PATH, nothing of this checkout."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("TL_", "PYTHON", "PIP_", "VIRTUAL_ENV"))}
    env.update(PATH=f"{venv}/bin:{env.get('PATH', '/usr/bin:/bin')}", HOME=str(home),
               TL_WHEEL=str(wheel), TL_CACHE_DIR=str(home / "tl-cache"),
               PIP_NO_INDEX="1", PIP_FIND_LINKS=str(wheelhouse),
               PIP_DISABLE_PIP_VERSION_CHECK="1")
    return env


def check_junit(path):
    if not path.is_file():
        fail(f"the template's pytest run wrote no {path}")
    root = ET.parse(path).getroot()
    suites = [root] if root.tag == "testsuite" else list(root.iter("testsuite"))
    tests = sum(int(s.get("tests", 0)) for s in suites)
    failures = sum(int(s.get("failures", 0)) + int(s.get("errors", 0)) for s in suites)
    ran = {c.get("name") for c in root.iter("testcase")
           if c.find("skipped") is None and c.find("failure") is None and c.find("error") is None}
    print(f"junit: {tests} tests, {failures} failures or errors; passed: {sorted(ran)}")
    if tests == 0 or failures:
        fail(f"{path}: {tests} tests, {failures} failures or errors")
    for d in ("cpu", "npusim"):
        if not any(re.search(rf"[\[-]{d}[\]-]", n) for n in ran):
            fail(f"{path}: no test passed on {d}")


def check_block_size_changes_cycles(project, block, env):
    """The example's BLOCK changed: its performance test must fail with both figures."""
    baseline = json.loads((project / "tests/baselines/cycles.json").read_text())
    stored = baseline["kernels"]["vector_add"]["npusim"]["cycles"]
    kernels = project / "kernels.py"
    text = kernels.read_text()
    new = re.sub(r"^BLOCK = \d+$", "BLOCK = 256", text, count=1, flags=re.M)
    if new == text:
        fail(f"{kernels}: no 'BLOCK = <n>' line to change")
    kernels.write_text(new)
    r = run(block, shell=True, executable="/bin/bash", cwd=project, env=env,
            capture_output=True)
    out = r.stdout + r.stderr
    m = re.search(r"vector_add on npusim .*?: (\d+) simulated cycles, baseline (\d+)", out)
    if r.returncode == 0 or not m:
        print(out[-4000:])
        fail("with BLOCK = 256 the performance test did not fail with both cycle figures")
    got, base = int(m.group(1)), int(m.group(2))
    if base != stored or got == stored:
        fail(f"expected the baseline {stored} and a different figure, got {got} and {base}")
    print(f"BLOCK 1024 -> 256: the perf test fails: {got} simulated cycles, baseline {base}")


CHIP_NAME = r'''
import json, pathlib, sys
import numpy as np
import tl, tl.runtime
chip = pathlib.Path(tl.__file__).parent / "_lib" / "chips" / "default.json"
doc = json.loads(chip.read_text())
doc["name"] = "from-the-wheel"
chip.write_text(json.dumps(doc))
name = tl.runtime.device("npusim").info["name"]
assert name == "TNPU from-the-wheel (SystemC)", name
@tl.kernel
def inc(x: tl.tensor, BLOCK: tl.constexpr):
    tl.store(x + (0,), tl.load(x + (0,), (BLOCK,)) + 1)
x = np.zeros(64, np.float32)
inc[(1,)](x, BLOCK=64, device="npusim")  # compiled for the package's chip too
assert (x == 1).all()
print("npusim simulates the package's chip:", name)
'''


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--source", type=pathlib.Path, required=True)
    ap.add_argument("--lib", type=pathlib.Path, required=True)
    ap.add_argument("--python", default="/usr/bin/python3", help="the interpreter of the venv")
    ap.add_argument("--wheelhouse", type=pathlib.Path,
                    help="wheels of numpy, cffi, pytest (default: SOURCE/.venv/wheelhouse)")
    ap.add_argument("--keep", action="store_true", help="keep the temporary folder")
    a = ap.parse_args()
    src = a.source.resolve()
    wheelhouse = (a.wheelhouse or src / ".venv" / "wheelhouse").resolve()
    if not any(wheelhouse.glob("numpy-*.whl")):
        fail(f"no numpy wheel in {wheelhouse}: ci/setup.sh fills it (pip download of "
             "ci/templates/requirements.txt)")
    templates = sorted((src / "ci/templates").glob("*.yml"))
    check_runtime_packages(src, templates)
    blocks = {p.name: template_block(p) for p in templates}
    if len({tuple(b) for b in blocks.values()}) != 1:
        fail(f"the templates' tl-ci blocks differ: {blocks}")
    block = "set -euo pipefail\n" + "\n".join(next(iter(blocks.values())))

    tmp = pathlib.Path(tempfile.mkdtemp(prefix="tl-install-test-"))
    try:
        wheel = build_wheel(src, a.lib.resolve(), tmp / "dist")
        venv = tmp / "venv"
        if run([a.python, "-m", "venv", str(venv)]).returncode:
            fail("python3 -m venv failed")
        project = tmp / "kernel-project"
        shutil.copytree(src / "examples/kernel-project", project,
                        ignore=shutil.ignore_patterns("__pycache__", "reports"))
        env = user_env(venv, wheel, wheelhouse, tmp)
        # The template's lines: install, list the devices, the tests with JUnit and HTML report.
        if run(block, shell=True, executable="/bin/bash", cwd=project, env=env).returncode:
            fail("the template's commands failed on examples/kernel-project")
        check_junit(project / "reports/junit.xml")
        if "Simulated cycles" not in (project / "reports/report.html").read_text():
            fail("reports/report.html has no simulated cycles")
        (tmp / "smoke.py").write_text(SMOKE)
        if run([str(venv / "bin/python"), str(tmp / "smoke.py")], cwd=tmp, env=env).returncode:
            fail("the installed package did not run a kernel on cpu and npusim")
        check_block_size_changes_cycles(project, block, env)
        (tmp / "chip.py").write_text(CHIP_NAME)
        if run([str(venv / "bin/python"), str(tmp / "chip.py")], cwd=tmp, env=env).returncode:
            fail("the installed npusim device does not read the package's chips/default.json")
    finally:
        if a.keep:
            print("kept", tmp)
        else:
            shutil.rmtree(tmp, ignore_errors=True)
    print("install_test: OK")


if __name__ == "__main__":
    main()
