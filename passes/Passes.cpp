//===- Passes.cpp - named pipelines of attnc ------------------------------===//
//
// This file builds and registers the named pass pipelines that tools run.
//
//===----------------------------------------------------------------------===//
#include "passes/Passes.h"

#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"

namespace mlir::attn {

void buildLowerToPrimitivesPipeline(OpPassManager &pm) {
  pm.addNestedPass<func::FuncOp>(createExpandLayersPass());
  pm.addNestedPass<func::FuncOp>(createChunkPass());
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
}

void registerAttnPipelines() {
  PassPipelineRegistration<>(
      "attn-lower-to-primitives",
      "Expand layer templates to primitive attn ops, rewrite chunked attention "
      "into chunk-parallel form and clean up",
      buildLowerToPrimitivesPipeline);
}

} // namespace mlir::attn
