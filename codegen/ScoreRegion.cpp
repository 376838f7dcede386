//===- ScoreRegion.cpp - attn.attention's score region to Halide ----------===//
//
// This file translates the scalar code of an attention's `score` region into
// a Halide expression: arith and math ops map to Halide operators, index
// arithmetic stays in int32, and the positional-bias ops become table reads
// (the learned Toeplitz bias with its centred clamp, and the T5 buckets with
// their float32 logarithm, spec §7.1).
//
//===----------------------------------------------------------------------===//
#include "codegen/ScoreRegion.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"

namespace attnc::codegen {

using namespace Halide;
namespace attn = mlir::attn;

namespace {
class ScalarLowering {
public:
  ScalarLowering(Lowering &lowering, mlir::Block &block, const ScoreEnv &env)
      : lowering(lowering) {
    values[block.getArgument(0)] = env.qk;
    values[block.getArgument(1)] = env.i;
    values[block.getArgument(2)] = env.j;
    values[block.getArgument(3)] = env.keyLength;
  }

  mlir::LogicalResult lower(mlir::Value value, Expr &result);

private:
  mlir::LogicalResult lowerOp(mlir::Operation *op, Expr &result);
  Lowering &lowering;
  llvm::DenseMap<mlir::Value, Expr> values;
};
} // namespace

mlir::LogicalResult ScalarLowering::lower(mlir::Value value, Expr &result) {
  auto it = values.find(value);
  if (it != values.end()) {
    result = it->second;
    return mlir::success();
  }
  mlir::Operation *op = value.getDefiningOp();
  if (!op)
    return mlir::emitError(value.getLoc())
           << "score region uses a block argument it does not own";
  if (mlir::failed(lowerOp(op, result)))
    return mlir::failure();
  values[value] = result;
  return mlir::success();
}

/// T5 bucket of relative position rp = j - i (spec §7.1), log in float32.
static Expr t5Bucket(const Expr &rp, bool causal, int buckets, int maxDistance) {
  int nb = causal ? buckets : buckets / 2;
  Expr ret = causal ? Expr(0) : select(rp > 0, nb, 0);
  // Halide's abs() of an Int(32) is UInt(32); max(rp, -rp) keeps Int(32).
  Expr r = causal ? max(-rp, 0) : max(rp, -rp);
  int exact = nb / 2;
  Expr ratio = log(cast<float>(max(r, 1)) / float(exact)) /
               std::log(float(maxDistance) / float(exact)) * float(nb - exact);
  Expr large = min(exact + cast<int>(max(ratio, 0.0f)), nb - 1);
  return ret + select(r < exact, r, large);
}

mlir::LogicalResult ScalarLowering::lowerOp(mlir::Operation *op, Expr &result) {
  auto operand = [&](unsigned index, Expr &out) {
    return lower(op->getOperand(index), out);
  };
  Expr a, b, c;
  if (auto constant = mlir::dyn_cast<mlir::arith::ConstantOp>(op)) {
    if (auto f = mlir::dyn_cast<mlir::FloatAttr>(constant.getValue())) {
      result = Expr(static_cast<float>(f.getValueAsDouble()));
      return mlir::success();
    }
    if (auto i = mlir::dyn_cast<mlir::IntegerAttr>(constant.getValue())) {
      result = Expr(static_cast<int>(i.getInt()));
      return mlir::success();
    }
  }
  if (op->getNumOperands() >= 1 && op->getNumOperands() <= 3 &&
      mlir::isa<mlir::arith::AddFOp, mlir::arith::SubFOp, mlir::arith::MulFOp,
                mlir::arith::DivFOp, mlir::arith::MaximumFOp,
                mlir::arith::MinimumFOp, mlir::arith::NegFOp,
                mlir::arith::IndexCastOp, mlir::arith::SIToFPOp,
                mlir::arith::AddIOp, mlir::arith::SubIOp, mlir::arith::MulIOp,
                mlir::math::ExpOp, mlir::math::TanhOp, mlir::math::SqrtOp,
                mlir::math::PowFOp, mlir::math::ErfOp, mlir::math::LogOp,
                mlir::math::AbsFOp, mlir::math::FmaOp>(op)) {
    if (mlir::failed(operand(0, a)))
      return mlir::failure();
    if (op->getNumOperands() > 1 && mlir::failed(operand(1, b)))
      return mlir::failure();
    if (op->getNumOperands() > 2 && mlir::failed(operand(2, c)))
      return mlir::failure();
    if (mlir::isa<mlir::arith::AddFOp, mlir::arith::AddIOp>(op)) result = a + b;
    else if (mlir::isa<mlir::arith::SubFOp, mlir::arith::SubIOp>(op)) result = a - b;
    else if (mlir::isa<mlir::arith::MulFOp, mlir::arith::MulIOp>(op)) result = a * b;
    else if (mlir::isa<mlir::arith::DivFOp>(op)) result = a / b;
    else if (mlir::isa<mlir::arith::MaximumFOp>(op)) result = max(a, b);
    else if (mlir::isa<mlir::arith::MinimumFOp>(op)) result = min(a, b);
    else if (mlir::isa<mlir::arith::NegFOp>(op)) result = -a;
    else if (mlir::isa<mlir::arith::IndexCastOp>(op)) result = a;
    else if (mlir::isa<mlir::arith::SIToFPOp>(op)) result = cast<float>(a);
    else if (mlir::isa<mlir::math::ExpOp>(op)) result = exp(a);
    else if (mlir::isa<mlir::math::TanhOp>(op)) result = tanh(a);
    else if (mlir::isa<mlir::math::SqrtOp>(op)) result = sqrt(a);
    else if (mlir::isa<mlir::math::PowFOp>(op)) result = pow(a, b);
    else if (mlir::isa<mlir::math::ErfOp>(op)) result = erf(a);
    else if (mlir::isa<mlir::math::LogOp>(op)) result = log(a);
    else if (mlir::isa<mlir::math::AbsFOp>(op)) result = abs(a);
    else result = a * b + c; // math.fma
    return mlir::success();
  }
  if (auto bias = mlir::dyn_cast<attn::RelPosBiasOp>(op)) {
    Expr i, j;
    if (mlir::failed(lower(bias.getI(), i)) || mlir::failed(lower(bias.getJ(), j)))
      return mlir::failure();
    int m = static_cast<int>(bias.getMaxLen());
    const HTensor &table = lowering.get(bias.getW());
    result = table.at({clamp(j - i, -(m - 1), m - 1) + (m - 1)});
    return mlir::success();
  }
  if (auto bias = mlir::dyn_cast<attn::T5BiasOp>(op)) {
    Expr i, j;
    if (mlir::failed(lower(bias.getI(), i)) || mlir::failed(lower(bias.getJ(), j)))
      return mlir::failure();
    int buckets = static_cast<int>(bias.getNumBuckets());
    Expr bucket = t5Bucket(j - i, bias.getCausal(), buckets,
                           static_cast<int>(bias.getMaxDistance()));
    const HTensor &table = lowering.get(bias.getEmb());
    result = table.at({clamp(bucket, 0, buckets - 1)}) *
             static_cast<float>(bias.getScale());
    return mlir::success();
  }
  return op->emitError() << "code generation does not support '"
                         << op->getName() << "' in a score region";
}

mlir::LogicalResult lowerScoreRegion(Lowering &lowering,
                                     attn::AttentionOp attention,
                                     const ScoreEnv &env, Expr &score) {
  mlir::Block &block = attention.getScore().front();
  auto yield = mlir::cast<attn::YieldOp>(block.getTerminator());
  ScalarLowering scalar(lowering, block, env);
  return scalar.lower(yield.getValue(), score);
}

} // namespace attnc::codegen
