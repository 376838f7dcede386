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

namespace attnc::codegen {

using namespace Halide;

void GemmTile::set(mlir::attn::ScheduleAttr attr) {
  vector = static_cast<int>(attr.getVector());
  unrollX = static_cast<int>(attr.getTileX() / attr.getVector());
  tileY = static_cast<int>(attr.getTileY());
  unrollVectors = static_cast<int>(attr.getUnrollX());
  unrollRows = static_cast<int>(attr.getUnrollY());
}

void scheduleRegisterTile(Func acc, const Var &col, const Var &row,
                          const LoopLevel &at, const GemmTile &tile) {
  int vectors = tile.unrollVectors > 0 ? tile.unrollVectors : tile.unrollX;
  int rows = tile.unrollRows > 0 ? tile.unrollRows : tile.tileY;
  acc.compute_at(at)
      .vectorize(col, tile.vector)
      .unroll(col, vectors)
      .unroll(row, rows);
  acc.update()
      .vectorize(col, tile.vector)
      .unroll(col, vectors)
      .unroll(row, rows);
  acc.bound_extent(col, tile.tileX()).bound_extent(row, tile.tileY);
}

void defineGemm(Lowering &lowering, HTensor &out, const std::vector<Var> &vars,
                const GemmOperands &gemm) {
  size_t rank = vars.size();
  Index batch(vars.begin(), vars.end() - 2);
  Var row = vars[rank - 2], col = vars[rank - 1];
  bool blocked = !lowering.options.gpu &&
                 lowering.options.schedule == ScheduleKind::Default;
  if (!blocked) {
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

  GemmTile tile;
  bool parallel = true;
  int splitK = 0;
  // An attn.schedule on the op (attn-tile's GEMM choice) sets the tile.
  if (mlir::attn::ScheduleAttr attr = lowering.schedule();
      attr && attr.isTiled() && attr.getVector() > 1 &&
      attr.getTileX() % attr.getVector() == 0) {
    tile.set(attr);
    parallel = attr.getParallel();
    splitK = int(attr.getSplitK());
  }
  // Rounded-up tiles compute a few rows/columns past the end: clamp reads.
  // Columns that fill whole tiles need no clamp (which would turn the
  // vector loads of the right operand into gathers).
  int tileX = tile.tileX();
  const int64_t *staticCols = Internal::as_const_int(gemm.cols);
  bool wholeColumnTiles = staticCols && *staticCols % tileX == 0;
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
  // The staged left operand, panel[batch..., row, k] (see stageLhs).
  Func panel(out.func.name() + "_lhs");
  std::vector<Var> panelVars = makeVars(rank, "l");
  if (gemm.stageLhs)
    define(panel, panelVars,
           gemm.lhs(Index(panelVars.begin(), panelVars.end() - 2),
                    clamp(panelVars[rank - 2], 0, gemm.rows - 1),
                    panelVars[rank - 1]));
  // The packed right operand, packed(ci, k, co) (Halide order; see packRhs).
  Func packed(out.func.name() + "_rhs");
  Var pci("pci"), pk("pk"), pco("pco");
  if (gemm.packRhs)
    packed(pci, pk, pco) =
        gemm.rhs(Index(), pk, clamp(pco * tileX + pci, 0, gemm.cols - 1));
  {
    std::vector<Expr> lhsIndex(vars.rbegin(), vars.rend());
    Expr lhs = gemm.stageLhs ? callAt(panel, withTail(batch, {row, r}))
                             : gemm.lhs(batch, safeRow, r);
    Expr rhs = gemm.packRhs ? packed(col % tileX, r, col / tileX)
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
  out.materialized = true;

  Var colOuter("co"), rowOuter("ro"), colInner("ci"), rowInner("ri"),
      rowBlock("rb"), rowTile("rt");
  out.func.compute_root()
      .tile(col, row, colOuter, rowOuter, colInner, rowInner, tileX, tile.tileY,
            TailStrategy::RoundUp)
      .split(rowOuter, rowBlock, rowTile, tile.rowBlock,
             TailStrategy::GuardWithIf)
      .reorder(colInner, rowInner, rowTile, colOuter, rowBlock)
      .vectorize(colInner, tile.vector);
  Var blockLoop = rowBlock;
  if (parallel && gemm.parallelOverBatch && rank > 2) {
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
  if (gemm.packRhs)
    packed.compute_root().vectorize(pci, tile.vector).parallel(pco);
  if (gemm.stageLhs)
    panel.compute_at(out.func, blockLoop)
        .vectorize(panelVars[rank - 1], tile.vector, TailStrategy::GuardWithIf);
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
