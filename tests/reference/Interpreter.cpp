//===- Interpreter.cpp - fp64 evaluation of attn model functions ----------===//
//
// Part of attnc, a compiler for attention layers.
//
//===----------------------------------------------------------------------===//
//
// This file implements `evaluate`: it binds the inputs to the arguments of a
// model function, walks its body in order, evaluates each layer op with
// Layers.h and each tensor primitive with Primitives.h (attn.attention with
// the ScoreFn of its region), checks every result against the static dims
// of its type, and returns the values of func.return.
//
//===----------------------------------------------------------------------===//

#include "tests/reference/InterpreterDetail.h"

#include "llvm/ADT/APFloat.h"
#include "llvm/ADT/DenseSet.h"

using namespace mlir;

namespace attnc::ref {

using namespace detail;

namespace {

NormKind convert(attn::NormKind kind) {
  switch (kind) {
  case attn::NormKind::layer_norm:
    return NormKind::LayerNorm;
  case attn::NormKind::scale_norm:
    return NormKind::ScaleNorm;
  case attn::NormKind::rms_norm:
    return NormKind::RmsNorm;
  }
  interpreterError("unknown norm kind");
}

RelPosKind convert(attn::RelPosKind kind) {
  switch (kind) {
  case attn::RelPosKind::toeplitz:
    return RelPosKind::Toeplitz;
  case attn::RelPosKind::t5:
    return RelPosKind::T5;
  case attn::RelPosKind::none:
    break;
  }
  return RelPosKind::None;
}

/// FLASH-pytorch's options of a GAU or FLASH op.
template <typename GatedLayerOp>
GatedOptions gatedOptions(GatedLayerOp op) {
  GatedOptions options;
  options.numBuckets = op.getNumBuckets();
  options.maxDistance = op.getMaxDistance();
  options.ropeDims = op.getRopeDims();
  options.ropeMode = op.getRopeMode() == attn::RopeMode::half
                         ? RopeMode::Half
                         : RopeMode::Interleaved;
  options.shiftTokens = op.getShiftTokens();
  options.normClamp = op.getNormClamp();
  return options;
}

FeatureMap convert(attn::FeatureMap feature) {
  switch (feature) {
  case attn::FeatureMap::identity:
    return FeatureMap::Identity;
  case attn::FeatureMap::elu1:
    return FeatureMap::Elu1;
  case attn::FeatureMap::relu:
    return FeatureMap::Relu;
  case attn::FeatureMap::silu:
    return FeatureMap::Silu;
  case attn::FeatureMap::exp:
    return FeatureMap::Exp;
  }
  interpreterError("unknown feature map");
}

Activation convert(attn::Activation activation) {
  switch (activation) {
  case attn::Activation::silu:
    return Activation::Silu;
  case attn::Activation::gelu:
    return Activation::Gelu;
  case attn::Activation::relu:
    return Activation::Relu;
  case attn::Activation::sigmoid:
    return Activation::Sigmoid;
  case attn::Activation::tanh:
    return Activation::Tanh;
  }
  interpreterError("unknown activation");
}

Mask convert(attn::MaskAttr mask) {
  static const MaskKind kinds[] = {MaskKind::None,  MaskKind::Causal,
                                   MaskKind::Window, MaskKind::Chunk,
                                   MaskKind::Band,  MaskKind::CausalChunk};
  auto index = static_cast<size_t>(mask.getKind());
  if (index >= std::size(kinds))
    interpreterError("unknown mask kind");
  return Mask{kinds[index], mask.getSize()};
}

/// Throws unless `t` matches the rank and static dims of `type`.
void checkShape(const Tensor &t, Type type, const std::string &what) {
  auto ranked = llvm::dyn_cast<RankedTensorType>(type);
  if (!ranked)
    interpreterError(what + " is not a ranked tensor");
  bool ok = ranked.getRank() == t.rank();
  for (int64_t axis = 0; ok && axis < t.rank(); ++axis)
    ok = ranked.isDynamicDim(axis) ||
         ranked.getDimSize(axis) == t.shape[static_cast<size_t>(axis)];
  if (!ok)
    interpreterError(what + " has shape " + Tensor::shapeString(t.shape) +
                     ", which does not fit its type");
}

/// `value` rounded to the floating-point element type of `type`.
double roundToElementType(double value, Type type) {
  auto floatType =
      llvm::dyn_cast<FloatType>(llvm::cast<ShapedType>(type).getElementType());
  if (!floatType)
    return value;
  llvm::APFloat number(value);
  bool losesInfo = false;
  number.convert(floatType.getFloatSemantics(),
                 llvm::APFloat::rmNearestTiesToEven, &losesInfo);
  number.convert(llvm::APFloat::IEEEdouble(),
                 llvm::APFloat::rmNearestTiesToEven, &losesInfo);
  return number.convertToDouble();
}

/// Evaluates one tensor-valued attn op; returns its results in order.
std::vector<Tensor> evalTensorOp(Operation *op, const TensorEnv &tensors,
                                 const ScalarEnv &scalars,
                                 const WeightMap &weights) {
  auto in = [&](unsigned index) -> const Tensor & {
    auto it = tensors.find(op->getOperand(index));
    if (it == tensors.end())
      interpreterError("no tensor value for operand " + std::to_string(index) +
                       " of '" + opName(op) + "'");
    return it->second;
  };
  auto optional = [&](Value value) -> const Tensor * {
    return value ? &tensors.find(value)->second : nullptr;
  };

  // Layer ops.
  if (auto gauOp = llvm::dyn_cast<attn::GauOp>(op))
    return {gau(in(0), weights,
                GauConfig{gauOp.getLayerName().str(), gauOp.getE(),
                          gauOp.getS(), gauOp.getCausal(),
                          convert(gauOp.getNorm()), gauOp.getMaxLen(),
                          convert(gauOp.getRelPos()), gauOp.getRope(),
                          gauOp.getEps(), gatedOptions(gauOp)})};
  if (auto flashOp = llvm::dyn_cast<attn::FlashOp>(op))
    return {flash(in(0), weights,
                  FlashConfig{flashOp.getLayerName().str(), flashOp.getE(),
                              flashOp.getS(), flashOp.getChunk(),
                              flashOp.getCausal(), convert(flashOp.getNorm()),
                              convert(flashOp.getRelPos()), flashOp.getRope(),
                              flashOp.getEps(), gatedOptions(flashOp),
                              flashOp.getLinByLength()})};
  if (auto mhsaOp = llvm::dyn_cast<attn::MhsaOp>(op))
    return {mhsa(in(0), weights,
                 MhsaConfig{mhsaOp.getLayerName().str(), mhsaOp.getHeads(),
                            mhsaOp.getCausal(), convert(mhsaOp.getNorm()),
                            mhsaOp.getEps()})};
  if (auto linOp = llvm::dyn_cast<attn::LinearAttentionOp>(op))
    return {linearAttention(
        in(0), weights,
        LinearAttentionConfig{linOp.getLayerName().str(), linOp.getHeads(),
                              linOp.getCausal(), convert(linOp.getFeature()),
                              convert(linOp.getNorm()), linOp.getEps()})};
  if (auto localOp = llvm::dyn_cast<attn::LocalAttentionOp>(op))
    return {localAttention(
        in(0), weights,
        LocalAttentionConfig{localOp.getLayerName().str(), localOp.getHeads(),
                             localOp.getWindow(), localOp.getCausal(),
                             localOp.getBlockAttr().getValue(),
                             convert(localOp.getNorm()), localOp.getEps()})};
  if (auto ffnOp = llvm::dyn_cast<attn::GluFfnOp>(op))
    return {gluFfn(in(0), weights,
                   GluFfnConfig{ffnOp.getLayerName().str(), ffnOp.getHidden(),
                                convert(ffnOp.getActivation()),
                                convert(ffnOp.getNorm()), ffnOp.getEps()})};

  // Weights and constants.
  if (auto weightOp = llvm::dyn_cast<attn::WeightOp>(op)) {
    std::vector<int64_t> shape(weightOp.getType().getShape().begin(),
                               weightOp.getType().getShape().end());
    return {lookupWeight(weights, weightOp.getName().str(), shape)};
  }
  if (auto constOp = llvm::dyn_cast<attn::ConstantOp>(op))
    return {Tensor::scalar(
        roundToElementType(constOp.getValue(), constOp.getType()))};

  // Elementwise ops.
  if (llvm::isa<attn::AddOp>(op)) return {add(in(0), in(1))};
  if (llvm::isa<attn::SubOp>(op)) return {sub(in(0), in(1))};
  if (llvm::isa<attn::MulOp>(op)) return {mul(in(0), in(1))};
  if (llvm::isa<attn::DivOp>(op)) return {div(in(0), in(1))};
  if (llvm::isa<attn::DivOrZeroOp>(op))
    return {divOrZero(in(0), in(1))};
  if (llvm::isa<attn::PowOp>(op)) return {pow(in(0), in(1))};
  if (llvm::isa<attn::NegOp>(op)) return {neg(in(0))};
  if (llvm::isa<attn::SiluOp>(op)) return {silu(in(0))};
  if (llvm::isa<attn::GeluOp>(op)) return {gelu(in(0))};
  if (llvm::isa<attn::ReluOp>(op)) return {relu(in(0))};
  if (llvm::isa<attn::SigmoidOp>(op)) return {sigmoid(in(0))};
  if (llvm::isa<attn::ExpOp>(op)) return {ref::exp(in(0))};
  if (llvm::isa<attn::TanhOp>(op)) return {ref::tanh(in(0))};
  if (llvm::isa<attn::SqrtOp>(op)) return {ref::sqrt(in(0))};

  // Contractions and shape ops.
  if (llvm::isa<attn::MatmulOp>(op)) return {matmul(in(0), in(1))};
  if (llvm::isa<attn::DenseOp>(op)) return {dense(in(0), in(1), in(2))};
  if (auto splitOp = llvm::dyn_cast<attn::SplitOp>(op))
    return split(in(0), std::vector<int64_t>(splitOp.getSizes().begin(),
                                             splitOp.getSizes().end()));
  if (llvm::isa<attn::TransposeOp>(op)) return {transpose(in(0))};
  if (llvm::isa<attn::EmbeddingOp>(op)) return {embedding(in(0), in(1))};
  if (auto rowOp = llvm::dyn_cast<attn::RowOp>(op))
    return {row(in(0), rowOp.getIndex())};

  // Norms, scale-offset, RoPE.
  if (auto ln = llvm::dyn_cast<attn::LayerNormOp>(op))
    return {layerNorm(in(0), optional(ln.getWeight()), optional(ln.getBias()),
                      ln.getEps())};
  if (auto sn = llvm::dyn_cast<attn::ScaleNormOp>(op))
    return {scaleNorm(in(0), in(1), sn.getEps(), sn.getClamp())};
  if (auto rms = llvm::dyn_cast<attn::RmsNormOp>(op))
    return {rmsNorm(in(0), optional(rms.getWeight()), rms.getEps())};
  if (llvm::isa<attn::ScaleOffsetOp>(op))
    return {scaleOffset(in(0), in(1), in(2))};
  if (auto sinusoidalOp = llvm::dyn_cast<attn::SinusoidalOp>(op))
    return {sinusoidal(in(0), sinusoidalOp.getBase())};
  if (auto ropeOp = llvm::dyn_cast<attn::RopeOp>(op))
    return {rope(in(0),
                 ropeOp.getMode() == attn::RopeMode::half ? RopeMode::Half
                                                          : RopeMode::Interleaved,
                 ropeOp.getRotaryDims(), ropeOp.getBase())};

  // Attention.
  if (auto att = llvm::dyn_cast<attn::AttentionOp>(op))
    return {attention(in(0), in(1), in(2), makeScoreFn(att, scalars, tensors),
                      convert(att.getMask()),
                      att.getNormalize() == attn::Normalize::softmax
                          ? Normalize::Softmax
                          : Normalize::None,
                      att.getHeads())};
  if (auto lin = llvm::dyn_cast<attn::LinearAttnOp>(op))
    return {linearAttn(in(0), in(1), in(2), convert(lin.getFeature()),
                       lin.getCausal(), lin.getNormalize(), lin.getScale())};
  if (auto chunked = llvm::dyn_cast<attn::ChunkedLinearOp>(op))
    return {chunkedLinear(in(0), in(1), in(2), chunked.getChunk(),
                          chunked.getCausal(), chunked.getScale())};

  interpreterError("unsupported op '" + opName(op) + "'");
}

/// The ops of `body` whose results the function returns, directly or
/// through other live ops. The reference evaluates only these: a layer whose
/// result nothing reads has no effect on the outputs, and code generation
/// drops it together with its weights, so the reference must not ask for
/// them either.
llvm::DenseSet<Operation *> liveOps(Block &body) {
  llvm::DenseSet<Operation *> live;
  for (Operation &op : llvm::reverse(body)) {
    bool isLive = op.hasTrait<OpTrait::IsTerminator>();
    for (Value result : op.getResults())
      for (Operation *user : result.getUsers()) {
        Operation *top = body.findAncestorOpInBlock(*user);
        isLive = isLive || (top && live.contains(top));
      }
    if (isLive)
      live.insert(&op);
  }
  return live;
}

} // namespace

std::vector<Tensor> evaluate(func::FuncOp model,
                             const std::vector<Tensor> &inputs,
                             const WeightMap &weights) {
  if (model.isExternal())
    interpreterError("function '" + model.getName().str() + "' has no body");
  Block &body = model.getBody().front();
  if (inputs.size() != body.getNumArguments())
    interpreterError("function '" + model.getName().str() + "' takes " +
                     std::to_string(body.getNumArguments()) + " inputs, got " +
                     std::to_string(inputs.size()));
  TensorEnv tensors;
  ScalarEnv scalars;
  for (auto [index, arg] : llvm::enumerate(body.getArguments())) {
    checkShape(inputs[index], arg.getType(),
               "input " + std::to_string(index));
    tensors[arg] = inputs[index];
  }

  llvm::DenseSet<Operation *> live = liveOps(body);
  for (Operation &op : body) {
    if (!live.contains(&op))
      continue;
    if (auto ret = llvm::dyn_cast<func::ReturnOp>(op)) {
      std::vector<Tensor> results;
      for (Value value : ret.getOperands()) {
        auto it = tensors.find(value);
        if (it == tensors.end())
          interpreterError("func.return of a value that is not a tensor");
        results.push_back(it->second);
      }
      return results;
    }
    if (isScalarOp(&op) && op.getNumResults() == 1 &&
        !llvm::isa_and_nonnull<attn::AttnDialect>(op.getDialect())) {
      ScalarEnv none;
      evalScalarOp(&op, scalars, none, tensors);
      continue;
    }
    if (!llvm::isa_and_nonnull<attn::AttnDialect>(op.getDialect()))
      interpreterError("unsupported op '" + opName(&op) + "'");
    std::vector<Tensor> results = evalTensorOp(&op, tensors, scalars, weights);
    if (results.size() != op.getNumResults())
      interpreterError("'" + opName(&op) + "' produced the wrong result count");
    for (auto [index, result] : llvm::enumerate(op.getResults())) {
      checkShape(results[index], result.getType(),
                 "result " + std::to_string(index) + " of '" + opName(&op) +
                     "'");
      tensors[result] = std::move(results[index]);
    }
  }
  interpreterError("function '" + model.getName().str() +
                   "' does not end in func.return");
}

} // namespace attnc::ref
