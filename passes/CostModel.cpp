//===- CostModel.cpp - attn-tile's register and cache cost model ----------===//
//
// Part of attnc, a compiler for attention layers.
//
//===----------------------------------------------------------------------===//
//
// This file implements the cost model that picks a `#attn.schedule` for
// each compute op from a TargetModel's budgets (choose*Schedule): GEMM
// register tiles and L2 panels, row-wise vectors, attention blocks, and on
// CUDA blocks, threads and shared-memory staging.
//
//===----------------------------------------------------------------------===//
#include "passes/Passes.h"

#include "dsl/IR/AttnOps.h"

#include "llvm/ADT/bit.h"
#include "llvm/Support/MathExtras.h"

#include <algorithm>
#include <cmath>
#include <numeric>

using namespace mlir;
using namespace mlir::attn;

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
                                            const TargetModel &target, int64_t m,
                                            int64_t n, int64_t k, bool fusedLhs,
                                            bool sharedRhs, int64_t queryBlock) {
  ScheduleParams p;
  p.strategy = Strategy::gemm;
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
  // A parallel task computes 16 rows of tiles: a block of the left operand
  // then stays in L1 while the task sweeps the columns.
  p.rowBlock = kGemmRowTiles * p.tileY;
  // A prologue staged per row block is computed once per element, not once
  // per column tile; a packed weight is read as contiguous panels (rows of a
  // power-of-two stride would map a panel to a few cache sets).
  p.stageLhs = fusedLhs;
  p.packRhs = sharedRhs;
  // A right operand of each batch entry's own (a chunk's values) is packed
  // a column panel per task, when the task's row tiles are several to
  // read it; a task then takes all of a batch entry's rows if they fit 32
  // row tiles (the panel is packed once per entry, not per row block).
  // The panel spans the whole depth: only a static one that needs no
  // reduction blocks.
  if (!sharedRhs && !ShapedType::isDynamic(m) && m > p.tileY &&
      !ShapedType::isDynamic(k) && p.splitK == 0) {
    p.packRhs = true;
    if (m > p.rowBlock && m <= kGemmEntryRowTiles * p.tileY)
      p.rowBlock = kGemmEntryRowTiles * p.tileY;
  }
  // Row blocks of whole query blocks of the attention the product
  // computes in them (getGatedChunkAttention): a multiple of the least
  // common multiple of a tile's rows and a query block. Tiles of rows
  // that divide the query block keep the row blocks small: with 6 rows
  // and query blocks of 128, a row block of 384 rows left one of two
  // threads idle for a third of the attention at n = 1024 (non-causal
  // FLASH: 4 rows and blocks of 128 rows took 0.95x the time, 0.98x at n =
  // 8192; causal, 64 rows against 192: 0.99x and 1.00x).
  if (queryBlock > 0 && std::lcm(p.tileY, queryBlock) > 2 * queryBlock) {
    while (queryBlock % p.tileY != 0)
      --p.tileY;
    p.unrollY = p.tileY;
    p.rowBlock = kGemmRowTiles * p.tileY;
  }
  if (queryBlock > 0)
    p.rowBlock = llvm::alignTo(p.rowBlock, std::lcm(p.tileY, queryBlock));
  return ScheduleAttr::get(context, p);
}

//===----------------------------------------------------------------------===//
// Estimates
//===----------------------------------------------------------------------===//

namespace {

/// A dynamic extent as the estimate takes it: large.
int64_t extentOr(int64_t extent, int64_t large) {
  return ShapedType::isDynamic(extent) ? large : std::max<int64_t>(extent, 1);
}

/// The work of `extent` elements in tiles of `tile`, over the useful work:
/// the padding past a static extent.
double paddingFactor(int64_t extent, int64_t tile) {
  if (ShapedType::isDynamic(extent) || tile <= 1 || extent < 1)
    return 1;
  return double(llvm::divideCeil(extent, tile) * tile) / double(extent);
}

/// The thread slots of `tasks` parallel tasks run in waves of `threads`,
/// over the tasks: idle threads when there are fewer tasks, and the last
/// wave's imbalance.
double parallelFactor(int64_t tasks, int64_t threads) {
  tasks = std::max<int64_t>(tasks, 1);
  int64_t waves = llvm::divideCeil(tasks, threads);
  return double(waves * threads) / double(tasks);
}

/// A register-tiled micro-kernel (gemm, blocked attention): its cycles per
/// reduction step over the cycles of its FMAs alone.
double microKernelFactor(const ScheduleParams &p, const TargetModel &target) {
  // Each unrolled block keeps unroll x vectors by unroll y rows of
  // accumulators in registers; the tile loops over its blocks.
  int64_t across = std::max<int64_t>(p.tileX / std::max<int64_t>(p.vector, 1), 1);
  int64_t ux = std::clamp<int64_t>(p.unrollX, 1, across);
  int64_t uy = std::clamp<int64_t>(p.unrollY, 1, std::max<int64_t>(p.tileY, 1));
  double fmas = double(ux * uy);
  // A broadcast of the left operand per row, a vector of the right per
  // column vector; a tile not unrolled whole keeps its accumulators in
  // memory (a load and a store of each per step).
  double loads = double(ux + uy);
  bool whole = ux == across && uy == std::max<int64_t>(p.tileY, 1);
  if (!whole)
    loads += 2 * fmas;
  int64_t free = target.vectorRegisters - kReservedVectorRegisters;
  double spill = fmas > double(free) ? fmas / double(free) : 1.0;
  // Two FMA and two load ports; an FMA's 4-cycle latency needs 8
  // independent accumulators to keep both ports busy.
  double cycles = std::max({fmas / 2, loads / 2, 4.0});
  return cycles / (fmas / 2) * spill;
}

/// Accumulators stored and reloaded once per reduction block of `block`
/// steps (the whole reduction when not split).
double splitFactor(int64_t block, int64_t depth) {
  int64_t steps = block > 0 ? std::min(block, depth) : depth;
  return 1 + 4.0 / double(std::max<int64_t>(steps, 1));
}

} // namespace

double mlir::attn::estimateScheduleCost(const ScheduleShape &shape,
                                        const ScheduleParams &p,
                                        const TargetModel &target,
                                        int64_t threads) {
  if (target.isGpu() || shape.kind == ScheduleShape::None ||
      shape.kind == ScheduleShape::Inlined || p.compute == ComputeAt::inlined)
    return 1;
  threads = std::max<int64_t>(threads, 1);
  int64_t lanes = std::max<int64_t>(target.vectorLanes, 1);
  int64_t rows = extentOr(shape.rows, 4096);
  int64_t depth = extentOr(shape.depth, 1024);
  bool rowwise = shape.kind == ScheduleShape::Rowwise ||
                 shape.kind == ScheduleShape::Reindex;
  if (p.strategy == Strategy::naive)
    return double(lanes * threads) * 4; // scalar, serial, no tiles
  double vectorFactor = double(lanes) / double(std::max<int64_t>(p.vector, 1));
  // Row-wise ops are bound by memory more than by lanes.
  if (rowwise)
    vectorFactor = std::sqrt(vectorFactor);
  int64_t rowsPerTask = std::max<int64_t>(
      p.rowBlock > 0 ? p.rowBlock : p.tileY, 1);
  // The parallel loop also covers the axes outside the rows (batch, heads,
  // chunks), whose extents the shape does not carry: taken as many.
  int64_t outer = shape.rank > 2 ? 64 : 1;
  double parallel =
      p.parallel
          ? parallelFactor(llvm::divideCeil(rows, rowsPerTask) * outer, threads)
          : double(threads);
  double cost = vectorFactor * parallel * paddingFactor(shape.width, p.tileX);
  if (rowwise) {
    // A task of few elements costs the thread pool more than its work.
    int64_t width = extentOr(shape.width, 1024);
    double elements = double(std::max<int64_t>(p.tileY, 1) * width);
    if (p.parallel)
      cost *= 1 + 256 / elements;
    return cost;
  }
  switch (p.strategy) {
  case Strategy::gemm:
    cost *= microKernelFactor(p, target) * splitFactor(p.splitK, depth) *
            paddingFactor(shape.rows, p.tileY);
    // A prologue recomputed for every column tile; a shared operand read
    // with a power-of-two row stride (cache-set conflicts).
    if (shape.fusedLhs && !p.stageLhs)
      cost *= 1.25;
    if (shape.sharedRhs && !p.packRhs)
      cost *= 1.1;
    return cost;
  case Strategy::blocked:
    // Keys in blocks of split_k: both products register-tiled.
    return cost * microKernelFactor(p, target) * splitFactor(p.splitK, depth);
  case Strategy::rows:
    // A query row at a time: a matrix-vector product per row (each key
    // read once per query), fine under a chunk mask that skips most keys.
    return cost * (shape.chunkMask ? 1.0 : 3.0);
  case Strategy::materialized:
    // The whole score matrix through memory.
    return cost * 2.0 *
           (double(rows) * double(depth) * kF32Bytes > double(target.l2Bytes)
                ? 2.0
                : 1.0);
  default:
    return cost * 2.0; // loops over a product or attention: no register tile
  }
}

ScheduleAttr mlir::attn::chooseRowwiseSchedule(MLIRContext *context,
                                               const TargetModel &target,
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
  // A parallel task computes tile y rows, at least kRowTaskElements
  // elements: one short row per task would cost the thread pool more than
  // the row's work.
  if (p.parallel) {
    constexpr int64_t kRowTaskElements = 4096, kMaxRowTile = 64;
    int64_t rows = ShapedType::isDynamic(width)
                       ? 8
                       : llvm::divideCeil(kRowTaskElements,
                                          std::max<int64_t>(width, 1));
    p.tileY = std::min<int64_t>(llvm::PowerOf2Ceil(rows), kMaxRowTile);
  }
  return ScheduleAttr::get(context, p);
}

ScheduleAttr mlir::attn::chooseAttentionSchedule(MLIRContext *context,
                                                 const TargetModel &target,
                                                 int64_t width, int64_t keys,
                                                 bool chunkMask, bool softmax,
                                                 bool unmasked) {
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
      p.strategy = Strategy::blocked;
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
    p.strategy = Strategy::rows;
    p.tileX = p.gpuThreadsX = fitPowerOf2(32, width);
    p.tileY = p.gpuThreadsY = 8;
    return ScheduleAttr::get(context, p);
  }
  p.vector = fitPowerOf2(target.vectorLanes, width);
  p.parallel = true;
  if (p.vector < 2 || chunkMask) {
    // One column per head, or a chunk mask: scores one query row at a time
    // (no n x m buffer).
    p.strategy = Strategy::rows;
    return ScheduleAttr::get(context, p);
  }
  // Blocks of queries x keys: both products are register-tiled GEMMs. The
  // output tile keeps 2 x 8 vector accumulators (2 x 4 with 16 registers);
  // a block is 64 keys (128 over long sequences, so each query block reads
  // the values half as often, and without a mask over 256 keys or more:
  // each query block then reads every key block, where causal attention's
  // diagonal blocks would waste more), fitted to few static keys. Softmax
  // over many or an unknown number of keys, with 32 registers and heads of
  // whole 4-vector tiles: 4 x 6 accumulators and blocks of 192 keys. Each
  // block also takes row maxima and rescales the accumulators, so fewer,
  // larger blocks pay (MHSA at n = 8192: 0.89x the time of 2 x 8 and 128 keys;
  // 1.05x at n = 1024, where the last block is a third full). Without
  // softmax (GAU) the same measured 0.95x and 1.06x: not taken.
  p.strategy = Strategy::blocked;
  bool longKeys = ShapedType::isDynamic(keys) || keys > 2048;
  // Heads of whole 4-vector tiles: 80 or 96 columns would pad to 128.
  bool wideHeads = !ShapedType::isDynamic(width) && width % (4 * p.vector) == 0;
  if (softmax && longKeys && wideHeads && target.vectorRegisters >= 32) {
    p.unrollX = 4;
    p.tileY = p.unrollY = 6;
  } else {
    p.unrollX = (!ShapedType::isDynamic(width) && width < 2 * p.vector) ? 1 : 2;
    p.tileY = p.unrollY = target.vectorRegisters >= 32 ? 8 : 4;
  }
  p.tileX = p.unrollX * p.vector;
  int64_t lcm = std::lcm(p.tileX, p.tileY);
  // Non-causal FLASH at n = 8192 (chunks of 256): 0.98x the time of
  // blocks of 64 (the values packed and the accumulators swept half as
  // often); causal: 1.02x.
  bool manyKeys =
      ShapedType::isDynamic(keys) || keys > 512 || (unmasked && keys >= 256);
  p.splitK = manyKeys ? 128 : 64;
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

ScheduleShape mlir::attn::getScheduleShape(Operation *op) {
  ScheduleShape shape;
  if (!needsSchedule(op))
    return shape;
  if (isInlinedMember(op)) {
    shape.kind = ScheduleShape::Inlined;
    return shape;
  }
  auto type = cast<RankedTensorType>(op->getResult(0).getType());
  ArrayRef<int64_t> dims = type.getShape();
  shape.rank = type.getRank();
  shape.width = dims.back();
  shape.rows = shape.rank >= 2 ? dims[shape.rank - 2] : 1;
  auto product = [&](int64_t depth) {
    shape.kind = ScheduleShape::Product;
    shape.depth = depth;
  };
  auto dimOf = [](Value value, int64_t axis) {
    auto type = cast<RankedTensorType>(value.getType());
    return type.getShape()[axis < 0 ? type.getRank() + axis : axis];
  };
  if (auto gemm = dyn_cast<ProductOpInterface>(op)) {
    product(gemm.getProductDepth());
    Operation *lhs = gemm.getProductLhs().getDefiningOp();
    shape.fusedLhs =
        gemm.fusesOperandStages() && lhs && isInlinedMember(lhs);
    shape.sharedRhs =
        cast<RankedTensorType>(gemm.getProductRhs().getType()).getRank() == 2;
    return shape;
  }
  if (isa<ChunkOp>(op)) {
    shape.kind = ScheduleShape::Reindex;
    return shape;
  }
  if (op->hasTrait<OpTrait::RowwiseStage>()) {
    shape.kind = ScheduleShape::Rowwise;
    return shape;
  }
  if (auto attention = dyn_cast<AttentionOp>(op)) {
    shape.kind = ScheduleShape::Attention;
    if (!ShapedType::isDynamic(shape.width))
      shape.width /= attention.getHeads();
    shape.depth = dimOf(attention.getK(), -2);
    shape.chunkMask =
        llvm::is_contained({MaskKind::chunk, MaskKind::causal_chunk},
                           attention.getMask().getKind());
    shape.softmax = attention.getNormalize() == Normalize::softmax;
    shape.unmasked = attention.getMask().getKind() == MaskKind::none;
  }
  return shape;
}

ScheduleAttr mlir::attn::chooseSchedule(Operation *op,
                                        const TargetModel &target) {
  ScheduleShape shape = getScheduleShape(op);
  MLIRContext *context = op->getContext();
  switch (shape.kind) {
  case ScheduleShape::None:
    return {};
  // A chunk only moves data when stored: its consumers read through the
  // re-index (one compare per row for the padding past n).
  case ScheduleShape::Reindex:
  case ScheduleShape::Inlined: {
    ScheduleParams fused;
    fused.compute = ComputeAt::inlined;
    return ScheduleAttr::get(context, fused);
  }
  case ScheduleShape::Product: {
    // FLASH's output projection: row blocks of whole query blocks of the
    // chunk attention whose accumulators it reads.
    int64_t queryBlock = 0;
    auto product = dyn_cast<ProductOpInterface>(op);
    if (AttentionOp attention =
            product && !target.isGpu()
                ? getGatedChunkAttention(product.getProductLhs())
                : AttentionOp()) {
      ScheduleAttr own = ScheduleAttr::lookup(attention);
      if (!own)
        own = chooseSchedule(attention, target);
      // Query blocks that tile each chunk (lowerTiledAttention's
      // rowBlockProduct asks the same).
      ArrayRef<int64_t> q =
          cast<RankedTensorType>(attention.getQ().getType()).getShape();
      int64_t chunk = q[q.size() - 2];
      if (own && own.getStrategy() == Strategy::blocked &&
          !ShapedType::isDynamic(chunk) && own.getSplitK() > 0 &&
          chunk % own.getSplitK() == 0)
        queryBlock = own.getSplitK();
    }
    return chooseGemmSchedule(context, target, shape.rows, shape.width,
                              shape.depth, shape.fusedLhs, shape.sharedRhs,
                              queryBlock);
  }
  case ScheduleShape::Attention:
    return chooseAttentionSchedule(context, target, shape.width, shape.depth,
                                   shape.chunkMask, shape.softmax,
                                   shape.unmasked);
  case ScheduleShape::Rowwise:
    return chooseRowwiseSchedule(context, target, shape.width, shape.rank);
  }
  llvm_unreachable("unknown schedule shape");
}

ScheduleAttr mlir::attn::chooseOutputSchedule(MLIRContext *context,
                                              const TargetModel &target,
                                              RankedTensorType type,
                                              SchedulePolicy policy) {
  if (policy == SchedulePolicy::Naive) {
    ScheduleParams naive;
    naive.strategy = Strategy::naive;
    return ScheduleAttr::get(context, naive);
  }
  int64_t width = type.getRank() ? type.getShape().back() : 1;
  return chooseRowwiseSchedule(context, target, width, type.getRank());
}
