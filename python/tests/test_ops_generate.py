# The generation step of tl.ops (tl/ops/generate.py): the check names stale files, and the
# checked-in kernels/ops text runs on its own (compiled from the file, launched without tl.ops).
# SPDX-License-Identifier: Apache-2.0
import pathlib

import numpy as np

import tl
from tl import jit, runtime
from tl.ops import generate
from tl.ops import reference as ref
from tl.testing import assert_close

KERNELS = pathlib.Path(__file__).resolve().parents[2] / "kernels" / "ops"


def test_check_names_changed_missing_and_extra_files(tmp_path):
    # Catches: a check that passes on stale output (the ctest ops-generated-current relies on it).
    assert generate.main([str(tmp_path)]) == 0
    assert generate.check(tmp_path) == []
    (tmp_path / "add_f32.tlir").write_text("// edited\n")
    (tmp_path / "relu_f32.tlir").unlink()
    (tmp_path / "old_op_f32.tlir").write_text("")
    problems = "\n".join(generate.check(tmp_path))
    assert "add_f32.tlir: differs" in problems
    assert "relu_f32.tlir: missing" in problems
    assert "old_op_f32.tlir: extra" in problems
    assert generate.main([str(tmp_path), "--check"]) == 1


def test_specializations_cover_every_dtype_once():
    # Catches: a name made twice (one file would overwrite another).
    names = [s.name for s in generate.specs()]
    assert len(names) == len(set(names))
    assert all(any(n.endswith(f"_{dt}") for n in names) for dt in generate.DTYPES)


def _launch_file(name, grid, arrays, written):
    """Compiles kernels/ops/<name>.tlir for the cpu device and launches it: no tracing."""
    dev = runtime.device("cpu")
    exe = dev.load(jit.compile_ir((KERNELS / f"{name}.tlir").read_text(), "llvm-cpu"))
    args = []
    for a in arrays:
        if isinstance(a, np.ndarray):
            args.append(("tensor", a, tl.core.dtype_of_numpy(a.dtype).code))
        else:
            args.append(("scalar", tl.core.dtype_of_numpy(np.dtype(type(a))).code, a.item()))
    dev.launch(exe, grid, args, written)


def test_checked_in_gemm_and_attention_run_standalone():
    # Catches: generated text that parses but computes something else than tl.ops (a constexpr
    # baked wrongly, arguments in another order than index.tsv says).
    rng = np.random.default_rng(5)
    a = rng.uniform(-1, 1, (1, 70, 45)).astype(np.float32)
    b = rng.uniform(-1, 1, (1, 45, 33)).astype(np.float32)
    bias = rng.uniform(-1, 1, 33).astype(np.float32)
    out = np.zeros((1, 70, 33), np.float32)
    _launch_file("gemm_gelu_bias_f32", (2, 1, 1), [a, b, bias, out, out, np.float32(1.0)], {3})
    assert_close(out[0], ref.gemm(a[0], b[0], bias, "gelu"), "gemm", "f32", n=45,
                 ref_abs=np.abs(a[0]) @ np.abs(b[0]) + np.abs(bias))
    q = rng.standard_normal((2, 2, 37, 24)).astype(np.float32)  # B 2, H 2
    k = rng.standard_normal((2, 1, 45, 24)).astype(np.float32)  # one kv head: group 2
    v = rng.standard_normal((2, 1, 45, 24)).astype(np.float32)
    o, lse = np.zeros_like(q), np.zeros((4, 37), np.float32)
    _launch_file("attention_causal_d64_f32", (2, 4, 1),
                 [q.reshape(4, 37, 24), k.reshape(2, 45, 24), v.reshape(2, 45, 24),
                  o.reshape(4, 37, 24), lse, np.float32(24 ** -0.5), np.int32(2),
                  np.zeros(1, np.int32), np.int32(2)], {3, 4})
    assert_close(o, ref.attention(q, k, v, causal=True), "attention", "f32", n=45,
                 ref_abs=ref.attention(q, k, np.abs(v), causal=True))


def test_checked_in_split_k_and_key_lengths_run_standalone():
    # Catches: the split-K pair's files disagreeing on the partials' layout (s batch + z), the
    # reduction's splits or alpha in another place than index.tsv says, and the key-length
    # specialization not masking (lengths 0 and 30 of 45: zeros, then the masked reference).
    rng = np.random.default_rng(6)
    a = rng.uniform(-1, 1, (2, 3, 1000)).astype(np.float32)
    b = rng.uniform(-1, 1, (2, 1000, 70)).astype(np.float32)
    bias = rng.uniform(-1, 1, 70).astype(np.float32)
    part = np.full((6, 3, 70), np.nan, np.float32)
    _launch_file("gemm_splitk_partial_f32", (1, 2, 6), [a, b, part, np.int32(352)], {2})
    out = np.full((2, 3, 70), np.nan, np.float32)
    res = rng.uniform(-1, 1, (2, 3, 70)).astype(np.float32)
    _launch_file("gemm_splitk_reduce_relu_bias_res_f32", (1, 2, 2),
                 [part, bias, res, out, np.float32(0.5), np.int32(3)], {3})
    want = ref.gemm(a, b, bias, "relu", res, 0.5)
    assert_close(out, want, "gemm", "f32", n=1000,
                 ref_abs=0.5 * np.abs(a) @ np.abs(b) + np.abs(bias) + np.abs(res))
    q = rng.standard_normal((2, 2, 37, 64)).astype(np.float32)
    k = rng.standard_normal((2, 1, 45, 64)).astype(np.float32)
    v = rng.standard_normal((2, 1, 45, 64)).astype(np.float32)
    lens = np.array([0, 30], np.int32)
    o, lse = np.full_like(q, np.nan), np.zeros((4, 37), np.float32)
    _launch_file("attention_len_d64_f32", (2, 4, 1),
                 [q.reshape(4, 37, 64), k.reshape(2, 45, 64), v.reshape(2, 45, 64),
                  o.reshape(4, 37, 64), lse, np.float32(0.125), np.int32(2), lens, np.int32(2)],
                 {3, 4})
    assert not np.any(o[0]) and np.all(lse[:2] == -np.inf)
    assert_close(o, ref.attention(q, k, v, key_lengths=lens), "attention", "f32", n=45,
                 ref_abs=ref.attention(q, k, np.abs(v), key_lengths=lens))


def test_checked_in_key_mask_runs_standalone():
    # Catches: the key-mask specialization not masking, or reading the mask as lengths or with
    # another entry's row (left padding of entry 0: its first 25 of 45 keys masked, and every
    # key masked in entry 1: zeros and lse -inf), from the checked-in file alone.
    rng = np.random.default_rng(7)
    q = rng.standard_normal((2, 2, 37, 64)).astype(np.float32)
    k = rng.standard_normal((2, 1, 45, 64)).astype(np.float32)
    v = rng.standard_normal((2, 1, 45, 64)).astype(np.float32)
    mask = np.zeros((2, 45), np.int32)
    mask[0, 25:] = 1
    o, lse = np.full_like(q, np.nan), np.zeros((4, 37), np.float32)
    _launch_file("attention_mask_d64_f32", (2, 4, 1),
                 [q.reshape(4, 37, 64), k.reshape(2, 45, 64), v.reshape(2, 45, 64),
                  o.reshape(4, 37, 64), lse, np.float32(0.125), np.int32(2), mask, np.int32(2)],
                 {3, 4})
    assert not np.any(o[1]) and np.all(lse[2:] == -np.inf)
    assert_close(o, ref.attention(q, k, v, key_mask=mask), "attention", "f32", n=45,
                 ref_abs=ref.attention(q, k, np.abs(v), key_mask=mask))


def test_every_specialization_has_a_complete_conformance_case():
    # Catches: a specialization tl-conform's ops suite would not run (no case line), an argument
    # without a value (the suite fails the case), an output not poisoned (an element never
    # written would pass), a tolerance name the table does not have (the f32 default would
    # apply silently), and a grid with a zero axis or no work counted for the roofline.
    import json
    from tl.ops import cases
    table = json.loads((KERNELS.parents[1] / "conformance" / "data" / "tolerances.json")
                       .read_text())["entries"]
    lines = [line.split("\t") for line in (KERNELS / "cases.tsv").read_text().splitlines()
             if line and not line.startswith("#")]
    assert tuple(lines[0]) == cases.COLUMNS
    rows = {r[0]: dict(zip(cases.COLUMNS, r)) for r in lines[1:]}
    assert sorted(rows) == sorted(s.name for s in generate.specs())
    for s in generate.specs():
        r = rows[s.name]
        values = dict(a.split("=", 1) for a in r["args"].split())
        assert list(values) == list(cases._arg_names(s))[:len(s.args)], s.name
        assert any(v.startswith(("nan:", "zeros:")) for v in values.values()), s.name
        assert r["tolerance"] in table, (s.name, r["tolerance"])
        assert all(int(g) >= 1 for g in r["grid"].split(",")), s.name
        assert float(r["bytes"]) > 0 and int(r["terms"]) >= 1, s.name
