// The compile pipeline: default passes, the target's planning passes, packaging.
// SPDX-License-Identifier: Apache-2.0
#include "tl/compiler/pipeline.h"

#include <algorithm>

namespace tl::compile {

exe::KernelInfo kernel_info(const ir::Kernel &kernel) {
  exe::KernelInfo info{kernel.name(), {}, 1, 0};
  for (const auto &arg : kernel.body()->arguments()) {
    const ir::Type &t = arg->type();
    const bool tensor = t.is_tensor();
    info.params.push_back({arg->name(), tensor ? exe::ParamKind::Tensor : exe::ParamKind::Scalar,
                           static_cast<tl_dtype>(t.elem()), tensor ? t.rank() : 0});
  }
  ir::walk(kernel.body(), [&](ir::Operation *op) {
    if (op->opcode() != ir::Opcode::ProgramId && op->opcode() != ir::Opcode::NumPrograms)
      return;
    // The verifier keeps axis in 0..2; the clamp keeps an unverified kernel in range too.
    if (const int64_t *axis = op->attr_as<int64_t>("axis"))
      info.grid_rank =
          std::max(info.grid_rank, static_cast<int>(std::clamp<int64_t>(*axis, 0, 2)) + 1);
  });
  return info;
}

std::string add_planning_passes(passes::PassManager &pm, const std::string &target_name,
                                const TargetOptions &options) {
  const RegisteredTarget *target = find_target(target_name);
  if (!target)
    return unknown_target(target_name);
  std::vector<passes::PassInfo> planning;
  if (std::string e = target->planning_passes(options, planning); !e.empty())
    return e;
  for (const passes::PassInfo &p : planning)
    pm.add_pass(p);
  return {};
}

std::string optimize(ir::Module &module, const std::string &target_name,
                     const TargetOptions &options, const passes::PassManagerOptions &pm_options) {
  passes::PassManager pm(pm_options);
  if (passes::Status s = pm.add_pipeline(passes::default_pipeline()); !s)
    return s.message;
  if (std::string e = add_planning_passes(pm, target_name, options); !e.empty())
    return e;
  passes::Status s = pm.run(module);
  return s ? std::string() : s.message;
}

std::string package(const ir::Module &module, const std::string &target_name,
                    const std::string &producer, exe::Executable &out,
                    const TargetOptions &options) {
  const RegisteredTarget *target = find_target(target_name);
  if (!target)
    return unknown_target(target_name);
  out.target = target_name;
  out.producer = producer;
  for (const auto &kernel : module.kernels())
    out.kernels.push_back(kernel_info(*kernel));
  if (std::string e = target->emit(module, options, out.code); !e.empty())
    return e;
  // Reading it back applies every check a loader will (ranks, unique names, ...).
  const std::vector<uint8_t> bytes = exe::serialize(out);
  exe::LoadResult check = exe::deserialize(bytes.data(), bytes.size());
  return check.ok ? std::string() : "cannot package the module: " + check.error;
}

std::vector<uint8_t> build_executable(ir::Module &module, const std::string &target,
                                      const std::string &producer, std::string *error,
                                      const TargetOptions &options) {
  exe::Executable out;
  if (std::string e = optimize(module, target, options); !e.empty()) {
    *error = e;
    return {};
  }
  if (std::string e = package(module, target, producer, out, options); !e.empty()) {
    *error = e;
    return {};
  }
  return exe::serialize(out);
}

} // namespace tl::compile
