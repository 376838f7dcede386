//===- PassesFuzzer.cpp - libFuzzer target for the passes -----------------===//
//
// This file is a libFuzzer target that takes every .attn input the front
// end accepts through the passes each compilation runs: attn-lower-to-
// primitives, then attn-schedule for the AVX-512, AVX2 and CUDA families
// under the default policy and for the generic family under the naive one
// (what `attnc --emit=attn-scheduled` prints; no Halide code generation).
// attn-lower-to-primitives may reject a model the checker let through
// (`linear_attention` with heads > 1) with an error at a line of the
// source; the schedule pipelines may not (the imported IR has no
// schedules, so a failure there rejects attn-tile's own choice: a bug).
// The input aborts, so that libFuzzer reports it as a crash, when a
// pipeline fails otherwise, reports an "internal error", or leaves IR that
// does not verify. Inputs the front end rejects are FrontendFuzzer's
// business and return at once.
//
//===----------------------------------------------------------------------===//
#include "dsl/Import/Frontend.h"
#include "passes/Passes.h"
#include "target/TargetModel.h"
#include "tests/fuzz/ImportFuzzSupport.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

using namespace attnc::dsl;

namespace {

[[noreturn]] void reportAndAbort(const std::string &what,
                                 const std::string &source,
                                 const std::string &diagnostics) {
  attnc::fuzz::abortWithInput("PassesFuzzer", what, source, diagnostics);
}

/// The diagnostics MLIR reports while one pipeline runs.
struct Collected {
  std::string text;
  bool located = false; ///< An error at a line of the source (line > 0).
  bool internal = false;
};

/// Runs `build`'s pipeline on `module` with the verifier between passes
/// off (IR a pass breaks is caught by the verification after the pipeline,
/// unless a later pass crashes on it first), and aborts on a failure
/// nobody would understand; a failure at all when `mayReject` is false.
/// Returns whether the pipeline succeeded.
bool runPipeline(const char *name, mlir::ModuleOp module,
                 const std::function<void(mlir::OpPassManager &)> &build,
                 bool mayReject, const std::string &source) {
  mlir::MLIRContext *context = module.getContext();
  Collected collected;
  mlir::ScopedDiagnosticHandler handler(context, [&](mlir::Diagnostic &diag) {
    std::string message = diag.str();
    collected.text += message + "\n";
    if (llvm::StringRef(message).starts_with("internal error"))
      collected.internal = true;
    auto at = mlir::dyn_cast<mlir::FileLineColLoc>(diag.getLocation());
    if (diag.getSeverity() == mlir::DiagnosticSeverity::Error && at &&
        at.getLine() > 0)
      collected.located = true;
    return mlir::success();
  });
  mlir::PassManager pm(context);
  pm.enableVerifier(false);
  build(pm);
  bool ok = mlir::succeeded(pm.run(module));
  if (collected.internal)
    reportAndAbort(std::string(name) + ": internal error", source,
                   collected.text);
  if (!ok) {
    if (!mayReject)
      reportAndAbort(std::string(name) + ": failed", source, collected.text);
    if (!collected.located)
      reportAndAbort(std::string(name) + ": failed without a located error",
                     source, collected.text);
    return false;
  }
  if (mlir::failed(mlir::verify(module)))
    reportAndAbort(std::string(name) + ": the IR does not verify", source,
                   collected.text);
  return true;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  attnc::fuzz::ImportedInput input(data, size);
  const std::string &source = input.source;
  if (!input.result.ok || !input.result.module)
    return 0;
  mlir::ModuleOp imported = *input.result.module;
  if (!runPipeline("attn-lower-to-primitives", imported,
                   mlir::attn::buildLowerToPrimitivesPipeline,
                   /*mayReject=*/true, source))
    return 0;
  struct Variant {
    const char *name;
    mlir::attn::TargetKind kind;
    mlir::attn::SchedulePolicy policy;
  };
  const Variant variants[] = {
      {"attn-schedule{target=x86-64-avx512}", mlir::attn::TargetKind::avx512,
       mlir::attn::SchedulePolicy::Default},
      {"attn-schedule{target=x86-64-avx2}", mlir::attn::TargetKind::avx2,
       mlir::attn::SchedulePolicy::Default},
      {"attn-schedule{target=cuda}", mlir::attn::TargetKind::cuda,
       mlir::attn::SchedulePolicy::Default},
      {"attn-schedule{target=generic policy=naive}",
       mlir::attn::TargetKind::generic, mlir::attn::SchedulePolicy::Naive},
  };
  for (const Variant &variant : variants) {
    mlir::OwningOpRef<mlir::ModuleOp> copy = imported.clone();
    mlir::attn::TargetModel target = mlir::attn::TargetModel::get(variant.kind);
    runPipeline(
        variant.name, *copy,
        [&](mlir::OpPassManager &pm) {
          mlir::attn::buildSchedulePipeline(pm, target, variant.policy);
        },
        /*mayReject=*/false, source);
  }
  return 0;
}
