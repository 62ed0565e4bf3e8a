"""Which kernels leave a gap behind them: CUPTI's kernel records (trace_probe.run_pattern) for a
TL GEMM at several tile sizes (so several shared-memory sizes), a TL softmax, and Triton GEMMs
with large and small shared memory, each followed by cuBLAS SGEMM at 1024^3.
trace_probe.py found ~10 us from the end of any TL GEMM to the next kernel's start (cuBLAS after
cuBLAS: ~1 us). Prints `name: us` lines.
Usage (GPU machine, inside run_on_device.sh's environment): python3 bench/cuda/gap_probe.py
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "python"))
import torch  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_rows  # noqa: E402
from trace_probe import run_pattern  # noqa: E402


def triton_gemm(a, b, c, bm, bn, bk, stages):
    import triton
    import triton.language as tt

    @triton.jit
    def triton_mm(a, b, c, n, BM: tt.constexpr, BN: tt.constexpr, BK: tt.constexpr):
        rm = tt.program_id(0) * BM + tt.arange(0, BM)
        rn = tt.program_id(1) * BN + tt.arange(0, BN)
        rk = tt.arange(0, BK)
        acc = tt.zeros((BM, BN), tt.float32)
        for k in range(0, n, BK):
            x = tt.load(a + rm[:, None] * n + (k + rk)[None, :])
            y = tt.load(b + (k + rk)[:, None] * n + rn[None, :])
            acc = tt.dot(x, y, acc, input_precision="ieee")
        tt.store(c + rm[:, None] * n + rn[None, :], acc)

    n = a.shape[0]
    grid = (n // bm, n // bn)

    def run():
        compiled = triton_mm[grid](a, b, c, n, BM=bm, BN=bn, BK=bk, num_stages=stages,
                                   num_warps=8)
        return compiled

    k = run()
    print(f"gap_triton_{bm}x{bn}x{bk}s{stages}_shared_bytes: {k.metadata.shared}")
    return run


def main():
    dev = torch.device("cuda")
    n = 1024
    a, b = torch.randn(n, n, device=dev), torch.randn(n, n, device=dev)
    c, c2 = torch.empty(n, n, device=dev), torch.empty(n, n, device=dev)
    x, y = torch.randn(n, n, device=dev), torch.empty(n, n, device=dev)

    def cublas():
        torch.matmul(a, b, out=c2)

    def tl_gemm(bm, bn, bk):
        return lambda: bench_rows.gemm[(n // bm, n // bn)](a, b, c, BM=bm, BN=bn, BK=bk,
                                                           CHUNK=1024)

    patterns = {}
    for bm, bn, bk in ((128, 64, 64), (128, 64, 16), (64, 64, 32), (32, 32, 32)):
        patterns[f"tl{bm}x{bn}x{bk}_cublas"] = [tl_gemm(bm, bn, bk), cublas]
    patterns["tlsoftmax_cublas"] = [lambda: bench_rows.softmax[(n,)](x, y, BLOCK=n), cublas]
    try:
        patterns["triton_big_cublas"] = [triton_gemm(a, b, c, 128, 64, 32, 3), cublas]
        patterns["triton_small_cublas"] = [triton_gemm(a, b, c, 64, 64, 16, 2), cublas]
    except Exception as e:  # noqa: BLE001 - a probe: report and go on
        print(f"gap_probe: triton unavailable: {e}")
    for label, ops in patterns.items():
        run_pattern(label, ops, reps=10)
    return 0


if __name__ == "__main__":
    sys.exit(main())
