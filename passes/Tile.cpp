//===- Tile.cpp - attn-tile: schedules from a cost model ------------------===//
//
// Part of attnc, a compiler for attention layers.
//
//===----------------------------------------------------------------------===//
//
// This file implements attn-tile and what it is built from: the targets'
// budgets (TargetInfo), the check of a schedule against them
// (verifyScheduleFor, which the autotuner also uses to ask whether a point
// is legal), and the register/cache cost model that picks a
// `#attn.schedule` for each compute op (choose*Schedule).
//
//===----------------------------------------------------------------------===//
#include "passes/Passes.h"

#include "dsl/IR/AttnOps.h"

#include "llvm/ADT/StringSwitch.h"
#include "llvm/ADT/TypeSwitch.h"
#include "llvm/ADT/bit.h"

#include <numeric>

namespace mlir::attn {
#define GEN_PASS_DEF_TILEPASS
#include "passes/Passes.h.inc"
} // namespace mlir::attn

using namespace mlir;
using namespace mlir::attn;

/// Bytes of one f32.
static constexpr int64_t kF32Bytes = 4;

//===----------------------------------------------------------------------===//
// TargetInfo
//===----------------------------------------------------------------------===//

StringRef TargetInfo::getName() const {
  switch (kind) {
  case TargetKind::generic:
    return "generic";
  case TargetKind::avx2:
    return "x86-64-avx2";
  case TargetKind::avx512:
    return "x86-64-avx512";
  case TargetKind::cuda:
    return "cuda";
  }
  llvm_unreachable("unknown target kind");
}

TargetInfo TargetInfo::get(TargetKind kind) {
  TargetInfo info;
  info.kind = kind;
  switch (kind) {
  case TargetKind::generic:
    break;
  case TargetKind::avx2:
    info.vectorLanes = 8;
    break;
  case TargetKind::avx512:
    info.vectorLanes = 16;
    info.vectorRegisters = 32;
    break;
  case TargetKind::cuda:
    info.vectorLanes = 1;
    info.vectorRegisters = 0;
    info.maxGpuThreads = 1024;
    info.maxThreadTile = 64;
    info.sharedMemoryBytes = 48 * 1024;
    break;
  }
  return info;
}

TargetInfo TargetInfo::detectHost() {
#if defined(__x86_64__) || defined(__i386__)
  if (__builtin_cpu_supports("avx512f"))
    return get(TargetKind::avx512);
  if (__builtin_cpu_supports("avx2"))
    return get(TargetKind::avx2);
#endif
  return get(TargetKind::generic);
}

std::optional<TargetInfo> TargetInfo::parse(StringRef name) {
  if (name == "host")
    return detectHost();
  std::optional<TargetKind> kind =
      llvm::StringSwitch<std::optional<TargetKind>>(name)
          .Case("generic", TargetKind::generic)
          .Case("x86-64-avx2", TargetKind::avx2)
          .Case("x86-64-avx512", TargetKind::avx512)
          .Case("cuda", TargetKind::cuda)
          .Default(std::nullopt);
  if (!kind)
    return std::nullopt;
  return get(*kind);
}

//===----------------------------------------------------------------------===//
// verifyScheduleFor
//===----------------------------------------------------------------------===//

int64_t mlir::attn::getSharedMemoryBytes(const ScheduleParams &p) {
  // A split_k-deep panel of each operand: tile y rows of the left one,
  // tile x columns of the right one.
  return p.shared ? kF32Bytes * p.splitK * (p.tileX + p.tileY) : 0;
}

LogicalResult
mlir::attn::verifyScheduleFor(ScheduleAttr schedule, const TargetInfo &target,
                              function_ref<InFlightDiagnostic()> emitError) {
  if (!schedule)
    return emitError() << "no schedule to check against target "
                       << target.getName();
  return verifyScheduleFor(schedule.getParams(), target, emitError);
}

LogicalResult
mlir::attn::verifyScheduleFor(const ScheduleParams &p, const TargetInfo &target,
                              function_ref<InFlightDiagnostic()> emitError) {
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

  if (p.compute == ComputeAt::tile)
    return emitError() << "schedule compute = tile is for CPUs but target "
                       << target.getName() << " is a GPU";
  if (p.compute == ComputeAt::root && !onGpu)
    return emitError() << "schedule compute = root on target "
                       << target.getName() << " needs gpu_threads";
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
  int64_t shared = getSharedMemoryBytes(p);
  if (shared > target.sharedMemoryBytes)
    return emitError() << "schedule stages " << shared
                       << " bytes in shared memory but target "
                       << target.getName() << " has "
                       << target.sharedMemoryBytes << " per block";
  return success();
}

//===----------------------------------------------------------------------===//
// Cost model
//===----------------------------------------------------------------------===//

/// The largest power of two <= `value` (at least 1).
static int64_t floorPowerOf2(int64_t value) {
  if (value < 1)
    return 1;
  return static_cast<int64_t>(llvm::bit_floor(static_cast<uint64_t>(value)));
}

/// `limit`, or the largest power of two <= `extent` if `extent` is static
/// and smaller.
static int64_t fitPowerOf2(int64_t limit, int64_t extent) {
  if (ShapedType::isDynamic(extent) || extent >= limit)
    return limit;
  return floorPowerOf2(extent);
}

ScheduleAttr mlir::attn::chooseGemmSchedule(MLIRContext *context,
                                            const TargetInfo &target, int64_t m,
                                            int64_t n, int64_t k) {
  ScheduleParams p;
  if (target.isGpu()) {
    // A block computes a 64 x 64 tile with 16 x 16 threads of 4 x 4
    // register accumulators; each reduction step stages 16-deep panels of
    // both operands (8 KiB) in shared memory. Small operands shrink it.
    p.tileX = fitPowerOf2(64, n);
    p.tileY = fitPowerOf2(64, m);
    p.gpuThreadsX = std::min<int64_t>(16, p.tileX);
    p.gpuThreadsY = std::min<int64_t>(16, p.tileY);
    p.splitK = fitPowerOf2(16, k);
    p.shared = p.splitK >= 4;
    if (!p.shared)
      p.splitK = 0;
    return ScheduleAttr::get(context, p);
  }
  p.parallel = true;
  p.vector = fitPowerOf2(target.vectorLanes, n);
  int64_t vectors = 4;
  if (!ShapedType::isDynamic(n))
    vectors = std::clamp<int64_t>(n / p.vector, 1, 4);
  p.tileX = vectors * p.vector;
  // The most rows (8 down to 2) whose accumulators fit the free registers.
  int64_t free = target.vectorRegisters - kReservedVectorRegisters;
  p.tileY = 1;
  for (int64_t rows = 8; rows >= 2; --rows) {
    if (vectors * rows <= free) {
      p.tileY = rows;
      break;
    }
  }
  if (!ShapedType::isDynamic(m))
    p.tileY = std::clamp<int64_t>(m, 1, p.tileY);
  p.unrollX = p.tileX > 1 ? vectors : 1;
  p.unrollY = p.tileY;
  // Split K when a K x tile-x panel of B would not fit half of L2.
  int64_t block = floorPowerOf2(target.l2Bytes / 2 / (p.tileX * kF32Bytes));
  if (ShapedType::isDynamic(k) || k > block)
    p.splitK = block;
  return ScheduleAttr::get(context, p);
}

ScheduleAttr mlir::attn::chooseRowwiseSchedule(MLIRContext *context,
                                               const TargetInfo &target,
                                               int64_t width, int64_t rank) {
  ScheduleParams p;
  if (target.isGpu()) {
    p.tileX = p.gpuThreadsX = fitPowerOf2(64, width);
    p.tileY = p.gpuThreadsY = rank >= 2 ? 64 / p.tileX : 1;
    return ScheduleAttr::get(context, p);
  }
  p.vector = fitPowerOf2(target.vectorLanes, width);
  int64_t vectors = 4;
  if (!ShapedType::isDynamic(width))
    vectors = std::clamp<int64_t>(width / p.vector, 1, 4);
  p.tileX = vectors * p.vector;
  p.parallel = rank >= 2;
  return ScheduleAttr::get(context, p);
}

ScheduleAttr mlir::attn::chooseAttentionSchedule(MLIRContext *context,
                                                 const TargetInfo &target,
                                                 int64_t width, int64_t keys,
                                                 bool chunkMask) {
  ScheduleParams p;
  if (target.isGpu()) {
    // Blocked: 64 queries by up to 256 value columns of one head per block
    // (the largest power of two dividing the head's columns: every column
    // block recomputes the block's weights, so wide blocks for wide heads),
    // 16 x 16 threads of up to 16 x 4 outputs, 32 keys per step (16 with
    // 256 columns) with their weights and values in shared memory (at most
    // 24 KiB, 32.5 KiB with softmax).
    int64_t columns = 1;
    if (!ShapedType::isDynamic(width) && !chunkMask)
      while (columns < 256 && width % (2 * columns) == 0)
        columns *= 2;
    if (columns >= 16) {
      p.tileX = columns;
      p.tileY = 64;
      p.gpuThreadsX = 16;
      p.gpuThreadsY = 16;
      p.splitK = columns > 128 ? 16 : 32;
      p.shared = true;
      return ScheduleAttr::get(context, p);
    }
    // Row-wise, one thread per output element: dynamic widths, chunk masks
    // and heads of fewer than 16 columns (too few threads for blocks).
    p.tileX = p.gpuThreadsX = fitPowerOf2(32, width);
    p.tileY = p.gpuThreadsY = 8;
    return ScheduleAttr::get(context, p);
  }
  p.vector = fitPowerOf2(target.vectorLanes, width);
  p.parallel = true;
  if (p.vector < 2 || chunkMask) {
    // One column per head, or a chunk mask: scores one query row at a time
    // (no n x m buffer).
    p.compute = ComputeAt::row;
    return ScheduleAttr::get(context, p);
  }
  // Blocks of queries x keys: both products are register-tiled GEMMs. The
  // output tile keeps 2 x 8 vector accumulators (2 x 4 with 16 registers);
  // a block is 64 keys (128 over long sequences, so each query block reads
  // the values half as often), fitted to few static keys.
  p.compute = ComputeAt::tile;
  p.unrollX = (!ShapedType::isDynamic(width) && width < 2 * p.vector) ? 1 : 2;
  p.tileX = p.unrollX * p.vector;
  p.tileY = p.unrollY = target.vectorRegisters >= 32 ? 8 : 4;
  int64_t lcm = std::lcm(p.tileX, p.tileY);
  p.splitK = ShapedType::isDynamic(keys) || keys > 512 ? 128 : 64;
  p.splitK = llvm::alignTo(p.splitK, lcm);
  if (!ShapedType::isDynamic(keys))
    p.splitK = std::min(p.splitK, static_cast<int64_t>(llvm::alignTo(
                                      std::max<int64_t>(keys, 1), lcm)));
  return ScheduleAttr::get(context, p);
}

/// Whether `op` is computed inside the loops of its kernel's anchor: an
/// elementwise member of an attn.kernel (attn-fuse's groups) other than the
/// anchor, except one whose result leaves the kernel without being a
/// product's epilogue (it is stored, so that consumers outside do not
/// recompute it).
static bool isInlinedMember(Operation *op) {
  auto kernel = dyn_cast_or_null<KernelOp>(op->getParentOp());
  if (!kernel || !(isElementwise(op) || isNorm(op)) ||
      op == kernel.getAnchor())
    return false;
  bool leaves = llvm::any_of(op->getUsers(), [](Operation *user) {
    return isa<KernelYieldOp>(user);
  });
  // An activation or residual add applied in a product's output stage.
  return !leaves || getEpilogueProduct(op);
}

ScheduleAttr mlir::attn::chooseSchedule(Operation *op,
                                        const TargetInfo &target) {
  if (op->getNumResults() != 1)
    return {};
  if (isInlinedMember(op)) {
    ScheduleParams fused;
    fused.compute = ComputeAt::inlined;
    return ScheduleAttr::get(op->getContext(), fused);
  }
  auto type = dyn_cast<RankedTensorType>(op->getResult(0).getType());
  if (!type || type.getRank() == 0)
    return {};
  MLIRContext *context = op->getContext();
  ArrayRef<int64_t> shape = type.getShape();
  int64_t rank = type.getRank();
  int64_t width = shape.back();
  int64_t rows = rank >= 2 ? shape[rank - 2] : 1;
  auto rowwise = [&](Operation *) {
    return chooseRowwiseSchedule(context, target, width, rank);
  };
  return llvm::TypeSwitch<Operation *, ScheduleAttr>(op)
      .Case([&](DenseOp dense) {
        int64_t k =
            cast<RankedTensorType>(dense.getW().getType()).getShape()[0];
        return chooseGemmSchedule(context, target, rows, width, k);
      })
      .Case([&](MatmulOp matmul) {
        int64_t k =
            cast<RankedTensorType>(matmul.getA().getType()).getShape().back();
        return chooseGemmSchedule(context, target, rows, width, k);
      })
      .Case([&](AttentionOp attention) {
        auto k = cast<RankedTensorType>(attention.getK().getType());
        return chooseAttentionSchedule(
            context, target,
            ShapedType::isDynamic(width) ? width
                                         : width / attention.getHeads(),
            k.getShape()[k.getRank() - 2],
            llvm::is_contained({MaskKind::chunk, MaskKind::causal_chunk},
                               attention.getMask().getKind()));
      })
      // The per-chunk products of the chunk form are GEMMs: [s, e] states
      // over C tokens, [C, e] outputs over s state rows.
      .Case([&](ChunkStateOp state) {
        int64_t k =
            cast<RankedTensorType>(state.getK().getType()).getShape()[rank - 2];
        return chooseGemmSchedule(context, target, rows, width, k);
      })
      .Case([&](StateApplyOp apply) {
        int64_t k =
            cast<RankedTensorType>(apply.getQ().getType()).getShape().back();
        return chooseGemmSchedule(context, target, rows, width, k);
      })
      .Case<AddOp, SubOp, MulOp, DivOp, PowOp, NegOp, SiluOp, GeluOp, ReluOp,
            SigmoidOp, ExpOp, TanhOp, SqrtOp, LayerNormOp, ScaleNormOp,
            RmsNormOp, ScaleOffsetOp, RopeOp, LinearAttnOp, ChunkedLinearOp,
            ChunkOp, ChunkScanOp>(rowwise)
      .Default([](Operation *) { return ScheduleAttr(); });
}

//===----------------------------------------------------------------------===//
// The pass
//===----------------------------------------------------------------------===//

namespace {
struct TilePass : attn::impl::TilePassBase<TilePass> {
  using Base::Base;

  LogicalResult initialize(MLIRContext *context) override {
    std::optional<TargetInfo> parsed = TargetInfo::parse(target);
    if (!parsed)
      return emitError(UnknownLoc::get(context))
             << "unknown attn-tile target '" << target
             << "', expected host, x86-64-avx2, x86-64-avx512, generic or "
                "cuda";
    targetInfo = *parsed;
    return success();
  }

  void runOnOperation() override {
    bool legal = true;
    getOperation().walk([&](Operation *op) {
      if (ScheduleAttr existing = ScheduleAttr::lookup(op)) {
        if (failed(verifyScheduleFor(existing, targetInfo,
                                     [&] { return op->emitError(); })))
          legal = false;
        return;
      }
      if (ScheduleAttr schedule = chooseSchedule(op, targetInfo))
        op->setAttr(ScheduleAttr::getScheduleAttrName(), schedule);
    });
    if (!legal)
      signalPassFailure();
  }

  TargetInfo targetInfo;
};
} // namespace
