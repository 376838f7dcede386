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
#include "driver/Session.h"

#include "codegen/Aot.h"
#include "codegen/Autoschedule.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/raw_ostream.h"

namespace attnc::driver {

int compileCommand(const CompileOptions &options) {
  std::optional<SchedulePolicy> policy = parseSchedulePolicy(options.schedule);
  if (!policy) {
    llvm::errs() << "error: " << unknownSchedulePolicy(options.schedule);
    if (!codegen::autoschedulerName(options.schedule).empty())
      llvm::errs() << " (Halide's autoschedulers schedule for the sizes of a "
                      "run: use them with attnc run or bench)";
    llvm::errs() << "\n";
    return 1;
  }
  if (!options.name.empty() &&
      options.name != codegen::cIdentifier(options.name)) {
    llvm::errs() << "error: --name '" << options.name
                 << "' is not a C identifier\n";
    return 1;
  }
  SessionOptions sessionOptions{options.model, options.target, *policy};
  sessionOptions.tuningDb = options.tuningDb;
  Session session(sessionOptions, llvm::errs());
  if (!session.loadFile(options.file) || !session.runTo(Stage::Pipeline))
    return 1;
  std::vector<std::string> written;
  if (!session.compileAot(options.outputDir, options.name, written,
                          options.decode))
    return 1;
  for (const std::string &file : written)
    llvm::outs() << "wrote " << file << "\n";
  return 0;
}

} // namespace attnc::driver
