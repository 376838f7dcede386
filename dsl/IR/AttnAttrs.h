//===- AttnAttrs.h - attn dialect enums and attributes ----------*- C++ -*-===//
//
// Part of attnc, a compiler for attention layers.
//
//===----------------------------------------------------------------------===//
//
// This file declares the enums of the attn dialect (NormKind, RelPosKind,
// FeatureMap, Activation, Normalize, RopeMode, MaskKind), their attributes
// and `#attn.mask<...>` (MaskAttr), all generated from AttnAttrs.td.
//
//===----------------------------------------------------------------------===//

#ifndef ATTNC_DSL_IR_ATTNATTRS_H
#define ATTNC_DSL_IR_ATTNATTRS_H

#include "mlir/IR/Attributes.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/DialectImplementation.h"

#include "dsl/IR/AttnEnums.h.inc"

#define GET_ATTRDEF_CLASSES
#include "dsl/IR/AttnAttrs.h.inc"

#endif // ATTNC_DSL_IR_ATTNATTRS_H
