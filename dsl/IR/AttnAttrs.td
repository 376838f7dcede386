//===- AttnAttrs.td - attn dialect enums and attributes ----*- tablegen -*-===//
//
// Part of attnc, a compiler for attention layers.
//
//===----------------------------------------------------------------------===//
//
// This file defines the enum attributes of the attn dialect (printed as bare
// keywords inside op formats) and `#attn.mask<...>`, the structural mask of
// `attn.attention`.
//
//===----------------------------------------------------------------------===//

#ifndef ATTNC_DSL_IR_ATTNATTRS_TD
#define ATTNC_DSL_IR_ATTNATTRS_TD

include "dsl/IR/AttnDialect.td"
include "mlir/IR/EnumAttr.td"

class Attn_Attr<string name, string attrMnemonic, list<Trait> traits = []>
    : AttrDef<Attn_Dialect, name, traits> {
  let mnemonic = attrMnemonic;
}

//===----------------------------------------------------------------------===//
// Enums
//===----------------------------------------------------------------------===//

def Attn_NormKind : I32EnumAttr<"NormKind", "normalisation of a layer input", [
    I32EnumAttrCase<"layer_norm", 0>,
    I32EnumAttrCase<"scale_norm", 1>,
    I32EnumAttrCase<"rms_norm", 2>]> {
  let cppNamespace = "::mlir::attn";
  let genSpecializedAttr = 0;
  let description = [{
    `layer_norm`: (x - mean) / sqrt(var + eps) * w + b over the last axis
    (biased variance); `scale_norm`: x * rsqrt(mean(x^2) + eps) * alpha with
    one scalar alpha; `rms_norm`: x * rsqrt(mean(x^2) + eps) * w.
  }];
}
def Attn_NormKindAttr : EnumAttr<Attn_Dialect, Attn_NormKind, "norm_kind">;

def Attn_RelPosKind : I32EnumAttr<"RelPosKind",
    "relative position bias of a GAU/FLASH layer", [
    I32EnumAttrCase<"none", 0>,
    I32EnumAttrCase<"toeplitz", 1>]> {
  let cppNamespace = "::mlir::attn";
  let genSpecializedAttr = 0;
}
def Attn_RelPosKindAttr : EnumAttr<Attn_Dialect, Attn_RelPosKind, "rel_pos_kind">;

def Attn_FeatureMap : I32EnumAttr<"FeatureMap",
    "feature map phi of linear attention", [
    I32EnumAttrCase<"identity", 0>,
    I32EnumAttrCase<"elu1", 1>,
    I32EnumAttrCase<"relu", 2>,
    I32EnumAttrCase<"silu", 3>,
    I32EnumAttrCase<"exp", 4>]> {
  let cppNamespace = "::mlir::attn";
  let genSpecializedAttr = 0;
  let description = [{
    `identity`: phi(x) = x; `elu1`: elu(x) + 1; `relu`: max(x, 0);
    `silu`: x * sigmoid(x); `exp`: exp(x).
  }];
}
def Attn_FeatureMapAttr : EnumAttr<Attn_Dialect, Attn_FeatureMap, "feature_map">;

def Attn_Activation : I32EnumAttr<"Activation", "activation of a GLU FFN", [
    I32EnumAttrCase<"silu", 0>,
    I32EnumAttrCase<"gelu", 1>,
    I32EnumAttrCase<"relu", 2>,
    I32EnumAttrCase<"sigmoid", 3>,
    I32EnumAttrCase<"tanh", 4>]> {
  let cppNamespace = "::mlir::attn";
  let genSpecializedAttr = 0;
}
def Attn_ActivationAttr : EnumAttr<Attn_Dialect, Attn_Activation, "activation">;

def Attn_Normalize : I32EnumAttr<"Normalize",
    "row normalisation of attention scores", [
    I32EnumAttrCase<"none", 0>,
    I32EnumAttrCase<"softmax", 1>]> {
  let cppNamespace = "::mlir::attn";
  let genSpecializedAttr = 0;
}
def Attn_NormalizeAttr : EnumAttr<Attn_Dialect, Attn_Normalize, "normalize">;

def Attn_RopeMode : I32EnumAttr<"RopeMode", "pairing of rotary dims", [
    I32EnumAttrCase<"half", 0>,
    I32EnumAttrCase<"interleaved", 1>]> {
  let cppNamespace = "::mlir::attn";
  let genSpecializedAttr = 0;
  let description = [{
    `half`: dim i is paired with dim i + r/2 (the FLASH paper's layout);
    `interleaved`: dim 2i is paired with dim 2i + 1.
  }];
}
def Attn_RopeModeAttr : EnumAttr<Attn_Dialect, Attn_RopeMode, "rope_mode">;

/// Kind of `#attn.mask`; a plain enum (no attribute of its own).
def Attn_MaskKind : I32EnumAttr<"MaskKind", "kind of a structural mask", [
    I32EnumAttrCase<"none", 0>,
    I32EnumAttrCase<"causal", 1>,
    I32EnumAttrCase<"window", 2>,
    I32EnumAttrCase<"chunk", 3>,
    I32EnumAttrCase<"band", 4>,
    I32EnumAttrCase<"causal_chunk", 5>]> {
  let cppNamespace = "::mlir::attn";
  let genSpecializedAttr = 0;
}

//===----------------------------------------------------------------------===//
// #attn.mask
//===----------------------------------------------------------------------===//

def Attn_MaskAttr : Attn_Attr<"Mask", "mask"> {
  let summary = "structural mask of attn.attention: kind and size";
  let description = [{
    Which keys `j` a query `i` sees (i, j are 0-based positions on the
    sequence axes of q and k):

    | mask | keeps (i, j) iff |
    |---|---|
    | `#attn.mask<none>` | always |
    | `#attn.mask<causal>` | j <= i (diagonal kept) |
    | `#attn.mask<window W>` | 0 <= i - j < W (causal sliding window of W keys, diagonal kept) |
    | `#attn.mask<chunk C>` | i / C == j / C (integer division: block-diagonal, non-causal inside a block) |
    | `#attn.mask<band W>` | \|i - j\| < W (symmetric band of 2W - 1 keys) |
    | `#attn.mask<causal_chunk C>` | i / C == j / C and j <= i (causal inside each block; FLASH's local part) |

    Other masks are written in the `score` region instead (returning 0, or
    -inf under softmax). `size` is 0 for `none` and `causal` and must be >= 1
    for the other kinds.

    C++: `MaskAttr::get(ctx, MaskKind::window, 64)`,
    `MaskAttr::get(ctx, MaskKind::causal, 0)`.
  }];
  let parameters = (ins
    EnumParameter<Attn_MaskKind>:$kind,
    "int64_t":$size
  );
  let hasCustomAssemblyFormat = 1;
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    /// True if the mask keeps every (i, j).
    bool isNone() const { return getKind() == MaskKind::none; }
  }];
}

#endif // ATTNC_DSL_IR_ATTNATTRS_TD
