//===- SemaTest.cpp - tests of .attn semantic analysis: models ------------===//
//
// This file tests the model-level part of semantic analysis: dims and their
// constant arithmetic, tensor declarations, bindings and outputs, names with
// "did you mean" suggestions, and the shapes inferred for expressions
// (broadcasting, matmul, indexing, transposes). Every malformed input is
// asserted with its exact line, column and message.
//
//===----------------------------------------------------------------------===//
#include "FrontendTestUtil.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

using namespace attnc::dsl;
using namespace attnc::dsl::test;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;

namespace {

/// Expects that checking `source` fails with a first error at line:column
/// whose message contains `message`.
void expectError(const std::string &source, unsigned line, unsigned column,
                 const std::string &message) {
  FrontendRun run(source);
  EXPECT_FALSE(run.check()) << "accepted:\n" << source;
  Diagnostic diag = run.firstError();
  EXPECT_EQ(diag.line, line) << diag.message;
  EXPECT_EQ(diag.column, column) << diag.message;
  EXPECT_THAT(diag.message, HasSubstr(message));
}

//===--- well-formed models -----------------------------------------------===//

TEST(SemaTest, InfersShapesOfAGatedAttentionUnit) {
  FrontendRun run(lines({
      "model gau_by_hand {",
      "  dim d = 64, e = 2 * d, s = 32",
      "  dim n : seq",
      "  dim b : batch",
      "  input x : f32[b, n, d]",
      "  param w : f32[d, 2 * e + s]",
      "  param gamma : f32[2, s]",
      "  param wo : f32[e, d]",
      "  output y : f32[b, n, d]",
      "  h = layer_norm(x)",
      "  uvz = silu(h @ w)",
      "  u, v, z = split(uvz, [e, e, s])",
      "  q = z * gamma[0]",
      "  k = z * gamma[1]",
      "  a = attention(q, k, v, score = relu(qk / n) ^ 2, mask = causal)",
      "  y = x + (u * a) @ wo",
      "  output yt = y.T",
      "}",
  }));
  ASSERT_TRUE(run.check()) << run.output();
  EXPECT_EQ(run.typeOf("h"), "f32[b, n, 64]");
  EXPECT_EQ(run.typeOf("uvz"), "f32[b, n, 288]");
  const SemaInfo *split = run.semaOf("u");
  ASSERT_NE(split, nullptr);
  EXPECT_EQ(split->kind, ValueKind::Tuple);
  ASSERT_EQ(split->tuple.size(), 3u);
  EXPECT_EQ(split->tuple[0].str(), "f32[b, n, 128]");
  EXPECT_EQ(split->tuple[2].str(), "f32[b, n, 32]");
  EXPECT_EQ(run.typeOf("q"), "f32[b, n, 32]");
  EXPECT_EQ(run.typeOf("a"), "f32[b, n, 128]");
  EXPECT_EQ(run.typeOf("y"), "f32[b, n, 64]");
  EXPECT_EQ(run.typeOf("yt"), "f32[b, 64, n]");

  const CheckedModel *model = run.model("gau_by_hand");
  ASSERT_NE(model, nullptr);
  EXPECT_THAT(describe(model->inputs), ElementsAre("x: f32[b, n, 64]"));
  EXPECT_THAT(describe(model->params),
              ElementsAre("w: f32[64, 288]", "gamma: f32[2, 32]",
                          "wo: f32[128, 64]"));
  EXPECT_THAT(describe(model->outputs),
              ElementsAre("y: f32[b, n, 64]", "yt: f32[b, 64, n]"));
  ASSERT_EQ(model->runtimeDims.size(), 2u);
  EXPECT_EQ(model->runtimeDims[0].name, "n");
  EXPECT_EQ(model->runtimeDims[0].kind, RuntimeDimKind::Seq);
  EXPECT_EQ(model->runtimeDims[1].name, "b");
  EXPECT_EQ(model->runtimeDims[1].kind, RuntimeDimKind::Batch);
  EXPECT_EQ(run.lineColumn(model->outputs[1].loc), std::make_pair(17u, 10u));
}

TEST(SemaTest, DimArithmeticIsFoldedIntoShapes) {
  FrontendRun run(lines({
      "model m {",
      "  dim d = 512, heads = 8",
      "  dim head = d / heads, twice = (head + 2) * 2 - 4, p = 2 ^ 3",
      "  param w : f16[head, twice, -(-3), p]",
      "  output y = w",
      "}",
  }));
  ASSERT_TRUE(run.check()) << run.output();
  EXPECT_THAT(describe(run.model()->params),
              ElementsAre("w: f16[64, 128, 3, 8]"));
  EXPECT_EQ(run.typeOf("y"), "f16[64, 128, 3, 8]");
}

TEST(SemaTest, ConstantSubexpressionsAreFolded) {
  FrontendRun run(lines({
      "model m {",
      "  dim d = 8",
      "  input x : f32[d]",
      "  output y = x * (2 * 3 + d)",
      "  output z = x * sqrt(16) - 2 ^ 3 / 4",
      "}",
  }));
  ASSERT_TRUE(run.check()) << run.output();
  const Expr *y = run.boundExpr("y");
  const SemaInfo *factor = y->operands[1]->sema.get();
  ASSERT_NE(factor, nullptr);
  EXPECT_EQ(factor->kind, ValueKind::Number);
  EXPECT_DOUBLE_EQ(factor->number, 14.0);
  EXPECT_TRUE(factor->isInteger);

  const Expr *z = run.boundExpr("z");
  const SemaInfo *sqrt16 = z->operands[0]->operands[1]->sema.get();
  EXPECT_EQ(sqrt16->kind, ValueKind::Number);
  EXPECT_DOUBLE_EQ(sqrt16->number, 4.0);
  const SemaInfo *quotient = z->operands[1]->sema.get();
  EXPECT_EQ(quotient->kind, ValueKind::Number);
  EXPECT_DOUBLE_EQ(quotient->number, 2.0);
  EXPECT_FALSE(quotient->isInteger);
  EXPECT_EQ(run.typeOf("z"), "f32[8]");
}

TEST(SemaTest, ElementwiseOperationsBroadcast) {
  FrontendRun run(lines({
      "model m {",
      "  dim d = 8",
      "  dim n : seq",
      "  input x : f32[n, d]",
      "  param bias : f32[d]",
      "  param a : f32[4, 1, d]",
      "  param c : f32[3, 1]",
      "  param one : f32[1, 1]",
      "  output y1 = x + bias",
      "  output y2 = a * c",
      "  output y3 = one - x",
      "  output y4 = 2 / x",
      "  output y5 = -x",
      "}",
  }));
  ASSERT_TRUE(run.check()) << run.output();
  EXPECT_EQ(run.typeOf("y1"), "f32[n, 8]");
  EXPECT_EQ(run.typeOf("y2"), "f32[4, 3, 8]");
  EXPECT_EQ(run.typeOf("y3"), "f32[n, 8]");
  EXPECT_EQ(run.typeOf("y4"), "f32[n, 8]");
  EXPECT_EQ(run.typeOf("y5"), "f32[n, 8]");
}

TEST(SemaTest, MatmulTransposeAndRowIndexShapes) {
  FrontendRun run(lines({
      "model m {",
      "  dim d = 16",
      "  dim n : seq, b : batch",
      "  input x : f32[b, n, d]",
      "  param w : f32[d, 3]",
      "  param p : f32[2, d]",
      "  output proj = x @ w",
      "  output scores = x @ x.T",
      "  output row = p[1]",
      "  output tr = transpose(p)",
      "}",
  }));
  ASSERT_TRUE(run.check()) << run.output();
  EXPECT_EQ(run.typeOf("proj"), "f32[b, n, 3]");
  EXPECT_EQ(run.typeOf("scores"), "f32[b, n, n]");
  EXPECT_EQ(run.typeOf("row"), "f32[16]");
  EXPECT_EQ(run.semaOf("row")->config.at("index").size, 1);
  EXPECT_EQ(run.typeOf("tr"), "f32[16, 2]");
}

TEST(SemaTest, BroadcastShapesReportsTheOffendingAxes) {
  Shape lhs = {Dim::named("n"), Dim::constant(8)};
  Shape rhs = {Dim::constant(4), Dim::constant(1), Dim::constant(8)};
  std::optional<Shape> shape = broadcastShapes(lhs, rhs);
  ASSERT_TRUE(shape);
  EXPECT_EQ(shapeStr(*shape), "[4, n, 8]");
  Dim badLhs, badRhs;
  EXPECT_FALSE(broadcastShapes({Dim::named("n")}, {Dim::named("m")}, &badLhs,
                               &badRhs));
  EXPECT_EQ(badLhs.str(), "n");
  EXPECT_EQ(badRhs.str(), "m");
}

TEST(SemaTest, ModelsAreCheckedIndependently) {
  FrontendRun run(lines({
      "model a {",
      "  dim d = 4",
      "  input x : f32[d]",
      "  output y = x",
      "}",
      "model b {",
      "  dim d = 8",
      "  input x : bf16[d, d]",
      "  output y = x.T",
      "}",
  }));
  ASSERT_TRUE(run.check()) << run.output();
  ASSERT_EQ(run.models->size(), 2u);
  EXPECT_THAT(describe(run.model("a")->outputs), ElementsAre("y: f32[4]"));
  EXPECT_THAT(describe(run.model("b")->outputs), ElementsAre("y: bf16[8, 8]"));
}

TEST(ClosestMatchTest, SuggestsOnlyPlausibleTypos) {
  std::vector<std::string> names = {"hidden", "x", "gamma", "chunk"};
  EXPECT_EQ(closestMatch("hiden", names), "hidden");
  EXPECT_EQ(closestMatch("chunck", names), "chunk");
  EXPECT_EQ(closestMatch("gama", names), "gamma");
  EXPECT_EQ(closestMatch("y", names), "x");
  EXPECT_EQ(closestMatch("totally_different", names), "");
  EXPECT_EQ(closestMatch("x", {"x"}), "");
}

//===--- names and declarations -------------------------------------------===//

TEST(SemaTest, UnknownNameSuggestsClosestMatch) {
  expectError(lines({
                  "model m {",
                  "  dim d = 8",
                  "  input hidden : f32[d]",
                  "  output y = layer_norm(hiden)",
                  "}",
              }),
              4, 25, "unknown name 'hiden'; did you mean 'hidden'?");
}

TEST(SemaTest, UnknownNameWithoutCloseMatchHasNoSuggestion) {
  FrontendRun run(lines({
      "model m {",
      "  dim d = 8",
      "  input x : f32[d]",
      "  output y = x + embeddings",
      "}",
  }));
  EXPECT_FALSE(run.check());
  Diagnostic diag = run.firstError();
  EXPECT_EQ(diag.line, 4u);
  EXPECT_EQ(diag.column, 18u);
  EXPECT_THAT(diag.message, HasSubstr("unknown name 'embeddings'"));
  EXPECT_THAT(diag.message, Not(HasSubstr("did you mean")));
}

TEST(SemaTest, TemplateNameUsedAsValueExplainsHowToCallIt) {
  expectError(lines({
                  "model m {",
                  "  dim d = 8",
                  "  input x : f32[4, d]",
                  "  output y = x + flash",
                  "}",
              }),
              4, 18, "'flash' is a layer template; call it as flash(x, ...)");
}

TEST(SemaTest, RedefinitionNotesThePreviousDefinition) {
  FrontendRun run(lines({
      "model m {",
      "  dim d = 8",
      "  input x : f32[d]",
      "  param x : f32[d]",
      "  output y = x",
      "}",
  }));
  EXPECT_FALSE(run.check());
  ASSERT_EQ(run.errorCount(), 1u);
  Diagnostic diag = run.firstError();
  EXPECT_EQ(diag.line, 4u);
  EXPECT_EQ(diag.column, 9u);
  EXPECT_THAT(diag.message, HasSubstr("redefinition of 'x'"));
  Diagnostic note = run.firstNote();
  EXPECT_EQ(note.line, 3u);
  EXPECT_EQ(note.column, 9u);
  EXPECT_THAT(note.message, HasSubstr("previous definition is here"));
}

TEST(SemaTest, RedefinedModelNotesThePreviousModel) {
  FrontendRun run(lines({
      "model enc { output y = 1 }",
      "model enc {",
      "  dim d = 2",
      "  input x : f32[d]",
      "  output y = x",
      "}",
  }));
  EXPECT_FALSE(run.check());
  std::vector<Diagnostic> errors = run.errors();
  ASSERT_EQ(errors.size(), 2u);
  EXPECT_EQ(errors[1].line, 2u);
  EXPECT_EQ(errors[1].column, 7u);
  EXPECT_THAT(errors[1].message, HasSubstr("redefinition of model 'enc'"));
  EXPECT_EQ(run.firstNote().line, 1u);
  EXPECT_EQ(run.firstNote().column, 7u);
}

TEST(SemaTest, UnknownElementTypeListsTheSupportedOnes) {
  expectError(lines({
                  "model m {",
                  "  dim d = 8",
                  "  input x : f64[d]",
                  "  output y = x",
                  "}",
              }),
              3, 13,
              "unknown element type 'f64'; expected f32, f16, bf16 or i32 "
              "(token ids)");
}

TEST(SemaTest, ErroneousDeclarationDoesNotCascade) {
  FrontendRun run(lines({
      "model m {",
      "  dim d = 8",
      "  input x : f64[d]",
      "  output y = layer_norm(x) + x",
      "}",
  }));
  EXPECT_FALSE(run.check());
  EXPECT_EQ(run.errorCount(), 1u) << run.output();
}

TEST(SemaTest, EveryIndependentErrorIsReported) {
  FrontendRun run(lines({
      "model m {",
      "  dim d = 8, e = d / 3",
      "  input x : f32[d]",
      "  output y = x + z",
      "  output w : f32[d]",
      "}",
  }));
  EXPECT_FALSE(run.check());
  std::vector<Diagnostic> errors = run.errors();
  ASSERT_EQ(errors.size(), 3u) << run.output();
  EXPECT_EQ(errors[0].line, 2u);
  EXPECT_EQ(errors[1].line, 4u);
  EXPECT_EQ(errors[2].line, 5u);
  EXPECT_THAT(errors[2].message, HasSubstr("never assigned"));
}

TEST(SemaTest, PrintingStopsAfterMaxErrorsButRecordingDoesNot) {
  std::string source = "model m {\n  dim d = 4\n  input x : f32[d]\n";
  for (int i = 0; i < 5; ++i)
    source += "  y" + std::to_string(i) + " = x + missing\n";
  source += "  output y = x\n}\n";
  FrontendRun run(source, /*maxErrors=*/2);
  EXPECT_FALSE(run.check());
  EXPECT_EQ(run.errors().size(), 5u);
  std::string out = run.output();
  EXPECT_THAT(out, HasSubstr("too many errors, stopping here"));
  EXPECT_THAT(out, HasSubstr("test.attn:5:"));
  EXPECT_THAT(out, Not(HasSubstr("test.attn:6:")));
}

//===--- dims ---------------------------------------------------------------===//

TEST(SemaTest, DimDivisionMustBeExact) {
  expectError(lines({
                  "model m {",
                  "  dim d = 64",
                  "  dim third = d / 3",
                  "  input x : f32[third]",
                  "  output y = x",
                  "}",
              }),
              3, 17, "'(d / 3)' does not divide: 64 is not a multiple of 3");
}

TEST(SemaTest, DimMustBeAtLeastOne) {
  expectError(lines({
                  "model m {",
                  "  dim d = 0",
                  "  input x : f32[d]",
                  "  output y = x",
                  "}",
              }),
              2, 11, "dim 'd' must be at least 1, but '0' is 0");
}

TEST(SemaTest, NegativeDimExpressionIsReportedAtItsOperator) {
  expectError(lines({
                  "model m {",
                  "  dim d = 4, e = d - 8",
                  "  output y : f32[e]",
                  "}",
              }),
              2, 20, "dim 'e' must be at least 1, but '(d - 8)' is -4");
}

TEST(SemaTest, DimMustBeAnInteger) {
  expectError(lines({
                  "model m {",
                  "  dim d = 1.5",
                  "  output y : f32[d]",
                  "}",
              }),
              2, 11, "expected an integer for dim 'd', found 1.5");
}

TEST(SemaTest, DimDivisionByZeroIsReported) {
  expectError(lines({
                  "model m {",
                  "  dim d = 4, e = d / (d - 4)",
                  "  output y : f32[e]",
                  "}",
              }),
              2, 20, "division by zero in dim 'e'");
}

TEST(SemaTest, ShapeDimensionDivisionByZeroIsReported) {
  expectError(lines({
                  "model m {",
                  "  dim d = 4",
                  "  input x : f32[d / (d - 4)]",
                  "  output y = x",
                  "}",
              }),
              3, 19, "division by zero in a dimension");
}

TEST(SemaTest, RuntimeDimInParamShapeIsRejected) {
  expectError(lines({
                  "model m {",
                  "  dim d = 8",
                  "  dim n : seq",
                  "  param w : f32[n, d]",
                  "  output y = w",
                  "}",
              }),
              4, 17,
              "runtime dim 'n' in the shape of param 'w'; params must have "
              "constant shapes");
}

TEST(SemaTest, RuntimeDimUsedAsValueIsRejected) {
  expectError(lines({
                  "model m {",
                  "  dim d = 8",
                  "  dim n : seq",
                  "  input x : f32[n, d]",
                  "  output y = x * n",
                  "}",
              }),
              5, 18,
              "runtime dim 'n' has no value at compile time; it can only "
              "appear in shapes");
}

TEST(SemaTest, RuntimeDimInDimArithmeticIsRejected) {
  expectError(lines({
                  "model m {",
                  "  dim n : seq",
                  "  dim half = n / 2",
                  "  output y : f32[half]",
                  "}",
              }),
              3, 14,
              "runtime dim 'n' cannot be used in dim 'half', which must be a "
              "constant");
}

TEST(SemaTest, OnlyOneSeqDimIsAllowed) {
  expectError(lines({
                  "model m {",
                  "  dim n : seq",
                  "  dim m : seq",
                  "  input x : f32[n, 4]",
                  "  output y = x",
                  "}",
              }),
              3, 11, "model already has a seq dim 'n'");
}

TEST(SemaTest, TensorUsedAsDimIsRejected) {
  expectError(lines({
                  "model m {",
                  "  input x : f32[4]",
                  "  param w : f32[x]",
                  "  output y = x",
                  "}",
              }),
              3, 17, "'x' is a tensor; a dimension must be a constant");
}

//===--- outputs ------------------------------------------------------------===//

TEST(SemaTest, OutputNeverAssignedIsReportedAtItsDeclaration) {
  expectError(lines({
                  "model m {",
                  "  dim d = 8",
                  "  input x : f32[d]",
                  "  output y : f32[d]",
                  "  z = x",
                  "}",
              }),
              4, 10, "output 'y' is never assigned");
}

TEST(SemaTest, OutputAssignedTwiceNotesTheFirstAssignment) {
  FrontendRun run(lines({
      "model m {",
      "  dim d = 8",
      "  input x : f32[d]",
      "  output y = x",
      "  y = x + 1",
      "}",
  }));
  EXPECT_FALSE(run.check());
  Diagnostic diag = run.firstError();
  EXPECT_EQ(diag.line, 5u);
  EXPECT_EQ(diag.column, 3u);
  EXPECT_THAT(diag.message, HasSubstr("output 'y' is assigned twice"));
  Diagnostic note = run.firstNote();
  EXPECT_EQ(note.line, 4u);
  EXPECT_EQ(note.column, 10u);
  EXPECT_THAT(note.message, HasSubstr("first assigned here"));
}

TEST(SemaTest, OutputTypeMismatchShowsBothTypes) {
  expectError(lines({
                  "model m {",
                  "  dim d = 64",
                  "  dim n : seq",
                  "  input x : f32[n, d]",
                  "  output y : f32[n, 32]",
                  "  y = x",
                  "}",
              }),
              6, 3,
              "output 'y' is declared f32[n, 32] but assigned f32[n, 64]");
}

TEST(SemaTest, OutputElementTypeMismatchIsReported) {
  expectError(lines({
                  "model m {",
                  "  input x : f32[4]",
                  "  output y : f16[4] = x",
                  "}",
              }),
              3, 10, "output 'y' is declared f16[4] but assigned f32[4]");
}

TEST(SemaTest, OutputWithRuntimeDimNotTakenFromAnInputIsRejected) {
  // Every tensor value derives its runtime dims from inputs, so an output
  // naming a runtime dim no input has can never match its assigned value.
  expectError(lines({
                  "model m {",
                  "  dim d = 8",
                  "  dim n : seq, b : batch",
                  "  input x : f32[n, d]",
                  "  output y : f32[b, n, d]",
                  "  y = x",
                  "}",
              }),
              6, 3, "output 'y' is declared f32[b, n, 8] but assigned f32[n, 8]");
}

TEST(SemaTest, OutputUsedBeforeItIsAssigned) {
  expectError(lines({
                  "model m {",
                  "  input x : f32[4]",
                  "  output y : f32[4]",
                  "  z = y + x",
                  "  y = x",
                  "}",
              }),
              4, 7, "output 'y' is used before it is assigned");
}

TEST(SemaTest, ModelWithoutOutputsIsReportedAtItsClosingBrace) {
  expectError(lines({
                  "model empty {",
                  "  dim d = 8",
                  "  input x : f32[d]",
                  "}",
              }),
              4, 1, "model 'empty' has no outputs");
}

TEST(SemaTest, OutputCannotBeBoundTogetherWithOtherNames) {
  expectError(lines({
                  "model m {",
                  "  input x : f32[8]",
                  "  output y : f32[4]",
                  "  a, y = split(x, [4, 4])",
                  "}",
              }),
              4, 6, "output 'y' must be assigned on its own");
}

//===--- bindings and expressions -------------------------------------------===//

TEST(SemaTest, ShapeMismatchInAddShowsBothShapes) {
  expectError(lines({
                  "model m {",
                  "  param a : f32[4, 8]",
                  "  param b : f32[4, 6]",
                  "  output y = a + b",
                  "}",
              }),
              4, 16,
              "shape mismatch in '+': f32[4, 8] and f32[4, 6] do not "
              "broadcast (8 vs 6)");
}

TEST(SemaTest, ShapeMismatchInMatmulShowsBothShapes) {
  expectError(lines({
                  "model m {",
                  "  dim d = 64",
                  "  dim n : seq",
                  "  input x : f32[n, d]",
                  "  param w : f32[32, 16]",
                  "  output y = x @ w",
                  "}",
              }),
              6, 16,
              "shape mismatch in '@': f32[n, 64] @ f32[32, 16] (inner dims 64 "
              "and 32 differ)");
}

TEST(SemaTest, BatchedMatmulNeedsMatchingLeadingDims) {
  expectError(lines({
                  "model m {",
                  "  param a : f32[2, 4, 8]",
                  "  param b : f32[3, 8, 4]",
                  "  output y = a @ b",
                  "}",
              }),
              4, 16, "a batched right side needs the same leading dims");
}

TEST(SemaTest, ElementTypesMustAgreeInArithmetic) {
  expectError(lines({
                  "model m {",
                  "  param a : f32[4]",
                  "  param b : f16[4]",
                  "  output y = a * b",
                  "}",
              }),
              4, 16, "element types differ in '*': f32[4] and f16[4]");
}

TEST(SemaTest, ExponentMustBeAConstant) {
  expectError(lines({
                  "model m {",
                  "  param a : f32[4]",
                  "  output y = a ^ a",
                  "}",
              }),
              3, 18, "the exponent of '^' must be a constant number");
}

TEST(SemaTest, RowIndexOutOfRangeShowsTheValidRows) {
  expectError(lines({
                  "model m {",
                  "  dim d = 8",
                  "  input x : f32[d]",
                  "  param p : f32[2, d]",
                  "  output y = x * p[2]",
                  "}",
              }),
              5, 20, "row index 2 is out of range for f32[2, 8] (rows 0..1)");
}

TEST(SemaTest, OnlyMatricesWithConstantRowsCanBeIndexed) {
  expectError(lines({
                  "model m {",
                  "  dim n : seq",
                  "  input x : f32[n, 4]",
                  "  output y = x[0]",
                  "}",
              }),
              4, 15,
              "can be indexed, but 'x' is f32[n, 4]");
}

TEST(SemaTest, TransposeNeedsRankTwo) {
  expectError(lines({
                  "model m {",
                  "  input x : f32[4]",
                  "  output y = x.T",
                  "}",
              }),
              3, 15, "transpose needs a tensor of rank 2 or more, but 'x' is "
                     "f32[4]");
}

TEST(SemaTest, BooleanOutsideAKeywordArgumentIsRejected) {
  expectError(lines({
                  "model m {",
                  "  input x : f32[4]",
                  "  output y = x * true",
                  "}",
              }),
              3, 18, "'true' is only allowed as the value of a keyword argument");
}

TEST(SemaTest, BindingAConstantSuggestsDim) {
  expectError(lines({
                  "model m {",
                  "  input x : f32[4]",
                  "  scale = 2 * 3",
                  "  output y = x",
                  "}",
              }),
              3, 13, "'scale' must be bound to a tensor expression; use 'dim' "
                     "for constants");
}

TEST(SemaTest, SeveralNamesBoundToOneTensorIsRejected) {
  expectError(lines({
                  "model m {",
                  "  input x : f32[4]",
                  "  a, b = x",
                  "  output y = a",
                  "}",
              }),
              3, 6, "2 names bound to a single tensor; only split(...) "
                    "produces several results");
}

} // namespace
