//===- AttnTraits.h - traits of attn ops ------------------------*- C++ -*-===//
//
// Part of attnc, a compiler for attention layers.
//
//===----------------------------------------------------------------------===//
//
// This file declares the op traits of AttnInterfaces.td: markers with no
// verifier of their own, asked with op->hasTrait<...>() (or through
// isElementwise, isActivation, isNorm in AttnOps.h).
//
//===----------------------------------------------------------------------===//

#ifndef ATTNC_DSL_IR_ATTNTRAITS_H
#define ATTNC_DSL_IR_ATTNTRAITS_H

#include "mlir/IR/OpDefinition.h"

namespace mlir::attn::OpTrait {

/// See Attn_ElementwiseTrait in AttnInterfaces.td.
template <typename ConcreteType>
class Elementwise : public mlir::OpTrait::TraitBase<ConcreteType, Elementwise> {};

/// See Attn_ActivationTrait in AttnInterfaces.td.
template <typename ConcreteType>
class Activation : public mlir::OpTrait::TraitBase<ConcreteType, Activation> {};

/// See Attn_NormTrait in AttnInterfaces.td.
template <typename ConcreteType>
class Norm : public mlir::OpTrait::TraitBase<ConcreteType, Norm> {};

/// See Attn_RowwiseStageTrait in AttnInterfaces.td.
template <typename ConcreteType>
class RowwiseStage
    : public mlir::OpTrait::TraitBase<ConcreteType, RowwiseStage> {};

/// See Attn_LayerTrait in AttnInterfaces.td.
template <typename ConcreteType>
class Layer : public mlir::OpTrait::TraitBase<ConcreteType, Layer> {};

} // namespace mlir::attn::OpTrait

#endif // ATTNC_DSL_IR_ATTNTRAITS_H
