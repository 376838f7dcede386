//===- E2EUtil.h - compile, run and compare models in tests -------*- C++ -*-===//
//
// This file declares the helpers of the end-to-end tests: compile .attn
// text (or attn IR text) exactly as `attnc run` does, run it through the
// JIT with deterministic random weights and inputs, and evaluate the same
// layer-level IR with the independent fp64 reference (tests/reference),
// which shares no code with attn-expand-layers or codegen.
//
//===----------------------------------------------------------------------===//
#ifndef ATTNC_TESTS_E2E_E2EUTIL_H
#define ATTNC_TESTS_E2E_E2EUTIL_H

#include "codegen/Jit.h"
#include "tests/reference/Interpreter.h"
#include "driver/Session.h"

#include "mlir/IR/MLIRContext.h"

#include <functional>
#include <map>
#include <memory>
#include <string>

namespace attnc::e2e {

/// A model compiled for the host, with its layer-level IR kept for the
/// reference.
struct CompiledModel {
  std::string diagnostics;                  ///< Everything the session reported.
  std::unique_ptr<llvm::raw_string_ostream> diagOS;
  std::unique_ptr<driver::Session> session;
  bool loaded = false;                      ///< The source passed the front end.
  mlir::func::FuncOp layerFunc;             ///< The model before expansion.
  std::unique_ptr<codegen::JitModel> jit;
};

/// Compiles .attn source text; on failure `jit` is null and `diagnostics`
/// says why. The Default schedule is attn-tile's for `scheduleTarget`; a
/// GPU target's schedules (blocks, threads, shared memory) then run on the
/// host through CodegenOptions::gpuOnHost (blocks in parallel, threads
/// serially; Halide 14 cannot run GPU loops on a CPU): this checks what
/// they compute without a GPU.
std::unique_ptr<CompiledModel>
compileAttn(const std::string &source, driver::SchedulePolicy schedule,
            const Halide::Target &scheduleTarget = Halide::get_host_target());
/// The same, with `reschedule` called on the scheduled IR before the
/// pipeline is built (to try other schedules than attn-tile's).
std::unique_ptr<CompiledModel>
compileAttn(const std::string &source, const Halide::Target &scheduleTarget,
            const std::function<void(mlir::ModuleOp)> &reschedule);
/// The same with the whole session's options (an autoscheduler, a cache).
std::unique_ptr<CompiledModel>
compileAttn(const std::string &source, const driver::SessionOptions &options);
/// Reads and compiles an example from examples/.
std::unique_ptr<CompiledModel>
compileExample(const std::string &file, driver::SchedulePolicy schedule,
               const Halide::Target &scheduleTarget = Halide::get_host_target());
/// Compiles attn IR text (one model function, primitive or layer level).
std::unique_ptr<CompiledModel>
compileIR(const std::string &text, driver::SchedulePolicy schedule,
          const Halide::Target &scheduleTarget = Halide::get_host_target());

/// The CUDA target whose schedules the GPU tests check on the host.
Halide::Target cudaScheduleTarget();

/// Random inputs for the model's inputs with runtime dims from `dims`.
codegen::TensorMap randomInputs(const codegen::JitModel &model,
                                const std::map<std::string, int64_t> &dims,
                                uint64_t seed);

/// Runs the JIT model; fails the test (ADD_FAILURE) on a runtime error.
codegen::TensorMap runJit(CompiledModel &model, const codegen::TensorMap &inputs,
                          const codegen::TensorMap &weights);

/// Evaluates the layer-level IR with the fp64 reference.
std::map<std::string, ref::Tensor> runReference(CompiledModel &model,
                                                const codegen::TensorMap &inputs,
                                                const codegen::TensorMap &weights);

/// max |y - r| / max |r| over all outputs (normwise relative error).
double relativeError(const codegen::TensorMap &got,
                     const std::map<std::string, ref::Tensor> &want);

} // namespace attnc::e2e

#endif // ATTNC_TESTS_E2E_E2EUTIL_H
