"""Cold compile of the GEMM kernels to cubins: each measurement is the first compile of a fresh
process (its own subprocess, the disk cache off), after what a first launch does before it
compiles: `import tl`, the cuda device opened, LLVM initialized (an empty kernel compiled). The
call is the one a launch makes (tl.ir.compile_text with the device's target options: on an H200
the sm_90a cubin alone); the library GEMM also with the target's default images (sm_80 +
sm_90a, as tlc builds them, on two threads).
Kernels: the library GEMM (kernels/tlir/gemm.tlir, 32x32 tiles, K in chunks of 256), and the
bench's f16 tensor-core (128x128x64: wgmma on sm_90a) and f32 CUDA-core (128x128x32) GEMMs.
Prints `name: ms` lines (the median of --runs processes and each run); TL_NVPTX_TIMES=1 adds
each stage's time on stderr.
Usage: python3 bench/cuda/cold_compile.py [--runs N]
"""
import json
import os
import statistics
import subprocess
import sys
import time

root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
KERNELS = ("gemm_library", "gemm_library_default_archs", "gemm_bench_tc_f16", "gemm_bench_f32")


def kernel_text(name):
    if name.startswith("gemm_library"):
        return open(os.path.join(root, "kernels", "tlir", "gemm.tlir")).read()
    import numpy as np
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import bench_rows  # needs torch
    dtype, bk = (np.float16, 64) if name.endswith("tc_f16") else (np.float32, 32)
    a = np.empty((4096, 4096), dtype)
    return bench_rows.gemm_tc.ir(a, a, np.empty((4096, 4096), np.float32), BM=128, BN=128, BK=bk)


def one(name):
    """In a fresh process: the measured compile of `name`; prints {"ms": ..., "bytes": ...}."""
    os.environ["TL_CACHE_DIR"] = ""
    sys.path.insert(0, os.path.join(root, "python"))
    import tl
    from tl import ir
    options = ""
    try:
        options = tl.runtime.Device("cuda").info["target_options"]
    except Exception as e:  # no GPU here: the default images only
        print(f"no cuda device ({e})", file=sys.stderr)
    if name == "gemm_library_default_archs":
        options = ""
    text = kernel_text(name)
    ir.compile_text("kernel @warm() {\n  return\n}\n", "nvptx", producer="warm", options=options)
    t0 = time.perf_counter()
    blob = ir.compile_text(text, "nvptx", producer="cold", options=options)
    ms = (time.perf_counter() - t0) * 1e3
    print(json.dumps({"ms": ms, "bytes": len(blob), "options": options}))


def main():
    runs = int(sys.argv[sys.argv.index("--runs") + 1]) if "--runs" in sys.argv else 3
    for name in KERNELS:
        times, info = [], None
        for _ in range(runs):
            p = subprocess.run([sys.executable, os.path.abspath(__file__), "--one", name],
                               capture_output=True, text=True, timeout=120)
            sys.stderr.write(p.stderr)
            if p.returncode:
                if "bench_rows" in p.stderr or "torch" in p.stderr:
                    break  # the bench's kernels need torch
                print(f"cold_compile_{name}: failed (exit {p.returncode})")
                break
            info = json.loads(p.stdout.strip().splitlines()[-1])
            times.append(info["ms"])
        if times:
            print(f"cold_compile_{name}_ms: {statistics.median(times):.1f} (runs "
                  f"{', '.join(f'{t:.1f}' for t in times)}; {info['bytes']} bytes; options "
                  f"{info['options'] or '(default archs)'})")


if __name__ == "__main__":
    if "--one" in sys.argv:
        one(sys.argv[sys.argv.index("--one") + 1])
    else:
        main()
