"""End-to-end tests of tl-conform: a core run on the cpu device, faulty plugins, resume after a
killed run, and tampered certification packages. Usage: conform_test.py [options] TEST."""
# SPDX-License-Identifier: Apache-2.0
import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tarfile
import time
import xml.etree.ElementTree as ET

STATUSES = {"pass", "fail", "not-supported", "crash", "timeout"}


def run(args, cmd, **kw):
    print("$", " ".join(cmd), flush=True)
    p = subprocess.run([args.tl_conform] + cmd, capture_output=True, text=True, **kw)
    print(p.stdout[-6000:], p.stderr[-3000:], sep="\n", flush=True)
    return p


def results(out):
    with open(os.path.join(out, "results.json")) as f:
        return json.load(f)


def by_id(doc):
    return {r["id"]: r for r in doc["results"]}


def check(cond, msg):
    if not cond:
        raise AssertionError(msg)


def fresh(args, name):
    out = os.path.join(args.work, name)
    shutil.rmtree(out, ignore_errors=True)
    return out


def check_outputs(out, charts=False):
    for f in ["results.jsonl", "results.json", "junit.xml", "report.html", "suite.json"]:
        check(os.path.getsize(os.path.join(out, f)) > 0, f"missing output {f}")
    doc = results(out)
    for r in doc["results"]:
        check(r["status"] in STATUSES, f"bad status {r}")
    junit = ET.parse(os.path.join(out, "junit.xml")).getroot()
    check(sum(int(s.get("tests")) for s in junit) == len(doc["results"]), "junit count")
    html = open(os.path.join(out, "report.html")).read()
    check("<script" not in html and (not charts or html.count("<svg") == 3), "report charts")
    for bad in ["src=", "href=\"http", "@import", "url("]:
        check(bad not in html, f"report reaches out: {bad}")
    pkgs = [f for f in os.listdir(out) if f.startswith("certification-") and f.endswith(".tar")]
    check(len(pkgs) == 1, f"one package expected, found {pkgs}")
    return doc, os.path.join(out, pkgs[0])


def cpu_core_run(args):
    out = fresh(args, "core")
    p = run(args, ["run", "--device", "cpu", "--profile", "core", "--out", out, "--jobs", "2",
                   "--quiet"])
    check(p.returncode in (0, 1), f"run failed to complete: rc {p.returncode}")
    check("seed: 20240607" in p.stdout and "verdict:" in p.stdout, "summary lines")
    doc, pkg = check_outputs(out, charts=True)
    manifest = json.load(open(os.path.join(out, "suite.json")))
    ids = by_id(doc)
    check(set(t["id"] for t in manifest["tests"]) == set(ids), "every core test has a result")
    for suite in ["api", "precision", "compiler", "bandwidth", "performance"]:
        check(any(r["suite"] == suite for r in doc["results"]), f"no {suite} results")
    # Deterministic suites must pass on the cpu device; timing suites must have measured.
    for r in doc["results"]:
        if r["suite"] in ("api", "precision", "compiler"):
            ok = r["status"] in ("pass", "not-supported") or r.get("expected_failure")
            check(ok, f"{r['id']}: {r['message'][:300]}")
        else:
            check(r["status"] in ("pass", "fail") and r["metrics"], f"{r['id']} did not measure")
    v = run(args, ["verify", pkg])
    check(v.returncode in (0, 1) and "intact" in v.stdout and "verdict:" in v.stdout, "verify")


def faulty(args, kind, filters, extra=()):
    out = fresh(args, "faulty_" + kind)
    lib = os.path.join(args.faulty_dir, f"libtl_plugin_faulty_{kind}.so")
    cmd = ["run", "--device", "faulty_" + kind, "--plugin-path", lib, "--out", out, "--jobs", "2"]
    for f in filters:
        cmd += ["--filter", f]
    start = time.time()
    p = run(args, cmd + list(extra))
    check(p.returncode == 1, f"a faulty plugin's run must complete with failures: {p.returncode}")
    doc, _ = check_outputs(out)
    check(not doc["verdict"]["certified"], "a faulty plugin was certified")
    print(f"{kind}: {time.time() - start:.1f} s", flush=True)
    return by_id(doc)


def faulty_crash(args):
    r = faulty(args, "crash", ["api.PluginLoads", "api.Cts.QueryReportsCapabilities*",
                               "api.Cts.VectorAddOnRaggedSizes*", "precision.add.f32.4099",
                               "compiler.library_vector_add.*"])
    check(r["api.PluginLoads"]["status"] == "pass", "plugin loads")
    check(all(v["status"] == "pass" for k, v in r.items() if "QueryReports" in k), "query ok")
    for k, v in r.items():
        if "VectorAdd" in k or k.startswith(("precision.", "compiler.")):
            check(v["status"] == "crash", f"{k} should crash: {v['status']}")
    check("SIGSEGV" in r["precision.add.f32.4099"]["message"], "crash names the signal")


def faulty_hang(args):
    r = faulty(args, "hang", ["api.Cts.QueryReportsCapabilities*", "precision.add.f32.4099",
                              "compiler.library_gemm.tiny"], ["--timeout", "6"])
    check(r["precision.add.f32.4099"]["status"] == "timeout", "hang -> timeout")
    check(r["compiler.library_gemm.tiny"]["status"] == "timeout", "hang -> timeout")
    check(all(v["status"] == "pass" for k, v in r.items() if "QueryReports" in k), "query ok")


def faulty_wrong(args):
    r = faulty(args, "wrong", ["precision.add.f32.4099", "precision.exp.f32.4099",
                               "precision.dot.f32-f32.37x45x70", "compiler.library_vector_add.*",
                               "api.Cts.VectorAddOnRaggedSizes*"])
    for k, v in r.items():
        check(v["status"] == "fail", f"{k} should fail: {v['status']}")
    check("ulp" in r["precision.add.f32.4099"]["message"], "names the ulp error")
    check("interpreter" in r["compiler.library_vector_add.ragged"]["message"], "names the ref")


def faulty_noop(args):
    # Launches that report success and do nothing would reach any bandwidth: the output checked
    # after timing fails them.
    r = faulty(args, "noop", ["bandwidth.kernel_copy", "bandwidth.kernel_triad",
                              "performance.vector_add.*", "performance.softmax.*"])
    for k, v in r.items():
        check(v["status"] == "fail" and "after the timed" in v["message"],
              f"{k}: a no-op launch was not caught: {v['status']} {v['message'][:200]}")
    check(sum(k.startswith("performance.") for k in r) == 2, "the performance tests did not run")


def faulty_abi(args):
    r = faulty(args, "abi", [])
    check(r["api.PluginLoads"]["status"] == "fail", "wrong ABI must fail")
    check("ABI 99" in r["api.PluginLoads"]["message"], r["api.PluginLoads"]["message"])


def resume(args):
    out = fresh(args, "resume")
    os.makedirs(out)
    cmd = [args.tl_conform, "run", "--device", "cpu", "--out", out, "--filter", "precision.*.4099",
           "--filter", "compiler.*", "--suite", "precision", "--suite", "compiler"]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    log = os.path.join(out, "results.jsonl")
    deadline = time.time() + 120
    while time.time() < deadline:
        if os.path.exists(log) and sum(1 for _ in open(log)) >= 6:
            break
        time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)  # no chance to clean up: a crash of the runner itself
    proc.wait()
    time.sleep(1)
    before = [json.loads(l) for l in open(log) if l.strip()]
    done = [r["id"] for r in before if r.get("type") == "result"]
    check(len(done) >= 5, f"too few results before the kill: {len(done)}")
    p = run(args, cmd[1:] + ["--resume", "--quiet"])
    check(p.returncode in (0, 1), f"resume rc {p.returncode}")
    check(f"resuming: {len(done)} results" in p.stdout, "resume reports what it skips")
    after = [json.loads(l) for l in open(log) if l.strip()]
    ids = [r["id"] for r in after if r.get("type") == "result"]
    check(len(ids) == len(set(ids)), "a finished test ran again")
    check(after[: len(before)] == before, "earlier results were rewritten")
    doc, _ = check_outputs(out)
    check(len(doc["results"]) > len(done), "the resumed run added nothing")
    manifest = json.load(open(os.path.join(out, "suite.json")))
    sel = [t["id"] for t in manifest["tests"]
           if (t["id"].startswith("precision.") and t["id"].endswith(".4099"))
           or t["id"].startswith("compiler.")]
    check(set(sel) == set(ids), "the resumed run did not finish the selection")


def tamper(args):
    src = os.path.join(args.work, "core")
    pkg = [os.path.join(src, f) for f in os.listdir(src) if f.endswith(".tar")][0]
    good = open(pkg, "rb").read()
    p = run(args, ["verify", pkg])
    check(p.returncode in (0, 1), "the untouched package must verify")
    with tarfile.open(pkg) as t:
        members = {m.name: m for m in t.getmembers()}
    res = members["results.json"]
    cases = {
        "results byte": res.offset_data + res.size // 2,
        "header mtime": res.offset + 136 + 3,
        "padding": res.offset_data + res.size + 1 if res.size % 512 else None,
        "trailer": len(good) - 100,
        "sums": members["SHA256SUMS"].offset_data + 5,
        "statement": members["statement.txt"].offset_data + 10,
    }
    bad = os.path.join(args.work, "tampered.tar")
    for name, off in cases.items():
        if off is None:
            continue
        data = bytearray(good)
        data[off] ^= 0x01
        open(bad, "wb").write(bytes(data))
        p = run(args, ["verify", bad])
        check(p.returncode == 2 and "FAILED" in p.stdout, f"{name}: a changed byte went unnoticed")
    open(bad, "wb").write(good[:-700])
    check(run(args, ["verify", bad]).returncode == 2, "truncation went unnoticed")
    # A forger who flips a failure to a pass and re-hashes the member still changes the verdict.
    with tarfile.open(pkg) as t:
        files = {m.name: t.extractfile(m).read() for m in t.getmembers()}
    doc = json.loads(files["results.json"])
    failing = [r for r in doc["results"] if r["status"] in ("fail", "crash", "timeout")]
    if failing:
        failing[0]["status"] = "pass"
        files["results.json"] = (json.dumps(doc, indent=2) + "\n").encode()
        import hashlib
        sums = "".join(f"{hashlib.sha256(files[n]).hexdigest()}  {n}\n"
                       for n in files if n != "SHA256SUMS")
        files["SHA256SUMS"] = sums.encode()
        with tarfile.open(bad, "w", format=tarfile.USTAR_FORMAT) as t:
            import io
            for n, data in files.items():
                info = tarfile.TarInfo(n)
                info.size = len(data)
                info.mode = 0o644
                t.addfile(info, io.BytesIO(data))
        p = run(args, ["verify", bad])
        check(p.returncode == 2, "a re-hashed forgery went unnoticed")


def nonstandard(args):
    # Each way a run can move its own verdict makes it NON-STANDARD, never certified, and says why.
    filt = ["--device", "cpu", "--profile", "core", "--filter", "precision.add.f32.*"]
    out = fresh(args, "standard")
    p = run(args, ["run"] + filt + ["--out", out])
    doc = results(out)
    prov = doc["run"]["provenance"]
    check(doc["verdict"]["non_standard"] == [] and "NON-STANDARD" not in p.stdout,
          f"the kit's own files make a standard run: {doc['verdict']['non_standard']}")
    check(prov["suite_files_sha256"] == prov["kit_suite_files_sha256"], "pinned hash differs")
    loose = os.path.join(args.work, "loose-data")
    shutil.rmtree(loose, ignore_errors=True)
    shutil.copytree(prov["options"]["data_dir"], loose)
    with open(os.path.join(loose, "tolerances.json"), "a") as f:
        f.write(" ")  # one byte: a loosened table is no different to the kit
    cts = os.path.join(args.work, "edited_cts")
    shutil.copyfile(prov["options"]["cts"], cts)
    with open(cts, "ab") as f:
        f.write(b"\0")  # still runs; no longer the kit's
    os.chmod(cts, 0o755)
    cases = {
        "data": (["--data-dir", loose], {}, "tolerance table"),
        "cts": (["--cts", cts], {}, "is not the kit's"),
        "target": (["--target", "llvm-cpu"], {}, "--target llvm-cpu"),
        "peak": ([], {"TL_CPU_PEAK_BANDWIDTH": "1e15"}, "TL_CPU_PEAK_BANDWIDTH is set"),
    }
    for name, (extra, env, reason) in cases.items():
        out = fresh(args, "nonstandard_" + name)
        p = run(args, ["run"] + filt + ["--out", out] + extra, env={**os.environ, **env})
        doc = results(out)
        reasons = doc["verdict"]["non_standard"]
        check(any(reason in r for r in reasons), f"{name}: not marked non-standard: {reasons}")
        check(not doc["verdict"]["certified"] and "NON-STANDARD" in p.stdout, f"{name}: verdict")
        with tarfile.open([os.path.join(out, f) for f in os.listdir(out)
                           if f.endswith(".tar")][0]) as t:
            statement = t.extractfile("statement.txt").read().decode()
        check("NON-STANDARD" in statement, f"{name}: the package's statement does not say so")
    # `report` rebuilds the outputs of a run; its package is never certified.
    rebuilt = fresh(args, "rebuilt")
    shutil.copytree(os.path.join(args.work, "core"), rebuilt)
    run(args, ["report", "--out", rebuilt])
    reasons = results(rebuilt)["verdict"]["non_standard"]
    check(any("rebuilt by" in r for r in reasons), f"a rebuilt package is not marked: {reasons}")
    # A second result for a test in the log is an edit, never a newer result.
    with open(os.path.join(rebuilt, "results.jsonl")) as f:
        lines = f.read().splitlines()
    forged = json.loads(next(l for l in lines if '"type": "result"' in l or '"type":"result"' in l))
    forged["status"] = "pass"
    with open(os.path.join(rebuilt, "results.jsonl"), "a") as f:
        f.write(json.dumps(forged) + "\n")
    p = run(args, ["report", "--out", rebuilt])
    check(p.returncode == 2 and "a second result for test" in p.stderr,
          f"an appended result was accepted: rc {p.returncode}")


def perf_bar(args):
    # Performance is judged on the profile's floor of the roofline; a stored baseline only raises
    # the bar. Runs on copies of the data dir (non-standard runs, still judged).
    ids = ["performance.vector_add.f32.16M", "performance.gemm.f32.1024"]
    src = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "data")
    cases = {"none": None, "high": 1e30, "low": 1.0}
    for name, base in cases.items():
        data = os.path.join(args.work, "perf_data_" + name)
        shutil.rmtree(data, ignore_errors=True)
        shutil.copytree(src, data)
        os.remove(os.path.join(data, "baseline-cpu.json"))
        if base is not None:
            with open(os.path.join(data, "baseline-cpu.json"), "w") as f:
                json.dump({"device": "cpu", "margin": 0.1,
                           "tests": {i: {"achieved_flops_per_s": base} for i in ids}}, f)
        out = fresh(args, "perf_" + name)
        cmd = ["run", "--device", "cpu", "--suite", "performance", "--data-dir", data,
               "--out", out]
        for i in ids if name == "none" else ids[:1]:
            cmd += ["--filter", i]
        run(args, cmd)
        manifest = {t["id"]: t for t in json.load(open(os.path.join(out, "suite.json")))["tests"]}
        for i, r in by_id(results(out)).items():
            m, params = r["metrics"], manifest[i]["params"]
            check(params["min_fraction_of_roofline"] >= 0.25 and len(params["candidates"]) >= 2,
                  f"{i}: the floor and candidates are not in the manifest: {params}")
            floor = params["min_fraction_of_roofline"] * m["roofline_flops_per_s"]
            check(abs(m["floor_flops_per_s"] - floor) <= 1e-9 * floor, f"{i}: floor {m}")
            want_bar = "baseline" if name == "high" else "floor"
            check(m["bar"] == want_bar, f"{name} baseline: {i} judged on {m['bar']}")
            passed = m["achieved_flops_per_s"] >= m["bar_flops_per_s"]
            check(r["status"] == ("pass" if passed else "fail"), f"{i}: {r['status']} {m}")
            check(passed or f"{want_bar} bar" in r["message"], f"{i}: {r['message']}")
            if name == "high":
                check(r["status"] == "fail", f"{i}: passed a baseline it cannot reach")
            if name == "none":
                check("no baseline" in m["bar_why"], f"{i}: {m['bar_why']}")
            check(m["winner"] in [c["file"] for c in params["candidates"]], f"{i}: winner")


def npusim_core_run(args):
    # The simulated NPU's time is simulated, so every suite is deterministic: it must certify.
    out = fresh(args, "npusim")
    p = run(args, ["run", "--device", "npusim", "--profile", "core", "--out", out, "--jobs", "2",
                   "--quiet"])
    doc, pkg = check_outputs(out)
    failing = [(r["id"], r["message"][:200]) for r in doc["results"]
               if r["status"] in ("fail", "crash", "timeout")]
    check(doc["verdict"]["certified"] and p.returncode == 0,
          f"npusim not certified: {doc['verdict']['non_standard']} {failing[:5]}")
    v = run(args, ["verify", pkg])
    check(v.returncode == 0 and "intact" in v.stdout, "npusim's package does not verify")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tl-conform", required=True)
    ap.add_argument("--faulty-dir", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("test")
    args = ap.parse_args()
    os.makedirs(args.work, exist_ok=True)
    tests = {f.__name__: f for f in [cpu_core_run, faulty_crash, faulty_hang, faulty_wrong,
                                     faulty_abi, faulty_noop, resume, tamper, nonstandard,
                                     npusim_core_run, perf_bar]}
    tests[args.test](args)
    print("OK", args.test)


if __name__ == "__main__":
    sys.exit(main())
