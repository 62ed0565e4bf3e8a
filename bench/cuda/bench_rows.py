"""TL kernels on the cuda device against PyTorch on the same GPU, same run, same sizes.

Prints `name: value` lines: row softmax and layernorm (f32) as bandwidth (2 bytes moved per
element byte) and as a ratio to a device-to-device copy of the same tensor; fp32 GEMM as TFLOP/s
and as a ratio to cuBLAS SGEMM (torch.matmul, TF32 off); launch overhead of an empty kernel from
Python against an empty PyTorch op. Outputs are checked against float64 after the timing.
Usage (GPU machine, inside run_on_device.sh's environment): python3 bench/cuda/bench_rows.py
"""
import math
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "python"))
import torch  # noqa: E402
import tl  # noqa: E402

torch.backends.cuda.matmul.allow_tf32 = False


@tl.kernel
def softmax(x: tl.tensor, y: tl.tensor, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    v = tl.load(x + (row, 0), (1, BLOCK), other=-math.inf)
    m = tl.max(v, axis=1)
    e = tl.exp(v - m[:, None])
    tl.store(y + (row, 0), e / tl.sum(e, axis=1)[:, None])


@tl.kernel
def layernorm(x: tl.tensor, w: tl.tensor, b: tl.tensor, y: tl.tensor, eps: tl.float32,
              BLOCK: tl.constexpr):
    row = tl.program_id(0)
    n = x.shape[1]
    v = tl.reshape(tl.load(x + (row, 0), (1, BLOCK)), (BLOCK,))
    mean = tl.sum(v) / n
    d = v - mean
    var = tl.sum(d * d) / n
    out = d * tl.rsqrt(var + eps) * tl.load(w + (0,), (BLOCK,)) + tl.load(b + (0,), (BLOCK,))
    tl.store(y + (row, 0), tl.reshape(out, (1, BLOCK)))


@tl.kernel
def gemm(a: tl.tensor, b: tl.tensor, c: tl.tensor, BM: tl.constexpr, BN: tl.constexpr,
         BK: tl.constexpr, CHUNK: tl.constexpr):
    m0 = tl.program_id(0) * BM
    n0 = tl.program_id(1) * BN
    # K in chunks of CHUNK, each summed on its own, as the library GEMM does: one long fma chain
    # over K = 8192 errs more.
    acc = tl.zeros((BM, BN), tl.float32)
    for k0 in tl.range(0, a.shape[1], CHUNK):
        part = tl.zeros((BM, BN), tl.float32)
        for k in tl.range(k0, k0 + CHUNK, BK):
            part = tl.dot(tl.load(a + (m0, k), (BM, BK)), tl.load(b + (k, n0), (BK, BN)),
                          acc=part)
        acc = acc + part
    tl.store(c + (m0, n0), acc)


@tl.kernel
def gemm_tc(a: tl.tensor, b: tl.tensor, c: tl.tensor, BM: tl.constexpr, BN: tl.constexpr,
            BK: tl.constexpr):
    # bf16/f16 inputs, f32 accumulation in any order (ir.h): tensor cores on nvptx; f32 inputs:
    # one fma chain per element over all of K (CUDA cores).
    m0 = tl.program_id(0) * BM
    n0 = tl.program_id(1) * BN
    acc = tl.zeros((BM, BN), tl.float32)
    for k in tl.range(0, a.shape[1], BK):
        acc = tl.dot(tl.load(a + (m0, k), (BM, BK)), tl.load(b + (k, n0), (BK, BN)), acc=acc)
    tl.store(c + (m0, n0), acc)


@tl.kernel
def gemm_tc_grouped(a: tl.tensor, b: tl.tensor, c: tl.tensor, BM: tl.constexpr,
                    BN: tl.constexpr, BK: tl.constexpr, GROUP: tl.constexpr):
    # gemm_tc with Triton's tutorial order of the programs: GROUP row blocks share each column
    # block in turn, so that a wave of programs reuses its A and B panels from L2.
    pid = tl.program_id(0)
    num_m = tl.cdiv(a.shape[0], BM)
    width = GROUP * tl.cdiv(b.shape[1], BN)
    first_m = (pid // width) * GROUP
    size_m = tl.minimum(num_m - first_m, GROUP)
    m0 = (first_m + (pid % width) % size_m) * BM
    n0 = ((pid % width) // size_m) * BN
    acc = tl.zeros((BM, BN), tl.float32)
    for k in tl.range(0, a.shape[1], BK):
        acc = tl.dot(tl.load(a + (m0, k), (BM, BK)), tl.load(b + (k, n0), (BK, BN)), acc=acc)
    tl.store(c + (m0, n0), acc)


def sweep(prefix, a, bm, c, runs, bound, failed):
    """Times each (config, launch) of a GEMM c = a @ bm and cuBLAS (torch.matmul) on the same
    inputs in the same run; checks every TL output against float64 afterwards (normwise error
    under `bound`, else the config is listed in `failed`); prints every config, the best, the
    ratio and both errors."""
    n = a.shape[0]
    flops = 2 * n ** 3
    ref = a.double() @ bm.double()
    t_blas = timed(lambda: torch.matmul(a, bm), reps=5)
    err_blas = ((torch.matmul(a, bm).double() - ref).norm() / ref.norm()).item()
    best = None
    for cfg, launch in runs:
        c.fill_(float("nan"))
        t_tl = timed(launch, reps=5)
        err = ((c.double() - ref).norm() / ref.norm()).item()
        print(f"{prefix}_{cfg}_TFLOPs: {flops / t_tl / 1e12:.2f} (error {err:.2e})")
        if not err < bound:
            failed.append(f"{prefix} {cfg}")
        if best is None or t_tl < best[0]:
            best = (t_tl, cfg, err)
    t_tl, cfg, err = best
    print(f"{prefix}_TFLOPs: {flops / t_tl / 1e12:.2f} ({cfg})")
    print(f"{prefix}_cublas_TFLOPs: {flops / t_blas / 1e12:.2f}")
    print(f"{prefix}_vs_cublas: {t_blas / t_tl:.3f}")
    print(f"{prefix}_normwise_error: {err:.2e}")
    print(f"{prefix}_cublas_normwise_error: {err_blas:.2e}")


def bench_gemm_tc(dev, failed, sizes=(4096, 8192),
                  configs=((128, 128, 64, 0), (128, 256, 64, 0), (256, 128, 64, 0),
                           (128, 128, 64, 8), (128, 256, 64, 8))):
    """bf16 and f16 GEMM (f32 results) against torch.matmul (cuBLAS, same inputs) in the same
    run, each TL tile config timed and the best reported; every TL output checked against
    float64 (normwise; ir.h's dot bound allows ~K u, 1e-5 fails any wrong tile)."""
    for name, dt in (("bf16", torch.bfloat16), ("f16", torch.float16)):
        for n in sizes:
            a = torch.rand(n, n, device=dev).mul_(2).sub_(1).to(dt)
            bm = torch.rand(n, n, device=dev).mul_(2).sub_(1).to(dt)
            c = torch.empty(n, n, device=dev)
            runs = []
            for BM, BN, BK, G in configs:
                if G:
                    launch = (lambda BM=BM, BN=BN, BK=BK, G=G: gemm_tc_grouped[
                        ((n // BM) * (n // BN),)](a, bm, c, BM=BM, BN=BN, BK=BK, GROUP=G))
                else:
                    launch = (lambda BM=BM, BN=BN, BK=BK: gemm_tc[(n // BM, n // BN)](
                        a, bm, c, BM=BM, BN=BN, BK=BK))
                runs.append((f"{BM}x{BN}x{BK}" + (f"_group{G}" if G else ""), launch))
            sweep(f"gemm_{name}_{n}", a, bm, c, runs, 1e-5, failed)
            del a, bm, c


@tl.kernel
def empty(x: tl.tensor):
    pass


def timed(fn, reps=20, warmup=3):
    """The best device time of `fn` between two events. The stream is kept busy (a spin kernel)
    while the host queues the events and `fn`, so that the interval holds the device's work
    only, not the host's launch latency (launch overhead is measured on its own below)."""
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    best = float("inf")
    for _ in range(reps):
        torch.cuda._sleep(400_000)  # ~0.2 ms at the H200's clock, past any host launch cost
        start.record()
        fn()
        end.record()
        end.synchronize()
        best = min(best, start.elapsed_time(end) / 1e3)
    return best


def transfer_anchors(dev):
    """What the machine's own tools reach, for the bandwidth suite's judgement: a d2d copy by
    torch (cudaMemcpyAsync) at several sizes, and pinned/pageable host copies by torch."""
    for mib in (64, 256, 1024):
        n = mib << 18
        x = torch.randn(n, device=dev)
        y = torch.empty_like(x)
        t = timed(lambda: y.copy_(x), reps=20)
        print(f"copy_d2d_{mib}MiB_GBps: {2 * n * 4 / t / 1e9:.1f}")
        del x, y
    n = 256 << 18
    d = torch.empty(n, device=dev)
    for pinned in (True, False):
        h = torch.ones(n, pin_memory=pinned)
        name = "pinned" if pinned else "pageable"
        t = timed(lambda: d.copy_(h, non_blocking=pinned), reps=5)
        print(f"torch_h2d_{name}_256MiB_GBps: {n * 4 / t / 1e9:.1f}")
        t = timed(lambda: h.copy_(d, non_blocking=pinned), reps=5)
        print(f"torch_d2h_{name}_256MiB_GBps: {n * 4 / t / 1e9:.1f}")


def main():
    dev = torch.device("cuda")
    print(f"gpu: {torch.cuda.get_device_name()}; torch {torch.__version__}; cuda {torch.version.cuda}")
    failed = []
    # TL_BENCH_ONLY=none: the launch rows alone (skips the bandwidth, softmax, layernorm and gemm
    # rows); gemm_tc: those rows and the tensor-core gemm; tc: the tensor-core gemm and launches;
    # f32: the fp32 gemm and launches; f32_1024: fp32 gemm tiles at 1024^3 and launches.
    only = os.environ.get("TL_BENCH_ONLY", "")
    if only not in ("none", "tc", "f32", "f32_1024"):
        heavy_rows(dev, failed)
    if only in ("", "gemm_tc", "f32"):
        bench_gemm_f32(dev, failed)
    if only == "f32_1024":  # tl-conform's gemm.f32.1024: which tiles reach its floor
        bench_gemm_f32(dev, failed, sizes=(1024,), configs=tuple(
            (bm, bn, bk, 0) for bm, bn in ((128, 64), (64, 128), (64, 64), (128, 128), (64, 32),
                                           (32, 64), (128, 32), (32, 32))
            for bk in (16, 32, 64)))
    if only in ("", "gemm_tc", "tc"):
        bench_gemm_tc(dev, failed)
    launch_rows(dev)
    print(f"bench_rows: {'FAILED ' + ', '.join(failed) if failed else 'outputs correct'}")
    return 1 if failed else 0


def heavy_rows(dev, failed):
    transfer_anchors(dev)
    for n in (4096, 8192):
        x = torch.randn(n, n, device=dev)
        y = torch.empty_like(x)
        bytes_moved = 2 * x.numel() * 4
        t_copy = timed(lambda: y.copy_(x))
        print(f"copy_{n}x{n}_GBps: {bytes_moved / t_copy / 1e9:.1f}")
        t_tl = timed(lambda: softmax[(n,)](x, y, BLOCK=n))
        ref = torch.softmax(x.double(), dim=1)
        err = ((y.double() - ref).norm() / ref.norm()).item()
        t_torch = timed(lambda: torch.softmax(x, dim=1))
        print(f"softmax_{n}x{n}_GBps: {bytes_moved / t_tl / 1e9:.1f}")
        print(f"softmax_{n}x{n}_vs_copy: {t_copy / t_tl:.3f}")
        print(f"softmax_{n}x{n}_torch_vs_copy: {t_copy / t_torch:.3f}")
        print(f"softmax_{n}x{n}_normwise_error: {err:.2e}")
        if not err < 1e-6:
            failed.append(f"softmax {n}")
        w, b = torch.randn(n, device=dev), torch.randn(n, device=dev)
        t_tl = timed(lambda: layernorm[(n,)](x, w, b, y, 1e-5, BLOCK=n))
        xd = x.double()
        ref = torch.nn.functional.layer_norm(xd, (n,), w.double(), b.double(), 1e-5)
        err = ((y.double() - ref).norm() / ref.norm()).item()
        t_torch = timed(lambda: torch.nn.functional.layer_norm(x, (n,), w, b, 1e-5))
        print(f"layernorm_{n}x{n}_GBps: {bytes_moved / t_tl / 1e9:.1f}")
        print(f"layernorm_{n}x{n}_vs_copy: {t_copy / t_tl:.3f}")
        print(f"layernorm_{n}x{n}_torch_vs_copy: {t_copy / t_torch:.3f}")
        print(f"layernorm_{n}x{n}_normwise_error: {err:.2e}")
        if not err < 1e-6:
            failed.append(f"layernorm {n}")


def bench_gemm_f32(dev, failed, sizes=(1024, 4096, 8192),
                   configs=((128, 128, 32, 0), (128, 64, 32, 0), (64, 128, 32, 0),
                            (64, 64, 32, 0), (128, 128, 32, 256), (128, 64, 32, 256))):
    """fp32 GEMM (fp32 contract: one fma chain per element on CUDA cores) against cuBLAS SGEMM
    with TF32 off, same inputs, same run; each config (BM x BN x BK, K summed in chunks of
    CHUNK, 0: one chain) timed and the best reported; every output checked against float64
    (normwise 2e-6: a wrong tile or a TF32 product fails; one fma chain over K = 8192 errs
    1.6e-6 on normal inputs, chunks of 256 3e-7)."""
    torch.backends.cuda.matmul.allow_tf32 = False
    for n in sizes:
        a, bm = torch.randn(n, n, device=dev), torch.randn(n, n, device=dev)
        c = torch.empty(n, n, device=dev)
        runs = []
        for BM, BN, BK, CHUNK in configs:
            if CHUNK:
                launch = (lambda BM=BM, BN=BN, BK=BK, CHUNK=CHUNK: gemm[(n // BM, n // BN)](
                    a, bm, c, BM=BM, BN=BN, BK=BK, CHUNK=CHUNK))
            else:
                launch = (lambda BM=BM, BN=BN, BK=BK: gemm_tc[(n // BM, n // BN)](
                    a, bm, c, BM=BM, BN=BN, BK=BK))
            runs.append((f"{BM}x{BN}x{BK}_chunk{CHUNK}", launch))
        sweep(f"gemm_f32_{n}", a, bm, c, runs, 2e-6, failed)
        del a, bm, c


def raw_launch_lib():
    """libtl_bench_raw_launch (bench/cuda/raw_launch.cpp) through ctypes, or None if not built."""
    import ctypes
    from tl._ffi import lib_dirs
    for d in lib_dirs():
        path = d / "libtl_bench_raw_launch.so"
        if path.exists():
            lib = ctypes.CDLL(str(path))
            lib.tl_bench_raw_launch_us.restype = ctypes.c_double
            lib.tl_bench_raw_launch_us.argtypes = [ctypes.c_int] * 5 + [ctypes.c_size_t]
            lib.tl_bench_raw_launch_error.restype = ctypes.c_char_p
            return lib
    return None


def launch_rows(dev):
    """Per-launch time of an empty kernel on a torch tensor (the median of 7 rounds of 2000
    launches, each round then one synchronize, as launch_bench.cpp times the raw anchor): TL's
    default path (the C launcher where built), its Python plans alone (TL_FAST_LAUNCH_C=0's),
    TL's full path (TL_FAST_LAUNCH=0's), torch's add_; and raw cuLaunchKernel of an empty
    one-tensor kernel in this process (raw_launch.cpp), interleaved with TL's three times."""
    import time
    import tl.fastlaunch
    e = torch.empty(1, device=dev)
    reps = 2000

    def per_launch(fn, rounds=7):
        fn()
        torch.cuda.synchronize()
        times = []
        for _ in range(rounds):
            t0 = time.perf_counter()
            for _ in range(reps):
                fn()
            torch.cuda.synchronize()
            times.append((time.perf_counter() - t0) / reps)
        return sorted(times)[rounds // 2]

    # The raw anchor in this process, on the stream TL launches on (torch's current one), and
    # interleaved with TL's launches: the host's speed, which varies between processes here,
    # moves both alike.
    raw = raw_launch_lib()
    stream = torch.cuda.current_stream().cuda_stream
    raws, tls = [], []
    fast_before = empty.launch_counts["fast"]
    for _ in range(3):
        if raw is not None:
            us = raw.tl_bench_raw_launch_us(e.device.index or 0, reps, 7, 1, 0, stream)
            if us < 0:
                raise RuntimeError(f"raw launch: {raw.tl_bench_raw_launch_error().decode()}")
            raws.append(us * 1e-6)
        tls.append(per_launch(lambda: empty[(1,)](e)))
    t_tl = sorted(tls)[1]
    fast = empty.launch_counts["fast"] - fast_before
    use_c, tl.fastlaunch.USE_C, empty._plans = tl.fastlaunch.USE_C, False, []
    t_plan = per_launch(lambda: empty[(1,)](e))
    tl.fastlaunch.USE_C, empty._plans = use_c, []
    tl.fastlaunch.ENABLED = False
    t_full = per_launch(lambda: empty[(1,)](e), rounds=3)
    tl.fastlaunch.ENABLED = True
    t_torch = per_launch(lambda: e.add_(0))
    print(f"launch_empty_python_us: {t_tl * 1e6:.2f}")
    if raws:
        t_raw = sorted(raws)[1]
        print(f"launch_raw_tensor_same_process_us: {t_raw * 1e6:.2f}")
        print(f"launch_empty_python_minus_raw_us: {(t_tl - t_raw) * 1e6:.2f}")
    print(f"launch_empty_python_c_launcher: {'on' if use_c and tl.fastlaunch.C else 'off'}")
    print(f"launch_empty_python_fast_path_launches: {fast} of {3 * 7 * reps + 1}")
    print(f"launch_empty_python_plans_only_us: {t_plan * 1e6:.2f}")
    print(f"launch_empty_python_full_path_us: {t_full * 1e6:.2f}")
    if os.environ.get("TL_BENCH_PROFILE_LAUNCH"):  # where the Python launch's time goes
        import cProfile
        import pstats
        cProfile.runctx("for _ in range(2000): empty[(1,)](e)", globals(), {"empty": empty, "e": e},
                        "/tmp/tl-launch.prof")
        torch.cuda.synchronize()
        pstats.Stats("/tmp/tl-launch.prof").sort_stats("tottime").print_stats(14)
    print(f"launch_torch_add_us: {t_torch * 1e6:.2f}")


if __name__ == "__main__":
    sys.exit(main())
