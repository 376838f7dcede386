//===- Lexer.h - tokens of the .attn language ---------------------*- C++ -*-===//
//
// This file declares the Token kinds and the Lexer that turns an .attn
// buffer into tokens. Newlines are whitespace; `#` starts a comment that runs
// to the end of the line. Lexical errors become Error tokens after a
// diagnostic has been reported.
//
//===----------------------------------------------------------------------===//
#ifndef ATTNC_DSL_SYNTAX_LEXER_H
#define ATTNC_DSL_SYNTAX_LEXER_H

#include "dsl/Syntax/Diagnostics.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/SMLoc.h"

#include <cstdint>

namespace attnc::dsl {

enum class TokenKind {
  Eof,
  Error,
  Identifier,
  Integer,
  Float,
  LBrace,
  RBrace,
  LParen,
  RParen,
  LBracket,
  RBracket,
  Comma,
  Colon,
  Equal,
  At,
  Plus,
  Minus,
  Star,
  Slash,
  Caret,
  Dot,
  KwModel,
  KwDim,
  KwInput,
  KwOutput,
  KwParam,
  KwRepeat,
  KwAs,
  KwTrue,
  KwFalse,
  KwNone,
};

/// Returns how a token kind is spelled in diagnostics ("'{'", "identifier").
llvm::StringRef spell(TokenKind kind);

struct Token {
  TokenKind kind = TokenKind::Eof;
  llvm::StringRef text; ///< The token's characters in the buffer.
  double number = 0;    ///< Value of Integer and Float tokens.
  int64_t integer = 0;  ///< Value of Integer tokens.

  llvm::SMLoc loc() const { return llvm::SMLoc::getFromPointer(text.data()); }
  llvm::SMRange range() const {
    return {loc(), llvm::SMLoc::getFromPointer(text.data() + text.size())};
  }
  bool is(TokenKind k) const { return kind == k; }
};

/// Splits one buffer into tokens on demand.
class Lexer {
public:
  Lexer(llvm::StringRef buffer, DiagnosticEngine &diags)
      : buffer(buffer), cur(buffer.begin()), diags(diags) {}

  /// Returns the next token; Eof at the end of the buffer (repeatedly).
  Token next();

private:
  Token make(TokenKind kind, const char *start) const;
  Token lexNumber(const char *start);
  Token lexIdentifier(const char *start);
  Token error(const char *start, const llvm::Twine &message);

  llvm::StringRef buffer;
  const char *cur;
  DiagnosticEngine &diags;
};

} // namespace attnc::dsl

#endif // ATTNC_DSL_SYNTAX_LEXER_H
