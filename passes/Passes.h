//===- Passes.h - attnc's passes on the attn dialect --------------*- C++ -*-===//
//
// This file declares the passes of attnc (generated from Passes.td), their
// registration, the pattern populators they are built from, and the named
// pipelines that tools use.
//
//===----------------------------------------------------------------------===//
#ifndef ATTNC_PASSES_PASSES_H
#define ATTNC_PASSES_PASSES_H

#include "dsl/IR/AttnDialect.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassManager.h"

namespace mlir::attn {

#define GEN_PASS_DECL
#include "passes/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "passes/Passes.h.inc"

/// Patterns that rewrite each layer template op into primitive ops.
void populateExpandLayersPatterns(RewritePatternSet &patterns);

/// The pipeline from imported IR to IR that codegen accepts: expand the
/// layers, then clean up (canonicalize, CSE).
void buildLowerToPrimitivesPipeline(OpPassManager &pm);

/// Registers the named pipelines (`attn-lower-to-primitives`).
void registerAttnPipelines();

} // namespace mlir::attn

#endif // ATTNC_PASSES_PASSES_H
