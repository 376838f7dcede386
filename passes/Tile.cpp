//===- Tile.cpp - attn-tile: a schedule on every compute op ---------------===//
//
// Part of attnc, a compiler for attention layers.
//
//===----------------------------------------------------------------------===//
//
// This file implements the attn-tile pass: every compute op without a
// schedule, and every result of the function (the stage that copies it out),
// gets the cost model's (CostModel.cpp) for the pass's target, or under the
// naive policy the naive baseline; every schedule, given or chosen, is
// checked against the target's budgets (ScheduleVerifier.cpp).
//
//===----------------------------------------------------------------------===//
#include "passes/Passes.h"

#include "dsl/IR/AttnOps.h"

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
  TilePass(const TargetModel &target, SchedulePolicy policy)
      : targetModel(target), schedulePolicy(policy) {}

  LogicalResult initialize(MLIRContext *context) override {
    if (schedulePolicy && targetModel)
      return checkPolicy(context);
    std::optional<SchedulePolicy> parsed = parseSchedulePolicy(this->policy);
    if (!parsed)
      return emitError(UnknownLoc::get(context))
             << "attn-tile: " << unknownSchedulePolicy(this->policy);
    schedulePolicy = *parsed;
    std::string error;
    targetModel = TargetModel::parse(target, error);
    if (!targetModel)
      return emitError(UnknownLoc::get(context)) << "attn-tile: " << error;
    return checkPolicy(context);
  }

  /// The naive baseline runs on CPUs only (a GPU stage needs gpu_threads).
  LogicalResult checkPolicy(MLIRContext *context) const {
    if (*schedulePolicy == SchedulePolicy::Naive && targetModel->isGpu())
      return emitError(UnknownLoc::get(context))
             << "the naive schedule is a CPU baseline (scalar, serial loops "
                "at root); target "
             << targetModel->getName()
             << " needs GPU schedules: use the default schedule policy";
    return success();
  }

  /// The schedule to add to `op` (null: none).
  ScheduleAttr choose(Operation *op) const {
    if (*schedulePolicy == SchedulePolicy::Default)
      return chooseSchedule(op, *targetModel);
    if (!needsSchedule(op))
      return {};
    ScheduleParams naive;
    naive.strategy = Strategy::naive;
    return ScheduleAttr::get(op->getContext(), naive);
  }

  void runOnOperation() override {
    bool legal = true;
    auto check = [&](ScheduleAttr schedule, Operation *op,
                     function_ref<InFlightDiagnostic()> emitError) {
      if (failed(verifyScheduleFor(schedule, *targetModel, emitError, op)))
        legal = false;
    };
    func::FuncOp func = getOperation();
    func.walk([&](Operation *op) {
      if (ScheduleAttr existing = ScheduleAttr::lookup(op))
        return check(existing, op, [&] { return op->emitError(); });
      if (ScheduleAttr schedule = choose(op)) {
        op->setAttr(ScheduleAttr::getScheduleAttrName(), schedule);
        // The cost model's choices must pass the verifier too: a target
        // the cost model does not fit is a bug to report, not to compile.
        check(schedule, op, [&] { return op->emitError(); });
      }
    });
    // The stages that copy the results into the caller's buffers.
    StringRef name = ScheduleAttr::getScheduleAttrName();
    for (unsigned i = 0; i < func.getNumResults(); ++i) {
      auto type = dyn_cast<RankedTensorType>(func.getResultTypes()[i]);
      if (!type)
        continue;
      auto emitError = [&] {
        return func.emitError() << "result " << i << ": ";
      };
      if (auto existing = func.getResultAttrOfType<ScheduleAttr>(i, name)) {
        check(existing, nullptr, emitError);
        continue;
      }
      ScheduleAttr schedule = chooseOutputSchedule(
          &getContext(), *targetModel, type, *schedulePolicy);
      func.setResultAttr(i, name, schedule);
      check(schedule, nullptr, emitError);
    }
    if (!legal)
      signalPassFailure();
  }

  /// Given at construction, or parsed from the `target` option.
  std::optional<TargetModel> targetModel;
  /// Given at construction, or parsed from the `policy` option.
  std::optional<SchedulePolicy> schedulePolicy;
};
} // namespace

std::unique_ptr<Pass> mlir::attn::createTilePass(const TargetModel &target,
                                                 SchedulePolicy policy) {
  return std::make_unique<TilePass>(target, policy);
}
