# lit configuration (loaded by the generated lit.site.cfg.py; not named lit.cfg.py so that lit does
# not take compiler/tests/ for a separate suite) of the compiler's .tlir tests (passes, verifier diagnostics, tlc).
import os
import platform
import lit.formats

config.name = "TL compiler"
config.test_format = lit.formats.ShTest(execute_external=False)
config.suffixes = [".tlir"]
# The compiler's tests and those of the tools above it (tools/tlc): the other top-level folders
# hold no lit tests (their .tlir files are kernels and corpora).
config.test_source_root = config.tl_source_dir
config.test_exec_root = os.path.join(os.path.dirname(config.tl_tools_dir), "..", "tests", "lit-out")
# Every other top-level entry (other components, build trees of any name, the venv) is excluded
# by name; lit matches excludes by base name at any depth, and no folder under compiler/ or
# tools/ shares a name with a top-level one (the fuzz target's corpus is a copy of tests).
config.excludes = ["fuzz"] + [e for e in os.listdir(config.tl_source_dir)
                              if e not in ("compiler", "tools")]
for top in ("compiler", "tools"):  # a clash would drop that folder's tests without a word
    for dirpath, dirnames, _ in os.walk(os.path.join(config.tl_source_dir, top)):
        clash = set(dirnames) & set(config.excludes[1:])
        if clash:
            lit_config.fatal(f"{dirpath}: folder {sorted(clash)} has the name of a top-level "
                             "entry, which the lit suite excludes; rename one of them")
config.substitutions.append(("%tlc", os.path.join(config.tl_tools_dir, "tlc")))
config.environment["PATH"] = os.pathsep.join(
    [config.tl_tools_dir, os.path.dirname(config.filecheck), config.environment.get("PATH", "")])
# Tests of a built-in target (compiler/backends/<target>) need it built (tnpu: TL_BUILD_SIM).
for target in config.tl_builtin_targets.split(";"):
    config.available_features.add(target.replace("_", "-"))
config.substitutions.append(("%chips", os.path.join(config.tl_source_dir, "sim", "configs")))
# llvm-cpu planning tests of x86-only decisions (non-temporal stores); the target is the host.
if platform.machine() in ("x86_64", "AMD64", "i686"):
    config.available_features.add("x86")
# llvm-cpu codegen tests check the AVX-512 helpers (x86_isa.cpp) where the host has them.
try:
    with open("/proc/cpuinfo") as f:
        flags = next((l.split(":", 1)[1].split() for l in f if l.startswith("flags")), [])
except OSError:
    flags = []
if "avx512f" in flags and "avx512dq" in flags and "avx512vl" in flags:
    config.available_features.add("x86-avx512")
# ... and the AVX max/min forms (x86_isa.cpp's sse_minmax) where it has AVX but not AVX-512DQ.
if "avx" in flags and "avx512dq" not in flags:
    config.available_features.add("x86-avx-no512dq")
# nvptx tests that assemble their PTX need the CUDA toolkit's ptxas (no GPU).
_cuda = os.environ.get("TL_CUDA_PATH") or "/usr/local/cuda"
if os.access(os.path.join(_cuda, "bin", "ptxas"), os.X_OK):
    config.available_features.add("ptxas")
    config.substitutions.append(("%ptxas", os.path.join(_cuda, "bin", "ptxas")))
