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

void buildSchedulePipeline(OpPassManager &pm,
                           const SchedulePipelineOptions &options) {
  TilePassOptions tile;
  tile.target = options.target;
  pm.addNestedPass<func::FuncOp>(createFusePass());
  pm.addNestedPass<func::FuncOp>(createTilePass(tile));
}

void buildSchedulePipeline(OpPassManager &pm, const TargetModel &target) {
  pm.addNestedPass<func::FuncOp>(createFusePass());
  pm.addNestedPass<func::FuncOp>(createTilePass(target));
}

void registerAttnPipelines() {
  PassPipelineRegistration<>(
      "attn-lower-to-primitives",
      "Expand layer templates to primitive attn ops, rewrite chunked attention "
      "into chunk-parallel form and clean up",
      buildLowerToPrimitivesPipeline);
  PassPipelineRegistration<SchedulePipelineOptions>(
      "attn-schedule",
      "Give primitive IR its default schedules for a target: attn-fuse, then "
      "attn-tile (what `attnc --emit=attn-scheduled` runs)",
      [](OpPassManager &pm, const SchedulePipelineOptions &options) {
        buildSchedulePipeline(pm, options);
      });
}

} // namespace mlir::attn
