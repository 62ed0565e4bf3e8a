#!/usr/bin/env python3
# Session 12 (issue 18): non-temporal vs plain stores of the row ops on cpu, in one process.
# Usage: PYTHONPATH=python TL_LIB_DIR=build/lib python bench/row_stores_ab.py . REPS [ops]
# SPDX-License-Identifier: Apache-2.0
# One process: row kernels writing a 64-byte aligned output (non-temporal stores) and one 16 bytes
# off (plain stores), alternating; device time (HAL events); triad beside.
import sys, statistics, numpy as np
sys.path.append(sys.argv[1] + "/bench")
import ops_bench as ob
from tl.ops import rows
x = np.random.default_rng(0).standard_normal((16384, 1024)).astype(np.float32)
raw = np.empty(x.nbytes + 128, np.uint8)
s0 = -raw.ctypes.data % 64
outs = {"aligned": raw[s0:s0 + x.nbytes].view(np.float32).reshape(x.shape),
        "off16": raw[s0 + 16:s0 + 16 + x.nbytes].view(np.float32).reshape(x.shape)}
w = np.ones(1024, np.float32); b = np.zeros(1024, np.float32)
stats = np.zeros((16384, 2), np.float32)
triad = ob.Triad(x.size, "cpu")
def sm(out, log=False):
    rows.softmax_kernel.kernel[(16384,)](x, out, device="cpu", LOG=log, ONE_PASS=True, BM=1, BLOCK=1024, RECIP=False)
def ln(out, rms=False):
    rows.norm_kernel.kernel[(16384,)](x, w, b, out, stats, 1e-5, device="cpu", RMS=rms, HAS_W=True, HAS_B=not rms, ONE_PASS=True, BM=1, BLOCK=1024, EVEN=True)
cases = [("softmax", sm), ("log_softmax", lambda o: sm(o, True)), ("layernorm", ln), ("rmsnorm", lambda o: ln(o, True))]
only = sys.argv[3].split(",") if len(sys.argv) > 3 else None
for name, f in cases:
    if only and name not in only:
        continue
    for o in outs.values():
        f(o)
    t = {k: [] for k in list(outs) + ["triad"]}
    for _ in range(int(sys.argv[2])):
        for k, o in outs.items():
            t[k].append(ob.device_ms(lambda: f(o)))
        t["triad"].append(ob.device_ms(triad))
    tr = triad.bytes / statistics.median(t["triad"]) / 1e6
    print(name, " ".join(f"{k}: {statistics.median(t[k]):.2f} ms ({2 * x.nbytes / statistics.median(t[k]) / 1e6 / tr:.2f})" for k in outs), f"triad {tr:.1f} GB/s", flush=True)
