# The pytest plugin of tl.testing: a test per device, baseline updates, the HTML report.
# SPDX-License-Identifier: Apache-2.0
"""Registered as pytest plugin ``tl.testing.plugin`` when tl is installed (from a source
checkout: ``python -m pytest -p tl.testing.plugin``).

- A test taking a ``tl_device`` argument runs once per device: every device the HAL sees, or
  those ``--tl-device=cpu,npusim`` names. ``@pytest.mark.tl_devices("npusim")`` limits a test to
  those devices (the others are skipped, saying why).
- ``--tl-update-baselines`` makes ``expect_cycles`` record cycles instead of comparing them.
- ``--tl-report=report.html`` writes a self-contained HTML report: every test with its device
  and outcome, and every kernel's simulated cycles against its baseline.
"""
import pytest

from . import cycles, report


def pytest_addoption(parser):
    g = parser.getgroup("tl", "TL kernel tests (tl.testing)")
    g.addoption("--tl-device", action="append", default=[], metavar="NAMES",
                help="devices to run tl_device tests on (comma-separated, repeatable; "
                     "default: every device present)")
    g.addoption("--tl-update-baselines", action="store_true",
                help="expect_cycles records the simulated cycles into the baseline files "
                     "instead of comparing")
    g.addoption("--tl-report", metavar="PATH", help="write an HTML report of the run to PATH")


def present_devices():
    """The device kinds the HAL sees, once each, in its order."""
    import tl

    return list(dict.fromkeys(tl.devices()))


def pytest_configure(config):
    config.addinivalue_line("markers", "tl_devices(*names): run this tl_device test only on "
                                       "these devices")
    if config.getoption("--tl-update-baselines"):
        cycles.UPDATE = True
    asked = [n.strip() for v in config.getoption("--tl-device") for n in v.split(",") if n.strip()]
    present = present_devices()
    unknown = [n for n in asked if n.split(":")[0] not in present]
    if unknown:
        raise pytest.UsageError(
            f"--tl-device: no device {', '.join(repr(n) for n in unknown)} here; the devices "
            f"present are {', '.join(present) or 'none'} (tl.devices())")
    config._tl_devices = list(dict.fromkeys(asked)) or present
    config._tl_results = []


def pytest_generate_tests(metafunc):
    if "tl_device" not in metafunc.fixturenames:
        return
    selected = metafunc.config._tl_devices
    marker = metafunc.definition.get_closest_marker("tl_devices")
    only = set(marker.args) if marker else None
    params = []
    for d in selected:
        if only is None or d.split(":")[0] in only:
            params.append(pytest.param(d, id=d))
    if not params:  # the test's devices are all deselected or absent: say so, once
        why = (f"needs {', '.join(sorted(only))}; this run has {', '.join(selected) or 'none'}")
        params.append(pytest.param(None, id="no-device", marks=pytest.mark.skip(reason=why)))
    metafunc.parametrize("tl_device", params)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    rep = outcome.get_result()
    if rep.when == "call" or (rep.when == "setup" and not rep.passed):
        callspec = getattr(item, "callspec", None)
        item.config._tl_results.append({
            "test": item.nodeid, "device": callspec.params.get("tl_device") if callspec else None,
            "outcome": rep.outcome, "duration": rep.duration,
            "message": str(rep.longrepr) if rep.failed else (
                rep.longrepr[2] if rep.skipped and isinstance(rep.longrepr, tuple) else "")})


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    if not cycles.RECORDS:
        return
    terminalreporter.section("tl: simulated cycles")
    for r in cycles.RECORDS:
        base = "-" if r["baseline"] is None else r["baseline"]
        terminalreporter.write_line(f"{r['name']:24} {r['device']:10} {r['cycles']:>12} cycles  "
                                    f"baseline {base:>12}  {r['status']}")


def pytest_sessionfinish(session, exitstatus):
    path = session.config.getoption("--tl-report")
    if path:
        report.write(path, session.config._tl_results, cycles.RECORDS,
                     session.config._tl_devices)
