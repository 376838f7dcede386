//===- InterpreterDetail.h - scalar evaluation for the interpreter -*- C++ -*-===//
//
// Part of attnc, a compiler for attention layers.
//
//===----------------------------------------------------------------------===//
//
// This file declares the private scalar part of the reference interpreter
// (ScalarInterpreter.cpp): the environments that map SSA values to tensors
// and to scalars (f32 and index values held as doubles), the evaluation of
// one scalar arith/math/attn op, and the ScoreFn that runs the `score`
// region of attn.attention for one (i, j) pair.
//
//===----------------------------------------------------------------------===//

#ifndef ATTNC_TESTS_REFERENCE_INTERPRETERDETAIL_H
#define ATTNC_TESTS_REFERENCE_INTERPRETERDETAIL_H

#include "tests/reference/Interpreter.h"

#include "dsl/IR/AttnOps.h"

#include "llvm/ADT/DenseMap.h"

namespace attnc::ref::detail {

/// Tensor values of the function body.
using TensorEnv = llvm::DenseMap<mlir::Value, Tensor>;
/// Scalar values (f32, index, integers) as doubles.
using ScalarEnv = llvm::DenseMap<mlir::Value, double>;

/// `reference interpreter: <message>` as a std::runtime_error.
[[noreturn]] void interpreterError(const std::string &message);

/// The name of op for messages, e.g. `arith.cmpi`.
std::string opName(mlir::Operation *op);

/// True if every operand and result of op is a scalar (not a tensor).
bool isScalarOp(mlir::Operation *op);

/// Evaluates the scalar op `op` and stores its result in `local`. Scalar
/// operands are looked up in `local`, then in `outer` (values defined above
/// a region); tensor operands (weights of the bias ops) in `tensors`.
/// Throws for an op outside the supported set, naming it.
void evalScalarOp(mlir::Operation *op, ScalarEnv &local,
                  const ScalarEnv &outer, const TensorEnv &tensors);

/// The score function of `op`: interprets its `score` region for one
/// (qk, i, j, n). The environments must outlive the returned function.
ScoreFn makeScoreFn(mlir::attn::AttentionOp op, const ScalarEnv &outer,
                    const TensorEnv &tensors);

} // namespace attnc::ref::detail

#endif // ATTNC_TESTS_REFERENCE_INTERPRETERDETAIL_H
