"""Where the 1024^3 f32 GEMM's event-timed microseconds go: kernel or gap (CUPTI through
torch.profiler).

timing_probe.py found that an event-timed TL GEMM loses 4-9 us behind any TL GEMM and that the
intervals come in 8.192 us steps. Events cannot tell a slower kernel from a gap before or after
it; CUPTI's kernel records can. This runs, behind a spin (so that the host is ahead), trains of
each GEMM and of mixed pairs under torch.profiler, and prints per pattern the median kernel
duration, the median gap from one kernel's end to the next one's start, and the event-timed
interval of the same train, as `name: us` lines.
Usage (GPU machine, inside run_on_device.sh's environment): python3 bench/cuda/trace_probe.py
[--train-only: the kit's GEMM six times back to back and nothing else, for ncu]
"""
import json
import os
import statistics
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "python"))
import torch  # noqa: E402
from torch.profiler import ProfilerActivity, profile  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_rows  # noqa: E402
import timing_probe  # noqa: E402


def kernels_of(prof):
    """The trace's GPU kernels as (name, start us, duration us), in start order."""
    with tempfile.NamedTemporaryFile(suffix=".json", delete=False) as f:
        path = f.name
    prof.export_chrome_trace(path)
    with open(path) as f:
        events = json.load(f)["traceEvents"]
    os.unlink(path)
    out = [(e["name"], float(e["ts"]), float(e["dur"])) for e in events
           if e.get("cat") == "kernel" and "dur" in e]
    return sorted(out, key=lambda k: k[1])


def short(name):
    for key, label in (("sleep", "spin"), ("xmma", "cublas"), ("sgemm", "cublas"),
                       ("cutlass", "cublas"), ("gemm_nvptx", "kit"), ("gemm", "tlgemm"),
                       ("empty", "tlempty"), ("triton_mm", "triton"), ("softmax", "tlsoftmax")):
        if key in name.lower():
            return label
    return name[:24]


def run_pattern(label, ops, reps=20):
    """Spin, then the ops in order, `reps` times, the whole train between two events."""
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    for op in ops:
        op()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        torch.cuda._sleep(2_000_000)
        start.record()
        for _ in range(reps):
            for op in ops:
                op()
        end.record()
        end.synchronize()
    ks = [k for k in kernels_of(prof) if short(k[0]) != "spin"]
    names = [short(k[0]) for k in ks]
    by_name = {}
    gaps_before = {}
    for i, (name, ts, dur) in enumerate(ks):
        by_name.setdefault(names[i], []).append(dur)
        if i:
            prev_end = ks[i - 1][1] + ks[i - 1][2]
            gaps_before.setdefault(f"{names[i - 1]}->{names[i]}", []).append(ts - prev_end)
    for name, durs in by_name.items():
        print(f"trace_{label}_{name}_kernel_median_us: {statistics.median(durs):.2f}")
        print(f"trace_{label}_{name}_kernel_min_us: {min(durs):.2f}")
    for pair, gaps in gaps_before.items():
        print(f"trace_{label}_gap_{pair}_median_us: {statistics.median(gaps):.2f}")
    per_round = start.elapsed_time(end) * 1e3 / reps
    span = (ks[-1][1] + ks[-1][2] - ks[0][1]) / reps
    print(f"trace_{label}_event_per_round_us: {per_round:.2f}")
    print(f"trace_{label}_cupti_span_per_round_us: {span:.2f}")


def main():
    dev = torch.device("cuda")
    n = 1024
    a, b = torch.randn(n, n, device=dev), torch.randn(n, n, device=dev)
    c, c2 = torch.empty(n, n, device=dev), torch.empty(n, n, device=dev)
    kit = timing_probe.kit_kernel(a, b, c)
    tiny = torch.empty(1, device=dev)

    def tl_kit():
        kit[(n // 128, n // 64)](a, b, c)

    def tl_gemm():
        bench_rows.gemm[(n // 128, n // 64)](a, b, c, BM=128, BN=64, BK=64, CHUNK=1024)

    def cublas():
        torch.matmul(a, b, out=c2)

    def tl_empty():
        bench_rows.empty[(1,)](tiny)

    def tl_small():
        bench_rows.gemm[(1, 1)](a[:128, :64], b[:64, :64], c2[:128, :64], BM=128, BN=64, BK=64,
                                CHUNK=1024)

    if "--train-only" in sys.argv:  # for ncu: the kit six times back to back, nothing else
        for _ in range(6):
            tl_kit()
        torch.cuda.synchronize()
        return 0
    patterns = {"kit": [tl_kit], "tlgemm": [tl_gemm], "cublas": [cublas],
                "kit_cublas": [tl_kit, cublas], "empty_kit": [tl_empty, tl_kit],
                "small_kit": [tl_small, tl_kit]}
    for label, ops in patterns.items():
        run_pattern(label, ops)
    torch.cuda.synchronize()
    ref = a.double() @ b.double()
    tl_kit()
    err = ((c.double() - ref).norm() / ref.norm()).item()
    print(f"trace_kit_normwise_error: {err:.2e}")
    return 0 if err < 1e-6 else 1


if __name__ == "__main__":
    sys.exit(main())
