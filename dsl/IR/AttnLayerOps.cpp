//===- AttnLayerOps.cpp - attn layer-level operations ---------------------===//
//
// Part of attnc, a compiler for attention layers.
//
//===----------------------------------------------------------------------===//
//
// This file implements the verifiers of the layer ops (gau, flash, mhsa,
// linear_attention, local_attention, glu_ffn): the rules all layers share
// (detail::verifyLayerOp) and then each op's sizes.
//
//===----------------------------------------------------------------------===//

#include "dsl/IR/AttnOps.h"

#include "dsl/IR/AttnVerify.h"

using namespace mlir;
using namespace mlir::attn;
using namespace mlir::attn::detail;

/// Checks `s` of GAU/FLASH: positive, and even when RoPE rotates all of it
/// (rope_dims = 0).
static LogicalResult verifyQueryKeyDim(Operation *op, int64_t s, bool rope,
                                       int64_t ropeDims) {
  if (failed(verifyPositive(op, "s", s)))
    return failure();
  if (rope && ropeDims == 0 && s % 2 != 0)
    return op->emitOpError() << "s must be even when rope is on but is " << s;
  return success();
}

/// Checks the FLASH-pytorch options GAU and FLASH share (AttnLayerOps.td).
template <typename GatedLayerOp>
static LogicalResult verifyGatedOptions(GatedLayerOp op) {
  if (op.getRelPos() == RelPosKind::t5) {
    int64_t buckets = op.getNumBuckets();
    if (buckets < 2 || buckets % 2 != 0)
      return op.emitOpError()
             << "num_buckets must be even and >= 2 but is " << buckets;
    if (failed(verifyT5Buckets(op, op.getCausal(), buckets,
                               op.getMaxDistance())))
      return failure();
  }
  int64_t dims = op.getRopeDims();
  if (dims < 0 || dims % 2 != 0 || dims > op.getS())
    return op.emitOpError() << "rope_dims must be even, >= 0 and <= s = "
                            << op.getS() << " but is " << dims;
  if (op.getNormClamp() && op.getNorm() != NormKind::scale_norm)
    return op.emitOpError() << "norm_clamp needs norm = scale_norm but norm "
                            << "is " << stringifyNormKind(op.getNorm());
  return success();
}

/// Checks `heads` of the multi-head layers: positive and dividing d.
static LogicalResult verifyLayerHeads(Operation *op, int64_t heads,
                                      int64_t d) {
  if (failed(verifyPositive(op, "heads", heads)))
    return failure();
  return verifyHeadsDivide(op, heads, "feature dim", d);
}

LogicalResult GauOp::verify() {
  if (failed(verifyLayerOp(*this, getX().getType(), getLayerName(),
                           getEps())) ||
      failed(verifyPositive(*this, "e", getE())) ||
      failed(verifyQueryKeyDim(*this, getS(), getRope(), getRopeDims())) ||
      failed(verifyGatedOptions(*this)))
    return failure();
  return verifyPositive(*this, "max_len", getMaxLen());
}

LogicalResult FlashOp::verify() {
  if (failed(verifyLayerOp(*this, getX().getType(), getLayerName(),
                           getEps())) ||
      failed(verifyPositive(*this, "e", getE())) ||
      failed(verifyQueryKeyDim(*this, getS(), getRope(), getRopeDims())) ||
      failed(verifyGatedOptions(*this)))
    return failure();
  if (getLinByLength() && getCausal())
    return emitOpError() << "lin_by_length needs causal = false";
  return verifyPositive(*this, "chunk", getChunk());
}

LogicalResult MhsaOp::verify() {
  if (failed(verifyLayerOp(*this, getX().getType(), getLayerName(),
                           getEps())))
    return failure();
  return verifyLayerHeads(*this, getHeads(), getFeatureDim());
}

LogicalResult LinearAttentionOp::verify() {
  if (failed(verifyLayerOp(*this, getX().getType(), getLayerName(),
                           getEps())))
    return failure();
  return verifyLayerHeads(*this, getHeads(), getFeatureDim());
}

LogicalResult LocalAttentionOp::verify() {
  if (failed(verifyLayerOp(*this, getX().getType(), getLayerName(),
                           getEps())) ||
      failed(verifyLayerHeads(*this, getHeads(), getFeatureDim())))
    return failure();
  return verifyPositive(*this, "window", getWindow());
}

LogicalResult GluFfnOp::verify() {
  if (failed(verifyLayerOp(*this, getX().getType(), getLayerName(),
                           getEps())))
    return failure();
  return verifyPositive(*this, "hidden", getHidden());
}
