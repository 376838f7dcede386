//===- MLIRGen.h - .attn AST to the attn dialect -------------------*- C++ -*-===//
//
// This file declares the importer that lowers checked .attn models (the
// annotated AST and the CheckedModels of dsl/Sema) to the attn dialect: one
// `func.func` per model, with a FileLineColLoc from the .attn source on
// every operation. The result is verified right after import.
//
//===----------------------------------------------------------------------===//
#ifndef ATTNC_DSL_IMPORT_MLIRGEN_H
#define ATTNC_DSL_IMPORT_MLIRGEN_H

#include "dsl/Sema/Sema.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/OwningOpRef.h"

namespace attnc::dsl {

/// Lowers `models` (checked from `file`) to a module. Returns null, after
/// emitting an internal-error diagnostic at the offending location, if the
/// generated IR fails verification (a compiler bug, never a user error).
mlir::OwningOpRef<mlir::ModuleOp>
importModels(mlir::MLIRContext &context, const FileAST &file,
             const std::vector<CheckedModel> &models,
             const llvm::SourceMgr &sourceMgr);

/// Registers the dialects that imported IR uses (attn, func, arith, math).
void registerImportDialects(mlir::DialectRegistry &registry);

} // namespace attnc::dsl

#endif // ATTNC_DSL_IMPORT_MLIRGEN_H
