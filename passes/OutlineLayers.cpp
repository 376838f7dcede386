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
// however deep the stack is; the ops between them (the glue) then become
// functions too, and the model a sequence of calls.
//
//===----------------------------------------------------------------------===//
#include "passes/Passes.h"

#include "dsl/IR/AttnOps.h"

#include "llvm/ADT/SetVector.h"
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

/// The op of `body` that holds `value`'s definition (null for an argument
/// of the function).
Operation *topLevelOwner(Value value, Block &body) {
  Operation *owner = value.getDefiningOp()
                         ? value.getDefiningOp()
                         : value.getParentBlock()->getParentOp();
  return body.findAncestorOpInBlock(*owner);
}

/// Moves `ops` (a run of the model's ops between calls) into a private
/// function `<model>.glue<index>` and calls it in their place. The weights
/// they read are cloned into the function.
void outlineRun(func::FuncOp model, ArrayRef<Operation *> ops, unsigned index,
                SymbolTable &symbols) {
  Block &body = model.getBody().front();
  llvm::SmallPtrSet<Operation *, 16> inRun(ops.begin(), ops.end());
  llvm::SetVector<Value> inputs, outputs;
  llvm::SetVector<Operation *> weights;
  for (Operation *op : ops) {
    op->walk([&](Operation *nested) {
      for (Value operand : nested->getOperands()) {
        Operation *owner = topLevelOwner(operand, body);
        if (owner && inRun.contains(owner))
          continue;
        if (owner && isa<WeightOp>(owner))
          weights.insert(owner);
        else
          inputs.insert(operand);
      }
    });
    for (Value result : op->getResults())
      for (Operation *user : result.getUsers())
        if (!inRun.contains(body.findAncestorOpInBlock(*user)))
          outputs.insert(result);
  }
  if (outputs.empty()) { // dead: nothing after the run reads it
    for (Operation *op : llvm::reverse(ops))
      op->erase();
    return;
  }
  OpBuilder builder(model->getContext());
  builder.setInsertionPointAfter(model);
  SmallVector<Type> inputTypes, outputTypes;
  for (Value input : inputs)
    inputTypes.push_back(input.getType());
  for (Value output : outputs)
    outputTypes.push_back(output.getType());
  std::string name = (model.getSymName() + ".glue" + Twine(index)).str();
  auto callee = builder.create<func::FuncOp>(
      ops.front()->getLoc(), name,
      builder.getFunctionType(inputTypes, outputTypes));
  callee.setPrivate();
  symbols.insert(callee);
  Block *entry = callee.addEntryBlock();
  builder.setInsertionPointToStart(entry);
  IRMapping mapping;
  mapping.map(inputs.getArrayRef(), entry->getArguments());
  for (Operation *weight : weights)
    builder.clone(*weight, mapping);
  for (Operation *op : ops)
    builder.clone(*op, mapping);
  SmallVector<Value> results;
  for (Value output : outputs)
    results.push_back(mapping.lookup(output));
  builder.create<func::ReturnOp>(ops.back()->getLoc(), results);

  builder.setInsertionPoint(ops.front());
  auto call = builder.create<func::CallOp>(ops.front()->getLoc(), callee,
                                           inputs.getArrayRef());
  for (auto [output, result] : llvm::zip(outputs, call.getResults()))
    Value(output).replaceAllUsesWith(result);
  for (Operation *op : llvm::reverse(ops))
    op->erase();
}

/// In a model that calls layer functions, moves each maximal run of the
/// other ops (the glue: what comes before, between and after the layers)
/// into a function of its own, so that the model is a sequence of calls
/// that codegen runs one kernel at a time.
void outlineGlue(func::FuncOp model, SymbolTable &symbols) {
  Block &body = model.getBody().front();
  SmallVector<SmallVector<Operation *>> runs(1);
  for (Operation &op : body.without_terminator()) {
    if (isa<func::CallOp>(op)) {
      if (!runs.back().empty())
        runs.emplace_back();
      continue;
    }
    if (!isa<WeightOp>(op)) // cloned into the runs that read them
      runs.back().push_back(&op);
  }
  unsigned index = 0;
  for (ArrayRef<Operation *> ops : runs)
    if (!ops.empty())
      outlineRun(model, ops, index++, symbols);
  for (WeightOp weight : llvm::to_vector(body.getOps<WeightOp>()))
    if (weight->use_empty())
      weight->erase();
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
      bool outlined = false;
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
          outlined = true;
        }
      }
      if (outlined)
        outlineGlue(model, symbols);
    }
  }
};

} // namespace
