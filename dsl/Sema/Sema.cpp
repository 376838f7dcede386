//===- Sema.cpp - semantic analysis of .attn models: declarations ---------===//
//
// This file implements the model-level checks: dims, tensor declarations,
// bindings, outputs, and the symbol table with its "did you mean"
// suggestions. Expressions are checked in SemaExpr.cpp and calls in
// SemaCalls.cpp.
//
//===----------------------------------------------------------------------===//
#include "dsl/Sema/SemaImpl.h"

#include <set>

namespace attnc::dsl {

bool ModelChecker::define(const Ident &id, Symbol symbol) {
  auto [it, inserted] = symbols.try_emplace(id.name, std::move(symbol));
  if (inserted)
    return true;
  diags.error(id.loc, "redefinition of '" + id.name + "'");
  diags.note(it->second.loc, "previous definition is here");
  return false;
}

const ModelChecker::Symbol *ModelChecker::lookup(const Expr &expr) {
  auto it = symbols.find(expr.name);
  if (it != symbols.end())
    return it->second.poisoned ? nullptr : &it->second;
  std::vector<std::string> candidates;
  for (const auto &entry : symbols)
    candidates.push_back(entry.first);
  std::string hint = closestMatch(expr.name, candidates);
  if (hint.empty() && findTemplate(expr.name))
    diags.error(expr.loc, "'" + expr.name + "' is a layer template; call it "
                          "as " + expr.name + "(x, ...)",
                {expr.range});
  else
    diags.error(expr.loc, "unknown name '" + expr.name + "'" +
                              (hint.empty() ? std::string()
                                            : "; did you mean '" + hint + "'?"),
                {expr.range});
  return nullptr;
}

std::optional<TensorType> ModelChecker::checkType(const TypeSpec &spec,
                                                  bool allowRuntime,
                                                  llvm::StringRef what,
                                                  bool allowTokenIds) {
  TensorType type;
  if (spec.dtype.name == "i32") {
    if (!allowTokenIds) {
      diags.error(spec.dtype.loc, "i32 is the type of token ids, allowed "
                                  "for inputs only, but " + what.str() +
                                  " is not an input");
      return std::nullopt;
    }
  } else if (spec.dtype.name != "f32" && spec.dtype.name != "f16" &&
             spec.dtype.name != "bf16") {
    diags.error(spec.dtype.loc, "unknown element type '" + spec.dtype.name +
                                    "'; expected f32, f16, bf16 or i32 (token "
                                    "ids)");
    return std::nullopt;
  }
  type.dtype = spec.dtype.name;
  for (const ExprPtr &dimExpr : spec.dims) {
    if (dimExpr->kind == ExprKind::Name) {
      auto it = symbols.find(dimExpr->name);
      if (it != symbols.end() && it->second.kind == SymKind::RuntimeDim) {
        if (!allowRuntime) {
          diags.error(dimExpr->loc, "runtime dim '" + dimExpr->name +
                                        "' in the shape of " + what +
                                        "; params must have constant shapes",
                      {dimExpr->range});
          return std::nullopt;
        }
        type.shape.push_back(Dim::named(dimExpr->name));
        continue;
      }
    }
    std::optional<int64_t> size = evalSize(*dimExpr, "a dimension");
    if (!size)
      return std::nullopt;
    type.shape.push_back(Dim::constant(*size));
  }
  return type;
}

void ModelChecker::checkDim(const DimDecl &dim) {
  Symbol symbol;
  symbol.loc = dim.name.loc;
  if (dim.runtime) {
    symbol.kind = SymKind::RuntimeDim;
    symbol.runtimeKind = *dim.runtime;
    for (const RuntimeDim &other : result.runtimeDims)
      if (*dim.runtime == RuntimeDimKind::Seq && other.kind == *dim.runtime) {
        diags.error(dim.kindLoc, "model already has a seq dim '" + other.name +
                                     "'; only one runtime sequence length is "
                                     "allowed");
        symbol.poisoned = true;
      }
    if (define(dim.name, symbol) && !symbol.poisoned)
      result.runtimeDims.push_back({dim.name.name, *dim.runtime});
    return;
  }
  symbol.kind = SymKind::ConstDim;
  std::optional<int64_t> value = evalSize(*dim.value, "dim '" + dim.name.name + "'");
  if (!value)
    symbol.poisoned = true;
  else
    symbol.value = *value;
  define(dim.name, symbol);
}

void ModelChecker::checkTensorDecl(const TensorDecl &decl) {
  Symbol symbol;
  symbol.loc = decl.name.loc;
  std::string what = (decl.role == TensorRole::Param ? "param '" : "'") +
                     decl.name.name + "'";
  std::optional<TensorType> type;
  if (decl.type) {
    type = checkType(*decl.type, decl.role != TensorRole::Param, what,
                     /*allowTokenIds=*/decl.role == TensorRole::Input);
    if (!type)
      symbol.poisoned = true;
  }
  switch (decl.role) {
  case TensorRole::Input:
    symbol.kind = SymKind::Tensor;
    if (type) {
      symbol.type = *type;
      for (const Dim &dim : type->shape)
        if (!dim.isStatic())
          boundRuntimeDims.insert(dim.runtime);
    }
    if (define(decl.name, symbol) && type)
      result.inputs.push_back({decl.name.name, *type, decl.name.loc});
    return;
  case TensorRole::Param:
    symbol.kind = SymKind::Tensor;
    if (type)
      symbol.type = *type;
    if (define(decl.name, symbol) && type)
      result.params.push_back({decl.name.name, *type, decl.name.loc});
    return;
  case TensorRole::Output: {
    symbol.kind = SymKind::Output;
    symbol.outputIndex = result.outputs.size();
    symbol.declaredType = type;
    if (!define(decl.name, symbol))
      return;
    result.outputs.push_back({decl.name.name, type.value_or(TensorType{}),
                              decl.name.loc});
    outputAssigned.push_back(false);
    if (decl.init)
      assignOutput(decl.name, *decl.init);
    return;
  }
  }
}

void ModelChecker::assignOutput(const Ident &name, Expr &value) {
  Symbol &symbol = symbols.at(name.name);
  if (outputAssigned[symbol.outputIndex]) {
    diags.error(name.loc, "output '" + name.name + "' is assigned twice");
    diags.note(symbol.assignLoc, "first assigned here");
    return;
  }
  SemaInfo *info = checkTensorExpr(value);
  outputAssigned[symbol.outputIndex] = true;
  symbol.assignLoc = name.loc;
  if (!info) {
    symbol.poisoned = true;
    return;
  }
  if (symbol.declaredType && *symbol.declaredType != info->type) {
    diags.error(name.loc, "output '" + name.name + "' is declared " +
                              symbol.declaredType->str() + " but assigned " +
                              info->type.str(),
                {value.range});
    symbol.poisoned = true;
    return;
  }
  symbol.type = info->type;
  result.outputs[symbol.outputIndex].type = info->type;
}

void ModelChecker::checkBinding(Binding &bind) {
  // A single name that is a declared output assigns the output.
  if (bind.names.size() == 1) {
    auto it = symbols.find(bind.names[0].name);
    if (it != symbols.end() && it->second.kind == SymKind::Output) {
      assignOutput(bind.names[0], *bind.value);
      return;
    }
  }
  SemaInfo *info = checkExpr(*bind.value, /*scoreContext=*/false);
  std::vector<TensorType> types;
  bool ok = info != nullptr;
  if (info && info->kind == ValueKind::Tuple) {
    if (info->tuple.size() != bind.names.size()) {
      diags.error(bind.names[0].loc,
                  llvm::Twine(bind.names.size()) + " name" +
                      (bind.names.size() == 1 ? "" : "s") + " bound to " +
                      bind.value->name + "(...), which produces " +
                      llvm::Twine(info->tuple.size()) + " results",
                  {bind.value->range});
      ok = false;
    }
    types = info->tuple;
  } else if (info && info->kind == ValueKind::Tensor) {
    if (bind.names.size() != 1) {
      diags.error(bind.names[1].loc,
                  llvm::Twine(bind.names.size()) +
                      " names bound to a single tensor; only split(...) "
                      "produces several results",
                  {bind.value->range});
      ok = false;
    }
    types = {info->type};
  } else if (info) {
    diags.error(bind.value->loc, "'" + bind.names[0].name +
                                     "' must be bound to a tensor expression; "
                                     "use 'dim' for constants",
                {bind.value->range});
    ok = false;
  }
  for (size_t i = 0; i < bind.names.size(); ++i) {
    const Ident &name = bind.names[i];
    auto it = symbols.find(name.name);
    if (it != symbols.end() && it->second.kind == SymKind::Output) {
      diags.error(name.loc, "output '" + name.name +
                                "' must be assigned on its own ('" + name.name +
                                " = ...')");
      continue;
    }
    Symbol symbol;
    symbol.kind = SymKind::Tensor;
    symbol.loc = name.loc;
    symbol.poisoned = !ok;
    if (ok)
      symbol.type = types[i];
    define(name, symbol);
  }
}

std::optional<CheckedModel> ModelChecker::check() {
  unsigned errorsBefore = diags.errorCount();
  result.ast = &model;
  for (Stmt &stmt : model.stmts) {
    switch (stmt.kind) {
    case Stmt::Kind::Dim:
      checkDim(stmt.dim);
      break;
    case Stmt::Kind::Tensor:
      checkTensorDecl(stmt.tensor);
      break;
    case Stmt::Kind::Bind:
      checkBinding(stmt.bind);
      break;
    }
  }
  if (result.outputs.empty() && diags.errorCount() == errorsBefore)
    diags.error(model.endLoc, "model '" + model.name.name +
                                  "' has no outputs; declare one with "
                                  "'output y : f32[...]' or 'output y = ...'");
  for (size_t i = 0; i < result.outputs.size(); ++i) {
    const DeclaredTensor &out = result.outputs[i];
    if (!outputAssigned[i]) {
      diags.error(out.loc, "output '" + out.name + "' is never assigned");
      continue;
    }
    for (const Dim &dim : out.type.shape)
      if (!dim.isStatic() && !boundRuntimeDims.count(dim.runtime))
        diags.error(out.loc, "runtime dim '" + dim.runtime + "' of output '" +
                                 out.name +
                                 "' is not the size of any input, so it "
                                 "cannot be known at run time");
  }
  if (diags.errorCount() != errorsBefore)
    return std::nullopt;
  return std::move(result);
}

std::optional<std::vector<CheckedModel>> checkFile(FileAST &file,
                                                   DiagnosticEngine &diags) {
  std::vector<CheckedModel> models;
  std::map<std::string, llvm::SMLoc> modelNames;
  bool ok = true;
  for (ModelAST &model : file.models) {
    auto [it, inserted] = modelNames.emplace(model.name.name, model.name.loc);
    if (!inserted) {
      diags.error(model.name.loc, "redefinition of model '" +
                                      model.name.name + "'");
      diags.note(it->second, "previous definition is here");
      ok = false;
      continue;
    }
    ModelChecker checker(model, diags);
    std::optional<CheckedModel> checked = checker.check();
    if (!checked)
      ok = false;
    else
      models.push_back(std::move(*checked));
  }
  if (!ok)
    return std::nullopt;
  return models;
}

} // namespace attnc::dsl
