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
  pm.addPass(createOutlineLayersPass());
  pm.addNestedPass<func::FuncOp>(createExpandLayersPass());
  pm.addNestedPass<func::FuncOp>(createChunkPass());
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
  pm.addPass(createHoistWeightsPass());
}

std::optional<SchedulePolicy> parseSchedulePolicy(llvm::StringRef name) {
  if (name == "default")
    return SchedulePolicy::Default;
  if (name == "naive")
    return SchedulePolicy::Naive;
  return std::nullopt;
}

std::string unknownSchedulePolicy(llvm::StringRef name) {
  return ("unknown schedule policy '" + name + "', expected default or naive")
      .str();
}

void buildSchedulePipeline(OpPassManager &pm,
                           const SchedulePipelineOptions &options) {
  TilePassOptions tile;
  tile.target = options.target;
  tile.policy = options.policy;
  if (parseSchedulePolicy(options.policy) != SchedulePolicy::Naive)
    pm.addNestedPass<func::FuncOp>(createFusePass());
  pm.addNestedPass<func::FuncOp>(createTilePass(tile));
}

void buildSchedulePipeline(OpPassManager &pm, const TargetModel &target,
                           SchedulePolicy policy) {
  if (policy == SchedulePolicy::Default)
    pm.addNestedPass<func::FuncOp>(createFusePass());
  pm.addNestedPass<func::FuncOp>(createTilePass(target, policy));
}

void registerAttnPipelines() {
  PassPipelineRegistration<>(
      "attn-lower-to-primitives",
      "Outline repeated layers into functions, expand layer templates to "
      "primitive attn ops, rewrite chunked attention into chunk-parallel form, "
      "clean up and hoist the layer functions' weights into arguments",
      buildLowerToPrimitivesPipeline);
  PassPipelineRegistration<SchedulePipelineOptions>(
      "attn-schedule",
      "Give primitive IR its schedules for a target: attn-fuse, then "
      "attn-tile (policy=naive: attn-tile's naive baseline alone); what "
      "`attnc --emit=attn-scheduled` runs",
      [](OpPassManager &pm, const SchedulePipelineOptions &options) {
        buildSchedulePipeline(pm, options);
      });
}

} // namespace mlir::attn
