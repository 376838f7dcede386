//===- Parser.h - recursive-descent parser for .attn ---------------*- C++ -*-===//
//
// This file declares the Parser, which turns the tokens of one .attn buffer
// into a FileAST. The grammar is documented on the Parser's methods and in
// docs/dsl.md. The parser stops at the first syntax error, which it reports
// through the DiagnosticEngine with the location and what was expected.
//
//===----------------------------------------------------------------------===//
#ifndef ATTNC_DSL_SYNTAX_PARSER_H
#define ATTNC_DSL_SYNTAX_PARSER_H

#include "dsl/Syntax/AST.h"
#include "dsl/Syntax/Lexer.h"

#include <optional>

namespace attnc::dsl {

class Parser {
public:
  Parser(llvm::StringRef buffer, llvm::StringRef fileName,
         DiagnosticEngine &diags);

  /// file := model+
  /// Returns nullopt after reporting a syntax error.
  std::optional<FileAST> parseFile();

private:
  /// model := 'model' IDENT '{' stmt* '}'
  bool parseModel(ModelAST &model);
  /// stmt := dimDecl | tensorDecl | binding
  bool parseStmt(ModelAST &model);
  /// dimDecl := 'dim' dimItem (',' dimItem)*
  /// dimItem := IDENT '=' expr | IDENT ':' ('seq' | 'batch')
  bool parseDimDecl(ModelAST &model);
  /// tensorDecl := ('input' | 'param') IDENT ':' type
  ///             | 'output' IDENT [':' type] ['=' expr]
  bool parseTensorDecl(ModelAST &model);
  /// type := DTYPE '[' [expr (',' expr)*] ']'
  bool parseType(TypeSpec &type);
  /// binding := IDENT (',' IDENT)* '=' expr
  bool parseBinding(ModelAST &model);

  /// expr     := additive
  /// additive := multiplicative (('+' | '-') multiplicative)*
  /// multiplicative := unary (('*' | '/' | '@') unary)*
  /// unary    := '-' unary | power
  /// power    := postfix ['^' unary]            (right-associative)
  /// postfix  := primary ('[' expr ']' | '.' 'T')*
  /// primary  := NUMBER | 'true' | 'false' | 'none' | '(' expr ')'
  ///           | '[' [expr (',' expr)*] ']' | IDENT | call
  ///           | 'repeat' expr call
  /// call     := IDENT '(' [arg (',' arg)*] ')' ['as' IDENT]
  /// arg      := IDENT '=' expr | expr          (keywords after positionals)
  ExprPtr parseExpr();
  ExprPtr parseAdditive();
  ExprPtr parseMultiplicative();
  ExprPtr parseUnary();
  ExprPtr parsePower();
  ExprPtr parsePostfix();
  ExprPtr parsePrimary();
  ExprPtr parseCallRest(Token callee);

  // Token helpers.
  void consume();
  /// Returns the token after the current one without consuming anything.
  const Token &peek();
  bool consumeIf(TokenKind kind);
  bool expect(TokenKind kind, llvm::StringRef context);
  bool expectIdent(Ident &ident, llvm::StringRef context);
  void errorExpected(llvm::StringRef what, llvm::StringRef context);
  llvm::SMLoc prevEnd() const;

  Lexer lexer;
  DiagnosticEngine &diags;
  std::string fileName;
  Token tok;       ///< The current token.
  Token prev;      ///< The previous token.
  std::optional<Token> ahead; ///< One token of lookahead, filled by peek().
  unsigned depth = 0; ///< Expression nesting, bounded to protect the stack.
};

/// Parses `buffer` into a FileAST, reporting errors through `diags`.
std::optional<FileAST> parseSource(llvm::StringRef buffer,
                                   llvm::StringRef fileName,
                                   DiagnosticEngine &diags);

} // namespace attnc::dsl

#endif // ATTNC_DSL_SYNTAX_PARSER_H
