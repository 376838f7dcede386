//===- Elementwise.cpp - attn -> Halide: elementwise ops ------------------===//
//
// This file lowers constants, the broadcasting binary ops (add, sub, mul,
// div, pow), the unary activations and scale_offset. Elementwise results
// are materialised at root with a vectorised inner loop (Default schedule).
//
//===----------------------------------------------------------------------===//
#include "codegen/LoweringImpl.h"

namespace attnc::codegen {

using namespace Halide;
namespace attn = mlir::attn;

/// Index into an operand of a numpy-broadcast: aligned at the last axis;
/// a static size-1 axis is read at 0.
static Index broadcastIndex(mlir::Value operand, const Index &result) {
  auto type = mlir::cast<mlir::RankedTensorType>(operand.getType());
  size_t rank = type.getRank(), offset = result.size() - rank;
  Index index;
  for (size_t i = 0; i < rank; ++i)
    index.push_back(!type.isDynamicDim(i) && type.getDimSize(i) == 1
                        ? Expr(0)
                        : result[offset + i]);
  return index;
}

/// Result extents of a broadcast: the first operand's extent unless that
/// axis is a static 1 (or absent).
static std::vector<Expr> broadcastExtents(Lowering &lowering, mlir::Value a,
                                          mlir::Value b, mlir::Value result) {
  auto type = mlir::cast<mlir::RankedTensorType>(result.getType());
  std::vector<Expr> from(type.getRank());
  for (mlir::Value operand : {b, a}) { // a wins
    const HTensor &t = lowering.get(operand);
    size_t offset = type.getRank() - t.rank();
    auto operandType = mlir::cast<mlir::RankedTensorType>(operand.getType());
    for (size_t i = 0; i < t.rank(); ++i)
      if (operandType.isDynamicDim(i) || operandType.getDimSize(i) != 1)
        from[offset + i] = t.extents[i];
  }
  for (Expr &e : from)
    if (!e.defined())
      e = Expr(1);
  return lowering.extentsLike(result, from);
}

static Expr sigmoid(const Expr &x) { return 1.0f / (1.0f + exp(-x)); }

Expr applyActivation(mlir::Operation *op, const Expr &x) {
  if (mlir::isa<attn::SiluOp>(op)) return x * sigmoid(x);
  if (mlir::isa<attn::GeluOp>(op))
    return 0.5f * x * (1.0f + erf(x * 0.70710678118654752f));
  if (mlir::isa<attn::ReluOp>(op)) return max(x, 0.0f);
  if (mlir::isa<attn::SigmoidOp>(op)) return sigmoid(x);
  if (mlir::isa<attn::ExpOp>(op)) return exp(x);
  if (mlir::isa<attn::TanhOp>(op)) return tanh(x);
  return Expr();
}

Expr divideOrZero(const Expr &a, const Expr &b) {
  return select(b == 0.0f, 0.0f, a / b);
}

mlir::LogicalResult lowerElementwise(Lowering &lowering, mlir::Operation *op) {
  if (auto constant = mlir::dyn_cast<attn::ConstantOp>(op)) {
    HTensor t;
    t.func = Func("constant");
    t.func() = Expr(static_cast<float>(constant.getValue()));
    lowering.set(constant, t);
    return mlir::success();
  }
  if (mlir::isa<attn::AddOp, attn::SubOp, attn::MulOp, attn::DivOp,
                attn::DivOrZeroOp, attn::PowOp>(op)) {
    mlir::Value a = op->getOperand(0), b = op->getOperand(1);
    mlir::Value result = op->getResult(0);
    HTensor t;
    t.func = Func(op->getName().stripDialect().str());
    t.extents = broadcastExtents(lowering, a, b, result);
    std::vector<Var> vars = makeVars(t.rank(), "e");
    Index index = toIndex(vars);
    Expr x = lowering.get(a).at(broadcastIndex(a, index));
    Expr y = lowering.get(b).at(broadcastIndex(b, index));
    Expr value;
    if (mlir::isa<attn::AddOp>(op)) value = x + y;
    else if (mlir::isa<attn::SubOp>(op)) value = x - y;
    else if (mlir::isa<attn::MulOp>(op)) value = x * y;
    else if (mlir::isa<attn::DivOp>(op)) value = x / y;
    else if (mlir::isa<attn::DivOrZeroOp>(op))
      value = divideOrZero(x, y);
    else value = pow(x, y);
    define(t.func, vars, value);
    lowering.scheduleElementwise(t, vars);
    lowering.set(result, t);
    return mlir::success();
  }
  if (mlir::isa<attn::NegOp, attn::SiluOp, attn::GeluOp, attn::ReluOp,
                attn::SigmoidOp, attn::ExpOp, attn::TanhOp, attn::SqrtOp>(op)) {
    const HTensor &in = lowering.get(op->getOperand(0));
    HTensor t;
    t.func = Func(op->getName().stripDialect().str());
    t.extents = in.extents;
    std::vector<Var> vars = makeVars(t.rank(), "e");
    Expr x = in.at(toIndex(vars));
    Expr value = applyActivation(op, x);
    if (!value.defined())
      value = mlir::isa<attn::NegOp>(op) ? -x : sqrt(x);
    define(t.func, vars, value);
    lowering.scheduleElementwise(t, vars);
    lowering.set(op->getResult(0), t);
    return mlir::success();
  }
  if (auto so = mlir::dyn_cast<attn::ScaleOffsetOp>(op)) {
    const HTensor &in = lowering.get(so.getX());
    const HTensor &gamma = lowering.get(so.getGamma());
    const HTensor &beta = lowering.get(so.getBeta());
    HTensor t;
    t.func = Func("scale_offset");
    t.extents = in.extents;
    std::vector<Var> vars = makeVars(t.rank(), "e");
    Expr c = vars.back();
    define(t.func, vars, in.at(toIndex(vars)) * gamma.at({c}) + beta.at({c}));
    lowering.scheduleElementwise(t, vars);
    lowering.set(so, t);
    return mlir::success();
  }
  return op->emitError() << "internal error: '" << op->getName()
                         << "' reached the wrong lowering";
}

} // namespace attnc::codegen
