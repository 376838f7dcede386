//===- Aot.h - ahead-of-time compilation of a model pipeline -----*- C++ -*-===//
//
// This file declares compileAot: a ModelPipeline compiled for a target into
// lib<model>.a (kernel plus Halide runtime), <model>_kernel.h (Halide's
// header) and <model>.h, the documented C entry point: a weights struct
// with one named field per weight, a binder that fills it from an
// attn_weights set (checking names and shapes), and <model>_run() taking
// named attn_tensor arguments whose shapes it checks.
//
//===----------------------------------------------------------------------===//
#ifndef ATTNC_CODEGEN_AOT_H
#define ATTNC_CODEGEN_AOT_H

#include "codegen/Codegen.h"

#include "mlir/IR/Diagnostics.h"
#include "llvm/Support/raw_ostream.h"

#include <string>
#include <vector>

namespace attnc::codegen {

/// One compiled form of a model in a library: the model with the schedules
/// tuned for `dims` (a tuning database's runtime dim values), or, alone and
/// without dims, the model.
struct AotVariant {
  ModelPipeline *pipeline = nullptr;
  std::map<std::string, int64_t> dims;
};

/// Compiles `variants` (one or more forms of the same model, differing in
/// their schedules only) for `target` into `dir`; appends the files written
/// to `written`. With several, the library holds each (its kernels' names
/// end in `_v<i>`) and <m>_run calls the one whose dims are the nearest to
/// the run's (in log size, summed over the dims, as attn-apply-tuning
/// chooses), so one library serves every n. A failure (Halide's, variants
/// that differ in more than their schedules, or a file that cannot be
/// written) is a diagnostic from `emitError` (at the model). `name` (a C
/// identifier) names the files and functions; "" means the model's name.
/// With `decoding` (the model compiled to stream, with
/// CodegenOptions::decode), the library also holds its streamed kernels
/// (<m>_decode_kernel, or each kernel of a program with the suffix
/// _decode) and <model>.h the state API of incremental decoding:
/// <m>_state_new/free/reset/length/bytes, <m>_prefill and <m>_step, over
/// the runtime's attn_decoder.
mlir::LogicalResult
compileAot(const std::vector<AotVariant> &variants, ModelPipeline *decoding,
           const Halide::Target &target, const std::string &dir,
           const std::string &name, std::vector<std::string> &written,
           llvm::function_ref<mlir::InFlightDiagnostic()> emitError);

/// Prints Halide's lowered statement of `pipeline` for `target` (the loop
/// nests the schedule produced); a failure is a diagnostic from
/// `emitError`.
mlir::LogicalResult
printLoweredStmt(ModelPipeline &pipeline, const Halide::Target &target,
                 llvm::raw_ostream &os,
                 llvm::function_ref<mlir::InFlightDiagnostic()> emitError);

/// The text of <name>.h for `variants` (exposed for tests).
std::string generateWrapperHeader(const std::vector<AotVariant> &variants,
                                  const ModelPipeline *decoding,
                                  const std::string &name);

/// A C identifier for a tensor name (`flash_0.norm.weight` ->
/// `flash_0_norm_weight`).
std::string cIdentifier(const std::string &name);

} // namespace attnc::codegen

#endif // ATTNC_CODEGEN_AOT_H
