//===- Diagnostics.h - source-located diagnostics for .attn files -*- C++ -*-===//
//
// This file declares the DiagnosticEngine through which every stage of the
// front end reports user errors. Each diagnostic is printed as
// `file:line:col: error: message`, followed by the source line and a caret,
// and is also recorded so that tests can assert message and location.
//
//===----------------------------------------------------------------------===//
#ifndef ATTNC_DSL_SYNTAX_DIAGNOSTICS_H
#define ATTNC_DSL_SYNTAX_DIAGNOSTICS_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/ADT/Twine.h"
#include "llvm/Support/SMLoc.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"

#include <string>
#include <vector>

namespace attnc::dsl {

/// One reported diagnostic, kept for tests and tools.
struct Diagnostic {
  enum class Kind { Error, Note };
  Kind kind;
  unsigned line = 0;   ///< 1-based; 0 when the location is unknown.
  unsigned column = 0; ///< 1-based.
  std::string message;
};

/// Prints diagnostics with their source line and a caret and records them.
/// Printing stops after `maxErrors` errors; recording never stops.
class DiagnosticEngine {
public:
  DiagnosticEngine(llvm::SourceMgr &sourceMgr, llvm::raw_ostream &os,
                   unsigned maxErrors = 20)
      : sourceMgr(sourceMgr), os(os), maxErrors(maxErrors) {}

  /// Reports an error at `loc`, underlining `ranges`.
  void error(llvm::SMLoc loc, const llvm::Twine &message,
             llvm::ArrayRef<llvm::SMRange> ranges = {});
  /// Attaches a note (for example "previous definition is here").
  void note(llvm::SMLoc loc, const llvm::Twine &message);

  bool hasErrors() const { return numErrors != 0; }
  unsigned errorCount() const { return numErrors; }
  const std::vector<Diagnostic> &diagnostics() const { return records; }
  llvm::SourceMgr &getSourceMgr() { return sourceMgr; }

private:
  void report(Diagnostic::Kind kind, llvm::SMLoc loc, const llvm::Twine &message,
              llvm::ArrayRef<llvm::SMRange> ranges);

  llvm::SourceMgr &sourceMgr;
  llvm::raw_ostream &os;
  unsigned maxErrors;
  unsigned numErrors = 0;
  std::vector<Diagnostic> records;
};

/// Returns the candidate closest to `name` by edit distance, or "" when none
/// is close enough to be a plausible typo.
std::string closestMatch(llvm::StringRef name,
                         llvm::ArrayRef<std::string> candidates);

} // namespace attnc::dsl

#endif // ATTNC_DSL_SYNTAX_DIAGNOSTICS_H
