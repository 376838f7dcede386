//===- CompileCommand.cpp - attnc compile (ahead of time) -----------------===//
//
// This file implements `attnc compile`: the model is lowered and generated
// as for the JIT, then compiled for the requested target into
// lib<model>.a with Halide's header, plus <model>.h: a documented C entry
// point with named arguments and a weights struct filled from a
// safetensors file through the runtime (see AotWrapper.cpp).
//
//===----------------------------------------------------------------------===//
#include "tools/attnc/Commands.h"
#include "tools/attnc/Driver.h"

#include "codegen/Aot.h"

#include "mlir/IR/MLIRContext.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/raw_ostream.h"

namespace attnc::driver {

int compileCommand(const CompileOptions &options) {
  mlir::MLIRContext context;
  prepareContext(context);
  dsl::FrontendResult front = loadFile(options.file, context, llvm::errs());
  if (!front.ok)
    return 1;
  mlir::SourceMgrDiagnosticHandler handler(*front.sourceMgr, &context,
                                           llvm::errs());
  mlir::func::FuncOp model = findModel(*front.module, options.model);
  if (!model || mlir::failed(lowerToPrimitives(*front.module)))
    return 1;
  codegen::CodegenOptions codegenOptions;
  if (options.schedule == "naive")
    codegenOptions.schedule = codegen::ScheduleKind::Naive;
  else if (options.schedule != "default") {
    llvm::errs() << "error: unknown schedule '" << options.schedule
                 << "'; expected default or naive\n";
    return 1;
  }
  Halide::Target target;
  std::string error;
  if (!codegen::parseTarget(options.target, target, error)) {
    llvm::errs() << "error: " << error << "\n";
    return 1;
  }
  codegenOptions.gpu = target.has_gpu_feature();
  if (codegenOptions.schedule == codegen::ScheduleKind::Default &&
      mlir::failed(scheduleFor(*front.module, target)))
    return 1;
  if (std::error_code ec = llvm::sys::fs::create_directories(options.outputDir)) {
    llvm::errs() << "error: cannot create '" << options.outputDir
                 << "': " << ec.message() << "\n";
    return 1;
  }
  std::unique_ptr<codegen::ModelPipeline> pipeline =
      codegen::ModelPipeline::build(model, codegenOptions);
  if (!pipeline)
    return 1;
  std::vector<std::string> written;
  if (!options.name.empty() &&
      options.name != codegen::cIdentifier(options.name)) {
    llvm::errs() << "error: --name '" << options.name
                 << "' is not a C identifier\n";
    return 1;
  }
  if (!codegen::compileAot(*pipeline, target, options.outputDir, options.name,
                           written, error)) {
    llvm::errs() << "error: " << error << "\n";
    return 1;
  }
  for (const std::string &file : written)
    llvm::outs() << "wrote " << file << "\n";
  return 0;
}

} // namespace attnc::driver
