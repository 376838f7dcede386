//===- Program.h - a model that runs its kernels in order ---------*- C++ -*-===//
//
// This file declares the program form of a model: after attn-outline-layers,
// a model whose layers repeat is a sequence of calls (layer functions and
// the glue between them). Each called function is compiled once, as a
// Halide pipeline of its own (a ProgramKernel); the program runs the calls
// in order, each on its layer's weights, passing activations in buffers of
// their own. Compile time is then one layer's whatever the depth. The JIT
// runs the steps (ModelPipeline::run), the AOT wrapper's <m>_run does the
// same in C (codegen/Aot.cpp).
//
//===----------------------------------------------------------------------===//
#ifndef ATTNC_CODEGEN_PROGRAM_H
#define ATTNC_CODEGEN_PROGRAM_H

#include "codegen/LoweringImpl.h"
#include "codegen/NativeKernel.h"

#include <memory>
#include <string>
#include <vector>

namespace attnc::codegen {

/// A function the model calls, compiled once.
struct ProgramKernel {
  explicit ProgramKernel(const CodegenOptions &options) : lowering(options) {}
  std::string function; ///< C name of the compiled function.
  Lowering lowering;    ///< Inputs: the function's arguments; weights: its own.
  Halide::Pipeline pipeline;
  std::vector<std::string> calls; ///< The label of each step that runs it.
  std::unique_ptr<NativeKernel> native; ///< When loaded from a shared object.
};

/// Where a tensor of the program lives: a model input, weight or output
/// (by index into Program's lists), or a temporary buffer.
struct Slot {
  enum Kind { Input, Weight, Output, Temp } kind = Temp;
  size_t index = 0;
  bool operator==(const Slot &other) const {
    return kind == other.kind && index == other.index;
  }
  /// This slot's element of the one of the four lists that holds its kind.
  template <typename T>
  const T &in(const std::vector<T> &inputs, const std::vector<T> &weights,
              const std::vector<T> &outputs,
              const std::vector<T> &temps) const {
    switch (kind) {
    case Input:
      return inputs[index];
    case Weight:
      return weights[index];
    case Output:
      return outputs[index];
    case Temp:
      break;
    }
    return temps[index];
  }
};

/// One axis of a step's result: the constant `size`, or (size < 0) axis
/// `axis` (MLIR order) of the step's argument `arg`.
struct AxisSize {
  int64_t size = -1;
  size_t arg = 0, axis = 0;
};

/// One call: the kernel, its tensors, and how to size its results.
struct Step {
  ProgramKernel *kernel = nullptr;
  std::string label;          ///< The layer (`lm.3`) or the glue function
                              ///< (`flash_lm.glue0`), for messages.
  std::vector<Slot> args;     ///< One per kernel input.
  std::vector<Slot> weights;  ///< One per kernel weight (the glue's own).
  std::vector<Slot> results;  ///< One per kernel output.
  std::vector<std::vector<AxisSize>> resultShapes;
  /// The argument whose memory the step's one result takes over when their
  /// shapes agree at run time, or -1: a temporary that no later step reads,
  /// of a kernel whose output is written after it reads its inputs
  /// (Lowering::outputAfterInputs). A layer stack then holds one activation
  /// between layers, not two.
  int inPlaceArg = -1;
};

struct Program {
  std::vector<std::unique_ptr<ProgramKernel>> kernels;
  std::vector<Step> steps;
  std::vector<TensorInfo> inputs, weights, outputs;
  size_t temps = 0;
  std::vector<size_t> lastUse; ///< Per temp: the last step that reads it.
  /// Outputs that no step writes (a returned input, a value returned
  /// twice): a copy of the slot.
  std::vector<std::pair<size_t, Slot>> outputCopies;

  /// The program of `model` (a model with calls, see callsFunctions), or
  /// null after an error at the offending op.
  static std::unique_ptr<Program> build(mlir::func::FuncOp model,
                                        const CodegenOptions &options);

  /// Sets each step's inPlaceArg (after every step's last reader is known).
  void chooseInPlaceResults();

  /// Schedules each kernel with options.autoscheduler (Autoschedule.h) for
  /// the shapes of its first call at the estimated dims. "" or why not.
  std::string autoschedule(const CodegenOptions &options);

  /// The shape (MLIR order) of a step's result, given its arguments'.
  static std::vector<int64_t>
  resultShape(const std::vector<AxisSize> &sizes,
              const std::vector<std::vector<int64_t>> &argShapes);
};

/// Whether `model` calls functions (attn-outline-layers made it a program).
bool callsFunctions(mlir::func::FuncOp model);

} // namespace attnc::codegen

#endif // ATTNC_CODEGEN_PROGRAM_H
