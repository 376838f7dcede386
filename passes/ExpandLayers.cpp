//===- ExpandLayers.cpp - attn-expand-layers: templates to primitives -----===//
//
// This file implements attn-expand-layers: one rewrite pattern per layer
// template op, each stating the template's mathematics (spec §2.2 for GAU,
// §3.2/§3.5 for FLASH, the op descriptions for the baselines) in primitive
// attn ops, with the weights materialised as `attn.weight` ops named
// `<layer_name>.<part>`.
//
//===----------------------------------------------------------------------===//
#include "passes/Passes.h"

#include "dsl/IR/AttnOps.h"

#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

#include <cmath>

namespace mlir::attn {
#define GEN_PASS_DEF_EXPANDLAYERSPASS
#include "passes/Passes.h.inc"
} // namespace mlir::attn

using namespace mlir;
using namespace mlir::attn;

namespace {

/// Builds the primitive ops of one layer at the layer op's location.
class LayerBuilder {
public:
  LayerBuilder(PatternRewriter &rewriter, Operation *layer, Value x,
               StringRef layerName)
      : rewriter(rewriter), loc(layer->getLoc()), x(x),
        xType(cast<RankedTensorType>(x.getType())), layerName(layerName.str()) {
  }

  int64_t modelDim() const { return xType.getShape().back(); }
  Type elementType() const { return xType.getElementType(); }

  /// `x`'s shape with the last dim replaced by `width`.
  RankedTensorType rows(int64_t width) const {
    SmallVector<int64_t> shape(xType.getShape());
    shape.back() = width;
    return RankedTensorType::get(shape, elementType());
  }

  /// `attn.weight "<layer>.<part>" : tensor<shape>`.
  Value weight(StringRef part, ArrayRef<int64_t> shape) {
    return rewriter.create<WeightOp>(
        loc, RankedTensorType::get(shape, elementType()),
        rewriter.getStringAttr(layerName + "." + part.str()));
  }

  /// The template's input normalisation (`L.norm.*`). A bias's
  /// attn.weight comes before its weight's, here and in dense(): C++ leaves
  /// the order in which a call's arguments are evaluated unspecified, and
  /// with both created inside one call gcc and clang built the weights in
  /// different orders (the order of the model's weights lists).
  Value norm(NormKind kind, double eps, bool clamp = false) {
    int64_t d = modelDim();
    switch (kind) {
    case NormKind::layer_norm: {
      Value bias = weight("norm.bias", {d});
      return rewriter.create<LayerNormOp>(
          loc, xType, x, weight("norm.weight", {d}), bias, eps);
    }
    case NormKind::scale_norm:
      return rewriter.create<ScaleNormOp>(loc, xType, x,
                                          weight("norm.weight", {1}), eps,
                                          clamp);
    case NormKind::rms_norm:
      return rewriter.create<RmsNormOp>(loc, xType, x,
                                        weight("norm.weight", {d}), eps);
    }
    llvm_unreachable("unknown norm kind");
  }

  /// `in @ L.<part>.weight + L.<part>.bias` with `out` columns.
  Value dense(Value in, StringRef part, int64_t out) {
    int64_t k = cast<RankedTensorType>(in.getType()).getShape().back();
    Value bias = weight((part + ".bias").str(), {out});
    return rewriter.create<DenseOp>(
        loc, rows(out), in, weight((part + ".weight").str(), {k, out}), bias);
  }

  SmallVector<Value> split(Value in, ArrayRef<int64_t> sizes) {
    SmallVector<Type> types;
    for (int64_t size : sizes)
      types.push_back(rows(size));
    auto op = rewriter.create<SplitOp>(loc, types, in,
                                       rewriter.getDenseI64ArrayAttr(sizes));
    return SmallVector<Value>(op->getResults());
  }

  /// `z * gamma[row] + beta[row]`.
  Value scaleOffset(Value z, Value gamma, Value beta, int64_t row) {
    int64_t s = cast<RankedTensorType>(gamma.getType()).getShape().back();
    auto vec = RankedTensorType::get({s}, elementType());
    Value g = rewriter.create<RowOp>(loc, vec, gamma, row);
    Value b = rewriter.create<RowOp>(loc, vec, beta, row);
    return rewriter.create<ScaleOffsetOp>(loc, z.getType(), z, g, b);
  }

  /// RoPE with base 10000 on the first `dims` features (0: all; spec
  /// §2.4.2 rotates all, half-split).
  Value rope(Value in, RopeMode mode, int64_t dims) {
    int64_t s = cast<RankedTensorType>(in.getType()).getShape().back();
    return rewriter.create<RopeOp>(loc, in.getType(), in, mode,
                                   dims == 0 ? s : dims, 10000.0);
  }

  Value add(Value a, Value b) {
    return rewriter.create<AddOp>(loc, a.getType(), a, b);
  }
  Value mul(Value a, Value b) {
    return rewriter.create<MulOp>(loc, a.getType(), a, b);
  }

  Value activation(Activation act, Value in) {
    Type type = in.getType();
    switch (act) {
    case Activation::silu: return rewriter.create<SiluOp>(loc, type, in);
    case Activation::gelu: return rewriter.create<GeluOp>(loc, type, in);
    case Activation::relu: return rewriter.create<ReluOp>(loc, type, in);
    case Activation::sigmoid: return rewriter.create<SigmoidOp>(loc, type, in);
    case Activation::tanh: return rewriter.create<TanhOp>(loc, type, in);
    }
    llvm_unreachable("unknown activation");
  }

  /// Attention whose score is `relu(qk * scale + bias)^2` (GAU/FLASH) with
  /// scale = 1/n (n = the key length, a block argument) when `scale` is 0.
  /// The bias is the learned Toeplitz bias or the T5 bias (`bias.kind`),
  /// added after the scaling, or before it when `bias.divided`
  /// (FLASH-pytorch's GAU: relu((qk + bias) / n)^2).
  struct ScoreBias {
    RelPosKind kind = RelPosKind::none;
    Value table;
    int64_t maxLen = 0;                 ///< toeplitz
    int64_t maxDistance = 0;            ///< t5
    bool causal = false;                ///< t5
    double scale = 1.0;                 ///< t5
    bool divided = false;
  };
  Value reluSquaredAttention(Value q, Value k, Value v, MaskAttr mask,
                             double scale, const ScoreBias &bias) {
    auto op = rewriter.create<AttentionOp>(loc, v.getType(), q, k, v, mask,
                                           Normalize::none, 1);
    OpBuilder::InsertionGuard guard(rewriter);
    Block *block = op.addScoreBlock();
    rewriter.setInsertionPointToStart(block);
    Value i = block->getArgument(1), j = block->getArgument(2);
    auto addBias = [&](Value score) -> Value {
      Value value;
      if (bias.kind == RelPosKind::toeplitz)
        value = rewriter.create<RelPosBiasOp>(
            loc, rewriter.getF32Type(), bias.table, i, j, bias.maxLen);
      else if (bias.kind == RelPosKind::t5)
        value = rewriter.create<T5BiasOp>(
            loc, rewriter.getF32Type(), bias.table, i, j, bias.causal,
            cast<RankedTensorType>(bias.table.getType()).getShape().back(),
            bias.maxDistance, bias.scale);
      return value ? rewriter.create<arith::AddFOp>(loc, score, value)
                   : score;
    };
    Value scaled = block->getArgument(0);
    if (bias.divided)
      scaled = addBias(scaled);
    if (scale == 0) {
      Value n = rewriter.create<arith::IndexCastOp>(loc, rewriter.getI64Type(),
                                                    block->getArgument(3));
      Value nf = rewriter.create<arith::SIToFPOp>(loc, rewriter.getF32Type(), n);
      scaled = rewriter.create<arith::DivFOp>(loc, scaled, nf);
    } else {
      Value c = rewriter.create<arith::ConstantOp>(
          loc, rewriter.getF32FloatAttr(static_cast<float>(scale)));
      scaled = rewriter.create<arith::MulFOp>(loc, scaled, c);
    }
    if (!bias.divided)
      scaled = addBias(scaled);
    Value zero = rewriter.create<arith::ConstantOp>(loc,
                                                    rewriter.getF32FloatAttr(0));
    Value relu = rewriter.create<arith::MaximumFOp>(loc, scaled, zero);
    Value square = rewriter.create<arith::MulFOp>(loc, relu, relu);
    rewriter.create<YieldOp>(loc, square);
    return op;
  }

  /// Softmax attention with score `qk / sqrt(head_dim)`.
  Value softmaxAttention(Value q, Value k, Value v, MaskAttr mask,
                         int64_t heads) {
    auto op = rewriter.create<AttentionOp>(loc, v.getType(), q, k, v, mask,
                                           Normalize::softmax, heads);
    OpBuilder::InsertionGuard guard(rewriter);
    Block *block = op.addScoreBlock();
    rewriter.setInsertionPointToStart(block);
    double headDim = static_cast<double>(modelDim() / heads);
    Value c = rewriter.create<arith::ConstantOp>(
        loc, rewriter.getF32FloatAttr(static_cast<float>(1.0 / std::sqrt(headDim))));
    Value score = rewriter.create<arith::MulFOp>(loc, block->getArgument(0), c);
    rewriter.create<YieldOp>(loc, score);
    return op;
  }

  MaskAttr mask(MaskKind kind, int64_t size = 0) {
    return MaskAttr::get(rewriter.getContext(), kind, size);
  }

  PatternRewriter &rewriter;
  Location loc;
  Value x;
  RankedTensorType xType;
  std::string layerName;
};

/// Shared front half of GAU and FLASH: norm, dense to u|v|z, SiLU, split.
struct GatedProjection {
  Value u, v, z, gamma, beta;
};

template <typename GatedLayerOp>
GatedProjection projectUVZ(LayerBuilder &b, GatedLayerOp op,
                           int64_t scaleOffsetRows) {
  int64_t e = op.getE(), s = op.getS();
  Value h = b.norm(op.getNorm(), op.getEps(), op.getNormClamp());
  if (op.getShiftTokens()) {
    // FLASH-pytorch shifts the first half of the features (chunk(2) gives
    // the first part the odd feature).
    int64_t d = b.modelDim();
    h = b.rewriter.create<TokenShiftOp>(b.loc, h.getType(), h, (d + 1) / 2);
  }
  Value uvz = b.rewriter.create<SiluOp>(b.loc, b.rows(2 * e + s),
                                        b.dense(h, "uvz", 2 * e + s));
  SmallVector<Value> parts = b.split(uvz, {e, e, s});
  Value gamma = b.weight("gamma", {scaleOffsetRows, s});
  Value beta = b.weight("beta", {scaleOffsetRows, s});
  return {parts[0], parts[1], parts[2], gamma, beta};
}

/// The relative bias of a GAU/FLASH layer: its table `L.rel_pos`, the
/// Toeplitz table's half-width, and for T5 its scale sqrt(`t5Width`).
template <typename GatedLayerOp>
LayerBuilder::ScoreBias scoreBias(LayerBuilder &b, GatedLayerOp op,
                                  int64_t maxLen, int64_t t5Width) {
  LayerBuilder::ScoreBias bias;
  bias.kind = op.getRelPos();
  if (bias.kind == RelPosKind::toeplitz) {
    bias.table = b.weight("rel_pos", {2 * maxLen - 1});
    bias.maxLen = maxLen;
  } else if (bias.kind == RelPosKind::t5) {
    bias.table = b.weight("rel_pos", {op.getNumBuckets()});
    bias.maxDistance = op.getMaxDistance();
    bias.causal = op.getCausal();
    bias.scale = std::sqrt(static_cast<double>(t5Width));
  }
  return bias;
}

/// `u * attended`, output dense and residual.
Value gateOutputResidual(LayerBuilder &b, Value u, Value attended) {
  Value gated = b.mul(u, attended);
  return b.add(b.dense(gated, "out", b.modelDim()), b.x);
}

struct ExpandGau : OpRewritePattern<GauOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(GauOp op, PatternRewriter &rewriter) const override {
    LayerBuilder b(rewriter, op, op.getX(), op.getLayerName());
    GatedProjection p = projectUVZ(b, op, 2);
    Value q = b.scaleOffset(p.z, p.gamma, p.beta, 0);
    Value k = b.scaleOffset(p.z, p.gamma, p.beta, 1);
    if (op.getRope()) {
      q = b.rope(q, op.getRopeMode(), op.getRopeDims());
      k = b.rope(k, op.getRopeMode(), op.getRopeDims());
    }
    // FLASH-pytorch's GAU: T5 scaled by sqrt(d), divided by n with qk.
    LayerBuilder::ScoreBias bias =
        scoreBias(b, op, op.getMaxLen(), b.modelDim());
    bias.divided = bias.kind == RelPosKind::t5;
    Value a = b.reluSquaredAttention(
        q, k, p.v, b.mask(op.getCausal() ? MaskKind::causal : MaskKind::none),
        /*scale=1/n*/ 0, bias);
    rewriter.replaceOp(op, gateOutputResidual(b, p.u, a));
    return success();
  }
};

struct ExpandFlash : OpRewritePattern<FlashOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(FlashOp op, PatternRewriter &rewriter) const override {
    LayerBuilder b(rewriter, op, op.getX(), op.getLayerName());
    int64_t chunk = op.getChunk();
    GatedProjection p = projectUVZ(b, op, 4);
    // Rows of gamma/beta: quad_q, quad_k, lin_q, lin_k.
    SmallVector<Value> heads;
    for (int64_t row = 0; row < 4; ++row) {
      Value head = b.scaleOffset(p.z, p.gamma, p.beta, row);
      heads.push_back(op.getRope()
                          ? b.rope(head, op.getRopeMode(), op.getRopeDims())
                          : head);
    }
    MaskAttr local = b.mask(op.getCausal() ? MaskKind::causal_chunk
                                           : MaskKind::chunk,
                            chunk);
    double invChunk = 1.0 / static_cast<double>(chunk);
    // The linear term comes first: its chunk states are then lowered
    // before the chunk attention, which adds their product in its
    // accumulators (codegen/Attention.cpp).
    bool byLength = op.getLinByLength();
    Value linear = rewriter.create<ChunkedLinearOp>(
        b.loc, p.v.getType(), heads[2], heads[3], p.v, chunk, op.getCausal(),
        byLength ? 1.0 : invChunk, byLength);
    Value quadratic = b.reluSquaredAttention(
        heads[0], heads[1], p.v, local, invChunk,
        scoreBias(b, op, chunk, op.getS()));
    rewriter.replaceOp(op, gateOutputResidual(b, p.u, b.add(quadratic, linear)));
    return success();
  }
};

/// q|k|v projection of the multi-head baselines.
SmallVector<Value> projectQKV(LayerBuilder &b, NormKind norm, double eps) {
  int64_t d = b.modelDim();
  Value h = b.norm(norm, eps);
  return b.split(b.dense(h, "qkv", 3 * d), {d, d, d});
}

struct ExpandMhsa : OpRewritePattern<MhsaOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(MhsaOp op, PatternRewriter &rewriter) const override {
    LayerBuilder b(rewriter, op, op.getX(), op.getLayerName());
    SmallVector<Value> qkv = projectQKV(b, op.getNorm(), op.getEps());
    Value a = b.softmaxAttention(
        qkv[0], qkv[1], qkv[2],
        b.mask(op.getCausal() ? MaskKind::causal : MaskKind::none), op.getHeads());
    rewriter.replaceOp(op, b.add(b.dense(a, "out", b.modelDim()), b.x));
    return success();
  }
};

struct ExpandLocalAttention : OpRewritePattern<LocalAttentionOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(LocalAttentionOp op,
                                PatternRewriter &rewriter) const override {
    LayerBuilder b(rewriter, op, op.getX(), op.getLayerName());
    SmallVector<Value> qkv = projectQKV(b, op.getNorm(), op.getEps());
    MaskKind kind = op.getBlock()
                        ? (op.getCausal() ? MaskKind::causal_chunk : MaskKind::chunk)
                        : (op.getCausal() ? MaskKind::window : MaskKind::band);
    Value a = b.softmaxAttention(qkv[0], qkv[1], qkv[2],
                                 b.mask(kind, op.getWindow()), op.getHeads());
    rewriter.replaceOp(op, b.add(b.dense(a, "out", b.modelDim()), b.x));
    return success();
  }
};

struct ExpandLinearAttention : OpRewritePattern<LinearAttentionOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(LinearAttentionOp op,
                                PatternRewriter &rewriter) const override {
    if (op.getHeads() != 1)
      return rewriter.notifyMatchFailure(op, "heads > 1 is not expanded yet");
    LayerBuilder b(rewriter, op, op.getX(), op.getLayerName());
    SmallVector<Value> qkv = projectQKV(b, op.getNorm(), op.getEps());
    Value a = rewriter.create<LinearAttnOp>(
        b.loc, qkv[2].getType(), qkv[0], qkv[1], qkv[2], op.getFeature(),
        op.getCausal(), /*normalize=*/true, /*scale=*/1.0);
    rewriter.replaceOp(op, b.add(b.dense(a, "out", b.modelDim()), b.x));
    return success();
  }
};

struct ExpandGluFfn : OpRewritePattern<GluFfnOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(GluFfnOp op, PatternRewriter &rewriter) const override {
    LayerBuilder b(rewriter, op, op.getX(), op.getLayerName());
    int64_t hidden = op.getHidden();
    Value h = b.norm(op.getNorm(), op.getEps());
    SmallVector<Value> ab = b.split(b.dense(h, "in", 2 * hidden), {hidden, hidden});
    Value gated = b.mul(b.activation(op.getActivation(), ab[0]),
                        b.activation(op.getActivation(), ab[1]));
    rewriter.replaceOp(op, b.add(b.dense(gated, "out", b.modelDim()), b.x));
    return success();
  }
};

struct ExpandLayersPass
    : public mlir::attn::impl::ExpandLayersPassBase<ExpandLayersPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    populateExpandLayersPatterns(patterns);
    if (failed(applyPatternsAndFoldGreedily(getOperation(),
                                            std::move(patterns)))) {
      getOperation().emitError()
          << "internal error: attn-expand-layers did not converge";
      return signalPassFailure();
    }
    // Every layer op must be gone: report the ones that could not be expanded
    // at their .attn location.
    WalkResult result = getOperation().walk([](Operation *op) {
      if (auto lin = dyn_cast<LinearAttentionOp>(op)) {
        lin.emitError() << "linear_attention with heads = " << lin.getHeads()
                        << " is not supported yet; use heads = 1";
        return WalkResult::interrupt();
      }
      return WalkResult::advance();
    });
    if (result.wasInterrupted())
      signalPassFailure();
  }
};

} // namespace

void mlir::attn::populateExpandLayersPatterns(RewritePatternSet &patterns) {
  patterns.add<ExpandGau, ExpandFlash, ExpandMhsa, ExpandLocalAttention,
               ExpandLinearAttention, ExpandGluFfn>(patterns.getContext());
}
