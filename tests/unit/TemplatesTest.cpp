//===- TemplatesTest.cpp - tests of layer templates and their tables -----===//
//
// This file tests the layer templates as Sema resolves them: the paper's
// defaults (e = 2d, s = 128, C = 256), explicit overrides, default and
// repeated layer names, and the weight names and shapes that
// templateWeights derives from a resolved configuration.
//
//===----------------------------------------------------------------------===//
#include "FrontendTestUtil.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

using namespace attnc::dsl;
using namespace attnc::dsl::test;
using ::testing::ElementsAre;
using ::testing::IsEmpty;

namespace {

/// A model with d = 512 and `y = <call>`; returns the run after check().
std::unique_ptr<FrontendRun> checkCall(const std::string &call) {
  auto run = std::make_unique<FrontendRun>(lines({
      "model m {",
      "  dim d = 512",
      "  dim n : seq",
      "  input x : f32[n, d]",
      "  output y = " + call,
      "}",
  }));
  EXPECT_TRUE(run->check()) << run->output();
  return run;
}

/// `part shape` strings of templateWeights, e.g. "uvz.weight [512, 2176]".
std::vector<std::string> weights(llvm::StringRef name, int64_t d,
                                 const Config &config) {
  std::vector<std::string> out;
  for (const WeightPart &part : templateWeights(name, d, config)) {
    std::string text = part.part + " [";
    for (size_t i = 0; i < part.shape.size(); ++i)
      text += (i ? ", " : "") + std::to_string(part.shape[i]);
    out.push_back(text + "]");
  }
  return out;
}

TEST(TemplatesTest, GauDefaultsFollowThePaper) {
  auto run = checkCall("gau(x)");
  const SemaInfo *info = run->semaOf("y");
  ASSERT_NE(info, nullptr);
  EXPECT_EQ(info->type.str(), "f32[n, 512]");
  const Config &config = info->config;
  EXPECT_EQ(config.at("e").size, 1024);
  EXPECT_EQ(config.at("s").size, 128);
  EXPECT_EQ(config.at("max_len").size, 512);
  EXPECT_FALSE(config.at("causal").boolean);
  EXPECT_TRUE(config.at("rope").boolean);
  EXPECT_EQ(config.at("norm").enumValue, "layer_norm");
  EXPECT_EQ(config.at("rel_pos").enumValue, "toeplitz");
  EXPECT_DOUBLE_EQ(config.at("eps").number, 1e-5);
  // FLASH-pytorch's options, off (docs/dsl.md §5.8); rope_dims has no
  // default (all of s).
  EXPECT_EQ(config.at("num_buckets").size, 32);
  EXPECT_EQ(config.at("max_distance").size, 128);
  EXPECT_EQ(config.at("rope_mode").enumValue, "half");
  EXPECT_FALSE(config.at("shift_tokens").boolean);
  EXPECT_FALSE(config.at("norm_clamp").boolean);
  EXPECT_EQ(config.count("rope_dims"), 0u);
  EXPECT_EQ(config.size(), 13u);
}

TEST(TemplatesTest, FlashDefaultsToChunk256) {
  auto run = checkCall("flash(x)");
  const Config &config = run->semaOf("y")->config;
  EXPECT_EQ(config.at("chunk").size, 256);
  EXPECT_EQ(config.at("e").size, 1024);
  EXPECT_EQ(config.at("s").size, 128);
  EXPECT_EQ(config.count("max_len"), 0u);
}

TEST(TemplatesTest, ExplicitKeywordsOverrideDefaults) {
  auto run = checkCall("flash(x, chunk = 64, causal = true, e = d, s = d / 4, "
                       "norm = scale_norm, rel_pos = none, eps = 1e-6)");
  const Config &config = run->semaOf("y")->config;
  EXPECT_EQ(config.at("chunk").size, 64);
  EXPECT_TRUE(config.at("causal").boolean);
  EXPECT_EQ(config.at("e").size, 512);
  EXPECT_EQ(config.at("s").size, 128);
  EXPECT_EQ(config.at("norm").enumValue, "scale_norm");
  EXPECT_EQ(config.at("rel_pos").enumValue, "none");
  EXPECT_DOUBLE_EQ(config.at("eps").number, 1e-6);
}

TEST(TemplatesTest, OtherTemplatesHaveDocumentedDefaults) {
  auto mhsa = checkCall("mhsa(x)");
  EXPECT_EQ(mhsa->semaOf("y")->config.at("heads").size, 8);
  auto local = checkCall("local_attention(x)");
  EXPECT_EQ(local->semaOf("y")->config.at("window").size, 256);
  EXPECT_TRUE(local->semaOf("y")->config.at("causal").boolean);
  EXPECT_FALSE(local->semaOf("y")->config.at("block").boolean);
  auto ffn = checkCall("glu_ffn(x)");
  EXPECT_EQ(ffn->semaOf("y")->config.at("hidden").size, 1024);
  EXPECT_EQ(ffn->semaOf("y")->config.at("activation").enumValue, "silu");
}

TEST(TemplatesTest, DefaultLayerNamesCountPerTemplate) {
  FrontendRun run(lines({
      "model m {",
      "  dim d = 64",
      "  input x : f32[16, d]",
      "  a = flash(x)",
      "  b = gau(a)",
      "  c = flash(b)",
      "  e = flash(c) as named",
      "  output y = flash(e)",
      "}",
  }));
  ASSERT_TRUE(run.check()) << run.output();
  EXPECT_THAT(run.semaOf("a")->layerNames, ElementsAre("flash_0"));
  EXPECT_THAT(run.semaOf("b")->layerNames, ElementsAre("gau_0"));
  EXPECT_THAT(run.semaOf("c")->layerNames, ElementsAre("flash_1"));
  EXPECT_THAT(run.semaOf("e")->layerNames, ElementsAre("named"));
  EXPECT_THAT(run.semaOf("y")->layerNames, ElementsAre("flash_2"));
}

TEST(TemplatesTest, RepeatNamesEachLayerWithAnIndexSuffix) {
  FrontendRun run(lines({
      "model m {",
      "  dim d = 64, layers = 8",
      "  dim n : seq",
      "  input x : f32[n, d]",
      "  h = repeat layers flash(x, chunk = 64, causal = true) as blk",
      "  output y = repeat 2 glu_ffn(h)",
      "}",
  }));
  ASSERT_TRUE(run.check()) << run.output();
  const SemaInfo *h = run.semaOf("h");
  EXPECT_THAT(h->layerNames,
              ElementsAre("blk.0", "blk.1", "blk.2", "blk.3", "blk.4", "blk.5",
                          "blk.6", "blk.7"));
  EXPECT_EQ(h->type.str(), "f32[n, 64]");
  EXPECT_EQ(h->config.at("chunk").size, 64);
  EXPECT_TRUE(h->config.at("causal").boolean);
  // The repeated call itself carries the same annotation.
  const Expr *call = run.boundExpr("h")->operands[1].get();
  ASSERT_NE(call->sema, nullptr);
  EXPECT_EQ(call->sema->layerNames.size(), 8u);
  EXPECT_THAT(run.semaOf("y")->layerNames,
              ElementsAre("glu_ffn_0.0", "glu_ffn_0.1"));
}

TEST(TemplatesTest, GauWeightsWithDefaults) {
  auto run = checkCall("gau(x)");
  EXPECT_THAT(weights("gau", 512, run->semaOf("y")->config),
              ElementsAre("norm.weight [512]", "norm.bias [512]",
                          "uvz.weight [512, 2176]", "uvz.bias [2176]",
                          "gamma [2, 128]", "beta [2, 128]",
                          "rel_pos [1023]", "out.weight [1024, 512]",
                          "out.bias [512]"));
}

TEST(TemplatesTest, FlashWeightsUseFourHeadsAndTheChunkForRelPos) {
  auto run = checkCall("flash(x, chunk = 64)");
  EXPECT_THAT(weights("flash", 512, run->semaOf("y")->config),
              ElementsAre("norm.weight [512]", "norm.bias [512]",
                          "uvz.weight [512, 2176]", "uvz.bias [2176]",
                          "gamma [4, 128]", "beta [4, 128]", "rel_pos [127]",
                          "out.weight [1024, 512]", "out.bias [512]"));
}

TEST(TemplatesTest, FlashWeightsWithoutRelPosAndWithScaleNorm) {
  auto run = checkCall("flash(x, rel_pos = none, norm = scale_norm, e = d, "
                       "s = 64)");
  EXPECT_THAT(weights("flash", 512, run->semaOf("y")->config),
              ElementsAre("norm.weight [1]", "uvz.weight [512, 1088]",
                          "uvz.bias [1088]", "gamma [4, 64]", "beta [4, 64]",
                          "out.weight [512, 512]", "out.bias [512]"));
}

TEST(TemplatesTest, T5RelPosIsATableOfNumBuckets) {
  auto run = checkCall("flash(x, rel_pos = t5, num_buckets = 16, "
                       "norm = scale_norm, norm_clamp = true)");
  EXPECT_THAT(weights("flash", 512, run->semaOf("y")->config),
              ElementsAre("norm.weight [1]", "uvz.weight [512, 2176]",
                          "uvz.bias [2176]", "gamma [4, 128]",
                          "beta [4, 128]", "rel_pos [16]",
                          "out.weight [1024, 512]", "out.bias [512]"));
}

TEST(TemplatesTest, MhsaWeightsAreFusedQkv) {
  auto run = checkCall("mhsa(x, norm = rms_norm)");
  EXPECT_THAT(weights("mhsa", 512, run->semaOf("y")->config),
              ElementsAre("norm.weight [512]", "qkv.weight [512, 1536]",
                          "qkv.bias [1536]", "out.weight [512, 512]",
                          "out.bias [512]"));
}

TEST(TemplatesTest, GluFfnWeightsUseTheHiddenWidth) {
  auto run = checkCall("glu_ffn(x, hidden = 3 * d)");
  EXPECT_THAT(weights("glu_ffn", 512, run->semaOf("y")->config),
              ElementsAre("norm.weight [512]", "norm.bias [512]",
                          "in.weight [512, 3072]", "in.bias [3072]",
                          "out.weight [1536, 512]", "out.bias [512]"));
}

TEST(TemplatesTest, TablesListEveryTemplateAndCallable) {
  std::vector<std::string> names;
  for (const TemplateSpec &spec : layerTemplates())
    names.push_back(spec.name);
  EXPECT_THAT(names, ElementsAre("gau", "flash", "mhsa", "linear_attention",
                                 "local_attention", "glu_ffn"));
  EXPECT_NE(findTemplate("flash"), nullptr);
  EXPECT_EQ(findTemplate("attention"), nullptr);
  EXPECT_TRUE(isScoreOnlyFunction("rel_pos_bias"));
  EXPECT_TRUE(isScoreOnlyFunction("t5_bias"));
  EXPECT_FALSE(isScoreOnlyFunction("relu"));
  EXPECT_TRUE(isUnaryFunction("silu"));
  EXPECT_FALSE(isUnaryFunction("softmax"));
  EXPECT_THAT(primitiveKeywords("split"), IsEmpty());
  std::vector<std::string> attention;
  for (const KeywordSpec &spec : primitiveKeywords("attention"))
    attention.push_back(spec.name);
  EXPECT_THAT(attention, ElementsAre("score", "mask", "normalize", "heads"));
  const std::vector<std::string> &callables = knownCallables();
  for (const char *name : {"gau", "split", "rope", "t5_bias", "scale_offset"})
    EXPECT_NE(std::find(callables.begin(), callables.end(), name),
              callables.end())
        << name;
}

} // namespace
