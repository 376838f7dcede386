//===- ScheduleTest.cpp - tests of schedules and attn-tile's cost model ---===//
//
// Part of attnc, a compiler for attention layers.
//
//===----------------------------------------------------------------------===//
//
// This file tests `#attn.schedule` from C++ (building from ScheduleParams,
// getChecked's reasons, printing and parsing), the targets' budgets
// (TargetModel), every reason verifyScheduleFor gives for a point that a
// target cannot run, and the choices of attn-tile's cost model, including
// that every schedule it chooses is legal on its target.
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"

#include "dsl/IR/AttnOps.h"

#include "mlir/AsmParser/AsmParser.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/Parser/Parser.h"

#include <Halide.h>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

using namespace mlir;
using namespace mlir::attn;
using ::testing::HasSubstr;

namespace {

constexpr int64_t kDyn = ShapedType::kDynamic;

class ScheduleTest : public ::testing::Test {
protected:
  ScheduleTest() { context.loadDialect<AttnDialect>(); }

  /// The reason verifyScheduleFor gives for `params` on `target`, or "legal".
  std::string reason(const ScheduleParams &params, const TargetModel &target) {
    std::string message = "legal";
    ScopedDiagnosticHandler handler(&context, [&](Diagnostic &diag) {
      message = diag.str();
      return success();
    });
    auto emitError = [&] { return mlir::emitError(UnknownLoc::get(&context)); };
    bool legal = succeeded(verifyScheduleFor(params, target, emitError));
    EXPECT_EQ(legal, message == "legal") << message;
    return message;
  }

  /// The printed form of `schedule`.
  static std::string print(Attribute schedule) {
    std::string text;
    llvm::raw_string_ostream os(text);
    schedule.print(os);
    return text;
  }

  MLIRContext context;
  TargetModel avx512 = TargetModel::get(TargetKind::avx512);
  TargetModel avx2 = TargetModel::get(TargetKind::avx2);
  TargetModel generic = TargetModel::get(TargetKind::generic);
  TargetModel cuda = TargetModel::get(TargetKind::cuda);
};

//===----------------------------------------------------------------------===//
// The attribute from C++
//===----------------------------------------------------------------------===//

TEST_F(ScheduleTest, BuildsFromParamsAndPrintsCanonically) {
  ScheduleParams params;
  params.tileX = 64;
  params.tileY = 6;
  params.vector = 16;
  params.unrollX = 4;
  params.unrollY = 6;
  params.splitK = 256;
  params.parallel = true;
  ScheduleAttr schedule = ScheduleAttr::get(&context, params);
  EXPECT_EQ(print(schedule),
            "#attn.schedule<tile = [64, 6], vector = 16, unroll = [4, 6], "
            "split_k = 256, parallel = true, compute = root>");
  EXPECT_EQ(schedule.getTileX(), 64);
  EXPECT_EQ(schedule.getUnrollY(), 6);
  EXPECT_TRUE(schedule.isTiled());
  EXPECT_FALSE(schedule.isOnGpu());
  EXPECT_EQ(ScheduleAttr::get(&context, schedule.getParams()), schedule);
  EXPECT_EQ(print(ScheduleAttr::get(&context, ScheduleParams())),
            "#attn.schedule<compute = root>");
}

TEST_F(ScheduleTest, ParsesWhatItPrints) {
  const char *text = "#attn.schedule<strategy = gemm, tile = [64, 64], "
                     "split_k = 16, gpu_threads = [16, 16], shared = true, "
                     "compute = root>";
  auto schedule =
      dyn_cast_or_null<ScheduleAttr>(parseAttribute(text, &context));
  ASSERT_TRUE(schedule);
  EXPECT_EQ(print(schedule), text);
  EXPECT_TRUE(schedule.isOnGpu());
  EXPECT_EQ(schedule.getGpuThreadsX(), 16);
  EXPECT_TRUE(schedule.getShared());
  EXPECT_EQ(schedule.getStrategy(), Strategy::gemm);
}

TEST_F(ScheduleTest, GetCheckedGivesTheReasonInsteadOfAnAttribute) {
  ScheduleParams params;
  params.tileX = 40;
  params.vector = 16;
  std::string message;
  ScopedDiagnosticHandler handler(&context, [&](Diagnostic &diag) {
    message = diag.str();
    return success();
  });
  ScheduleAttr schedule = ScheduleAttr::getChecked(
      [&] { return emitError(UnknownLoc::get(&context)); }, &context, params);
  EXPECT_FALSE(schedule);
  EXPECT_EQ(message, "schedule vector 16 does not divide tile x 40");
}

TEST_F(ScheduleTest, LookupReadsTheOpsSchedule) {
  const char *source = R"mlir(
    func.func @f(%x: tensor<?x64xf32>) -> tensor<?x64xf32> {
      %0 = attn.relu %x {attn.schedule = #attn.schedule<compute = inline>} : tensor<?x64xf32>
      %1 = attn.exp %0 : tensor<?x64xf32>
      return %1 : tensor<?x64xf32>
    })mlir";
  OwningOpRef<ModuleOp> module = parseSourceString<ModuleOp>(source, &context);
  ASSERT_TRUE(module);
  int scheduled = 0;
  module->walk([&](Operation *op) {
    if (ScheduleAttr schedule = ScheduleAttr::lookup(op)) {
      EXPECT_TRUE(isa<ReluOp>(op));
      EXPECT_EQ(schedule.getCompute(), ComputeAt::inlined);
      ++scheduled;
    }
  });
  EXPECT_EQ(scheduled, 1);
}

//===----------------------------------------------------------------------===//
// Targets and verifyScheduleFor
//===----------------------------------------------------------------------===//

TEST_F(ScheduleTest, TargetsHaveTheirBudgets) {
  EXPECT_EQ(avx512.vectorLanes, 16);
  EXPECT_EQ(avx512.vectorRegisters, 32);
  EXPECT_EQ(avx2.vectorLanes, 8);
  EXPECT_EQ(avx2.vectorRegisters, 16);
  EXPECT_EQ(generic.vectorLanes, 4);
  EXPECT_EQ(generic.vectorRegisters, 16);
  EXPECT_EQ(avx512.l1Bytes, 32 * 1024);
  EXPECT_EQ(avx512.l2Bytes, 1024 * 1024);
  EXPECT_TRUE(cuda.isGpu());
  EXPECT_EQ(cuda.maxGpuThreads, 1024);
  EXPECT_EQ(cuda.sharedMemoryBytes, 48 * 1024);
}

TEST_F(ScheduleTest, ParsesTargetNames) {
  std::string error;
  for (TargetKind kind : {TargetKind::generic, TargetKind::avx2,
                          TargetKind::avx512, TargetKind::cuda}) {
    std::optional<TargetModel> parsed =
        TargetModel::parse(TargetModel::get(kind).getName(), error);
    ASSERT_TRUE(parsed) << error;
    EXPECT_EQ(parsed->kind, kind);
    EXPECT_EQ(parsed->halide().has_gpu_feature(), kind == TargetKind::cuda);
  }
  std::optional<TargetModel> host = TargetModel::parse("host", error);
  ASSERT_TRUE(host);
  EXPECT_FALSE(host->isGpu());
  EXPECT_EQ(host->kind, TargetModel::detectHost().kind);
  EXPECT_FALSE(TargetModel::parse("x86-64-avx1024", error));
  EXPECT_THAT(error, HasSubstr("unknown target 'x86-64-avx1024'"));
}

TEST_F(ScheduleTest, AHalideTargetStringGivesItsFamilysBudgets) {
  // One parser for `attnc --target` and `attn-tile{target=...}`: a Halide
  // target string keeps its features for codegen and takes the budgets of
  // its family.
  std::string error;
  struct Case {
    const char *spec;
    TargetKind kind;
  } cases[] = {{"x86-64-linux-avx2-fma-f16c-sse41", TargetKind::avx2},
               {"x86-64-linux-avx512-avx2-fma-f16c-sse41", TargetKind::avx512},
               {"x86-64-linux", TargetKind::generic},
               {"arm-64-linux", TargetKind::generic},
               {"host-cuda-cuda_capability_80", TargetKind::cuda}};
  for (const Case &c : cases) {
    std::optional<TargetModel> parsed = TargetModel::parse(c.spec, error);
    ASSERT_TRUE(parsed) << c.spec << ": " << error;
    EXPECT_EQ(parsed->kind, c.kind) << c.spec;
    EXPECT_EQ(parsed->vectorLanes, TargetModel::get(c.kind).vectorLanes);
  }
  std::optional<TargetModel> arm = TargetModel::parse("arm-64-linux", error);
  EXPECT_EQ(arm->halide().arch, Halide::Target::ARM);
  std::optional<TargetModel> cuda =
      TargetModel::parse("host-cuda-cuda_capability_80", error);
  EXPECT_TRUE(cuda->halide().has_feature(Halide::Target::CUDACapability80));
  EXPECT_EQ(cuda->maxGpuThreads, 1024);
  EXPECT_FALSE(TargetModel::parse("x86-64-linux-nosuchfeature", error));
}

TEST_F(ScheduleTest, RejectsAGpuMappingOnACpu) {
  ScheduleParams p;
  p.tileX = 64;
  p.tileY = 8;
  p.gpuThreadsX = 16;
  p.gpuThreadsY = 8;
  EXPECT_EQ(reason(p, avx2),
            "schedule gpu_threads [16, 8] needs a GPU but target x86-64-avx2 "
            "is a CPU");
  EXPECT_EQ(reason(p, cuda), "legal");
}

TEST_F(ScheduleTest, RejectsVectorsWiderThanTheTarget) {
  ScheduleParams p;
  p.tileX = 64;
  p.vector = 16;
  EXPECT_EQ(reason(p, avx512), "legal");
  EXPECT_EQ(reason(p, avx2),
            "schedule vector 16 is wider than the 8 lanes of target "
            "x86-64-avx2");
}

TEST_F(ScheduleTest, RejectsMoreAccumulatorsThanFreeRegisters) {
  ScheduleParams p;
  p.tileX = 32;
  p.tileY = 4;
  p.vector = 8;
  p.unrollX = 4;
  p.unrollY = 4;
  EXPECT_EQ(reason(p, avx512), "legal");
  EXPECT_EQ(reason(p, avx2),
            "schedule unroll [4, 4] keeps 16 vector accumulators but target "
            "x86-64-avx2 has 10 (16 registers, 6 reserved)");
}

TEST_F(ScheduleTest, RejectsSplitKPanelsBeyondHalfOfL2) {
  ScheduleParams p;
  p.tileX = 64;
  p.vector = 16;
  p.splitK = 2048;
  EXPECT_EQ(reason(p, avx512), "legal");
  p.splitK = 4096;
  EXPECT_EQ(reason(p, avx512),
            "schedule split_k 4096 with tile x 64 needs a 1048576-byte panel "
            "but target x86-64-avx512 allows half of its 1048576-byte L2 "
            "(524288)");
}

TEST_F(ScheduleTest, RejectsRootStagesOffTheGpuOnCuda) {
  ScheduleParams p;
  p.tileX = 64;
  EXPECT_EQ(reason(p, cuda),
            "schedule strategy = loops at compute = root on target cuda "
            "needs gpu_threads");
  p.tileX = 1;
  p.compute = ComputeAt::inlined;
  EXPECT_EQ(reason(p, cuda), "legal");
}

TEST_F(ScheduleTest, RejectsMoreThreadsThanTheTargetsBlock) {
  TargetModel small = cuda;
  small.maxGpuThreads = 256;
  ScheduleParams p;
  p.tileX = p.gpuThreadsX = 32;
  p.tileY = p.gpuThreadsY = 16;
  EXPECT_EQ(reason(p, cuda), "legal");
  EXPECT_EQ(reason(p, small),
            "schedule gpu_threads [32, 16] has 512 threads but target cuda "
            "allows 256 per block");
}

TEST_F(ScheduleTest, RejectsStagingBeyondSharedMemory) {
  ScheduleParams p;
  p.tileX = 64;
  p.tileY = 8;
  p.gpuThreadsX = 16;
  p.gpuThreadsY = 8;
  p.strategy = Strategy::gemm;
  p.shared = true;
  p.splitK = 128;
  EXPECT_EQ(getSharedMemoryBytes(p), 4 * 128 * 72);
  EXPECT_EQ(reason(p, cuda), "legal");
  p.splitK = 256;
  EXPECT_EQ(reason(p, cuda),
            "schedule stages 73728 bytes in shared memory per block but "
            "target cuda has 49152");
}

TEST_F(ScheduleTest, RejectsMoreElementsPerThreadThanRegistersHold) {
  ScheduleParams p;
  p.tileX = p.tileY = 64;
  p.gpuThreadsX = p.gpuThreadsY = 8; // 8 x 8 = 64 elements per thread
  EXPECT_EQ(reason(p, cuda), "legal");
  p.gpuThreadsY = 4; // 8 x 16 = 128
  EXPECT_EQ(reason(p, cuda),
            "schedule tile [64, 64] over gpu_threads [8, 4] gives each thread "
            "128 elements but target cuda keeps at most 64 in registers");
}

TEST_F(ScheduleTest, StagingNeedsAReductionStep) {
  ScheduleParams p;
  p.tileX = p.tileY = 64;
  p.gpuThreadsX = p.gpuThreadsY = 16;
  p.strategy = Strategy::gemm;
  p.shared = true;
  EXPECT_EQ(reason(p, cuda),
            "schedule shared = true needs split_k (the depth of the operand "
            "panels staged per reduction step)");
  p.splitK = 16;
  EXPECT_EQ(getSharedMemoryBytes(p), 4 * 16 * 128);
  EXPECT_EQ(reason(p, cuda), "legal");
}

TEST_F(ScheduleTest, GivesTheAttributesOwnReasonsFirst) {
  ScheduleParams p;
  p.vector = 12;
  EXPECT_EQ(reason(p, avx512), "schedule vector 12 is not a power of two");
  p.vector = 1;
  p.shared = true;
  EXPECT_EQ(reason(p, cuda), "schedule shared = true needs gpu_threads");
}

TEST_F(ScheduleTest, RejectsANullSchedule) {
  std::string message;
  ScopedDiagnosticHandler handler(&context, [&](Diagnostic &diag) {
    message = diag.str();
    return success();
  });
  EXPECT_TRUE(failed(verifyScheduleFor(ScheduleAttr(), avx2, [&] {
    return emitError(UnknownLoc::get(&context));
  })));
  EXPECT_EQ(message, "no schedule to check against target x86-64-avx2");
}

//===----------------------------------------------------------------------===//
// The cost model
//===----------------------------------------------------------------------===//

TEST_F(ScheduleTest, GemmFillsTheRegistersWithFourVectorsByTheMostRows) {
  EXPECT_EQ(print(chooseGemmSchedule(&context, avx512, kDyn, kDyn, 512)),
            "#attn.schedule<strategy = gemm, tile = [64, 6], vector = 16, "
            "unroll = [4, 6], row_block = 96, parallel = true, compute = "
            "root>");
  EXPECT_EQ(print(chooseGemmSchedule(&context, avx2, kDyn, kDyn, 512)),
            "#attn.schedule<strategy = gemm, tile = [32, 2], vector = 8, "
            "unroll = [4, 2], row_block = 32, parallel = true, compute = "
            "root>");
  EXPECT_EQ(print(chooseGemmSchedule(&context, generic, kDyn, kDyn, 512)),
            "#attn.schedule<strategy = gemm, tile = [16, 2], vector = 4, "
            "unroll = [4, 2], row_block = 32, parallel = true, compute = "
            "root>");
}

TEST_F(ScheduleTest, GemmSplitsKWhenThePanelOutgrowsHalfOfL2) {
  // avx512: 2048 * 64 * 4 bytes = 512 KiB = half of L2.
  EXPECT_EQ(chooseGemmSchedule(&context, avx512, kDyn, 256, 2048).getSplitK(),
            0);
  EXPECT_EQ(chooseGemmSchedule(&context, avx512, kDyn, 256, 2049).getSplitK(),
            2048);
  EXPECT_EQ(chooseGemmSchedule(&context, avx512, kDyn, 256, kDyn).getSplitK(),
            2048);
  EXPECT_EQ(chooseGemmSchedule(&context, avx2, kDyn, 256, 8192).getSplitK(),
            4096);
}

TEST_F(ScheduleTest, GemmNarrowsForNarrowOrShortProducts) {
  // N = 32: two vectors, so 8 rows of accumulators fit on avx512.
  ScheduleAttr narrow = chooseGemmSchedule(&context, avx512, kDyn, 32, 64);
  EXPECT_EQ(narrow.getTileX(), 32);
  EXPECT_EQ(narrow.getTileY(), 8);
  EXPECT_EQ(narrow.getUnrollX(), 2);
  // N = 8 < 16 lanes: an 8-lane vector.
  ScheduleAttr thin = chooseGemmSchedule(&context, avx512, kDyn, 8, 64);
  EXPECT_EQ(thin.getVector(), 8);
  EXPECT_EQ(thin.getTileX(), 8);
  // M = 3 rows: a 3-row tile.
  ScheduleAttr shortM = chooseGemmSchedule(&context, avx512, 3, 256, 64);
  EXPECT_EQ(shortM.getTileY(), 3);
  EXPECT_EQ(shortM.getUnrollY(), 3);
}

TEST_F(ScheduleTest, GemmPacksAChunksOwnRhsWhenSeveralRowTilesReadIt) {
  // A chunk's states: 128 rows of 6-row tiles, one task of 32 row tiles
  // per chunk, so each column panel of the chunk's values is packed once.
  ScheduleAttr states = chooseGemmSchedule(&context, avx512, 128, 1024, 256);
  EXPECT_TRUE(states.getPackRhs());
  EXPECT_EQ(states.getRowBlock(), 32 * 6);
  // 64 rows fit the usual 16 row tiles.
  ScheduleAttr few = chooseGemmSchedule(&context, avx512, 64, 1024, 256);
  EXPECT_TRUE(few.getPackRhs());
  EXPECT_EQ(few.getRowBlock(), 96);
  // One row tile reads the panel once: packing would only copy it; nor
  // are rows of a runtime count packed for.
  EXPECT_FALSE(chooseGemmSchedule(&context, avx512, 6, 1024, 256).getPackRhs());
  EXPECT_FALSE(
      chooseGemmSchedule(&context, avx512, kDyn, 1024, 256).getPackRhs());
  // A depth of runtime length, or one that needs reduction blocks: the
  // panel would span it whole.
  EXPECT_FALSE(chooseGemmSchedule(&context, avx512, 128, 1024, kDyn)
                   .getPackRhs());
  EXPECT_FALSE(chooseGemmSchedule(&context, avx512, 128, 1024, 4096)
                   .getPackRhs());
  // More rows than 32 tiles: the usual row blocks.
  EXPECT_EQ(chooseGemmSchedule(&context, avx512, 1024, 1024, 256).getRowBlock(),
            96);
}

TEST_F(ScheduleTest, GemmRowBlocksHoldWholeQueryBlocksOfTheAttentionItComputes) {
  // FLASH's output projection computes its chunk attention's accumulators
  // in its row blocks. Tiles of 6 rows would make row blocks of lcm(6, 64)
  // = 192 rows (3 query blocks of 64), or 384 with query blocks of 128:
  // tiles of 4 rows instead, and row blocks of 16 tiles or one query block.
  ScheduleAttr output = chooseGemmSchedule(&context, avx512, kDyn, 512, 1024,
                                           /*fusedLhs=*/true,
                                           /*sharedRhs=*/true,
                                           /*queryBlock=*/64);
  EXPECT_EQ(output.getTileY(), 4);
  EXPECT_EQ(output.getUnrollY(), 4);
  EXPECT_EQ(output.getRowBlock(), 64);
  ScheduleAttr wide = chooseGemmSchedule(&context, avx512, kDyn, 512, 1024,
                                         true, true, /*queryBlock=*/128);
  EXPECT_EQ(wide.getTileY(), 4);
  EXPECT_EQ(wide.getRowBlock(), 128);
  // Tiles of 6 rows whose row blocks hold at most two query blocks stay.
  EXPECT_EQ(chooseGemmSchedule(&context, avx512, kDyn, 512, 1024, true, true,
                               /*queryBlock=*/192)
                .getTileY(),
            6);
  // AVX2's 2-row tiles: the usual 16 tiles are 32 rows, half a query
  // block, so two query blocks of 64.
  EXPECT_EQ(chooseGemmSchedule(&context, avx2, kDyn, 512, 1024, true, true, 64)
                .getRowBlock(),
            64);
  // Without one, the usual 16 tiles.
  EXPECT_EQ(chooseGemmSchedule(&context, avx512, kDyn, 512, 1024, true, true)
                .getRowBlock(),
            96);
}

TEST_F(ScheduleTest, GemmStagesAFusedLhsAndPacksASharedRhsOnCpusOnly) {
  ScheduleAttr plain = chooseGemmSchedule(&context, avx2, kDyn, 256, 512);
  EXPECT_FALSE(plain.getStageLhs());
  EXPECT_FALSE(plain.getPackRhs());
  ScheduleAttr staged = chooseGemmSchedule(&context, avx2, kDyn, 256, 512,
                                           /*fusedLhs=*/true,
                                           /*sharedRhs=*/true);
  EXPECT_TRUE(staged.getStageLhs());
  EXPECT_TRUE(staged.getPackRhs());
  EXPECT_EQ(print(staged),
            "#attn.schedule<strategy = gemm, tile = [32, 2], vector = 8, "
            "unroll = [4, 2], row_block = 32, stage_lhs = true, pack_rhs = "
            "true, parallel = true, compute = root>");
  // A GPU stages both panels in shared memory instead.
  ScheduleAttr gpu = chooseGemmSchedule(&context, cuda, kDyn, 256, 512,
                                        /*fusedLhs=*/true, /*sharedRhs=*/true);
  EXPECT_FALSE(gpu.getStageLhs());
  EXPECT_FALSE(gpu.getPackRhs());
  EXPECT_TRUE(gpu.getShared());
}

TEST_F(ScheduleTest, GemmOnCudaStagesOperandPanelsInSharedMemory) {
  // 64 x 64 per block, 4 x 4 accumulators per thread, 16-deep panels.
  EXPECT_EQ(print(chooseGemmSchedule(&context, cuda, kDyn, 2176, 512)),
            "#attn.schedule<strategy = gemm, tile = [64, 64], split_k = 16, "
            "gpu_threads = [16, 16], shared = true, compute = root>");
  // Small operands shrink the tile and the step; below 4 there is no
  // staging.
  EXPECT_EQ(print(chooseGemmSchedule(&context, cuda, 3, 8, 8)),
            "#attn.schedule<strategy = gemm, tile = [8, 2], split_k = 8, "
            "gpu_threads = [8, 2], shared = true, compute = root>");
  EXPECT_FALSE(chooseGemmSchedule(&context, cuda, kDyn, 2176, 2).getShared());
  EXPECT_EQ(chooseGemmSchedule(&context, cuda, kDyn, 2176, 2).getSplitK(), 0);
  for (int64_t k : {int64_t(2), int64_t(8), int64_t(512), kDyn})
    EXPECT_EQ(reason(chooseGemmSchedule(&context, cuda, kDyn, 2176, k)
                         .getParams(),
                     cuda),
              "legal");
}

TEST_F(ScheduleTest, RowwiseAndAttentionSchedules) {
  // Parallel rows in tasks of at least 4096 elements (8 rows of an
  // unknown width), at most 64 rows.
  EXPECT_EQ(print(chooseRowwiseSchedule(&context, avx512, kDyn, 2)),
            "#attn.schedule<tile = [64, 8], vector = 16, parallel = true, "
            "compute = root>");
  EXPECT_EQ(print(chooseRowwiseSchedule(&context, avx512, 1024, 3)),
            "#attn.schedule<tile = [64, 4], vector = 16, parallel = true, "
            "compute = root>");
  EXPECT_EQ(print(chooseRowwiseSchedule(&context, avx512, 16, 2)),
            "#attn.schedule<tile = [16, 64], vector = 16, parallel = true, "
            "compute = root>");
  EXPECT_EQ(print(chooseRowwiseSchedule(&context, avx2, 16, 1)),
            "#attn.schedule<tile = [16, 1], vector = 8, compute = root>");
  EXPECT_EQ(print(chooseRowwiseSchedule(&context, cuda, 16, 3)),
            "#attn.schedule<tile = [16, 4], gpu_threads = [16, 4], compute = "
            "root>");
  // Blocks of queries x keys: 64 keys inside chunks, 128 over a whole
  // sequence, fitted to a few static keys; one column per head: row-wise.
  EXPECT_EQ(print(chooseAttentionSchedule(&context, generic, 1, kDyn)),
            "#attn.schedule<strategy = rows, parallel = true, compute = root>");
  EXPECT_EQ(print(chooseAttentionSchedule(&context, avx512, 1024, 256)),
            "#attn.schedule<strategy = blocked, tile = [32, 8], vector = 16, "
            "unroll = [2, 8], "
            "split_k = 64, parallel = true, compute = root>");
  // Unmasked chunks of 256 (non-causal FLASH): every query block reads
  // every key block, in blocks of 128.
  EXPECT_EQ(chooseAttentionSchedule(&context, avx512, 1024, 256,
                                    /*chunkMask=*/false, /*softmax=*/false,
                                    /*unmasked=*/true)
                .getSplitK(),
            128);
  EXPECT_EQ(chooseAttentionSchedule(&context, avx512, 1024, 128, false, false,
                                    /*unmasked=*/true)
                .getSplitK(),
            64);
  EXPECT_EQ(print(chooseAttentionSchedule(&context, avx512, 1024, kDyn)),
            "#attn.schedule<strategy = blocked, tile = [32, 8], vector = 16, "
            "unroll = [2, 8], "
            "split_k = 128, parallel = true, compute = root>");
  EXPECT_EQ(print(chooseAttentionSchedule(&context, avx512, 1024, 5)),
            "#attn.schedule<strategy = blocked, tile = [32, 8], vector = 16, "
            "unroll = [2, 8], "
            "split_k = 32, parallel = true, compute = root>");
  EXPECT_EQ(print(chooseAttentionSchedule(&context, avx2, 1024, kDyn)),
            "#attn.schedule<strategy = blocked, tile = [16, 4], vector = 8, "
            "unroll = [2, 4], "
            "split_k = 128, parallel = true, compute = root>");
  // Softmax over many keys, heads of whole 4-vector tiles: 4 x 6
  // accumulators and blocks of 192 keys; few static keys, other heads (96
  // columns would pad to 128) or 16 registers keep the tiles above.
  EXPECT_EQ(print(chooseAttentionSchedule(&context, avx512, 64, kDyn,
                                          /*chunkMask=*/false,
                                          /*softmax=*/true)),
            "#attn.schedule<strategy = blocked, tile = [64, 6], vector = 16, "
            "unroll = [4, 6], "
            "split_k = 192, parallel = true, compute = root>");
  EXPECT_EQ(print(chooseAttentionSchedule(&context, avx512, 64, 1024,
                                          /*chunkMask=*/false,
                                          /*softmax=*/true)),
            "#attn.schedule<strategy = blocked, tile = [32, 8], vector = 16, "
            "unroll = [2, 8], "
            "split_k = 128, parallel = true, compute = root>");
  EXPECT_EQ(print(chooseAttentionSchedule(&context, avx512, 96, kDyn,
                                          /*chunkMask=*/false,
                                          /*softmax=*/true)),
            "#attn.schedule<strategy = blocked, tile = [32, 8], vector = 16, "
            "unroll = [2, 8], "
            "split_k = 128, parallel = true, compute = root>");
  EXPECT_EQ(print(chooseAttentionSchedule(&context, avx512, 32, kDyn,
                                          /*chunkMask=*/false,
                                          /*softmax=*/true)),
            "#attn.schedule<strategy = blocked, tile = [32, 8], vector = 16, "
            "unroll = [2, 8], "
            "split_k = 128, parallel = true, compute = root>");
  EXPECT_EQ(print(chooseAttentionSchedule(&context, avx2, 64, kDyn,
                                          /*chunkMask=*/false,
                                          /*softmax=*/true)),
            "#attn.schedule<strategy = blocked, tile = [16, 4], vector = 8, "
            "unroll = [2, 4], "
            "split_k = 128, parallel = true, compute = root>");
  // CUDA: blocks of 64 queries x the largest power of two <= 256 dividing
  // the head's value columns; row-wise for chunk masks and unknown widths.
  EXPECT_EQ(print(chooseAttentionSchedule(&context, cuda, 128, kDyn)),
            "#attn.schedule<strategy = blocked, tile = [128, 64], split_k = 32, gpu_threads = "
            "[16, 16], shared = true, compute = root>");
  EXPECT_EQ(print(chooseAttentionSchedule(&context, cuda, 1024, kDyn)),
            "#attn.schedule<strategy = blocked, tile = [256, 64], split_k = 16, gpu_threads = "
            "[16, 16], shared = true, compute = root>");
  EXPECT_EQ(print(chooseAttentionSchedule(&context, cuda, 48, kDyn)),
            "#attn.schedule<strategy = blocked, tile = [16, 64], split_k = 32, gpu_threads = "
            "[16, 16], shared = true, compute = root>");
  EXPECT_EQ(print(chooseAttentionSchedule(&context, cuda, 128, kDyn,
                                          /*chunkMask=*/true)),
            "#attn.schedule<strategy = rows, tile = [32, 8], gpu_threads = "
            "[32, 8], compute = root>");
  EXPECT_EQ(print(chooseAttentionSchedule(&context, cuda, kDyn, kDyn)),
            "#attn.schedule<strategy = rows, tile = [32, 8], gpu_threads = "
            "[32, 8], compute = root>");
}

TEST_F(ScheduleTest, EveryChosenScheduleIsLegalOnItsTarget) {
  const int64_t extents[] = {kDyn, 1, 2, 3, 7, 16, 24, 100, 512, 5000};
  for (const TargetModel &target : {avx512, avx2, generic, cuda}) {
    for (int64_t a : extents) {
      for (int64_t b : extents) {
        SCOPED_TRACE(std::string(target.getName()) + " " + std::to_string(a) +
                     " " + std::to_string(b));
        EXPECT_EQ(
            reason(chooseGemmSchedule(&context, target, a, b, a).getParams(),
                   target),
            "legal");
        EXPECT_EQ(
            reason(chooseRowwiseSchedule(&context, target, a, 2).getParams(),
                   target),
            "legal");
        for (bool softmax : {false, true})
          EXPECT_EQ(reason(chooseAttentionSchedule(&context, target, b, a,
                                                   /*chunkMask=*/false,
                                                   softmax)
                               .getParams(),
                           target),
                    "legal");
      }
    }
  }
}

TEST_F(ScheduleTest, ChoosesPerOpAndLeavesViewsAlone) {
  const char *source = R"mlir(
    func.func @f(%x: tensor<?x512xf32>, %w: tensor<512x256xf32>, %b: tensor<256xf32>) -> tensor<?x128xf32> {
      %d = attn.dense %x, %w, %b : tensor<?x512xf32>, tensor<512x256xf32>, tensor<256xf32> -> tensor<?x256xf32>
      %p:2 = attn.split %d [128, 128] : tensor<?x256xf32> -> tensor<?x128xf32>, tensor<?x128xf32>
      %s = attn.silu %p#0 : tensor<?x128xf32>
      return %s : tensor<?x128xf32>
    })mlir";
  OwningOpRef<ModuleOp> module = parseSourceString<ModuleOp>(source, &context);
  ASSERT_TRUE(module);
  module->walk([&](Operation *op) {
    ScheduleAttr schedule = chooseSchedule(op, avx512);
    if (isa<DenseOp>(op))
      // Its weight has no batch axes: packed.
      EXPECT_EQ(schedule, chooseGemmSchedule(&context, avx512, kDyn, 256, 512,
                                             /*fusedLhs=*/false,
                                             /*sharedRhs=*/true));
    else if (isa<SiluOp>(op))
      EXPECT_EQ(schedule, chooseRowwiseSchedule(&context, avx512, 128, 2));
    else
      EXPECT_FALSE(schedule) << op->getName().getStringRef().str();
  });
}

} // namespace
