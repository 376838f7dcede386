//===- AutoscheduleE2ETest.cpp - Halide's autoschedulers vs the reference -===//
//
// This file checks that a model scheduled by each of Halide 14's
// autoschedulers (`attnc bench --schedule mullapudi2016|li2018|adams2019`,
// codegen/Autoschedule.h) computes what the fp64 reference does, for the
// GAU, FLASH and MHSA templates and a stack of layer kernels, and that a
// runtime dim without a value is an error that names it. Adams2019 searches
// with a beam of 1 here (HL_BEAM_SIZE, its greedy mode; its default beam
// search takes minutes on a layer) and only on the models where its
// schedules compute the right thing: on non-causal FLASH and on a stack of
// FLASH layers its schedules computed wrong outputs (greedy or beam search
// alike), and its greedy ones now fail to compile in Halide; `attnc
// run|bench --schedule adams2019` reports either as an error
// (tests/e2e/cli-autoschedule.test; docs/tuning.md).
//
//===----------------------------------------------------------------------===//
#include "tests/e2e/E2EUtil.h"

#include <gtest/gtest.h>

#include <cstdlib>

namespace attnc::e2e {
namespace {

struct Case {
  const char *name;
  std::string body;
};

const std::vector<Case> &cases() {
  static const std::vector<Case> all = {
      {"GauCausal", "gau(x, e = 64, s = 16, max_len = 64, causal = true)"},
      {"FlashCausal", "flash(x, e = 64, s = 16, chunk = 16, causal = true)"},
      {"FlashBidirectional", "flash(x, e = 64, s = 16, chunk = 16)"},
      {"MhsaCausal", "mhsa(x, heads = 2, causal = true)"},
      {"RepeatedFlash",
       "repeat 2 flash(x, e = 64, s = 16, chunk = 8, causal = true) as stack"},
  };
  return all;
}

std::string modelOf(const Case &c) {
  return "model t {\n  dim n : seq\n  dim b : batch\n"
         "  input x : f32[b, n, 32]\n  output y = " +
         c.body + "\n}\n";
}

driver::SessionOptions autoscheduled(const std::string &autoscheduler,
                                     std::map<std::string, int64_t> dims) {
  driver::SessionOptions options;
  options.schedule = driver::SchedulePolicy::Naive;
  options.autoscheduler = autoscheduler;
  options.estimates = std::move(dims);
  options.threads = 2;
  options.cache.enabled = false;
  return options;
}

class AutoscheduledTemplate
    : public ::testing::TestWithParam<std::tuple<const char *, Case>> {
protected:
  static void SetUpTestSuite() {
    setenv("HL_BEAM_SIZE", "1", 1);
    // Adams2019 unrolls loops whose extent is not constant unless told
    // that it may fail to (Halide 14's own switch).
    setenv("HL_PERMIT_FAILED_UNROLL", "1", 1);
  }
};

TEST_P(AutoscheduledTemplate, MatchesReference) {
  auto [autoscheduler, c] = GetParam();
  // n not a multiple of the chunk, and a batch of two.
  std::map<std::string, int64_t> dims = {{"n", 40}, {"b", 2}};
  auto model = compileAttn(modelOf(c), autoscheduled(autoscheduler, dims));
  ASSERT_TRUE(model->jit) << model->diagnostics;
  codegen::TensorMap weights =
      codegen::randomWeights(model->jit->pipeline().weights(), 7);
  codegen::TensorMap inputs = randomInputs(*model->jit, dims, 11);
  codegen::TensorMap got = runJit(*model, inputs, weights);
  EXPECT_LE(relativeError(got, runReference(*model, inputs, weights)), 1e-4)
      << autoscheduler << " on " << c.name;
}

std::string caseName(
    const ::testing::TestParamInfo<std::tuple<const char *, Case>> &info) {
  return std::string(std::get<0>(info.param)) + "_" +
         std::get<1>(info.param).name;
}

INSTANTIATE_TEST_SUITE_P(
    Autoschedulers, AutoscheduledTemplate,
    ::testing::Combine(::testing::Values("Mullapudi2016", "Li2018"),
                       ::testing::ValuesIn(cases())),
    caseName);

INSTANTIATE_TEST_SUITE_P(Adams2019, AutoscheduledTemplate,
                         ::testing::Combine(::testing::Values("Adams2019"),
                                            ::testing::Values(cases()[0],
                                                              cases()[1],
                                                              cases()[3])),
                         caseName);

TEST(Autoschedule, RuntimeDimWithoutValueIsAnError) {
  auto model = compileAttn(modelOf(cases()[0]),
                           autoscheduled("Mullapudi2016", {{"b", 1}}));
  EXPECT_FALSE(model->jit);
  EXPECT_NE(model->diagnostics.find(
                "the autoscheduler needs the run's sizes: input 'x' has "
                "runtime dim 'n'; give its size with --dim n=<size>"),
            std::string::npos)
      << model->diagnostics;
}

} // namespace
} // namespace attnc::e2e
