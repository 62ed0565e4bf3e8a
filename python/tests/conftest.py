# pytest setup: the libraries of the build tree, a private compile cache, the devices to test.
# SPDX-License-Identifier: Apache-2.0
import os
import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "python"))
os.environ.setdefault("TL_LIB_DIR", str(ROOT / "build" / "lib"))

import pytest  # noqa: E402


@pytest.fixture(autouse=True, scope="session")
def _cache_dir(tmp_path_factory):
    os.environ["TL_CACHE_DIR"] = str(tmp_path_factory.mktemp("tl-cache"))
    os.environ["TL_PROFILE_REPORT"] = "0"


# What the tnpu target cannot run yet, by test: the test fails with exactly this located error on
# npusim and is reported as skipped with it. The list is strict: a listed test that passes, or
# fails with another message, fails (update the list); an unlisted test is never skipped.
EXPECTED_ON_NPUSIM = {
    "test_kernels.py::test_casts[npusim-None]":
        "tnpu: tiles of f64 are not supported by the vector unit",
    "test_kernels.py::test_dot_f64_transpose[npusim-None]":
        "tnpu: 'dot' of tile<16x16xf64> and tile<16x16xf64> into tile<16x16xf64> is not supported",
    "test_kernels.py::test_scan[npusim-None]":
        "tnpu: tiles of i64 are not supported by the vector unit",
    "test_scalars.py::test_tl_float64_annotation_promotes[npusim-None]":
        "tnpu: tiles of f64 are not supported by the vector unit",
}


def _listed(item):
    return EXPECTED_ON_NPUSIM.get(f"{item.path.name}::{item.name}")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """Capability gate, strict: a test listed in EXPECTED_ON_NPUSIM must fail with its message
    (then it is skipped with it); every other outcome of a listed test fails."""
    outcome = yield
    report = outcome.get_result()
    expected = _listed(item)
    if expected is None or call.when != "call":
        return
    exc = call.excinfo
    if exc is not None and expected in str(exc.value):
        report.outcome = "skipped"
        report.longrepr = (str(item.path), item.location[1], f"Skipped: {exc.value}")
    elif exc is None:
        report.outcome = "failed"
        report.longrepr = (f"{item.nodeid} passed, but conftest.py's EXPECTED_ON_NPUSIM says it "
                           f"fails with '{expected}': remove it from the list")
    else:
        report.longrepr = (f"{item.nodeid} is expected to fail with '{expected}', not with:\n"
                           f"{exc.value}")
