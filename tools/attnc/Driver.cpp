//===- Driver.cpp - the stages behind attnc's subcommands -----------------===//
//
// This file implements loading, lowering and model selection for attnc.
//
//===----------------------------------------------------------------------===//
#include "tools/attnc/Driver.h"

#include "passes/Passes.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/Support/MemoryBuffer.h"

namespace attnc::driver {

void prepareContext(mlir::MLIRContext &context) {
  mlir::DialectRegistry registry;
  dsl::registerImportDialects(registry);
  context.appendDialectRegistry(registry);
  context.loadAllAvailableDialects();
}

dsl::FrontendResult loadFile(const std::string &path, mlir::MLIRContext &context,
                             llvm::raw_ostream &diagOS) {
  auto buffer = llvm::MemoryBuffer::getFileOrSTDIN(path, /*IsText=*/true);
  if (std::error_code ec = buffer.getError()) {
    diagOS << "error: cannot open '" << path << "': " << ec.message() << "\n";
    return dsl::FrontendResult();
  }
  return dsl::runFrontend(std::move(*buffer), dsl::FrontendStage::Import,
                          diagOS, &context);
}

dsl::FrontendResult loadSource(llvm::StringRef source, llvm::StringRef name,
                               mlir::MLIRContext &context,
                               llvm::raw_ostream &diagOS) {
  return dsl::runFrontend(source, name, dsl::FrontendStage::Import, diagOS,
                          &context);
}

mlir::LogicalResult lowerToPrimitives(mlir::ModuleOp module) {
  mlir::PassManager pm(module->getContext());
  mlir::attn::buildLowerToPrimitivesPipeline(pm);
  return pm.run(module);
}

std::string tileTargetFor(const Halide::Target &target) {
  if (target.has_gpu_feature())
    return "cuda";
  if (target.arch == Halide::Target::X86 &&
      target.has_feature(Halide::Target::AVX512))
    return "x86-64-avx512";
  if (target.arch == Halide::Target::X86 &&
      target.has_feature(Halide::Target::AVX2))
    return "x86-64-avx2";
  return "generic";
}

mlir::LogicalResult scheduleFor(mlir::ModuleOp module,
                                const Halide::Target &target) {
  mlir::PassManager pm(module->getContext());
  mlir::attn::TilePassOptions options;
  options.target = tileTargetFor(target);
  pm.addNestedPass<mlir::func::FuncOp>(mlir::attn::createFusePass());
  pm.addNestedPass<mlir::func::FuncOp>(mlir::attn::createTilePass(options));
  return pm.run(module);
}

mlir::func::FuncOp findModel(mlir::ModuleOp module, llvm::StringRef name) {
  std::vector<mlir::func::FuncOp> models;
  for (auto func : module.getOps<mlir::func::FuncOp>())
    if (func->hasAttr("attn.model"))
      models.push_back(func);
  std::string names;
  for (mlir::func::FuncOp func : models) {
    names += (names.empty() ? "" : ", ") + func.getSymName().str();
    if (!name.empty() && func.getSymName() == name)
      return func;
  }
  if (name.empty() && models.size() == 1)
    return models.front();
  if (name.empty())
    mlir::emitError(module.getLoc())
        << "the file defines " << models.size() << " models (" << names
        << "); choose one with --model";
  else
    mlir::emitError(module.getLoc())
        << "no model named '" << name << "'; the file defines " << names;
  return nullptr;
}

} // namespace attnc::driver
