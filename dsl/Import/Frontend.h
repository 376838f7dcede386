//===- Frontend.h - the whole .attn front end in one call ----------*- C++ -*-===//
//
// This file declares the entry point that tools, tests and the fuzz test use
// to run the front end on one buffer: parse, check, and (optionally) import
// to the attn dialect. Diagnostics go to the given stream and are also kept.
//
//===----------------------------------------------------------------------===//
#ifndef ATTNC_DSL_IMPORT_FRONTEND_H
#define ATTNC_DSL_IMPORT_FRONTEND_H

#include "dsl/Import/MLIRGen.h"
#include "dsl/Sema/Sema.h"
#include "dsl/Syntax/Diagnostics.h"

#include "llvm/Support/SourceMgr.h"

#include <memory>
#include <optional>

namespace attnc::dsl {

/// How far to run the front end.
enum class FrontendStage { Parse, Check, Import };

/// Everything the front end produced for one buffer. `sourceMgr` owns the
/// buffer that the AST's locations point into, so keep the result alive
/// while using them.
struct FrontendResult {
  std::unique_ptr<llvm::SourceMgr> sourceMgr;
  std::unique_ptr<DiagnosticEngine> diags;
  std::optional<FileAST> ast;
  std::optional<std::vector<CheckedModel>> models;
  mlir::OwningOpRef<mlir::ModuleOp> module;
  bool ok = false; ///< True when the requested stage completed without errors.
};

/// Runs the front end on `buffer` (named `fileName` in diagnostics) up to
/// `stage`. Import needs `context`.
FrontendResult runFrontend(std::unique_ptr<llvm::MemoryBuffer> buffer,
                           FrontendStage stage, llvm::raw_ostream &diagOS,
                           mlir::MLIRContext *context = nullptr);

/// Convenience overload for tests: runs on a string.
FrontendResult runFrontend(llvm::StringRef source, llvm::StringRef fileName,
                           FrontendStage stage, llvm::raw_ostream &diagOS,
                           mlir::MLIRContext *context = nullptr);

} // namespace attnc::dsl

#endif // ATTNC_DSL_IMPORT_FRONTEND_H
