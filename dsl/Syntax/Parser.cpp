//===- Parser.cpp - recursive-descent parser for .attn --------------------===//
//
// This file implements the .attn parser. Each method parses the production
// documented on its declaration in Parser.h. Errors say what was expected
// and where; the first error stops parsing.
//
//===----------------------------------------------------------------------===//
#include "dsl/Syntax/Parser.h"

#include <algorithm>
#include <utility>
#include <vector>

namespace attnc::dsl {

/// Expressions nested deeper than this are rejected instead of risking the
/// stack (the fuzz tests feed thousands of '(').
static constexpr unsigned kMaxDepth = 200;

Parser::Parser(llvm::StringRef buffer, llvm::StringRef fileName,
               DiagnosticEngine &diags)
    : lexer(buffer, diags), diags(diags), fileName(fileName.str()) {
  tok = lexer.next();
}

void Parser::consume() {
  prev = tok;
  if (ahead) {
    tok = *ahead;
    ahead.reset();
  } else {
    tok = lexer.next();
  }
}

const Token &Parser::peek() {
  if (!ahead)
    ahead = lexer.next();
  return *ahead;
}

bool Parser::consumeIf(TokenKind kind) {
  if (!tok.is(kind))
    return false;
  consume();
  return true;
}

llvm::SMLoc Parser::prevEnd() const {
  return llvm::SMLoc::getFromPointer(prev.text.data() + prev.text.size());
}

void Parser::errorExpected(llvm::StringRef what, llvm::StringRef context) {
  if (tok.is(TokenKind::Error))
    return; // The lexer has already reported this token.
  std::string found = tok.is(TokenKind::Eof)
                          ? std::string("end of file")
                          : "'" + tok.text.str() + "'";
  diags.error(tok.loc(), "expected " + what + " " + context + ", found " +
                             found,
              {tok.range()});
}

bool Parser::expect(TokenKind kind, llvm::StringRef context) {
  if (consumeIf(kind))
    return true;
  errorExpected(spell(kind), context);
  return false;
}

bool Parser::expectIdent(Ident &ident, llvm::StringRef context) {
  if (!tok.is(TokenKind::Identifier)) {
    if (tok.kind >= TokenKind::KwModel) {
      diags.error(tok.loc(), "'" + tok.text + "' is a keyword and cannot be "
                                               "used as a name " + context,
                  {tok.range()});
      return false;
    }
    errorExpected("a name", context);
    return false;
  }
  ident = {tok.text.str(), tok.loc()};
  consume();
  return true;
}

std::optional<FileAST> Parser::parseFile() {
  FileAST file;
  file.fileName = fileName;
  if (tok.is(TokenKind::Eof)) {
    diags.error(tok.loc(), "expected 'model' at the start of the file, found "
                           "end of file (the file is empty)");
    return std::nullopt;
  }
  while (!tok.is(TokenKind::Eof)) {
    if (!tok.is(TokenKind::KwModel)) {
      errorExpected("'model'", "at the top level");
      return std::nullopt;
    }
    ModelAST model;
    if (!parseModel(model))
      return std::nullopt;
    file.models.push_back(std::move(model));
  }
  return file;
}

bool Parser::parseModel(ModelAST &model) {
  consume(); // 'model'
  if (!expectIdent(model.name, "after 'model'"))
    return false;
  if (!expect(TokenKind::LBrace, "after the model name"))
    return false;
  while (!tok.is(TokenKind::RBrace)) {
    if (tok.is(TokenKind::Eof)) {
      diags.error(tok.loc(), "expected '}' to close model '" +
                                 model.name.name + "', found end of file");
      diags.note(model.name.loc, "the model starts here");
      return false;
    }
    if (!parseStmt(model))
      return false;
  }
  model.endLoc = tok.loc();
  consume(); // '}'
  return true;
}

bool Parser::parseStmt(ModelAST &model) {
  switch (tok.kind) {
  case TokenKind::KwDim:
    return parseDimDecl(model);
  case TokenKind::KwInput:
  case TokenKind::KwOutput:
  case TokenKind::KwParam:
    return parseTensorDecl(model);
  case TokenKind::Identifier:
    return parseBinding(model);
  default:
    errorExpected("a statement ('dim', 'input', 'output', 'param' or a "
                  "binding 'name = ...')",
                  "in the model body");
    return false;
  }
}

bool Parser::parseDimDecl(ModelAST &model) {
  consume(); // 'dim'
  do {
    Stmt stmt;
    stmt.kind = Stmt::Kind::Dim;
    DimDecl &dim = stmt.dim;
    if (!expectIdent(dim.name, "in a dim declaration"))
      return false;
    if (consumeIf(TokenKind::Equal)) {
      dim.value = parseExpr();
      if (!dim.value)
        return false;
    } else if (consumeIf(TokenKind::Colon)) {
      if (tok.is(TokenKind::Identifier) && tok.text == "seq") {
        dim.runtime = RuntimeDimKind::Seq;
      } else if (tok.is(TokenKind::Identifier) && tok.text == "batch") {
        dim.runtime = RuntimeDimKind::Batch;
      } else {
        errorExpected("'seq' or 'batch'", "after ':' in a runtime dim");
        return false;
      }
      dim.kindLoc = tok.loc();
      consume();
    } else {
      errorExpected("'= <value>' or ': seq' / ': batch'",
                    "after dim '" + dim.name.name + "'");
      return false;
    }
    model.stmts.push_back(std::move(stmt));
  } while (consumeIf(TokenKind::Comma));
  return true;
}

bool Parser::parseTensorDecl(ModelAST &model) {
  Stmt stmt;
  stmt.kind = Stmt::Kind::Tensor;
  TensorDecl &decl = stmt.tensor;
  TokenKind roleTok = tok.kind;
  llvm::StringRef roleText = tok.text;
  decl.role = roleTok == TokenKind::KwInput    ? TensorRole::Input
              : roleTok == TokenKind::KwParam ? TensorRole::Param
                                              : TensorRole::Output;
  consume();
  if (!expectIdent(decl.name, ("after '" + roleText + "'").str()))
    return false;
  if (consumeIf(TokenKind::Colon)) {
    decl.type.emplace();
    if (!parseType(*decl.type))
      return false;
  } else if (decl.role != TensorRole::Output) {
    errorExpected("':' and a type such as f32[n, d]",
                  ("after " + roleText + " '" + decl.name.name + "'").str());
    return false;
  }
  if (decl.role == TensorRole::Output && consumeIf(TokenKind::Equal)) {
    decl.init = parseExpr();
    if (!decl.init)
      return false;
  }
  if (decl.role == TensorRole::Output && !decl.type && !decl.init) {
    errorExpected("':' and a type, or '= <expression>'",
                  "after output '" + decl.name.name + "'");
    return false;
  }
  model.stmts.push_back(std::move(stmt));
  return true;
}

bool Parser::parseType(TypeSpec &type) {
  if (!tok.is(TokenKind::Identifier)) {
    errorExpected("an element type (f32, f16, bf16)", "in a tensor type");
    return false;
  }
  type.dtype = {tok.text.str(), tok.loc()};
  consume();
  if (!expect(TokenKind::LBracket, "after the element type"))
    return false;
  if (consumeIf(TokenKind::RBracket))
    return true;
  do {
    ExprPtr dim = parseExpr();
    if (!dim)
      return false;
    type.dims.push_back(std::move(dim));
  } while (consumeIf(TokenKind::Comma));
  return expect(TokenKind::RBracket, "to close the shape");
}

bool Parser::parseBinding(ModelAST &model) {
  Stmt stmt;
  stmt.kind = Stmt::Kind::Bind;
  Binding &bind = stmt.bind;
  do {
    Ident name;
    if (!expectIdent(name, "on the left of '='"))
      return false;
    bind.names.push_back(name);
  } while (consumeIf(TokenKind::Comma));
  if (!expect(TokenKind::Equal, "after the bound name" +
                                    std::string(bind.names.size() > 1 ? "s"
                                                                      : "")))
    return false;
  bind.value = parseExpr();
  if (!bind.value)
    return false;
  model.stmts.push_back(std::move(stmt));
  return true;
}

ExprPtr Parser::parseExpr() {
  if (depth >= kMaxDepth) {
    diags.error(tok.loc(), "expression nested too deeply (more than " +
                               llvm::Twine(kMaxDepth) + " levels)");
    return nullptr;
  }
  ++depth;
  ExprPtr result = parseAdditive();
  --depth;
  return result;
}

/// Height of `expr` as a tree, computed without recursion. Operator and
/// postfix chains (`x + x + ...`, `x.T.T...`) build trees as deep as they are
/// long without recursing in the parser, so their height is checked too:
/// semantic analysis and destruction recurse on it.
static unsigned treeHeight(const Expr &expr) {
  unsigned height = 0;
  std::vector<std::pair<const Expr *, unsigned>> stack = {{&expr, 1}};
  while (!stack.empty()) {
    auto [node, level] = stack.back();
    stack.pop_back();
    height = std::max(height, level);
    for (const ExprPtr &operand : node->operands)
      stack.push_back({operand.get(), level + 1});
    for (const KeywordArg &kw : node->keywords)
      stack.push_back({kw.value.get(), level + 1});
  }
  return height;
}

/// Reports a chain that would make the tree deeper than kMaxDepth at `loc`.
static bool chainTooDeep(DiagnosticEngine &diags, unsigned depth,
                         unsigned height, llvm::SMLoc loc) {
  if (depth + height <= kMaxDepth)
    return false;
  diags.error(loc, "expression nested too deeply (more than " +
                       llvm::Twine(kMaxDepth) + " levels)");
  return true;
}

static ExprPtr makeBinary(char op, llvm::SMLoc loc, ExprPtr lhs, ExprPtr rhs) {
  auto expr = std::make_unique<Expr>(ExprKind::Binary, loc);
  expr->op = op;
  expr->range = {lhs->range.Start, rhs->range.End};
  expr->operands.push_back(std::move(lhs));
  expr->operands.push_back(std::move(rhs));
  return expr;
}

ExprPtr Parser::parseAdditive() {
  ExprPtr lhs = parseMultiplicative();
  unsigned height = lhs ? treeHeight(*lhs) : 0;
  while (lhs && (tok.is(TokenKind::Plus) || tok.is(TokenKind::Minus))) {
    char op = tok.text[0];
    llvm::SMLoc loc = tok.loc();
    consume();
    ExprPtr rhs = parseMultiplicative();
    if (!rhs)
      return nullptr;
    height = std::max(height, treeHeight(*rhs)) + 1;
    if (chainTooDeep(diags, depth, height, loc))
      return nullptr;
    lhs = makeBinary(op, loc, std::move(lhs), std::move(rhs));
  }
  return lhs;
}

ExprPtr Parser::parseMultiplicative() {
  ExprPtr lhs = parseUnary();
  unsigned height = lhs ? treeHeight(*lhs) : 0;
  while (lhs && (tok.is(TokenKind::Star) || tok.is(TokenKind::Slash) ||
                 tok.is(TokenKind::At))) {
    char op = tok.text[0];
    llvm::SMLoc loc = tok.loc();
    consume();
    ExprPtr rhs = parseUnary();
    if (!rhs)
      return nullptr;
    height = std::max(height, treeHeight(*rhs)) + 1;
    if (chainTooDeep(diags, depth, height, loc))
      return nullptr;
    lhs = makeBinary(op, loc, std::move(lhs), std::move(rhs));
  }
  return lhs;
}

ExprPtr Parser::parseUnary() {
  if (!tok.is(TokenKind::Minus))
    return parsePower();
  llvm::SMLoc loc = tok.loc();
  consume();
  if (depth >= kMaxDepth) {
    diags.error(loc, "expression nested too deeply (more than " +
                         llvm::Twine(kMaxDepth) + " levels)");
    return nullptr;
  }
  ++depth;
  ExprPtr operand = parseUnary();
  --depth;
  if (!operand)
    return nullptr;
  auto expr = std::make_unique<Expr>(ExprKind::Unary, loc);
  expr->op = '-';
  expr->range = {loc, operand->range.End};
  expr->operands.push_back(std::move(operand));
  return expr;
}

ExprPtr Parser::parsePower() {
  ExprPtr base = parsePostfix();
  if (!base || !tok.is(TokenKind::Caret))
    return base;
  llvm::SMLoc loc = tok.loc();
  consume();
  if (depth >= kMaxDepth) {
    diags.error(loc, "expression nested too deeply (more than " +
                         llvm::Twine(kMaxDepth) + " levels)");
    return nullptr;
  }
  ++depth;
  ExprPtr exponent = parseUnary();
  --depth;
  if (!exponent)
    return nullptr;
  return makeBinary('^', loc, std::move(base), std::move(exponent));
}

ExprPtr Parser::parsePostfix() {
  ExprPtr expr = parsePrimary();
  unsigned height = expr ? treeHeight(*expr) : 0;
  while (expr) {
    if ((tok.is(TokenKind::LBracket) || tok.is(TokenKind::Dot)) &&
        chainTooDeep(diags, depth, height + 1, tok.loc()))
      return nullptr;
    if (tok.is(TokenKind::LBracket)) {
      llvm::SMLoc loc = tok.loc();
      consume();
      ExprPtr index = parseExpr();
      if (!index || !expect(TokenKind::RBracket, "to close the index"))
        return nullptr;
      height = std::max(height, treeHeight(*index)) + 1;
      auto indexed = std::make_unique<Expr>(ExprKind::Index, loc);
      indexed->range = {expr->range.Start, prevEnd()};
      indexed->operands.push_back(std::move(expr));
      indexed->operands.push_back(std::move(index));
      expr = std::move(indexed);
    } else if (tok.is(TokenKind::Dot)) {
      llvm::SMLoc loc = tok.loc();
      consume();
      if (!tok.is(TokenKind::Identifier) || tok.text != "T") {
        errorExpected("'T' (transpose)", "after '.'");
        return nullptr;
      }
      consume();
      ++height;
      auto transposed = std::make_unique<Expr>(ExprKind::Transpose, loc);
      transposed->range = {expr->range.Start, prevEnd()};
      transposed->operands.push_back(std::move(expr));
      expr = std::move(transposed);
    } else {
      break;
    }
  }
  return expr;
}

ExprPtr Parser::parsePrimary() {
  Token start = tok;
  switch (tok.kind) {
  case TokenKind::Integer:
  case TokenKind::Float: {
    auto expr = std::make_unique<Expr>(ExprKind::Number, tok.loc());
    expr->number = tok.number;
    expr->isInteger = tok.is(TokenKind::Integer);
    expr->integer = tok.integer;
    expr->range = tok.range();
    consume();
    return expr;
  }
  case TokenKind::KwTrue:
  case TokenKind::KwFalse: {
    auto expr = std::make_unique<Expr>(ExprKind::Bool, tok.loc());
    expr->boolean = tok.is(TokenKind::KwTrue);
    expr->range = tok.range();
    consume();
    return expr;
  }
  case TokenKind::KwNone: {
    auto expr = std::make_unique<Expr>(ExprKind::None, tok.loc());
    expr->range = tok.range();
    consume();
    return expr;
  }
  case TokenKind::LParen: {
    consume();
    ExprPtr inner = parseExpr();
    if (!inner || !expect(TokenKind::RParen, "to close '('"))
      return nullptr;
    inner->range = {start.loc(), prevEnd()};
    return inner;
  }
  case TokenKind::LBracket: {
    auto list = std::make_unique<Expr>(ExprKind::List, tok.loc());
    consume();
    if (!tok.is(TokenKind::RBracket)) {
      do {
        ExprPtr elem = parseExpr();
        if (!elem)
          return nullptr;
        list->operands.push_back(std::move(elem));
      } while (consumeIf(TokenKind::Comma));
    }
    if (!expect(TokenKind::RBracket, "to close the list"))
      return nullptr;
    list->range = {start.loc(), prevEnd()};
    return list;
  }
  case TokenKind::KwRepeat: {
    auto repeat = std::make_unique<Expr>(ExprKind::Repeat, tok.loc());
    consume();
    // The count may itself start with 'repeat'; bound that recursion too.
    if (depth >= kMaxDepth) {
      diags.error(start.loc(), "expression nested too deeply (more than " +
                                   llvm::Twine(kMaxDepth) + " levels)");
      return nullptr;
    }
    ++depth;
    ExprPtr count = parsePostfix();
    --depth;
    if (!count)
      return nullptr;
    if (!tok.is(TokenKind::Identifier)) {
      errorExpected("a layer template call such as flash(x)",
                    "after 'repeat " + std::string(count->range.Start.getPointer(),
                                                   count->range.End.getPointer()) +
                        "'");
      return nullptr;
    }
    Token callee = tok;
    consume();
    if (!tok.is(TokenKind::LParen)) {
      errorExpected("'('", "after '" + callee.text.str() +
                               "' (repeat needs a template call)");
      return nullptr;
    }
    ExprPtr call = parseCallRest(callee);
    if (!call)
      return nullptr;
    repeat->range = {start.loc(), call->range.End};
    repeat->operands.push_back(std::move(count));
    repeat->operands.push_back(std::move(call));
    return repeat;
  }
  case TokenKind::Identifier: {
    consume();
    if (tok.is(TokenKind::LParen))
      return parseCallRest(start);
    auto name = std::make_unique<Expr>(ExprKind::Name, start.loc());
    name->name = start.text.str();
    name->range = start.range();
    return name;
  }
  default:
    errorExpected("an expression", "here");
    return nullptr;
  }
}

ExprPtr Parser::parseCallRest(Token callee) {
  auto call = std::make_unique<Expr>(ExprKind::Call, callee.loc());
  call->name = callee.text.str();
  consume(); // '('
  if (!tok.is(TokenKind::RParen)) {
    do {
      // `name = value` is a keyword argument; keywords follow positionals.
      if (tok.is(TokenKind::Identifier) && peek().is(TokenKind::Equal)) {
        Token name = tok;
        consume(); // name
        consume(); // '='
        ExprPtr value = parseExpr();
        if (!value)
          return nullptr;
        for (const KeywordArg &kw : call->keywords)
          if (kw.name.name == name.text) {
            diags.error(name.loc(), "keyword argument '" + name.text +
                                        "' given twice",
                        {name.range()});
            diags.note(kw.name.loc, "first given here");
            return nullptr;
          }
        call->keywords.push_back({{name.text.str(), name.loc()},
                                  std::move(value)});
        continue;
      }
      llvm::SMLoc argLoc = tok.loc();
      ExprPtr arg = parseExpr();
      if (!arg)
        return nullptr;
      if (!call->keywords.empty()) {
        diags.error(argLoc, "positional argument after keyword arguments in "
                            "the call to '" + call->name + "'",
                    {arg->range});
        return nullptr;
      }
      call->operands.push_back(std::move(arg));
    } while (consumeIf(TokenKind::Comma));
  }
  if (!expect(TokenKind::RParen,
              "to close the argument list of '" + call->name + "'"))
    return nullptr;
  call->range = {callee.loc(), prevEnd()};
  if (consumeIf(TokenKind::KwAs)) {
    Ident layer;
    if (!expectIdent(layer, "after 'as' (the layer name)"))
      return nullptr;
    call->layerName = layer;
    call->range.End = prevEnd();
  }
  return call;
}

std::optional<FileAST> parseSource(llvm::StringRef buffer,
                                   llvm::StringRef fileName,
                                   DiagnosticEngine &diags) {
  Parser parser(buffer, fileName, diags);
  return parser.parseFile();
}

} // namespace attnc::dsl
