//===- AttentionFusion.h - FLASH's chunk attention fused --------*- C++ -*-===//
//
// This file declares how codegen fuses FLASH's chunk attention with the ops
// around it: the chunk states' term its accumulators start from, and the
// output projection whose row blocks compute it.
//
//===----------------------------------------------------------------------===//
#ifndef ATTNC_CODEGEN_ATTENTIONFUSION_H
#define ATTNC_CODEGEN_ATTENTIONFUSION_H

#include "codegen/LoweringImpl.h"

namespace attnc::codegen {

/// The chunk states' term that FLASH adds to its chunk attention: the sum
/// unchunk(attention) + unchunk(state_apply(lq, states)).
struct StateTerm {
  mlir::attn::StateApplyOp product;
  mlir::Operation *sum = nullptr;
  mlir::Value attended; ///< The unchunked attention the sum adds it to.
};

/// The state term of `attention` when the tiled attention can add
/// lq . states in its accumulators instead (one stage fewer, and no n x e
/// buffer written and read again): each op on the way has one use, the two
/// products have the same type and rows, and the state product's operands
/// are lowered already (attn-expand-layers builds FLASH's linear term
/// first). Null `product` otherwise.
StateTerm absorbableStateTerm(const Lowering &lowering,
                              mlir::attn::AttentionOp attention);

/// The product that computes `attention`'s accumulators in its row blocks
/// (Lowering::computeInRowBlocks), or null. It is FLASH's output
/// projection: its staged left operand is the gated sum u * (attention +
/// state term) (getGatedChunkAttention) whose state term the accumulators
/// absorb, on a CPU, in row blocks of whole query blocks of `block` rows
/// (attn-tile chooses them so), whose query blocks tile each chunk's
/// `rows`; in whole-sequence pipelines (not streamed, decoded or
/// autoscheduled). The attention's n x e result is then never stored: each
/// row block computes its query blocks' accumulators and stages u times
/// them as the product's left operand; its tasks are the product's row
/// blocks of every batch entry (examples/flash.attn at n = 8192: 0.967x the
/// time causal, 0.990x non-causal, 21% less peak memory;
/// docs/performance.md).
mlir::Operation *rowBlockProduct(const Lowering &lowering,
                                 mlir::attn::AttentionOp attention,
                                 const StateTerm &absorbed, int block,
                                 const Halide::Expr &rows);

} // namespace attnc::codegen

#endif // ATTNC_CODEGEN_ATTENTIONFUSION_H
