//===- ApplyTuning.cpp - attn-apply-tuning: tuned schedules from a database ===//
//
// Part of attnc, a compiler for attention layers.
//
//===----------------------------------------------------------------------===//
//
// This file implements attn-apply-tuning: each op with loops of its own
// takes the fastest schedule the tuning database (tune/TuningDb.h) recorded
// for its tuningSignature on the pass's target and attnc's version, at the
// nearest tuned runtime dims, once the target's budgets accept it.
//
//===----------------------------------------------------------------------===//
#include "passes/Passes.h"

#include "dsl/IR/AttnOps.h"
#include "tune/TuningDb.h"

#include "mlir/AsmParser/AsmParser.h"

namespace mlir::attn {
#define GEN_PASS_DEF_APPLYTUNINGPASS
#include "passes/Passes.h.inc"
} // namespace mlir::attn

using namespace mlir;
using namespace mlir::attn;
namespace tune = attnc::tune;

namespace {
struct ApplyTuningPass : attn::impl::ApplyTuningPassBase<ApplyTuningPass> {
  using Base::Base;
  ApplyTuningPass(const std::string &path, const TargetModel &target,
                  const std::map<std::string, int64_t> &sizes)
      : targetModel(target), runtimeDims(sizes) {
    db = path;
  }

  LogicalResult initialize(MLIRContext *context) override {
    if (!targetModel) {
      std::string error;
      targetModel = TargetModel::parse(target, error);
      if (!targetModel)
        return emitError(UnknownLoc::get(context))
               << "attn-apply-tuning: " << error;
      std::optional<std::map<std::string, int64_t>> parsed =
          tune::parseDims(dims);
      if (!parsed)
        return emitError(UnknownLoc::get(context))
               << "attn-apply-tuning: dims '" << dims
               << "' are not name=size,...";
      runtimeDims = *parsed;
    }
    if (db.empty())
      return emitError(UnknownLoc::get(context))
             << "attn-apply-tuning needs a database (db=FILE)";
    return success();
  }

  void runOnOperation() override {
    ModuleOp module = getOperation();
    std::string error;
    std::unique_ptr<tune::TuningDb> database =
        tune::TuningDb::open(db, /*create=*/false, error);
    if (!database) {
      mlir::emitError(module.getLoc()) << error;
      return signalPassFailure();
    }
    std::string targetKey = targetModel->halideString();
    size_t tuned = 0, kept = 0, scheduled = 0;
    std::vector<std::string> notes;
    module.walk([&](Operation *op) {
      if (!isTunable(op))
        return;
      ScheduleAttr current = ScheduleAttr::lookup(op);
      ++scheduled;
      std::optional<tune::Choice> choice = database->best(
          tuningSignature(op), targetKey, tune::attncVersion(), runtimeDims);
      if (!choice)
        return;
      Attribute parsed =
          parseAttribute(choice->trial.schedule, op->getContext());
      auto schedule = dyn_cast_or_null<ScheduleAttr>(parsed);
      auto emitWarning = [&] { return mlir::emitWarning(op->getLoc()); };
      if (!schedule ||
          failed(verifyScheduleForOp(op, schedule.getParams(), emitWarning)) ||
          failed(verifyScheduleFor(schedule, *targetModel, emitWarning, op))) {
        mlir::emitWarning(op->getLoc())
            << "tuning database '" << db << "' holds schedule "
                          << choice->trial.schedule
                          << " for this op, which is not legal here; keeping "
                          << current;
        return;
      }
      if (!choice->note.empty() &&
          llvm::find(notes, choice->note) == notes.end())
        notes.push_back(choice->note);
      if (schedule == current) {
        ++kept;
        return;
      }
      op->setAttr(ScheduleAttr::getScheduleAttrName(), schedule);
      ++tuned;
    });
    // What the schedules are, for the generated header of a library.
    std::string summary = std::to_string(tuned) + " of " +
                          std::to_string(scheduled) +
                          " scheduled ops take tuned schedules from tuning "
                          "database '" +
                          db + "'";
    module->setAttr(AttnDialect::getTuningAttrName(),
                    StringAttr::get(module.getContext(), summary));
    InFlightDiagnostic remark = mlir::emitRemark(module.getLoc())
                                << "tuning database '" << db << "': " << tuned
                                << " of " << scheduled
                                << " scheduled ops take a tuned schedule";
    if (kept)
      remark << ", " << kept << " keep the default (the fastest measured)";
    for (const std::string &note : notes)
      remark << " (" << note << ")";
    if (tuned + kept == 0) {
      std::vector<std::string> others =
          database->otherKeys(targetKey, tune::attncVersion());
      if (!others.empty()) {
        remark << "; its rows for other targets or attnc versions are "
                  "ignored:";
        for (const std::string &key : others)
          remark << " " << key;
      }
    }
  }

  std::optional<TargetModel> targetModel;
  std::map<std::string, int64_t> runtimeDims;
};
} // namespace

std::unique_ptr<Pass>
mlir::attn::createApplyTuningPass(const std::string &db,
                                  const TargetModel &target,
                                  const std::map<std::string, int64_t> &dims) {
  return std::make_unique<ApplyTuningPass>(db, target, dims);
}
