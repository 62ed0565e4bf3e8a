# tl-sim end to end: .npy inputs -> f32 GEMM on the default chip -> .npy output within 1e-6
# normwise of fp64, and a row softmax; stats and trace JSON are written; user mistakes exit 1 with
# a located message.
# SPDX-License-Identifier: Apache-2.0
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

tl_sim, configs, programs = sys.argv[1], Path(sys.argv[2]), Path(sys.argv[3])


def run(*args):
    return subprocess.run([tl_sim, *map(str, args)], capture_output=True, text=True)


with tempfile.TemporaryDirectory() as d:
    d = Path(d)
    rng = np.random.default_rng(0)
    a = rng.uniform(-1, 1, (100, 90)).astype(np.float32)
    b = rng.uniform(-1, 1, (90, 70)).astype(np.float32)
    np.save(d / "a.npy", a)
    np.save(d / "b.npy", b)
    defs = dict(M=100, N=70, K=90, A=0x1000, B=0x100000, C=0x200000, MODE="f32", ES=4, TM=128, TR=128, TC=128)
    dargs = [x for k, v in defs.items() for x in ("-D", f"{k}={v}")]
    # Assemble to a binary and round-trip it through disasm.
    r = run("asm", programs / "gemm.s", "-o", d / "gemm.bin", *dargs)
    assert r.returncode == 0, r.stderr
    text = run("disasm", d / "gemm.bin").stdout
    (d / "gemm_dis.s").write_text(text)
    r = run("asm", d / "gemm_dis.s", "-o", d / "gemm2.bin")
    assert r.returncode == 0 and (d / "gemm.bin").read_bytes() == (d / "gemm2.bin").read_bytes()
    r = run("run", "--config", configs / "default.json", "--program", d / "gemm.bin",
            "--load", f"0x1000={d / 'a.npy'}", "--load", f"0x100000={d / 'b.npy'}",
            "--save", f"0x200000:100x70:<f4={d / 'c.npy'}", "--stats", d / "s.json", "--trace", d / "t.json")
    assert r.returncode == 0, r.stderr
    c = np.load(d / "c.npy")
    ref = a.astype(np.float64) @ b.astype(np.float64)
    err = np.linalg.norm(c - ref) / np.linalg.norm(ref)
    assert err <= 1e-6, err
    stats = json.loads((d / "s.json").read_text())
    assert stats["total_cycles"] > 0 and stats["units"]["core0.mx"]["busy_fraction"] > 0
    assert stats["bytes"]["hbm_read"] == (100 * 90 + 90 * 70) * 4 or stats["bytes"]["hbm_read"] > 0
    trace = json.loads((d / "t.json").read_text())
    assert any(e.get("name") == "mx.mm" for e in trace["traceEvents"])
    # A vector program: row softmax (programs/softmax.s) within f32 softmax error of numpy's.
    x = rng.uniform(-20, 20, (37, 100)).astype(np.float32)
    np.save(d / "x.npy", x)
    sdefs = ["-D", "M=37", "-D", "N=100", "-D", "X=0x100000", "-D", "Y=0x200000", "-D", "TR=16"]
    r = run("run", "--config", configs / "default.json", "--program", programs / "softmax.s", *sdefs,
            "--load", f"0x100000={d / 'x.npy'}", "--save", f"0x200000:37x100:<f4={d / 'y.npy'}")
    assert r.returncode == 0, r.stderr
    e = np.exp(x.astype(np.float64) - x.max(axis=1, keepdims=True))
    want = e / e.sum(axis=1, keepdims=True)
    assert np.max(np.abs(np.load(d / "y.npy") - want) / want) < 1e-5
    # Mistakes: located assembly errors, bad configs naming the field, bad faults.
    r = run("run", "--config", configs / "default.json", "--program", programs / "gemm.s")
    assert r.returncode == 1 and "gemm.s:" in r.stderr and "unknown symbol" in r.stderr, r.stderr
    (d / "bad.json").write_text((configs / "edge.json").read_text().replace('"banks": 8', '"banks": 6'))
    r = run("run", "--config", d / "bad.json", "--program", d / "gemm.bin")
    assert r.returncode == 1 and "field 'core.sram.banks'" in r.stderr, r.stderr
    r = run("run", "--config", configs / "default.json", "--program", d / "gemm.bin", "--fault", "hang:core=0")
    assert r.returncode == 1 and "missing unit=" in r.stderr, r.stderr
    r = run("run", "--config", configs / "default.json", "--program", d / "gemm.bin",
            "--fault", "hang:core=0,unit=mx,command=0", "--hang-timeout", "10000")
    assert r.returncode == 2 and "hang" in r.stderr, r.stderr
    # The matrix unit as RTL (edge chip, 32 x 32): the same C as the fast model's run; speeds
    # side by side; the cross-check report; an unknown kind named.
    edefs = [x for k, v in dict(defs, TM=32, TR=32, TC=32).items() for x in ("-D", f"{k}={v}")]
    io = ["--load", f"0x1000={d / 'a.npy'}", "--load", f"0x100000={d / 'b.npy'}"]
    for kind in ("model", "rtl"):
        r = run("run", "--config", configs / "edge.json", "--program", programs / "gemm.s", *edefs, *io,
                "--matrix", kind, "--save", f"0x200000:100x70:<f4={d / (kind + '.npy')}")
        assert r.returncode == 0, r.stderr
    assert (d / "model.npy").read_bytes() == (d / "rtl.npy").read_bytes()
    r = run("run", "--config", configs / "edge.json", "--program", programs / "gemm.s", *edefs, *io,
            "--compare-speed", "--save", f"0x200000:100x70:<f4={d / 'x.npy'}")
    assert r.returncode == 0 and "regions identical" in r.stdout, r.stdout + r.stderr
    assert [l.split()[0] for l in r.stdout.splitlines()[1:3]] == ["model", "rtl"], r.stdout
    r = run("run", "--config", configs / "edge.json", "--program", programs / "gemm.s", *edefs, *io,
            "--matrix", "cross-check")
    assert r.returncode == 0 and ", 0 mismatches" in r.stdout and "MAPE" in r.stdout, r.stdout
    r = run("run", "--config", configs / "edge.json", "--program", programs / "gemm.s", *edefs,
            "--matrix", "verilog")
    assert r.returncode == 1 and "--matrix must be model, rtl or cross-check" in r.stderr, r.stderr
    # An RTL array size this build did not verilate: the file, the field and the sizes built.
    (d / "rtl24.json").write_text((configs / "edge-rtl.json").read_text()
                                  .replace('"rows": 32, "cols": 32', '"rows": 24, "cols": 24'))
    r = run("run", "--config", d / "rtl24.json", "--program", programs / "gemm.s", *edefs)
    assert r.returncode == 1 and "rtl24.json: field 'core.matrix.kind'" in r.stderr, r.stderr
    assert "24x24:4" in r.stderr and "TL_NPU_RTL_ARRAYS" in r.stderr, r.stderr
    # Waveforms: with TL_NPU_RTL_TRACE=ON a VCD of the window; without it, an error saying how.
    r = run("run", "--config", configs / "edge-rtl.json", "--program", programs / "gemm.s", *edefs,
            *io, "--vcd", d / "mx.vcd", "--vcd-cycles", "100:300")
    if os.environ.get("TL_NPU_RTL_TRACE") == "1":
        vcd = (d / "mx.vcd").read_text()
        times = [int(l[1:]) for l in vcd.splitlines() if l.startswith("#")]
        # Two steps per cycle (the low half 2c + 1, the edge 2c + 2), cycles 100 to 299 only (an
        # idle unit is not clocked: no steps there, its signals do not change).
        assert r.returncode == 0 and "$enddefinitions" in vcd and times, r.stderr
        assert 201 <= times[0] and times[-1] <= 600, (times[:3], times[-3:])
    else:
        assert r.returncode == 1 and "configure with -DTL_NPU_RTL_TRACE=ON" in r.stderr, r.stderr
print("tl-sim cli: ok, normwise", err)
