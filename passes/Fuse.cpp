//===- Fuse.cpp - attn-fuse: attn.kernel regions ---------------------------===//
//
// This file implements attn-fuse: it groups the ops of a function body by
// the epilogue, residual and prologue rules of the pass description
// (Passes.td) with a union-find over the ops, and moves each group of two
// or more ops into an attn.kernel at the position of its last member.
//
//===----------------------------------------------------------------------===//
#include "passes/Passes.h"

#include "dsl/IR/AttnOps.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/EquivalenceClasses.h"
#include "llvm/ADT/MapVector.h"

namespace mlir::attn {
#define GEN_PASS_DEF_FUSEPASS
#include "passes/Passes.h.inc"
} // namespace mlir::attn

using namespace mlir;
using namespace mlir::attn;

namespace {

/// Whether `user` is a product that reads `value` as its left operand only.
bool readsAsProductLhs(Operation *user, Value value) {
  return user && isProduct(user) && user->getOperand(0) == value &&
         !llvm::is_contained(user->getOperands().drop_front(), value);
}

/// The member `op` joins the kernel of, by the rules of the pass, or null.
Operation *fusionPartner(Operation *op) {
  if (op->getNumOperands() == 0)
    return nullptr;
  // Epilogue: an activation or residual add after a product; a split of
  // such an activation.
  if (Operation *product = getEpilogueProduct(op))
    return product;
  Operation *producer = op->getOperand(0).getDefiningOp();
  if (isa<SplitOp>(op) && producer &&
      getOnlyUser(producer->getResult(0)) == op &&
      isActivation(producer) && getEpilogueProduct(producer))
    return producer;
  // Prologue: a norm only read as a product's left operand runs in the
  // product's staging of that operand.
  if (isNorm(op)) {
    Operation *user = getOnlyUser(op->getResult(0));
    return readsAsProductLhs(user, op->getResult(0)) ? user : nullptr;
  }
  // Prologue: elementwise into an elementwise user of the same type, or
  // into the left operand of a product.
  if (isElementwise(op) && op->getNumResults() == 1) {
    Value result = op->getResult(0);
    Operation *user = getOnlyUser(result);
    if (!user)
      return nullptr;
    if (isElementwise(user) && user->getResult(0).getType() == result.getType())
      return user;
    // RoPE reads each element and its rotation partner: recomputing the
    // elementwise op twice is cheaper than storing it.
    if (isa<RopeOp>(user))
      return user;
    if (readsAsProductLhs(user, result))
      return user;
  }
  return nullptr;
}

struct FusePass : attn::impl::FusePassBase<FusePass> {
  void runOnOperation() override {
    Block &body = getOperation().getBody().front();
    llvm::EquivalenceClasses<Operation *> groups;
    for (Operation &op : body) {
      if (isa<KernelOp>(op) || !isa_and_nonnull<AttnDialect>(op.getDialect()))
        continue;
      groups.insert(&op);
      if (Operation *partner = fusionPartner(&op))
        groups.unionSets(&op, partner);
    }
    // Members of each group in block order (the leader decides the group).
    llvm::MapVector<Operation *, SmallVector<Operation *>> members;
    for (Operation &op : body)
      if (groups.findValue(&op) != groups.end())
        members[groups.getLeaderValue(&op)].push_back(&op);
    for (auto &[leader, ops] : members)
      if (ops.size() > 1)
        formKernel(ops);
  }

  /// Moves `ops` (block order) into one attn.kernel placed at the last of
  /// them; leaves them alone if an earlier member is used outside them.
  static void formKernel(ArrayRef<Operation *> ops) {
    llvm::SmallPtrSet<Operation *, 8> inGroup(ops.begin(), ops.end());
    SmallVector<Value> yielded;
    for (Operation *op : ops) {
      for (Value result : op->getResults()) {
        bool external = llvm::any_of(result.getUsers(), [&](Operation *user) {
          return !inGroup.contains(user);
        });
        if (!external)
          continue;
        if (op != ops.back())
          return; // moving it down would pass one of its users
        yielded.push_back(result);
      }
    }
    Operation *last = ops.back();
    OpBuilder builder(last);
    SmallVector<Type> types;
    for (Value value : yielded)
      types.push_back(value.getType());
    auto kernel = builder.create<KernelOp>(last->getLoc(), types);
    Block *block = builder.createBlock(&kernel.getBody());
    for (Operation *op : ops)
      op->moveBefore(block, block->end());
    builder.setInsertionPointToEnd(block);
    builder.create<KernelYieldOp>(last->getLoc(), yielded);
    for (auto [value, result] : llvm::zip(yielded, kernel.getResults()))
      value.replaceUsesWithIf(result, [&](OpOperand &use) {
        return !kernel->isProperAncestor(use.getOwner());
      });
  }
};

} // namespace
