//===- Matmul.cpp - attn -> Halide: matmul and dense ----------------------===//
//
// This file lowers attn.matmul (shared or batched right operand) and
// attn.dense (x @ W + bias). The Default schedule vectorises the output
// columns and parallelises the rows; attn-tile (issue 4) replaces it with
// register-blocked tiles.
//
//===----------------------------------------------------------------------===//
#include "codegen/LoweringImpl.h"

namespace attnc::codegen {

using namespace Halide;
namespace attn = mlir::attn;

/// `sum_k a[..., m, k] * b[(...,) k, n]` (+ bias[n]).
static HTensor product(Lowering &lowering, mlir::Value aValue,
                       mlir::Value bValue, mlir::Value biasValue,
                       mlir::Value result) {
  const HTensor &a = lowering.get(aValue);
  const HTensor &b = lowering.get(bValue);
  HTensor t;
  t.func = Func(biasValue ? "dense" : "matmul");
  std::vector<Expr> from = a.extents;
  from.back() = b.extents.back();
  t.extents = lowering.extentsLike(result, from);
  std::vector<Var> vars = makeVars(t.rank(), "m");
  Index index = toIndex(vars);
  RDom r(0, a.extents.back(), "k");
  Index aIndex = index;
  aIndex.back() = r;
  Index bIndex;
  if (b.rank() == 2) {
    bIndex = {Expr(r), index.back()};
  } else {
    bIndex = index;
    bIndex[bIndex.size() - 2] = r;
  }
  Expr value = sum(a.at(aIndex) * b.at(bIndex));
  if (biasValue)
    value = value + lowering.get(biasValue).at({index.back()});
  define(t.func, vars, value);
  lowering.scheduleElementwise(t, vars);
  return t;
}

mlir::LogicalResult lowerMatmul(Lowering &lowering, mlir::Operation *op,
                                bool &handled) {
  handled = true;
  if (auto matmul = mlir::dyn_cast<attn::MatmulOp>(op)) {
    lowering.set(matmul, product(lowering, matmul.getA(), matmul.getB(),
                                 mlir::Value(), matmul));
    return mlir::success();
  }
  if (auto dense = mlir::dyn_cast<attn::DenseOp>(op)) {
    lowering.set(dense, product(lowering, dense.getX(), dense.getW(),
                                dense.getBias(), dense));
    return mlir::success();
  }
  handled = false;
  return mlir::success();
}

} // namespace attnc::codegen
