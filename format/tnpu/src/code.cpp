// The tnpu code blob (serialize / parse), hand-written kernel assembly and packaging.
// SPDX-License-Identifier: Apache-2.0
#include "tl/format/tnpu_code.h"

#include "tl/npu/assembler.h"

#include <cstring>
#include <stdexcept>

namespace tl::tnpu {
namespace {

constexpr char kMagic[8] = {'T', 'N', 'P', 'U', 'C', 'O', 'D', 'E'};
constexpr uint32_t kVersion = 2; // 2: per-kernel flags

template <class T> void put(std::vector<uint8_t> &out, T v) {
  const auto *p = reinterpret_cast<const uint8_t *>(&v);
  out.insert(out.end(), p, p + sizeof v);
}

struct Reader {
  const uint8_t *p;
  size_t left;
  template <class T> bool get(T &v) {
    if (left < sizeof v)
      return false;
    std::memcpy(&v, p, sizeof v);
    p += sizeof v, left -= sizeof v;
    return true;
  }
};

/// Scalar instructions whose first operand is the register they write.
bool writes_slot0(npu::isa::Opcode op) {
  using O = npu::isa::Opcode;
  switch (op) {
  case O::Li:
  case O::Lih:
  case O::Mov:
  case O::Add:
  case O::Sub:
  case O::Mul:
  case O::And:
  case O::Or:
  case O::Xor:
  case O::Shl:
  case O::Shr:
  case O::Min:
  case O::Max:
  case O::Addi:
  case O::Muli:
  case O::Andi:
  case O::Shli:
  case O::Shri:
  case O::Dbnz:
  case O::CoreId:
  case O::NCores:
    return true;
  default:
    return false;
  }
}

} // namespace

std::vector<uint8_t> serialize_code(const std::vector<Kernel> &kernels) {
  std::vector<uint8_t> out(kMagic, kMagic + sizeof kMagic);
  put<uint32_t>(out, kVersion);
  put<uint32_t>(out, static_cast<uint32_t>(kernels.size()));
  for (const Kernel &k : kernels) {
    put<uint32_t>(out, static_cast<uint32_t>(k.bindings.size()));
    for (const Binding &b : k.bindings) {
      put<uint8_t>(out, static_cast<uint8_t>(b.kind));
      put<uint8_t>(out, b.reg);
      put<uint16_t>(out, b.param);
      put<uint16_t>(out, b.dim);
      put<int32_t>(out, b.patch);
    }
    std::vector<uint8_t> prog = npu::isa::to_binary(k.program);
    put<uint64_t>(out, prog.size());
    out.insert(out.end(), prog.begin(), prog.end());
    put<uint32_t>(out, static_cast<uint32_t>(k.asserts.size()));
    for (const std::string &m : k.asserts) {
      put<uint32_t>(out, static_cast<uint32_t>(m.size()));
      out.insert(out.end(), m.begin(), m.end());
    }
    put<uint32_t>(out, k.persistent ? 1u : 0u);
  }
  return out;
}

bool parse_code(const void *data, size_t size, std::vector<Kernel> &kernels, std::string &error) {
  kernels.clear();
  Reader r{static_cast<const uint8_t *>(data), size};
  char magic[8];
  uint32_t version = 0, count = 0;
  if (!r.get(magic) || std::memcmp(magic, kMagic, sizeof magic) != 0)
    return error = "not a tnpu code blob (bad magic)", false;
  if (!r.get(version) || version < 1 || version > kVersion)
    return error = "unsupported tnpu code version " + std::to_string(version), false;
  if (!r.get(count) || count > 65536)
    return error = "truncated tnpu code (kernel count)", false;
  for (uint32_t i = 0; i < count; ++i) {
    Kernel k;
    uint32_t nb = 0;
    if (!r.get(nb) || nb > 4096)
      return error = "truncated tnpu code (kernel " + std::to_string(i) + ")", false;
    for (uint32_t j = 0; j < nb; ++j) {
      uint8_t kind = 0;
      Binding b;
      if (!r.get(kind) || !r.get(b.reg) || !r.get(b.param) || !r.get(b.dim) || !r.get(b.patch))
        return error = "truncated tnpu code (bindings of kernel " + std::to_string(i) + ")", false;
      if (kind > static_cast<uint8_t>(BindKind::Grid) ||
          (b.patch < 0 && (b.reg == 0 || b.reg >= kPidReg)))
        return error = "bad binding " + std::to_string(j) + " of kernel " + std::to_string(i),
               false;
      b.kind = static_cast<BindKind>(kind);
      k.bindings.push_back(b);
    }
    uint64_t len = 0;
    if (!r.get(len) || len > r.left)
      return error = "truncated tnpu code (program of kernel " + std::to_string(i) + ")", false;
    std::vector<uint8_t> prog(r.p, r.p + len);
    r.p += len, r.left -= len;
    std::string e;
    if (!npu::isa::from_binary(prog, k.program, e))
      return error = "kernel " + std::to_string(i) + ": " + e, false;
    uint32_t na = 0;
    if (!r.get(na) || na > 65536)
      return error = "truncated tnpu code (asserts of kernel " + std::to_string(i) + ")", false;
    for (uint32_t j = 0; j < na; ++j) {
      uint32_t len = 0;
      if (!r.get(len) || len > r.left)
        return error = "truncated tnpu code (asserts of kernel " + std::to_string(i) + ")", false;
      k.asserts.emplace_back(reinterpret_cast<const char *>(r.p), len);
      r.p += len, r.left -= len;
    }
    uint32_t flags = 0;
    if (version >= 2 && (!r.get(flags) || flags > 1))
      return error = "bad flags of kernel " + std::to_string(i), false;
    k.persistent = flags & 1;
    for (const Binding &b : k.bindings)
      if (b.patch >= 0 && (size_t(b.patch) + 1 >= k.program.size() ||
                           k.program[b.patch].op != npu::isa::Opcode::Li ||
                           k.program[b.patch + 1].op != npu::isa::Opcode::Lih))
        return error = "kernel " + std::to_string(i) + ": binding patches instruction " +
                       std::to_string(b.patch) + ", which is not li + lih",
               false;
    kernels.push_back(std::move(k));
  }
  if (r.left != 0)
    return error = "trailing bytes after the tnpu code", false;
  return true;
}

Kernel assemble_kernel(const std::string &text, const std::string &file,
                       const std::vector<Binding> &bindings,
                       const std::map<std::string, int64_t> &defines) {
  npu::isa::Assembly a = npu::isa::assemble(text, defines);
  if (!a.ok())
    throw std::invalid_argument(npu::isa::format_diagnostics(file, a.errors));
  for (size_t i = 0; i < a.code.size(); ++i)
    if (writes_slot0(a.code[i].op) && a.code[i].slot[0] >= kPidReg)
      throw std::invalid_argument(file + ": instruction " + std::to_string(i) + " (" +
                                  npu::isa::op_info(a.code[i].op).mnemonic + ") writes r" +
                                  std::to_string(a.code[i].slot[0]) +
                                  ": r24..r31 belong to the launch wrapper");
  for (const Binding &b : bindings)
    if (b.patch >= 0 || b.reg == 0 || b.reg >= kPidReg)
      throw std::invalid_argument(file + ": binding to r" + std::to_string(b.reg) +
                                  ": only r1..r23 can be bound (no patches in assembly)");
  return Kernel{bindings, std::move(a.code), {}};
}

std::string check_binding(const Binding &b, const exe::KernelInfo &info) {
  if (b.kind == BindKind::Grid)
    return b.dim < 3 ? "" : "grid axis " + std::to_string(b.dim) + " is not 0..2";
  if (b.param >= info.params.size())
    return "binding names parameter " + std::to_string(b.param) + " of " +
           std::to_string(info.params.size());
  const exe::ParamInfo &p = info.params[b.param];
  const bool tensor = p.kind == exe::ParamKind::Tensor;
  switch (b.kind) {
  case BindKind::Address:
    return tensor ? "" : "address of scalar parameter " + std::to_string(b.param);
  case BindKind::Shape:
  case BindKind::StrideBytes:
    return tensor && b.dim < p.rank
               ? ""
               : "dimension " + std::to_string(b.dim) + " of parameter " + std::to_string(b.param);
  case BindKind::ScalarInt:
  case BindKind::ScalarF32:
    return tensor ? "scalar binding of tensor parameter " + std::to_string(b.param) : "";
  case BindKind::Grid:
    break;
  }
  return "";
}

std::vector<uint8_t> package(const std::vector<exe::KernelInfo> &infos,
                             const std::vector<Kernel> &kernels, const std::string &producer) {
  if (infos.size() != kernels.size())
    throw std::invalid_argument("tnpu: kernel table and code differ in length");
  for (size_t i = 0; i < infos.size(); ++i)
    for (const Binding &b : kernels[i].bindings)
      if (std::string e = check_binding(b, infos[i]); !e.empty())
        throw std::invalid_argument("tnpu: kernel " + infos[i].name + ": " + e);
  exe::Executable e;
  e.target = kTarget;
  e.producer = producer;
  e.kernels = infos;
  e.code = serialize_code(kernels);
  return exe::serialize(e);
}

} // namespace tl::tnpu
