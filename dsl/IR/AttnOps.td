//===- AttnOps.td - attn dialect operations ----------------*- tablegen -*-===//
//
// Part of attnc, a compiler for attention layers.
//
//===----------------------------------------------------------------------===//
//
// This file is the root of the op definitions of the attn dialect: it pulls in
// the layer ops (AttnLayerOps.td), the primitive ops (AttnPrimitiveOps.td),
// the chunk-form ops (AttnChunkOps.td) and the fused kernels
// (AttnKernelOps.td)
// so that one mlir-tblgen run generates all of them.
//
//===----------------------------------------------------------------------===//

#ifndef ATTNC_DSL_IR_ATTNOPS_TD
#define ATTNC_DSL_IR_ATTNOPS_TD

include "dsl/IR/AttnDialect.td"
include "dsl/IR/AttnAttrs.td"
include "dsl/IR/AttnInterfaces.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "mlir/Interfaces/ControlFlowInterfaces.td"
include "mlir/Interfaces/InferTypeOpInterface.td"

include "dsl/IR/AttnLayerOps.td"
include "dsl/IR/AttnPrimitiveOps.td"
include "dsl/IR/AttnChunkOps.td"
include "dsl/IR/AttnKernelOps.td"

#endif // ATTNC_DSL_IR_ATTNOPS_TD
