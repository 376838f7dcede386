//===- Program.cpp - a model that runs its kernels in order ---------------===//
//
// This file builds the program of a model that calls functions: one
// ProgramKernel per called function, one Step per call, slots for the
// tensors between them, and the rule that sizes every step's results from
// its arguments.
//
//===----------------------------------------------------------------------===//
#include "codegen/Program.h"

#include "codegen/Aot.h"
#include "codegen/Autoschedule.h"

#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/DenseMap.h"

#include <algorithm>
#include <map>
#include <set>
#include <sstream>

namespace attnc::codegen {

using namespace Halide;

bool callsFunctions(mlir::func::FuncOp model) {
  return !model.getBody().front().getOps<mlir::func::CallOp>().empty();
}

std::vector<int64_t>
Program::resultShape(const std::vector<AxisSize> &sizes,
                     const std::vector<std::vector<int64_t>> &argShapes) {
  std::vector<int64_t> shape;
  for (const AxisSize &size : sizes)
    shape.push_back(size.size >= 0 ? size.size
                                   : argShapes.at(size.arg).at(size.axis));
  return shape;
}

/// How axis `extent` of a kernel's result is sized: a constant, or an
/// extent of one of its inputs; failure for anything else.
static mlir::FailureOr<AxisSize> classify(const Expr &extent,
                                          const Lowering &lowering) {
  Expr simple = Internal::simplify(extent);
  if (const int64_t *value = Internal::as_const_int(simple))
    return AxisSize{*value, 0, 0};
  const auto *var = simple.as<Internal::Variable>();
  if (!var)
    return mlir::failure();
  for (size_t arg = 0; arg < lowering.inputParams.size(); ++arg) {
    const ImageParam &param = lowering.inputParams[arg];
    for (int d = 0; d < param.dimensions(); ++d)
      if (var->name == param.name() + ".extent." + std::to_string(d))
        return AxisSize{-1, arg, size_t(param.dimensions() - 1 - d)};
  }
  return mlir::failure();
}

std::unique_ptr<Program> Program::build(mlir::func::FuncOp model,
                                        const CodegenOptions &options) {
  auto program = std::make_unique<Program>();
  llvm::DenseMap<mlir::Value, Slot> slotOf;
  for (auto [index, arg] : llvm::enumerate(model.getArguments())) {
    mlir::FailureOr<TensorInfo> input = describeArgument(model, index);
    if (mlir::failed(input))
      return nullptr;
    program->inputs.push_back(*input);
    slotOf[arg] = {Slot::Input, index};
  }
  std::map<std::string, size_t> weightIndex;
  auto weightSlot = [&](const TensorInfo &info) {
    auto [it, inserted] =
        weightIndex.emplace(info.name, program->weights.size());
    if (inserted)
      program->weights.push_back(info);
    return Slot{Slot::Weight, it->second};
  };
  std::map<std::string, ProgramKernel *> kernelOf;

  for (mlir::Operation &op : model.getBody().front()) {
    if (auto weight = mlir::dyn_cast<mlir::attn::WeightOp>(op)) {
      auto type = mlir::cast<mlir::RankedTensorType>(weight.getType());
      if (!type.getElementType().isF32()) {
        weight.emitError() << "code generation supports f32 weights only, "
                              "but '"
                           << weight.getName() << "' is " << type;
        return nullptr;
      }
      slotOf[weight] = weightSlot(describe(weight.getName().str(), type, {}));
      continue;
    }
    if (auto ret = mlir::dyn_cast<mlir::func::ReturnOp>(op)) {
      for (auto [index, value] : llvm::enumerate(ret.getOperands())) {
        program->outputs.push_back(describeResult(model, index));
        Slot slot = slotOf.at(value);
        if (slot.kind != Slot::Temp) {
          program->outputCopies.push_back({index, slot});
          continue;
        }
        // The step that makes it writes the output buffer itself.
        Slot output{Slot::Output, index};
        for (Step &step : program->steps)
          for (std::vector<Slot> *slots : {&step.args, &step.results})
            for (Slot &s : *slots)
              if (s == slot)
                s = output;
        for (auto &entry : slotOf)
          if (entry.second == slot)
            entry.second = output;
      }
      continue;
    }
    auto call = mlir::dyn_cast<mlir::func::CallOp>(op);
    if (!call) {
      op.emitError() << "code generation expects only calls, weights and "
                        "the return in a model that calls functions "
                        "(attn-outline-layers moves everything else into "
                        "functions)";
      return nullptr;
    }
    auto callee =
        mlir::SymbolTable::lookupNearestSymbolFrom<mlir::func::FuncOp>(
            call, call.getCalleeAttr());
    if (!callee || callee.isExternal()) {
      call.emitError() << "code generation needs the body of '"
                       << call.getCallee() << "'";
      return nullptr;
    }
    ProgramKernel *&kernel = kernelOf[callee.getSymName().str()];
    if (!kernel) {
      auto owned = std::make_unique<ProgramKernel>(options);
      owned->function = cIdentifier(callee.getSymName().str());
      // Streamed, the model was checked with its callees (checkStreamable).
      owned->lowering.streamChecked = true;
      if (mlir::failed(owned->lowering.lowerFunction(callee)))
        return nullptr;
      std::vector<Func> outputs = owned->lowering.outputFuncs;
      for (const Lowering::StreamCarry &carry :
           owned->lowering.streamCarries)
        outputs.push_back(carry.next);
      owned->pipeline = Pipeline(outputs);
      kernel = owned.get();
      program->kernels.push_back(std::move(owned));
    }
    Step step;
    step.kernel = kernel;
    auto layer = call->getAttrOfType<mlir::StringAttr>(
        mlir::attn::AttnDialect::getLayerAttrName());
    step.label = layer ? layer.str() : callee.getSymName().str();
    kernel->calls.push_back(step.label);
    for (mlir::Value operand : call.getOperands()) {
      Slot slot = slotOf.at(operand);
      if (slot.kind == Slot::Temp)
        program->lastUse[slot.index] = program->steps.size();
      step.args.push_back(slot);
    }
    for (const TensorInfo &weight : kernel->lowering.weights)
      step.weights.push_back(weightSlot(weight));
    const Lowering &lowering = kernel->lowering;
    for (auto [index, result] : llvm::enumerate(call.getResults())) {
      std::vector<AxisSize> sizes;
      for (const Expr &extent : lowering.outputExtents.at(index)) {
        mlir::FailureOr<AxisSize> size = classify(extent, lowering);
        if (mlir::failed(size)) {
          std::ostringstream text;
          text << Internal::simplify(extent);
          call.emitError() << "code generation cannot size result " << index
                           << " of '" << callee.getSymName()
                           << "' from its arguments (an extent is "
                           << text.str() << ")";
          return nullptr;
        }
        sizes.push_back(*size);
      }
      step.resultShapes.push_back(sizes);
      Slot slot{Slot::Temp, program->temps++};
      program->lastUse.push_back(program->steps.size());
      step.results.push_back(slot);
      slotOf[result] = slot;
    }
    program->steps.push_back(std::move(step));
  }
  program->chooseInPlaceResults();
  if (!options.autoscheduler.empty())
    if (std::string error = program->autoschedule(options); !error.empty()) {
      model.emitError() << error;
      return nullptr;
    }
  return program;
}

std::string Program::autoschedule(const CodegenOptions &options) {
  // The shape of every slot at the estimated dims, step by step, as a run
  // sizes them; each kernel is scheduled for the shapes of its first call.
  std::vector<std::vector<int64_t>> inputShapes(inputs.size()),
      weightShapes, outputShapes(outputs.size()), tempShapes(temps);
  for (size_t i = 0; i < inputs.size(); ++i)
    if (std::string error =
            autoscheduleShape(inputs[i], "input", options.estimates,
                              inputShapes[i]);
        !error.empty())
      return error;
  for (const TensorInfo &weight : weights)
    weightShapes.push_back(weight.shape);
  std::set<const ProgramKernel *> scheduled;
  for (const Step &step : steps) {
    std::vector<std::vector<int64_t>> args, results;
    for (const Slot &slot : step.args)
      args.push_back(
          slot.in(inputShapes, weightShapes, outputShapes, tempShapes));
    for (size_t i = 0; i < step.results.size(); ++i) {
      results.push_back(resultShape(step.resultShapes[i], args));
      const Slot &slot = step.results[i];
      (slot.kind == Slot::Output ? outputShapes : tempShapes)[slot.index] =
          results.back();
    }
    ProgramKernel &kernel = *step.kernel;
    if (!scheduled.insert(&kernel).second)
      continue;
    if (std::string error = codegen::autoschedule(
            kernel.lowering, kernel.pipeline, options, args, results);
        !error.empty())
      return step.label + ": " + error;
  }
  return "";
}

void Program::chooseInPlaceResults() {
  for (size_t k = 0; k < steps.size(); ++k) {
    Step &step = steps[k];
    if (step.results.size() != 1 || step.results[0].kind != Slot::Temp ||
        !step.kernel->lowering.outputAfterInputs.at(0))
      continue;
    for (size_t i = 0; i < step.args.size(); ++i) {
      const Slot &arg = step.args[i];
      if (arg.kind != Slot::Temp || lastUse[arg.index] != k ||
          std::count(step.args.begin(), step.args.end(), arg) != 1)
        continue;
      step.inPlaceArg = int(i);
      break;
    }
  }
}

} // namespace attnc::codegen
