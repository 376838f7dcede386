//===- Passes.h - attnc's passes on the attn dialect --------------*- C++ -*-===//
//
// This file declares the passes of attnc (generated from Passes.td), their
// registration, the pattern populators they are built from, the named
// pipelines that tools use, and the target model and cost model behind
// attn-tile's schedules (TargetInfo, verifyScheduleFor, choose*Schedule).
//
//===----------------------------------------------------------------------===//
#ifndef ATTNC_PASSES_PASSES_H
#define ATTNC_PASSES_PASSES_H

#include "dsl/IR/AttnDialect.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassManager.h"

#include <optional>

namespace mlir::attn {

#define GEN_PASS_DECL
#include "passes/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "passes/Passes.h.inc"

//===----------------------------------------------------------------------===//
// Schedules (attn-tile)
//===----------------------------------------------------------------------===//

/// The targets whose budgets attn-tile knows.
enum class TargetKind { generic, avx2, avx512, cuda };

/// What the cost model of attn-tile knows about a target: SIMD width and
/// registers, cache sizes, and on CUDA the limits of a thread block.
struct TargetInfo {
  TargetKind kind = TargetKind::generic;
  int64_t vectorLanes = 4;       ///< f32 lanes of a SIMD register; 1 on CUDA.
  int64_t vectorRegisters = 16;  ///< SIMD registers; 0 on CUDA.
  int64_t l1Bytes = 32 * 1024;   ///< L1 data cache per core.
  int64_t l2Bytes = 1024 * 1024; ///< L2 cache per core.
  int64_t maxGpuThreads = 0;     ///< Threads per block; 0 on a CPU.
  int64_t maxThreadTile = 0;     ///< Elements one GPU thread keeps in registers.
  int64_t sharedMemoryBytes = 0; ///< Shared memory per block; 0 on a CPU.

  /// True for CUDA.
  bool isGpu() const { return kind == TargetKind::cuda; }
  /// "generic", "x86-64-avx2", "x86-64-avx512" or "cuda".
  llvm::StringRef getName() const;

  /// The budgets of `kind`.
  static TargetInfo get(TargetKind kind);
  /// The running CPU: avx512 if it has AVX-512F, else avx2 if it has AVX2,
  /// else generic.
  static TargetInfo detectHost();
  /// The target named `name` (`host` detects the running CPU, or one of the
  /// names of getName()); std::nullopt for an unknown name.
  static std::optional<TargetInfo> parse(llvm::StringRef name);
};

/// Vector registers a GEMM micro-kernel keeps for operands and addresses;
/// the rest hold accumulators.
constexpr int64_t kReservedVectorRegisters = 6;

/// Bytes of GPU shared memory a schedule stages per block: 0 without
/// `shared`; else split_k * (tile x + tile y) f32 panels of a GEMM, or one
/// tile of f32 when split_k is 0.
int64_t getSharedMemoryBytes(const ScheduleParams &params);

/// Checks a schedule point (its own rules, then the budgets of `target`):
/// gpu mapping only on a GPU and required for root stages there, vector at
/// most the target's lanes, unroll accumulators within the vector registers
/// less kReservedVectorRegisters, split_k panels within half of L2, staged
/// operands within shared memory. On failure emits one diagnostic naming the
/// values through `emitError`; never asserts on a bad point, so an autotuner
/// can ask before it builds the attribute.
llvm::LogicalResult
verifyScheduleFor(const ScheduleParams &params, const TargetInfo &target,
                  llvm::function_ref<InFlightDiagnostic()> emitError);

/// The same for an attribute (a null `schedule` is a failure too).
llvm::LogicalResult
verifyScheduleFor(ScheduleAttr schedule, const TargetInfo &target,
                  llvm::function_ref<InFlightDiagnostic()> emitError);

/// The cost model's GEMM schedule for a product [m, k] x [k, n] (any extent
/// may be ShapedType::kDynamic).
ScheduleAttr chooseGemmSchedule(MLIRContext *context, const TargetInfo &target,
                                int64_t m, int64_t n, int64_t k);
/// The schedule of a row-wise op (elementwise, norm, rope, linear attention)
/// whose result has rows of `width` elements and `rank` axes.
ScheduleAttr chooseRowwiseSchedule(MLIRContext *context,
                                   const TargetInfo &target, int64_t width,
                                   int64_t rank);
/// The schedule of attn.attention with `width` output columns per head over
/// `keys` keys (either may be dynamic): on a CPU blocks of queries x keys
/// (compute = tile); on CUDA blocks of 64 queries x up to 64 value columns
/// with 32 keys per step in shared memory (shared = true; see
/// codegen/AttentionGpu.cpp), or one thread per output element when the
/// width is dynamic. Under a chunk mask (`chunkMask`) the schedule is one
/// query row at a time (compute = row on a CPU), which visits only the
/// row's chunk: blocked attention cannot skip other chunks' blocks (see
/// blockKept in codegen/ScoreRegion.h).
ScheduleAttr chooseAttentionSchedule(MLIRContext *context,
                                     const TargetInfo &target, int64_t width,
                                     int64_t keys, bool chunkMask = false);

/// The schedule attn-tile gives `op`, or null for ops it leaves unscheduled
/// (views, scalar score ops, layer ops, non-attn ops).
ScheduleAttr chooseSchedule(Operation *op, const TargetInfo &target);

/// Patterns that rewrite each layer template op into primitive ops.
void populateExpandLayersPatterns(RewritePatternSet &patterns);

/// Patterns that rewrite chunk-masked attention and attn.chunked_linear into
/// the chunk-parallel form (attn-chunk).
void populateChunkPatterns(RewritePatternSet &patterns);

/// The pipeline from imported IR to IR that codegen accepts: expand the
/// layers, rewrite chunked attention into chunk-parallel form, then clean up
/// (canonicalize, CSE).
void buildLowerToPrimitivesPipeline(OpPassManager &pm);

/// Registers the named pipelines (`attn-lower-to-primitives`).
void registerAttnPipelines();

} // namespace mlir::attn

#endif // ATTNC_PASSES_PASSES_H
