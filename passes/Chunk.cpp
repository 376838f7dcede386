//===- Chunk.cpp - attn-chunk: FLASH's chunk-parallel form ----------------===//
//
// This file implements attn-chunk: chunk-masked attention and the chunked
// global linear term are rewritten into the chunk-parallel form (chunk with
// zero padding, attention per chunk, per-chunk K^T V states, exclusive
// prefix or total over chunks, state application, unchunk). See the pass
// description in Passes.td for the conditions and the maths.
//
//===----------------------------------------------------------------------===//
#include "passes/Passes.h"

#include "dsl/IR/AttnOps.h"

#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir::attn {
#define GEN_PASS_DEF_CHUNKPASS
#include "passes/Passes.h.inc"
} // namespace mlir::attn

using namespace mlir;
using namespace mlir::attn;

namespace {

/// `x : [..., n, f]` -> `attn.chunk x : [..., ceil(n/C), C, f]`.
Value chunk(PatternRewriter &rewriter, Location loc, Value x, int64_t size) {
  auto type = cast<RankedTensorType>(x.getType());
  SmallVector<int64_t> shape(type.getShape().begin(), type.getShape().end() - 2);
  int64_t n = type.getDimSize(type.getRank() - 2);
  shape.push_back(ShapedType::isDynamic(n) ? ShapedType::kDynamic
                                           : (n + size - 1) / size);
  shape.push_back(size);
  shape.push_back(type.getShape().back());
  return rewriter.create<ChunkOp>(
      loc, RankedTensorType::get(shape, type.getElementType()), x, size);
}

/// `[..., G, C, f]` with the feature dim replaced.
RankedTensorType withFeature(Value chunked, int64_t width) {
  auto type = cast<RankedTensorType>(chunked.getType());
  SmallVector<int64_t> shape(type.getShape());
  shape.back() = width;
  return RankedTensorType::get(shape, type.getElementType());
}

/// Whether the score gives the same value at positions shifted by a chunk
/// offset: %n unused, %i and %j only read as a distance.
bool scoreIsShiftInvariant(AttentionOp op) {
  Block &block = op.getScore().front();
  if (!block.getArgument(3).use_empty())
    return false;
  for (unsigned pos : {1u, 2u})
    for (Operation *user : block.getArgument(pos).getUsers())
      if (!isa<RelPosBiasOp, T5BiasOp>(user))
        return false;
  return true;
}

struct ChunkAttention : OpRewritePattern<AttentionOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(AttentionOp op,
                                PatternRewriter &rewriter) const override {
    MaskAttr mask = op.getMask();
    bool causal = mask.getKind() == MaskKind::causal_chunk;
    if (!causal && mask.getKind() != MaskKind::chunk)
      return rewriter.notifyMatchFailure(op, "not a chunk mask");
    // Under a causal mask the last chunk's padded keys come after each of
    // its real rows, so a softmax does not see them either.
    if (op.getNormalize() != Normalize::none && !causal)
      return rewriter.notifyMatchFailure(
          op, "padded keys would take part in a softmax");
    if (!scoreIsShiftInvariant(op))
      return rewriter.notifyMatchFailure(op, "score depends on the positions");
    Location loc = op.getLoc();
    int64_t size = mask.getSize();
    Value q = chunk(rewriter, loc, op.getQ(), size);
    Value k = chunk(rewriter, loc, op.getK(), size);
    Value v = chunk(rewriter, loc, op.getV(), size);
    auto local = rewriter.create<AttentionOp>(
        loc, withFeature(q, cast<RankedTensorType>(v.getType()).getShape().back()),
        q, k, v,
        MaskAttr::get(getContext(), causal ? MaskKind::causal : MaskKind::none, 0),
        op.getNormalize(), op.getHeads());
    rewriter.inlineRegionBefore(op.getScore(), local.getScore(),
                                local.getScore().end());
    rewriter.replaceOpWithNewOp<UnchunkOp>(op, op.getType(), local, op.getQ());
    return success();
  }
};

struct ChunkGlobalTerm : OpRewritePattern<ChunkedLinearOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(ChunkedLinearOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    int64_t size = op.getChunk();
    Value q = chunk(rewriter, loc, op.getQ(), size);
    Value k = chunk(rewriter, loc, op.getK(), size);
    Value v = chunk(rewriter, loc, op.getV(), size);
    auto kType = cast<RankedTensorType>(k.getType());
    SmallVector<int64_t> stateShape(kType.getShape().begin(),
                                    kType.getShape().end() - 2);
    stateShape.push_back(kType.getShape().back());
    stateShape.push_back(cast<RankedTensorType>(v.getType()).getShape().back());
    auto stateType = RankedTensorType::get(stateShape, kType.getElementType());
    Value states = rewriter.create<ChunkStateOp>(loc, stateType, k, v,
                                                 op.getScale());
    // FLASH-pytorch's non-causal total is divided by n, k's length.
    Value lengthOf = op.getDivideByLength() ? op.getK() : Value();
    Value visible = rewriter.create<ChunkScanOp>(loc, stateType, states,
                                                 op.getCausal(), lengthOf);
    Value applied = rewriter.create<StateApplyOp>(
        loc, withFeature(q, stateShape.back()), q, visible);
    rewriter.replaceOpWithNewOp<UnchunkOp>(op, op.getType(), applied, op.getQ());
    return success();
  }
};

/// Causal linear attention's chunks: the rows of a chunk attend to each
/// other (C^2 (s + e) per chunk), and to the earlier chunks through their
/// summed K^T V state (s e per row, the state [s, e] per chunk).
constexpr int64_t kLinearChunk = 128;
/// Non-causal linear attention's: only the states, summed over all chunks
/// (as few as keep a GEMM per chunk deep and a short sequence's padding
/// cheap).
constexpr int64_t kLinearTotalChunk = 256;

/// The value whose rows `x`'s rows are: through ops that keep rows apart
/// and in place (splits, products with weights, norms, elementwise ops of
/// one operand).
Value rowSource(Value x) {
  while (Operation *op = x.getDefiningOp()) {
    if (!isa<SplitOp, DenseOp, LayerNormOp, RmsNormOp, ScaleNormOp, RopeOp,
             ScaleOffsetOp, TokenShiftOp, NegOp, SiluOp, GeluOp, ReluOp,
             SigmoidOp, ExpOp, TanhOp, SqrtOp>(op))
      break;
    x = op->getOperand(0);
  }
  return x;
}

/// `map(x)`, elementwise, in primitive ops.
Value featureMap(PatternRewriter &rewriter, Location loc, FeatureMap map,
                 Value x) {
  Type type = x.getType();
  switch (map) {
  case FeatureMap::identity: return x;
  case FeatureMap::relu: return rewriter.create<ReluOp>(loc, type, x);
  case FeatureMap::silu: return rewriter.create<SiluOp>(loc, type, x);
  case FeatureMap::exp: return rewriter.create<ExpOp>(loc, type, x);
  case FeatureMap::elu1: {
    // x + 1 for x > 0, else exp(x): relu(x) + exp(min(x, 0)), and
    // min(x, 0) = -relu(-x).
    Value negative = rewriter.create<NegOp>(
        loc, type,
        rewriter.create<ReluOp>(loc, type,
                                rewriter.create<NegOp>(loc, type, x)));
    return rewriter.create<AddOp>(loc, type,
                                  rewriter.create<ReluOp>(loc, type, x),
                                  rewriter.create<ExpOp>(loc, type, negative));
  }
  }
  llvm_unreachable("unknown feature map");
}

/// The rank-0 constant `value` of element type `element` (an op's operands
/// all have one element type: f16 and bf16 models too).
Value scalar(PatternRewriter &rewriter, Location loc, double value,
             Type element) {
  return rewriter.create<ConstantOp>(loc, RankedTensorType::get({}, element),
                                     rewriter.getF64FloatAttr(value));
}

/// sum_{j <= i} (q[i] . k[j]) v[j] in FLASH's terms: attention within
/// chunks (causal_chunk, score q . k) plus the exclusive prefix of the
/// earlier chunks' states (chunked_linear); both become chunk ops below.
/// Built attention first: with the states first (as attn-expand-layers
/// builds FLASH, whose chunk attention then starts from their product) the
/// numerator absorbed the state term and ran 0.977x the time at n = 8192,
/// but the pipeline's buffers peaked 13% higher (their order changed).
Value causalSums(PatternRewriter &rewriter, Location loc, Type type, Value q,
                 Value k, Value v, int64_t size) {
  auto local = rewriter.create<AttentionOp>(
      loc, type, q, k, v,
      MaskAttr::get(rewriter.getContext(), MaskKind::causal_chunk, size),
      Normalize::none, 1);
  {
    OpBuilder::InsertionGuard guard(rewriter);
    Block *block = local.addScoreBlock();
    rewriter.setInsertionPointToStart(block);
    rewriter.create<YieldOp>(loc, block->getArgument(0));
  }
  Value earlier = rewriter.create<ChunkedLinearOp>(
      loc, type, q, k, v, size, /*causal=*/true, /*scale=*/1.0,
      /*divide_by_length=*/false);
  return rewriter.create<AddOp>(loc, type, local, earlier);
}

/// Whether `a` and `b` have the same rows: one value, or two of the
/// function's arguments whose rows are the same dim (`attn.dims`).
bool sameRows(Value a, Value b) {
  if (a == b)
    return true;
  auto argA = dyn_cast<BlockArgument>(a), argB = dyn_cast<BlockArgument>(b);
  if (!argA || !argB || argA.getOwner() != argB.getOwner())
    return false;
  auto func = dyn_cast<func::FuncOp>(argA.getOwner()->getParentOp());
  if (!func)
    return false;
  auto rowDim = [&](BlockArgument arg) -> StringRef {
    auto dims =
        func.getArgAttrOfType<ArrayAttr>(arg.getArgNumber(), "attn.dims");
    if (!dims || dims.size() < 2)
      return "";
    auto name = dyn_cast<StringAttr>(dims[dims.size() - 2]);
    return name ? name.getValue() : "";
  };
  StringRef dim = rowDim(argA);
  return !dim.empty() && dim == rowDim(argB);
}

/// sum_j (q[i] . k[j]) v[j] over all j: the total of the chunks' states
/// (chunked_linear, not causal).
Value totalSums(PatternRewriter &rewriter, Location loc, Type type, Value q,
                Value k, Value v, int64_t size) {
  return rewriter.create<ChunkedLinearOp>(loc, type, q, k, v, size,
                                          /*causal=*/false, /*scale=*/1.0,
                                          /*divide_by_length=*/false);
}

/// Linear attention in chunks: numerator and denominator each as
/// causalSums (FLASH's form without its gating) or totalSums, the
/// denominator's values a column of ones. Causal, what the row-wise form
/// computes in O(n^2), in O(n); the chunk ops' GEMMs compute both forms'
/// states, and causal FLASH's carries (two sweeps when not causal) stream
/// them.
struct ChunkLinearAttention : OpRewritePattern<LinearAttnOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(LinearAttnOp op,
                                PatternRewriter &rewriter) const override {
    // Chunked, queries and keys are cut into the same chunks.
    if (!op.getCausal() &&
        !sameRows(rowSource(op.getQ()), rowSource(op.getK())))
      return rewriter.notifyMatchFailure(
          op, "keys that may be of another sequence than the queries");
    // Attention within chunks needs static widths (as attention does).
    for (Value x : {op.getQ(), op.getK(), op.getV()}) {
      auto type = cast<RankedTensorType>(x.getType());
      if (type.isDynamicDim(type.getRank() - 1))
        return rewriter.notifyMatchFailure(op, "a width is not static");
    }
    auto vType = cast<RankedTensorType>(op.getV().getType());
    Location loc = op.getLoc();
    Value q = featureMap(rewriter, loc, op.getFeature(), op.getQ());
    Value k = featureMap(rewriter, loc, op.getFeature(), op.getK());
    // The result's type, `values`' width.
    auto sums = [&](Value values) {
      auto resultType = cast<RankedTensorType>(op.getType());
      SmallVector<int64_t> shape(resultType.getShape());
      shape.back() = cast<RankedTensorType>(values.getType()).getShape().back();
      auto type = RankedTensorType::get(shape, resultType.getElementType());
      return op.getCausal()
                 ? causalSums(rewriter, loc, type, q, k, values, kLinearChunk)
                 : totalSums(rewriter, loc, type, q, k, values,
                             kLinearTotalChunk);
    };
    Value result = sums(op.getV());
    if (op.getNormalize()) {
      // A column of ones: v's first to the power 0 (1 for any finite
      // value; where v is not finite, so is the numerator). The feature
      // map comes before the chunks' zero padding, and the division after
      // them: padded rows are never divided.
      Value column = op.getV();
      int64_t e = vType.getShape().back();
      if (e != 1) {
        SmallVector<int64_t> shape(vType.getShape());
        shape.back() = 1;
        auto one = RankedTensorType::get(shape, vType.getElementType());
        shape.back() = e - 1;
        auto rest = RankedTensorType::get(shape, vType.getElementType());
        column = rewriter
                     .create<SplitOp>(loc, TypeRange{one, rest}, column,
                                      rewriter.getDenseI64ArrayAttr({1, e - 1}))
                     ->getResult(0);
      }
      Value ones = rewriter.create<PowOp>(
          loc, column.getType(), column,
          scalar(rewriter, loc, 0.0, vType.getElementType()));
      Value den = sums(ones);
      result = rewriter.create<DivOrZeroOp>(loc, result.getType(), result, den);
    }
    if (op.getScale() != 1.0)
      result = rewriter.create<MulOp>(
          loc, result.getType(), result,
          scalar(rewriter, loc, op.getScale(), vType.getElementType()));
    rewriter.replaceOp(op, result);
    return success();
  }
};

struct ChunkPass : public mlir::attn::impl::ChunkPassBase<ChunkPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    populateChunkPatterns(patterns);
    if (failed(applyPatternsAndFoldGreedily(getOperation(),
                                            std::move(patterns)))) {
      getOperation().emitError()
          << "internal error: attn-chunk did not converge";
      signalPassFailure();
    }
  }
};

} // namespace

void mlir::attn::populateChunkPatterns(RewritePatternSet &patterns) {
  patterns.add<ChunkAttention, ChunkGlobalTerm, ChunkLinearAttention>(
      patterns.getContext());
}
