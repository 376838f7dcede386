//===- ScheduleVerifier.cpp - schedules against a target's budgets --------===//
//
// Part of attnc, a compiler for attention layers.
//
//===----------------------------------------------------------------------===//
//
// This file implements verifyScheduleFor: a schedule's own rules (the
// dialect's), then the budgets of a TargetModel (lanes, vector registers,
// L2 panels, GPU threads, per-thread tiles, shared memory). attn-tile checks
// given schedules with it, and a tuner asks it whether a point is legal
// before it builds the attribute.
//
//===----------------------------------------------------------------------===//
#include "passes/Passes.h"

#include "dsl/IR/AttnOps.h"

using namespace mlir;
using namespace mlir::attn;


//===----------------------------------------------------------------------===//
// verifyScheduleFor
//===----------------------------------------------------------------------===//

int64_t mlir::attn::getSharedMemoryBytes(const ScheduleParams &p,
                                         Operation *op) {
  if (!p.shared)
    return 0;
  // A split_k-deep panel of each operand: tile y rows of the left one, tile
  // x columns of the right one. Blocked attention stages the same shapes:
  // split_k keys' weights for tile y queries and their tile x value
  // columns; softmax adds its first sweep's block of scores and each row's
  // maximum and sum.
  int64_t bytes = kF32Bytes * p.splitK * (p.tileX + p.tileY);
  if (auto attention = dyn_cast_or_null<AttentionOp>(op))
    if (attention.getNormalize() == Normalize::softmax)
      bytes += kF32Bytes * p.splitK * p.tileY + 2 * kF32Bytes * p.tileY;
  return bytes;
}

LogicalResult
mlir::attn::verifyScheduleFor(ScheduleAttr schedule, const TargetModel &target,
                              function_ref<InFlightDiagnostic()> emitError,
                              Operation *op) {
  if (!schedule)
    return emitError() << "no schedule to check against target "
                       << target.getName();
  return verifyScheduleFor(schedule.getParams(), target, emitError, op);
}

LogicalResult
mlir::attn::verifyScheduleFor(const ScheduleParams &p, const TargetModel &target,
                              function_ref<InFlightDiagnostic()> emitError,
                              Operation *op) {
  if (failed(ScheduleAttr::verifyParams(emitError, p)))
    return failure();

  bool onGpu = p.gpuThreadsX != 0;
  if (!target.isGpu()) {
    if (onGpu)
      return emitError() << "schedule gpu_threads [" << p.gpuThreadsX << ", "
                         << p.gpuThreadsY << "] needs a GPU but target "
                         << target.getName() << " is a CPU";
    if (p.vector > target.vectorLanes)
      return emitError() << "schedule vector " << p.vector
                         << " is wider than the " << target.vectorLanes
                         << " lanes of target " << target.getName();
    int64_t accumulators = p.unrollX * p.unrollY;
    int64_t free = target.vectorRegisters - kReservedVectorRegisters;
    if (p.vector > 1 && accumulators > free)
      return emitError() << "schedule unroll [" << p.unrollX << ", "
                         << p.unrollY << "] keeps " << accumulators
                         << " vector accumulators but target "
                         << target.getName() << " has " << free << " ("
                         << target.vectorRegisters << " registers, "
                         << kReservedVectorRegisters << " reserved)";
    int64_t panel = p.splitK * p.tileX * kF32Bytes;
    if (panel > target.l2Bytes / 2)
      return emitError() << "schedule split_k " << p.splitK << " with tile x "
                         << p.tileX << " needs a " << panel
                         << "-byte panel but target " << target.getName()
                         << " allows half of its " << target.l2Bytes
                         << "-byte L2 (" << target.l2Bytes / 2 << ")";
    return success();
  }

  if (p.compute == ComputeAt::root && !onGpu)
    return emitError() << "schedule strategy = " << stringifyStrategy(p.strategy)
                       << " at compute = root on target " << target.getName()
                       << " needs gpu_threads"
                       << (p.strategy == Strategy::naive
                               ? " (the naive schedule is a CPU baseline)"
                               : "");
  if (onGpu && p.gpuThreadsX * p.gpuThreadsY > target.maxGpuThreads)
    return emitError() << "schedule gpu_threads [" << p.gpuThreadsX << ", "
                       << p.gpuThreadsY << "] has "
                       << p.gpuThreadsX * p.gpuThreadsY
                       << " threads but target " << target.getName()
                       << " allows " << target.maxGpuThreads << " per block";
  if (onGpu) {
    int64_t perThread =
        (p.tileX / p.gpuThreadsX) * (p.tileY / p.gpuThreadsY);
    if (perThread > target.maxThreadTile)
      return emitError() << "schedule tile [" << p.tileX << ", " << p.tileY
                         << "] over gpu_threads [" << p.gpuThreadsX << ", "
                         << p.gpuThreadsY << "] gives each thread "
                         << perThread << " elements but target "
                         << target.getName() << " keeps at most "
                         << target.maxThreadTile << " in registers";
  }
  if (p.shared && op && !isa<AttentionOp>(op) &&
      p.tileX * p.tileY > target.maxProductTile)
    return emitError() << "schedule tile [" << p.tileX << ", " << p.tileY
                       << "] of a product has " << p.tileX * p.tileY
                       << " accumulators but target " << target.getName()
                       << " allows " << target.maxProductTile
                       << " (Halide 14 keeps a copy of the block's tile in "
                          "each thread's local memory)";
  if (p.shared && isa_and_nonnull<AttentionOp>(op)) {
    int64_t scores =
        (p.splitK / p.gpuThreadsX) * (p.tileY / p.gpuThreadsY);
    if (scores > target.maxThreadScores)
      return emitError() << "schedule split_k " << p.splitK << " x tile y "
                         << p.tileY << " gives each thread " << scores
                         << " score dot products but target "
                         << target.getName() << " keeps at most "
                         << target.maxThreadScores << " in registers";
  }
  int64_t shared = getSharedMemoryBytes(p, op);
  if (shared > target.sharedMemoryBytes) {
    InFlightDiagnostic diag = emitError();
    diag << "schedule stages " << shared << " bytes in shared memory per block";
    if (auto attention = dyn_cast_or_null<AttentionOp>(op))
      diag << (attention.getNormalize() == Normalize::softmax
                   ? " (weights and values, softmax scores and row statistics)"
                   : " (weights and values)");
    else if (op)
      diag << " (operand panels)";
    return diag << " but target " << target.getName() << " has "
                << target.sharedMemoryBytes;
  }
  return success();
}
