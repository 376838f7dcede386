//===- ScalarInterpreter.cpp - scalar ops and attn.attention's score ------===//
//
// Part of attnc, a compiler for attention layers.
//
//===----------------------------------------------------------------------===//
//
// This file implements the scalar half of the reference interpreter: the
// evaluation on doubles of the arith/math ops allowed in the `score` region
// of attn.attention (and at function level), of attn.rel_pos_bias and
// attn.t5_bias, and the ScoreFn that runs a score region for one (i, j)
// pair. Index and integer values are held as exact doubles.
//
//===----------------------------------------------------------------------===//

#include "tests/reference/InterpreterDetail.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"

#include <cmath>
#include <memory>

using namespace mlir;

namespace attnc::ref::detail {

void interpreterError(const std::string &message) {
  throw std::runtime_error("reference interpreter: " + message);
}

std::string opName(Operation *op) { return op->getName().getStringRef().str(); }

bool isScalarOp(Operation *op) {
  auto isTensor = [](Type type) { return llvm::isa<TensorType>(type); };
  return llvm::none_of(op->getOperandTypes(), isTensor) &&
         llvm::none_of(op->getResultTypes(), isTensor);
}

namespace {

/// NaN-propagating max/min, as arith.maximumf/minimumf.
double maximumF(double a, double b) {
  if (std::isnan(a) || std::isnan(b))
    return NAN;
  return a > b ? a : b;
}
double minimumF(double a, double b) {
  if (std::isnan(a) || std::isnan(b))
    return NAN;
  return a < b ? a : b;
}

} // namespace

void evalScalarOp(Operation *op, ScalarEnv &local, const ScalarEnv &outer,
                  const TensorEnv &tensors) {
  auto get = [&](Value value) -> double {
    auto it = local.find(value);
    if (it != local.end())
      return it->second;
    auto outerIt = outer.find(value);
    if (outerIt != outer.end())
      return outerIt->second;
    interpreterError("no scalar value for an operand of '" + opName(op) + "'");
  };
  auto getTensor = [&](Value value) -> const Tensor & {
    auto it = tensors.find(value);
    if (it == tensors.end())
      interpreterError("no tensor value for an operand of '" + opName(op) +
                       "'");
    return it->second;
  };
  auto set = [&](double value) { local[op->getResult(0)] = value; };
  auto binary = [&](auto fn) {
    set(fn(get(op->getOperand(0)), get(op->getOperand(1))));
  };

  if (auto constant = llvm::dyn_cast<arith::ConstantOp>(op)) {
    Attribute value = constant.getValue();
    if (auto floatAttr = llvm::dyn_cast<FloatAttr>(value))
      return set(floatAttr.getValueAsDouble());
    if (auto intAttr = llvm::dyn_cast<IntegerAttr>(value))
      return set(static_cast<double>(intAttr.getValue().getSExtValue()));
    interpreterError("unsupported arith.constant value");
  }
  if (llvm::isa<arith::AddFOp>(op))
    return binary([](double a, double b) { return a + b; });
  if (llvm::isa<arith::SubFOp>(op))
    return binary([](double a, double b) { return a - b; });
  if (llvm::isa<arith::MulFOp>(op))
    return binary([](double a, double b) { return a * b; });
  if (llvm::isa<arith::DivFOp>(op))
    return binary([](double a, double b) { return a / b; });
  if (llvm::isa<arith::MaximumFOp>(op))
    return binary(maximumF);
  if (llvm::isa<arith::MinimumFOp>(op))
    return binary(minimumF);
  if (llvm::isa<arith::NegFOp>(op))
    return set(-get(op->getOperand(0)));
  // Integer <-> index and integer -> float conversions keep the exact value.
  if (llvm::isa<arith::IndexCastOp, arith::SIToFPOp>(op))
    return set(get(op->getOperand(0)));
  if (llvm::isa<math::ExpOp>(op))
    return set(std::exp(get(op->getOperand(0))));
  if (llvm::isa<math::TanhOp>(op))
    return set(std::tanh(get(op->getOperand(0))));
  if (llvm::isa<math::SqrtOp>(op))
    return set(std::sqrt(get(op->getOperand(0))));
  if (llvm::isa<math::ErfOp>(op))
    return set(std::erf(get(op->getOperand(0))));
  if (llvm::isa<math::LogOp>(op))
    return set(std::log(get(op->getOperand(0))));
  if (llvm::isa<math::PowFOp>(op))
    return binary([](double a, double b) { return std::pow(a, b); });
  if (llvm::isa<math::FmaOp>(op))
    return set(get(op->getOperand(0)) * get(op->getOperand(1)) +
               get(op->getOperand(2)));
  if (auto bias = llvm::dyn_cast<attn::RelPosBiasOp>(op))
    return set(relPosBias(getTensor(bias.getW()),
                          static_cast<int64_t>(get(bias.getI())),
                          static_cast<int64_t>(get(bias.getJ())),
                          bias.getMaxLen()));
  if (auto bias = llvm::dyn_cast<attn::T5BiasOp>(op))
    return set(t5Bias(getTensor(bias.getEmb()),
                      static_cast<int64_t>(get(bias.getI())),
                      static_cast<int64_t>(get(bias.getJ())), bias.getCausal(),
                      bias.getNumBuckets(), bias.getMaxDistance(),
                      bias.getScale()));
  interpreterError("unsupported scalar op '" + opName(op) + "'");
}

ScoreFn makeScoreFn(attn::AttentionOp op, const ScalarEnv &outer,
                    const TensorEnv &tensors) {
  if (op.getScore().empty())
    interpreterError("attn.attention without a score block");
  Block *block = &op.getScore().front();
  if (block->getNumArguments() != 4)
    interpreterError("the score block needs 4 arguments (qk, i, j, n)");
  auto env = std::make_shared<ScalarEnv>();
  return [block, env, &outer, &tensors](double qk, int64_t i, int64_t j,
                                        int64_t n) -> double {
    ScalarEnv &local = *env;
    local[block->getArgument(0)] = qk;
    local[block->getArgument(1)] = static_cast<double>(i);
    local[block->getArgument(2)] = static_cast<double>(j);
    local[block->getArgument(3)] = static_cast<double>(n);
    for (Operation &inner : *block) {
      if (auto yield = llvm::dyn_cast<attn::YieldOp>(inner)) {
        Value value = yield.getValue();
        auto it = local.find(value);
        if (it != local.end())
          return it->second;
        auto outerIt = outer.find(value);
        if (outerIt != outer.end())
          return outerIt->second;
        interpreterError("attn.yield of an unknown value");
      }
      evalScalarOp(&inner, local, outer, tensors);
    }
    interpreterError("score block without attn.yield");
  };
}

} // namespace attnc::ref::detail
