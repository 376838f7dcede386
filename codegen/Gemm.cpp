//===- Gemm.cpp - register-blocked matrix products in Halide --------------===//
//
// This file implements defineGemm. The Default CPU schedule follows the
// classic blocking: an accumulator tile of `unrollX` vectors by `tileY`
// rows kept in registers while the reduction runs (one broadcast of the
// left operand and `unrollX` loads of the right one per k), tiles swept
// over a panel of columns for a block of rows so the right panel stays in
// L2, row blocks in parallel. Row and column indices are clamped so that
// the rounded-up tiles never read outside their operands.
//
//===----------------------------------------------------------------------===//
#include "codegen/Gemm.h"
#include "codegen/GpuLoops.h"

namespace attnc::codegen {

using namespace Halide;

GemmTile GemmTile::of(mlir::attn::ScheduleAttr attr) {
  GemmTile tile;
  tile.vector = static_cast<int>(attr.getVector());
  tile.unrollX = static_cast<int>(attr.getTileX() / attr.getVector());
  tile.tileY = static_cast<int>(attr.getTileY());
  tile.rowBlock = static_cast<int>(
      std::max<int64_t>(attr.getRowBlock() / attr.getTileY(), 1));
  tile.unrollVectors = static_cast<int>(attr.getUnrollX());
  tile.unrollRows = static_cast<int>(attr.getUnrollY());
  return tile;
}

bool GemmTile::coversColumns(const Expr &cols) const {
  const int64_t *staticCols = Internal::as_const_int(cols);
  return staticCols && *staticCols % tileX() == 0;
}

bool GemmTile::onCpu(mlir::attn::ScheduleAttr attr) {
  return attr.getStrategy() != mlir::attn::Strategy::naive && !attr.isOnGpu();
}

bool computesInRowBlocks(const Lowering &lowering, mlir::Operation *product) {
  if (!mlir::isa<mlir::attn::DenseOp, mlir::attn::MatmulOp>(product) ||
      lowering.options.chunkStep || lowering.autoscheduled())
    return false;
  mlir::attn::ScheduleAttr attr = mlir::attn::ScheduleAttr::lookup(product);
  return attr && GemmTile::onCpu(attr) && attr.getStageLhs() &&
         attr.getRowBlock() > 0;
}

/// Vectorises `var` of `stage` by `lanes` (nothing for a scalar tile).
static Stage vectorizeBy(Stage stage, const VarOrRVar &var, int lanes,
                         TailStrategy tail = TailStrategy::Auto) {
  return lanes > 1 ? stage.vectorize(var, lanes, tail) : stage;
}

void scheduleRegisterTile(Func acc, const Var &col, const Var &row,
                          const LoopLevel &at, const GemmTile &tile) {
  int vectors = tile.unrollVectors, rows = tile.unrollRows;
  acc.compute_at(at);
  for (Stage stage : {Stage(acc), acc.update()})
    vectorizeBy(stage, col, tile.vector).unroll(col, vectors).unroll(row, rows);
  acc.bound_extent(col, tile.tileX()).bound_extent(row, tile.tileY);
}

/// The GPU schedule of a product under an attn.schedule with gpu_threads:
/// one block per tile x by tile y of the result, each of the gpu_threads
/// computing a contiguous (tile / gpu_threads) piece of it in registers.
/// The reduction runs in steps of split_k; with `shared`, each step first
/// copies the block's split_k-deep panels of both operands into shared
/// memory (all threads together, neighbouring threads reading neighbouring
/// addresses), and the threads read them from there.
static void scheduleGpuGemm(Lowering &lowering, Func out,
                            const std::vector<Var> &vars, Func acc, RDom r,
                            Func lhsPanel, Func rhsPanel,
                            mlir::attn::ScheduleAttr attr) {
  GpuLoops gpu = lowering.gpuLoops();
  size_t rank = vars.size();
  Var row = vars[rank - 2], col = vars[rank - 1];
  int tileX = int(attr.getTileX()), tileY = int(attr.getTileY());
  int threadsX = int(attr.getGpuThreadsX()),
      threadsY = int(attr.getGpuThreadsY());
  int subX = tileX / threadsX, subY = tileY / threadsY;
  int splitK = int(attr.getSplitK());

  Var colOuter("co"), rowOuter("ro"), colThread("ct"), rowThread("rt"),
      colInner("cj"), rowInner("rj");
  out.compute_root()
      .tile(col, row, colOuter, rowOuter, colThread, rowThread, tileX, tileY,
            TailStrategy::RoundUp)
      .tile(colThread, rowThread, colInner, rowInner, subX, subY,
            TailStrategy::RoundUp)
      .unroll(colInner)
      .unroll(rowInner);
  gpu.threads(out, {colThread, rowThread});
  if (rank > 2)
    gpu.blocks(out, {colOuter, rowOuter,
                     fuseOuter(out, std::vector<Var>(vars.begin(),
                                                     vars.end() - 2),
                               rank - 2)});
  else
    gpu.blocks(out, {colOuter, rowOuter});

  // The accumulator lives at block level so that the reduction steps can
  // sit outside the thread loops (one staged panel serves every thread);
  // each thread keeps its own piece in registers during a step. Halide 14
  // backs a block-level register allocation with a whole tile of local
  // memory per thread (16 KiB for 64 x 64), of which a thread touches its
  // own piece once per step. In shared memory instead, every update would
  // be a store: the compiler cannot tell it from the staged panels.
  // A block computes one tile of one batch entry; saying so gives the
  // register allocation a constant size.
  acc.compute_at(out, colOuter)
      .bound_extent(col, tileX)
      .bound_extent(row, tileY);
  for (size_t i = 0; i + 2 < rank; ++i)
    acc.bound_extent(vars[i], 1);
  acc.tile(col, row, colInner, rowInner, subX, subY, TailStrategy::RoundUp)
      .unroll(colInner)
      .unroll(rowInner);
  gpu.registers(acc);
  gpu.threads(acc, {col, row});
  Stage update = acc.update();
  RVar kOuter("ko"), kInner("ki");
  if (splitK > 0)
    update.split(r.x, kOuter, kInner, splitK, TailStrategy::GuardWithIf);
  update.tile(col, row, colInner, rowInner, subX, subY, TailStrategy::RoundUp);
  if (splitK > 0)
    update.reorder(colInner, rowInner, kInner, col, row, kOuter);
  else
    update.reorder(colInner, rowInner, r.x, col, row);
  update.unroll(colInner).unroll(rowInner);
  gpu.threads(update, {col, row});
  if (!attr.getShared())
    return;

  // One panel per operand and reduction step, spread over the block's
  // threads.
  gpu.stage(lhsPanel, LoopLevel(acc, kOuter), threadsX, threadsY);
  gpu.stage(rhsPanel, LoopLevel(acc, kOuter), threadsX, threadsY);
}

void defineGemm(Lowering &lowering, HTensor &out, const std::vector<Var> &vars,
                const GemmOperands &gemm) {
  size_t rank = vars.size();
  Index batch(vars.begin(), vars.end() - 2);
  Var row = vars[rank - 2], col = vars[rank - 1];
  // strategy = gemm: register tiles on a CPU, blocks of threads on a GPU;
  // naive: the plain sum at root.
  mlir::attn::ScheduleAttr attr = lowering.schedule();
  bool naive = attr.getStrategy() == mlir::attn::Strategy::naive;
  bool gpuTiled = !naive && attr.isOnGpu();
  bool blocked = GemmTile::onCpu(attr);
  if (naive) {
    RDom r(0, gemm.depth, "k");
    Expr value =
        sum(gemm.lhs(batch, row, r) * gemm.scale * gemm.rhs(batch, r, col));
    if (gemm.init)
      value = value + gemm.init(batch, row, col);
    define(out.func, vars,
           gemm.epilogue ? gemm.epilogue(batch, row, col, value) : value);
    lowering.scheduleElementwise(out, vars);
    return;
  }

  // The schedule's tile (on a GPU a block's: columns are not vectors).
  GemmTile tile = GemmTile::of(attr);
  // Decoding's step kernel: a product over the block's rows (a step's one)
  // is bound by reading the right operand (the weights). One row a tile,
  // threads over the columns, the operand read as it is (packing would
  // read and write it once more).
  bool fewRows =
      lowering.options.chunkStep && !Internal::as_const_int(gemm.rows);
  const int64_t *staticCols = Internal::as_const_int(gemm.cols);
  if (fewRows) {
    tile.tileY = 1;
    tile.unrollRows = 1;
    // Wide tiles (up to 16 vectors, whole ones): each reduction step reads
    // a long contiguous piece of an operand row.
    for (int vectors : {16, 8, 4})
      if (staticCols && *staticCols % (vectors * tile.vector) == 0) {
        tile.unrollX = tile.unrollVectors = vectors;
        break;
      }
  }
  bool parallel = attr.getParallel();
  int splitK = int(attr.getSplitK());
  // Rounded-up tiles compute a few rows/columns past the end: clamp reads.
  // Columns that fill whole tiles need no clamp (which would turn the
  // vector loads of the right operand into gathers).
  int tileX = tile.tileX();
  bool wholeColumnTiles = tile.coversColumns(gemm.cols);
  Expr safeRow = clamp(row, 0, gemm.rows - 1);
  Expr safeCol = wholeColumnTiles ? Expr(col) : clamp(col, 0, gemm.cols - 1);
  Func acc(out.func.name() + "_acc");
  std::vector<Var> accVars = vars;
  // A scale multiplies the finished sum (once per element, not per term),
  // so the initial value is added after it.
  bool scaled = gemm.scale != 1.0f;
  define(acc, accVars,
         gemm.init && !scaled ? gemm.init(batch, safeRow, safeCol)
                              : Expr(0.0f));
  RDom r(0, gemm.depth, "k");
  // The staged left operand, panel[batch..., row, k]: one row block on CPU
  // (stage_lhs), one reduction step in GPU shared memory.
  bool shared = gpuTiled && attr.getShared();
  bool stageLhs = blocked ? attr.getStageLhs() : shared;
  Func panel(out.func.name() + "_lhs");
  std::vector<Var> panelVars = makeVars(rank, "l");
  // A GPU step stages whole split_k-deep panels: the last step's panel
  // reaches past the depth when split_k does not divide it (Halide's bounds
  // ignore the step's GuardWithIf), so its k index is clamped too.
  auto panelDepth = [&](const Expr &k) {
    return shared ? clamp(k, 0, gemm.depth - 1) : k;
  };
  if (stageLhs)
    define(panel, panelVars,
           gemm.lhs(Index(panelVars.begin(), panelVars.end() - 2),
                    clamp(panelVars[rank - 2], 0, gemm.rows - 1),
                    panelDepth(panelVars[rank - 1])));
  bool pack = blocked && attr.getPackRhs() && !fewRows;
  // A right operand of its own per batch entry (a chunk's values or states)
  // is packed one column panel at a time: a task copies the tile x columns
  // it is about to sweep into a contiguous [depth][tile x] buffer, which
  // its row tiles then read (rows of a long or power-of-two stride would
  // touch a page, and a few cache sets, per reduction step).
  bool packPanel = pack && gemm.batchedRhs;
  // The right operand's panel, rhsPanel[batch..., k, col]: in GPU shared
  // memory, or a task's packed panel.
  Func rhsPanel(out.func.name() + (shared ? "_rhs_shared" : "_rhs_panel"));
  std::vector<Var> rhsVars = makeVars(rank, "h");
  if (shared || packPanel) {
    Var panelCol = rhsVars[rank - 1];
    define(rhsPanel, rhsVars,
           gemm.rhs(Index(rhsVars.begin(), rhsVars.end() - 2),
                    panelDepth(rhsVars[rank - 2]),
                    shared || !wholeColumnTiles
                        ? clamp(panelCol, 0, gemm.cols - 1)
                        : Expr(panelCol)));
  }
  // A weight packed once per run, packed(ci, k, co) (Halide order).
  bool packRhs = pack && !gemm.batchedRhs;
  Func packed(out.func.name() + "_rhs");
  Var pci("pci"), pk("pk"), pco("pco");
  if (packRhs)
    packed(pci, pk, pco) =
        gemm.rhs(Index(), pk, clamp(pco * tileX + pci, 0, gemm.cols - 1));
  {
    std::vector<Expr> lhsIndex(vars.rbegin(), vars.rend());
    Expr lhs = stageLhs ? callAt(panel, withTail(batch, {row, r}))
                        : gemm.lhs(batch, safeRow, r);
    Expr rhs = packRhs ? packed(col % tileX, r, col / tileX)
               : shared || packPanel
                   ? callAt(rhsPanel, withTail(batch, {r, col}))
                   : gemm.rhs(batch, r, safeCol);
    Expr update = acc(lhsIndex) + lhs * rhs;
    std::vector<Var> reversed(vars.rbegin(), vars.rend());
    acc(reversed) = update;
  }
  Expr finished = acc(std::vector<Expr>(vars.rbegin(), vars.rend()));
  if (scaled) {
    finished = finished * gemm.scale;
    if (gemm.init)
      finished = finished + gemm.init(batch, safeRow, safeCol);
  }
  define(out.func, vars,
         gemm.epilogue ? gemm.epilogue(batch, safeRow, safeCol, finished)
                       : finished);
  // Unclamped columns are safe only over whole tiles from column 0: a
  // consumer that reads a slice (a split's middle part) would otherwise
  // start the rounded-up tiles at the slice and read the operands (and an
  // epilogue's residual) past their last column.
  if (wholeColumnTiles && !gemm.writesOutput)
    out.func.align_bounds(col, tileX);
  out.materialized = true;
  if (gpuTiled) {
    scheduleGpuGemm(lowering, out.func, vars, acc, r, panel, rhsPanel, attr);
    return;
  }

  Var colOuter("co"), rowOuter("ro"), colInner("ci"), rowInner("ri"),
      rowBlock("rb"), rowTile("rt");
  // An output's rows are its buffer's: the last tile of rows is guarded
  // (the accumulator tile still computes whole ones).
  out.func.compute_root()
      .split(col, colOuter, colInner, tileX, TailStrategy::RoundUp)
      .split(row, rowOuter, rowInner, tile.tileY,
             gemm.writesOutput ? TailStrategy::GuardWithIf : TailStrategy::RoundUp)
      .reorder(colInner, rowInner, colOuter, rowOuter)
      .split(rowOuter, rowBlock, rowTile, tile.rowBlock,
             TailStrategy::GuardWithIf);
  if (fewRows)
    out.func.reorder(colInner, rowInner, rowTile, rowBlock, colOuter);
  else
    out.func.reorder(colInner, rowInner, rowTile, colOuter, rowBlock);
  vectorizeBy(out.func, colInner, tile.vector);
  Var blockLoop = fewRows ? colOuter : rowBlock;
  if (parallel && gemm.parallelOverBatch && rank > 2 && !fewRows) {
    // One parallel loop over the row blocks of every batch entry: for the
    // per-chunk products the chunks are the batch entries.
    std::vector<Var> outer(vars.begin(), vars.end() - 2);
    outer.push_back(rowBlock);
    blockLoop = fuseOuter(out.func, outer, outer.size());
  }
  // Otherwise sequence-form products may be asked for rows past either end
  // (keys under a block mask); keep the batch loops apart so bounds stay
  // exact. Serial when the schedule says so.
  if (parallel)
    out.func.parallel(blockLoop);
  if (packRhs) {
    packed.compute_root();
    vectorizeBy(packed, pci, tile.vector);
    if (parallel)
      packed.parallel(pco);
  }
  if (packPanel)
    vectorizeBy(rhsPanel.compute_at(out.func, colOuter), rhsVars[rank - 1],
                tile.vector);
  // Producers of the left operand computed per row block (FLASH's
  // attention accumulators, a norm's row statistics: computeInRowBlocks),
  // read by the staged operand: offered only where computesInRowBlocks,
  // never in a decoding step (fewRows).
  for (Func stage : gemm.rowBlockStages)
    stage.compute_at(out.func, blockLoop);
  if (stageLhs) {
    panel.compute_at(out.func, fewRows ? rowBlock : blockLoop);
    vectorizeBy(panel, panelVars[rank - 1], tile.vector, TailStrategy::GuardWithIf);
  }
  if (splitK > 0) {
    // Reduction blocks: the right panel of one block stays in cache.
    RVar kOuter("ko"), kInner("ki");
    acc.update()
        .split(r.x, kOuter, kInner, splitK, TailStrategy::GuardWithIf)
        .reorder(col, row, kInner, kOuter);
  } else {
    acc.update().reorder(col, row, r);
  }
  scheduleRegisterTile(acc, col, row, LoopLevel(out.func, rowTile), tile);
}

} // namespace attnc::codegen
