//===- ImportFuzzSupport.h - what the .attn fuzz targets share -*- C++ -*-===//
//
// This file defines the pieces that frontend-fuzzer and passes-fuzzer
// share: the one MLIRContext every input is imported into, the import of
// an input, and the report of an input that fails (printed, then abort,
// so that libFuzzer saves it).
//
//===----------------------------------------------------------------------===//
#ifndef ATTNC_TESTS_FUZZ_IMPORTFUZZSUPPORT_H
#define ATTNC_TESTS_FUZZ_IMPORTFUZZSUPPORT_H

#include "dsl/Import/Frontend.h"

#include "mlir/IR/MLIRContext.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdio>
#include <cstdlib>
#include <string>

namespace attnc::fuzz {

/// The context every input is imported into; created on first use, with
/// the import dialects loaded and no threads (each input is small and
/// libFuzzer measures one thread).
inline mlir::MLIRContext &importContext() {
  static mlir::MLIRContext *context = [] {
    mlir::DialectRegistry registry;
    dsl::registerImportDialects(registry);
    auto *created = new mlir::MLIRContext(registry);
    created->loadAllAvailableDialects();
    created->disableMultithreading();
    return created;
  }();
  return *context;
}

/// Imports `source` (named fuzz.attn in diagnostics) into importContext().
/// The result's DiagnosticEngine keeps writing to `diagnostics`, so the
/// stream must outlive it.
inline dsl::FrontendResult importInput(const std::string &source,
                                       llvm::raw_ostream &diagnostics) {
  return dsl::runFrontend(source, "fuzz.attn", dsl::FrontendStage::Import,
                          diagnostics, &importContext());
}

/// Prints which check `target` failed, the input and the diagnostics, and
/// aborts.
[[noreturn]] inline void abortWithInput(const char *target,
                                        llvm::StringRef what,
                                        const std::string &source,
                                        const std::string &diagnostics) {
  std::fprintf(stderr, "%s: %s\n--- input ---\n%s\n--- diagnostics ---\n%s\n",
               target, what.str().c_str(), source.c_str(), diagnostics.c_str());
  std::abort();
}

} // namespace attnc::fuzz

#endif // ATTNC_TESTS_FUZZ_IMPORTFUZZSUPPORT_H
