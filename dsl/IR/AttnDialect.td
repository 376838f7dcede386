//===- AttnDialect.td - the attn dialect, base classes -----*- tablegen -*-===//
//
// Part of attnc, a compiler for attention layers.
//
//===----------------------------------------------------------------------===//
//
// This file declares the `attn` dialect, the base class of its ops, the
// tensor type constraints they share and the attribute kinds whose C++ getters
// return plain `int64_t` / `double` values (so the ODS builders take them).
//
//===----------------------------------------------------------------------===//

#ifndef ATTNC_DSL_IR_ATTNDIALECT_TD
#define ATTNC_DSL_IR_ATTNDIALECT_TD

include "mlir/IR/OpBase.td"
include "mlir/IR/AttrTypeBase.td"

def Attn_Dialect : Dialect {
  let name = "attn";
  let cppNamespace = "::mlir::attn";
  let summary = "Attention layers (GAU, FLASH, MHSA, ...) and their primitives";
  let description = [{
    The `attn` dialect holds two levels of IR in one dialect:

    - layer ops (`attn.gau`, `attn.flash`, `attn.mhsa`, `attn.linear_attention`,
      `attn.local_attention`, `attn.glu_ffn`) whose weights are implicit and
      named `<layer_name>.<part>`;
    - primitive ops (`attn.weight`, `attn.dense`, `attn.split`, norms,
      `attn.rope`, `attn.attention` with a scalar `score` region, ...) that
      `attn-expand-layers` produces from the layer ops.

    Values are builtin ranked tensors of f32 (f16/bf16 accepted by the type
    constraints); runtime dims (sequence, batch) are dynamic (`?`). The
    sequence axis is axis -2 and the feature axis is axis -1.

    A model is a `func.func` carrying the discardable attributes `attn.model`,
    `attn.runtime_dims`, and `attn.name` / `attn.dims` on its arguments and
    results; the dialect verifies them (see `docs/dialect.md`). A layer
    function (attn-outline-layers) is a private `func.func` with
    `attn.layer_prefix`, called by `func.call`s with `attn.layer`; its
    weight arguments carry `attn.weight` (attn-hoist-weights).
  }];
  let dependentDialects = [
    "::mlir::func::FuncDialect",
    "::mlir::arith::ArithDialect",
    "::mlir::math::MathDialect"
  ];
  let useDefaultAttributePrinterParser = 1;
  let hasOperationAttrVerify = 1;
  let hasRegionArgAttrVerify = 1;
  let hasRegionResultAttrVerify = 1;
  let extraClassDeclaration = [{
    /// Unit attribute marking a `func.func` as an attnc model.
    static ::llvm::StringRef getModelAttrName() { return "attn.model"; }
    /// Dictionary `{name = "seq" | "batch"}` of the model's runtime dims.
    static ::llvm::StringRef getRuntimeDimsAttrName() {
      return "attn.runtime_dims";
    }
    /// String attribute on a model argument/result: its `.attn` name.
    static ::llvm::StringRef getNameAttrName() { return "attn.name"; }
    /// Array of strings on a model argument/result: per axis the runtime
    /// dim's name, or "" for a static axis.
    static ::llvm::StringRef getDimsAttrName() { return "attn.dims"; }
    /// String attribute on a layer function: the name of the layer it was
    /// made from, the prefix of its weights until attn-hoist-weights.
    static ::llvm::StringRef getLayerPrefixAttrName() {
      return "attn.layer_prefix";
    }
    /// String attribute on a call of a layer function: the layer it
    /// computes (its weights are `<layer>.<part>`).
    static ::llvm::StringRef getLayerAttrName() { return "attn.layer"; }
    /// String attribute on a weight argument of a layer function: the
    /// weight's name after the layer prefix.
    static ::llvm::StringRef getWeightArgAttrName() { return "attn.weight"; }
    /// String attribute on a module that attn-apply-tuning ran on: how many
    /// ops took tuned schedules from which tuning database (a library's
    /// generated header repeats it).
    static ::llvm::StringRef getTuningAttrName() { return "attn.tuning"; }

    /// Registers the attributes of AttnAttrs.td (defined in AttnAttrs.cpp).
    void registerAttributes();
  }];
}

//===----------------------------------------------------------------------===//
// Type constraints and attribute kinds shared by the ops
//===----------------------------------------------------------------------===//

/// A ranked tensor of f32 (the element type the back end runs today), f16 or
/// bf16; dynamic dims are runtime dims.
def Attn_Tensor : RankedTensorOf<[F32, F16, BF16]>;

/// A 64-bit integer attribute whose getter returns `int64_t` (the builtin
/// `I64Attr` returns `uint64_t`, which hides negative sizes).
def Attn_I64Attr : TypedSignlessIntegerAttrBase<I64, "int64_t",
                                                "64-bit integer attribute">;

/// A 64-bit float attribute whose getter returns `double`.
def Attn_F64Attr : FloatAttrBase<F64, "64-bit float attribute"> {
  let returnType = "double";
  let convertFromStorage = "$_self.getValueAsDouble()";
}

/// Base class of all attn ops.
class Attn_Op<string mnemonic, list<Trait> traits = []>
    : Op<Attn_Dialect, mnemonic, traits>;

#endif // ATTNC_DSL_IR_ATTNDIALECT_TD
