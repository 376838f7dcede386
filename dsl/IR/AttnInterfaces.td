//===- AttnInterfaces.td - classes of attn ops -------------*- tablegen -*-===//
//
// Part of attnc, a compiler for attention layers.
//
//===----------------------------------------------------------------------===//
//
// This file defines the classes of attn ops that the passes and codegen ask
// about: traits (elementwise, activation, norm, row-wise stage) and the
// product interface (a GEMM-shaped op with its operands and depth). An op
// says which classes it is in where it is defined; C++ asks with
// isElementwise, isActivation, isNorm, isProduct (AttnOps.h) or
// dyn_cast<ProductOpInterface>.
//
//===----------------------------------------------------------------------===//

#ifndef ATTNC_DSL_IR_ATTNINTERFACES_TD
#define ATTNC_DSL_IR_ATTNINTERFACES_TD

include "mlir/IR/OpBase.td"

/// A trait of attn ops (C++ in dsl/IR/AttnTraits.h).
class Attn_OpTrait<string name> : NativeOpTrait<name> {
  let cppNamespace = "::mlir::attn::OpTrait";
}

/// Each result element comes from the same element of the operands
/// (broadcast rows allowed): attn-fuse groups such ops and attn-tile may
/// compute them inside another op's loops.
def Attn_ElementwiseTrait : Attn_OpTrait<"Elementwise">;
/// A unary function applied after a product (silu, gelu, relu, sigmoid,
/// exp, tanh): it can be a product's epilogue.
def Attn_ActivationTrait : Attn_OpTrait<"Activation">;
/// Normalises rows over the last axis: row statistics, then an elementwise
/// stage (layer_norm, rms_norm, scale_norm).
def Attn_NormTrait : Attn_OpTrait<"Norm">;
/// Computed by loops over its result's rows (`strategy = loops`):
/// elementwise ops, norms, rope, linear attention and the chunk form's
/// re-layout and scan.
def Attn_RowwiseStageTrait : Attn_OpTrait<"RowwiseStage">;
/// A layer template (gau, flash, mhsa, ...): one input, one result of its
/// type, weights named after its `layer_name`. attn-outline-layers compiles
/// each configuration used more than once as one function.
def Attn_LayerTrait : Attn_OpTrait<"Layer">;

def Attn_ProductOpInterface : OpInterface<"ProductOpInterface"> {
  let cppNamespace = "::mlir::attn";
  let description = [{
    A GEMM-shaped op: each result element is a sum over a reduction axis of
    products of a left and a right operand (attn.dense, attn.matmul, and
    the chunk form's attn.chunk_state and attn.state_apply). attn-tile
    gives it `strategy = gemm` (register tiles and reduction blocks) from
    its depth.
  }];
  let methods = [
    InterfaceMethod<
      "The left operand: [batch..., rows, depth] in the product's terms "
      "(attn.chunk_state reads its keys transposed).",
      "::mlir::Value", "getProductLhs">,
    InterfaceMethod<
      "The right operand: [batch..., depth, columns], or [depth, columns] "
      "when every batch entry shares it (a weight).",
      "::mlir::Value", "getProductRhs">,
    InterfaceMethod<
      "The length of the reduction axis (ShapedType::kDynamic if unknown).",
      "int64_t", "getProductDepth">,
    InterfaceMethod<
      "Whether the product's lowering can compute an elementwise producer of "
      "its left operand inside its panels (a prologue) and an activation or "
      "residual add in its output stage (an epilogue); such a product may "
      "stage its left operand per row block (`stage_lhs`).",
      "bool", "fusesOperandStages">,
  ];
}

#endif // ATTNC_DSL_IR_ATTNINTERFACES_TD
