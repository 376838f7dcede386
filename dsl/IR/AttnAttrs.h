//===- AttnAttrs.h - attn dialect enums and attributes ----------*- C++ -*-===//
//
// Part of attnc, a compiler for attention layers.
//
//===----------------------------------------------------------------------===//
//
// This file declares the enums of the attn dialect (NormKind, RelPosKind,
// FeatureMap, Activation, Normalize, RopeMode, MaskKind, ComputeAt,
// Strategy), their
// attributes, `#attn.mask<...>` (MaskAttr) and `#attn.schedule<...>`
// (ScheduleAttr, built from a ScheduleParams), all generated from
// AttnAttrs.td.
//
//===----------------------------------------------------------------------===//

#ifndef ATTNC_DSL_IR_ATTNATTRS_H
#define ATTNC_DSL_IR_ATTNATTRS_H

#include "mlir/IR/Attributes.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/DialectImplementation.h"
#include "mlir/IR/Operation.h"

#include "dsl/IR/AttnEnums.h.inc"

namespace mlir::attn {

/// The parameters of `#attn.schedule<...>` as a plain struct whose members
/// hold the defaults (plain loops, no tiling, scalar, serial, at root, not on
/// a GPU).
/// Build with `ScheduleAttr::get(ctx, params)` or, to get a reason instead
/// of an illegal attribute, `ScheduleAttr::getChecked(emitError, ctx, params)`.
struct ScheduleParams {
  Strategy strategy = Strategy::loops; ///< The algorithm.
  int64_t tileX = 1;       ///< Tile columns (axis -1); 1 = not tiled.
  int64_t tileY = 1;       ///< Tile rows (axis -2); 1 = not tiled.
  int64_t vector = 1;      ///< SIMD lanes of the innermost loop; 1 = scalar.
  int64_t unrollX = 1;     ///< Vectors of tile x unrolled.
  int64_t unrollY = 1;     ///< Rows of tile y unrolled.
  int64_t splitK = 0;      ///< Reduction block; 0 = not split.
  int64_t rowBlock = 0;    ///< CPU gemm: rows per parallel task; 0 = none.
  bool stageLhs = false;   ///< CPU gemm: left operand staged per row block.
  bool packRhs = false;    ///< CPU gemm: right operand packed in column panels.
  bool parallel = false;   ///< Outer row loop on all threads.
  ComputeAt compute = ComputeAt::root; ///< Where the stage is computed.
  int64_t gpuThreadsX = 0; ///< CUDA threads along x; 0 = not on a GPU.
  int64_t gpuThreadsY = 0; ///< CUDA threads along y; 0 = not on a GPU.
  bool shared = false;     ///< Operands staged in GPU shared memory.
};

} // namespace mlir::attn

#define GET_ATTRDEF_CLASSES
#include "dsl/IR/AttnAttrs.h.inc"

namespace mlir::attn {
/// Checks the rules of a schedule that depend on the op it is attached to
/// (the dialect runs it on every op that carries one): the strategies of
/// products, attention and the other ops, and blocked GPU attention's fit
/// to the heads.
LogicalResult verifyScheduleForOp(Operation *op, const ScheduleParams &schedule,
                                  function_ref<InFlightDiagnostic()> emitError);
} // namespace mlir::attn

#endif // ATTNC_DSL_IR_ATTNATTRS_H
