//===- Matmul.cpp - attn -> Halide: matmul and dense ----------------------===//
//
// This file lowers attn.matmul (shared or batched right operand) and
// attn.dense (x @ W + bias). The Default CPU schedule is a register-blocked
// GEMM (see scheduleGemm in Gemm.cpp); the naive and GPU schedules compute
// an inline reduction per output element.
//
//===----------------------------------------------------------------------===//
#include "codegen/Gemm.h"
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
  mlir::Operation *user = lowering.epilogueOf(result.getDefiningOp());
  mlir::Value residualValue;
  if (user && !applyActivation(user, Expr(0.0f)).defined())
    residualValue = user->getOperand(0) == result ? user->getOperand(1)
                                                  : user->getOperand(0);
  // A returned product (with its epilogue) stores into the output when
  // its register tiles cover the columns exactly: the columns' tiles round
  // up, which an output's fixed bounds allow only then. The output may take
  // an input's memory when the product reads the arguments only at the
  // element it writes: a residual that is an argument itself.
  GemmOperands gemm;
  std::optional<Func> output;
  mlir::attn::ScheduleAttr attr = lowering.schedule();
  if (GemmTile::onCpu(attr) &&
      GemmTile::of(attr).coversColumns(b.extents.back())) {
    auto afterInputs = [&] {
      auto argumentOrStored = [&](mlir::Value value) {
        return mlir::isa<mlir::BlockArgument>(value) ||
               lowering.readsNoArgument(value);
      };
      return lowering.readsNoArgument(aValue) &&
             lowering.readsNoArgument(bValue) &&
             (!biasValue || lowering.readsNoArgument(biasValue)) &&
             (!residualValue || argumentOrStored(residualValue));
    };
    output =
        lowering.claimOutput(user ? user->getResult(0) : result, afterInputs);
    gemm.writesOutput = output.has_value();
  }
  HTensor t;
  t.func = output ? *output : Func(biasValue ? "dense" : "matmul");
  std::vector<Expr> from = a.extents;
  from.back() = b.extents.back();
  t.extents = lowering.extentsLike(result, from);
  std::vector<Var> vars = makeVars(t.rank(), "m");

  gemm.rows = a.extents[a.rank() - 2];
  gemm.cols = b.extents.back();
  gemm.depth = a.extents.back();
  gemm.lhs = [&a](const Index &batch, const Expr &row, const Expr &k) {
    return a.at(withTail(batch, {row, k}));
  };
  gemm.rhs = [&b](const Index &batch, const Expr &k, const Expr &col) {
    return b.at(b.rank() == 2 ? Index{k, col} : withTail(batch, {k, col}));
  };
  gemm.batchedRhs = b.rank() > 2;
  // Stages computed in the row blocks (FLASH's chunk attention: the tasks
  // are the row blocks of every batch entry, as the attention's were).
  Lowering::RowBlockStages stages =
      lowering.takeRowBlockStages(result.getDefiningOp());
  gemm.rowBlockStages = std::move(stages.funcs);
  gemm.parallelOverBatch = stages.tasksOverBatch;
  if (biasValue) {
    const HTensor &bias = lowering.get(biasValue);
    gemm.init = [&bias](const Index &, const Expr &, const Expr &col) {
      return bias.at({col});
    };
  }
  // A fused epilogue: the activation, or the residual added, after the
  // product.
  if (user) {
    lowering.aliasTo(user, result); // computed in the product's output stage
    if (!residualValue) {
      gemm.epilogue = [user](const Index &, const Expr &, const Expr &,
                             const Expr &x) {
        return applyActivation(user, x);
      };
    } else {
      const HTensor &residual = lowering.get(residualValue);
      gemm.epilogue = [&residual](const Index &batch, const Expr &row,
                                  const Expr &col, const Expr &x) {
        return x + residual.at(withTail(batch, {row, col}));
      };
    }
  }
  defineGemm(lowering, t, vars, gemm);
  return t;
}

mlir::LogicalResult lowerMatmul(Lowering &lowering, mlir::Operation *op) {
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
  return op->emitError() << "internal error: '" << op->getName()
                         << "' reached the wrong lowering";
}

} // namespace attnc::codegen
