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
    if (op.getNormalize() != Normalize::none)
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
        Normalize::none, op.getHeads());
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
  patterns.add<ChunkAttention, ChunkGlobalTerm>(patterns.getContext());
}
