//===- Interpreter.h - fp64 evaluation of attn model functions --*- C++ -*-===//
//
// Part of attnc, a compiler for attention layers.
//
//===----------------------------------------------------------------------===//
//
// This file declares the reference interpreter: it evaluates a model
// `func.func` of the attn dialect, layer-level or primitive-level, op by op
// in double precision, dispatching each layer op to Layers.h and each
// primitive op to Primitives.h. The `score` region of attn.attention is
// interpreted per (i, j) on doubles. Any op it does not know throws
// std::runtime_error naming the op.
//
//===----------------------------------------------------------------------===//

#ifndef ATTNC_TESTS_REFERENCE_INTERPRETER_H
#define ATTNC_TESTS_REFERENCE_INTERPRETER_H

#include "tests/reference/Layers.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

namespace attnc::ref {

/// Evaluates `model` on `inputs` (one per function argument, in order; the
/// static dims of each argument type are checked) with the named `weights`
/// (read by `attn.weight` and by the layer ops as `<layer_name>.<part>`),
/// and returns one tensor per value of the `func.return`. Supported: every
/// layer and primitive op of the attn dialect, `attn.constant` (rounded to
/// the element type), scalar `arith`/`math` ops at function level, and in
/// score regions arith.constant, addf, subf, mulf, divf, negf, maximumf,
/// minimumf, index_cast, sitofp, math.exp/tanh/sqrt/powf/erf/fma/log,
/// attn.rel_pos_bias, attn.t5_bias and attn.yield. Every op result is
/// checked against the static dims of its type.
std::vector<Tensor> evaluate(mlir::func::FuncOp model,
                             const std::vector<Tensor> &inputs,
                             const WeightMap &weights);

} // namespace attnc::ref

#endif // ATTNC_TESTS_REFERENCE_INTERPRETER_H
