//===- FrontendTestUtil.h - run the .attn front end on a string -*- C++ -*-===//
//
// This file declares FrontendRun, the fixture shared by the front-end unit
// tests: it owns an llvm::SourceMgr holding one source string and a
// DiagnosticEngine that prints into a string, runs the lexer, parser and
// semantic analysis on demand, and exposes the recorded diagnostics
// (kind, line, column, message) and the printed text for assertions.
//
//===----------------------------------------------------------------------===//
#ifndef ATTNC_TESTS_UNIT_FRONTENDTESTUTIL_H
#define ATTNC_TESTS_UNIT_FRONTENDTESTUTIL_H

#include "dsl/Sema/Sema.h"
#include "dsl/Syntax/Diagnostics.h"
#include "dsl/Syntax/Lexer.h"
#include "dsl/Syntax/Parser.h"

#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"

#include <initializer_list>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace attnc::dsl::test {

/// The file name under which test sources are registered.
inline constexpr const char *kTestFileName = "test.attn";

/// One front-end run over a source string. Not copyable: the AST and the
/// diagnostics point into the buffer owned by `sourceMgr`.
class FrontendRun {
public:
  explicit FrontendRun(llvm::StringRef source, unsigned maxErrors = 20)
      : os(printed) {
    auto buffer = llvm::MemoryBuffer::getMemBufferCopy(source, kTestFileName);
    text = buffer->getBuffer();
    sourceMgr.AddNewSourceBuffer(std::move(buffer), llvm::SMLoc());
    diags = std::make_unique<DiagnosticEngine>(sourceMgr, os, maxErrors);
  }
  FrontendRun(const FrontendRun &) = delete;
  FrontendRun &operator=(const FrontendRun &) = delete;

  /// Parses the source; true when it parsed without errors.
  bool parse() {
    file = parseSource(text, kTestFileName, *diags);
    return file.has_value() && !diags->hasErrors();
  }

  /// Parses and checks the source; true when both succeeded.
  bool check() {
    if (!parse())
      return false;
    models = checkFile(*file, *diags);
    return models.has_value() && !diags->hasErrors();
  }

  /// Lexes the whole source (up to and including Eof).
  std::vector<Token> lex() {
    Lexer lexer(text, *diags);
    std::vector<Token> tokens;
    do
      tokens.push_back(lexer.next());
    while (!tokens.back().is(TokenKind::Eof));
    return tokens;
  }

  const std::vector<Diagnostic> &diagnostics() const {
    return diags->diagnostics();
  }
  unsigned errorCount() const { return diags->errorCount(); }
  DiagnosticEngine &engine() { return *diags; }
  llvm::StringRef source() const { return text; }

  /// Every recorded diagnostic of kind Error, in order.
  std::vector<Diagnostic> errors() const {
    std::vector<Diagnostic> out;
    for (const Diagnostic &diag : diagnostics())
      if (diag.kind == Diagnostic::Kind::Error)
        out.push_back(diag);
    return out;
  }

  /// The first recorded error; a Diagnostic with line 0 and the message
  /// "<no error>" when there is none, so that assertions fail readably.
  Diagnostic firstError() const {
    for (const Diagnostic &diag : diagnostics())
      if (diag.kind == Diagnostic::Kind::Error)
        return diag;
    return {Diagnostic::Kind::Error, 0, 0, "<no error>"};
  }

  /// The first note recorded after the first error (or "<no note>").
  Diagnostic firstNote() const {
    for (const Diagnostic &diag : diagnostics())
      if (diag.kind == Diagnostic::Kind::Note)
        return diag;
    return {Diagnostic::Kind::Note, 0, 0, "<no note>"};
  }

  /// Everything the DiagnosticEngine printed.
  std::string output() { return os.str(); }

  /// 1-based line and column of `loc` in the source.
  std::pair<unsigned, unsigned> lineColumn(llvm::SMLoc loc) const {
    return sourceMgr.getLineAndColumn(loc);
  }

  /// The model called `name` after check(), or null.
  const CheckedModel *model(llvm::StringRef name = "") const {
    if (!models)
      return nullptr;
    for (const CheckedModel &m : *models)
      if (name.empty() || m.ast->name.name == name)
        return &m;
    return nullptr;
  }

  /// The value expression bound to `name` (`name = ...`, `a, name = ...` or
  /// `output name = ...`) in the first model, or null.
  const Expr *boundExpr(llvm::StringRef name) const {
    if (!file || file->models.empty())
      return nullptr;
    for (const Stmt &stmt : file->models.front().stmts) {
      if (stmt.kind == Stmt::Kind::Bind)
        for (const Ident &id : stmt.bind.names)
          if (id.name == name)
            return stmt.bind.value.get();
      if (stmt.kind == Stmt::Kind::Tensor && stmt.tensor.init &&
          stmt.tensor.name.name == name)
        return stmt.tensor.init.get();
    }
    return nullptr;
  }

  /// The SemaInfo of the expression bound to `name`, or null.
  const SemaInfo *semaOf(llvm::StringRef name) const {
    const Expr *expr = boundExpr(name);
    return expr ? expr->sema.get() : nullptr;
  }

  /// `TensorType::str()` of the tensor bound to `name`, or "<none>".
  std::string typeOf(llvm::StringRef name) const {
    const SemaInfo *info = semaOf(name);
    if (!info || info->kind != ValueKind::Tensor)
      return "<none>";
    return info->type.str();
  }

  std::optional<FileAST> file;
  std::optional<std::vector<CheckedModel>> models;

private:
  llvm::SourceMgr sourceMgr;
  std::string printed;
  llvm::raw_string_ostream os;
  std::unique_ptr<DiagnosticEngine> diags;
  llvm::StringRef text;
};

/// Joins `lines` with newlines, so that element i is source line i + 1.
inline std::string lines(std::initializer_list<std::string> lines) {
  std::string out;
  for (const std::string &line : lines)
    out += line + "\n";
  return out;
}

/// Types of the declared tensors of `list`, as `name: f32[...]` strings.
inline std::vector<std::string>
describe(const std::vector<DeclaredTensor> &list) {
  std::vector<std::string> out;
  for (const DeclaredTensor &tensor : list)
    out.push_back(tensor.name + ": " + tensor.type.str());
  return out;
}

} // namespace attnc::dsl::test

#endif // ATTNC_TESTS_UNIT_FRONTENDTESTUTIL_H
