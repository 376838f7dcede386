//===- ImportFuzzSupport.h - what the .attn fuzz targets share -*- C++ -*-===//
//
// This file defines the pieces that frontend-fuzzer and passes-fuzzer
// share: the one MLIRContext every input is imported into, an input's
// import, and the report of an input that fails (printed, then abort,
// so that libFuzzer saves it).
//
//===----------------------------------------------------------------------===//
#ifndef ATTNC_TESTS_FUZZ_IMPORTFUZZSUPPORT_H
#define ATTNC_TESTS_FUZZ_IMPORTFUZZSUPPORT_H

#include "dsl/Import/Frontend.h"

#include "mlir/IR/MLIRContext.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdint>
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

/// One libFuzzer input imported into importContext() (named fuzz.attn in
/// diagnostics). It owns the stream that `result`'s DiagnosticEngine keeps
/// writing to, so the two live and die together.
struct ImportedInput {
  ImportedInput(const uint8_t *data, size_t size)
      : source(reinterpret_cast<const char *>(data), size), stream(diagnostics),
        result(dsl::runFrontend(source, "fuzz.attn", dsl::FrontendStage::Import,
                                stream, &importContext())) {}
  /// The diagnostics printed so far.
  const std::string &printed() {
    stream.flush();
    return diagnostics;
  }

  std::string source;
  std::string diagnostics;
  llvm::raw_string_ostream stream;
  dsl::FrontendResult result;
};

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
