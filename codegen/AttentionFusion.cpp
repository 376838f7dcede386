//===- AttentionFusion.cpp - FLASH's chunk attention fused ----------------===//
//
// This file implements the fusion decisions of AttentionFusion.h: which
// state term the chunk attention's accumulators absorb, and which product
// computes the attention in its row blocks. lowerTiledAttention applies
// them.
//
//===----------------------------------------------------------------------===//
#include "codegen/AttentionFusion.h"
#include "codegen/Gemm.h"

namespace attnc::codegen {

using namespace Halide;
namespace attn = mlir::attn;

StateTerm absorbableStateTerm(const Lowering &lowering,
                              attn::AttentionOp attention) {
  auto ours = mlir::dyn_cast_or_null<attn::UnchunkOp>(
      attn::getOnlyUser(attention.getResult()));
  auto sum = ours ? mlir::dyn_cast_or_null<attn::AddOp>(
                        attn::getOnlyUser(ours.getResult()))
                  : nullptr;
  if (!sum || sum.getType() != ours.getType())
    return {};
  mlir::Value other = sum->getOperand(sum->getOperand(0) == ours.getResult());
  auto theirs = other.getDefiningOp<attn::UnchunkOp>();
  auto state =
      theirs ? theirs.getY().getDefiningOp<attn::StateApplyOp>() : nullptr;
  if (!state || !other.hasOneUse() || !state->hasOneUse() ||
      state.getType() != attention.getType() ||
      theirs.getType() != ours.getType())
    return {};
  // Lowered already: the state product (whose stage the attention then
  // replaces) and what it reads, and the rows both unchunk like.
  for (mlir::Value value : {state.getQ(), state.getStates(), state.getResult(),
                            ours.getLike(), theirs.getLike()})
    if (!lowering.has(value))
      return {};
  // The same rows: both unchunk like tensors of one sequence length.
  const HTensor &a = lowering.get(ours.getLike()),
                &b = lowering.get(theirs.getLike());
  size_t rank = a.rank();
  if (b.rank() != rank ||
      !Internal::equal(a.extents[rank - 2], b.extents[rank - 2]))
    return {};
  return {state, sum, ours.getResult()};
}

mlir::Operation *rowBlockProduct(const Lowering &lowering,
                                 attn::AttentionOp attention,
                                 const StateTerm &absorbed, int block,
                                 const Expr &rows) {
  if (!absorbed.product || lowering.options.gpu || lowering.streaming())
    return nullptr;
  const int64_t *chunk = Internal::as_const_int(rows);
  if (!chunk || *chunk % block != 0)
    return nullptr;
  mlir::Value sum = absorbed.sum->getResult(0);
  auto gate = mlir::dyn_cast_or_null<attn::MulOp>(attn::getOnlyUser(sum));
  if (!gate || attn::getGatedChunkAttention(gate.getResult()) != attention)
    return nullptr;
  // The gate is computed in the product's staged operand (an inlined
  // member of its kernel), not a stage of its own that would read the
  // accumulators outside the product's loops.
  auto product = mlir::dyn_cast_or_null<attn::ProductOpInterface>(
      attn::getOnlyUser(gate.getResult()));
  attn::ScheduleAttr gateAttr = attn::ScheduleAttr::lookup(gate);
  if (!product || product.getProductLhs() != gate.getResult() ||
      product->getBlock() != gate->getBlock() || !gateAttr ||
      gateAttr.getCompute() != attn::ComputeAt::inlined)
    return nullptr;
  if (!computesInRowBlocks(lowering, product) ||
      attn::ScheduleAttr::lookup(product).getRowBlock() % block != 0)
    return nullptr;
  return product;
}

} // namespace attnc::codegen
