//===- Lowering.cpp - attn dialect to Halide: the function walk -----------===//
//
// This file implements the walk over one model function: inputs become
// ImageParams with runtime extents, `attn.weight`s become ImageParams named
// after the weight, every op is handed to its family's lowering (one file
// per family), and the returned values become the pipeline's outputs. It
// also holds ModelPipeline and the target parser.
//
//===----------------------------------------------------------------------===//
#include "codegen/LoweringImpl.h"

#include "mlir/Dialect/Arith/IR/Arith.h"

namespace attnc::codegen {

using namespace Halide;

Expr HTensor::at(const Index &index) const {
  std::vector<Expr> reversed(index.rbegin(), index.rend());
  return func(reversed);
}

std::vector<Var> makeVars(size_t rank, const std::string &prefix) {
  std::vector<Var> vars;
  for (size_t i = 0; i < rank; ++i)
    vars.emplace_back(prefix + std::to_string(i));
  return vars;
}

Index toIndex(const std::vector<Var> &vars) {
  return Index(vars.begin(), vars.end());
}

void define(Func &func, const std::vector<Var> &vars, const Expr &value) {
  std::vector<Var> reversed(vars.rbegin(), vars.rend());
  func(reversed) = value;
}

int64_t TensorInfo::numElements() const {
  int64_t count = 1;
  for (int64_t size : shape) {
    if (size < 0)
      return -1;
    count *= size;
  }
  return count;
}

std::string TensorInfo::shapeString() const {
  std::string out = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    out += i ? ", " : "";
    out += shape[i] < 0 ? dims[i] : std::to_string(shape[i]);
  }
  return out + "]";
}

/// A C identifier for a Halide argument, unique by its index.
static std::string argumentName(const std::string &prefix, size_t index,
                                const std::string &name) {
  std::string out = prefix + std::to_string(index) + "_";
  for (char c : name)
    out += (std::isalnum(static_cast<unsigned char>(c)) ? c : '_');
  return out;
}

static TensorInfo describe(const std::string &name, mlir::RankedTensorType type,
                           mlir::ArrayAttr dims) {
  TensorInfo info;
  info.name = name;
  for (int64_t i = 0; i < type.getRank(); ++i) {
    info.shape.push_back(type.isDynamicDim(i) ? -1 : type.getDimSize(i));
    std::string dim;
    if (dims && static_cast<int64_t>(dims.size()) == type.getRank())
      dim = mlir::cast<mlir::StringAttr>(dims[i]).str();
    info.dims.push_back(type.isDynamicDim(i) && dim.empty() ? "?" : dim);
  }
  return info;
}

std::vector<Expr> Lowering::extentsLike(mlir::Value value,
                                        const std::vector<Expr> &from) {
  auto type = mlir::cast<mlir::RankedTensorType>(value.getType());
  std::vector<Expr> extents;
  for (int64_t i = 0; i < type.getRank(); ++i)
    extents.push_back(type.isDynamicDim(i) ? from.at(i)
                                           : Expr(int(type.getDimSize(i))));
  return extents;
}

void Lowering::scheduleElementwise(HTensor &tensor, const std::vector<Var> &vars) {
  tensor.materialized = true;
  scheduleRoot(tensor.func, vars);
}

void Lowering::scheduleRoot(Func func, const std::vector<Var> &vars,
                            bool vectorize) {
  func.compute_root();
  if (vars.empty())
    return;
  if (options.gpu) {
    Var bx("bx"), by("by"), tx("tx"), ty("ty");
    if (vars.size() >= 2)
      func.gpu_tile(vars.back(), vars[vars.size() - 2], bx, by, tx, ty, 16, 8,
                    TailStrategy::GuardWithIf);
    else
      func.gpu_tile(vars.back(), bx, tx, 64, TailStrategy::GuardWithIf);
    return;
  }
  if (options.schedule == ScheduleKind::Naive)
    return;
  if (!vectorize) {
    func.parallel(vars.back());
    return;
  }
  func.vectorize(vars.back(), 16, TailStrategy::GuardWithIf);
  if (vars.size() >= 2)
    func.parallel(vars[vars.size() - 2]);
}

mlir::LogicalResult Lowering::lowerOp(mlir::Operation *op) {
  bool handled = false;
  using Family = mlir::LogicalResult (*)(Lowering &, mlir::Operation *, bool &);
  for (Family family : {lowerElementwise, lowerShapeOps, lowerNorms, lowerMatmul,
                        lowerAttention, lowerLinearAttention}) {
    if (mlir::failed(family(*this, op, handled)))
      return mlir::failure();
    if (handled)
      return mlir::success();
  }
  return op->emitError() << "code generation does not support '"
                         << op->getName() << "'"
                         << (mlir::isa<mlir::attn::GauOp, mlir::attn::FlashOp,
                                       mlir::attn::MhsaOp,
                                       mlir::attn::LinearAttentionOp,
                                       mlir::attn::LocalAttentionOp,
                                       mlir::attn::GluFfnOp>(op)
                                 ? " (run attn-expand-layers first)"
                                 : "");
}

mlir::LogicalResult Lowering::lowerFunction(mlir::func::FuncOp func) {
  // Inputs: one ImageParam each, extents from the buffer at run time.
  for (auto [index, arg] : llvm::enumerate(func.getArguments())) {
    auto type = mlir::dyn_cast<mlir::RankedTensorType>(arg.getType());
    if (!type || !type.getElementType().isF32())
      return func.emitError() << "code generation supports f32 tensors only, "
                                 "but input "
                              << index << " is " << arg.getType();
    auto name = func.getArgAttrOfType<mlir::StringAttr>(index, "attn.name");
    auto dims = func.getArgAttrOfType<mlir::ArrayAttr>(index, "attn.dims");
    TensorInfo info = describe(name ? name.str() : "arg" + std::to_string(index),
                               type, dims);
    ImageParam param(Float(32), type.getRank(),
                     argumentName("in", index, info.name));
    HTensor tensor;
    tensor.func = param;
    for (int64_t i = 0; i < type.getRank(); ++i)
      tensor.extents.push_back(type.isDynamicDim(i)
                                   ? param.dim(type.getRank() - 1 - i).extent()
                                   : Expr(int(type.getDimSize(i))));
    tensor.materialized = true;
    inputParams.push_back(param);
    inputs.push_back(info);
    set(arg, tensor);
  }

  std::map<std::string, HTensor> weightByName;
  for (mlir::Operation &op : func.getBody().front()) {
    if (auto weight = mlir::dyn_cast<mlir::attn::WeightOp>(op)) {
      auto type = mlir::cast<mlir::RankedTensorType>(weight.getType());
      std::string name = weight.getName().str();
      if (!type.getElementType().isF32())
        return weight.emitError() << "code generation supports f32 weights "
                                     "only, but '"
                                  << name << "' is " << type;
      auto it = weightByName.find(name);
      if (it == weightByName.end()) {
        ImageParam param(Float(32), type.getRank(),
                         argumentName("w", weightParams.size(), name));
        HTensor tensor;
        tensor.func = param;
        for (int64_t size : type.getShape())
          tensor.extents.push_back(Expr(int(size)));
        tensor.materialized = true;
        weightParams.push_back(param);
        weights.push_back(describe(name, type, nullptr));
        it = weightByName.emplace(name, tensor).first;
      }
      set(weight, it->second);
      continue;
    }
    if (auto ret = mlir::dyn_cast<mlir::func::ReturnOp>(op)) {
      for (auto [index, value] : llvm::enumerate(ret.getOperands())) {
        const HTensor &result = get(value);
        auto type = mlir::cast<mlir::RankedTensorType>(value.getType());
        auto name = func.getResultAttrOfType<mlir::StringAttr>(index, "attn.name");
        auto dims = func.getResultAttrOfType<mlir::ArrayAttr>(index, "attn.dims");
        outputs.push_back(describe(
            name ? name.str() : "out" + std::to_string(index), type, dims));
        Func out(argumentName("out", index, outputs.back().name));
        std::vector<Var> vars = makeVars(result.rank(), "o");
        define(out, vars, result.at(toIndex(vars)));
        HTensor wrapped{out, result.extents};
        scheduleElementwise(wrapped, vars);
        outputFuncs.push_back(out);
      }
      continue;
    }
    if (mlir::isa<mlir::arith::ConstantOp>(op))
      continue; // scalar constants are read where a score region uses them
    if (mlir::failed(lowerOp(&op)))
      return mlir::failure();
  }
  return mlir::success();
}

//===----------------------------------------------------------------------===//
// ModelPipeline
//===----------------------------------------------------------------------===//

struct ModelPipeline::Impl {
  explicit Impl(const CodegenOptions &options) : lowering(options) {}
  std::string name;
  CodegenOptions options;
  Lowering lowering;
  Pipeline pipeline;
  bool compiled = false;
};

ModelPipeline::ModelPipeline() = default;
ModelPipeline::~ModelPipeline() = default;

std::unique_ptr<ModelPipeline> ModelPipeline::build(mlir::func::FuncOp model,
                                                    const CodegenOptions &options) {
  std::unique_ptr<ModelPipeline> result(new ModelPipeline());
  result->impl = std::make_unique<Impl>(options);
  result->impl->options = options;
  result->impl->name = model.getSymName().str();
  try {
    if (mlir::failed(result->impl->lowering.lowerFunction(model)))
      return nullptr;
    result->impl->pipeline = Pipeline(result->impl->lowering.outputFuncs);
  } catch (const Halide::Error &error) {
    model.emitError() << "internal error in code generation: " << error.what();
    return nullptr;
  }
  return result;
}

const std::string &ModelPipeline::name() const { return impl->name; }
const std::vector<TensorInfo> &ModelPipeline::inputs() const {
  return impl->lowering.inputs;
}
const std::vector<TensorInfo> &ModelPipeline::weights() const {
  return impl->lowering.weights;
}
const std::vector<TensorInfo> &ModelPipeline::outputs() const {
  return impl->lowering.outputs;
}
Pipeline &ModelPipeline::pipeline() { return impl->pipeline; }

std::vector<Argument> ModelPipeline::arguments() const {
  std::vector<Argument> args;
  for (const ImageParam &param : impl->lowering.inputParams)
    args.push_back(param);
  for (const ImageParam &param : impl->lowering.weightParams)
    args.push_back(param);
  return args;
}

void ModelPipeline::compileJit(const Target &target) {
  if (impl->compiled)
    return;
  impl->pipeline.compile_jit(target);
  impl->compiled = true;
}

void ModelPipeline::run(const std::vector<Buffer<float>> &inputs,
                        const std::vector<Buffer<float>> &weights,
                        std::vector<Buffer<float>> &outputs) {
  Lowering &lowering = impl->lowering;
  for (size_t i = 0; i < inputs.size(); ++i)
    lowering.inputParams[i].set(inputs[i]);
  for (size_t i = 0; i < weights.size(); ++i)
    lowering.weightParams[i].set(weights[i]);
  std::vector<Buffer<void>> views(outputs.begin(), outputs.end());
  Realization realization(views);
  impl->pipeline.realize(realization);
}

bool parseTarget(const std::string &name, Target &target, std::string &error) {
  std::string spec = name.empty() ? "host" : name;
  if (!Target::validate_target_string(spec)) {
    error = "unknown target '" + name +
            "'; expected host, x86-64-linux-avx2, x86-64-linux-avx512, "
            "arm-64-linux, host-cuda-cuda_capability_80 or another Halide "
            "target string";
    return false;
  }
  target = Target(spec);
  return true;
}

} // namespace attnc::codegen
