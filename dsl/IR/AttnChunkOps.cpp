//===- AttnChunkOps.cpp - verifiers of the chunk-form ops -----------------===//
//
// Part of attnc, a compiler for attention layers.
//
//===----------------------------------------------------------------------===//
//
// This file implements the verifiers of attn.chunk, attn.unchunk,
// attn.chunk_state, attn.chunk_scan and attn.state_apply.
//
//===----------------------------------------------------------------------===//

#include "dsl/IR/AttnOps.h"
#include "dsl/IR/AttnVerify.h"

using namespace mlir;
using namespace mlir::attn;
using namespace mlir::attn::detail;

/// Leading (batch) dims of two tensors agree up to `count` axes.
static LogicalResult verifyLeading(Operation *op, RankedTensorType a,
                                   RankedTensorType b, int64_t count,
                                   StringRef what) {
  for (int64_t i = 0; i < count; ++i)
    if (!dimsCompatible(a.getDimSize(i), b.getDimSize(i)))
      return op->emitOpError() << what << " differ at axis " << i << ": "
                               << a.getDimSize(i) << " and " << b.getDimSize(i);
  return success();
}

LogicalResult ChunkOp::verify() {
  auto x = getX().getType();
  if (x.getRank() < 2)
    return emitOpError() << "needs rank >= 2 but x is " << x;
  if (getChunk() < 1)
    return emitOpError() << "chunk must be >= 1 but is " << getChunk();
  int64_t n = x.getDimSize(x.getRank() - 2);
  SmallVector<int64_t> expected(x.getShape().begin(), x.getShape().end() - 2);
  expected.push_back(ShapedType::isDynamic(n) ? ShapedType::kDynamic
                                              : (n + getChunk() - 1) / getChunk());
  expected.push_back(getChunk());
  expected.push_back(x.getShape().back());
  if (failed(verifySameElementType(*this)))
    return failure();
  if (getType().getRank() != x.getRank() + 1)
    return emitOpError() << "result must have rank " << x.getRank() + 1
                         << " but has " << getType().getRank();
  return verifyResultShape(*this, "result", getType(), expected);
}

LogicalResult UnchunkOp::verify() {
  auto y = getY().getType(), like = getLike().getType();
  if (y.getRank() < 3)
    return emitOpError() << "needs y of rank >= 3 but y is " << y;
  if (like.getRank() != y.getRank() - 1)
    return emitOpError() << "like must have rank " << y.getRank() - 1
                         << " but has " << like.getRank();
  if (failed(verifyLeading(*this, y, like, y.getRank() - 3, "leading dims")))
    return failure();
  SmallVector<int64_t> expected(like.getShape().begin(), like.getShape().end());
  expected.back() = y.getShape().back();
  return verifyResultShape(*this, "result", getType(), expected);
}

LogicalResult ChunkStateOp::verify() {
  auto k = getK().getType(), v = getV().getType();
  if (k.getRank() < 3 || v.getRank() != k.getRank())
    return emitOpError() << "needs k and v of the same rank >= 3 but has " << k
                         << " and " << v;
  if (failed(verifyLeading(*this, k, v, k.getRank() - 1, "k and v")) ||
      failed(verifySameElementType(*this)))
    return failure();
  SmallVector<int64_t> expected(k.getShape().begin(), k.getShape().end() - 2);
  expected.push_back(k.getShape().back());
  expected.push_back(v.getShape().back());
  return verifyResultShape(*this, "result", getType(), expected);
}

LogicalResult ChunkScanOp::verify() {
  if (getStates().getType().getRank() < 3)
    return emitOpError() << "needs rank >= 3 but states are "
                         << getStates().getType();
  if (Value length = getLengthOf()) {
    if (getExclusive())
      return emitOpError() << "length_of needs exclusive = false";
    if (cast<RankedTensorType>(length.getType()).getRank() < 2)
      return emitOpError() << "length_of needs rank >= 2 but is "
                           << length.getType();
  }
  return success();
}

LogicalResult StateApplyOp::verify() {
  auto q = getQ().getType(), s = getStates().getType();
  if (q.getRank() < 3 || s.getRank() != q.getRank())
    return emitOpError() << "needs q and states of the same rank >= 3 but has "
                         << q << " and " << s;
  if (failed(verifyLeading(*this, q, s, q.getRank() - 2, "leading dims")) ||
      failed(verifySameElementType(*this)))
    return failure();
  if (!dimsCompatible(q.getShape().back(), s.getDimSize(s.getRank() - 2)))
    return emitOpError() << "query width " << q.getShape().back()
                         << " differs from the state's " << s.getDimSize(s.getRank() - 2);
  SmallVector<int64_t> expected(q.getShape().begin(), q.getShape().end() - 1);
  expected.push_back(s.getShape().back());
  return verifyResultShape(*this, "result", getType(), expected);
}
