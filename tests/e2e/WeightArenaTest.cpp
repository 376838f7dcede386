//===- WeightArenaTest.cpp - a kernel's weights in one buffer -------------===//
//
// On a CPU a kernel reads all its weights from one buffer, its weight arena
// (codegen/Codegen.h, WeightArena): each weight at an aligned offset, packed
// for each call, or once into a WeightPack that later runs reuse. These
// tests check the layout, that packed and per-call runs compute the same,
// that a run packing per call sees weights changed in place, that weights
// of any strides are packed dense, and that weights that do not fit the
// layout are an error, never a read past the arena.
//
//===----------------------------------------------------------------------===//
#include "E2EUtil.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <sstream>

namespace attnc {
namespace {

using codegen::TensorMap;
using codegen::WeightArena;

TensorMap flashInputs(const codegen::JitModel &jit) {
  return e2e::randomInputs(jit, {{"n", 300}, {"b", 2}}, 7);
}

std::unique_ptr<e2e::CompiledModel> compileFlash() {
  return e2e::compileExample("flash.attn", driver::SchedulePolicy::Default);
}

TEST(WeightArenaTest, FlashLayerReadsItsWeightsFromOneBuffer) {
  auto model = compileFlash();
  ASSERT_TRUE(model->jit) << model->diagnostics;
  const codegen::ModelPipeline &pipeline = model->jit->pipeline();
  const WeightArena &arena = pipeline.weightArena();
  ASSERT_TRUE(arena.used());
  ASSERT_EQ(arena.offsets.size(), pipeline.weights().size());
  // Aligned, in order, not overlapping, and the arena holds them all.
  int64_t end = 0;
  for (size_t i = 0; i < arena.offsets.size(); ++i) {
    EXPECT_EQ(arena.offsets[i] % WeightArena::kAlign, 0);
    EXPECT_GE(arena.offsets[i], end);
    end = arena.offsets[i] + pipeline.weights()[i].numElements();
  }
  EXPECT_EQ(arena.elements, end);
}

TEST(WeightArenaTest, PackedRunsMatchRunsThatPackEachCall) {
  auto model = compileFlash();
  ASSERT_TRUE(model->jit) << model->diagnostics;
  codegen::JitModel &jit = *model->jit;
  TensorMap weights = codegen::randomWeights(jit.pipeline().weights(), 3);
  TensorMap inputs = flashInputs(jit), each, packed;
  ASSERT_TRUE(jit.run(inputs, weights, each).ok());
  codegen::WeightPack pack;
  ASSERT_TRUE(jit.packWeights(weights, pack).ok());
  ASSERT_TRUE(jit.prepare(inputs, weights, packed).ok());
  for (int run = 0; run < 2; ++run) {
    runtime::Result ran = jit.runPrepared(inputs, weights, packed, &pack);
    ASSERT_TRUE(ran.ok()) << ran.message;
    EXPECT_EQ(packed.at("y").data, each.at("y").data) << "run " << run;
  }
}

// A program (flash_lm: its glue's final norm has an arena, its layers'
// weights are arguments) and a streamed sum over the sequence (non-causal
// FLASH in two sweeps, whose totals kernel reads the kernel's arena): a run
// given a pack, one that packs per call or per sequence, and the same model
// unstreamed compute the same.
TEST(WeightArenaTest, ProgramsAndStreamedRunsMatchWithAndWithoutAPack) {
  for (auto [file, rows] :
       {std::pair{"flash_lm.attn", 0}, std::pair{"flash_bidir.attn", 256}}) {
    SCOPED_TRACE(file);
    std::ifstream in(std::string(ATTNC_EXAMPLES_DIR) + "/" + file);
    std::stringstream source;
    source << in.rdbuf();
    driver::SessionOptions options;
    options.streamRows = rows;
    auto model = e2e::compileAttn(source.str(), options);
    ASSERT_TRUE(model->jit) << model->diagnostics;
    codegen::JitModel &jit = *model->jit;
    TensorMap weights = codegen::randomWeights(jit.pipeline().weights(), 5);
    TensorMap inputs = e2e::randomInputs(jit, {{"n", 512}, {"b", 1}}, 9);
    TensorMap each, packed;
    ASSERT_TRUE(jit.run(inputs, weights, each).ok());
    codegen::WeightPack pack;
    ASSERT_TRUE(jit.packWeights(weights, pack).ok());
    EXPECT_FALSE(pack.arenas.empty());
    ASSERT_TRUE(jit.prepare(inputs, weights, packed).ok());
    runtime::Result ran = jit.runPrepared(inputs, weights, packed, &pack);
    ASSERT_TRUE(ran.ok()) << ran.message;
    EXPECT_EQ(packed.at("y").data, each.at("y").data);
    if (rows == 0)
      continue;
    auto whole = e2e::compileAttn(source.str(), driver::SessionOptions());
    ASSERT_TRUE(whole->jit) << whole->diagnostics;
    TensorMap unstreamed = e2e::runJit(*whole, inputs, weights);
    const std::vector<float> &a = unstreamed.at("y").data,
                             &b = each.at("y").data;
    ASSERT_EQ(a.size(), b.size());
    double diff = 0, scale = 0;
    for (size_t i = 0; i < a.size(); ++i) {
      diff = std::max(diff, double(std::abs(a[i] - b[i])));
      scale = std::max(scale, double(std::abs(a[i])));
    }
    EXPECT_LE(diff, 1e-4 * scale);
  }
}

TEST(WeightArenaTest, RunsWithoutAPackSeeWeightsChangedInPlace) {
  auto model = compileFlash();
  ASSERT_TRUE(model->jit) << model->diagnostics;
  codegen::JitModel &jit = *model->jit;
  TensorMap weights = codegen::randomWeights(jit.pipeline().weights(), 3);
  TensorMap inputs = flashInputs(jit), before, after, fresh;
  ASSERT_TRUE(jit.run(inputs, weights, before).ok());
  // The output projection's bias, changed where it lies.
  for (auto &[name, tensor] : weights)
    if (name.find("out.bias") != std::string::npos)
      for (float &value : tensor.data)
        value += 1.0f;
  ASSERT_TRUE(jit.run(inputs, weights, after).ok());
  TensorMap copied = weights; // new memory, the same values
  ASSERT_TRUE(jit.run(inputs, copied, fresh).ok());
  EXPECT_NE(after.at("y").data, before.at("y").data);
  EXPECT_EQ(after.at("y").data, fresh.at("y").data);
}

TEST(WeightArenaTest, WeightsOfAnyStridesArePackedDense) {
  WeightArena arena;
  arena.add({2, 3});
  arena.add({5}); // at 16
  ASSERT_EQ(arena.offsets[1], WeightArena::kAlign);
  ASSERT_EQ(arena.elements, WeightArena::kAlign + 5);
  // [2, 3] (C order: 0 1 2 / 3 4 5) stored column by column.
  float columns[6] = {0, 3, 1, 4, 2, 5};
  halide_dimension_t dims[2] = {{0, 3, 2, 0}, {0, 2, 1, 0}};
  Halide::Buffer<float> strided(columns, 2, dims);
  float line[5] = {10, 11, 12, 13, 14};
  std::vector<float> into(size_t(arena.elements), -1.0f);
  ASSERT_TRUE(codegen::packWeightArena(
      arena, {strided, Halide::Buffer<float>(line, 5)}, into.data()));
  for (int i = 0; i < 6; ++i)
    EXPECT_EQ(into[size_t(i)], float(i)) << i;
  for (int i = 0; i < 5; ++i)
    EXPECT_EQ(into[size_t(16 + i)], line[i]) << i;
}

TEST(WeightArenaTest, WeightsThatDoNotFitTheLayoutAreAnError) {
  WeightArena arena;
  arena.add({4});
  arena.add({2, 2});
  std::vector<float> into(size_t(arena.elements), -1.0f);
  float data[40] = {};
  Halide::Buffer<float> four(data, 4), five(data, 5), three(data, 3),
      square(data, 2, 2), line(data, 4);
  // Larger or smaller than its place (the padding after it included), one
  // weight too few, or the right count in another shape: nothing is read.
  EXPECT_FALSE(codegen::packWeightArena(arena, {five, square}, into.data()));
  EXPECT_FALSE(codegen::packWeightArena(arena, {three, square}, into.data()));
  EXPECT_FALSE(codegen::packWeightArena(arena, {four}, into.data()));
  EXPECT_FALSE(codegen::packWeightArena(arena, {four, line}, into.data()));
  for (float value : into)
    EXPECT_EQ(value, -1.0f);
  EXPECT_TRUE(codegen::packWeightArena(arena, {four, square}, into.data()));

  auto model = compileFlash();
  ASSERT_TRUE(model->jit) << model->diagnostics;
  codegen::ModelPipeline &pipeline = model->jit->pipeline();
  std::vector<Halide::Buffer<float>> weights;
  for (size_t i = 0; i + 1 < pipeline.weights().size(); ++i)
    weights.push_back(Halide::Buffer<float>(4));
  codegen::WeightPack pack;
  runtime::Result packed = pipeline.packWeights(weights, pack);
  EXPECT_EQ(packed.status, ATTN_ERROR_SHAPE);
  EXPECT_NE(packed.message.find("do not fit its weight arena"),
            std::string::npos)
      << packed.message;
}

} // namespace
} // namespace attnc
