//===- attnc.cpp - the attnc command-line driver --------------------------===//
//
// This file is the thin driver of attnc: it parses flags, runs the front end
// (dsl/Import/Frontend.h) and prints the stage asked for with --emit.
//
//   attnc model.attn --emit=ast     the parsed AST with line:col per node
//   attnc model.attn --emit=attn    the attn dialect after import
//
// Errors are printed as file:line:col with the source line and a caret;
// the exit code is 1 on any error.
//
//===----------------------------------------------------------------------===//
#include "dsl/Import/Frontend.h"

#include "mlir/IR/AsmState.h"
#include "mlir/Support/FileUtilities.h"
#include "mlir/IR/MLIRContext.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Support/WithColor.h"

using namespace attnc::dsl;

namespace {
enum class Emit { Ast, Attn };

llvm::cl::opt<std::string> inputFile(llvm::cl::Positional,
                                     llvm::cl::desc("<model.attn>"),
                                     llvm::cl::Required);
llvm::cl::opt<Emit> emit(
    "emit", llvm::cl::desc("Stage to print"), llvm::cl::init(Emit::Attn),
    llvm::cl::values(clEnumValN(Emit::Ast, "ast", "the parsed AST"),
                     clEnumValN(Emit::Attn, "attn",
                                "the attn dialect after import (default)")));
llvm::cl::opt<std::string> outputFile("o", llvm::cl::desc("Output file"),
                                      llvm::cl::value_desc("file"),
                                      llvm::cl::init("-"));
llvm::cl::opt<bool> debugInfo("mlir-print-debuginfo",
                              llvm::cl::desc("Print .attn source locations"),
                              llvm::cl::init(false));
} // namespace

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  llvm::cl::ParseCommandLineOptions(
      argc, argv, "attnc: a compiler for attention layers\n");

  auto buffer = llvm::MemoryBuffer::getFileOrSTDIN(inputFile, /*IsText=*/true);
  if (std::error_code ec = buffer.getError()) {
    llvm::WithColor::error(llvm::errs(), "attnc")
        << "cannot open '" << inputFile << "': " << ec.message() << "\n";
    return 1;
  }
  std::string errorMessage;
  auto output = mlir::openOutputFile(outputFile, &errorMessage);
  if (!output) {
    llvm::WithColor::error(llvm::errs(), "attnc") << errorMessage << "\n";
    return 1;
  }

  mlir::MLIRContext context;
  FrontendStage stage =
      emit == Emit::Ast ? FrontendStage::Parse : FrontendStage::Import;
  FrontendResult result =
      runFrontend(std::move(*buffer), stage, llvm::errs(), &context);
  if (!result.ok)
    return 1;

  if (emit == Emit::Ast) {
    dumpAST(*result.ast, *result.sourceMgr, output->os());
  } else {
    mlir::OpPrintingFlags flags;
    if (debugInfo)
      flags.enableDebugInfo(/*enable=*/true, /*prettyForm=*/false);
    result.module->print(output->os(), flags);
    output->os() << "\n";
  }
  output->keep();
  return 0;
}
