//===- DecodeTest.cpp - incremental decoding equals the whole run ---------===//
//
// Issue 15: a causal model decoded incrementally (codegen/Decode.h), a
// prompt of n rows prefilled and then k rows one step at a time, gives at
// every step the outputs the whole-sequence run gives at that position,
// within 1e-5 relative, for prompts and totals on both sides of chunk
// boundaries, for one pipeline and for a program of repeated layer
// kernels; its state's bytes do not grow with the context. Errors: a
// model that cannot be decoded is refused at compile time, a bad token id
// in a step leaves the sequence as it was.
//
//===----------------------------------------------------------------------===//
#include "tests/e2e/E2EUtil.h"

#include "codegen/Decode.h"

#include <gtest/gtest.h>

#include <cmath>

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

/// Prefill n rows, then k steps; each step's outputs against the whole
/// run's row at that position.
void expectDecodingMatchesWholeRun(const char *source,
                                   const std::string &inputName,
                                   const std::string &outputName,
                                   size_t rowAxis, bool program = false) {
  auto whole = compile(source, /*decode=*/false);
  auto decoding = compile(source, /*decode=*/true);
  ASSERT_TRUE(whole->jit) << whole->diagnostics;
  ASSERT_TRUE(decoding->jit) << decoding->diagnostics;
  EXPECT_EQ(!decoding->jit->pipeline().kernels().empty(), program);
  TensorMap weights =
      codegen::randomWeights(whole->jit->pipeline().weights(), 5);
  constexpr int64_t kTotal = 40; // five chunks of 8
  TensorMap inputs =
      randomInputs(*whole->jit, {{"n", kTotal}, {"b", 1}}, /*seed=*/9);
  TensorMap outputs = runJit(*whole, inputs, weights);
  const HostTensor &input = inputs.at(inputName);
  const HostTensor &want = outputs.at(outputName);
  std::unique_ptr<codegen::Decoder> decoder;
  runtime::Result made = decoding->jit->decoder(weights, decoder);
  ASSERT_TRUE(made.ok()) << made.message;
  EXPECT_EQ(decoder->blockRows(), 8);
  int64_t stateBytes = -1;
  for (int64_t prompt : {1, 5, 8, 13, 16, 31}) {
    SCOPED_TRACE("prompt of " + std::to_string(prompt) + " rows");
    decoder->reset();
    HostTensor prefilled =
        append(*decoder, input, rowAxis, want.shape, 0, prompt);
    EXPECT_LE(rowError(prefilled, want, 0), 1e-5);
    for (int64_t at = prompt; at < std::min(prompt + 12, kTotal); ++at) {
      HostTensor step = append(*decoder, input, rowAxis, want.shape, at, 1);
      EXPECT_LE(rowError(step, want, at), 1e-5) << "step at row " << at;
      EXPECT_EQ(decoder->length(), at + 1);
      if (stateBytes < 0)
        stateBytes = decoder->stateBytes();
      EXPECT_EQ(decoder->stateBytes(), stateBytes); // constant in length
    }
  }
}

TEST(Decode, FlashLayerStepsEqualTheWholeRun) {
  expectDecodingMatchesWholeRun(kFlashLayer, "x", "y", /*rowAxis=*/1);
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
  ASSERT_TRUE(decoding->jit->decoder(weights, decoder).ok());
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
  ASSERT_TRUE(decoding->jit->decoder(weights, decoder).ok());
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

TEST(Decode, ModelThatAttendsOverTheWholeSequenceIsRefused) {
  auto model = compile(R"(model g {
  dim d = 16
  dim n : seq
  dim b : batch
  input x : f32[b, n, d]
  output y = gau(x, e = 32, s = 8, causal = true)
}
)",
                       /*decode=*/true);
  EXPECT_FALSE(model->jit);
  EXPECT_NE(model->diagnostics.find(
                "'attn.attention' here: it attends over the whole sequence"),
            std::string::npos)
      << model->diagnostics;
}

TEST(Decode, WholeRunPipelineHasNoDecoder) {
  auto model = compile(kFlashLayer, /*decode=*/false);
  ASSERT_TRUE(model->jit);
  std::unique_ptr<codegen::Decoder> decoder;
  TensorMap weights =
      codegen::randomWeights(model->jit->pipeline().weights(), 1);
  runtime::Result refused = model->jit->decoder(weights, decoder);
  EXPECT_EQ(refused.status, ATTN_ERROR_ARGUMENT);
  EXPECT_NE(refused.message.find("was not compiled to stream"),
            std::string::npos);
}

} // namespace
} // namespace attnc::e2e
