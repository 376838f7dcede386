//===- AttnDialect.cpp - the attn dialect ---------------------------------===//
//
// Part of attnc, a compiler for attention layers.
//
//===----------------------------------------------------------------------===//
//
// This file registers the ops and attributes of the attn dialect and verifies
// the discardable attributes that mark a `func.func` as a model:
// `attn.model`, `attn.runtime_dims` on the function, `attn.name` and
// `attn.dims` on its arguments and results, and `attn.schedule`, the
// `#attn.schedule` of an attn op.
//
//===----------------------------------------------------------------------===//

#include "dsl/IR/AttnDialect.h"

#include "mlir/Interfaces/FunctionInterfaces.h"

using namespace mlir;
using namespace mlir::attn;

#include "dsl/IR/AttnDialect.cpp.inc"

void AttnDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "dsl/IR/AttnOps.cpp.inc"
      >();
  registerAttributes();
}

//===----------------------------------------------------------------------===//
// Model function and schedule attributes
//===----------------------------------------------------------------------===//

LogicalResult AttnDialect::verifyOperationAttribute(Operation *op,
                                                    NamedAttribute attr) {
  StringRef name = attr.getName().strref();
  if (name == getModelAttrName()) {
    if (!isa<UnitAttr>(attr.getValue()))
      return op->emitError() << "'" << name << "' must be a unit attribute";
    if (!isa<func::FuncOp>(op))
      return op->emitError() << "'" << name << "' is only valid on func.func";
    return success();
  }
  if (name == getRuntimeDimsAttrName()) {
    if (!isa<func::FuncOp>(op))
      return op->emitError() << "'" << name << "' is only valid on func.func";
    auto dims = dyn_cast<DictionaryAttr>(attr.getValue());
    if (!dims)
      return op->emitError() << "'" << name << "' must be a dictionary";
    for (NamedAttribute dim : dims) {
      auto kind = dyn_cast<StringAttr>(dim.getValue());
      if (!kind || (kind.getValue() != "seq" && kind.getValue() != "batch"))
        return op->emitError()
               << "runtime dim '" << dim.getName().strref() << "' has kind "
               << dim.getValue() << " but must be \"seq\" or \"batch\"";
    }
    return success();
  }
  if (name == ScheduleAttr::getScheduleAttrName()) {
    if (!isa<ScheduleAttr>(attr.getValue()))
      return op->emitError() << "'" << name
                             << "' must be a #attn.schedule but is "
                             << attr.getValue();
    if (op->getDialect() != this)
      return op->emitError() << "'" << name << "' is only valid on attn ops";
    return verifyScheduleForOp(op, cast<ScheduleAttr>(attr.getValue()).getParams(),
                               [&] { return op->emitError(); });
  }
  if (name == getLayerPrefixAttrName() || name == getLayerAttrName()) {
    auto text = dyn_cast<StringAttr>(attr.getValue());
    if (!text || text.getValue().empty())
      return op->emitError() << "'" << name << "' must be a non-empty string";
    bool onFunction = name == getLayerPrefixAttrName();
    if (onFunction ? !isa<func::FuncOp>(op) : !isa<func::CallOp>(op))
      return op->emitError() << "'" << name << "' is only valid on "
                             << (onFunction ? "func.func" : "func.call");
    return success();
  }
  if (name == getTuningAttrName()) {
    auto text = dyn_cast<StringAttr>(attr.getValue());
    if (!text || text.getValue().empty() || !isa<ModuleOp>(op))
      return op->emitError() << "'" << name
                             << "' must be a non-empty string on a module";
    return success();
  }
  if (name == getNameAttrName() || name == getDimsAttrName() ||
      name == getWeightArgAttrName())
    return op->emitError() << "'" << name
                           << "' belongs on a function argument or result";
  return op->emitError() << "unknown attn attribute '" << name << "'";
}

/// Verifies `attn.name` / `attn.dims` on the value `what` (e.g. "argument 1")
/// of type `type` of the model function `op`.
static LogicalResult verifyValueAttribute(Operation *op, StringRef what,
                                          Type type, NamedAttribute attr) {
  StringRef name = attr.getName().strref();
  if (name == AttnDialect::getNameAttrName()) {
    auto text = dyn_cast<StringAttr>(attr.getValue());
    if (!text || text.getValue().empty())
      return op->emitError() << "'" << name << "' of " << what
                             << " must be a non-empty string";
    return success();
  }
  if (name == AttnDialect::getWeightArgAttrName()) {
    auto text = dyn_cast<StringAttr>(attr.getValue());
    if (!text || text.getValue().empty() ||
        !op->hasAttr(AttnDialect::getLayerPrefixAttrName()))
      return op->emitError() << "'" << name << "' of " << what
                             << " must be a non-empty string on a layer "
                                "function (attn.layer_prefix)";
    return success();
  }
  if (name != AttnDialect::getDimsAttrName())
    return op->emitError() << "unknown attn attribute '" << name << "' on "
                           << what;

  auto dims = dyn_cast<ArrayAttr>(attr.getValue());
  if (!dims || !llvm::all_of(dims, [](Attribute a) {
        return isa<StringAttr>(a);
      }))
    return op->emitError() << "'" << name << "' of " << what
                           << " must be an array of strings";
  auto tensor = dyn_cast<RankedTensorType>(type);
  if (!tensor)
    return op->emitError() << "'" << name << "' of " << what
                           << " needs a ranked tensor but the type is "
                           << type;
  if (static_cast<int64_t>(dims.size()) != tensor.getRank())
    return op->emitError() << "'" << name << "' of " << what << " has "
                           << dims.size() << " entries but the tensor has rank "
                           << tensor.getRank();
  auto runtimeDims =
      op->getAttrOfType<DictionaryAttr>(AttnDialect::getRuntimeDimsAttrName());
  for (auto [axis, dimAttr] : llvm::enumerate(dims)) {
    StringRef dimName = cast<StringAttr>(dimAttr).getValue();
    int64_t size = tensor.getDimSize(axis);
    if (dimName.empty()) {
      if (ShapedType::isDynamic(size))
        return op->emitError() << "axis " << axis << " of " << what
                               << " is dynamic but names no runtime dim";
      continue;
    }
    if (!ShapedType::isDynamic(size))
      return op->emitError() << "axis " << axis << " of " << what
                             << " is static (" << size
                             << ") but names runtime dim '" << dimName << "'";
    if (!runtimeDims || !runtimeDims.get(dimName))
      return op->emitError() << "axis " << axis << " of " << what
                             << " names runtime dim '" << dimName
                             << "' that attn.runtime_dims does not declare";
  }
  return success();
}

LogicalResult AttnDialect::verifyRegionArgAttribute(Operation *op,
                                                    unsigned regionIndex,
                                                    unsigned argIndex,
                                                    NamedAttribute attr) {
  auto function = dyn_cast<FunctionOpInterface>(op);
  if (!function)
    return op->emitError() << "'" << attr.getName().strref()
                           << "' is only valid on function arguments";
  std::string what = "argument " + std::to_string(argIndex);
  return verifyValueAttribute(op, what, function.getArgumentTypes()[argIndex],
                              attr);
}

LogicalResult AttnDialect::verifyRegionResultAttribute(Operation *op,
                                                       unsigned regionIndex,
                                                       unsigned resultIndex,
                                                       NamedAttribute attr) {
  auto function = dyn_cast<FunctionOpInterface>(op);
  if (!function)
    return op->emitError() << "'" << attr.getName().strref()
                           << "' is only valid on function results";
  std::string what = "result " + std::to_string(resultIndex);
  // The schedule of the stage that copies the result out (attn-tile's).
  if (attr.getName().strref() == ScheduleAttr::getScheduleAttrName()) {
    if (!isa<ScheduleAttr>(attr.getValue()))
      return op->emitError() << "'" << attr.getName().strref() << "' of "
                             << what << " must be a #attn.schedule but is "
                             << attr.getValue();
    ScheduleParams copy = cast<ScheduleAttr>(attr.getValue()).getParams();
    if (copy.compute == ComputeAt::inlined ||
        (copy.strategy != Strategy::loops && copy.strategy != Strategy::naive))
      return op->emitError() << "the schedule of " << what
                             << " copies it out: it takes strategy loops or "
                                "naive at compute = root";
    return success();
  }
  return verifyValueAttribute(op, what,
                              function.getResultTypes()[resultIndex], attr);
}
