//===- OutlineLayers.cpp - one function per repeated layer configuration --===//
//
// Part of attnc, a compiler for attention layers.
//
//===----------------------------------------------------------------------===//
//
// This file implements attn-outline-layers: the layer ops of a model that
// share their configuration (op, attributes other than `layer_name`, and
// types) and occur more than once become calls of one private function,
// so that every later pass, and code generation, handles the layer once
// however deep the stack is.
//
//===----------------------------------------------------------------------===//
#include "passes/Passes.h"

#include "dsl/IR/AttnOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/SymbolTable.h"

namespace mlir::attn {
#define GEN_PASS_DEF_OUTLINELAYERSPASS
#include "passes/Passes.h.inc"
} // namespace mlir::attn

using namespace mlir;
using namespace mlir::attn;

namespace {

/// The layer ops of one configuration, in program order.
struct LayerGroup {
  OperationName name;
  DictionaryAttr attributes; ///< Without `layer_name`.
  SmallVector<Type> types;   ///< Operand types, then result types.
  SmallVector<Operation *> layers;
};

DictionaryAttr configuration(Operation *op) {
  NamedAttrList attributes(op->getAttrDictionary());
  attributes.erase("layer_name");
  return attributes.getDictionary(op->getContext());
}

SmallVector<Type> signature(Operation *op) {
  SmallVector<Type> types(op->getOperandTypes());
  llvm::append_range(types, op->getResultTypes());
  return types;
}

/// The layer ops of `model` grouped by configuration, in order of first use.
std::vector<LayerGroup> groupLayers(func::FuncOp model) {
  std::vector<LayerGroup> groups;
  for (Operation &op : model.getBody().front()) {
    if (!op.hasTrait<mlir::attn::OpTrait::Layer>() || !op.getAttr("layer_name"))
      continue;
    DictionaryAttr attributes = configuration(&op);
    SmallVector<Type> types = signature(&op);
    auto same = [&](const LayerGroup &group) {
      return group.name == op.getName() && group.attributes == attributes &&
             group.types == types;
    };
    auto it = llvm::find_if(groups, same);
    if (it == groups.end())
      it = groups.insert(groups.end(),
                         LayerGroup{op.getName(), attributes, types, {}});
    it->layers.push_back(&op);
  }
  return groups;
}

/// A private function computing `layer` of `group`'s configuration on its
/// arguments, named `<model>.layer<index>`.
func::FuncOp outline(func::FuncOp model, const LayerGroup &group,
                     unsigned index, SymbolTable &symbols) {
  Operation *first = group.layers.front();
  OpBuilder builder(model->getContext());
  builder.setInsertionPointAfter(model);
  auto type = builder.getFunctionType(first->getOperandTypes(),
                                      first->getResultTypes());
  std::string name = (model.getSymName() + ".layer" + Twine(index)).str();
  auto callee = builder.create<func::FuncOp>(first->getLoc(), name, type);
  callee.setPrivate();
  callee->setAttr(AttnDialect::getLayerPrefixAttrName(), first->getAttr("layer_name"));
  symbols.insert(callee); // renames it if the name is taken
  Block *body = callee.addEntryBlock();
  for (unsigned i = 0; i < body->getNumArguments(); ++i)
    callee.setArgAttr(i, "attn.name",
                      builder.getStringAttr(i == 0 ? "x" : "x" + Twine(i)));
  builder.setInsertionPointToStart(body);
  IRMapping mapping;
  mapping.map(first->getOperands(), body->getArguments());
  Operation *clone = builder.clone(*first, mapping);
  builder.create<func::ReturnOp>(first->getLoc(), clone->getResults());
  return callee;
}

struct OutlineLayersPass
    : public mlir::attn::impl::OutlineLayersPassBase<OutlineLayersPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    SymbolTable symbols(module);
    for (func::FuncOp model :
         llvm::to_vector(module.getOps<func::FuncOp>())) {
      if (!model->hasAttr("attn.model"))
        continue;
      unsigned index = 0;
      for (const LayerGroup &group : groupLayers(model)) {
        if (group.layers.size() < 2)
          continue; // compiled with the rest of the model, as before
        func::FuncOp callee = outline(model, group, index++, symbols);
        for (Operation *layer : group.layers) {
          OpBuilder builder(layer);
          auto call = builder.create<func::CallOp>(
              layer->getLoc(), callee, layer->getOperands());
          call->setAttr(AttnDialect::getLayerAttrName(), layer->getAttr("layer_name"));
          layer->replaceAllUsesWith(call);
          layer->erase();
        }
      }
    }
  }
};

} // namespace
