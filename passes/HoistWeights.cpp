//===- HoistWeights.cpp - layer functions take their weights as arguments -===//
//
// Part of attnc, a compiler for attention layers.
//
//===----------------------------------------------------------------------===//
//
// This file implements attn-hoist-weights: in each layer function made by
// attn-outline-layers, every `attn.weight "<prefix>.<part>"` becomes an
// argument tagged `attn.weight = "<part>"`, and each call passes
// `attn.weight "<layer>.<part>"` of the layer it computes. The IR then says
// which weights each call binds, and the function is the same for all.
//
//===----------------------------------------------------------------------===//
#include "passes/Passes.h"

#include "dsl/IR/AttnOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/SymbolTable.h"

namespace mlir::attn {
#define GEN_PASS_DEF_HOISTWEIGHTSPASS
#include "passes/Passes.h.inc"
} // namespace mlir::attn

using namespace mlir;
using namespace mlir::attn;

namespace {

/// One weight a layer function reads: its type and its name after the
/// layer prefix.
struct HoistedWeight {
  Type type;
  std::string part;
};

/// Turns the weights of `callee` (named `<prefix>.<part>`) into trailing
/// arguments; fails with an error at a weight of another name.
FailureOr<std::vector<HoistedWeight>> hoist(func::FuncOp callee,
                                            StringRef prefix) {
  std::vector<HoistedWeight> hoisted;
  llvm::StringMap<unsigned> argumentOf;
  for (WeightOp weight :
       llvm::to_vector(callee.getBody().front().getOps<WeightOp>())) {
    StringRef name = weight.getName();
    if (!name.consume_front(prefix) || !name.consume_front("."))
      return weight.emitError()
             << "layer function '" << callee.getSymName() << "' of layer '"
             << prefix << "' reads weight '" << weight.getName()
             << "', which is not one of the layer's";
    auto [it, inserted] =
        argumentOf.try_emplace(name, callee.getNumArguments());
    if (inserted) {
      Builder builder(callee->getContext());
      NamedAttribute attrs[] = {
          builder.getNamedAttr("attn.name", builder.getStringAttr(name)),
          builder.getNamedAttr(AttnDialect::getWeightArgAttrName(), builder.getStringAttr(name))};
      callee.insertArgument(callee.getNumArguments(), weight.getType(),
                            builder.getDictionaryAttr(attrs), weight.getLoc());
      hoisted.push_back({weight.getType(), name.str()});
    }
    weight.replaceAllUsesWith(callee.getArgument(it->second));
    weight.erase();
  }
  return hoisted;
}

struct HoistWeightsPass
    : public mlir::attn::impl::HoistWeightsPassBase<HoistWeightsPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    // The calls of each layer function, from every model of the module.
    llvm::DenseMap<Operation *, SmallVector<func::CallOp>> calls;
    SymbolTable symbols(module);
    module.walk([&](func::CallOp call) {
      if (Operation *callee = symbols.lookup(call.getCallee()))
        calls[callee].push_back(call);
    });
    for (func::FuncOp callee :
         llvm::to_vector(module.getOps<func::FuncOp>())) {
      auto prefix = callee->getAttrOfType<StringAttr>(AttnDialect::getLayerPrefixAttrName());
      auto weights = callee.getBody().front().getOps<WeightOp>();
      if (!prefix || weights.begin() == weights.end())
        continue; // not a layer function, or hoisted already
      FailureOr<std::vector<HoistedWeight>> hoisted =
          hoist(callee, prefix.getValue());
      if (failed(hoisted))
        return signalPassFailure();
      for (func::CallOp call : calls[callee]) {
        auto layer = call->getAttrOfType<StringAttr>(AttnDialect::getLayerAttrName());
        if (!layer) {
          call.emitError() << "call of layer function '"
                           << callee.getSymName() << "' has no '"
                           << AttnDialect::getLayerAttrName() << "' attribute";
          return signalPassFailure();
        }
        OpBuilder builder(call);
        SmallVector<Value> operands(call.getOperands());
        for (const HoistedWeight &weight : *hoisted)
          operands.push_back(builder.create<WeightOp>(
              call.getLoc(), weight.type,
              (layer.getValue() + "." + weight.part).str()));
        call->setOperands(operands);
      }
    }
  }
};

} // namespace
