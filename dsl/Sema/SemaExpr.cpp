//===- SemaExpr.cpp - semantic analysis of .attn expressions --------------===//
//
// This file implements the checking of expressions: constants and dim
// arithmetic (exact division, positivity), names, elementwise arithmetic
// with broadcasting, matmul, powers, row indexing and transposes, and the
// scalar expressions of attention scores.
//
//===----------------------------------------------------------------------===//
#include "dsl/Sema/SemaImpl.h"

#include <cmath>

namespace attnc::dsl {

/// Constants are limited so that dim arithmetic cannot overflow.
static constexpr int64_t kMaxConstant = int64_t(1) << 40;

SemaInfo *ModelChecker::annotate(Expr &expr, SemaInfo info) {
  expr.sema = std::make_shared<SemaInfo>(std::move(info));
  return expr.sema.get();
}

std::optional<double> ModelChecker::evalNumber(const Expr &expr,
                                               llvm::StringRef what) {
  switch (expr.kind) {
  case ExprKind::Number:
    return expr.number;
  case ExprKind::Name: {
    auto it = symbols.find(expr.name);
    if (it != symbols.end() && it->second.kind == SymKind::ConstDim) {
      if (it->second.poisoned)
        return std::nullopt;
      return static_cast<double>(it->second.value);
    }
    if (it != symbols.end() && it->second.kind == SymKind::RuntimeDim) {
      diags.error(expr.loc, "runtime dim '" + expr.name + "' cannot be used "
                            "in " + what + ", which must be a constant",
                  {expr.range});
      return std::nullopt;
    }
    if (it != symbols.end()) {
      diags.error(expr.loc, "'" + expr.name + "' is a tensor; " + what +
                                " must be a constant",
                  {expr.range});
      return std::nullopt;
    }
    lookup(expr); // reports the unknown name
    return std::nullopt;
  }
  case ExprKind::Unary: {
    std::optional<double> value = evalNumber(*expr.operands[0], what);
    return value ? std::optional<double>(-*value) : std::nullopt;
  }
  case ExprKind::Binary: {
    if (expr.op == '@') {
      diags.error(expr.loc, "'@' is a matrix product; " + what +
                                " must be a constant",
                  {expr.range});
      return std::nullopt;
    }
    std::optional<double> lhs = evalNumber(*expr.operands[0], what);
    std::optional<double> rhs = evalNumber(*expr.operands[1], what);
    if (!lhs || !rhs)
      return std::nullopt;
    switch (expr.op) {
    case '+': return *lhs + *rhs;
    case '-': return *lhs - *rhs;
    case '*': return *lhs * *rhs;
    case '^': return std::pow(*lhs, *rhs);
    case '/':
      if (*rhs == 0) {
        diags.error(expr.loc, "division by zero in " + what, {expr.range});
        return std::nullopt;
      }
      return *lhs / *rhs;
    }
    return std::nullopt;
  }
  case ExprKind::Call:
    if (isUnaryFunction(expr.name) && expr.operands.size() == 1 &&
        expr.keywords.empty()) {
      std::optional<double> x = evalNumber(*expr.operands[0], what);
      if (!x)
        return std::nullopt;
      double v = *x;
      if (expr.name == "sqrt") {
        if (v < 0) {
          diags.error(expr.loc, "sqrt of a negative number in " + what,
                      {expr.range});
          return std::nullopt;
        }
        return std::sqrt(v);
      }
      if (expr.name == "exp") return std::exp(v);
      if (expr.name == "tanh") return std::tanh(v);
      if (expr.name == "relu") return v > 0 ? v : 0;
      if (expr.name == "sigmoid") return 1 / (1 + std::exp(-v));
      if (expr.name == "silu") return v / (1 + std::exp(-v));
      if (expr.name == "gelu") return 0.5 * v * (1 + std::erf(v / std::sqrt(2.0)));
    }
    [[fallthrough]];
  default:
    diags.error(expr.loc, "expected a constant number for " + what + ", found '" +
                              exprText(expr) + "'",
                {expr.range});
    return std::nullopt;
  }
}

std::optional<int64_t> ModelChecker::evalInteger(const Expr &expr,
                                                 llvm::StringRef what) {
  // Integer arithmetic is checked node by node so that a non-exact division
  // is reported where it happens.
  switch (expr.kind) {
  case ExprKind::Number:
    if (!expr.isInteger) {
      diags.error(expr.loc, "expected an integer for " + what + ", found " +
                                exprText(expr),
                  {expr.range});
      return std::nullopt;
    }
    return expr.integer;
  case ExprKind::Unary: {
    std::optional<int64_t> value = evalInteger(*expr.operands[0], what);
    return value ? std::optional<int64_t>(-*value) : std::nullopt;
  }
  case ExprKind::Binary: {
    if (expr.op == '@' || expr.op == '^')
      break;
    std::optional<int64_t> lhs = evalInteger(*expr.operands[0], what);
    std::optional<int64_t> rhs = evalInteger(*expr.operands[1], what);
    if (!lhs || !rhs)
      return std::nullopt;
    int64_t value = 0;
    switch (expr.op) {
    case '+': value = *lhs + *rhs; break;
    case '-': value = *lhs - *rhs; break;
    case '*':
      if (std::abs(*lhs) > kMaxConstant || std::abs(*rhs) > kMaxConstant ||
          (*rhs != 0 && std::abs(*lhs) > kMaxConstant / std::abs(*rhs))) {
        diags.error(expr.loc, "value of '" + exprText(expr) + "' is too large",
                    {expr.range});
        return std::nullopt;
      }
      value = *lhs * *rhs;
      break;
    case '/':
      if (*rhs == 0) {
        diags.error(expr.loc, "division by zero in " + what, {expr.range});
        return std::nullopt;
      }
      if (*lhs % *rhs != 0) {
        diags.error(expr.loc, "'" + exprText(expr) + "' does not divide: " +
                                  llvm::Twine(*lhs) + " is not a multiple of " +
                                  llvm::Twine(*rhs),
                    {expr.range});
        return std::nullopt;
      }
      value = *lhs / *rhs;
      break;
    }
    if (std::abs(value) > kMaxConstant) {
      diags.error(expr.loc, "value of '" + exprText(expr) + "' is too large",
                  {expr.range});
      return std::nullopt;
    }
    return value;
  }
  default:
    break;
  }
  std::optional<double> number = evalNumber(expr, what);
  if (!number)
    return std::nullopt;
  if (*number != std::floor(*number) || std::abs(*number) > kMaxConstant) {
    diags.error(expr.loc, "expected an integer for " + what + ", found '" +
                              exprText(expr) + "' = " + std::to_string(*number),
                {expr.range});
    return std::nullopt;
  }
  return static_cast<int64_t>(*number);
}

std::optional<int64_t> ModelChecker::evalSize(const Expr &expr,
                                              llvm::StringRef what) {
  std::optional<int64_t> value = evalInteger(expr, what);
  if (value && *value < 1) {
    diags.error(expr.loc, what + " must be at least 1, but '" +
                              exprText(expr) + "' is " + llvm::Twine(*value),
                {expr.range});
    return std::nullopt;
  }
  return value;
}

SemaInfo *ModelChecker::checkTensorExpr(Expr &expr) {
  SemaInfo *info = checkExpr(expr, false);
  if (!info)
    return nullptr;
  if (info->kind == ValueKind::Tensor)
    return info;
  if (info->kind == ValueKind::Tuple)
    diags.error(expr.loc, expr.name + "(...) produces " +
                              llvm::Twine(info->tuple.size()) +
                              " results; bind them with 'a, b, ... = " +
                              expr.name + "(...)' first",
                {expr.range});
  else
    diags.error(expr.loc, "expected a tensor, found the constant '" +
                              exprText(expr) + "'",
                {expr.range});
  return nullptr;
}

SemaInfo *ModelChecker::checkExpr(Expr &expr, bool scoreContext) {
  switch (expr.kind) {
  case ExprKind::Number: {
    SemaInfo info;
    info.kind = ValueKind::Number;
    info.number = expr.number;
    info.isInteger = expr.isInteger;
    return annotate(expr, info);
  }
  case ExprKind::Bool:
  case ExprKind::None:
    diags.error(expr.loc, "'" + exprText(expr) + "' is only allowed as the "
                          "value of a keyword argument",
                {expr.range});
    return nullptr;
  case ExprKind::List:
    diags.error(expr.loc, "a list is only allowed as the sizes of "
                          "split(x, [...])",
                {expr.range});
    return nullptr;
  case ExprKind::Name: {
    if (scoreContext) {
      auto it = symbols.find(expr.name);
      bool seqDim = it != symbols.end() &&
                    it->second.kind == SymKind::RuntimeDim &&
                    it->second.runtimeKind == RuntimeDimKind::Seq;
      if (expr.name == "qk" || expr.name == "i" || expr.name == "j" ||
          expr.name == "n" || seqDim) {
        SemaInfo info;
        info.kind = ValueKind::ScoreScalar;
        info.scoreVar = seqDim ? "n" : expr.name;
        return annotate(expr, info);
      }
    }
    const Symbol *symbol = lookup(expr);
    if (!symbol)
      return nullptr;
    SemaInfo info;
    switch (symbol->kind) {
    case SymKind::ConstDim:
      info.kind = ValueKind::Number;
      info.number = static_cast<double>(symbol->value);
      info.isInteger = true;
      return annotate(expr, info);
    case SymKind::RuntimeDim:
      diags.error(expr.loc, "runtime dim '" + expr.name +
                                "' has no value at compile time; it can only "
                                "appear in shapes (or as n in a score)",
                  {expr.range});
      return nullptr;
    case SymKind::Output:
      if (outputAssigned[symbol->outputIndex])
        break;
      diags.error(expr.loc, "output '" + expr.name +
                                "' is used before it is assigned",
                  {expr.range});
      return nullptr;
    case SymKind::Tensor:
      break;
    }
    if (scoreContext) {
      diags.error(expr.loc, "tensor '" + expr.name +
                                "' cannot be used in a score expression; a "
                                "score uses qk, i, j, n, constants, and "
                                "rel_pos_bias(w) / t5_bias(w) of params",
                  {expr.range});
      return nullptr;
    }
    if (symbol->type.dtype == "i32" && !readingTokenIds) {
      diags.error(expr.loc, "'" + expr.name + "' holds token ids (i32); "
                            "they can only be read by embedding(" +
                            expr.name + ", table)",
                  {expr.range});
      return nullptr;
    }
    info.kind = ValueKind::Tensor;
    info.type = symbol->type;
    return annotate(expr, info);
  }
  case ExprKind::Unary: {
    SemaInfo *operand = checkExpr(*expr.operands[0], scoreContext);
    if (!operand)
      return nullptr;
    if (operand->kind == ValueKind::Tuple)
      return checkTensorExpr(*expr.operands[0]);
    SemaInfo info = *operand;
    info.config.clear();
    info.layerNames.clear();
    info.scoreVar.clear();
    if (info.kind == ValueKind::Number)
      info.number = -info.number;
    return annotate(expr, info);
  }
  case ExprKind::Binary:
    return checkBinary(expr, scoreContext);
  case ExprKind::Index: {
    if (scoreContext) {
      diags.error(expr.loc, "indexing is not allowed in a score expression",
                  {expr.range});
      return nullptr;
    }
    SemaInfo *base = checkTensorExpr(*expr.operands[0]);
    if (!base)
      return nullptr;
    const TensorType &type = base->type;
    if (type.rank() != 2 || !type.shape[0].isStatic() ||
        !type.shape[1].isStatic()) {
      diags.error(expr.loc, "only a row of a 2-d tensor with constant "
                            "dims can be indexed, but '" +
                                exprText(*expr.operands[0]) + "' is " +
                                type.str(),
                  {expr.range});
      return nullptr;
    }
    std::optional<int64_t> index = evalInteger(*expr.operands[1], "a row index");
    if (!index)
      return nullptr;
    if (*index < 0 || *index >= type.shape[0].size) {
      diags.error(expr.operands[1]->loc,
                  "row index " + llvm::Twine(*index) + " is out of range for " +
                      type.str() + " (rows 0.." +
                      llvm::Twine(type.shape[0].size - 1) + ")",
                  {expr.operands[1]->range});
      return nullptr;
    }
    SemaInfo info;
    info.type = {type.dtype, {type.shape[1]}};
    info.config["index"].size = *index;
    return annotate(expr, info);
  }
  case ExprKind::Transpose: {
    if (scoreContext) {
      diags.error(expr.loc, "transpose is not allowed in a score expression",
                  {expr.range});
      return nullptr;
    }
    SemaInfo *base = checkTensorExpr(*expr.operands[0]);
    if (!base)
      return nullptr;
    if (base->type.rank() < 2) {
      diags.error(expr.loc, "transpose needs a tensor of rank 2 or more, but '" +
                                exprText(*expr.operands[0]) + "' is " +
                                base->type.str(),
                  {expr.range});
      return nullptr;
    }
    SemaInfo info;
    info.type = base->type;
    std::swap(info.type.shape[info.type.rank() - 1],
              info.type.shape[info.type.rank() - 2]);
    return annotate(expr, info);
  }
  case ExprKind::Call:
    return checkCall(expr, scoreContext);
  case ExprKind::Repeat:
    if (scoreContext) {
      diags.error(expr.loc, "repeat is not allowed in a score expression",
                  {expr.range});
      return nullptr;
    }
    return checkRepeat(expr);
  }
  return nullptr;
}

SemaInfo *ModelChecker::checkBinary(Expr &expr, bool scoreContext) {
  Expr &lhsExpr = *expr.operands[0];
  Expr &rhsExpr = *expr.operands[1];
  SemaInfo *lhs = checkExpr(lhsExpr, scoreContext);
  SemaInfo *rhs = checkExpr(rhsExpr, scoreContext);
  if (!lhs || !rhs)
    return nullptr;
  for (Expr *side : {&lhsExpr, &rhsExpr})
    if (side->sema->kind == ValueKind::Tuple)
      return checkTensorExpr(*side);
  std::string opText(1, expr.op);
  SemaInfo info;

  if (expr.op == '@') {
    if (lhs->kind != ValueKind::Tensor || rhs->kind != ValueKind::Tensor) {
      diags.error(expr.loc, "both sides of '@' must be tensors", {expr.range});
      return nullptr;
    }
    const TensorType &a = lhs->type, &b = rhs->type;
    if (a.rank() < 2 || b.rank() < 2) {
      diags.error(expr.loc, "'@' needs tensors of rank >= 2 on both sides, got " +
                                a.str() + " @ " + b.str(),
                  {expr.range});
      return nullptr;
    }
    if (a.shape.back() != b.shape[b.rank() - 2]) {
      diags.error(expr.loc, "shape mismatch in '@': " + a.str() + " @ " +
                                b.str() + " (inner dims " +
                                a.shape.back().str() + " and " +
                                b.shape[b.rank() - 2].str() + " differ)",
                  {lhsExpr.range, rhsExpr.range});
      return nullptr;
    }
    if (b.rank() > 2) {
      Shape aBatch(a.shape.begin(), a.shape.end() - 2 < a.shape.begin()
                                        ? a.shape.begin()
                                        : a.shape.end() - 2);
      Shape bBatch(b.shape.begin(), b.shape.end() - 2);
      if (a.rank() != b.rank() || aBatch != bBatch) {
        diags.error(expr.loc, "shape mismatch in '@': " + a.str() + " @ " +
                                  b.str() +
                                  " (a batched right side needs the same "
                                  "leading dims as the left side)",
                    {lhsExpr.range, rhsExpr.range});
        return nullptr;
      }
    }
    if (a.dtype != b.dtype) {
      diags.error(expr.loc, "element types differ in '@': " + a.str() + " @ " +
                                b.str(),
                  {expr.range});
      return nullptr;
    }
    info.type.dtype = a.dtype;
    info.type.shape.assign(a.shape.begin(), a.shape.end() - 1);
    info.type.shape.push_back(b.shape.back());
    return annotate(expr, info);
  }

  if (expr.op == '^' && rhs->kind != ValueKind::Number) {
    diags.error(rhsExpr.loc, "the exponent of '^' must be a constant number",
                {rhsExpr.range});
    return nullptr;
  }

  // Constant folding.
  if (lhs->kind == ValueKind::Number && rhs->kind == ValueKind::Number) {
    info.kind = ValueKind::Number;
    double a = lhs->number, b = rhs->number;
    switch (expr.op) {
    case '+': info.number = a + b; break;
    case '-': info.number = a - b; break;
    case '*': info.number = a * b; break;
    case '^': info.number = std::pow(a, b); break;
    case '/':
      if (b == 0) {
        diags.error(expr.loc, "division by zero", {expr.range});
        return nullptr;
      }
      info.number = a / b;
      break;
    }
    info.isInteger = lhs->isInteger && rhs->isInteger && expr.op != '/' &&
                     expr.op != '^' && std::abs(info.number) < 1e15;
    if (!std::isfinite(info.number)) {
      diags.error(expr.loc, "constant '" + exprText(expr) +
                                "' is not a finite number",
                  {expr.range});
      return nullptr;
    }
    return annotate(expr, info);
  }

  if (lhs->kind == ValueKind::ScoreScalar || rhs->kind == ValueKind::ScoreScalar) {
    info.kind = ValueKind::ScoreScalar;
    return annotate(expr, info);
  }

  // Tensor arithmetic with numpy broadcasting; numbers are scalars.
  if (lhs->kind == ValueKind::Number) {
    info.type = rhs->type;
    return annotate(expr, info);
  }
  if (rhs->kind == ValueKind::Number) {
    info.type = lhs->type;
    return annotate(expr, info);
  }
  if (lhs->type.dtype != rhs->type.dtype) {
    diags.error(expr.loc, "element types differ in '" + opText + "': " +
                              lhs->type.str() + " and " + rhs->type.str(),
                {expr.range});
    return nullptr;
  }
  Dim badLhs, badRhs;
  std::optional<Shape> shape =
      broadcastShapes(lhs->type.shape, rhs->type.shape, &badLhs, &badRhs);
  if (!shape) {
    diags.error(expr.loc, "shape mismatch in '" + opText + "': " +
                              lhs->type.str() + " and " + rhs->type.str() +
                              " do not broadcast (" + badLhs.str() + " vs " +
                              badRhs.str() + ")",
                {lhsExpr.range, rhsExpr.range});
    return nullptr;
  }
  info.type = {lhs->type.dtype, *shape};
  return annotate(expr, info);
}

} // namespace attnc::dsl
