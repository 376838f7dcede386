//===- AST.h - abstract syntax tree of the .attn language ---------*- C++ -*-===//
//
// This file declares the AST produced by the Parser: a file holds models, a
// model holds statements (dim declarations, tensor declarations, bindings),
// and bindings hold expressions. Every node carries its source location.
// Semantic analysis (dsl/Sema) annotates expressions in place.
//
//===----------------------------------------------------------------------===//
#ifndef ATTNC_DSL_SYNTAX_AST_H
#define ATTNC_DSL_SYNTAX_AST_H

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/SMLoc.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace attnc::dsl {

struct Expr;
using ExprPtr = std::unique_ptr<Expr>;

/// A name with the location where it is written.
struct Ident {
  std::string name;
  llvm::SMLoc loc;
};

/// `name = value` inside a call.
struct KeywordArg {
  Ident name;
  ExprPtr value;
};

enum class ExprKind {
  Number,    ///< 3, 0.5, 1e-5
  Name,      ///< x, d, causal
  Bool,      ///< true, false
  None,      ///< none
  Unary,     ///< -x
  Binary,    ///< a + b, a @ b, a ^ 2, ...
  Call,      ///< f(a, k = v) [as name]
  Index,     ///< p[0]
  Transpose, ///< x.T
  List,      ///< [a, b, c]
  Repeat,    ///< repeat 8 flash(x, ...)
};

/// Semantic annotation filled in by Sema (see dsl/Sema/Sema.h).
struct SemaInfo;

/// One expression node. The fields used depend on `kind`:
///  Number: number, isInteger, integer; Name: name; Bool: boolean;
///  Unary/Binary: op, operands; Call: name (callee), operands (positional),
///  keywords, layerName; Index: operands = {base, index}; Transpose:
///  operands = {base}; List: operands; Repeat: operands = {count, call}.
struct Expr {
  ExprKind kind;
  llvm::SMLoc loc;     ///< Operator or callee location; first char otherwise.
  llvm::SMRange range; ///< Whole extent of the expression.

  double number = 0;
  bool isInteger = false;
  int64_t integer = 0;
  bool boolean = false;
  std::string name;
  char op = 0; ///< '+', '-', '*', '/', '@', '^' (binary) or '-' (unary).
  std::vector<ExprPtr> operands;
  std::vector<KeywordArg> keywords;
  std::optional<Ident> layerName; ///< `as NAME` after a template call.

  std::shared_ptr<SemaInfo> sema; ///< Set by Sema.

  Expr(ExprKind kind, llvm::SMLoc loc) : kind(kind), loc(loc) {}
  const KeywordArg *findKeyword(llvm::StringRef key) const;
};

/// `f32[b, n, d]`: element type and dimension expressions.
struct TypeSpec {
  Ident dtype;
  std::vector<ExprPtr> dims;
};

enum class RuntimeDimKind { Seq, Batch };

/// `dim d = 512` or `dim n : seq`.
struct DimDecl {
  Ident name;
  ExprPtr value;                       ///< Null for runtime dims.
  std::optional<RuntimeDimKind> runtime;
  llvm::SMLoc kindLoc;                 ///< Location of `seq`/`batch`.
};

enum class TensorRole { Input, Output, Param };

/// `input x : f32[...]`, `param w : f32[...]`, `output y [: type] [= expr]`.
struct TensorDecl {
  TensorRole role;
  Ident name;
  std::optional<TypeSpec> type; ///< Always present for inputs and params.
  ExprPtr init;                 ///< `output y = expr`.
};

/// `a, b, c = expr`.
struct Binding {
  std::vector<Ident> names;
  ExprPtr value;
};

struct Stmt {
  enum class Kind { Dim, Tensor, Bind } kind;
  DimDecl dim;
  TensorDecl tensor;
  Binding bind;
};

struct ModelAST {
  Ident name;
  llvm::SMLoc endLoc; ///< The closing brace.
  std::vector<Stmt> stmts;
};

struct FileAST {
  std::string fileName;
  std::vector<ModelAST> models;
};

/// Prints `expr` back in .attn syntax (fully parenthesised binary operators).
void printExpr(const Expr &expr, llvm::raw_ostream &os);
/// printExpr into a string (for diagnostics).
std::string exprText(const Expr &expr);
/// Prints the AST as an indented tree with line:col of every node
/// (`attnc --emit=ast`).
void dumpAST(const FileAST &file, const llvm::SourceMgr &sourceMgr,
             llvm::raw_ostream &os);

} // namespace attnc::dsl

#endif // ATTNC_DSL_SYNTAX_AST_H
