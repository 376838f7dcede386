//===- Frontend.cpp - the whole .attn front end in one call ---------------===//
//
// This file implements runFrontend: parse, check and import one buffer,
// routing MLIR diagnostics (verifier failures of imported IR) through the
// same SourceMgr so that they too show the .attn line and a caret.
//
//===----------------------------------------------------------------------===//
#include "dsl/Import/Frontend.h"

#include "dsl/Syntax/Parser.h"

#include "mlir/IR/Diagnostics.h"
#include "llvm/Support/MemoryBuffer.h"

namespace attnc::dsl {

FrontendResult runFrontend(std::unique_ptr<llvm::MemoryBuffer> buffer,
                           FrontendStage stage, llvm::raw_ostream &diagOS,
                           mlir::MLIRContext *context) {
  FrontendResult result;
  result.sourceMgr = std::make_unique<llvm::SourceMgr>();
  llvm::StringRef fileName = buffer->getBufferIdentifier();
  llvm::StringRef text = buffer->getBuffer();
  result.sourceMgr->AddNewSourceBuffer(std::move(buffer), llvm::SMLoc());
  result.diags = std::make_unique<DiagnosticEngine>(*result.sourceMgr, diagOS);

  result.ast = parseSource(text, fileName, *result.diags);
  if (!result.ast)
    return result;
  if (stage == FrontendStage::Parse) {
    result.ok = true;
    return result;
  }
  result.models = checkFile(*result.ast, *result.diags);
  if (!result.models)
    return result;
  if (stage == FrontendStage::Check) {
    result.ok = true;
    return result;
  }
  assert(context && "importing needs an MLIRContext");
  mlir::SourceMgrDiagnosticHandler handler(*result.sourceMgr, context, diagOS);
  result.module =
      importModels(*context, *result.ast, *result.models, *result.sourceMgr);
  result.ok = static_cast<bool>(result.module);
  return result;
}

FrontendResult runFrontend(llvm::StringRef source, llvm::StringRef fileName,
                           FrontendStage stage, llvm::raw_ostream &diagOS,
                           mlir::MLIRContext *context) {
  return runFrontend(llvm::MemoryBuffer::getMemBufferCopy(source, fileName),
                     stage, diagOS, context);
}

} // namespace attnc::dsl
