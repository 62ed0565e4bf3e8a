"""How the op timed before the start event moves an event-timed GEMM at 1024^3 (f32).

tl-conform times an op behind a run of itself; bench_rows.py times it behind a spin kernel. This
times TL's f32 GEMM (128 x 64 x 64 traced from Python, and tl-conform's candidate
kernels/tlir/gemm_nvptx.tlir itself as `tl_kit`) and cuBLAS SGEMM (torch.matmul, TF32 off) at
1024^3 behind several leading ops, each the best and the median of 15, and prints `name: us`
lines (findings: bench/cuda/README.md, session 5):
  idle    nothing queued before the start event (the host's launch is inside the interval)
  spin    torch.cuda._sleep (no memory written)
  self    the same op (tl-conform's way)
  sspin   a spin, then the same op (a lead that follows a quiet device)
  other   the other GEMM (cuBLAS before TL's, TL's before cuBLAS)
  fill    a 4 MiB zero_ of a separate buffer (a short op that writes memory)
  elsewhere  the same kernel writing another output buffer
  tl_empty   a spin, then an empty TL kernel
  tl_small   a spin, then a one-program TL GEMM (128 x 64 x 64, the same kernel as tl_128x64)
  train   a spin, then 20 runs back to back between the events, per run
Usage (GPU machine, inside run_on_device.sh's environment): python3 bench/cuda/timing_probe.py
"""
import os
import sys
import statistics

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "python"))
import torch  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_rows  # noqa: E402  (its kernels; TF32 off)


def probe(name, op, leads, reps=15):
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    for lead_name, lead in leads.items():
        for _ in range(3):
            op()
        torch.cuda.synchronize()
        times = []
        for _ in range(reps):
            n = 1
            if lead_name == "idle":
                torch.cuda.synchronize()
            elif lead_name == "train":
                torch.cuda._sleep(400_000)
                n = 20
            else:
                lead()
            start.record()
            for _ in range(n):
                op()
            end.record()
            end.synchronize()
            times.append(start.elapsed_time(end) * 1e3 / n)
        print(f"probe_{name}_{lead_name}_best_us: {min(times):.2f}")
        print(f"probe_{name}_{lead_name}_median_us: {statistics.median(times):.2f}")


def kit_kernel(a, b, c):
    """tl-conform's candidate (kernels/tlir/gemm_nvptx.tlir, its defaults: 128 x 64 x 64) as a
    launchable kernel: a traced twin with the same parameters whose Tile IR text is swapped."""
    import tl

    @tl.kernel
    def gemm_kit(a: tl.tensor, b: tl.tensor, c: tl.tensor):
        tl.store(c + (0, 0), tl.zeros((1, 1), tl.float32))

    root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
    gemm_kit[(1,)](a, b, c)
    torch.cuda.synchronize()
    text = open(os.path.join(root, "kernels", "tlir", "gemm_nvptx.tlir")).read()
    for compiled in gemm_kit.cache.values():
        compiled.text, compiled.executables = text, {}
    gemm_kit._plans = []
    return gemm_kit


def main():
    dev = torch.device("cuda")
    n = 1024
    a, b = torch.randn(n, n, device=dev), torch.randn(n, n, device=dev)
    c, c2 = torch.empty(n, n, device=dev), torch.empty(n, n, device=dev)
    scratch = torch.empty(n * n, device=dev)
    ref = a.double() @ b.double()
    kit = kit_kernel(a, b, c)
    ops = {
        "tl_128x64": lambda out=c: bench_rows.gemm[(n // 128, n // 64)](
            a, b, out, BM=128, BN=64, BK=64, CHUNK=1024),
        "tl_kit": lambda out=c: kit[(n // 128, n // 64)](a, b, out),
        "tl_128x32": lambda out=c: bench_rows.gemm[(n // 128, n // 32)](
            a, b, out, BM=128, BN=32, BK=64, CHUNK=1024),
        "cublas": lambda out=c: torch.matmul(a, b, out=out),
    }
    tiny = torch.empty(1, device=dev)

    def tl_empty():
        bench_rows.empty[(1,)](tiny)

    def tl_small():
        bench_rows.gemm[(1, 1)](a[:128, :64], b[:64, :64], c2[:128, :64], BM=128, BN=64,
                                BK=64, CHUNK=1024)

    failed = []
    for name, op in ops.items():
        other = ops["cublas"] if name != "cublas" else ops["tl_128x64"]

        def sspin(op=op):
            torch.cuda._sleep(400_000)
            op()

        def spin_then(f):
            return lambda: (torch.cuda._sleep(400_000), f())

        leads = {"idle": None, "spin": lambda: torch.cuda._sleep(400_000), "self": op,
                 "sspin": sspin, "other": lambda other=other: other(c2), "fill": scratch.zero_,
                 "elsewhere": lambda op=op: op(c2), "tl_empty": spin_then(tl_empty),
                 "tl_small": spin_then(tl_small), "train": None}
        c.fill_(float("nan"))
        probe(name, op, leads)
        torch.cuda.synchronize()
        err = ((c.double() - ref).norm() / ref.norm()).item()
        print(f"probe_{name}_normwise_error: {err:.2e}")
        if not err < 1e-6:
            failed.append(name)
    print(f"timing_probe: {'FAILED ' + ', '.join(failed) if failed else 'outputs correct'}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
