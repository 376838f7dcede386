//===- AotTest.cpp - the generated C API of an AOT-compiled model ---------===//
//
// This file tests the library that attnc_add_model() generated from
// examples/flash.attn (examples/app): it computes what the JIT computes on
// the same weights and inputs, and every bad input through the C API (wrong
// shape, n = 0, missing weight, wrong weight shape, corrupt or truncated
// safetensors, null weights, inconsistent runtime dims) gives a status and
// a message, never a crash; a model with 18 runtime dims (Inputs/
// many_dims.attn) binds every one of them; a library built with a tuning
// database runs its tuned schedule and computes what the JIT computes.
//
//===----------------------------------------------------------------------===//
#include "flash_layer.h"
#include "decode_lm.h"
#include "decode_mhsa.h"
#include "many_dims.h"
#include "repeated.h"
#include "tuned_gau.h"
#include "tuned_schedule.h"

#include "codegen/Aot.h"
#include "codegen/Program.h"
#include "runtime/Safetensors.h"
#include "tests/e2e/E2EUtil.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <memory>
#include <sstream>

extern "C" int attnc_headers_compile_as_c(void); // GeneratedHeadersInC.c

namespace attnc::e2e {
namespace {

using codegen::HostTensor;
using codegen::TensorMap;
using ::testing::HasSubstr;
using ::testing::Not;

/// A file of the running test's own (ctest runs the tests in parallel).
std::string tempPath(const std::string &name) {
  const ::testing::TestInfo *test =
      ::testing::UnitTest::GetInstance()->current_test_info();
  return ::testing::TempDir() + "/attnc_aot_" + test->test_suite_name() + "." +
         test->name() + "_" + name;
}

/// Writes `weights` as a safetensors file, optionally leaving one out.
std::string saveWeights(const TensorMap &weights, const std::string &name,
                        const std::string &skip = "") {
  std::vector<runtime::SafetensorsTensorRef> refs;
  for (const auto &[key, t] : weights)
    if (key != skip)
      refs.push_back({key, t.shape, t.data.data()});
  std::string path = tempPath(name);
  runtime::Result result = runtime::writeSafetensors(path, refs);
  EXPECT_TRUE(result.ok()) << result.message;
  return path;
}

/// `weights` saved as a file of the test's own and loaded: the set a
/// library's <m>_weights_bind reads.
struct LoadedWeights {
  LoadedWeights(const TensorMap &weights, const std::string &name) {
    std::string path = saveWeights(weights, name);
    EXPECT_EQ(attn_weights_load(path.c_str(), &set), ATTN_OK)
        << attn_error_message();
  }
  ~LoadedWeights() { attn_weights_free(set); }
  attn_weights *set = nullptr;
};

/// The largest difference between `got` and `want`, relative to the
/// largest magnitude of `want`.
double maxRelativeDifference(const HostTensor &got, const HostTensor &want) {
  double maxDiff = 0, maxRef = 0;
  for (size_t i = 0; i < want.data.size(); ++i) {
    maxDiff = std::max(maxDiff, double(std::abs(got.data[i] - want.data[i])));
    maxRef = std::max(maxRef, double(std::abs(want.data[i])));
  }
  return maxDiff / maxRef;
}

attn_tensor tensorOf(HostTensor &t) {
  attn_tensor out{t.data.data(), int32_t(t.shape.size()), {}};
  for (size_t i = 0; i < t.shape.size(); ++i)
    out.shape[i] = t.shape[i];
  return out;
}

class AotTest : public ::testing::Test {
protected:
  void SetUp() override {
    jit = compileExample("flash.attn", driver::SchedulePolicy::Default);
    ASSERT_TRUE(jit->jit) << jit->diagnostics;
    weights = codegen::randomWeights(jit->jit->pipeline().weights(), 21);
    path = saveWeights(weights, "weights.safetensors");
    ASSERT_EQ(attn_weights_load(path.c_str(), &set), ATTN_OK)
        << attn_error_message();
    ASSERT_EQ(flash_layer_weights_bind(set, &bound), ATTN_OK)
        << attn_error_message();
  }
  void TearDown() override { attn_weights_free(set); }

  std::unique_ptr<CompiledModel> jit;
  TensorMap weights;
  std::string path;
  attn_weights *set = nullptr;
  flash_layer_weights bound;
};

TEST_F(AotTest, GeneratedLibraryMatchesTheJit) {
  TensorMap inputs = randomInputs(*jit->jit, {{"n", 300}, {"b", 2}}, 2);
  HostTensor want = runJit(*jit, inputs, weights).at("y");
  HostTensor x = inputs.at("x"), y(want.shape);
  attn_tensor xt = tensorOf(x), yt = tensorOf(y);
  ASSERT_EQ(flash_layer_run(&bound, &xt, &yt), ATTN_OK) << attn_error_message();
  EXPECT_LE(maxRelativeDifference(y, want), 1e-6);
}

TEST_F(AotTest, WrongInputShapeIsRejected) {
  HostTensor x({2, 10, 256}), y({2, 10, 512});
  attn_tensor xt = tensorOf(x), yt = tensorOf(y);
  EXPECT_EQ(flash_layer_run(&bound, &xt, &yt), ATTN_ERROR_SHAPE);
  EXPECT_THAT(attn_error_message(),
              HasSubstr("input 'x' has shape [2, 10, 256] but the model "
                        "expects [b, n, 512]"));
}

TEST_F(AotTest, ZeroLengthSequenceIsRejected) {
  HostTensor x({1, 1, 512}), y({1, 1, 512});
  attn_tensor xt = tensorOf(x), yt = tensorOf(y);
  xt.shape[1] = 0;
  EXPECT_EQ(flash_layer_run(&bound, &xt, &yt), ATTN_ERROR_SHAPE);
  EXPECT_THAT(attn_error_message(), HasSubstr("input 'x'"));
}

// The JIT's checks give the statuses the generated C API gives for the
// same failures.
TEST_F(AotTest, JitRunFailuresHaveTheCApisStatuses) {
  codegen::JitModel &model = *jit->jit;
  TensorMap outputs;
  HostTensor y({1, 4, 512});
  attn_tensor yt = tensorOf(y);
  // A missing input (NULL in C).
  EXPECT_EQ(model.prepare({}, weights, outputs).status, ATTN_ERROR_ARGUMENT);
  EXPECT_EQ(flash_layer_run(&bound, nullptr, &yt), ATTN_ERROR_ARGUMENT);
  // A wrong shape.
  HostTensor x({1, 4, 256});
  attn_tensor xt = tensorOf(x);
  runtime::Result wrong = model.prepare({{"x", x}}, weights, outputs);
  EXPECT_EQ(wrong.status, ATTN_ERROR_SHAPE);
  EXPECT_THAT(wrong.message, HasSubstr("input 'x' has shape [1, 4, 256]"));
  EXPECT_EQ(flash_layer_run(&bound, &xt, &yt), ATTN_ERROR_SHAPE);
  // A missing weight (attn_weights_get in C: MissingWeightIsNamed).
  TensorMap partial = weights;
  partial.erase("flash_0.uvz.weight");
  runtime::Result missing =
      model.prepare({{"x", HostTensor({1, 4, 512})}}, partial, outputs);
  EXPECT_EQ(missing.status, ATTN_ERROR_MISSING);
  EXPECT_THAT(missing.message, HasSubstr("flash_0.uvz.weight"));
  // Sizes from --dim: a missing dim is an argument error, an input over
  // one buffer's limit out of memory (InputOverOneBufferLimitIsOutOfMemory).
  std::vector<std::vector<int64_t>> shapes;
  const auto &inputs = model.pipeline().inputs();
  EXPECT_EQ(codegen::inputShapes(inputs, {{"b", 1}}, shapes).status,
            ATTN_ERROR_ARGUMENT);
  runtime::Result huge =
      codegen::inputShapes(inputs, {{"b", 1}, {"n", 1 << 21}}, shapes);
  EXPECT_EQ(huge.status, ATTN_ERROR_OUT_OF_MEMORY);
  EXPECT_THAT(huge.message, HasSubstr("input 'x' [1, 2097152, 512] needs"));
}

// A caller's tensor over 2^31 - 1 bytes cannot be one Halide buffer: the
// shape check says so before the kernel runs (issue #9, item 5).
TEST_F(AotTest, InputOverOneBufferLimitIsOutOfMemory) {
  HostTensor x({1, 1, 512}), y({1, 1, 512});
  attn_tensor xt = tensorOf(x), yt = tensorOf(y);
  xt.shape[1] = yt.shape[1] = int64_t(1) << 21; // 4 GiB; never read
  EXPECT_EQ(flash_layer_run(&bound, &xt, &yt), ATTN_ERROR_OUT_OF_MEMORY);
  EXPECT_THAT(attn_error_message(),
              HasSubstr("input 'x' has shape [1, 2097152, 512], 4294967296 "
                        "bytes; a kernel's buffer is limited to 2147483647 "
                        "bytes"));
}

// A valid length whose internal projection buffer (n x 2176 floats) is over
// Halide's limit: the kernel's allocation error is ATTN_ERROR_OUT_OF_MEMORY
// with a message, not a generic runtime failure.
TEST_F(AotTest, InternalBufferOverTheLimitIsOutOfMemory) {
  const int64_t n = 262144; // x and y 512 MiB each; the projection 2.1 GiB
  std::unique_ptr<float[]> xData(new float[n * 512]), yData(new float[n * 512]);
  std::fill(xData.get(), xData.get() + n * 512, 0.5f);
  attn_tensor xt{xData.get(), 3, {1, n, 512}}, yt{yData.get(), 3, {1, n, 512}};
  EXPECT_EQ(flash_layer_run(&bound, &xt, &yt), ATTN_ERROR_OUT_OF_MEMORY);
  EXPECT_THAT(attn_error_message(),
              HasSubstr("flash_layer_run: a buffer of the kernel would exceed "
                        "2^31 - 1 bytes at this size"));
}

TEST_F(AotTest, OutputWithAnotherSequenceLengthIsRejected) {
  HostTensor x({1, 12, 512}), y({1, 13, 512});
  attn_tensor xt = tensorOf(x), yt = tensorOf(y);
  EXPECT_EQ(flash_layer_run(&bound, &xt, &yt), ATTN_ERROR_SHAPE);
  EXPECT_THAT(attn_error_message(), HasSubstr("n = 13"));
}

TEST_F(AotTest, NullWeightsAreRejected) {
  HostTensor x({1, 4, 512}), y({1, 4, 512});
  attn_tensor xt = tensorOf(x), yt = tensorOf(y);
  EXPECT_EQ(flash_layer_run(nullptr, &xt, &yt), ATTN_ERROR_ARGUMENT);
}

// The wrapper packs the weights into the kernel's one buffer (its weight
// arena): a weight pointer left NULL in a struct filled by hand is an
// argument error, not a crash in the copy.
TEST_F(AotTest, NullWeightPointerIsAnArgumentError) {
  HostTensor x({1, 4, 512}), y({1, 4, 512});
  attn_tensor xt = tensorOf(x), yt = tensorOf(y);
  flash_layer_weights hand = bound;
  hand.flash_0_out_weight = nullptr;
  EXPECT_EQ(flash_layer_run(&hand, &xt, &yt), ATTN_ERROR_ARGUMENT);
  EXPECT_THAT(attn_error_message(), HasSubstr("a weight's pointer is NULL"));
}

TEST_F(AotTest, MissingWeightIsNamed) {
  std::string partial = saveWeights(weights, "partial.safetensors",
                                    "flash_0.uvz.weight");
  attn_weights *other = nullptr;
  ASSERT_EQ(attn_weights_load(partial.c_str(), &other), ATTN_OK);
  flash_layer_weights w;
  EXPECT_EQ(flash_layer_weights_bind(other, &w), ATTN_ERROR_MISSING);
  EXPECT_THAT(attn_error_message(), HasSubstr("flash_0.uvz.weight"));
  attn_weights_free(other);
}

TEST_F(AotTest, WeightWithWrongShapeIsNamedWithBothShapes) {
  TensorMap bad = weights;
  bad["flash_0.out.bias"] = HostTensor({511});
  std::string file = saveWeights(bad, "badshape.safetensors");
  attn_weights *other = nullptr;
  ASSERT_EQ(attn_weights_load(file.c_str(), &other), ATTN_OK);
  flash_layer_weights w;
  EXPECT_EQ(flash_layer_weights_bind(other, &w), ATTN_ERROR_SHAPE);
  EXPECT_THAT(attn_error_message(), HasSubstr("flash_0.out.bias"));
  EXPECT_THAT(attn_error_message(), HasSubstr("[511]"));
  EXPECT_THAT(attn_error_message(), HasSubstr("[512]"));
  attn_weights_free(other);
}

TEST_F(AotTest, TruncatedAndCorruptWeightFilesAreRejected) {
  std::ifstream in(path, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), {});
  std::string truncated = tempPath("truncated.safetensors");
  std::ofstream(truncated, std::ios::binary) << bytes.substr(0, bytes.size() / 2);
  attn_weights *other = nullptr;
  EXPECT_EQ(attn_weights_load(truncated.c_str(), &other), ATTN_ERROR_FORMAT);
  EXPECT_THAT(attn_error_message(), HasSubstr("truncated"));

  std::string corrupt = tempPath("corrupt.safetensors");
  std::string broken = bytes;
  broken[10] = '\x01'; // inside the JSON header
  std::ofstream(corrupt, std::ios::binary) << broken;
  EXPECT_EQ(attn_weights_load(corrupt.c_str(), &other), ATTN_ERROR_FORMAT);
  EXPECT_STRNE(attn_error_message(), "");
}

/// tests/e2e/Inputs/repeated.attn (three layers of one configuration),
/// compiled for the JIT.
/// The text of tests/e2e/Inputs/`name`.
std::string readInput(const std::string &name) {
  std::ifstream file(ATTNC_TESTS_E2E_INPUTS "/" + name);
  std::stringstream source;
  source << file.rdbuf();
  return source.str();
}

/// tests/e2e/Inputs/`name` compiled for the JIT with the default schedules.
std::unique_ptr<CompiledModel> compileInput(const std::string &name) {
  return compileAttn(readInput(name), driver::SchedulePolicy::Default);
}

std::unique_ptr<CompiledModel> compileRepeated() {
  return compileInput("repeated.attn");
}

// A model whose three layers share one configuration is a program of one
// layer kernel, called per layer, and a kernel for the final norm; the JIT
// and the library run it alike, and both match the fp64 reference.
TEST(AotRepeatedLayersTest, OneLayerKernelServesEveryLayer) {
  std::unique_ptr<CompiledModel> model = compileRepeated();
  ASSERT_TRUE(model->jit) << model->diagnostics;
  std::vector<codegen::ModelPipeline::Kernel> kernels =
      model->jit->pipeline().kernels();
  ASSERT_EQ(kernels.size(), 2u); // the layer, and the final norm (glue)
  EXPECT_EQ(kernels[0].function, "repeated_layer0");
  EXPECT_THAT(kernels[0].calls,
              ::testing::ElementsAre("stack.0", "stack.1", "stack.2"));
  EXPECT_EQ(kernels[1].function, "repeated_glue0");

  TensorMap weights = codegen::randomWeights(model->jit->pipeline().weights(), 5);
  TensorMap inputs = randomInputs(*model->jit, {{"n", 21}, {"b", 2}}, 6);
  TensorMap got = runJit(*model, inputs, weights);
  EXPECT_LE(relativeError(got, runReference(*model, inputs, weights)), 1e-5);

  LoadedWeights loaded(weights, "repeated.safetensors");
  repeated_weights bound;
  ASSERT_EQ(repeated_weights_bind(loaded.set, &bound), ATTN_OK)
      << attn_error_message();
  HostTensor x = inputs.at("x"), y(got.at("y").shape);
  attn_tensor xt = tensorOf(x), yt = tensorOf(y);
  EXPECT_EQ(repeated_run(&bound, &xt, &yt), ATTN_OK) << attn_error_message();
  const HostTensor &want = got.at("y");
  EXPECT_LE(maxRelativeDifference(y, want), 1e-6);
}

// Every layer after the first writes its result over its input, which no
// later step reads, so a stack holds one activation between layers; the
// first reads the model's input and the final norm writes the model's
// output, so both keep their own buffers.
TEST(AotRepeatedLayersTest, LayersAfterTheFirstWriteOverTheirInput) {
  std::unique_ptr<CompiledModel> model = compileRepeated();
  ASSERT_TRUE(model->jit) << model->diagnostics;
  const codegen::Program *program = model->jit->pipeline().program();
  ASSERT_TRUE(program);
  ASSERT_EQ(program->steps.size(), 4u);
  EXPECT_EQ(program->steps[0].inPlaceArg, -1);
  EXPECT_EQ(program->steps[1].inPlaceArg, 0);
  EXPECT_EQ(program->steps[2].inPlaceArg, 0);
  EXPECT_EQ(program->steps[3].inPlaceArg, -1);

  TensorMap weights = codegen::randomWeights(model->jit->pipeline().weights(), 8);
  TensorMap inputs = randomInputs(*model->jit, {{"n", 40}, {"b", 1}}, 9);
  TensorMap got = runJit(*model, inputs, weights);
  EXPECT_LE(relativeError(got, runReference(*model, inputs, weights)), 1e-5);
}

// Streamed over blocks of rows, each layer kernel carries its chunk states
// from block to block, and a carry's next value is computed after the
// kernel's output: a carry could read an input the output had overwritten,
// so no step writes its result over its input. The streamed stack computes
// what the whole-sequence run computes.
TEST(AotRepeatedLayersTest, StreamedLayersKeepTheirInputs) {
  std::unique_ptr<CompiledModel> whole = compileRepeated();
  ASSERT_TRUE(whole->jit) << whole->diagnostics;
  driver::SessionOptions options;
  options.streamRows = 16; // two of the layers' chunks of 8 rows
  std::unique_ptr<CompiledModel> streamed =
      compileAttn(readInput("repeated.attn"), options);
  ASSERT_TRUE(streamed->jit) << streamed->diagnostics;
  const codegen::Program *program = streamed->jit->pipeline().program();
  ASSERT_TRUE(program);
  ASSERT_EQ(program->steps.size(), 4u);
  for (const codegen::Step &step : program->steps)
    EXPECT_EQ(step.inPlaceArg, -1) << step.label;

  TensorMap weights = codegen::randomWeights(whole->jit->pipeline().weights(), 8);
  TensorMap inputs = randomInputs(*whole->jit, {{"n", 40}, {"b", 2}}, 9);
  TensorMap want = runJit(*whole, inputs, weights);
  TensorMap got = runJit(*streamed, inputs, weights);
  EXPECT_LE(maxRelativeDifference(got.at("y"), want.at("y")), 1e-5);
}

// Incremental decoding in a library (attnc compile --decode): a prefill of
// n rows, then a step per row, gives the rows the library's whole run
// gives, whichever n (blocks of 8 rows: n before, at and across a chunk's
// end); the state's bytes stay the same. `repeated` is a program of one
// layer kernel called 3 times (3 carries), x f32[b, n, 32].
TEST(AotDecodeTest, PrefillThenStepsEqualTheWholeRunOfAProgram) {
  std::unique_ptr<CompiledModel> model = compileRepeated();
  ASSERT_TRUE(model->jit) << model->diagnostics;
  TensorMap weights =
      codegen::randomWeights(model->jit->pipeline().weights(), 15);
  LoadedWeights loaded(weights, "repeated.safetensors");
  repeated_weights bound;
  ASSERT_EQ(repeated_weights_bind(loaded.set, &bound), ATTN_OK)
      << attn_error_message();
  const int64_t total = 29, d = 32;
  HostTensor x = randomInputs(*model->jit, {{"n", total}, {"b", 1}}, 16).at("x");
  HostTensor whole({1, total, d});
  attn_tensor xt = tensorOf(x), wt = tensorOf(whole);
  ASSERT_EQ(repeated_run(&bound, &xt, &wt), ATTN_OK) << attn_error_message();
  int64_t bytes = -1;
  for (int64_t n : {1, 5, 8, 13, 16}) {
    repeated_state *state = nullptr;
    ASSERT_EQ(repeated_state_new(&bound, &state), ATTN_OK)
        << attn_error_message();
    HostTensor got({1, total, d});
    attn_tensor prompt = {x.data.data(), 3, {1, n, d}};
    attn_tensor out = {got.data.data(), 3, {1, n, d}};
    ASSERT_EQ(repeated_prefill(state, &prompt, &out), ATTN_OK)
        << attn_error_message();
    for (int64_t at = n; at < total; ++at)
      ASSERT_EQ(repeated_step(state, x.data.data() + at * d,
                              got.data.data() + at * d),
                ATTN_OK)
          << attn_error_message();
    EXPECT_EQ(repeated_state_length(state), total);
    EXPECT_LE(maxRelativeDifference(got, whole), 1e-5) << "prefill " << n;
    if (bytes < 0)
      bytes = repeated_state_bytes(state);
    EXPECT_EQ(repeated_state_bytes(state), bytes);
    // After a reset, the sequence starts again.
    repeated_state_reset(state);
    EXPECT_EQ(repeated_state_length(state), 0);
    HostTensor first({1, 1, d});
    ASSERT_EQ(repeated_step(state, x.data.data(), first.data.data()), ATTN_OK);
    for (int64_t c = 0; c < d; ++c)
      EXPECT_NEAR(first.data[c], whole.data[c], 1e-5);
    repeated_state_free(state);
  }
  // Per layer: the completed chunks' prefix and the current chunk's
  // partial state [16, 64], each with its next value, and the chunk caches
  // of the current chunk's 8 keys (16 wide) and values (64 wide).
  EXPECT_EQ(bytes, 3 * (2 * 2 * 16 * 64 + 8 * (16 + 64)) * 4);
}

// Token ids in a library: <m>_run takes attn_ids and computes what the JIT
// computes; decoding (a model of one pipeline) equals the whole run; ids
// outside the table are refused before any kernel runs, with the JIT's
// message (the prefill's with the position, the step's with the id).
TEST(AotDecodeTest, TokenIdsRunAndDecodeInALibrary) {
  std::unique_ptr<CompiledModel> model = compileInput("token-lm.attn");
  ASSERT_TRUE(model->jit) << model->diagnostics;
  TensorMap weights =
      codegen::randomWeights(model->jit->pipeline().weights(), 17);
  const int64_t total = 37, vocab = 50;
  TensorMap inputs = randomInputs(*model->jit, {{"n", total}, {"b", 1}}, 18);
  TensorMap want = runJit(*model, inputs, weights);
  LoadedWeights loaded(weights, "token-lm.safetensors");
  decode_lm_weights bound;
  ASSERT_EQ(decode_lm_weights_bind(loaded.set, &bound), ATTN_OK)
      << attn_error_message();
  std::vector<int32_t> ids(static_cast<size_t>(total));
  std::memcpy(ids.data(), inputs.at("ids").data.data(), ids.size() * 4);
  attn_ids idt = {ids.data(), 2, {1, total}};
  HostTensor whole({1, total, vocab});
  attn_tensor wt = tensorOf(whole);
  ASSERT_EQ(decode_lm_run(&bound, &idt, &wt), ATTN_OK) << attn_error_message();
  EXPECT_LE(maxRelativeDifference(whole, want.at("logits")), 1e-6);

  decode_lm_state *state = nullptr;
  ASSERT_EQ(decode_lm_state_new(&bound, &state), ATTN_OK)
      << attn_error_message();
  HostTensor got({1, total, vocab});
  attn_ids prompt = {ids.data(), 2, {1, 21}};
  attn_tensor out = {got.data.data(), 3, {1, 21, vocab}};
  ASSERT_EQ(decode_lm_prefill(state, &prompt, &out), ATTN_OK)
      << attn_error_message();
  for (int64_t at = 21; at < total; ++at)
    ASSERT_EQ(decode_lm_step(state, ids[size_t(at)],
                             got.data.data() + at * vocab),
              ATTN_OK)
        << attn_error_message();
  EXPECT_LE(maxRelativeDifference(got, whole), 1e-5);

  // Refused, and the sequence is as it was.
  std::vector<int32_t> bad = {1, 2, 50};
  attn_ids badIds = {bad.data(), 2, {1, 3}};
  EXPECT_EQ(decode_lm_prefill(state, &badIds, nullptr), ATTN_ERROR_ARGUMENT);
  EXPECT_STREQ(attn_error_message(),
               "token id 50 at [0, 2] of input 'ids' is out of range: the "
               "embedding table has 50 rows (ids 0..49)");
  EXPECT_EQ(decode_lm_step(state, -1, nullptr), ATTN_ERROR_ARGUMENT);
  EXPECT_STREQ(attn_error_message(),
               "decode_lm_step: token id -1 of input 'ids' is out of range: "
               "the embedding table has 50 rows (ids 0..49)");
  EXPECT_EQ(decode_lm_run(&bound, &badIds, &wt), ATTN_ERROR_ARGUMENT);
  EXPECT_EQ(decode_lm_state_length(state), total);
  // A prompt of two sequences, and logits of another length.
  attn_ids two = {ids.data(), 2, {2, 3}};
  EXPECT_EQ(decode_lm_prefill(state, &two, nullptr), ATTN_ERROR_SHAPE);
  EXPECT_STREQ(attn_error_message(),
               "input 'ids' has shape [2, 3] but the model expects [1, n]");
  attn_tensor longer = {got.data.data(), 3, {1, 4, vocab}};
  EXPECT_EQ(decode_lm_prefill(state, &prompt, &longer), ATTN_ERROR_SHAPE);
  EXPECT_THAT(attn_error_message(),
              HasSubstr("output 'logits' has n = 4, but an earlier tensor "
                        "has n = 21"));
  EXPECT_EQ(decode_lm_step(nullptr, 1, nullptr), ATTN_ERROR_ARGUMENT);
  decode_lm_state_free(state);
  decode_lm_state *none = state;
  EXPECT_EQ(decode_lm_state_new(nullptr, &none), ATTN_ERROR_ARGUMENT);
  EXPECT_EQ(none, nullptr);
}

// A library decodes attention over the whole sequence (MHSA) with a
// key/value cache of the capacity its state is made with: prefill then
// steps (each appends its own rows) equal the library's whole run; past
// the capacity, and without one, the state refuses with a message.
TEST(AotDecodeTest, KeyValueCacheDecodesAttentionOverTheWholeSequence) {
  std::unique_ptr<CompiledModel> model = compileInput("mhsa-lm.attn");
  ASSERT_TRUE(model->jit) << model->diagnostics;
  TensorMap weights =
      codegen::randomWeights(model->jit->pipeline().weights(), 19);
  LoadedWeights loaded(weights, "mhsa-lm.safetensors");
  decode_mhsa_weights bound;
  ASSERT_EQ(decode_mhsa_weights_bind(loaded.set, &bound), ATTN_OK)
      << attn_error_message();
  const int64_t total = 75, vocab = 50;
  TensorMap inputs = randomInputs(*model->jit, {{"n", total}, {"b", 1}}, 20);
  std::vector<int32_t> ids(static_cast<size_t>(total));
  std::memcpy(ids.data(), inputs.at("ids").data.data(), ids.size() * 4);
  attn_ids all = {ids.data(), 2, {1, total}};
  HostTensor whole({1, total, vocab});
  attn_tensor wt = tensorOf(whole);
  ASSERT_EQ(decode_mhsa_run(&bound, &all, &wt), ATTN_OK)
      << attn_error_message();
  decode_mhsa_state *state = nullptr;
  EXPECT_EQ(decode_mhsa_state_new(&bound, 0, &state), ATTN_ERROR_ARGUMENT);
  EXPECT_THAT(attn_error_message(), HasSubstr("keeps a key/value cache"));
  for (int64_t n : {1, 30, 64, 70}) {
    ASSERT_EQ(decode_mhsa_state_new(&bound, total, &state), ATTN_OK)
        << attn_error_message();
    HostTensor got({1, total, vocab});
    attn_ids prompt = {ids.data(), 2, {1, n}};
    attn_tensor out = {got.data.data(), 3, {1, n, vocab}};
    ASSERT_EQ(decode_mhsa_prefill(state, &prompt, &out), ATTN_OK)
        << attn_error_message();
    for (int64_t at = n; at < total; ++at)
      ASSERT_EQ(decode_mhsa_step(state, ids[size_t(at)],
                                 got.data.data() + at * vocab),
                ATTN_OK)
          << attn_error_message();
    EXPECT_LE(maxRelativeDifference(got, whole), 1e-5) << "prefill " << n;
    // Two caches of 75 rows of 64.
    EXPECT_EQ(decode_mhsa_state_bytes(state), 2 * 75 * 64 * 4);
    EXPECT_EQ(decode_mhsa_step(state, 1, nullptr), ATTN_ERROR_ARGUMENT);
    EXPECT_THAT(attn_error_message(),
                HasSubstr("the key/value cache holds 75 rows (the decoder's "
                          "capacity); the sequence has 75 and the append "
                          "adds 1"));
    EXPECT_EQ(decode_mhsa_state_length(state), total);
    decode_mhsa_state_free(state);
  }
}

// The generated headers are C99: GeneratedHeadersInC.c includes the
// decoding ones (a program, ids, a key/value cache) and uses their API.
TEST(AotDecodeTest, HeadersCompileAsC) {
  EXPECT_EQ(attnc_headers_compile_as_c(), 1);
}

// The wrapper binds every runtime dim of a model with many of them (its table
// has one entry per runtime dim).
TEST(AotManyDimsTest, ManyRuntimeDimsAreBound) {
  constexpr int kDims = 18;
  std::vector<HostTensor> xs, ys;
  for (int i = 0; i < kDims; ++i) {
    xs.emplace_back(std::vector<int64_t>{i + 1, 4});
    for (size_t e = 0; e < xs.back().data.size(); ++e)
      xs.back().data[e] = float(e % 3) - 1.0f;
    ys.emplace_back(std::vector<int64_t>{i + 1, 4});
  }
  std::vector<attn_tensor> x, y;
  for (int i = 0; i < kDims; ++i) {
    x.push_back(tensorOf(xs[i]));
    y.push_back(tensorOf(ys[i]));
  }
  many_dims_weights w{};
  auto run = [&] {
    return many_dims_run(&w, &x[0], &x[1], &x[2], &x[3], &x[4], &x[5], &x[6],
                         &x[7], &x[8], &x[9], &x[10], &x[11], &x[12], &x[13],
                         &x[14], &x[15], &x[16], &x[17], &y[0], &y[1], &y[2],
                         &y[3], &y[4], &y[5], &y[6], &y[7], &y[8], &y[9],
                         &y[10], &y[11], &y[12], &y[13], &y[14], &y[15],
                         &y[16], &y[17]);
  };
  ASSERT_EQ(run(), ATTN_OK) << attn_error_message();
  // The table is as large as the model's runtime dims (writing past a
  // smaller one need not fail visibly in a Release build).
  std::string source = "model many_dims {\n  dim d0 : seq\n";
  for (int i = 1; i < kDims; ++i)
    source += "  dim d" + std::to_string(i) + " : batch\n";
  for (int i = 0; i < kDims; ++i)
    source += "  input x" + std::to_string(i) + " : f32[d" +
              std::to_string(i) + ", 4]\n  output y" + std::to_string(i) +
              " = relu(x" + std::to_string(i) + ")\n";
  source += "}\n";
  std::unique_ptr<CompiledModel> model =
      compileAttn(source, driver::SchedulePolicy::Default);
  ASSERT_TRUE(model->jit) << model->diagnostics;
  EXPECT_THAT(codegen::generateWrapperHeader({{&model->jit->pipeline(), {}}},
                                            nullptr, "many"),
              HasSubstr("const char *boundNames[18]; int64_t boundSizes[18];"));
  for (int i = 0; i < kDims; ++i)
    for (size_t e = 0; e < xs[i].data.size(); ++e)
      ASSERT_EQ(ys[i].data[e], std::max(xs[i].data[e], 0.0f))
          << "y" << i << "[" << e << "]";
  // The last dim is checked like the first.
  HostTensor longer({kDims + 1, 4});
  y[kDims - 1] = tensorOf(longer);
  EXPECT_EQ(run(), ATTN_ERROR_SHAPE);
  EXPECT_THAT(attn_error_message(), HasSubstr("d17 = 19"));
}

// attnc_add_model(tuned_gau ... TUNING_DB db): make-tuning-db recorded a
// faster schedule for the first dense kernel than attn-tile's at n = 64,
// and the default as the fastest at n = 1024. The library holds a variant
// for each size; a run near n = 64 takes the tuned schedule, one near
// n = 1024 the default, and each computes what the JIT compiled with the
// database for those sizes computes.
TEST(AotTunedTest, LibraryRunsTheScheduleTunedForTheNearestSize) {
  std::ifstream headerFile(ATTNC_TUNED_HEADER);
  std::stringstream header;
  header << headerFile.rdbuf();
  EXPECT_THAT(header.str(), HasSubstr("Variants: 2"));
  EXPECT_THAT(header.str(),
              HasSubstr("variant 0: b=1 n=64 (1 of 5 scheduled ops take "
                        "tuned schedules from tuning database"));
  EXPECT_THAT(header.str(),
              HasSubstr("variant 1: b=1 n=1024 (0 of 5 scheduled ops take "
                        "tuned schedules from tuning database"));

  struct Case {
    int64_t n;       // the run's length
    int64_t tunedN;  // the nearest tuned length
    int variant;     // the library's variant for it
    bool tuned;      // whether its schedule is the tuned one
  };
  for (const Case &c : {Case{77, 64, 0, true}, Case{700, 1024, 1, false}}) {
    SCOPED_TRACE("n = " + std::to_string(c.n));
    const char *names[] = {"n", "b"};
    int64_t sizes[] = {c.n, 2};
    EXPECT_EQ(tuned_gau_variant(names, sizes, 2), c.variant);

    std::string diagnostics;
    llvm::raw_string_ostream os(diagnostics);
    driver::SessionOptions options;
    options.tuningDb = ATTNC_TUNED_DB;
    options.tuningDims = {{"b", 1}, {"n", c.tunedN}};
    driver::Session session(options, os);
    ASSERT_TRUE(session.loadFile(ATTNC_TESTS_E2E_INPUTS "/tiny-gau.attn"));
    ASSERT_TRUE(session.runTo(driver::Stage::Scheduled)) << os.str();
    std::string scheduled;
    llvm::raw_string_ostream ir(scheduled);
    session.module().print(ir);
    if (c.tuned)
      EXPECT_THAT(ir.str(), HasSubstr(ATTNC_TUNED_SCHEDULE));
    else
      EXPECT_THAT(ir.str(), Not(HasSubstr(ATTNC_TUNED_SCHEDULE)));
    std::unique_ptr<codegen::JitModel> jit = session.jit();
    ASSERT_TRUE(jit) << os.str();

    TensorMap weights = codegen::randomWeights(jit->pipeline().weights(), 31);
    std::vector<std::vector<int64_t>> shapes;
    ASSERT_TRUE(codegen::inputShapes(jit->pipeline().inputs(),
                                     {{"n", c.n}, {"b", 2}}, shapes)
                    .ok());
    TensorMap inputs{{"x", codegen::randomTensor(shapes[0], 32, "x")}};
    TensorMap outputs;
    runtime::Result ran = jit->run(inputs, weights, outputs);
    ASSERT_TRUE(ran.ok()) << ran.message;

    std::string path = saveWeights(weights, "tuned.safetensors");
    attn_weights *set = nullptr;
    ASSERT_EQ(attn_weights_load(path.c_str(), &set), ATTN_OK)
        << attn_error_message();
    tuned_gau_weights bound;
    ASSERT_EQ(tuned_gau_weights_bind(set, &bound), ATTN_OK)
        << attn_error_message();
    HostTensor x = inputs.at("x"), y(outputs.at("y").shape);
    attn_tensor xt = tensorOf(x), yt = tensorOf(y);
    EXPECT_EQ(tuned_gau_run(&bound, &xt, &yt), ATTN_OK) << attn_error_message();
    attn_weights_free(set);
    EXPECT_LE(maxRelativeDifference(y, outputs.at("y")), 1e-5);
  }
}

} // namespace
} // namespace attnc::e2e
