//===- AttnKernelOps.cpp - attn.kernel and the op classes fusion uses -----===//
//
// Part of attnc, a compiler for attention layers.
//
//===----------------------------------------------------------------------===//
//
// This file implements attn.kernel (its verifier and its anchor) and the
// op classes that attn-fuse, attn-tile and codegen share: elementwise ops,
// activations and products.
//
//===----------------------------------------------------------------------===//

#include "dsl/IR/AttnOps.h"

using namespace mlir;
using namespace mlir::attn;

bool mlir::attn::isElementwise(Operation *op) {
  return op->hasTrait<OpTrait::Elementwise>();
}

bool mlir::attn::isActivation(Operation *op) {
  return op->hasTrait<OpTrait::Activation>();
}

bool mlir::attn::isProduct(Operation *op) {
  auto product = dyn_cast<ProductOpInterface>(op);
  return product && product.fusesOperandStages();
}

Operation *mlir::attn::getOnlyUser(Value value) {
  return value.hasOneUse() ? *value.getUsers().begin() : nullptr;
}

AttentionOp mlir::attn::getGatedChunkAttention(Value lhs) {
  auto gate = lhs.getDefiningOp<MulOp>();
  if (!gate || !lhs.hasOneUse())
    return {};
  for (Value operand : gate->getOperands()) {
    auto sum = operand.getDefiningOp<AddOp>();
    if (!sum || !operand.hasOneUse() || sum.getType() != gate.getType())
      continue;
    // unchunk(attention) + unchunk(state_apply), in either order.
    auto unchunked = [](Value term) -> Operation * {
      auto unchunk = term.getDefiningOp<UnchunkOp>();
      return unchunk && term.hasOneUse() && unchunk.getY().hasOneUse()
                 ? unchunk.getY().getDefiningOp()
                 : nullptr;
    };
    for (unsigned i = 0; i < 2; ++i) {
      auto attention =
          dyn_cast_or_null<AttentionOp>(unchunked(sum->getOperand(i)));
      if (attention && attention.getNormalize() == Normalize::none &&
          isa_and_nonnull<StateApplyOp>(unchunked(sum->getOperand(1 - i))))
        return attention;
    }
  }
  return {};
}

Operation *mlir::attn::getEpilogueProduct(Operation *op) {
  auto productFor = [&](Value value) -> Operation * {
    Operation *product = value.getDefiningOp();
    return product && isProduct(product) &&
                   product->getBlock() == op->getBlock() && value.hasOneUse()
               ? product
               : nullptr;
  };
  if (isActivation(op))
    return productFor(op->getOperand(0));
  auto add = dyn_cast<AddOp>(op);
  if (!add || add.getA().getType() != add.getType() ||
      add.getB().getType() != add.getType())
    return nullptr;
  for (auto [operand, other] : {std::pair(add.getA(), add.getB()),
                                std::pair(add.getB(), add.getA())}) {
    Operation *product = productFor(operand);
    Operation *residual = other.getDefiningOp();
    if (product && (!residual || residual->getBlock() != product->getBlock() ||
                    residual->isBeforeInBlock(product)))
      return product;
  }
  return nullptr;
}

bool mlir::attn::isNorm(Operation *op) {
  return op->hasTrait<OpTrait::Norm>();
}

bool mlir::attn::needsSchedule(Operation *op) {
  if (op->getNumResults() != 1)
    return false;
  auto type = dyn_cast<RankedTensorType>(op->getResult(0).getType());
  if (!type || type.getRank() == 0)
    return false;
  return isa<ProductOpInterface, AttentionOp>(op) ||
         op->hasTrait<OpTrait::RowwiseStage>();
}

KernelYieldOp KernelOp::getYield() {
  return cast<KernelYieldOp>(getBody().front().getTerminator());
}

Operation *KernelOp::getAnchor() {
  Operation *first = nullptr, *last = nullptr;
  for (Operation &op : getBody().front().without_terminator()) {
    if (isProduct(&op))
      return &op;
    if (isa<SplitOp>(op))
      continue;
    if (!first && !isElementwise(&op))
      first = &op;
    last = &op;
  }
  return first ? first : last;
}

LogicalResult KernelOp::verify() {
  auto yield = dyn_cast<KernelYieldOp>(getBody().front().back());
  if (!yield)
    return emitOpError() << "body must end in attn.kernel_yield";
  if (yield.getValues().size() != getNumResults())
    return emitOpError() << "yields " << yield.getValues().size()
                         << " values but has " << getNumResults() << " results";
  for (auto [index, pair] :
       llvm::enumerate(llvm::zip(yield.getValues(), getResultTypes()))) {
    auto [value, type] = pair;
    if (value.getType() != type)
      return emitOpError() << "result " << index << " has type " << type
                           << " but the body yields " << value.getType();
    if (value.getParentRegion() != &getBody())
      return emitOpError() << "result " << index
                           << " is not computed by the kernel's body";
  }
  for (Operation &op : getBody().front().without_terminator()) {
    if (isa<KernelOp>(op))
      return op.emitOpError() << "cannot be nested in another attn.kernel";
    if (op.getDialect() != getOperation()->getDialect())
      return op.emitOpError() << "is not an attn op and cannot be fused into "
                                 "an attn.kernel";
  }
  if (!getAnchor())
    return emitOpError() << "has no compute op to anchor its loops";
  return success();
}
