// SPDX-License-Identifier: Apache-2.0
#include "vector_math.h"

#include <llvm/ADT/SmallVector.h>
#include <llvm/Transforms/Utils/Cloning.h>
#include <llvm/Transforms/Utils/ModuleUtils.h>

#include <stdexcept>

namespace tl::llvm_cpu {
namespace {

constexpr llvm::StringLiteral kHelperPrefix = "tl.";
constexpr llvm::StringLiteral kVariantsKey = "tl.vector-variant";
constexpr llvm::StringLiteral kMappingKey = "vector-function-abi-variant";

void no_side_effects(llvm::Function &f) {
  f.setDoesNotAccessMemory();
  f.setDoesNotThrow();
  f.setWillReturn();
  f.setNoSync();
  f.setDoesNotFreeMemory();
}

} // namespace

llvm::CallInst *call_helper(llvm::IRBuilder<> &b, llvm::Module &m, const std::string &name,
                            llvm::FunctionType *type, const HelperDefinition &define,
                            llvm::ArrayRef<llvm::Value *> args) {
  llvm::Function *helper = m.getFunction(name);
  if (!helper) { // once per module: the body, the variants and the mapping naming them
    helper = llvm::Function::Create(type, llvm::GlobalValue::InternalLinkage, name, m);
    no_side_effects(*helper);
    // Opaque to the inliner until the vectorizer has chosen the variant (finish_helpers).
    helper->addFnAttr(llvm::Attribute::NoInline);
    std::string mapping;
    llvm::SmallVector<llvm::GlobalValue *, 3> used;
    for (const VectorVariant &v : define(*helper)) {
      no_side_effects(*v.fn);
      v.fn->addFnAttr(kVariantsKey); // so that finish_helpers knows it
      used.push_back(v.fn);
      mapping += (mapping.empty() ? "" : ",") + std::string("_ZGV_LLVM_N") +
                 std::to_string(v.lanes) + std::string(args.size(), 'v') + "_" + name + "(" +
                 v.fn->getName().str() + ")";
    }
    // The vectorizer needs the variants declared until it runs (compiler.used keeps them;
    // finish_helpers drops them).
    llvm::appendToCompilerUsed(m, used);
    if (!mapping.empty())
      helper->addFnAttr(kMappingKey, mapping);
  }
  llvm::CallInst *call = b.CreateCall(helper, args);
  // The vectorizer reads the variants from the call site.
  if (helper->hasFnAttribute(kMappingKey))
    call->addFnAttr(helper->getFnAttribute(kMappingKey));
  return call;
}

void finish_helpers(llvm::Module &m) {
  auto is_helper = [](const llvm::Function &f) {
    return f.getName().starts_with(kHelperPrefix) && f.hasFnAttribute(llvm::Attribute::NoInline) &&
           f.hasInternalLinkage();
  };
  llvm::removeFromUsedLists(m, [](llvm::Constant *c) {
    auto *f = llvm::dyn_cast<llvm::Function>(c);
    return f && f->hasFnAttribute(kVariantsKey);
  });
  llvm::SmallVector<llvm::Function *, 8> helpers;
  for (llvm::Function &f : m)
    if (is_helper(f))
      helpers.push_back(&f);
  for (llvm::Function *f : helpers) {
    llvm::SmallVector<llvm::CallBase *, 16> calls;
    for (llvm::User *u : f->users())
      if (auto *c = llvm::dyn_cast<llvm::CallBase>(u))
        calls.push_back(c);
    for (llvm::CallBase *c : calls) {
      llvm::InlineFunctionInfo info;
      if (!llvm::InlineFunction(*c, info).isSuccess())
        throw std::logic_error("llvm-cpu: cannot inline " + f->getName().str()); // our bug
    }
  }
  for (llvm::Function &f : llvm::make_early_inc_range(m)) {
    if (!is_helper(f) && !f.hasFnAttribute(kVariantsKey))
      continue;
    f.removeDeadConstantUsers(); // the old llvm.compiler.used array
    if (f.use_empty())
      f.eraseFromParent();
  }
}

llvm::Value *sleef_call(llvm::IRBuilder<> &b, llvm::Module &m, const char *fn,
                        llvm::ArrayRef<llvm::Value *> args, unsigned vector_bits,
                        const char *accuracy) {
  llvm::Type *t = args[0]->getType();
  const bool f32 = t->isFloatTy();
  const std::string libm = std::string(fn) + (f32 ? "f" : "");
  llvm::SmallVector<llvm::Type *, 2> params(args.size(), t);
  auto *type = llvm::FunctionType::get(t, params, false);
  auto define = [&](llvm::Function &helper) { // scalar: libm; vector: SLEEF
    llvm::IRBuilder<> hb(llvm::BasicBlock::Create(m.getContext(), "entry", &helper));
    llvm::SmallVector<llvm::Value *, 2> fargs;
    for (llvm::Argument &a : helper.args())
      fargs.push_back(&a);
    llvm::CallInst *c = hb.CreateCall(m.getOrInsertFunction(libm, type), fargs);
    c->setDoesNotAccessMemory(); // errno is of no interest
    c->setDoesNotThrow();
    hb.CreateRet(c);
    std::vector<VectorVariant> variants;
    for (unsigned bits : {512u, 256u, 128u}) {
      if (bits > vector_bits)
        continue;
      const unsigned lanes = bits / (f32 ? 32 : 64);
      auto *vt = llvm::FixedVectorType::get(t, lanes);
      llvm::SmallVector<llvm::Type *, 2> vparams(args.size(), vt);
      const std::string name =
          "Sleef_" + std::string(fn) + (f32 ? "f" : "d") + std::to_string(lanes) + "_" + accuracy;
      auto callee = m.getOrInsertFunction(name, llvm::FunctionType::get(vt, vparams, false));
      variants.push_back({lanes, llvm::cast<llvm::Function>(callee.getCallee())});
    }
    return variants;
  };
  return call_helper(b, m, "tl.sleef." + libm, type, define, args);
}

} // namespace tl::llvm_cpu
