# tl.autotune's choices on disk ($TL_CACHE_DIR/autotune): reused by another process without
# timing, keyed by device, compiler and shape bucket; corrupt or stale entries warned and retuned.
# SPDX-License-Identifier: Apache-2.0
import json
import os
import pathlib
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import tl
from util import DEVICES

PYTHON_DIR = pathlib.Path(__file__).resolve().parents[1]


@tl.kernel
def tagged(x: tl.tensor, y: tl.tensor, tag: tl.tensor, n, BLOCK: tl.constexpr, TAG: tl.constexpr):
    i = tl.program_id(0) * BLOCK
    tl.store(y + (i,), tl.load(x + (i,), (BLOCK,)) * 2.0)
    tl.store(tag + (0,), tl.full((1,), TAG))  # which config ran


CONFIGS = [tl.Config({"BLOCK": 16, "TAG": 1}), tl.Config({"BLOCK": 64, "TAG": 2})]


def tuner(configs=CONFIGS, **kw):
    return tl.autotune(configs=configs, key=["n"], warmup=0, rep=1, **kw)(tagged)


def launch(t, n, device="cpu"):
    """Runs `t` on n elements; returns the TAG of the config that ran (the result checked)."""
    x = np.arange(n, dtype=np.float32)
    y = np.zeros(n, np.float32)
    tag = np.zeros(1, np.int32)
    t[lambda m: (tl.cdiv(m["n"], m["BLOCK"]),)](x, y, tag, n, device=device)
    assert (y == 2 * x).all()
    return int(tag[0])


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("TL_CACHE_DIR", str(tmp_path))
    return tmp_path / "autotune"


def entries(cache):
    return sorted(cache.glob("*.json"))


def test_entry_records_device_compiler_and_bucket(cache):
    t = tuner()
    tag = launch(t, 1000)
    assert t.tunings == 1
    [path] = entries(cache)
    e = json.loads(path.read_text())
    info = tl.runtime.device("cpu").info
    assert e["where"]["key"] == ["1024"]  # 1000 in its power-of-two bucket
    assert e["where"]["device"]["name"] == info["name"]
    assert e["where"]["device"]["driver_version"] == info["driver_version"] != ""
    assert e["where"]["device"]["plugin"] == "cpu" and e["where"]["target"] == "llvm-cpu"
    assert e["what"]["compiler"] == tl.ir.compiler_version() and len(e["what"]["compiler"]) == 64
    assert e["config"] == CONFIGS[tag - 1].kwargs and len(e["times_ms"]) == 2


def test_bucket_device_and_exact_keys(cache):
    # Fails if the bucket were ignored (1024 would time again) or devices shared a choice.
    t = tuner()
    launch(t, 1000)
    launch(t, np.int64(1024))  # numpy integers bucket as Python ones
    assert t.tunings == 1
    launch(t, 1025)
    assert t.tunings == 2 and len(entries(cache)) == 2
    if "npusim" in DEVICES:
        launch(t, 1000, device="npusim")
        assert t.tunings == 3 and len(entries(cache)) == 3
    exact = tuner(bucket=None)
    launch(exact, 1000)
    launch(exact, 1024)
    assert exact.tunings == 2


def test_stored_choice_is_used_without_timing(cache):
    # A new autotuner (as in a new process) reads the choice: edited to the config timing did
    # not choose, that config runs; timing again would count a tuning.
    tag = launch(tuner(), 512)
    [path] = entries(cache)
    e = json.loads(path.read_text())
    other = CONFIGS[2 - tag]
    e["config"] = other.kwargs
    path.write_text(json.dumps(e))
    t = tuner()
    assert launch(t, 512) == other.kwargs["TAG"] and t.tunings == 0


@pytest.mark.parametrize("damage,why", [
    (lambda e: "{not json", "is corrupt"),
    (lambda e: json.dumps([1, 2]), "is corrupt (not a tl.autotune entry)"),
    (lambda e: json.dumps(dict(e, config={"BLOCK": 8, "TAG": 9})),
     "is corrupt (its config {'BLOCK': 8, 'TAG': 9} is not one of the configs)"),
    (lambda e: json.dumps(dict(e, what=dict(e["what"], compiler="0" * 64))),
     "is stale (its compiler changed)"),
    (lambda e: json.dumps(dict(e, what=dict(e["what"], source="edited"))),
     "is stale (its source changed)"),
    (lambda e: json.dumps(dict(e, where=dict(e["where"], key=["8"]))),
     "is for another kernel, key or device"),
])
def test_corrupt_or_stale_entry_is_ignored_with_a_warning(cache, damage, why):
    launch(tuner(), 256)
    [path] = entries(cache)
    path.write_text(damage(json.loads(path.read_text())))
    t = tuner()
    with pytest.warns(UserWarning, match=f"tl.autotune: ignoring {path}: it {why}".replace(
            "(", r"\(").replace(")", r"\)").replace("[", r"\[").replace("{", r"\{")):
        launch(t, 256)
    assert t.tunings == 1
    assert json.loads(path.read_text())["what"]["compiler"] == tl.ir.compiler_version()
    launch(tuner(), 256)  # the rewritten entry holds again


def test_new_configs_make_the_entry_stale(cache):
    launch(tuner(), 128)
    t = tuner(CONFIGS + [tl.Config({"BLOCK": 32, "TAG": 3})])
    with pytest.warns(UserWarning, match=r"is stale \(its configs changed\)"):
        launch(t, 128)
    assert t.tunings == 1


def test_no_disk_without_cache_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("TL_CACHE_DIR", "")
    monkeypatch.setenv("HOME", str(tmp_path))
    t = tuner()
    launch(t, 64)
    launch(t, 64)
    assert t.tunings == 1 and not list(tmp_path.rglob("*.json"))


def test_unwritable_cache_dir_warns_and_runs(tmp_path, monkeypatch):
    blocker = tmp_path / "file"
    blocker.write_text("")
    monkeypatch.setenv("TL_CACHE_DIR", str(blocker))  # a file where the directory should be
    t = tuner()
    with pytest.warns(UserWarning, match="cannot keep the choice for tagged"):
        launch(t, 64)
    assert t.tunings == 1


def test_bad_autotune_arguments():
    with pytest.raises(TypeError, match="key 'm' is not a parameter of tagged"):
        tl.autotune(configs=CONFIGS, key=["m"])(tagged)
    with pytest.raises(TypeError, match="sets 'n', which is not a tl.constexpr parameter"):
        tl.autotune(configs=[tl.Config({"n": 3})], key=["n"])(tagged)


SCRIPT = """
import json, sys
import numpy as np
import tl

@tl.autotune(configs=[tl.Config({"BLOCK": 16}), tl.Config({"BLOCK": 64})], key=["n"], rep=1)
@tl.kernel
def double(x: tl.tensor, y: tl.tensor, n, BLOCK: tl.constexpr):
    i = tl.program_id(0) * BLOCK
    tl.store(y + (i,), tl.load(x + (i,), (BLOCK,)) * 2.0)

out = {}
for device in sys.argv[1:]:
    x = np.arange(300, dtype=np.float32); y = np.zeros_like(x)
    double[lambda m: (tl.cdiv(m["n"], m["BLOCK"]),)](x, y, 300, device=device)
    assert (y == 2 * x).all()
    out[device] = [v.kwargs["BLOCK"] for v in double.best.values()][-1]
print(json.dumps({"tunings": double.tunings, "chosen": out}))
"""


def test_second_process_reuses_the_choice(tmp_path):
    # Fails if the choice were kept in memory only: the second process would time again.
    script = tmp_path / "tuned.py"
    script.write_text(textwrap.dedent(SCRIPT))
    devices = [d for d in ("cpu", "npusim") if d in DEVICES]
    env = dict(os.environ, TL_CACHE_DIR=str(tmp_path / "cache"),
               PYTHONPATH=os.pathsep.join([str(PYTHON_DIR), os.environ.get("PYTHONPATH", "")]))

    def run():
        r = subprocess.run([sys.executable, str(script)] + devices, env=env, capture_output=True,
                           text=True, timeout=300)
        assert r.returncode == 0, r.stderr
        assert "tl.autotune" not in r.stderr, r.stderr  # no warning
        return json.loads(r.stdout)

    first, second = run(), run()
    assert first["tunings"] == len(devices) and second["tunings"] == 0
    assert second["chosen"] == first["chosen"]


# Per-target configs (issue 18): a Config(targets=...) is tried only on those targets, and there
# instead of the generic ones. Catches: a tnpu config chosen on cpu (TAG 3 on cpu), the generic
# configs still tried on tnpu (TAG 1 or 2 there, or a timing entry for them), a target's own
# configs ignored.
TARGETED = CONFIGS + [tl.Config({"BLOCK": 128, "TAG": 3}, targets="tnpu")]


@pytest.mark.parametrize("device", DEVICES)
def test_target_configs_replace_generic_ones_on_their_target(cache, device):
    t = tuner(TARGETED)
    tag = launch(t, 1000, device)
    [path] = entries(cache)
    times = json.loads(path.read_text())["times_ms"]
    if tl.runtime.device(device).info["target"] == "tnpu":
        assert tag == 3 and len(times) == 1
    else:
        assert tag in (1, 2) and len(times) == 2


def test_config_targets_checked():
    # Catches: an empty or non-string target list accepted (a config no device would try).
    with pytest.raises(TypeError, match="targets must be non-empty"):
        tl.Config({"BLOCK": 16}, targets=())
    with pytest.raises(TypeError, match="targets must be non-empty"):
        tl.Config({"BLOCK": 16}, targets=[1])
    assert tl.Config({"BLOCK": 16}, targets="tnpu").targets == ("tnpu",)


def test_no_config_for_target_is_a_clear_error(cache):
    # Catches: an autotuner whose every config names other targets silently choosing nothing.
    t = tuner([tl.Config({"BLOCK": 16, "TAG": 1}, targets="tnpu")])
    with pytest.raises(ValueError, match="has no config for target"):
        launch(t, 100, "cpu")


@tl.kernel
def capped(x: tl.tensor, y: tl.tensor, tag: tl.tensor, n, BLOCK: tl.constexpr,
           TAG: tl.constexpr):
    tl.static_assert(BLOCK <= 32, "BLOCK above this chip's limit")  # a config that fails
    i = tl.program_id(0) * BLOCK
    tl.store(y + (i,), tl.load(x + (i,), (BLOCK,)) * 2.0)
    tl.store(tag + (0,), tl.full((1,), TAG))


def test_a_config_that_does_not_compile_is_left_out_with_a_warning(cache):
    # A config the device's chip cannot compile (e.g. a tile beyond its scratchpad) is left out
    # of the timing, said aloud, and the others still chosen among; every config failing raises
    # the first compile error. Catches: the error escaping the autotuner (the launch fails),
    # the failed config chosen or timed (TAG 2, or a time stored for it), the failure silent
    # (no warning), all-failing configs choosing nothing silently.
    configs = [tl.Config({"BLOCK": 64, "TAG": 2}), tl.Config({"BLOCK": 16, "TAG": 1})]
    t = tl.autotune(configs=configs, key=["n"], warmup=0, rep=1)(capped)
    with pytest.warns(UserWarning, match="does not compile for llvm-cpu, left out.*BLOCK above"):
        assert launch(t, 1000) == 1
    [path] = entries(cache)
    assert json.loads(path.read_text())["times_ms"][0] is None
    bad = tl.autotune(configs=[tl.Config({"BLOCK": 64, "TAG": 2})], key=["n"], warmup=0,
                      rep=1)(capped)
    with pytest.warns(UserWarning), pytest.raises(tl.CompileError, match="BLOCK above"):
        launch(bad, 1000)
