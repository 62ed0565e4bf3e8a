"""Cold compile of the GEMM kernels (the library's; the bench's f16 tensor-core and f32 ones) to
cubins, in a fresh process with the disk cache off, through the same call a launch makes
(tl.ir.compile_text with the device's target options: on an H200, the sm_90a cubin alone), and
the library GEMM also with the target's default images (sm_80 + sm_90a, as tlc builds them).
Prints `name: ms` lines; TL_NVPTX_TIMES=1 adds each stage's time on stderr.
Usage: TL_CACHE_DIR= python3 bench/cuda/cold_compile.py
"""
import os
import sys
import time

root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
sys.path.insert(0, os.path.join(root, "python"))
import tl  # noqa: E402
from tl import ir  # noqa: E402


def main():
    os.environ["TL_CACHE_DIR"] = ""
    # The library GEMM (32x32 tiles), then the bench's (below), each compiled once.
    lib = open(os.path.join(root, "kernels", "tlir", "gemm.tlir")).read()
    options = ""
    try:
        options = tl.runtime.Device("cuda").info["target_options"]
    except Exception as e:  # no GPU here: the default images only
        print(f"cold_compile_device: none ({e})")
    print(f"cold_compile_device_options: {options or '(none)'}")
    ir.compile_text("kernel @warm() {\n  return\n}\n", "nvptx", producer="cold")  # LLVM's init
    t0 = time.perf_counter()
    blob = ir.compile_text(lib, "nvptx", producer="cold-default")
    print(f"cold_compile_gemm_library_default_archs_ms: {(time.perf_counter() - t0) * 1e3:.1f} "
          f"({len(blob)} bytes)")
    t0 = time.perf_counter()
    blob = ir.compile_text(lib, "nvptx", producer="cold", options=options)
    print(f"cold_compile_gemm_library_ms: {(time.perf_counter() - t0) * 1e3:.1f} ({len(blob)} bytes)")
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    try:
        import numpy as np
        import bench_rows  # noqa: F401 (needs torch)
    except ImportError:
        return
    # The bench's tensor-core GEMM (f16, 128x128x64: wgmma on sm_90a, mma.sync on sm_80) and
    # its f32 one (128x128x32, CUDA cores), each in the pipelined K loop.
    c = np.empty((4096, 4096), np.float32)
    for name, dtype, bk in (("tc_f16", np.float16, 64), ("f32", np.float32, 32)):
        a = np.empty((4096, 4096), dtype)
        text = bench_rows.gemm_tc.ir(a, a, c, BM=128, BN=128, BK=bk)
        t0 = time.perf_counter()
        blob = ir.compile_text(text, "nvptx", producer="cold", options=options)
        print(f"cold_compile_gemm_bench_{name}_ms: {(time.perf_counter() - t0) * 1e3:.1f} "
              f"({len(blob)} bytes)")


if __name__ == "__main__":
    main()
