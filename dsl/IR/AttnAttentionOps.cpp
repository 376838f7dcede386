//===- AttnAttentionOps.cpp - attn attention primitives -------------------===//
//
// Part of attnc, a compiler for attention layers.
//
//===----------------------------------------------------------------------===//
//
// This file implements the verifiers of attn.attention (shapes, heads and the
// `score` region), the positional-bias scalar ops used inside that region and
// attn.linear_attn, and the helper that builds the score block.
//
//===----------------------------------------------------------------------===//

#include "dsl/IR/AttnOps.h"

#include "dsl/IR/AttnVerify.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;
using namespace mlir::attn;
using namespace mlir::attn::detail;

//===----------------------------------------------------------------------===//
// AttentionOp
//===----------------------------------------------------------------------===//

/// The argument types of the score block: (qk, i, j, n).
static SmallVector<Type, 4> getScoreArgumentTypes(MLIRContext *context) {
  Builder builder(context);
  Type index = builder.getIndexType();
  return {builder.getF32Type(), index, index, index};
}

Block *AttentionOp::addScoreBlock() {
  assert(getScore().empty() && "the score region already has a block");
  SmallVector<Type, 4> types = getScoreArgumentTypes(getContext());
  SmallVector<Location, 4> locations(types.size(), getLoc());
  Block *block = new Block();
  getScore().push_back(block);
  block->addArguments(types, locations);
  return block;
}

/// Verifies that `score` is one block (qk: f32, i, j, n: index) ending in an
/// attn.yield of one f32.
static LogicalResult verifyScoreRegion(AttentionOp op) {
  Region &score = op.getScore();
  if (!llvm::hasSingleElement(score))
    return op.emitOpError() << "score region must have exactly one block but "
                               "has "
                            << score.getBlocks().size();
  Block &block = score.front();
  SmallVector<Type, 4> expected = getScoreArgumentTypes(op.getContext());
  if (!llvm::equal(block.getArgumentTypes(), expected)) {
    std::string types;
    llvm::raw_string_ostream os(types);
    llvm::interleaveComma(block.getArgumentTypes(), os);
    return op.emitOpError() << "score region arguments must be (f32, index, "
                               "index, index) but are ("
                            << os.str() << ")";
  }
  if (block.empty())
    return op.emitOpError() << "score region must end in attn.yield but is "
                               "empty";
  auto yield = dyn_cast<YieldOp>(block.back());
  if (!yield)
    return op.emitOpError() << "score region must end in attn.yield but ends "
                               "in "
                            << block.back().getName();
  Type yielded = yield.getValue().getType();
  if (!yielded.isF32())
    return op.emitOpError() << "score region must yield f32 but yields "
                            << yielded;
  return success();
}

LogicalResult AttentionOp::verify() {
  RankedTensorType q = getQ().getType(), v = getV().getType();
  SmallVector<int64_t> expected;
  if (failed(verifySameElementType(*this)) ||
      failed(verifyQueryKeyValue(*this, q, getK().getType(), v, expected)) ||
      failed(verifyPositive(*this, "heads", getHeads())) ||
      failed(verifyHeadsDivide(*this, getHeads(), "q feature dim",
                               q.getShape().back())) ||
      failed(verifyHeadsDivide(*this, getHeads(), "v feature dim",
                               v.getShape().back())) ||
      failed(verifyResultShape(*this, "result", getType(), expected)))
    return failure();
  return verifyScoreRegion(*this);
}

//===----------------------------------------------------------------------===//
// Positional bias inside the score region
//===----------------------------------------------------------------------===//

LogicalResult RelPosBiasOp::verify() {
  int64_t maxLen = getMaxLen();
  if (failed(verifyPositive(*this, "max_len", maxLen)))
    return failure();
  return verifyVector(*this, "w", getW().getType(), 2 * maxLen - 1,
                      "2 * max_len - 1");
}

LogicalResult T5BiasOp::verify() {
  int64_t buckets = getNumBuckets(), maxDistance = getMaxDistance();
  if (failed(verifyT5Buckets(*this, getCausal(), buckets, maxDistance)))
    return failure();
  return verifyVector(*this, "emb", getEmb().getType(), buckets,
                      "num_buckets");
}

//===----------------------------------------------------------------------===//
// LinearAttnOp
//===----------------------------------------------------------------------===//

LogicalResult ChunkedLinearOp::verify() {
  RankedTensorType q = getQ().getType(), k = getK().getType();
  SmallVector<int64_t> expected;
  if (failed(verifySameElementType(*this)) ||
      failed(verifyQueryKeyValue(*this, q, k, getV().getType(), expected)))
    return failure();
  if (getChunk() < 1)
    return emitOpError() << "chunk must be >= 1 but is " << getChunk();
  if (getDivideByLength() && getCausal())
    return emitOpError() << "divide_by_length needs causal = false";
  int64_t n = q.getDimSize(q.getRank() - 2), m = k.getDimSize(k.getRank() - 2);
  if (!dimsCompatible(n, m))
    return emitOpError() << "chunked linear attention needs equal query and "
                            "key lengths but has "
                         << n << " and " << m;
  return verifyResultShape(*this, "result", getType(), expected);
}

LogicalResult LinearAttnOp::verify() {
  RankedTensorType q = getQ().getType(), k = getK().getType();
  SmallVector<int64_t> expected;
  if (failed(verifySameElementType(*this)) ||
      failed(verifyQueryKeyValue(*this, q, k, getV().getType(), expected)))
    return failure();
  int64_t n = q.getDimSize(q.getRank() - 2), m = k.getDimSize(k.getRank() - 2);
  if (getCausal() && !dimsCompatible(n, m))
    return emitOpError() << "causal linear attention needs equal query and "
                            "key lengths but has "
                         << n << " and " << m;
  return verifyResultShape(*this, "result", getType(), expected);
}
