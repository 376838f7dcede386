//===- Gemm.h - register-blocked matrix products in Halide --------*- C++ -*-===//
//
// This file declares the GEMM builder that every product-shaped stage uses
// (dense, matmul, and the batched per-chunk products of chunked attention):
// out[batch..., row, col] = init + sum_k lhs(batch, row, k) * rhs(batch, k, col).
// On CPU with the Default schedule the accumulation runs in a register tile
// (columns vectorised and unrolled, rows unrolled) inside cache blocks of
// rows, in parallel over row blocks.
//
//===----------------------------------------------------------------------===//
#ifndef ATTNC_CODEGEN_GEMM_H
#define ATTNC_CODEGEN_GEMM_H

#include "codegen/LoweringImpl.h"

#include <functional>

namespace attnc::codegen {

/// A register tile, read from an attn.schedule: `unrollX` vectors of
/// `vector` lanes (columns) by `tileY` rows of accumulators; `rowBlock`
/// tiles of rows per parallel task (gemm's row_block / tile y).
struct GemmTile {
  int vector = 1;
  int unrollX = 1;
  int tileY = 1;
  int rowBlock = 1;
  /// Unrolled vectors and rows of the tile (the schedule's `unroll`).
  /// What is not unrolled stays a loop over the tile.
  int unrollVectors = 1, unrollRows = 1;
  int tileX() const { return vector * unrollX; }
  /// Whether whole tiles cover `cols` exactly (a static multiple of tile
  /// x): rounded-up column tiles then compute nothing past the end.
  bool coversColumns(const Halide::Expr &cols) const;
  /// Whether `attr` schedules register tiles on a CPU (not naive, not a
  /// GPU's blocks of threads).
  static bool onCpu(mlir::attn::ScheduleAttr attr);
  /// The tile of a CPU schedule (strategy gemm or blocked).
  static GemmTile of(mlir::attn::ScheduleAttr attr);
};

/// Whether the lowering of `product` computes the stages handed to it
/// (Lowering::computeInRowBlocks) in its row blocks: an attn.dense or
/// attn.matmul (their lowering takes them) whose CPU schedule stages its
/// left operand per row block (stage_lhs, row_block), outside a decoding
/// step (whose product stages it per column panel) and an autoscheduler.
bool computesInRowBlocks(const Lowering &lowering, mlir::Operation *product);

/// Schedules `acc`, the accumulator of one register tile (a pure
/// definition and one update whose loops the caller has already ordered
/// reduction-outside), at `at`: columns `col` vectorised and unrolled, rows
/// `row` unrolled, its extents bounded to the tile so that it lives in
/// registers.
void scheduleRegisterTile(Halide::Func acc, const Halide::Var &col,
                          const Halide::Var &row, const Halide::LoopLevel &at,
                          const GemmTile &tile);

/// The operands of one product; indices are MLIR order (batch outermost).
struct GemmOperands {
  Halide::Expr rows, cols, depth;
  std::function<Halide::Expr(const Index &batch, const Halide::Expr &row,
                             const Halide::Expr &k)>
      lhs;
  std::function<Halide::Expr(const Index &batch, const Halide::Expr &k,
                             const Halide::Expr &col)>
      rhs;
  /// Parallelise over batch entries and row blocks together (products
  /// per chunk, whose consumers ask for exact regions).
  bool parallelOverBatch = false;
  /// The right operand has batch axes of its own (a chunk's values, not a
  /// weight): pack_rhs then packs one column panel per task.
  bool batchedRhs = false;
  /// Factor applied to the sum of the product terms (before init is added).
  float scale = 1.0f;
  /// Applied to each finished element x at (batch, row, col) (a fused
  /// activation or residual add); identity when unset.
  std::function<Halide::Expr(const Index &batch, const Halide::Expr &row,
                             const Halide::Expr &col, const Halide::Expr &x)>
      epilogue;
  /// The result is the pipeline's output (Lowering::claimOutput): it
  /// writes the caller's buffer, so its rows are guarded instead of
  /// rounded up to whole tiles (the columns fill whole tiles).
  bool writesOutput = false;
  /// Producers computed in each row block of the product (CPU, blocked),
  /// before the staged left operand that reads them (computeInRowBlocks).
  std::vector<Halide::Func> rowBlockStages;
  /// Initial value (e.g. a bias); zero when unset.
  std::function<Halide::Expr(const Index &batch, const Halide::Expr &row,
                             const Halide::Expr &col)>
      init;
};

/// Defines `out.func` over `vars` (MLIR order, last two = row, col) as the
/// product and schedules it (materialised at root) as the op's schedule
/// says, including its CPU staging: `stage_lhs` computes the left operand
/// one row block at a time in the row block's loop, `pack_rhs` packs the
/// right operand into column panels: once per run, [cols / tile x][depth]
/// [tile x], when it does not depend on the batch index (a weight); with
/// `batchedRhs`, one [depth][tile x] panel per task and column tile.
void defineGemm(Lowering &lowering, HTensor &out,
                const std::vector<Halide::Var> &vars, const GemmOperands &gemm);

} // namespace attnc::codegen

#endif // ATTNC_CODEGEN_GEMM_H
