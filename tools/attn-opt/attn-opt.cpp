//===- attn-opt.cpp - the attn dialect's optimizer driver -----------------===//
//
// Part of attnc, a compiler for attention layers.
//
//===----------------------------------------------------------------------===//
//
// This file is attn-opt, the mlir-opt of attnc: it parses, verifies, runs
// passes on and prints IR of the attn dialect (with func, arith and math).
// It is what the lit tests of tests/dsl and tests/passes run.
//
//===----------------------------------------------------------------------===//

#include "dsl/IR/AttnDialect.h"
#include "passes/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "mlir/Transforms/Passes.h"

int main(int argc, char **argv) {
  mlir::DialectRegistry registry;
  registry.insert<mlir::attn::AttnDialect, mlir::func::FuncDialect,
                  mlir::arith::ArithDialect, mlir::math::MathDialect>();

  // Generic MLIR passes (canonicalize, cse, ...).
  mlir::registerTransformsPasses();

  // attnc's passes and named pipelines.
  mlir::attn::registerAttnPasses();
  mlir::attn::registerAttnPipelines();

  return mlir::asMainReturnCode(
      mlir::MlirOptMain(argc, argv, "attn optimizer driver\n", registry));
}
