// The ops suite: every generated specialization of the op library (kernels/ops/<name>.tlir, one
// case each in kernels/ops/cases.tsv, written by python/tl/ops/generate.py) compiled for the
// device's target and run through the HAL on ragged shapes; every float tensor compared with the
// same kernel on the reference interpreter's fp64 mode under the op's tolerance entry, every
// integer tensor exactly with its normal mode. Then a short timed run places the op on the
// roofline of the device's datasheet (informative: the verdict is correctness only).
// SPDX-License-Identifier: Apache-2.0
#include "case_args.h"
#include "compare.h"
#include "datasheet.h"
#include "device_run.h"

#include "tl/ir/parser.h"
#include "tl/reference/metrics.h"
#include "tl/reference/ops.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <sstream>

namespace tl::conform {
namespace {

constexpr const char *kCasesFile = "kernels/ops/cases.tsv";
constexpr const char *kColumns[] = {"name",      "shape",      "grid",    "args",
                                    "tolerance", "terms",      "cond",    "flops",
                                    "bytes",     "vector_ops", "exp_ops", "special_ops"};

/// The cases file's lines as JSON objects of its columns (numbers as numbers); throws naming
/// the file and line of a malformed one.
std::vector<json> op_cases(const Paths &paths) {
  std::vector<json> out;
  const std::string path = paths.source_dir + "/" + kCasesFile;
  if (paths.source_dir.empty() || !std::filesystem::exists(path))
    return out;
  std::istringstream in(read_file(path));
  int line_no = 0;
  bool header = false;
  for (std::string line; std::getline(in, line);) {
    ++line_no;
    if (line.empty() || line[0] == '#')
      continue;
    std::vector<std::string> cols;
    std::istringstream l(line);
    for (std::string c; std::getline(l, c, '\t');)
      cols.push_back(c);
    const size_t want = std::size(kColumns);
    if (cols.size() != want)
      throw std::runtime_error(path + ":" + std::to_string(line_no) + ": " +
                               std::to_string(cols.size()) + " columns, expected " +
                               std::to_string(want));
    if (!header) { // the column names
      for (size_t i = 0; i < want; ++i)
        if (cols[i] != kColumns[i])
          throw std::runtime_error(path + ":" + std::to_string(line_no) + ": column " +
                                   std::to_string(i + 1) + " is '" + cols[i] + "', expected '" +
                                   kColumns[i] + "'");
      header = true;
      continue;
    }
    json c;
    for (size_t i = 0; i < want; ++i) {
      const std::string k = kColumns[i];
      if (k == "terms" || k == "flops" || k == "bytes" || k == "vector_ops" || k == "exp_ops" ||
          k == "special_ops")
        c[k] = std::stod(cols[i]);
      else
        c[k] = cols[i];
    }
    out.push_back(c);
  }
  return out;
}

std::vector<TestDef> list_ops(const ListContext &ctx) {
  std::vector<TestDef> out;
  for (const json &c : op_cases(ctx.paths)) {
    const std::string name = c["name"], file = "kernels/ops/" + name + ".tlir";
    // The optional element types the kernel uses (fp8): a profile may exempt them, so a
    // device without them is not-supported there rather than failing.
    json needs = json::array();
    const std::string text = read_file(ctx.paths.source_dir + "/" + file);
    for (const char *dt : {"f8e4m3", "f8e5m2"})
      if (text.find(dt) != std::string::npos)
        needs.push_back(dt);
    json params = {{"file", file},
                   {"file_sha256", sha256_file(ctx.paths.source_dir + "/" + file)},
                   {"case", c}};
    if (!needs.empty())
      params["needs"] = needs;
    out.push_back({"ops." + name, "ops", "core", 180, false, params});
  }
  return out;
}

/// The fp64-mode arguments with every float tensor replaced by its absolute values: run on a
/// kernel linear in its inputs (sums, dots), the reference of the absolute terms that the
/// classical bound's cond needs.
std::vector<interp::HostTensor> abs_tensors(const std::vector<interp::HostTensor> &t) {
  std::vector<interp::HostTensor> out = t;
  for (interp::HostTensor &h : out)
    if (ir::is_float(h.dtype()))
      for (int64_t e = 0; e < h.num_elements(); ++e)
        h.set(e, std::fabs(h.get(e)));
  return out;
}

std::vector<double> values(const interp::HostTensor &h) {
  std::vector<double> v(h.num_elements());
  for (size_t e = 0; e < v.size(); ++e)
    v[e] = h.get(e);
  return v;
}

/// Every tensor of the device's run against the references; "" or the first failure.
std::string compare_tensors(const WorkerContext &ctx, const ir::Kernel &kernel, const CaseArgs &a,
                            const std::vector<interp::HostTensor> *abs_ref, const json &c,
                            json &per_tensor) {
  const auto table = ToleranceTable::load(ctx.paths.data_dir + "/tolerances.json");
  std::string failure;
  size_t ti = 0;
  for (const auto &p : kernel.body()->arguments()) {
    if (!p->type().is_tensor())
      continue;
    const interp::HostTensor &d = a.dev_t[ti];
    const bool fp = ir::is_float(d.dtype());
    const std::vector<double> dv = values(d), rv = values(fp ? a.ref64_t[ti] : a.ref_t[ti]);
    std::vector<double> av;
    if (fp && abs_ref)
      av = values((*abs_ref)[ti]);
    ++ti;
    const std::string dt(ir::scalar_name(d.dtype()));
    const Tolerance tol = fp ? table.lookup(c["tolerance"], dt) : table.lookup("gather", dt);
    const int64_t terms = static_cast<int64_t>(c["terms"].get<double>());
    CompareResult cr = compare({d.dtype(), &dv, &rv, av.empty() ? nullptr : &av, terms}, tol);
    cr.metrics.erase("ulp_histogram");
    cr.metrics["argument"] = p->name();
    cr.metrics["reference"] = fp ? "interpreter fp64 mode" : "interpreter";
    if (fp) { // the IR's own rounding (the interpreter's normal mode) against fp64, for scale
      const std::vector<double> iv = values(a.ref_t[ti - 1]);
      cr.metrics["interpreter_normwise"] =
          tl::ref::normwise_relative_error(int64_t(iv.size()), iv.data(), rv.data());
    }
    per_tensor.push_back(cr.metrics);
    if (!cr.ok && failure.empty())
      failure = "argument '" + p->name() + "' (" + dt + ") differs from " +
                (fp ? "the interpreter's fp64 mode" : "the interpreter") + ": " + cr.message;
  }
  return failure;
}

/// Device buffers holding the case's tensors (as the correctness run left them) and the launch
/// arguments, scalars in the dtype the kernel declares.
struct Launch {
  std::vector<hal::Buffer> buffers;
  std::vector<tl_arg> args;
};
Launch upload(hal::Device &dev, hal::Stream &s, const LoadedKernel &k, const CaseArgs &a) {
  Launch l;
  l.buffers.reserve(a.dev_args.size());
  for (uint32_t p = 0; p < a.dev_args.size(); ++p) {
    const KernelArg &arg = a.dev_args[p];
    if (auto *t = std::get_if<interp::HostTensor *>(&arg)) {
      const uint64_t bytes = (*t)->size_bytes();
      l.buffers.push_back(dev.buffer(bytes ? bytes : 1, TL_BUFFER_DEVICE_LOCAL));
      if (bytes)
        s.copy_to_device((*t)->data(), l.buffers.back(), bytes);
      l.args.push_back(
          hal::tensor_arg(l.buffers.back(), static_cast<tl_dtype>((*t)->dtype()), (*t)->shape()));
      continue;
    }
    tl_param_info info{};
    info.struct_size = sizeof info;
    hal::check(tl_executable_param_info(k.exe.get(), k.index, p, &info));
    const auto dtype = static_cast<tl_dtype>(info.dtype);
    const double v = std::holds_alternative<double>(arg) ? std::get<double>(arg)
                                                         : double(std::get<int64_t>(arg));
    const bool is_float = dtype >= TL_DTYPE_F16 && dtype <= TL_DTYPE_F8E5M2;
    l.args.push_back(is_float ? hal::float_arg(dtype, v) : hal::int_arg(dtype, int64_t(v)));
  }
  s.synchronize();
  return l;
}

/// The op on the roofline: its best time over a few launches against the least time its work
/// needs on the datasheet's figures (as the performance suite bounds a case). Informative.
json roofline(WorkerContext &ctx, const LoadedKernel &k, std::array<uint64_t, 3> grid,
              const CaseArgs &a, const json &c) {
  hal::Device dev(ctx.device);
  hal::Stream s = dev.stream();
  Launch l = upload(dev, s, k, a);
  const Datasheet ds = datasheet_for(ctx);
  const bool simulated = dev.info().flags & TL_DEVICE_SIMULATED_TIME;
  const Timing t = time_op(
      dev, s, [&] { s.launch(k.exe, k.index, grid, l.args); }, simulated ? 0 : 1, 3);
  const double best = t.best_s, flops = c["flops"], bytes = c["bytes"];
  const double vops = c["vector_ops"], exps = c["exp_ops"], specials = c["special_ops"];
  json m = {{"best_s", best},         {"reps_run", t.device_s.size()},
            {"flops", flops},         {"bytes", bytes},
            {"vector_ops", vops},     {"exp_ops", exps},
            {"special_ops", specials}};
  if (std::string why = implausible_clock(t, ds.simulated_time); !why.empty())
    m["implausible"] = why;
  if (!ds.ok || ds.flops("f32") <= 0 || ds.memory_bandwidth <= 0) {
    m["bound"] = nullptr;
    m["why_no_bound"] =
        ds.ok ? "the datasheet declares no peak_flops.f32 or memory bandwidth" : ds.reason;
    m["achieved_per_s"] = best > 0 ? bytes / best : 0;
    m["unit"] = "B/s";
    return m;
  }
  const double compute_s = flops / ds.flops("f32"), memory_s = bytes / ds.memory_bandwidth;
  const double vector_s = (ds.vector_ops > 0 ? vops / ds.vector_ops : 0) +
                          (ds.exp_ops > 0 ? exps / ds.exp_ops : 0) +
                          (ds.special_ops > 0 ? specials / ds.special_ops : 0);
  const double bound_s = std::max({compute_s, memory_s, vector_s});
  std::string kind = "memory", unit = "B/s";
  double work = bytes;
  if (bound_s == compute_s && compute_s > memory_s) {
    kind = "compute";
    unit = "FLOP/s";
    work = flops;
  } else if (bound_s == vector_s && vector_s > memory_s) {
    kind = "vector";
    unit = "op/s";
    work = vops + exps + specials;
  }
  m["bound"] = kind;
  m["unit"] = unit;
  m["bound_s"] = {{"compute", compute_s}, {"memory", memory_s}, {"vector", vector_s}};
  m["achieved_per_s"] = best > 0 ? work / best : 0;
  m["bound_per_s"] = work / bound_s;
  m["fraction_of_roofline"] = best > 0 ? bound_s / best : 0;
  if (std::string why =
          implausible_fraction(best > 0 ? bound_s / best : 0, 1.0, "the roofline of the datasheet");
      !why.empty())
    m["implausible"] = why;
  return m;
}

/// The fp64 answer of reference/ (written without the interpreter) for the ops it has: softmax,
/// log_softmax, layernorm, rmsnorm, plain GEMM, attention (GQA by repeating k and v; key lengths
/// by truncating each head's keys, key masks by gathering each query's visible keys) and row sums;
/// empty for the others. `out`: the argument it is the answer for.
std::vector<double> independent_answer(const std::string &op, const ir::Kernel &kernel,
                                       const CaseArgs &a, std::string &out) {
  std::map<std::string, const interp::HostTensor *> t;
  std::map<std::string, double> scalar;
  size_t ti = 0, ai = 0;
  for (const auto &p : kernel.body()->arguments()) {
    const KernelArg &arg = a.ref64_args[ai++];
    if (p->type().is_tensor())
      t[p->name()] = &a.ref64_t[ti++];
    else
      scalar[p->name()] = std::holds_alternative<double>(arg) ? std::get<double>(arg)
                                                              : double(std::get<int64_t>(arg));
  }
  auto vals = [&](const char *name) { return values(*t.at(name)); };
  auto dim = [&](const char *name, int i) { return t.at(name)->shape()[i]; };
  std::vector<double> r;
  if (op == "softmax" || op == "log_softmax") {
    const std::vector<double> x = vals("x");
    r.resize(x.size());
    tl::ref::softmax_rows(dim("x", 0), dim("x", 1), x.data(), r.data());
    if (op == "log_softmax")
      for (double &v : r)
        v = std::log(v);
    out = "out";
  } else if (op == "layernorm" || op == "rmsnorm") {
    const std::vector<double> x = vals("x"), w = vals("w"), b = vals("b");
    r.resize(x.size());
    // eps is an f32 parameter: the kernel sees 1e-5 rounded to f32
    const double eps = double(float(scalar.at("eps")));
    if (op == "layernorm")
      tl::ref::layernorm_rows(dim("x", 0), dim("x", 1), x.data(), w.data(), b.data(), eps,
                              r.data());
    else
      tl::ref::rmsnorm_rows(dim("x", 0), dim("x", 1), x.data(), w.data(), eps, r.data());
    out = "out";
  } else if (op == "gemm") {
    const std::vector<double> A = vals("a"), B = vals("b");
    const int64_t z = dim("a", 0), m = dim("a", 1), k = dim("a", 2), n = dim("b", 2);
    r.resize(z * m * n);
    for (int64_t i = 0; i < z; ++i)
      tl::ref::gemm(false, false, m, n, k, scalar.at("alpha"), &A[i * m * k], k, &B[i * k * n], n,
                    0, &r[i * m * n], n);
    out = "out";
  } else if (op.rfind("attention", 0) == 0 && op.find("backward") == std::string::npos) {
    const std::vector<double> q = vals("q"), k = vals("k"), v = vals("v");
    const int64_t bh = dim("q", 0), s = dim("q", 1), d = dim("q", 2), tk = dim("k", 1);
    const int64_t group = int64_t(scalar.at("group"));
    std::vector<double> kk(bh * tk * d), vv(bh * tk * d);
    for (int64_t h = 0; h < bh; ++h) // query head h reads kv head h / group
      for (int64_t e = 0; e < tk * d; ++e) {
        kk[h * tk * d + e] = k[(h / group) * tk * d + e];
        vv[h * tk * d + e] = v[(h / group) * tk * d + e];
      }
    r.resize(q.size());
    const bool causal = op.find("causal") != std::string::npos;
    if (op.find("_mask_") != std::string::npos) {
      // key mask (B, T): query i of head h sees the keys j with klen[h / heads][j] != 0 (and j
      // <= i when causal), gathered into a dense row; none: zeros
      const std::vector<double> kmask = vals("klen");
      const int64_t heads = int64_t(scalar.at("heads"));
      std::vector<double> ks(tk * d), vs(tk * d);
      for (int64_t h = 0; h < bh; ++h)
        for (int64_t i = 0; i < s; ++i) {
          int64_t n = 0;
          for (int64_t j = 0; j < tk && (!causal || j <= i); ++j)
            if (kmask[(h / heads) * tk + j] != 0) {
              std::copy_n(&kk[(h * tk + j) * d], d, &ks[n * d]);
              std::copy_n(&vv[(h * tk + j) * d], d, &vs[n * d]);
              ++n;
            }
          double *ri = &r[(h * s + i) * d];
          if (n == 0)
            std::fill(ri, ri + d, 0.0);
          else
            tl::ref::attention(1, 1, n, d, &q[(h * s + i) * d], ks.data(), vs.data(),
                               scalar.at("scale"), false, ri);
        }
    } else if (op.find("_len_") == std::string::npos) {
      tl::ref::attention(bh, s, tk, d, q.data(), kk.data(), vv.data(), scalar.at("scale"), causal,
                         r.data());
    } else { // padding masks: head bh sees the first klen[bh / heads] keys; none: zeros
      const std::vector<double> klen = vals("klen");
      const int64_t heads = int64_t(scalar.at("heads"));
      for (int64_t h = 0; h < bh; ++h) {
        const int64_t n = std::clamp(int64_t(klen[h / heads]), int64_t(0), tk);
        double *rh = &r[h * s * d];
        if (n == 0)
          std::fill(rh, rh + s * d, 0.0);
        else
          tl::ref::attention(1, s, n, d, &q[h * s * d], &kk[h * tk * d], &vv[h * tk * d],
                             scalar.at("scale"), causal, rh);
      }
    }
    out = "out";
  } else if (op == "sum_rows") {
    const std::vector<double> x = vals("x");
    r.resize(dim("x", 0));
    tl::ref::reduce(tl::ref::ReduceKind::Sum, dim("x", 0), dim("x", 1) * dim("x", 2), x.data(), 1,
                    r.data());
    out = "out";
  }
  return r;
}

/// "" or why the interpreter's fp64 run is not the fp64 answer: where reference/ has the op,
/// the two must agree to 1e-12 normwise (else the kernel or the fp64 mode is wrong, not the
/// device). The agreement is recorded in `m`.
std::string check_reference(const std::string &op, const ir::Kernel &kernel, const CaseArgs &a,
                            json &m) {
  std::string out;
  const std::vector<double> indep = independent_answer(op, kernel, a, out);
  if (indep.empty())
    return "";
  size_t ti = 0;
  for (const auto &p : kernel.body()->arguments()) {
    if (!p->type().is_tensor())
      continue;
    if (p->name() == out) {
      const std::vector<double> ref = values(a.ref64_t[ti]);
      const double e =
          tl::ref::normwise_relative_error(int64_t(ref.size()), ref.data(), indep.data());
      m["reference_check"] = {{"argument", out}, {"normwise", e}, {"bound", 1e-12}};
      if (!(e <= 1e-12))
        return "the interpreter's fp64 run of the kernel differs from reference/'s fp64 " + op +
               " by " + std::to_string(e) +
               " normwise (> 1e-12): the kernel or the fp64 mode is "
               "wrong, not the device";
      return "";
    }
    ++ti;
  }
  return "";
}

/// One launch of the loaded kernel on the device's arguments, every tensor copied back.
void run_loaded(WorkerContext &ctx, const LoadedKernel &k, std::array<uint64_t, 3> grid,
                const CaseArgs &a) {
  std::vector<hal::HostArg> host;
  for (const KernelArg &arg : a.dev_args)
    if (auto *ht = std::get_if<interp::HostTensor *>(&arg))
      host.push_back(hal::HostArg::tensor((*ht)->data(), (*ht)->size_bytes(),
                                          static_cast<tl_dtype>((*ht)->dtype()), (*ht)->shape()));
    else if (auto *i = std::get_if<int64_t>(&arg))
      host.push_back(hal::HostArg::integer(*i));
    else
      host.push_back(hal::HostArg::real(std::get<double>(arg)));
  hal::run_with_host_args(hal::Device(ctx.device), k.exe, k.index, grid, host);
}

Outcome run_ops(WorkerContext &ctx, const TestDef &t) {
  const json &c = t.params["case"];
  const std::string name = c["name"],
                    file = ctx.paths.source_dir + "/" + t.params["file"].get<std::string>();
  if (compile_target(ctx.info, ctx.paths).empty())
    return Outcome::not_supported("no compiler backend for the device's targets");
  const std::string src = read_file(file);
  if (sha256_file(file) != t.params["file_sha256"])
    return Outcome::fail(file + " is not the file the suite lists (SHA-256 differs)");
  ir::Diagnostics diags;
  auto module = ir::parse(src, file, diags);
  const ir::Kernel *kernel = module ? module->find_kernel(name) : nullptr;
  if (!kernel)
    return Outcome::fail(file + " does not define kernel '" + name + "'\n" + diags.str());
  for (const auto &p : kernel->body()->arguments())
    if (p->type().is_tensor()) {
      const ir::ScalarKind k = p->type().elem();
      if (!(ctx.info.supported_dtypes & (uint64_t(1) << static_cast<int>(k))))
        return Outcome::not_supported("the device does not support " +
                                      std::string(ir::scalar_name(k)) + " (argument '" + p->name() +
                                      "')");
    }
  std::map<std::string, std::string> kv = case_values(name + " " + c["args"].get<std::string>());
  const std::array<uint64_t, 3> grid = case_grid(c["grid"]);
  CaseArgs a;
  if (std::string error = make_case_args(*kernel, kv, ctx.seed, a); !error.empty())
    return Outcome::fail(std::string(kCasesFile) + ": " + name + ": " + error);
  run_on_interpreter(src, name, grid, a.ref_args);
  run_on_interpreter(src, name, grid, a.ref64_args, /*fp64_reference=*/true);
  std::vector<interp::HostTensor> abs_t;
  if (c["cond"] == "abs") {
    abs_t = abs_tensors(a.ref64_t);
    std::vector<KernelArg> abs_args = a.ref64_args;
    for (size_t i = 0, ti = 0; i < abs_args.size(); ++i)
      if (std::holds_alternative<interp::HostTensor *>(abs_args[i]))
        abs_args[i] = &abs_t[ti++];
    run_on_interpreter(src, name, grid, abs_args, /*fp64_reference=*/true);
  }
  LoadedKernel k = load_kernel(ctx, src, name);
  run_loaded(ctx, k, grid, a);
  const std::string dtype = name.substr(name.rfind('_') + 1);
  json m = {{"op", name.substr(0, name.rfind('_'))},
            {"dtype", dtype},
            {"shape", c["shape"]},
            {"tolerance", c["tolerance"]},
            {"tensors", json::array()}};
  if (std::string why = check_reference(m["op"], *kernel, a, m); !why.empty())
    return Outcome::fail(why, m);
  const std::string failure =
      compare_tensors(ctx, *kernel, a, abs_t.empty() ? nullptr : &abs_t, c, m["tensors"]);
  if (!failure.empty())
    return Outcome::fail(failure, m);
  m["roofline"] = roofline(ctx, k, grid, a, c);
  return Outcome::pass(m);
}

} // namespace

Suite ops_suite() { return {"ops", list_ops, run_ops}; }

} // namespace tl::conform
