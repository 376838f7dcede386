//===- ParserTest.cpp - tests of the .attn parser -------------------------===//
//
// This file tests the recursive-descent parser: the statements and
// expression trees it builds (precedence, associativity, postfix operators,
// calls, repeat), the locations it records, and its syntax errors, each
// asserted with its exact line, column and message.
//
//===----------------------------------------------------------------------===//
#include "FrontendTestUtil.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

using namespace attnc::dsl;
using namespace attnc::dsl::test;
using ::testing::HasSubstr;

namespace {

std::string printed(const Expr &expr) {
  std::string text;
  llvm::raw_string_ostream os(text);
  printExpr(expr, os);
  return text;
}

/// Parses `model m { y = <expr> }` and returns the printed value of y.
std::string parseValue(const std::string &expr) {
  FrontendRun run("model m { y = " + expr + " }");
  if (!run.parse())
    return "<error: " + run.firstError().message + ">";
  return printed(*run.boundExpr("y"));
}

//===--- well-formed input ------------------------------------------------===//

TEST(ParserTest, ParsesDimTensorAndBindingStatements) {
  FrontendRun run("model enc {\n"
                  "  dim d = 512, b : batch\n"
                  "  dim n : seq\n"
                  "  input x : f32[b, n, d]\n"
                  "  param w : bf16[d, 2 * d]\n"
                  "  output y : f32[b, n, d]\n"
                  "  output z = x\n"
                  "  u, v = split(x @ w, [d, d])\n"
                  "  y = u\n"
                  "}\n");
  ASSERT_TRUE(run.parse()) << run.output();
  ASSERT_EQ(run.file->models.size(), 1u);
  const ModelAST &model = run.file->models[0];
  EXPECT_EQ(model.name.name, "enc");
  EXPECT_EQ(run.lineColumn(model.endLoc), std::make_pair(10u, 1u));
  ASSERT_EQ(model.stmts.size(), 9u);

  const DimDecl &d = model.stmts[0].dim;
  EXPECT_EQ(model.stmts[0].kind, Stmt::Kind::Dim);
  EXPECT_EQ(d.name.name, "d");
  ASSERT_TRUE(d.value);
  EXPECT_EQ(d.value->integer, 512);
  EXPECT_FALSE(d.runtime);
  const DimDecl &b = model.stmts[1].dim;
  EXPECT_EQ(b.runtime, RuntimeDimKind::Batch);
  EXPECT_EQ(run.lineColumn(b.kindLoc), std::make_pair(2u, 20u));
  EXPECT_EQ(model.stmts[2].dim.runtime, RuntimeDimKind::Seq);

  const TensorDecl &x = model.stmts[3].tensor;
  EXPECT_EQ(x.role, TensorRole::Input);
  ASSERT_TRUE(x.type);
  EXPECT_EQ(x.type->dtype.name, "f32");
  ASSERT_EQ(x.type->dims.size(), 3u);
  EXPECT_EQ(printed(*x.type->dims[0]), "b");
  const TensorDecl &w = model.stmts[4].tensor;
  EXPECT_EQ(w.role, TensorRole::Param);
  EXPECT_EQ(w.type->dtype.name, "bf16");
  EXPECT_EQ(printed(*w.type->dims[1]), "(2 * d)");
  EXPECT_EQ(model.stmts[5].tensor.role, TensorRole::Output);
  EXPECT_FALSE(model.stmts[5].tensor.init);
  const TensorDecl &z = model.stmts[6].tensor;
  EXPECT_FALSE(z.type);
  ASSERT_TRUE(z.init);
  EXPECT_EQ(printed(*z.init), "x");

  const Binding &uv = model.stmts[7].bind;
  ASSERT_EQ(uv.names.size(), 2u);
  EXPECT_EQ(uv.names[1].name, "v");
  EXPECT_EQ(run.lineColumn(uv.names[1].loc), std::make_pair(8u, 6u));
  EXPECT_EQ(printed(*uv.value), "split((x @ w), [d, d])");
}

TEST(ParserTest, MultiplicationBindsTighterThanAddition) {
  EXPECT_EQ(parseValue("a + b * c - d / e"), "((a + (b * c)) - (d / e))");
  EXPECT_EQ(parseValue("a @ b + c"), "((a @ b) + c)");
  EXPECT_EQ(parseValue("a * b @ c"), "((a * b) @ c)");
  EXPECT_EQ(parseValue("(a + b) * c"), "((a + b) * c)");
}

TEST(ParserTest, PowerIsRightAssociativeAndBindsTighterThanUnaryMinus) {
  EXPECT_EQ(parseValue("a ^ b ^ c"), "(a ^ (b ^ c))");
  EXPECT_EQ(parseValue("-a ^ 2"), "(-(a ^ 2))");
  EXPECT_EQ(parseValue("a ^ -2"), "(a ^ (-2))");
  EXPECT_EQ(parseValue("relu(qk / n + b) ^ 2"),
            "(relu(((qk / n) + b)) ^ 2)");
}

TEST(ParserTest, PostfixIndexAndTransposeChain) {
  EXPECT_EQ(parseValue("p[0].T"), "p[0].T");
  EXPECT_EQ(parseValue("x.T.T @ w"), "(x.T.T @ w)");
  FrontendRun run("model m { y = gamma[1] }");
  ASSERT_TRUE(run.parse());
  const Expr *y = run.boundExpr("y");
  ASSERT_EQ(y->kind, ExprKind::Index);
  EXPECT_EQ(y->operands[0]->name, "gamma");
  EXPECT_EQ(y->operands[1]->integer, 1);
  EXPECT_EQ(run.lineColumn(y->loc), std::make_pair(1u, 20u));
}

TEST(ParserTest, CallKeepsPositionalKeywordArgumentsAndLayerName) {
  FrontendRun run("model m {\n"
                  "  y = flash(x, chunk = 64, causal = true) as blk\n"
                  "}");
  ASSERT_TRUE(run.parse()) << run.output();
  const Expr *call = run.boundExpr("y");
  ASSERT_EQ(call->kind, ExprKind::Call);
  EXPECT_EQ(call->name, "flash");
  ASSERT_EQ(call->operands.size(), 1u);
  ASSERT_EQ(call->keywords.size(), 2u);
  EXPECT_EQ(call->keywords[0].name.name, "chunk");
  EXPECT_EQ(call->keywords[0].value->integer, 64);
  EXPECT_EQ(call->keywords[1].value->kind, ExprKind::Bool);
  EXPECT_TRUE(call->keywords[1].value->boolean);
  ASSERT_TRUE(call->layerName);
  EXPECT_EQ(call->layerName->name, "blk");
  EXPECT_EQ(run.lineColumn(call->layerName->loc), std::make_pair(2u, 46u));
  EXPECT_EQ(run.lineColumn(call->range.End), std::make_pair(2u, 49u));
  EXPECT_NE(call->findKeyword("causal"), nullptr);
  EXPECT_EQ(call->findKeyword("rope"), nullptr);
}

TEST(ParserTest, RepeatHoldsCountAndTemplateCall) {
  FrontendRun run("model m { y = repeat 8 flash(x) as blk }");
  ASSERT_TRUE(run.parse()) << run.output();
  const Expr *r = run.boundExpr("y");
  ASSERT_EQ(r->kind, ExprKind::Repeat);
  ASSERT_EQ(r->operands.size(), 2u);
  EXPECT_EQ(r->operands[0]->integer, 8);
  EXPECT_EQ(r->operands[1]->name, "flash");
  EXPECT_EQ(r->operands[1]->layerName->name, "blk");
  EXPECT_EQ(printed(*r), "repeat 8 flash(x) as blk");
  EXPECT_EQ(parseValue("repeat (2 * L) gau(x)"), "repeat (2 * L) gau(x)");
}

TEST(ParserTest, RepeatCountWithOperatorNeedsParentheses) {
  FrontendRun run("model m {\n  y = repeat 2 * L flash(x)\n}");
  EXPECT_FALSE(run.parse());
  Diagnostic diag = run.firstError();
  EXPECT_EQ(diag.line, 2u);
  EXPECT_EQ(diag.column, 16u);
  EXPECT_THAT(diag.message, HasSubstr("expected a layer template call such as "
                                      "flash(x) after 'repeat 2', found '*'"));
}

TEST(ParserTest, BinaryNodeLocationIsOperatorAndRangeCoversOperands) {
  FrontendRun run("model m {\n  y = (a + b) @ w\n}");
  ASSERT_TRUE(run.parse());
  const Expr *y = run.boundExpr("y");
  ASSERT_EQ(y->kind, ExprKind::Binary);
  EXPECT_EQ(y->op, '@');
  EXPECT_EQ(run.lineColumn(y->loc), std::make_pair(2u, 15u));
  EXPECT_EQ(run.lineColumn(y->range.Start), std::make_pair(2u, 7u));
  EXPECT_EQ(run.lineColumn(y->range.End), std::make_pair(2u, 18u));
  EXPECT_EQ(run.lineColumn(y->operands[0]->loc), std::make_pair(2u, 10u));
}

TEST(ParserTest, ParsesSeveralModelsInOneFile) {
  FrontendRun run("model a { output y = x }\n# second\nmodel b { output z = x }");
  ASSERT_TRUE(run.parse());
  ASSERT_EQ(run.file->models.size(), 2u);
  EXPECT_EQ(run.file->models[1].name.name, "b");
  EXPECT_EQ(run.lineColumn(run.file->models[1].name.loc),
            std::make_pair(3u, 7u));
  EXPECT_EQ(run.file->fileName, kTestFileName);
}

TEST(ParserTest, ListsNoneAndScoreExpressionsParse) {
  EXPECT_EQ(parseValue("attention(q, k, v, score = relu(qk) ^ 2, "
                       "mask = window(128), normalize = none)"),
            "attention(q, k, v, score = (relu(qk) ^ 2), mask = window(128), "
            "normalize = none)");
  EXPECT_EQ(parseValue("split(x, [])"), "split(x, [])");
}

TEST(ParserTest, PrintsDiagnosticWithFileLineColumnAndCaret) {
  FrontendRun run("model m {\n  input x f32[4]\n}");
  EXPECT_FALSE(run.parse());
  std::string out = run.output();
  EXPECT_THAT(out, HasSubstr("test.attn:2:11: error: expected ':'"));
  EXPECT_THAT(out, HasSubstr("  input x f32[4]\n"));
  EXPECT_THAT(out, HasSubstr("          ^~~"));
}

//===--- syntax errors ----------------------------------------------------===//

TEST(ParserTest, MissingClosingBraceNotesWhereTheModelStarts) {
  FrontendRun run("model attn {\n"
                  "  dim d = 4\n"
                  "  output y = x\n");
  EXPECT_FALSE(run.parse());
  ASSERT_EQ(run.diagnostics().size(), 2u);
  Diagnostic error = run.firstError();
  EXPECT_EQ(error.line, 4u);
  EXPECT_EQ(error.column, 1u);
  EXPECT_THAT(error.message,
              HasSubstr("expected '}' to close model 'attn', found end of file"));
  Diagnostic note = run.firstNote();
  EXPECT_EQ(note.line, 1u);
  EXPECT_EQ(note.column, 7u);
  EXPECT_THAT(note.message, HasSubstr("the model starts here"));
}

TEST(ParserTest, KeywordCannotBeUsedAsTensorName) {
  FrontendRun run("model m {\n  input model : f32[4]\n}");
  EXPECT_FALSE(run.parse());
  Diagnostic diag = run.firstError();
  EXPECT_EQ(diag.line, 2u);
  EXPECT_EQ(diag.column, 9u);
  EXPECT_THAT(diag.message, HasSubstr("'model' is a keyword and cannot be used "
                                      "as a name after 'input'"));
}

TEST(ParserTest, KeywordCannotBeUsedAsDimOrLayerName) {
  FrontendRun dim("model m {\n  dim d = 4, repeat = 2\n}");
  EXPECT_FALSE(dim.parse());
  EXPECT_EQ(dim.firstError().line, 2u);
  EXPECT_EQ(dim.firstError().column, 14u);
  EXPECT_THAT(dim.firstError().message,
              HasSubstr("'repeat' is a keyword and cannot be used as a name in "
                        "a dim declaration"));

  FrontendRun layer("model m {\n  y = flash(x) as none\n}");
  EXPECT_FALSE(layer.parse());
  EXPECT_EQ(layer.firstError().line, 2u);
  EXPECT_EQ(layer.firstError().column, 19u);
  EXPECT_THAT(layer.firstError().message,
              HasSubstr("'none' is a keyword and cannot be used as a name after "
                        "'as'"));
}

TEST(ParserTest, InputWithoutColonAsksForAType) {
  FrontendRun run("model m {\n  dim d = 4\n  input x f32[d]\n}");
  EXPECT_FALSE(run.parse());
  Diagnostic diag = run.firstError();
  EXPECT_EQ(diag.line, 3u);
  EXPECT_EQ(diag.column, 11u);
  EXPECT_THAT(diag.message, HasSubstr("expected ':' and a type such as f32[n, "
                                      "d] after input 'x', found 'f32'"));
}

TEST(ParserTest, OutputNeedsATypeOrAValue) {
  FrontendRun run("model m {\n  output y\n  y = x\n}");
  EXPECT_FALSE(run.parse());
  Diagnostic diag = run.firstError();
  EXPECT_EQ(diag.line, 3u);
  EXPECT_EQ(diag.column, 3u);
  EXPECT_THAT(diag.message, HasSubstr("expected ':' and a type, or '= "
                                      "<expression>' after output 'y', found 'y'"));
}

TEST(ParserTest, RuntimeDimKindMustBeSeqOrBatch) {
  FrontendRun run("model m {\n  dim n : sequence\n}");
  EXPECT_FALSE(run.parse());
  Diagnostic diag = run.firstError();
  EXPECT_EQ(diag.line, 2u);
  EXPECT_EQ(diag.column, 11u);
  EXPECT_THAT(diag.message, HasSubstr("expected 'seq' or 'batch' after ':' in a "
                                      "runtime dim, found 'sequence'"));
}

TEST(ParserTest, PositionalArgumentAfterKeywordIsRejected) {
  FrontendRun run("model m {\n"
                  "  y = flash(x, chunk = 64, causal)\n"
                  "}");
  EXPECT_FALSE(run.parse());
  Diagnostic diag = run.firstError();
  EXPECT_EQ(diag.line, 2u);
  EXPECT_EQ(diag.column, 28u);
  EXPECT_THAT(diag.message, HasSubstr("positional argument after keyword "
                                      "arguments in the call to 'flash'"));
}

TEST(ParserTest, KeywordGivenTwiceNotesTheFirstOne) {
  FrontendRun run("model m {\n"
                  "  y = flash(x, chunk = 64,\n"
                  "            chunk = 32)\n"
                  "}");
  EXPECT_FALSE(run.parse());
  Diagnostic diag = run.firstError();
  EXPECT_EQ(diag.line, 3u);
  EXPECT_EQ(diag.column, 13u);
  EXPECT_THAT(diag.message, HasSubstr("keyword argument 'chunk' given twice"));
  Diagnostic note = run.firstNote();
  EXPECT_EQ(note.line, 2u);
  EXPECT_EQ(note.column, 16u);
  EXPECT_THAT(note.message, HasSubstr("first given here"));
}

TEST(ParserTest, UnclosedArgumentListNamesTheCallee) {
  FrontendRun run("model m {\n  y = flash(x, chunk = 64\n}");
  EXPECT_FALSE(run.parse());
  Diagnostic diag = run.firstError();
  EXPECT_EQ(diag.line, 3u);
  EXPECT_EQ(diag.column, 1u);
  EXPECT_THAT(diag.message, HasSubstr("expected ')' to close the argument list "
                                      "of 'flash', found '}'"));
}

TEST(ParserTest, DotMustBeFollowedByT) {
  FrontendRun run("model m {\n  y = x.U\n}");
  EXPECT_FALSE(run.parse());
  Diagnostic diag = run.firstError();
  EXPECT_EQ(diag.line, 2u);
  EXPECT_EQ(diag.column, 9u);
  EXPECT_THAT(diag.message,
              HasSubstr("expected 'T' (transpose) after '.', found 'U'"));
}

TEST(ParserTest, RepeatNeedsATemplateCall) {
  FrontendRun run("model m {\n  y = repeat 4 x\n}");
  EXPECT_FALSE(run.parse());
  Diagnostic diag = run.firstError();
  EXPECT_EQ(diag.line, 3u);
  EXPECT_EQ(diag.column, 1u);
  EXPECT_THAT(diag.message, HasSubstr("expected '(' after 'x' (repeat needs a "
                                      "template call)"));
}

TEST(ParserTest, StatementMustStartWithKeywordOrName) {
  FrontendRun run("model m {\n  dim d = 4\n  42 = d\n}");
  EXPECT_FALSE(run.parse());
  Diagnostic diag = run.firstError();
  EXPECT_EQ(diag.line, 3u);
  EXPECT_EQ(diag.column, 3u);
  EXPECT_THAT(diag.message, HasSubstr("expected a statement"));
  EXPECT_THAT(diag.message, HasSubstr("found '42'"));
}

TEST(ParserTest, TopLevelMustBeAModel) {
  FrontendRun run("model a { output y = x }\nlayer b { }");
  EXPECT_FALSE(run.parse());
  Diagnostic diag = run.firstError();
  EXPECT_EQ(diag.line, 2u);
  EXPECT_EQ(diag.column, 1u);
  EXPECT_THAT(diag.message,
              HasSubstr("expected 'model' at the top level, found 'layer'"));
}

TEST(ParserTest, EmptyFileIsReported) {
  FrontendRun run("");
  EXPECT_FALSE(run.parse());
  ASSERT_EQ(run.errorCount(), 1u);
  Diagnostic diag = run.firstError();
  EXPECT_EQ(diag.line, 1u);
  EXPECT_EQ(diag.column, 1u);
  EXPECT_THAT(diag.message, HasSubstr("the file is empty"));
}

TEST(ParserTest, FileWithOnlyCommentsIsEmpty) {
  FrontendRun run("# just a comment\n\n");
  EXPECT_FALSE(run.parse());
  Diagnostic diag = run.firstError();
  EXPECT_EQ(diag.line, 3u);
  EXPECT_EQ(diag.column, 1u);
  EXPECT_THAT(diag.message, HasSubstr("the file is empty"));
}

TEST(ParserTest, LexicalErrorIsReportedOnlyOnce) {
  FrontendRun run("model m {\n  dim d = 4 ?\n}");
  EXPECT_FALSE(run.parse());
  ASSERT_EQ(run.errorCount(), 1u);
  Diagnostic diag = run.firstError();
  EXPECT_EQ(diag.line, 2u);
  EXPECT_EQ(diag.column, 13u);
  EXPECT_THAT(diag.message, HasSubstr("unexpected character '?'"));
}

TEST(ParserTest, DeeplyNestedParenthesesAreRejectedWithoutCrashing) {
  std::string expr = std::string(300, '(') + "x" + std::string(300, ')');
  FrontendRun run("model m {\n  y = " + expr + "\n}");
  EXPECT_FALSE(run.parse());
  ASSERT_EQ(run.errorCount(), 1u);
  Diagnostic diag = run.firstError();
  EXPECT_EQ(diag.line, 2u);
  // The 201st '(' starts the expression that is one level too deep.
  EXPECT_EQ(diag.column, 7u + 200u);
  EXPECT_THAT(diag.message,
              HasSubstr("expression nested too deeply (more than 200 levels)"));
}

TEST(ParserTest, DeeplyNestedUnaryMinusAndCallsAreRejected) {
  for (const std::string &expr :
       {std::string(100000, '-') + "x", [] {
          std::string s;
          for (int i = 0; i < 5000; ++i)
            s += "relu(";
          return s + "x" + std::string(5000, ')');
        }(),
        [] {
          std::string s = "x";
          for (int i = 0; i < 5000; ++i)
            s += "^x";
          return s;
        }()}) {
    FrontendRun run("model m {\n  y = " + expr + "\n}");
    EXPECT_FALSE(run.parse());
    EXPECT_EQ(run.errorCount(), 1u);
    EXPECT_EQ(run.firstError().line, 2u);
    EXPECT_THAT(run.firstError().message, HasSubstr("nested too deeply"));
  }
}

TEST(ParserTest, DeeplyNestedRepeatIsRejectedWithoutCrashing) {
  std::string expr;
  for (int i = 0; i < 100000; ++i)
    expr += "repeat ";
  FrontendRun run("model m {\n  y = " + expr + "2 flash(x)\n}");
  EXPECT_FALSE(run.parse());
  EXPECT_EQ(run.errorCount(), 1u);
  EXPECT_EQ(run.firstError().line, 2u);
  EXPECT_THAT(run.firstError().message, HasSubstr("nested too deeply"));
}

TEST(ParserTest, LongOperatorChainIsRejectedInsteadOfOverflowingTheStack) {
  // `x + x + ...` builds a left-deep tree as deep as the chain is long;
  // Sema and the AST's destructor recurse on it.
  std::string expr = "x";
  for (int i = 0; i < 200000; ++i)
    expr += " + x";
  FrontendRun run("model m {\n  input x : f32[4]\n  output y = " + expr +
                  "\n}");
  EXPECT_FALSE(run.check());
  ASSERT_EQ(run.errorCount(), 1u);
  Diagnostic diag = run.firstError();
  EXPECT_EQ(diag.line, 3u);
  // The 199th '+' would make the tree deeper than 200 levels.
  EXPECT_EQ(diag.column, 16u + 4u * 198u);
  EXPECT_THAT(diag.message,
              HasSubstr("expression nested too deeply (more than 200 levels)"));
}

TEST(ParserTest, LongPostfixChainIsRejectedInsteadOfOverflowingTheStack) {
  std::string expr = "x";
  for (int i = 0; i < 200000; ++i)
    expr += ".T";
  FrontendRun run("model m {\n  input x : f32[4, 4]\n  output y = " + expr +
                  "\n}");
  EXPECT_FALSE(run.check());
  ASSERT_EQ(run.errorCount(), 1u);
  Diagnostic diag = run.firstError();
  EXPECT_EQ(diag.line, 3u);
  EXPECT_EQ(diag.column, 15u + 2u * 198u);
  EXPECT_THAT(diag.message, HasSubstr("expression nested too deeply"));
}

TEST(ParserTest, ModeratelyLongChainsAreAccepted) {
  std::string sum = "x", transposes = "x";
  for (int i = 0; i < 150; ++i) {
    sum += " * 2 + x";
    transposes += ".T";
  }
  FrontendRun run("model m {\n  input x : f32[4, 4]\n  output y = " + sum +
                  "\n  output z = " + transposes + "\n}");
  EXPECT_TRUE(run.check()) << run.output();
  EXPECT_EQ(run.typeOf("y"), "f32[4, 4]");
}

} // namespace
