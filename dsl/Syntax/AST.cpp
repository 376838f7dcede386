//===- AST.cpp - printing the .attn AST -----------------------------------===//
//
// This file implements the AST printers: printExpr (back to .attn syntax,
// used in diagnostics and dumps) and dumpAST (`attnc --emit=ast`).
//
//===----------------------------------------------------------------------===//
#include "dsl/Syntax/AST.h"

#include "llvm/Support/SourceMgr.h"

namespace attnc::dsl {

const KeywordArg *Expr::findKeyword(llvm::StringRef key) const {
  for (const KeywordArg &kw : keywords)
    if (kw.name.name == key)
      return &kw;
  return nullptr;
}

void printExpr(const Expr &expr, llvm::raw_ostream &os) {
  switch (expr.kind) {
  case ExprKind::Number:
    if (expr.isInteger)
      os << expr.integer;
    else
      os << expr.number;
    return;
  case ExprKind::Name:
    os << expr.name;
    return;
  case ExprKind::Bool:
    os << (expr.boolean ? "true" : "false");
    return;
  case ExprKind::None:
    os << "none";
    return;
  case ExprKind::Unary:
    os << "(-";
    printExpr(*expr.operands[0], os);
    os << ")";
    return;
  case ExprKind::Binary:
    os << "(";
    printExpr(*expr.operands[0], os);
    os << " " << expr.op << " ";
    printExpr(*expr.operands[1], os);
    os << ")";
    return;
  case ExprKind::Call: {
    os << expr.name << "(";
    llvm::StringRef sep = "";
    for (const ExprPtr &arg : expr.operands) {
      os << sep;
      printExpr(*arg, os);
      sep = ", ";
    }
    for (const KeywordArg &kw : expr.keywords) {
      os << sep << kw.name.name << " = ";
      printExpr(*kw.value, os);
      sep = ", ";
    }
    os << ")";
    if (expr.layerName)
      os << " as " << expr.layerName->name;
    return;
  }
  case ExprKind::Index:
    printExpr(*expr.operands[0], os);
    os << "[";
    printExpr(*expr.operands[1], os);
    os << "]";
    return;
  case ExprKind::Transpose:
    printExpr(*expr.operands[0], os);
    os << ".T";
    return;
  case ExprKind::List: {
    os << "[";
    llvm::StringRef sep = "";
    for (const ExprPtr &elem : expr.operands) {
      os << sep;
      printExpr(*elem, os);
      sep = ", ";
    }
    os << "]";
    return;
  }
  case ExprKind::Repeat:
    os << "repeat ";
    printExpr(*expr.operands[0], os);
    os << " ";
    printExpr(*expr.operands[1], os);
    return;
  }
}

std::string exprText(const Expr &expr) {
  std::string text;
  llvm::raw_string_ostream os(text);
  printExpr(expr, os);
  return text;
}

namespace {
/// Prints one node per line, indented, with its line:col.
class TreePrinter {
public:
  TreePrinter(const llvm::SourceMgr &sourceMgr, llvm::raw_ostream &os)
      : sourceMgr(sourceMgr), os(os) {}

  void print(const FileAST &file) {
    os << "File " << file.fileName << "\n";
    for (const ModelAST &model : file.models) {
      line(1, "Model " + model.name.name, model.name.loc);
      for (const Stmt &stmt : model.stmts)
        printStmt(stmt);
    }
  }

private:
  void line(unsigned indent, const std::string &text, llvm::SMLoc loc) {
    os.indent(2 * indent) << text;
    if (loc.isValid() && sourceMgr.FindBufferContainingLoc(loc)) {
      auto [l, c] = sourceMgr.getLineAndColumn(loc);
      os << " @" << l << ":" << c;
    }
    os << "\n";
  }

  void printStmt(const Stmt &stmt) {
    switch (stmt.kind) {
    case Stmt::Kind::Dim:
      if (stmt.dim.runtime) {
        line(2, "Dim " + stmt.dim.name.name + " : " +
                    (*stmt.dim.runtime == RuntimeDimKind::Seq ? "seq"
                                                              : "batch"),
             stmt.dim.name.loc);
      } else {
        line(2, "Dim " + stmt.dim.name.name, stmt.dim.name.loc);
        printExprTree(*stmt.dim.value, 3);
      }
      return;
    case Stmt::Kind::Tensor: {
      const TensorDecl &decl = stmt.tensor;
      const char *role = decl.role == TensorRole::Input    ? "Input"
                         : decl.role == TensorRole::Param ? "Param"
                                                          : "Output";
      std::string text = std::string(role) + " " + decl.name.name;
      if (decl.type) {
        std::string type;
        llvm::raw_string_ostream ts(type);
        ts << " : " << decl.type->dtype.name << "[";
        llvm::StringRef sep = "";
        for (const ExprPtr &dim : decl.type->dims) {
          ts << sep;
          printExpr(*dim, ts);
          sep = ", ";
        }
        ts << "]";
        text += type;
      }
      line(2, text, decl.name.loc);
      if (decl.init)
        printExprTree(*decl.init, 3);
      return;
    }
    case Stmt::Kind::Bind: {
      std::string names;
      for (const Ident &id : stmt.bind.names)
        names += (names.empty() ? "" : ", ") + id.name;
      line(2, "Bind " + names, stmt.bind.names.front().loc);
      printExprTree(*stmt.bind.value, 3);
      return;
    }
    }
  }

  void printExprTree(const Expr &expr, unsigned indent) {
    std::string text;
    llvm::raw_string_ostream ts(text);
    switch (expr.kind) {
    case ExprKind::Number: ts << "Number "; printExpr(expr, ts); break;
    case ExprKind::Name: ts << "Name " << expr.name; break;
    case ExprKind::Bool: ts << "Bool " << (expr.boolean ? "true" : "false"); break;
    case ExprKind::None: ts << "None"; break;
    case ExprKind::Unary: ts << "Unary " << expr.op; break;
    case ExprKind::Binary: ts << "Binary " << expr.op; break;
    case ExprKind::Call:
      ts << "Call " << expr.name;
      if (expr.layerName)
        ts << " as " << expr.layerName->name;
      break;
    case ExprKind::Index: ts << "Index"; break;
    case ExprKind::Transpose: ts << "Transpose"; break;
    case ExprKind::List: ts << "List"; break;
    case ExprKind::Repeat: ts << "Repeat"; break;
    }
    line(indent, text, expr.loc);
    for (const ExprPtr &operand : expr.operands)
      printExprTree(*operand, indent + 1);
    for (const KeywordArg &kw : expr.keywords) {
      line(indent + 1, "Keyword " + kw.name.name, kw.name.loc);
      printExprTree(*kw.value, indent + 2);
    }
  }

  const llvm::SourceMgr &sourceMgr;
  llvm::raw_ostream &os;
};
} // namespace

void dumpAST(const FileAST &file, const llvm::SourceMgr &sourceMgr,
             llvm::raw_ostream &os) {
  TreePrinter(sourceMgr, os).print(file);
}

} // namespace attnc::dsl
