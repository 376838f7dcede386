//===- ScheduleSpaceTest.cpp - the schedule space a tuner searches --------===//
//
// Part of attnc, a compiler for attention layers.
//
//===----------------------------------------------------------------------===//
//
// Tests of forEachSchedule / enumerateSchedules on the ops of the examples,
// for every target family: every point verifies (the dialect's rules and the
// target's budgets), no point repeats, every scheduled op has points, and
// the cost model's choice is one of them. The numerics of a sample of points
// are checked end to end in tests/e2e/ScheduleSpaceE2ETest.cpp.
//
//===----------------------------------------------------------------------===//

#include "driver/Session.h"
#include "passes/Passes.h"

#include "dsl/IR/AttnOps.h"

#include "mlir/IR/Diagnostics.h"

#include "gtest/gtest.h"

#include <algorithm>
#include <fstream>
#include <set>
#include <sstream>
#include <tuple>

using namespace mlir;
using namespace mlir::attn;
using attnc::driver::Session;
using attnc::driver::Stage;

namespace {

std::string readExample(const std::string &name) {
  std::ifstream in(std::string(ATTNC_EXAMPLES_DIR) + "/" + name);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

auto key(const ScheduleParams &p) {
  return std::make_tuple(int(p.strategy), p.tileX, p.tileY, p.vector,
                         p.unrollX, p.unrollY, p.splitK, p.rowBlock,
                         p.stageLhs, p.packRhs, p.parallel, int(p.compute),
                         p.gpuThreadsX, p.gpuThreadsY, p.shared);
}

using Case = std::tuple<const char *, TargetKind>;

class ScheduleSpaceTest : public ::testing::TestWithParam<Case> {};

std::string caseName(const ::testing::TestParamInfo<Case> &info) {
  std::string name = std::get<0>(info.param);
  name = name.substr(0, name.find('.'));
  name.erase(std::remove(name.begin(), name.end(), '_'), name.end());
  const char *kinds[] = {"generic", "avx2", "avx512", "cuda"};
  return name + "_" + kinds[int(std::get<1>(info.param))];
}

TEST_P(ScheduleSpaceTest, EveryPointVerifiesAndTheCostModelsChoiceIsOne) {
  auto [example, kind] = GetParam();
  TargetModel target = TargetModel::get(kind);
  std::string diagnostics;
  llvm::raw_string_ostream os(diagnostics);
  Session session({"", target.getName().str()}, os);
  ASSERT_TRUE(session.loadSource(readExample(example), example));
  ASSERT_TRUE(session.runTo(Stage::Scheduled)) << diagnostics;

  // Each distinct op shape once: repeated layers have the same spaces.
  std::set<std::string> seen;
  int checked = 0;
  session.module().walk([&](Operation *op) {
    ScheduleAttr chosen = ScheduleAttr::lookup(op);
    ScheduleShape shape = getScheduleShape(op);
    if (shape.kind == ScheduleShape::None) {
      EXPECT_TRUE(enumerateSchedules(op, target).empty());
      return;
    }
    std::string signature;
    llvm::raw_string_ostream sig(signature);
    sig << op->getName() << " " << int(shape.kind) << " " << shape.rows << " "
        << shape.width << " " << shape.depth << " " << shape.chunkMask << " "
        << shape.softmax;
    for (Type type : op->getOperandTypes())
      sig << " " << type;
    if (!seen.insert(signature).second)
      return;
    ++checked;
    std::vector<ScheduleParams> space = enumerateSchedules(op, target);
    ASSERT_FALSE(space.empty()) << signature;
    std::set<decltype(key(space[0]))> keys;
    int rejected = 0;
    {
      ScopedDiagnosticHandler count(op->getContext(), [&](Diagnostic &) {
        ++rejected;
        return success();
      });
      auto emitError = [&] { return op->emitError(); };
      // verifyScheduleFor checks the attribute's own rules first (what
      // ScheduleAttr::getChecked checks), then the target's budgets.
      for (const ScheduleParams &p : space) {
        EXPECT_TRUE(keys.insert(key(p)).second) << "repeated point";
        EXPECT_TRUE(succeeded(verifyScheduleForOp(op, p, emitError)));
        EXPECT_TRUE(succeeded(verifyScheduleFor(p, target, emitError, op)));
      }
    }
    EXPECT_EQ(rejected, 0) << signature;
    ASSERT_TRUE(chosen) << signature;
    std::string printed;
    llvm::raw_string_ostream(printed) << chosen;
    EXPECT_TRUE(keys.count(key(chosen.getParams())))
        << "the cost model's schedule " << printed << " of " << signature
        << " is not in the space of target " << target.getName().str();
  });
  EXPECT_GT(checked, 1);
}

INSTANTIATE_TEST_SUITE_P(
    Examples, ScheduleSpaceTest,
    ::testing::Combine(::testing::Values("flash.attn", "gau.attn", "mhsa.attn",
                                         "local.attn", "linear.attn",
                                         "custom_gau.attn"),
                       ::testing::Values(TargetKind::generic, TargetKind::avx2,
                                         TargetKind::avx512, TargetKind::cuda)),
    caseName);

TEST(ScheduleSpaceStopTest, TheWalkStopsWhenAsked) {
  TargetModel target = TargetModel::get(TargetKind::avx2);
  Session session({"", "x86-64-avx2"}, llvm::errs());
  ASSERT_TRUE(session.loadSource(readExample("gau.attn"), "gau.attn"));
  ASSERT_TRUE(session.runTo(Stage::Scheduled));
  Operation *dense = nullptr;
  session.module().walk([&](DenseOp op) { dense = op; });
  ASSERT_TRUE(dense);
  int calls = 0;
  forEachSchedule(dense, target, [&](const ScheduleParams &) {
    return ++calls < 3;
  });
  EXPECT_EQ(calls, 3);
}

// stage_lhs and pack_rhs are points of the space where the op allows them:
// a dense (its weight shared by every row) both, the chunk form's products
// (no staged prologue; right operands of each chunk's own, packed a panel
// per task) only pack_rhs.
TEST(ScheduleSpaceStagingTest, StagingIsEnumeratedWhereTheOpAllowsIt) {
  TargetModel target = TargetModel::get(TargetKind::avx2);
  Session session({"", "x86-64-avx2"}, llvm::errs());
  ASSERT_TRUE(session.loadSource(readExample("flash.attn"), "flash.attn"));
  ASSERT_TRUE(session.runTo(Stage::Scheduled));
  Operation *dense = nullptr, *chunkState = nullptr;
  session.module().walk([&](DenseOp op) { dense = op; });
  session.module().walk([&](ChunkStateOp op) { chunkState = op; });
  ASSERT_TRUE(dense && chunkState);
  auto count = [&](Operation *op, bool ScheduleParams::*field) {
    int n = 0;
    forEachSchedule(op, target, [&](const ScheduleParams &p) {
      n += p.*field;
      return true;
    });
    return n;
  };
  EXPECT_GT(count(dense, &ScheduleParams::stageLhs), 0);
  EXPECT_GT(count(dense, &ScheduleParams::packRhs), 0);
  EXPECT_EQ(count(chunkState, &ScheduleParams::stageLhs), 0);
  // A chunk's values are packed a panel per task.
  EXPECT_GT(count(chunkState, &ScheduleParams::packRhs), 0);
  // The cost model packs the dense's weight, and the chunk's values (128
  // state rows: several row tiles read each panel).
  EXPECT_TRUE(ScheduleAttr::lookup(dense).getPackRhs());
  EXPECT_TRUE(ScheduleAttr::lookup(chunkState).getPackRhs());
}

} // namespace

// The cost model's estimates (estimateScheduleCost), what the tuner ranks
// candidates by: on the FLASH layer's ops, attn-tile's choice ranks among
// the best estimates of its space, and the same schedule made serial,
// scalar or naive estimates slower by about what those lose (the threads,
// the lanes). A GPU point estimates 1: the model does not cover GPUs.
TEST(ScheduleCostTest, TheEstimateRanksTheDefaultHighAndSerialScalarNaiveLow) {
  for (TargetKind kind : {TargetKind::avx2, TargetKind::avx512}) {
    TargetModel target = TargetModel::get(kind);
    std::string diagnostics;
    llvm::raw_string_ostream os(diagnostics);
    Session session({"", target.getName().str()}, os);
    ASSERT_TRUE(session.loadSource(readExample("flash.attn"), "flash.attn"));
    ASSERT_TRUE(session.runTo(Stage::Scheduled)) << diagnostics;
    constexpr int64_t kThreads = 2;
    int checked = 0;
    session.module().walk([&](Operation *op) {
      if (!isTunable(op))
        return;
      ScheduleAttr chosen = ScheduleAttr::lookup(op);
      ScheduleShape shape = getScheduleShape(op);
      if (!chosen || shape.kind == ScheduleShape::Reindex)
        return;
      ScheduleParams p = chosen.getParams();
      double estimate = estimateScheduleCost(shape, p, target, kThreads);
      std::vector<ScheduleParams> space = enumerateSchedules(op, target);
      size_t better = llvm::count_if(space, [&](const ScheduleParams &q) {
        return estimateScheduleCost(shape, q, target, kThreads) < estimate;
      });
      std::string name;
      llvm::raw_string_ostream(name)
          << op->getName() << " on " << target.getName() << ": " << chosen;
      EXPECT_LE(double(better), 0.10 * double(space.size()))
          << name << " estimates " << estimate << "; " << better << " of "
          << space.size() << " points estimate less";
      ScheduleParams serial = p, scalar = p, naive;
      serial.parallel = false;
      scalar.vector = 1;
      scalar.tileX = std::max<int64_t>(p.tileX / std::max<int64_t>(p.vector, 1), 1);
      naive.strategy = Strategy::naive;
      EXPECT_GE(estimateScheduleCost(shape, serial, target, kThreads),
                1.8 * estimate)
          << name;
      EXPECT_GE(estimateScheduleCost(shape, scalar, target, kThreads),
                1.8 * estimate)
          << name;
      EXPECT_GE(estimateScheduleCost(shape, naive, target, kThreads),
                8 * estimate)
          << name;
      ++checked;
    });
    EXPECT_GE(checked, 5);
  }
  TargetModel cuda = TargetModel::get(TargetKind::cuda);
  ScheduleShape product;
  product.kind = ScheduleShape::Product;
  EXPECT_EQ(estimateScheduleCost(product, ScheduleParams(), cuda, 2), 1.0);
}
