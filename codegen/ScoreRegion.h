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

#include <functional>

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

/// Features per head of attention operand `value` (q, k or v): its static
/// last dim over the heads (lowerAttention rejects dynamic ones).
int featuresPerHead(mlir::attn::AttentionOp attention, mlir::Value value);

/// Whether `mask` keeps key j for query i.
Halide::Expr maskKeeps(mlir::attn::MaskAttr mask, const Halide::Expr &i,
                       const Halide::Expr &j);

/// Whether some query of the `rowBlock` queries from rowLo keeps some key
/// of the `keyBlock` keys from keyLo under `mask` (conservative: true
/// whenever unsure; always true for chunk masks). Written as bounds on the
/// key block so that Halide trims a loop over key blocks to the kept ones.
Halide::Expr blockKept(mlir::attn::MaskAttr mask, int rowBlock, int keyBlock,
                       const Halide::Expr &rowLo, const Halide::Expr &keyLo);

/// The key at (batch..., feature, key index) as a blocked attention reads
/// it (transposed on a CPU, clamped on CUDA).
using KeyAccess = std::function<Halide::Expr(
    const Index &batch, const Halide::Expr &feature, const Halide::Expr &j)>;

/// One block of scores of head h over sVars = [batch..., h, i, j] (MLIR
/// order): `qk` (named `name`_qk, reduction `r` over the head's features)
/// = q[batch..., clamp(i), h * dk + r] * key(batch, h * dk + r, j), and
/// `score` the score region applied to it.
mlir::LogicalResult defineBlockScores(Lowering &lowering,
                                      mlir::attn::AttentionOp attention,
                                      const std::vector<Halide::Var> &sVars,
                                      const std::string &name,
                                      const KeyAccess &key, Halide::Func &qk,
                                      Halide::RDom &r, Halide::Expr &score);

/// Blocked attention on CUDA (an attention schedule with gpu_threads and
/// shared = true; see AttentionGpu.cpp).
mlir::LogicalResult lowerGpuTiledAttention(Lowering &lowering,
                                           mlir::attn::AttentionOp attention,
                                           mlir::attn::ScheduleAttr attr);

} // namespace attnc::codegen

#endif // ATTNC_CODEGEN_SCOREREGION_H
