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
                  o.reshape(4, 37, 24), lse, np.float32(24 ** -0.5), np.int32(2)], {3, 4})
    assert_close(o, ref.attention(q, k, v, causal=True), "attention", "f32", n=45,
                 ref_abs=ref.attention(q, k, np.abs(v), causal=True))
