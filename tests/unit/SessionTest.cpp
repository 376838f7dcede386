//===- SessionTest.cpp - the compilation session --------------------------===//
//
// Part of attnc, a compiler for attention layers.
//
//===----------------------------------------------------------------------===//
//
// Tests of driver::Session, the one code path that compiles a model: the
// stages run in order and each leaves the IR it names, the schedule policy
// and the target are parsed once and reach the passes and codegen, and each
// way a compilation fails is reported.
//
//===----------------------------------------------------------------------===//

#include "codegen/Codegen.h"
#include "driver/Session.h"

#include "dsl/IR/AttnOps.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

using namespace attnc::driver;
using ::testing::HasSubstr;

namespace {

const char *kGau = R"(model small_gau {
  dim d = 16
  dim n : seq
  input  x : f32[n, d]
  output y : f32[n, d]
  y = gau(x, e = 32, s = 8, causal = true, max_len = 64)
}
)";

const char *kTwoModels = R"(model first {
  dim n : seq
  input  x : f32[n, 8]
  output y : f32[n, 8]
  y = gelu(x)
}
model second {
  dim n : seq
  input  x : f32[n, 8]
  output y : f32[n, 8]
  y = relu(x)
}
)";

/// How many ops of `module` are named `name`, and how many carry a schedule.
std::pair<int, int> count(mlir::ModuleOp module, llvm::StringRef name) {
  int ops = 0, scheduled = 0;
  module.walk([&](mlir::Operation *op) {
    ops += op->getName().getStringRef() == name;
    scheduled += bool(mlir::attn::ScheduleAttr::lookup(op));
  });
  return {ops, scheduled};
}

TEST(SessionTest, StagesRunInOrderAndEachLeavesItsIR) {
  std::string diagnostics;
  llvm::raw_string_ostream os(diagnostics);
  Session session({}, os);
  EXPECT_EQ(session.stage(), Stage::Empty);
  ASSERT_TRUE(session.loadSource(kGau, "gau.attn")) << diagnostics;
  EXPECT_EQ(session.stage(), Stage::Imported);
  EXPECT_EQ(count(session.module(), "attn.gau").first, 1);

  ASSERT_TRUE(session.runTo(Stage::Primitives)) << diagnostics;
  EXPECT_EQ(count(session.module(), "attn.gau").first, 0);
  EXPECT_GT(count(session.module(), "attn.dense").first, 0);
  EXPECT_EQ(count(session.module(), "attn.dense").second, 0);

  ASSERT_TRUE(session.runTo(Stage::Scheduled)) << diagnostics;
  EXPECT_GT(count(session.module(), "attn.dense").second, 0);
  // Asking for a stage already passed does nothing.
  ASSERT_TRUE(session.runTo(Stage::Primitives));
  EXPECT_EQ(session.stage(), Stage::Scheduled);

  ASSERT_TRUE(session.runTo(Stage::Pipeline)) << diagnostics;
  ASSERT_EQ(session.pipeline().inputs().size(), 1u);
  EXPECT_EQ(session.pipeline().inputs()[0].name, "x");
  // The layer-level copy keeps the template op for FLOPs and the reference.
  ASSERT_TRUE(session.layerModel());
  EXPECT_EQ(session.layerModel().getSymName(), "small_gau");
  int layerOps = 0;
  session.layerModel().walk([&](mlir::attn::GauOp) { ++layerOps; });
  EXPECT_EQ(layerOps, 1);
  EXPECT_TRUE(diagnostics.empty()) << diagnostics;
}

TEST(SessionTest, NaivePolicyGivesEveryComputeOpTheNaiveScheduleAndFusesNothing) {
  std::string diagnostics;
  llvm::raw_string_ostream os(diagnostics);
  Session session({"", "host", SchedulePolicy::Naive}, os);
  ASSERT_TRUE(session.loadSource(kGau, "gau.attn"));
  ASSERT_TRUE(session.runTo(Stage::Scheduled)) << diagnostics;
  int compute = 0, naive = 0, kernels = 0;
  session.module().walk([&](mlir::Operation *op) {
    kernels += mlir::isa<mlir::attn::KernelOp>(op);
    if (!mlir::attn::needsSchedule(op))
      return;
    ++compute;
    auto schedule = mlir::attn::ScheduleAttr::lookup(op);
    naive += schedule && schedule.getStrategy() == mlir::attn::Strategy::naive;
  });
  EXPECT_GT(compute, 5);
  EXPECT_EQ(naive, compute);
  EXPECT_EQ(kernels, 0);
  // The stage that copies the output out is naive too.
  auto model = *session.module().getOps<mlir::func::FuncOp>().begin();
  auto output = model.getResultAttrOfType<mlir::attn::ScheduleAttr>(
      0, mlir::attn::ScheduleAttr::getScheduleAttrName());
  ASSERT_TRUE(output);
  EXPECT_EQ(output.getStrategy(), mlir::attn::Strategy::naive);
  ASSERT_TRUE(session.runTo(Stage::Pipeline)) << diagnostics;
}

TEST(SessionTest, TheTargetIsParsedOnceAndReachesThePassesAndCodegen) {
  std::string diagnostics;
  llvm::raw_string_ostream os(diagnostics);
  Session session({"", "host-cuda-cuda_capability_80"}, os);
  ASSERT_TRUE(session.loadSource(kGau, "gau.attn"));
  EXPECT_TRUE(session.target().isGpu());
  EXPECT_TRUE(session.codegenOptions().gpu);
  ASSERT_TRUE(session.runTo(Stage::Scheduled)) << diagnostics;
  bool onGpu = false;
  session.module().walk([&](mlir::attn::DenseOp op) {
    onGpu = onGpu || mlir::attn::ScheduleAttr::lookup(op).isOnGpu();
  });
  EXPECT_TRUE(onGpu);
}

TEST(SessionTest, AnUnknownTargetIsAnError) {
  std::string diagnostics;
  llvm::raw_string_ostream os(diagnostics);
  Session session({"", "x86-64-linux-nosuchfeature"}, os);
  EXPECT_FALSE(session.loadSource(kGau, "gau.attn"));
  EXPECT_THAT(diagnostics,
              HasSubstr("error: unknown target 'x86-64-linux-nosuchfeature'"));
  EXPECT_FALSE(session.runTo(Stage::Primitives));
}

TEST(SessionTest, SchedulePoliciesAreParsedByName) {
  EXPECT_EQ(parseSchedulePolicy("default"), SchedulePolicy::Default);
  EXPECT_EQ(parseSchedulePolicy("naive"), SchedulePolicy::Naive);
  EXPECT_FALSE(parseSchedulePolicy("fast"));
}

TEST(SessionTest, AModelIsChosenByNameOrIsTheOnlyOne) {
  for (const char *name : {"first", "second"}) {
    std::string diagnostics;
    llvm::raw_string_ostream os(diagnostics);
    Session session({name}, os);
    ASSERT_TRUE(session.loadSource(kTwoModels, "two.attn"));
    ASSERT_TRUE(session.runTo(Stage::Pipeline)) << diagnostics;
    EXPECT_EQ(session.model().getSymName(), name);
    EXPECT_EQ(session.layerModel().getSymName(), name);
  }
  std::string diagnostics;
  llvm::raw_string_ostream os(diagnostics);
  Session ambiguous({}, os);
  ASSERT_TRUE(ambiguous.loadSource(kTwoModels, "two.attn"));
  // Every model is lowered and scheduled; only the pipeline needs one.
  EXPECT_TRUE(ambiguous.runTo(Stage::Scheduled));
  EXPECT_FALSE(ambiguous.runTo(Stage::Pipeline));
  EXPECT_THAT(diagnostics, HasSubstr("the file defines 2 models (first, "
                                     "second); choose one with --model"));
  diagnostics.clear();
  Session missing({"third"}, os);
  ASSERT_TRUE(missing.loadSource(kTwoModels, "two.attn"));
  EXPECT_FALSE(missing.runTo(Stage::Pipeline));
  EXPECT_THAT(diagnostics, HasSubstr("no model named 'third'"));
}

TEST(SessionTest, FrontEndErrorsShowTheSourceLine) {
  std::string diagnostics;
  llvm::raw_string_ostream os(diagnostics);
  Session session({}, os);
  EXPECT_FALSE(session.loadSource("model m {\n  input x : f32[n, 8]\n}\n",
                                  "bad.attn"));
  EXPECT_THAT(diagnostics, HasSubstr("bad.attn:2:"));
  EXPECT_THAT(diagnostics, HasSubstr("^"));
  EXPECT_EQ(session.stage(), Stage::Empty);
  EXPECT_FALSE(session.runTo(Stage::Primitives));
  EXPECT_THAT(diagnostics, HasSubstr("nothing to compile"));
}

TEST(SessionTest, IRTextIsCompiledLikeASource) {
  std::string diagnostics;
  llvm::raw_string_ostream os(diagnostics);
  Session session({}, os);
  const char *ir = R"mlir(
func.func @m(%x: tensor<?x8xf32> {attn.name = "x", attn.dims = ["n", ""]})
    -> (tensor<?x8xf32> {attn.name = "y", attn.dims = ["n", ""]})
    attributes {attn.model, attn.runtime_dims = {n = "seq"}} {
  %0 = attn.relu %x : tensor<?x8xf32>
  return %0 : tensor<?x8xf32>
}
)mlir";
  ASSERT_TRUE(session.loadIR(ir, "m.mlir")) << diagnostics;
  ASSERT_TRUE(session.runTo(Stage::Pipeline)) << diagnostics;
  EXPECT_EQ(session.pipeline().outputs()[0].name, "y");
  Session broken({}, os);
  EXPECT_FALSE(broken.loadIR("func.func @m( {", "broken.mlir"));
  EXPECT_THAT(diagnostics, HasSubstr("broken.mlir:1:"));
}

/// Codegen applies the schedules of the IR and invents none: a stage
/// without one, or with one for the other kind of target, is an error at
/// its op. (attn-tile gives every stage a schedule, so these need IR that
/// skipped it: the session up to Primitives, then codegen directly.)
std::string codegenError(const std::string &body, const std::string &target,
                         const std::string &resultAttrs = "") {
  std::string diagnostics;
  llvm::raw_string_ostream os(diagnostics);
  Session session({"", target}, os);
  std::string ir =
      "func.func @m(%x: tensor<?x64xf32> {attn.name = \"x\", attn.dims = "
      "[\"n\", \"\"]}, %g: tensor<64xf32> {attn.name = \"g\"})\n"
      "    -> (tensor<?x64xf32> {attn.name = \"y\", attn.dims = [\"n\", \"\"]" +
      resultAttrs +
      "})\n    attributes {attn.model, attn.runtime_dims = {n = \"seq\"}} {\n" +
      body + "}\n";
  EXPECT_TRUE(session.loadIR(ir, "m.mlir")) << diagnostics;
  EXPECT_TRUE(session.runTo(Stage::Primitives)) << diagnostics;
  auto model = *session.module().getOps<mlir::func::FuncOp>().begin();
  EXPECT_FALSE(attnc::codegen::ModelPipeline::build(model,
                                                    session.codegenOptions()))
      << ir;
  return diagnostics;
}

const char *kOut = ", attn.schedule = #attn.schedule<tile = [64, 1], vector = 8, "
                   "compute = root>";

TEST(CodegenScheduleTest, AStageWithoutAScheduleIsAnErrorAtItsOp) {
  EXPECT_THAT(codegenError("  %0 = attn.relu %x : tensor<?x64xf32>\n"
                           "  return %0 : tensor<?x64xf32>\n",
                           "x86-64-linux-avx2", kOut),
              HasSubstr("m.mlir:4:8: error: code generation needs an "
                        "attn.schedule on 'attn.relu'"));
}

TEST(CodegenScheduleTest, AResultWithoutACopyScheduleIsAnError) {
  EXPECT_THAT(
      codegenError("  %0 = attn.relu %x {attn.schedule = #attn.schedule<vector "
                   "= 8>} : tensor<?x64xf32>\n  return %0 : tensor<?x64xf32>\n",
                   "x86-64-linux-avx2"),
      HasSubstr("error: code generation needs an attn.schedule on result 0 "
                "of the model"));
}

TEST(CodegenScheduleTest, AScheduleForTheOtherKindOfTargetIsAnError) {
  EXPECT_THAT(
      codegenError("  %0 = attn.relu %x {attn.schedule = #attn.schedule<vector "
                   "= 8>} : tensor<?x64xf32>\n  return %0 : tensor<?x64xf32>\n",
                   "host-cuda-cuda_capability_80", kOut),
      HasSubstr("has no gpu_threads, but the target is a GPU"));
  EXPECT_THAT(codegenError("  %0 = attn.relu %x {attn.schedule = "
                           "#attn.schedule<tile = [64, 1], gpu_threads = [64, "
                           "1]>} : tensor<?x64xf32>\n"
                           "  return %0 : tensor<?x64xf32>\n",
                           "x86-64-linux-avx2", kOut),
              HasSubstr("sets gpu_threads, but the target is a CPU"));
}

TEST(CodegenScheduleTest, AnInlinedNormNeedsAKernelAnchor) {
  EXPECT_THAT(
      codegenError("  %0 = attn.layer_norm %x weight %g eps = 1.0e-05 "
                   "{attn.schedule = #attn.schedule<compute = inline>} : "
                   "(tensor<?x64xf32>, tensor<64xf32>) -> tensor<?x64xf32>\n"
                   "  %1 = attn.relu %0 {attn.schedule = #attn.schedule<vector "
                   "= 8>} : tensor<?x64xf32>\n  return %1 : tensor<?x64xf32>\n",
                   "x86-64-linux-avx2", kOut),
      HasSubstr("schedule compute = inline on a norm needs an attn.kernel "
                "whose anchor has loops of its own"));
}

} // namespace
