//===- FrontendFuzzer.cpp - libFuzzer target for the .attn front end ------===//
//
// This file is a libFuzzer target that runs the whole front end (parse,
// check, import to the attn dialect and verify) on each input, as
// FrontendFuzzTest does for its fixed mutations. An input is either accepted
// (its IR verifies) or rejected by the parser or checker with at least one
// located diagnostic; an "internal error", a checked model that does not
// import, or a rejection without a located diagnostic aborts, so that
// libFuzzer reports the input as a crash. One MLIRContext serves all inputs.
//
//===----------------------------------------------------------------------===//
#include "dsl/Import/Frontend.h"
#include "tests/fuzz/ImportFuzzSupport.h"

#include "mlir/IR/MLIRContext.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

using namespace attnc::dsl;

namespace {

[[noreturn]] void reportAndAbort(const char *what, const std::string &source,
                                 const std::string &diagnostics) {
  attnc::fuzz::abortWithInput("FrontendFuzzer", what, source, diagnostics);
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  attnc::fuzz::ImportedInput input(data, size);
  const std::string &source = input.source, &diagnostics = input.printed();
  const FrontendResult &result = input.result;
  // Look at the recorded messages, not the printed text: the printed text
  // quotes the input, which may well contain the words "internal error".
  for (const Diagnostic &diagnostic : result.diags->diagnostics())
    if (llvm::StringRef(diagnostic.message).starts_with("internal error"))
      reportAndAbort("internal error", source, diagnostics);
  if (result.ok)
    return 0;
  // A checked model must import: the importer's only failure is the
  // "internal error" of IR that does not verify, reported through MLIR.
  if (result.models)
    reportAndAbort("a checked model does not import", source, diagnostics);
  if (!result.diags->hasErrors())
    reportAndAbort("rejected without a diagnostic", source, diagnostics);
  if (result.diags->diagnostics().front().line == 0)
    reportAndAbort("diagnostic without a location", source, diagnostics);
  return 0;
}
