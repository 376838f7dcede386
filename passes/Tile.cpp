//===- Tile.cpp - attn-tile: a schedule on every compute op ---------------===//
//
// Part of attnc, a compiler for attention layers.
//
//===----------------------------------------------------------------------===//
//
// This file implements the attn-tile pass: every compute op without a
// schedule gets the cost model's (CostModel.cpp) for the pass's target, and
// every schedule already given is checked against the target's budgets
// (ScheduleVerifier.cpp).
//
//===----------------------------------------------------------------------===//
#include "passes/Passes.h"

namespace mlir::attn {
#define GEN_PASS_DEF_TILEPASS
#include "passes/Passes.h.inc"
} // namespace mlir::attn

using namespace mlir;
using namespace mlir::attn;

//===----------------------------------------------------------------------===//
// The pass
//===----------------------------------------------------------------------===//

namespace {
struct TilePass : attn::impl::TilePassBase<TilePass> {
  using Base::Base;
  explicit TilePass(const TargetModel &target) : targetModel(target) {}

  LogicalResult initialize(MLIRContext *context) override {
    if (targetModel)
      return success();
    std::string error;
    targetModel = TargetModel::parse(target, error);
    if (!targetModel)
      return emitError(UnknownLoc::get(context)) << "attn-tile: " << error;
    return success();
  }

  void runOnOperation() override {
    bool legal = true;
    getOperation().walk([&](Operation *op) {
      if (ScheduleAttr existing = ScheduleAttr::lookup(op)) {
        if (failed(verifyScheduleFor(existing, *targetModel,
                                     [&] { return op->emitError(); }, op)))
          legal = false;
        return;
      }
      if (ScheduleAttr schedule = chooseSchedule(op, *targetModel))
        op->setAttr(ScheduleAttr::getScheduleAttrName(), schedule);
    });
    if (!legal)
      signalPassFailure();
  }

  /// Given at construction, or parsed from the `target` option.
  std::optional<TargetModel> targetModel;
};
} // namespace

std::unique_ptr<Pass> mlir::attn::createTilePass(const TargetModel &target) {
  return std::make_unique<TilePass>(target);
}
