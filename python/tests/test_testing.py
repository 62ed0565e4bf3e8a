# tl.testing: assert_close's bounds and messages, simulated cycles and baselines, the pytest plugin.
# SPDX-License-Identifier: Apache-2.0
import json
import os
import pathlib
import re
import subprocess
import sys

import numpy as np
import pytest

import tl
from tl.testing import BaselineError, assert_close, expect_cycles, reference, simulated_cycles
from tl.testing import tolerances

ROOT = pathlib.Path(__file__).resolve().parents[2]
needs_npusim = pytest.mark.skipif("npusim" not in tl.devices(), reason="no npusim device")


def test_tolerances_come_from_the_kits_table():
    kit = json.loads((ROOT / "conformance/data/tolerances.json").read_text())
    assert tolerances.lookup("add", "f32").ulp == kit["entries"]["add"]["*"]["ulp"]
    assert tolerances.lookup("exp", tl.bfloat16).ulp == kit["entries"]["exp"]["bf16"]["ulp"]
    assert tolerances.lookup(None, np.float16).normwise == kit["default"]["f16"]["normwise"]
    assert tolerances.lookup("abs", "f32").exact
    assert tolerances.lookup(None, "i32").exact  # no entry: exact, as tl-conform


def test_passes_within_the_bound():
    x = np.float32([1, 2, 3])
    c = assert_close(x + x, 2 * x.astype(np.float64), op="add")
    assert c.max_ulp == 0 and c.normwise == 0


def test_ulp_failure_names_first_bad_element_errors_and_bound():
    ref = np.ones((4, 8))
    actual = ref.astype(np.float32)
    actual[1, 3] = np.nextafter(np.float32(1), np.float32(2))  # 1 ulp: first bad element
    actual[2, 5] = np.float32(1) + 4 * np.finfo(np.float32).eps  # 4 ulp: the worst
    with pytest.raises(AssertionError) as e:
        assert_close(actual, ref, op="add", name="z")
    msg = str(e.value)
    assert "'z' (dtype f32, op add): error above 0.5 ulp; 2 of 32 elements outside" in msg
    assert "first bad element [1, 3]: actual 1.00000012, reference 1 (error 1 ulp)" in msg
    assert "worst element [2, 5]: actual 1.00000048, reference 1 (error 4 ulp)" in msg
    normwise = np.sqrt(1 + 16) * 2.0 ** -23 / np.sqrt(32)
    assert f"error: max 4 ulp, normwise {normwise:.3g} (||actual - reference||_2" in msg
    assert "bound used: 0.5 ulp from tolerances.json entries['add']['*']" in msg


def test_normwise_failure_names_the_fp32_contract():
    ref = np.linspace(1, 2, 100)
    actual = ref.astype(np.float32)
    actual[70] *= 1 + 1e-4
    with pytest.raises(AssertionError) as e:
        assert_close(actual, ref)
    msg = str(e.value)
    assert "(dtype f32, op (default)): normwise error" in msg and "> 1e-06" in msg
    assert "first bad element [70]" in msg
    assert "bound used: normwise 1e-06 from tolerances.json default['f32']" in msg


def test_gamma_bound_needs_n_and_uses_it():
    a = np.random.default_rng(0).uniform(-1, 1, (8, 64)).astype(np.float16)
    b = np.random.default_rng(1).uniform(-1, 1, (64, 8)).astype(np.float16)
    ref = reference.matmul(a, b)
    with pytest.raises(ValueError, match=r"pass n= \(terms summed per result\)"):
        assert_close(ref.astype(np.float16), ref, op="dot")
    wrong = ref.astype(np.float16)
    wrong[0, 0] += np.float16(64)
    with pytest.raises(AssertionError, match=r"bound used: .*n u cond = 2 \* 64 \* 5.96e-08"):
        assert_close(wrong, ref, op="dot", n=64, ref_abs=reference.matmul(abs(a), abs(b)))


def test_16bit_results_of_f32_sums_allow_one_rounding():
    # dot / gemm / attention at bf16: one rounding to bf16 (2^-8 normwise) plus n u cond in f32
    # ("accumulate": "f32", "combine": "sum"). Catches the old rule (n u cond in bf16's u: 0.18
    # normwise at K = 45), which passed a GEMM with every 97th element doubled.
    rng = np.random.default_rng(3)
    a = tl.bf16.to_float32(tl.bf16.array(rng.uniform(-1, 1, (64, 45))))
    b = tl.bf16.to_float32(tl.bf16.array(rng.uniform(-1, 1, (45, 50))))
    ref, ref_abs = reference.matmul(a, b), reference.matmul(abs(a), abs(b))
    rounded = tl.bf16.to_float32(tl.bf16.array(ref))  # f32 sums, then one bf16 rounding
    for op in ("dot", "gemm"):
        assert_close(rounded, ref, op=op, dtype="bf16", n=45, ref_abs=ref_abs)
    wrong = rounded.copy()
    wrong.reshape(-1)[::97] *= 2
    with pytest.raises(AssertionError, match=r"normwise"):
        assert_close(wrong, ref, op="gemm", dtype="bf16", n=45, ref_abs=ref_abs)
    entry = tolerances.lookup("gemm", "bf16")
    assert entry.accumulate == "f32" and entry.combine_sum


def test_exact_nan_and_bf16():
    with pytest.raises(AssertionError, match=r"exact results required.*\n.*first bad element \[1\]"):
        assert_close(np.float32([1, -2]), np.float64([1, 2]), op="abs")
    with pytest.raises(AssertionError, match=r"NaN where the reference is finite"):
        assert_close(np.float32([1, np.nan]), np.float64([1, 2]), op="add")
    # bf16 values held in float32: 1 + 2^-7 is 1 ulp of bf16 away from 1
    c = assert_close(np.float32([1 + 2 ** -7]), np.float64([1.0]), op="exp", dtype="bf16")
    assert c.max_ulp == 1


def test_bad_input_is_a_clear_error():
    with pytest.raises(ValueError, match=r"shape mismatch: actual has shape \(3,\), reference "
                                         r"\(4,\)"):
        assert_close(np.zeros(3, np.float32), np.zeros(4))
    with pytest.raises(ValueError, match=r"op 'exq' is not in the tolerance table; known ops:"):
        assert_close(np.zeros(3, np.float32), np.zeros(3), op="exq")


@tl.kernel
def twice(x: tl.tensor, y: tl.tensor, BLOCK: tl.constexpr):
    i = tl.program_id(0) * BLOCK
    tl.store(y + (i,), tl.load(x + (i,), (BLOCK,)) * 2)


def _launch_args(n=1 << 14):
    x = np.arange(n, dtype=np.float32)
    return x, np.empty_like(x)


@needs_npusim
def test_simulated_cycles_are_deterministic_and_depend_on_the_block():
    x, y = _launch_args()
    a = simulated_cycles(twice, (16,), x, y, BLOCK=1024)
    b = simulated_cycles(twice, (16,), x, y, BLOCK=1024)
    c = simulated_cycles(twice, (64,), x, y, BLOCK=256)
    assert (y == 2 * x).all()
    assert a == b > 0 and c != a


def test_cycles_need_a_simulated_device():
    x, y = _launch_args(256)
    with pytest.raises(ValueError, match="device 'cpu' .* measures wall time"):
        simulated_cycles(twice, (1,), x, y, BLOCK=256, device="cpu")


@needs_npusim
def test_expect_cycles_baselines(tmp_path, monkeypatch):
    import tl.testing.cycles as cycles

    x, y = _launch_args()
    path = tmp_path / "cycles.json"
    with pytest.raises(BaselineError, match=r"no baseline file .*cycles\.json; create it with "
                                            r"`python -m pytest --tl-update-baselines`"):
        expect_cycles(twice, (16,), x, y, BLOCK=1024, baseline_file=path)
    monkeypatch.setattr(cycles, "UPDATE", True)
    rec = expect_cycles(twice, (16,), x, y, BLOCK=1024, baseline_file=path, bytes=2 * x.nbytes)
    assert rec["status"] == "recorded" and 0 < rec["roofline_fraction"] <= 1.05
    stored = json.loads(path.read_text())["kernels"]["twice"]["npusim"]
    assert stored["cycles"] == rec["cycles"]
    monkeypatch.setattr(cycles, "UPDATE", False)
    assert expect_cycles(twice, (16,), x, y, BLOCK=1024, baseline_file=path)["status"] == "passed"
    with pytest.raises(BaselineError) as e:
        expect_cycles(twice, (64,), x, y, BLOCK=256, baseline_file=path)
    m = re.search(r"twice on npusim .*: (\d+) simulated cycles, baseline (\d+) \([+-]\d+\.\d%, "
                  r"tolerance 0%\)", str(e.value))
    assert m and int(m.group(2)) == stored["cycles"] and int(m.group(1)) != stored["cycles"]
    loose = abs(int(m.group(1)) / stored["cycles"] - 1) + 0.01
    expect_cycles(twice, (64,), x, y, BLOCK=256, baseline_file=path, tolerance=loose)
    # The roofline fraction, one-sided: the slower block size fails with both fractions.
    slower = int(m.group(1)) > stored["cycles"]
    args = (64,), x, y
    if slower:
        with pytest.raises(BaselineError, match=r"twice on npusim .*: 0\.\d+ of the roofline "
                                                r"\(\d+ simulated cycles\), baseline 0\.\d+"):
            expect_cycles(twice, *args, BLOCK=256, baseline_file=path, bytes=2 * x.nbytes,
                          metric="roofline")
    with pytest.raises(ValueError, match="metric='roofline' needs flops= and/or bytes="):
        expect_cycles(twice, *args, BLOCK=256, baseline_file=path, metric="roofline")


def _pytest(args, cwd):
    env = dict(os.environ, PYTHONPATH=str(ROOT / "python"))
    return subprocess.run([sys.executable, "-m", "pytest", "-p", "tl.testing.plugin",
                           "-p", "no:cacheprovider", *args], cwd=cwd, env=env, text=True,
                          capture_output=True)


def test_plugin_runs_a_test_per_device_and_rejects_unknown_ones(tmp_path):
    (tmp_path / "test_k.py").write_text(
        "import pytest\n"
        "def test_any(tl_device):\n    assert tl_device\n"
        "@pytest.mark.tl_devices('nosuch')\ndef test_only(tl_device):\n    pass\n")
    r = _pytest(["-v", "--tl-device=cpu", f"--tl-report={tmp_path}/r.html"], tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "test_any[cpu] PASSED" in r.stdout
    assert "test_only[no-device] SKIPPED" in r.stdout
    assert "test_any[cpu]" in (tmp_path / "r.html").read_text()
    r = _pytest(["--tl-device=cpu,gpu9"], tmp_path)
    assert r.returncode != 0
    assert "--tl-device: no device 'gpu9' here; the devices present are cpu" in r.stderr


@pytest.mark.parametrize("name", ["tolerances", "compare", "reference", "cycles"])
def test_docstring_examples(name):
    import doctest
    import importlib

    result = doctest.testmod(importlib.import_module(f"tl.testing.{name}"))
    assert result.failed == 0 and result.attempted > 0


def test_overflow_to_infinity_is_right_beyond_the_range():
    # 1e39 is past f32's range: the rounded result, inf, is exact; the largest finite is not.
    ok = assert_close(np.float32([np.inf, 1]), np.float64([1e39, 1]), op="mul")
    assert ok.max_ulp == 0
    with pytest.raises(AssertionError, match=r"first bad element \[0\]"):
        assert_close(np.float32([np.finfo(np.float32).max, 1]), np.float64([1e39, 1]), op="mul")
