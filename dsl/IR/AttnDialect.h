//===- AttnDialect.h - the attn dialect -------------------------*- C++ -*-===//
//
// Part of attnc, a compiler for attention layers.
//
//===----------------------------------------------------------------------===//
//
// This file declares the attn dialect and pulls in its attributes and ops, so
// that clients (MLIRGen, passes, codegen, tools) need only this header.
//
//===----------------------------------------------------------------------===//

#ifndef ATTNC_DSL_IR_ATTNDIALECT_H
#define ATTNC_DSL_IR_ATTNDIALECT_H

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/IR/Dialect.h"

#include "dsl/IR/AttnDialect.h.inc"

#include "dsl/IR/AttnAttrs.h"
#include "dsl/IR/AttnOps.h"

#endif // ATTNC_DSL_IR_ATTNDIALECT_H
