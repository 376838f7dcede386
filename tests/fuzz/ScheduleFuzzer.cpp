//===- ScheduleFuzzer.cpp - libFuzzer target for attn attribute syntax ----===//
//
// This file is a libFuzzer target for the parsers of the attn dialect's
// attributes, `#attn.schedule<...>` first of all. Each input is parsed with
// mlir::parseAttribute in a context with the attn dialect loaded. A parsed
// attn attribute must print and parse back to the same attribute; a
// schedule must in addition pass ScheduleAttr::verifyParams on its own
// parameters and be rebuilt identically from them. A failed round trip
// aborts so that libFuzzer reports it; parse errors are expected and
// silenced.
//
//===----------------------------------------------------------------------===//
#include "dsl/IR/AttnDialect.h"
#include "dsl/IR/AttnOps.h"

#include "mlir/AsmParser/AsmParser.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

using namespace mlir;

namespace {

/// The context every input is parsed in; created on first use, with a
/// handler that drops the (expected) parse errors.
MLIRContext &fuzzContext() {
  static MLIRContext *context = [] {
    auto *created = new MLIRContext(MLIRContext::Threading::DISABLED);
    created->loadDialect<attn::AttnDialect>();
    created->getDiagEngine().registerHandler(
        [](Diagnostic &) { return success(); });
    return created;
  }();
  return *context;
}

/// Prints why the input is a failure and aborts.
[[noreturn]] void reportAndAbort(const char *what, llvm::StringRef input,
                                 const std::string &printed) {
  std::fprintf(
      stderr, "ScheduleFuzzer: %s\n--- input ---\n%.*s\n--- printed ---\n%s\n",
      what, static_cast<int>(input.size()), input.data(), printed.c_str());
  std::abort();
}

std::string printAttribute(Attribute attr) {
  std::string text;
  llvm::raw_string_ostream os(text);
  attr.print(os);
  os.flush();
  return text;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  MLIRContext &context = fuzzContext();
  llvm::StringRef input(reinterpret_cast<const char *>(data), size);
  Attribute attr = parseAttribute(input, &context);
  if (!attr || attr.getDialect().getNamespace() !=
                   attn::AttnDialect::getDialectNamespace())
    return 0;

  std::string printed = printAttribute(attr);
  Attribute reparsed = parseAttribute(printed, &context);
  if (reparsed != attr)
    reportAndAbort("printed attribute does not parse back to itself", input,
                   printed);

  if (auto schedule = llvm::dyn_cast<attn::ScheduleAttr>(attr)) {
    attn::ScheduleParams params = schedule.getParams();
    bool verified = succeeded(attn::ScheduleAttr::verifyParams(
        [&] { return emitError(UnknownLoc::get(&context)); }, params));
    if (!verified)
      reportAndAbort("a parsed schedule fails verifyParams", input, printed);
    if (attn::ScheduleAttr::get(&context, params) != schedule)
      reportAndAbort("a schedule rebuilt from its parameters differs", input,
                     printed);
  }
  return 0;
}
