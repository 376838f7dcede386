//===- ScheduleSpaceE2ETest.cpp - sampled schedules vs the reference ------===//
//
// Part of attnc, a compiler for attention layers.
//
//===----------------------------------------------------------------------===//
//
// Every point of the schedule space (forEachSchedule) is legal by
// construction; this checks that code generation computes the right thing
// with them. For small models of each attention family, each trial gives
// every scheduled op a random point of its space (seeded), compiles,
// and compares with the fp64 reference, on the host target and with the
// CUDA target's points run on the host. Each trial prints its compile and
// run times (ATTNC_SHOW_SCHEDULES=1 also prints the points drawn): some
// legal GPU points take a minute to compile on the host (a small
// local-attention model whose products stage 64-deep panels: 66 s), which
// a tuner must budget; so the CUDA variants run one trial each.
//
//===----------------------------------------------------------------------===//
#include "tests/e2e/E2EUtil.h"

#include "passes/Passes.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <random>

namespace attnc::e2e {
namespace {

using mlir::attn::ScheduleAttr;
using mlir::attn::ScheduleParams;
using mlir::attn::TargetModel;

struct Family {
  const char *name;
  const char *layer; ///< The output's expression over x : f32[b, n, 32].
};

const Family kFamilies[] = {
    {"flash", "flash(x, e = 64, s = 16, chunk = 8, causal = true)"},
    {"gau", "gau(x, e = 64, s = 16, causal = false, max_len = 32)"},
    {"mhsa", "mhsa(x, heads = 2, causal = true)"},
    {"local", "local_attention(x, heads = 2, window = 4, causal = true)"},
};

std::string model(const Family &family) {
  return std::string("model m {\n  dim n : seq\n  dim b : batch\n"
                     "  input x : f32[b, n, 32]\n  output y = ") +
         family.layer + "\n}\n";
}

/// Gives each op that has a space a uniformly drawn point of it.
void drawSchedules(mlir::ModuleOp module, const TargetModel &target,
                   std::mt19937_64 &rng, std::string &chosen) {
  module.walk([&](mlir::Operation *op) {
    std::vector<ScheduleParams> space =
        mlir::attn::enumerateSchedules(op, target);
    if (space.empty())
      return;
    const ScheduleParams &p =
        space[std::uniform_int_distribution<size_t>(0, space.size() - 1)(rng)];
    ScheduleAttr attr = ScheduleAttr::get(op->getContext(), p);
    op->setAttr(ScheduleAttr::getScheduleAttrName(), attr);
    llvm::raw_string_ostream os(chosen);
    os << op->getName() << " " << attr << "\n";
  });
}

class ScheduleSpaceE2ETest
    : public ::testing::TestWithParam<std::tuple<int, bool>> {};

TEST_P(ScheduleSpaceE2ETest, SampledSchedulesMatchTheReference) {
  auto [familyIndex, cuda] = GetParam();
  const Family &family = kFamilies[familyIndex];
  Halide::Target halide = cuda ? cudaScheduleTarget() : Halide::get_host_target();
  std::string error;
  std::optional<TargetModel> target =
      TargetModel::parse(halide.to_string(), error);
  ASSERT_TRUE(target) << error;
  std::mt19937_64 rng(1000 + familyIndex * 2 + cuda);
  // GPU points compile slower on the host (see above): one trial each.
  for (int trial = 0; trial < (cuda ? 1 : 2); ++trial) {
    std::string chosen;
    auto start = std::chrono::steady_clock::now();
    auto compiled = compileAttn(model(family), halide, [&](mlir::ModuleOp m) {
      drawSchedules(m, *target, rng, chosen);
    });
    auto compiledAt = std::chrono::steady_clock::now();
    ASSERT_TRUE(compiled->jit) << compiled->diagnostics << "\n" << chosen;
    codegen::TensorMap weights =
        codegen::randomWeights(compiled->jit->pipeline().weights(), 5);
    for (int64_t n : {1, 13, 40}) {
      codegen::TensorMap inputs =
          randomInputs(*compiled->jit, {{"n", n}, {"b", 2}}, 6);
      codegen::TensorMap got = runJit(*compiled, inputs, weights);
      double relError =
          relativeError(got, runReference(*compiled, inputs, weights));
      EXPECT_LE(relError, 1e-4) << family.name << " trial " << trial
                                << " at n = " << n << " with\n" << chosen;
    }
    auto seconds = [](auto from, auto to) {
      return std::chrono::duration<double>(to - from).count();
    };
    std::printf("%s trial %d: compile %.1f s, run %.1f s\n", family.name,
                trial, seconds(start, compiledAt),
                seconds(compiledAt, std::chrono::steady_clock::now()));
    if (getenv("ATTNC_SHOW_SCHEDULES"))
      std::printf("%s", chosen.c_str());
  }
}

INSTANTIATE_TEST_SUITE_P(
    Families, ScheduleSpaceE2ETest,
    ::testing::Combine(::testing::Range(0, int(std::size(kFamilies))),
                       ::testing::Bool()),
    [](const auto &info) {
      return std::string(kFamilies[std::get<0>(info.param)].name) +
             (std::get<1>(info.param) ? "CudaOnHost" : "Host");
    });

} // namespace
} // namespace attnc::e2e
