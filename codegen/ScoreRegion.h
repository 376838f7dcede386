//===- ScoreRegion.h - attn.attention's score region to Halide ---*- C++ -*-===//
//
// This file declares the translation of an attention's `score` region
// (scalar arith/math ops, attn.rel_pos_bias, attn.t5_bias) into one Halide
// expression of qk, i, j and the key length, and the mask predicate.
//
//===----------------------------------------------------------------------===//
#ifndef ATTNC_CODEGEN_SCOREREGION_H
#define ATTNC_CODEGEN_SCOREREGION_H

#include "codegen/LoweringImpl.h"

namespace attnc::codegen {

/// The values of the score region's block arguments.
struct ScoreEnv {
  Halide::Expr qk;        ///< f32
  Halide::Expr i, j;      ///< int32 query and key positions
  Halide::Expr keyLength; ///< int32
};

/// Translates the region to `score`; emits an error for unsupported ops.
mlir::LogicalResult lowerScoreRegion(Lowering &lowering,
                                     mlir::attn::AttentionOp attention,
                                     const ScoreEnv &env, Halide::Expr &score);

/// Whether `mask` keeps key j for query i.
Halide::Expr maskKeeps(mlir::attn::MaskAttr mask, const Halide::Expr &i,
                       const Halide::Expr &j);

} // namespace attnc::codegen

#endif // ATTNC_CODEGEN_SCOREREGION_H
