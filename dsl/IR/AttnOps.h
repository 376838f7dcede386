//===- AttnOps.h - attn dialect operations ----------------------*- C++ -*-===//
//
// Part of attnc, a compiler for attention layers.
//
//===----------------------------------------------------------------------===//
//
// This file declares the ops of the attn dialect (layer ops and primitives),
// generated from AttnOps.td. Including it also declares the dialect.
//
//===----------------------------------------------------------------------===//

#ifndef ATTNC_DSL_IR_ATTNOPS_H
#define ATTNC_DSL_IR_ATTNOPS_H

#include "dsl/IR/AttnDialect.h"

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/Interfaces/ControlFlowInterfaces.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "dsl/IR/AttnAttrs.h"
#include "dsl/IR/AttnTraits.h"

#include "dsl/IR/AttnInterfaces.h.inc"

#define GET_OP_CLASSES
#include "dsl/IR/AttnOps.h.inc"

namespace mlir::attn {
/// Whether `op` computes each result element from the same element of its
/// operands (broadcast rows allowed): the binary and unary ops and
/// attn.scale_offset (trait Attn_ElementwiseTrait).
bool isElementwise(Operation *op);
/// Whether `op` is an activation (unary, applied after a product; trait
/// Attn_ActivationTrait).
bool isActivation(Operation *op);
/// Whether `op` is a product whose lowering fuses a prologue and an
/// epilogue (attn.dense, attn.matmul: ProductOpInterface's
/// fusesOperandStages).
bool isProduct(Operation *op);
/// The user of `value`'s only use, or null.
Operation *getOnlyUser(Value value);
/// The product whose output stage applies `op`, or null: `op` is an
/// activation of a product used only by it, or an add of such a product and
/// a value of the same type that is ready when the product runs (defined
/// outside the product's block or before it). The product is in `op`'s
/// block. attn-fuse groups by it, attn-tile inlines by it, codegen fuses by
/// it.
Operation *getEpilogueProduct(Operation *op);
/// The attention whose accumulators the product with left operand `lhs`
/// reads through FLASH's gated sum, or null: `lhs` = u * (unchunk(attention)
/// + unchunk(state_apply)), an attention without softmax, each value on the
/// way read once.
/// attn-tile sizes the product's row blocks in whole query blocks of it, so
/// that codegen can compute the attention in them (lowerTiledAttention).
AttentionOp getGatedChunkAttention(Value lhs);
/// Whether `op` normalises rows (layer_norm, rms_norm, scale_norm): row
/// statistics, then an elementwise stage (trait Attn_NormTrait).
bool isNorm(Operation *op);
/// Whether `op` computes a stage that codegen schedules, so that it must
/// carry an `attn.schedule` (attn-tile gives it one): a product, an
/// attention or a row-wise stage with one result of rank >= 1. Views,
/// constants, scalar ops and layer ops have none.
bool needsSchedule(Operation *op);

} // namespace mlir::attn

#endif // ATTNC_DSL_IR_ATTNOPS_H
