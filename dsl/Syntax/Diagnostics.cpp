//===- Diagnostics.cpp - source-located diagnostics for .attn files -------===//
//
// This file implements the DiagnosticEngine (printing through llvm::SourceMgr,
// which renders the caret line) and the typo suggestion used by "unknown
// name" diagnostics.
//
//===----------------------------------------------------------------------===//
#include "dsl/Syntax/Diagnostics.h"

namespace attnc::dsl {

void DiagnosticEngine::error(llvm::SMLoc loc, const llvm::Twine &message,
                             llvm::ArrayRef<llvm::SMRange> ranges) {
  ++numErrors;
  report(Diagnostic::Kind::Error, loc, message, ranges);
}

void DiagnosticEngine::note(llvm::SMLoc loc, const llvm::Twine &message) {
  report(Diagnostic::Kind::Note, loc, message, {});
}

void DiagnosticEngine::report(Diagnostic::Kind kind, llvm::SMLoc loc,
                              const llvm::Twine &message,
                              llvm::ArrayRef<llvm::SMRange> ranges) {
  Diagnostic diag;
  diag.kind = kind;
  diag.message = message.str();
  if (loc.isValid() && sourceMgr.FindBufferContainingLoc(loc)) {
    auto [line, column] = sourceMgr.getLineAndColumn(loc);
    diag.line = line;
    diag.column = column;
  }
  records.push_back(diag);
  if (numErrors > maxErrors)
    return;
  auto srcKind = kind == Diagnostic::Kind::Error ? llvm::SourceMgr::DK_Error
                                                 : llvm::SourceMgr::DK_Note;
  if (loc.isValid() && sourceMgr.FindBufferContainingLoc(loc)) {
    sourceMgr.PrintMessage(os, loc, srcKind, diag.message, ranges);
  } else {
    os << (kind == Diagnostic::Kind::Error ? "error: " : "note: ")
       << diag.message << "\n";
  }
  if (numErrors == maxErrors && kind == Diagnostic::Kind::Error)
    os << "note: too many errors, stopping here\n";
}

std::string closestMatch(llvm::StringRef name,
                         llvm::ArrayRef<std::string> candidates) {
  std::string best;
  unsigned bestDistance = ~0u;
  // Allow about one edit per three characters, at least one.
  unsigned limit = std::max<unsigned>(1, (name.size() + 2) / 3);
  for (const std::string &candidate : candidates) {
    if (candidate == name)
      continue;
    unsigned distance = name.edit_distance(candidate, true, limit + 1);
    if (distance <= limit && distance < bestDistance) {
      bestDistance = distance;
      best = candidate;
    }
  }
  return best;
}

} // namespace attnc::dsl
