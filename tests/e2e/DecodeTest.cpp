//===- DecodeTest.cpp - incremental decoding equals the whole run ---------===//
//
// Issue 15: a causal model decoded incrementally (codegen/Decode.h), a
// prompt of n rows prefilled and then k rows one step at a time, gives at
// every step the outputs the whole-sequence run gives at that position,
// within 1e-5 relative, for prompts and totals on both sides of chunk
// boundaries, for one pipeline and for a program of repeated layer
// kernels; its state's bytes do not grow with the context. GAU and MHSA
// decode with a key/value cache (their steps equal the whole run over the
// sequence so far). Errors: a model that cannot be decoded is refused at
// compile time, a bad token id in a step or a sequence past the cache's
// capacity leaves the sequence as it was.
//
//===----------------------------------------------------------------------===//
#include "tests/e2e/E2EUtil.h"

#include "codegen/Decode.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <map>

namespace attnc::e2e {
namespace {

using codegen::HostTensor;
using codegen::TensorMap;

/// Causal FLASH over float rows (chunks of 8).
const char *kFlashLayer = R"(model layer {
  dim d = 32
  dim n : seq
  dim b : batch
  input x : f32[b, n, d]
  output y = flash(x, e = 64, s = 16, chunk = 8, causal = true)
}
)";

/// Two FLASH layers of different chunks (4 and 6): the block kernel runs
/// 12 rows at multiples of 12, the step kernel pieces of at most 2 rows
/// within them, and each layer folds its partial chunk at its own
/// chunks' ends.
const char *kTwoChunkSizes = R"(model two_chunks {
  dim d = 32
  dim n : seq
  dim b : batch
  input x : f32[b, n, d]
  h = flash(x, e = 64, s = 16, chunk = 4, causal = true)
  output y = flash(h, e = 64, s = 16, chunk = 6, causal = true)
}
)";

/// Token ids to logits through FLASH-pytorch's layer: token shift (a carry
/// of the previous row), T5 bias, partial interleaved rotary (positions
/// from the block's offset), clamped ScaleNorm; scaled sinusoidal
/// positions; a head.
const char *kTokenModel = R"(model lm {
  dim d = 32
  dim vocab = 40
  dim n : seq
  dim b : batch
  input ids : i32[b, n]
  param tok : f32[vocab, d]
  param head : f32[d, vocab]
  e = embedding(ids, tok)
  x = e + sinusoidal(e)
  h = flash(x, e = 64, s = 16, chunk = 8, causal = true, rel_pos = t5,
            num_buckets = 8, max_distance = 16, rope_dims = 8,
            rope_mode = interleaved, shift_tokens = true, norm_clamp = true,
            norm = scale_norm)
  output logits = h @ head
}
)";

/// The same layer, repeated: a program of layer kernels, each call with
/// carries of its own; a layer-normed head.
const char *kTokenStack = R"(model stack {
  dim d = 32
  dim vocab = 40
  dim n : seq
  dim b : batch
  input ids : i32[b, n]
  param tok : f32[vocab, d]
  param head_norm_weight : f32[d]
  param head_norm_bias : f32[d]
  param head : f32[d, vocab]
  x = embedding(ids, tok)
  h = repeat 3 flash(x, e = 64, s = 16, chunk = 8, causal = true,
                     rope_dims = 8, shift_tokens = true) as layers
  output logits = layer_norm(h, head_norm_weight, head_norm_bias) @ head
}
)";

std::unique_ptr<CompiledModel> compile(const char *source, bool decode) {
  driver::SessionOptions options;
  options.decode = decode;
  return compileAttn(source, options);
}

/// Rows [first, first + count) of the [1, N, ...] (or ids [1, N]) tensor
/// `t`, with `rowAxis` its rows.
HostTensor rows(const HostTensor &t, size_t rowAxis, int64_t first,
                int64_t count) {
  std::vector<int64_t> shape = t.shape;
  shape[rowAxis] = count;
  HostTensor part(shape);
  part.dtype = t.dtype;
  int64_t inner = 1;
  for (size_t d = rowAxis + 1; d < t.shape.size(); ++d)
    inner *= t.shape[d];
  std::copy(t.data.begin() + first * inner,
            t.data.begin() + (first + count) * inner, part.data.begin());
  return part;
}

/// Appends rows [first, first + count) of `input` to `decoder`: their
/// outputs.
HostTensor append(codegen::Decoder &decoder, const HostTensor &input,
                  size_t rowAxis, std::vector<int64_t> outShape,
                  int64_t first, int64_t count) {
  HostTensor in = rows(input, rowAxis, first, count);
  outShape[1] = count;
  HostTensor out(outShape);
  std::vector<Halide::Buffer<float>> ins{codegen::hostView(in.data.data(),
                                                          in.shape)},
      outs{codegen::hostView(out.data.data(), out.shape)};
  runtime::Result ran = decoder.append(ins, outs);
  EXPECT_TRUE(ran.ok()) << ran.message;
  return out;
}

/// max |decoded - whole rows [first, first + count)| / max |whole|.
double rowError(const HostTensor &decoded, const HostTensor &whole,
                int64_t first) {
  int64_t inner = whole.data.size() / whole.shape[1];
  double worst = 0, scale = 0;
  for (float v : whole.data)
    scale = std::max(scale, double(std::abs(v)));
  for (size_t i = 0; i < decoded.data.size(); ++i)
    worst = std::max(worst, double(std::abs(
                                decoded.data[i] -
                                whole.data[first * inner + i])));
  return worst / scale;
}

/// How a model decodes: its blocks, its key/value cache's capacity (0:
/// none), and whether a row's output depends on the sequence's length
/// (GAU divides its scores by it): then a step's row is compared with the
/// whole run over the rows up to it.
struct Decoding {
  int64_t blockRows = 8;
  int64_t capacity = 0;
  bool lengthScaled = false;
};

/// Prefill n rows, then k steps; each step's outputs against the whole
/// run's row at that position, for prompts on both sides of block
/// boundaries (of 5 blocks of rows).
void expectDecodingMatchesWholeRun(const char *source,
                                   const std::string &inputName,
                                   const std::string &outputName,
                                   size_t rowAxis, bool program = false,
                                   Decoding how = {}) {
  auto whole = compile(source, /*decode=*/false);
  auto decoding = compile(source, /*decode=*/true);
  ASSERT_TRUE(whole->jit) << whole->diagnostics;
  ASSERT_TRUE(decoding->jit) << decoding->diagnostics;
  EXPECT_EQ(!decoding->jit->pipeline().kernels().empty(), program);
  TensorMap weights =
      codegen::randomWeights(whole->jit->pipeline().weights(), 5);
  const int64_t block = how.blockRows, total = 5 * block;
  TensorMap inputs =
      randomInputs(*whole->jit, {{"n", total}, {"b", 1}}, /*seed=*/9);
  TensorMap outputs = runJit(*whole, inputs, weights);
  const HostTensor &input = inputs.at(inputName);
  const HostTensor &all = outputs.at(outputName);
  // The model compiled for decoding, run whole, is the whole run (with a
  // cache, one block of every row: GAU's rows see the whole length).
  EXPECT_LE(rowError(runJit(*decoding, inputs, weights).at(outputName), all,
                     0),
            1e-5);
  // The whole run whose row `at` a decoded row `at` equals.
  std::map<int64_t, HostTensor> prefixes;
  auto wholeRunFor = [&](int64_t at) -> const HostTensor & {
    if (!how.lengthScaled)
      return all;
    auto found = prefixes.find(at);
    if (found == prefixes.end()) {
      TensorMap prefix{{inputName, rows(input, rowAxis, 0, at + 1)}};
      found = prefixes.emplace(at, runJit(*whole, prefix, weights)
                                       .at(outputName)).first;
    }
    return found->second;
  };
  std::unique_ptr<codegen::Decoder> decoder;
  runtime::Result made = decoding->jit->decoder(weights, how.capacity ? total
                                                                      : 0,
                                                decoder);
  ASSERT_TRUE(made.ok()) << made.message;
  EXPECT_EQ(decoder->blockRows(), block);
  int64_t stateBytes = -1;
  for (int64_t prompt : {int64_t(1), int64_t(5), block, block + 5, 2 * block,
                         4 * block - 1}) {
    SCOPED_TRACE("prompt of " + std::to_string(prompt) + " rows");
    decoder->reset();
    HostTensor prefilled =
        append(*decoder, input, rowAxis, all.shape, 0, prompt);
    if (!how.lengthScaled)
      EXPECT_LE(rowError(prefilled, all, 0), 1e-5);
    else // the prompt's last row sees the whole prompt
      EXPECT_LE(rowError(rows(prefilled, rowAxis, prompt - 1, 1),
                         wholeRunFor(prompt - 1), prompt - 1),
                1e-5);
    for (int64_t at = prompt; at < std::min(prompt + 12, total); ++at) {
      HostTensor step = append(*decoder, input, rowAxis, all.shape, at, 1);
      EXPECT_LE(rowError(step, wholeRunFor(at), at), 1e-5)
          << "step at row " << at;
      EXPECT_EQ(decoder->length(), at + 1);
      if (stateBytes < 0)
        stateBytes = decoder->stateBytes();
      // Constant in the length (a cache's capacity is allocated at once).
      EXPECT_EQ(decoder->stateBytes(), stateBytes);
    }
  }
}

TEST(Decode, FlashLayerStepsEqualTheWholeRun) {
  expectDecodingMatchesWholeRun(kFlashLayer, "x", "y", /*rowAxis=*/1);
}

TEST(Decode, LayersOfTwoChunkSizesStepsEqualTheWholeRun) {
  Decoding how;
  how.blockRows = 12;
  expectDecodingMatchesWholeRun(kTwoChunkSizes, "x", "y", /*rowAxis=*/1,
                                /*program=*/false, how);
}

/// A one-layer model over float rows (d = 32), `output y = <layer>`,
/// decoded in blocks of `blockRows`.
void expectLayerDecodingMatchesWholeRun(const std::string &layer,
                                        int64_t blockRows) {
  std::string source = "model layer {\n  dim d = 32\n  dim n : seq\n"
                       "  dim b : batch\n  input x : f32[b, n, d]\n"
                       "  output y = " +
                       layer + "\n}\n";
  Decoding how;
  how.blockRows = blockRows;
  expectDecodingMatchesWholeRun(source.c_str(), "x", "y", /*rowAxis=*/1,
                                /*program=*/false, how);
}

/// Causal linear attention runs in chunks of 128 (attn-chunk): the chunk
/// prefix of its numerator's and its denominator's states carried, the
/// current chunk's rows attended to within it.
TEST(Decode, CausalLinearAttentionStepsEqualTheWholeRun) {
  expectLayerDecodingMatchesWholeRun("linear_attention(x, causal = true)",
                                     128);
}

/// Softmax within causal chunks (local attention's blocks, cut into
/// chunks by attn-chunk).
TEST(Decode, CausalSoftmaxBlocksStepsEqualTheWholeRun) {
  expectLayerDecodingMatchesWholeRun(
      "local_attention(x, heads = 2, window = 16, block = true)", 16);
}

TEST(Decode, TokenModelWithFlashPytorchOptionsStepsEqualTheWholeRun) {
  expectDecodingMatchesWholeRun(kTokenModel, "ids", "logits", /*rowAxis=*/1);
}

TEST(Decode, RepeatedLayersStepsEqualTheWholeRun) {
  expectDecodingMatchesWholeRun(kTokenStack, "ids", "logits", /*rowAxis=*/1,
                                /*program=*/true);
}

TEST(Decode, BadTokenIdInAStepLeavesTheSequenceAsItWas) {
  auto whole = compile(kTokenModel, /*decode=*/false);
  auto decoding = compile(kTokenModel, /*decode=*/true);
  ASSERT_TRUE(whole->jit && decoding->jit) << decoding->diagnostics;
  TensorMap weights =
      codegen::randomWeights(whole->jit->pipeline().weights(), 5);
  TensorMap inputs = randomInputs(*whole->jit, {{"n", 12}, {"b", 1}}, 3);
  TensorMap outputs = runJit(*whole, inputs, weights);
  const HostTensor &ids = inputs.at("ids"), &want = outputs.at("logits");
  std::unique_ptr<codegen::Decoder> decoder;
  ASSERT_TRUE(decoding->jit->decoder(weights, 0, decoder).ok());
  append(*decoder, ids, 1, want.shape, 0, 10);

  HostTensor bad = rows(ids, 1, 10, 1);
  int32_t outside = 40;
  std::memcpy(bad.data.data(), &outside, 4);
  HostTensor out({1, 1, 40});
  std::vector<Halide::Buffer<float>> ins{codegen::hostView(bad.data.data(),
                                                          bad.shape)},
      outs{codegen::hostView(out.data.data(), out.shape)};
  runtime::Result refused = decoder->append(ins, outs);
  EXPECT_EQ(refused.status, ATTN_ERROR_ARGUMENT);
  EXPECT_NE(refused.message.find("token id 40 at [0, 0] of input 'ids' is "
                                 "out of range"),
            std::string::npos)
      << refused.message;
  EXPECT_EQ(decoder->length(), 10);
  HostTensor step = append(*decoder, ids, 1, want.shape, 10, 1);
  EXPECT_LE(rowError(step, want, 10), 1e-5);
}

TEST(Decode, WrongShapesAreRefusedBeforeAnythingRuns) {
  auto decoding = compile(kFlashLayer, /*decode=*/true);
  ASSERT_TRUE(decoding->jit) << decoding->diagnostics;
  TensorMap weights =
      codegen::randomWeights(decoding->jit->pipeline().weights(), 1);
  std::unique_ptr<codegen::Decoder> decoder;
  ASSERT_TRUE(decoding->jit->decoder(weights, 0, decoder).ok());
  auto append = [&](std::vector<int64_t> in, std::vector<int64_t> out) {
    HostTensor x(in), y(out);
    std::vector<Halide::Buffer<float>> ins{codegen::hostView(x.data.data(),
                                                            x.shape)},
        outs{codegen::hostView(y.data.data(), y.shape)};
    return decoder->append(ins, outs);
  };
  runtime::Result batch = append({2, 3, 32}, {2, 3, 32});
  EXPECT_EQ(batch.status, ATTN_ERROR_SHAPE);
  EXPECT_EQ(batch.message, "input 'x' has shape [2, 3, 32]; a decoder takes "
                           "[b, n, 32] with batch dims 1");
  runtime::Result rows = append({1, 3, 32}, {1, 2, 32});
  EXPECT_EQ(rows.status, ATTN_ERROR_SHAPE);
  EXPECT_EQ(rows.message, "output 'y' has shape [1, 2, 32]; a decoder takes "
                          "[b, n, 32] with batch dims 1 and 3 rows");
  EXPECT_EQ(append({1, 3, 16}, {1, 3, 32}).status, ATTN_ERROR_SHAPE);
  EXPECT_EQ(append({3, 32}, {1, 3, 32}).status, ATTN_ERROR_SHAPE);
  EXPECT_EQ(decoder->length(), 0);
  EXPECT_TRUE(append({1, 3, 32}, {1, 3, 32}).ok());
  EXPECT_EQ(decoder->length(), 3);
}

/// Token ids through one layer that attends over the whole sequence
/// (`layer`, of the embedded ids `e`), decoded with a key/value cache
/// (blocks of 64 rows).
std::string cachedModel(const std::string &layer) {
  return "model m {\n  dim d = 32\n  dim vocab = 40\n  dim n : seq\n"
         "  dim b : batch\n  input ids : i32[b, n]\n"
         "  param tok : f32[vocab, d]\n  param head : f32[d, vocab]\n"
         "  e = embedding(ids, tok)\n  output logits = " + layer +
         " @ head\n}\n";
}
const std::string kGauModel = cachedModel(
    "gau(e, e = 64, s = 16, causal = true, max_len = 512)");
const std::string kMhsaModel = cachedModel("mhsa(e, heads = 4, causal = true)");

// MHSA: every decoded row equals the whole run's.
TEST(Decode, MhsaWithAKeyValueCacheStepsEqualTheWholeRun) {
  expectDecodingMatchesWholeRun(kMhsaModel.c_str(), "ids", "logits", 1, false,
                                {/*blockRows=*/64, /*capacity=*/1});
}

// A model with a static batch of one, compiled for decoding and run whole,
// is the whole run. Its norm's row statistics were split into parallel
// tasks, whose bounds reached batch entry 1 - n ("internal error ... Input
// buffer in0_x is accessed at -6"; model generator, campaign 6, seed
// 30501).
TEST(Decode, StaticBatchOfOneDecodedRunsLikeTheWholeRun) {
  const char *source = R"(model one {
  dim n : seq
  dim batch_size = 1
  input x : f32[batch_size, n, 8]
  output y : f32[batch_size, n, 8] = mhsa(x, causal = true)
}
)";
  auto whole = compile(source, /*decode=*/false);
  auto decoding = compile(source, /*decode=*/true);
  ASSERT_TRUE(whole->jit) << whole->diagnostics;
  ASSERT_TRUE(decoding->jit) << decoding->diagnostics;
  TensorMap weights =
      codegen::randomWeights(whole->jit->pipeline().weights(), 5);
  for (int64_t n : {1, 7, 100}) {
    TensorMap inputs = randomInputs(*whole->jit, {{"n", n}}, /*seed=*/9);
    EXPECT_LE(rowError(runJit(*decoding, inputs, weights).at("y"),
                       runJit(*whole, inputs, weights).at("y"), 0),
              1e-5)
        << "n = " << n;
  }
}

// GAU divides its scores by the sequence's length: a step's row equals the
// last row of the whole run over the sequence so far.
TEST(Decode, GauWithAKeyValueCacheStepsEqualTheWholeRunSoFar) {
  expectDecodingMatchesWholeRun(kGauModel.c_str(), "ids", "logits", 1, false,
                                {/*blockRows=*/64, /*capacity=*/1,
                                 /*lengthScaled=*/true});
}

// The cache's capacity is needed, and a sequence past it is refused with
// the sequence kept.
TEST(Decode, KeyValueCacheNeedsACapacityAndKeepsToIt) {
  auto decoding = compile(kMhsaModel.c_str(), /*decode=*/true);
  ASSERT_TRUE(decoding->jit) << decoding->diagnostics;
  EXPECT_TRUE(decoding->jit->pipeline().decodesWithCache());
  TensorMap weights =
      codegen::randomWeights(decoding->jit->pipeline().weights(), 2);
  std::unique_ptr<codegen::Decoder> decoder;
  runtime::Result none = decoding->jit->decoder(weights, 0, decoder);
  EXPECT_EQ(none.status, ATTN_ERROR_ARGUMENT);
  EXPECT_NE(none.message.find("keeps a key/value cache, whose capacity"),
            std::string::npos)
      << none.message;
  ASSERT_TRUE(decoding->jit->decoder(weights, 10, decoder).ok());
  TensorMap inputs =
      randomInputs(*decoding->jit, {{"n", 11}, {"b", 1}}, /*seed=*/4);
  const HostTensor &ids = inputs.at("ids");
  append(*decoder, ids, 1, {1, 11, 40}, 0, 8);
  HostTensor in = rows(ids, 1, 8, 3), out({1, 3, 40});
  std::vector<Halide::Buffer<float>> ins{codegen::hostView(in.data.data(),
                                                          in.shape)},
      outs{codegen::hostView(out.data.data(), out.shape)};
  runtime::Result over = decoder->append(ins, outs);
  EXPECT_EQ(over.status, ATTN_ERROR_ARGUMENT);
  EXPECT_EQ(over.message, "the key/value cache holds 10 rows (the decoder's "
                          "capacity); the sequence has 8 and the append adds "
                          "3");
  EXPECT_EQ(decoder->length(), 8);
}

TEST(Decode, AttentionOverTheWholeSequenceWithoutACausalMaskIsRefused) {
  auto model = compile(R"(model g {
  dim d = 16
  dim n : seq
  dim b : batch
  input x : f32[b, n, d]
  output y = gau(x, e = 32, s = 8, causal = false)
}
)",
                       /*decode=*/true);
  EXPECT_FALSE(model->jit);
  EXPECT_NE(model->diagnostics.find(
                "'attn.attention' here: it attends to later rows of the "
                "sequence (mask 'none'), which the block does not hold"),
            std::string::npos)
      << model->diagnostics;
}

TEST(Decode, WholeRunPipelineHasNoDecoder) {
  auto model = compile(kFlashLayer, /*decode=*/false);
  ASSERT_TRUE(model->jit);
  std::unique_ptr<codegen::Decoder> decoder;
  TensorMap weights =
      codegen::randomWeights(model->jit->pipeline().weights(), 1);
  runtime::Result refused = model->jit->decoder(weights, 0, decoder);
  EXPECT_EQ(refused.status, ATTN_ERROR_ARGUMENT);
  EXPECT_NE(refused.message.find("was not compiled to stream"),
            std::string::npos);
}

} // namespace
} // namespace attnc::e2e
