//===- SemaCallsTest.cpp - tests of .attn semantic analysis: calls --------===//
//
// This file tests the checking of calls: keyword arguments against their
// tables (unknown keywords, enum values, masks), the primitives (split,
// norms, rope, attention and its score expressions, linear attention), and
// the template-specific rules (heads, even s with rope, layer names,
// repeat). Every malformed input is asserted with its exact line, column and
// message.
//
//===----------------------------------------------------------------------===//
#include "FrontendTestUtil.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

using namespace attnc::dsl;
using namespace attnc::dsl::test;
using ::testing::HasSubstr;
using ::testing::Not;

namespace {

/// A model with d = 64, a seq dim n and an input x : f32[n, d], followed by
/// `body` (one statement per element, starting on line 5) and `}`.
std::string withInput(std::initializer_list<std::string> body) {
  std::string out = lines({
      "model m {",
      "  dim d = 64",
      "  dim n : seq",
      "  input x : f32[n, d]",
  });
  for (const std::string &line : body)
    out += line + "\n";
  return out + "}\n";
}

void expectError(const std::string &source, unsigned line, unsigned column,
                 const std::string &message) {
  FrontendRun run(source);
  EXPECT_FALSE(run.check()) << "accepted:\n" << source;
  Diagnostic diag = run.firstError();
  EXPECT_EQ(diag.line, line) << diag.message;
  EXPECT_EQ(diag.column, column) << diag.message;
  EXPECT_THAT(diag.message, HasSubstr(message));
}

//===--- well-formed calls ------------------------------------------------===//

TEST(SemaCallsTest, AttentionResolvesMaskNormalizeAndHeads) {
  FrontendRun run(withInput({
      "  output y = attention(x, x, x, mask = window(16), normalize = softmax,",
      "                       heads = 4)",
      "  output z = attention(x, x, x)",
  }));
  ASSERT_TRUE(run.check()) << run.output();
  const SemaInfo *y = run.semaOf("y");
  EXPECT_EQ(y->type.str(), "f32[n, 64]");
  EXPECT_EQ(y->config.at("mask").enumValue, "window");
  EXPECT_EQ(y->config.at("mask").maskSize, 16);
  EXPECT_EQ(y->config.at("normalize").enumValue, "softmax");
  EXPECT_EQ(y->config.at("heads").size, 4);
  EXPECT_EQ(y->config.count("score"), 0u);
  const SemaInfo *z = run.semaOf("z");
  EXPECT_EQ(z->config.at("mask").enumValue, "none");
  EXPECT_EQ(z->config.at("normalize").enumValue, "none");
  EXPECT_EQ(z->config.at("heads").size, 1);
}

TEST(SemaCallsTest, ScoreExpressionsAreScalarsOfQkIJAndN) {
  FrontendRun run(withInput({
      "  param rel : f32[255]",
      "  param buckets : f32[32]",
      "  output y = attention(x, x, x, mask = causal,",
      "      score = relu(qk / n + rel_pos_bias(rel)) ^ 2 + t5_bias(buckets)",
      "              - (i - j) * 0.5)",
  }));
  ASSERT_TRUE(run.check()) << run.output();
  const Expr *call = run.boundExpr("y");
  const Expr *score = call->findKeyword("score")->value.get();
  ASSERT_NE(score->sema, nullptr);
  EXPECT_EQ(score->sema->kind, ValueKind::ScoreScalar);
  // score = (relu(...) ^ 2 + t5_bias(buckets)) - ...
  const Expr *t5 = score->operands[0]->operands[1].get();
  ASSERT_EQ(t5->name, "t5_bias");
  EXPECT_EQ(t5->sema->config.at("num_buckets").size, 32);
  EXPECT_TRUE(t5->sema->config.at("causal").boolean);
  EXPECT_EQ(t5->sema->config.at("max_distance").size, 128);
  const Expr *relu = score->operands[0]->operands[0]->operands[0].get();
  const Expr *rel = relu->operands[0]->operands[1].get();
  ASSERT_EQ(rel->name, "rel_pos_bias");
  EXPECT_EQ(rel->sema->config.at("max_len").size, 128);
  // `n` in a score names the sequence length.
  const Expr *n = relu->operands[0]->operands[0]->operands[1].get();
  EXPECT_EQ(n->sema->scoreVar, "n");
}

TEST(SemaCallsTest, LinearAttentionIsAPrimitiveWithThreeArguments) {
  FrontendRun run(withInput({
      "  output p = linear_attention(x, x, x, feature = relu, causal = true)",
      "  output t = linear_attention(x, heads = 4)",
  }));
  ASSERT_TRUE(run.check()) << run.output();
  const SemaInfo *p = run.semaOf("p");
  EXPECT_EQ(p->type.str(), "f32[n, 64]");
  EXPECT_EQ(p->config.at("feature").enumValue, "relu");
  EXPECT_TRUE(p->config.at("causal").boolean);
  EXPECT_TRUE(p->config.at("normalize").boolean);
  EXPECT_TRUE(p->layerNames.empty());
  const SemaInfo *t = run.semaOf("t");
  EXPECT_EQ(t->config.at("heads").size, 4);
  EXPECT_EQ(t->config.at("feature").enumValue, "elu1");
  EXPECT_THAT(t->layerNames, ::testing::ElementsAre("linear_attention_0"));
}

TEST(SemaCallsTest, NormsRopeAndScaleOffsetKeepTheInputShape) {
  FrontendRun run(withInput({
      "  param g : f32[d]",
      "  param bias : f32[d]",
      "  param alpha : f32[1]",
      "  output a = layer_norm(x, g, bias, eps = 1e-6)",
      "  output b = rms_norm(x, g)",
      "  output c = scale_norm(x, alpha)",
      "  output r = rope(x, dims = 32, mode = interleaved)",
      "  output s = scale_offset(x, g, bias)",
      "  output full = rope(x)",
  }));
  ASSERT_TRUE(run.check()) << run.output();
  for (const char *name : {"a", "b", "c", "r", "s", "full"})
    EXPECT_EQ(run.typeOf(name), "f32[n, 64]") << name;
  EXPECT_DOUBLE_EQ(run.semaOf("a")->config.at("eps").number, 1e-6);
  EXPECT_DOUBLE_EQ(run.semaOf("b")->config.at("eps").number, 1e-5);
  EXPECT_EQ(run.semaOf("r")->config.at("dims").size, 32);
  EXPECT_EQ(run.semaOf("r")->config.at("mode").enumValue, "interleaved");
  EXPECT_DOUBLE_EQ(run.semaOf("r")->config.at("base").number, 10000.0);
  EXPECT_EQ(run.semaOf("full")->config.at("dims").size, 64);
}

//===--- keyword arguments ------------------------------------------------===//

TEST(SemaCallsTest, UnknownKeywordSuggestsAndListsAllowedOnes) {
  expectError(withInput({"  output y = flash(x, chunck = 64)"}), 5, 23,
              "unknown keyword argument 'chunck' for 'flash'; did you mean "
              "'chunk'? (allowed: e, s, chunk, causal, norm, rel_pos, rope, "
              "eps, lin_scale, num_buckets, max_distance, rope_dims, "
              "rope_mode, shift_tokens, norm_clamp)");
}

// The dialect's verifiers need eps and base > 0; the checker said yes to
// 0 and the import then failed with an internal error (found by fuzzing,
// issue #9).
TEST(SemaCallsTest, NonPositiveEpsAndBaseAreRejected) {
  expectError(withInput({"  output y = layer_norm(x, eps = 0)"}), 5, 34,
              "'eps' of 'layer_norm' must be positive, but is 0");
  expectError(withInput({"  output y = rms_norm(x, eps = 0.0)"}), 5, 32,
              "'eps' of 'rms_norm' must be positive, but is 0");
  expectError(withInput({"  output y = rope(x, base = 0)"}), 5, 29,
              "'base' of 'rope' must be positive, but is 0");
  expectError(withInput({"  output y = flash(x, eps = 0)"}), 5, 29,
              "'eps' of 'flash' must be positive, but is 0");
  FrontendRun negative(withInput({"  output y = rms_norm(x, eps = -1e-5)"}));
  EXPECT_FALSE(negative.check());
  EXPECT_THAT(negative.firstError().message,
              HasSubstr("'eps' of 'rms_norm' must be positive, but is -1e-05"));
}

TEST(SemaCallsTest, UnknownKeywordWithoutCloseMatchListsAllowedOnes) {
  FrontendRun run(withInput({"  output y = mhsa(x, dropout = 0.1)"}));
  EXPECT_FALSE(run.check());
  Diagnostic diag = run.firstError();
  EXPECT_EQ(diag.line, 5u);
  EXPECT_EQ(diag.column, 22u);
  EXPECT_THAT(diag.message,
              HasSubstr("unknown keyword argument 'dropout' for 'mhsa' "
                        "(allowed: heads, causal, norm, eps)"));
  EXPECT_THAT(diag.message, Not(HasSubstr("did you mean")));
}

TEST(SemaCallsTest, KeywordOnPrimitiveWithoutKeywordsIsRejected) {
  expectError(withInput({"  a, b = split(x, [32, 32], axis = 1)",
                         "  output y = a"}),
              5, 29, "'split' takes no keyword arguments, but 'axis' was given");
}

TEST(SemaCallsTest, InvalidEnumValueListsTheChoices) {
  expectError(withInput({"  output y = gau(x, norm = batch_norm)"}), 5, 28,
              "invalid value 'batch_norm' for 'norm' of 'gau'; expected one "
              "of layer_norm, scale_norm, rms_norm");
}

TEST(SemaCallsTest, BoolKeywordNeedsTrueOrFalse) {
  expectError(withInput({"  output y = flash(x, causal = 1)"}), 5, 32,
              "expected true or false for 'causal' of 'flash', found '1'");
}

TEST(SemaCallsTest, SizeKeywordMustBePositiveInteger) {
  expectError(withInput({"  output y = flash(x, chunk = d / 2 - 32)"}), 5,
              37, "'chunk' of 'flash' must be at least 1, but '((d / 2) - 32)' "
                  "is 0");
}

TEST(SemaCallsTest, InvalidMaskListsTheForms) {
  expectError(withInput({"  output y = attention(x, x, x, mask = triangle)"}),
              5, 40,
              "invalid mask 'triangle'; expected none, causal, window(w)");
}

TEST(SemaCallsTest, MaskWindowMustBePositive) {
  expectError(withInput({"  output y = attention(x, x, x, mask = window(0))"}),
              5, 47, "must be at least 1, but '0' is 0");
}

TEST(SemaCallsTest, MaskNeedsAsManyQueriesAsKeys) {
  expectError(withInput({"  param k : f32[16, d]",
                         "  output y = attention(x, k, k, mask = causal)"}),
              6, 40,
              "mask = causal needs as many queries as keys, but q is f32[n, "
              "64] and k is f32[16, 64]");
}

//===--- templates --------------------------------------------------------===//

TEST(SemaCallsTest, TemplateHeadsMustDivideD) {
  expectError(withInput({"  output y = mhsa(x, heads = 5)"}), 5, 30,
              "heads = 5 does not divide d = 64 in 'mhsa'");
}

TEST(SemaCallsTest, AttentionHeadsMustDivideTheWidth) {
  expectError(withInput({"  input v : f32[n, 48]",
                         "  output y = attention(x, x, v, heads = 32)"}),
              6, 14, "heads = 32 does not divide the width 48 of f32[n, 48]");
}

TEST(SemaCallsTest, RopeInTemplateNeedsEvenS) {
  expectError(withInput({"  output y = gau(x, s = 63)"}), 5, 25,
              "s = 63 must be even when rope = true");
}

//===--- token ids --------------------------------------------------------===//

TEST(SemaCallsTest, EmbeddingGathersTableRowsAtTokenIds) {
  FrontendRun run(withInput({"  input ids : i32[n]",
                             "  param tok : f32[50, d]",
                             "  output y = embedding(ids, tok)"}));
  ASSERT_TRUE(run.check()) << run.output();
  EXPECT_EQ(run.semaOf("y")->type.str(), "f32[n, 64]");
}

TEST(SemaCallsTest, SinusoidalNeedsAnEvenConstantWidth) {
  expectError(withInput({"  input z : f32[n, 7]",
                         "  output y = sinusoidal(z)"}),
              6, 25,
              "sinusoidal needs a tensor [..., n, d] with a constant, even "
              "d, but its input is f32[n, 7]");
}

TEST(SemaCallsTest, TokenIdsAreForInputsOnly) {
  expectError(withInput({"  param p : i32[4]"}), 5, 13,
              "i32 is the type of token ids, allowed for inputs only, but "
              "param 'p' is not an input");
}

TEST(SemaCallsTest, TokenIdsAreReadOnlyByEmbedding) {
  expectError(withInput({"  input ids : i32[n]", "  output y = ids * 2"}), 6,
              14,
              "'ids' holds token ids (i32); they can only be read by "
              "embedding(ids, table)");
}

TEST(SemaCallsTest, EmbeddingNeedsTokenIds) {
  expectError(withInput({"  param tok : f32[50, d]",
                         "  output y = embedding(x, tok)"}),
              6, 24,
              "the first argument of embedding must be token ids (an i32 "
              "input), but 'x' is f32[n, 64]");
}

TEST(SemaCallsTest, EmbeddingTableHasConstantSizes) {
  expectError(withInput({"  input ids : i32[n]",
                         "  output y = embedding(ids, x)"}),
              6, 29,
              "the table of embedding must be f32[vocab, d] with constant "
              "sizes, but 'x' is f32[n, 64]");
}

TEST(SemaCallsTest, RopeDimsMayLeaveAnOddSUnrotated) {
  FrontendRun run(withInput({"  output y = gau(x, s = 63, rope_dims = 32)"}));
  EXPECT_TRUE(run.check()) << run.output();
}

TEST(SemaCallsTest, RopeDimsMustBeEvenAndAtMostS) {
  expectError(withInput({"  output y = gau(x, s = 32, rope_dims = 48)"}), 5,
              41,
              "rope_dims = 48 must be even and at most s = 32 (RoPE rotates "
              "pairs of features)");
}

TEST(SemaCallsTest, RopeDimsNeedRope) {
  expectError(withInput({"  output y = flash(x, rope = false, "
                         "rope_dims = 16)"}),
              5, 49, "rope_dims needs rope = true");
}

TEST(SemaCallsTest, BucketsNeedTheT5Bias) {
  expectError(withInput({"  output y = flash(x, num_buckets = 16)"}), 5, 37,
              "num_buckets needs rel_pos = t5 (it sizes the T5 bias)");
}

TEST(SemaCallsTest, T5BucketsMustBeEven) {
  expectError(withInput({"  output y = flash(x, rel_pos = t5, "
                         "num_buckets = 15)"}),
              5, 51,
              "num_buckets = 15 must be even, and at least 4 when not "
              "causal (the non-causal T5 bias gives half of them to each "
              "direction)");
}

TEST(SemaCallsTest, NonCausalT5NeedsFourBuckets) {
  expectError(withInput({"  output y = flash(x, rel_pos = t5, "
                         "num_buckets = 2)"}),
              5, 51,
              "num_buckets = 2 must be even, and at least 4 when not causal");
}

TEST(SemaCallsTest, T5MaxDistanceMustPassTheExactBuckets) {
  expectError(withInput({"  output y = flash(x, causal = true, rel_pos = t5, "
                         "max_distance = 16)"}),
              5, 67,
              "max_distance = 16 must exceed the 16 exact buckets of the T5 "
              "bias");
}

TEST(SemaCallsTest, NormClampNeedsScaleNorm) {
  expectError(withInput({"  output y = flash(x, norm_clamp = true)"}), 5, 36,
              "norm_clamp needs norm = scale_norm, but norm is layer_norm");
}

TEST(SemaCallsTest, LengthScaledLinearPartNeedsNonCausal) {
  expectError(withInput({"  output y = flash(x, causal = true, "
                         "lin_scale = length)"}),
              5, 50,
              "lin_scale = length needs causal = false (a causal chunk "
              "cannot know the sequence's length)");
}

TEST(SemaCallsTest, TemplateInputMustHaveConstantWidth) {
  expectError(withInput({"  param v : f32[d]", "  output y = flash(v)"}), 6, 20,
              "the input of 'flash' must have shape [..., n, d] with a "
              "constant d, but 'v' is f32[64]");
}

TEST(SemaCallsTest, TemplateTakesExactlyOnePositionalArgument) {
  expectError(withInput({"  output y = glu_ffn(x, x)"}), 5, 14,
              "'glu_ffn' expects one positional argument (the input x), got 2 "
              "positional arguments");
}

TEST(SemaCallsTest, DuplicateLayerNameNotesTheFirstUse) {
  FrontendRun run(withInput({
      "  h = flash(x) as blk",
      "  output y = gau(h) as blk",
  }));
  EXPECT_FALSE(run.check());
  Diagnostic diag = run.firstError();
  EXPECT_EQ(diag.line, 6u);
  EXPECT_EQ(diag.column, 24u);
  EXPECT_THAT(diag.message, HasSubstr("duplicate layer name 'blk'; weights of "
                                      "two layers would share names"));
  Diagnostic note = run.firstNote();
  EXPECT_EQ(note.line, 5u);
  EXPECT_EQ(note.column, 19u);
  EXPECT_THAT(note.message, HasSubstr("first used here"));
}

TEST(SemaCallsTest, DefaultLayerNameCanClashWithAnExplicitOne) {
  FrontendRun run(withInput({
      "  a = flash(x) as flash_1",
      "  b = flash(a)",
      "  output y = flash(b)",
  }));
  EXPECT_FALSE(run.check());
  Diagnostic diag = run.firstError();
  EXPECT_EQ(diag.line, 7u);
  EXPECT_EQ(diag.column, 14u);
  EXPECT_THAT(diag.message, HasSubstr("duplicate layer name 'flash_1'"));
  EXPECT_EQ(run.firstNote().line, 5u);
  EXPECT_EQ(run.firstNote().column, 19u);
}

TEST(SemaCallsTest, RepeatOfANonTemplateIsRejected) {
  expectError(withInput({"  output y = repeat 4 layer_norm(x)"}), 5, 23,
              "repeat needs a layer template call (gau, flash, mhsa, "
              "linear_attention, local_attention, glu_ffn), found "
              "'layer_norm'");
}

TEST(SemaCallsTest, RepeatOfLinearAttentionPrimitiveIsRejected) {
  expectError(withInput({"  output y = repeat 2 linear_attention(x, x, x)"}), 5,
              23, "repeat needs a layer template call");
}

TEST(SemaCallsTest, RepeatCountIsBounded) {
  expectError(withInput({"  output y = repeat 2000 flash(x)"}), 5, 21,
              "repeat count 2000 is too large (at most 1024)");
  expectError(withInput({"  output y = repeat (d - 64) flash(x)"}), 5, 24,
              "the repeat count must be at least 1");
}

TEST(SemaCallsTest, AsOnANonTemplateIsRejected) {
  expectError(withInput({"  output y = layer_norm(x) as ln"}), 5, 31,
              "'as ln' names a layer template call, but 'layer_norm' is not a "
              "layer template");
}

TEST(SemaCallsTest, UnknownFunctionSuggestsClosestCallable) {
  expectError(withInput({"  output y = flsh(x)"}), 5, 14,
              "unknown function 'flsh'; did you mean 'flash'?");
}

//===--- primitives ---------------------------------------------------------===//

TEST(SemaCallsTest, SplitSizesMustSumToTheLastDim) {
  expectError(withInput({"  a, b = split(x, [16, 16])", "  output y = a"}), 5,
              19,
              "split sizes [16, 16] sum to 32 but the last dim of 'x' is 64");
}

TEST(SemaCallsTest, SplitBoundToWrongNumberOfNames) {
  expectError(withInput({"  a, b = split(x, [32, 16, 16])", "  output y = a"}),
              5, 3,
              "2 names bound to split(...), which produces 3 results");
}

TEST(SemaCallsTest, SplitNeedsAListOfSizes) {
  expectError(withInput({"  a, b = split(x, 32)", "  output y = a"}), 5, 19,
              "expected a list of sizes such as [e, e, s] as the second "
              "argument of split");
}

TEST(SemaCallsTest, SplitResultMustBeBoundBeforeUse) {
  expectError(withInput({"  output y = split(x, [32, 32]) * 2"}), 5, 14,
              "split(...) produces 2 results; bind them with 'a, b, ... = "
              "split(...)' first");
}

TEST(SemaCallsTest, RopeDimsMustBeEven) {
  expectError(withInput({"  output y = rope(x, dims = 7)"}), 5, 29,
              "rope dims = 7 must be even and at most the feature width 64");
}

TEST(SemaCallsTest, RopeDimsMustNotExceedTheWidth) {
  expectError(withInput({"  output y = rope(x, dims = 128)"}), 5, 29,
              "rope dims = 128 must be even and at most the feature width 64");
}

TEST(SemaCallsTest, NormWeightMustMatchTheFeatureWidth) {
  expectError(withInput({"  param g : f32[32]", "  output y = layer_norm(x, g)"}),
              6, 28, "'g' of 'layer_norm' must be f32[64], but is f32[32]");
}

TEST(SemaCallsTest, ScaleNormNeedsAScalarGain) {
  expectError(withInput({"  param g : f32[d]", "  output y = scale_norm(x, g)"}),
              6, 28, "'g' of 'scale_norm' must be f32[1], but is f32[64]");
}

TEST(SemaCallsTest, QueryAndKeyWidthsMustAgree) {
  expectError(withInput({"  input k : f32[n, 32]",
                         "  output y = attention(x, k, x)"}),
              6, 14,
              "query and key widths differ in 'attention': q f32[n, 64] and k "
              "f32[n, 32]");
}

//===--- score expressions ------------------------------------------------===//

TEST(SemaCallsTest, RelPosBiasOutsideAScoreIsRejected) {
  expectError(withInput({"  param rel : f32[127]",
                         "  output y = x * rel_pos_bias(rel)"}),
              6, 18,
              "'rel_pos_bias' is only allowed inside an attention score "
              "expression (score = ...)");
}

TEST(SemaCallsTest, TensorInsideAScoreIsRejected) {
  expectError(withInput({"  output y = attention(x, x, x, score = qk + x)"}), 5,
              46, "tensor 'x' cannot be used in a score expression");
}

TEST(SemaCallsTest, NonScalarFunctionInsideAScoreIsRejected) {
  expectError(withInput(
                  {"  output y = attention(x, x, x, score = layer_norm(qk))"}),
              5, 41,
              "'layer_norm' cannot be used in a score expression; a score may "
              "use unary functions, rel_pos_bias and t5_bias");
}

TEST(SemaCallsTest, IndexingInsideAScoreIsRejected) {
  expectError(withInput({"  param p : f32[2, d]",
                         "  output y = attention(x, x, x, score = qk * p[0])"}),
              6, 47, "indexing is not allowed in a score expression");
}

TEST(SemaCallsTest, RelPosBiasTableLengthMustMatchMaxLen) {
  expectError(withInput({"  param rel : f32[100]",
                         "  output y = attention(x, x, x,",
                         "      score = qk + rel_pos_bias(rel, max_len = 64))"}),
              7, 33,
              "the learned Toeplitz table 'rel' has 100 entries but max_len = "
              "64 needs 2*max_len-1 = 127");
}

TEST(SemaCallsTest, T5BiasNeedsAnEvenNumberOfBuckets) {
  expectError(withInput({"  param buckets : f32[31]",
                         "  output y = attention(x, x, x, score = qk + "
                         "t5_bias(buckets))"}),
              6, 54,
              "buckets when not causal, but 'buckets' has 31");
}

TEST(SemaCallsTest, WindowOutsideAMaskIsRejected) {
  expectError(withInput({"  output y = x * window(4)"}), 5, 18,
              "'window(...)' is only allowed as a mask: mask = window(size)");
}

} // namespace
