//===- Passes.h - attnc's passes on the attn dialect --------------*- C++ -*-===//
//
// This file declares the passes of attnc (generated from Passes.td), their
// registration, the pattern populators they are built from, the named
// pipelines that tools use, and the target model and cost model behind
// attn-tile's schedules (verifyScheduleFor, choose*Schedule) over the
// target model of target/TargetModel.h.
//
//===----------------------------------------------------------------------===//
#ifndef ATTNC_PASSES_PASSES_H
#define ATTNC_PASSES_PASSES_H

#include "dsl/IR/AttnDialect.h"
#include "target/TargetModel.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassOptions.h"

#include <map>
#include <optional>

namespace mlir::attn {

#define GEN_PASS_DECL
#include "passes/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "passes/Passes.h.inc"

//===----------------------------------------------------------------------===//
// Schedules (attn-tile)
//===----------------------------------------------------------------------===//

/// The target model (target/TargetModel.h): the budgets attn-tile's cost
/// model and the schedule verifier read.
using attnc::target::TargetKind;
using attnc::target::TargetModel;

/// How attn-tile chooses the schedules it adds: the cost model's, or the
/// naive baseline (`strategy = naive`, a CPU baseline) for every op.
enum class SchedulePolicy { Default, Naive };
/// "default" or "naive"; std::nullopt otherwise.
std::optional<SchedulePolicy> parseSchedulePolicy(llvm::StringRef name);
/// The message for a `name` that parseSchedulePolicy refuses (every tool
/// that takes a policy says the same).
std::string unknownSchedulePolicy(llvm::StringRef name);

/// attn-tile for a target already parsed (the compilation session's) with
/// `policy`; the pass's `target` and `policy` options are not read.
std::unique_ptr<Pass> createTilePass(const TargetModel &target,
                                     SchedulePolicy policy);

/// attn-apply-tuning for a target already parsed, with the database at
/// `db` and runtime `dims` (empty: the largest tuned sizes); the pass's
/// options are not read.
std::unique_ptr<Pass>
createApplyTuningPass(const std::string &db, const TargetModel &target,
                      const std::map<std::string, int64_t> &dims);

/// Bytes of one f32.
constexpr int64_t kF32Bytes = 4;

/// Vector registers a GEMM micro-kernel keeps for operands and addresses;
/// the rest hold accumulators.
constexpr int64_t kReservedVectorRegisters = 6;

/// Register tiles of rows per parallel task of the cost model's CPU GEMM
/// (its `row_block` is this times tile y).
constexpr int64_t kGemmRowTiles = 16;
/// Row tiles of a task that takes all of a batch entry's rows (a product
/// per chunk whose right operand it packs).
constexpr int64_t kGemmEntryRowTiles = 32;

/// Bytes of GPU shared memory a schedule stages per block: 0 without
/// `shared`; else a split_k-deep f32 panel of each operand, split_k *
/// (tile x + tile y) * 4 (`shared` needs split_k > 0), plus, for `op` a
/// softmax attention, its block of scores and each row's maximum and sum.
/// The one formula of the staging that codegen's GPU schedules do.
int64_t getSharedMemoryBytes(const ScheduleParams &params,
                             Operation *op = nullptr);

/// Checks a schedule point against the budgets of `target` (after its own
/// rules, ScheduleAttr::verifyParams): gpu mapping only on a GPU and
/// required for root stages there, at most the target's threads per block
/// and elements per thread, vector at most the target's lanes, unroll
/// accumulators within the vector registers less kReservedVectorRegisters,
/// split_k panels within half of L2, staged data within shared memory; with
/// the `op` it schedules, also a GPU product's block tile and blocked
/// attention's scores per thread. The dialect's verifier keeps only the
/// rules that hold on every target. On failure emits one diagnostic naming
/// the values through `emitError`; never asserts on a bad point, so an
/// autotuner can ask before it builds the attribute.
llvm::LogicalResult
verifyScheduleFor(const ScheduleParams &params, const TargetModel &target,
                  llvm::function_ref<InFlightDiagnostic()> emitError,
                  Operation *op = nullptr);

/// The same for an attribute (a null `schedule` is a failure too).
llvm::LogicalResult
verifyScheduleFor(ScheduleAttr schedule, const TargetModel &target,
                  llvm::function_ref<InFlightDiagnostic()> emitError,
                  Operation *op = nullptr);

/// The cost model's GEMM schedule for a product [m, k] x [k, n] (any extent
/// may be ShapedType::kDynamic). On a CPU, a left operand computed in the
/// product's kernel (`fusedLhs`, a prologue) is staged per row block
/// (stage_lhs), and a right operand that every batch entry shares
/// (`sharedRhs`, a weight) is packed into panels (pack_rhs); one of each
/// batch entry's own is packed a column panel per task when `m` and `k`
/// are static, `k` needs no reduction blocks, and more than one row tile
/// reads each panel (a task then takes up to
/// kGemmEntryRowTiles row tiles: all of a chunk state's rows). With
/// `queryBlock`, the rows of a query block of the attention that a CPU
/// product computes in its row blocks (FLASH's output projection), a row
/// block is a whole number of query blocks and of tiles.
ScheduleAttr chooseGemmSchedule(MLIRContext *context, const TargetModel &target,
                                int64_t m, int64_t n, int64_t k,
                                bool fusedLhs = false, bool sharedRhs = false,
                                int64_t queryBlock = 0);
/// The schedule of a row-wise op (elementwise, norm, rope, linear attention)
/// whose result has rows of `width` elements and `rank` axes.
ScheduleAttr chooseRowwiseSchedule(MLIRContext *context,
                                   const TargetModel &target, int64_t width,
                                   int64_t rank);
/// The schedule of attn.attention with `width` output columns per head over
/// `keys` keys (either may be dynamic): on a CPU blocks of queries x keys
/// (strategy = blocked); on CUDA blocks of 64 queries x up to 256 value
/// columns with 32 keys per step in shared memory (blocked, shared = true;
/// see codegen/AttentionGpu.cpp), or one thread per output element
/// (strategy = rows) when the width is dynamic. Under a chunk mask
/// (`chunkMask`) the schedule is one query row at a time (rows), which
/// visits only the row's chunk: blocked attention cannot skip other chunks'
/// blocks (see blockKept in codegen/ScoreRegion.h). Softmax attention
/// (`softmax`) over many keys with heads of whole 4-vector tiles takes 4 x 6
/// vector tiles and blocks of 192 keys on a CPU with 32 registers. Without a
/// mask (`unmasked`: every query block reads every key block) 256 keys or
/// more take blocks of 128.
ScheduleAttr chooseAttentionSchedule(MLIRContext *context,
                                     const TargetModel &target, int64_t width,
                                     int64_t keys, bool chunkMask = false,
                                     bool softmax = false,
                                     bool unmasked = false);

/// What attn-tile schedules an op as, with the extents (any may be
/// ShapedType::kDynamic) its schedules depend on: the one classification of
/// ops that the cost model and the schedule space share.
struct ScheduleShape {
  enum Kind {
    None,      ///< Unscheduled: views, scalar score ops, layer ops, non-attn ops.
    Inlined,   ///< A member of an attn.kernel computed in its anchor's loops.
    Product,   ///< [rows, depth] x [depth, width] (dense, matmul, chunk-form GEMMs).
    Attention, ///< `width` value columns per head over `depth` keys.
    Rowwise,   ///< Elementwise, norms, RoPE, linear attention, chunk-form scans.
    Reindex,   ///< attn.chunk: computed in its consumers (default) or stored
               ///< with a row-wise schedule.
  } kind = None;
  int64_t rows = 1;  ///< Axis -2 of the result (1 for rank 1).
  int64_t width = 1; ///< Axis -1 of the result (per head for attention).
  int64_t depth = 0; ///< The reduction: a product's K, attention's keys.
  int64_t rank = 0;  ///< The result's rank.
  bool chunkMask = false; ///< Attention under a chunk mask.
  bool softmax = false;   ///< Attention normalized by a softmax.
  bool unmasked = false;  ///< Attention whose mask keeps every key.
  /// A product whose left operand is an inlined member of its kernel (a
  /// prologue its lowering can stage).
  bool fusedLhs = false;
  /// A product whose right operand has no batch axes (a weight).
  bool sharedRhs = false;
};
ScheduleShape getScheduleShape(Operation *op);

/// The cost model's estimate of a CPU schedule point for an op of `shape`,
/// run on `threads` threads: its time relative to an ideal schedule of the
/// same op (1 = every core's FMA or load units busy; larger is slower). It
/// multiplies the model's factors: threads left idle by too few parallel
/// tasks; SIMD lanes left empty (memory-bound row-wise ops feel it less);
/// tiles padded past static extents; for register-tiled products and
/// blocked attention, the micro-kernel's cycles per reduction step (FMAs on
/// two ports, operand loads on two ports, the FMA latency to hide with
/// independent accumulators, accumulators kept in memory when the tile is
/// not fully unrolled) and the accumulators reloaded per split_k block;
/// a prologue not staged and a shared operand not packed. Dynamic extents
/// are taken as large. What the tuner ranks its candidates by (tune/
/// Tuner.cpp); a GPU point, which the model does not cover, estimates 1.
double estimateScheduleCost(const ScheduleShape &shape,
                            const ScheduleParams &params,
                            const TargetModel &target, int64_t threads);

/// The schedule attn-tile gives `op`, or null for ops it leaves unscheduled
/// (views, scalar score ops, layer ops, non-attn ops).
ScheduleAttr chooseSchedule(Operation *op, const TargetModel &target);

/// The schedule of the stage that copies a function result of `type` into
/// the caller's buffer (attn-tile sets it as the result attribute
/// `attn.schedule`): a row-wise stage's under the default policy.
ScheduleAttr chooseOutputSchedule(MLIRContext *context,
                                  const TargetModel &target,
                                  RankedTensorType type,
                                  SchedulePolicy policy);

/// The schedule space of `op` on `target`, what a tuner searches: calls
/// `yield` on each legal point (the dialect's rules and the target's
/// budgets, as verifyScheduleFor checks them) of the grid of the op's class,
/// until `yield` returns false. The grid: on a CPU, products and row-wise
/// ops take tile x = vector x 1..8 vectors (vector 1 up to the lanes) and
/// serial or parallel rows; products (`gemm`) tile y 1..8 rows, every
/// unroll dividing the tile, split_k 0 or 16..16384 (powers of two),
/// row_block 1, 4 or 16 tiles, and stage_lhs and pack_rhs each off or on
/// (where the op allows them); row-wise ops tile y 1..64 rows per task
/// (powers of two), attn.chunk also `compute = inline`; attention takes `rows` or
/// `materialized` with each vector and serial or parallel rows, or
/// `blocked` (up to 4 vectors x 8 rows, 16..512 keys). On
/// CUDA every op takes power-of-two tiles 1..64 over every power-of-two
/// thread layout that divides them, products also with panels of split_k
/// 4..64 staged in shared memory, attention also blocked with 16..256
/// columns x 16..64 queries, 8..16 threads per axis and 8..64 keys per
/// step. Kernel members other than the anchor have one point, `compute =
/// inline`; unscheduled ops none. The naive baseline (`strategy = naive`)
/// is a point of every scheduled op on a CPU. Within the grid every legal point is
/// yielded, once.
void forEachSchedule(Operation *op, const TargetModel &target,
                     llvm::function_ref<bool(const ScheduleParams &)> yield);
/// All of forEachSchedule's points.
std::vector<ScheduleParams> enumerateSchedules(Operation *op,
                                               const TargetModel &target);

/// Whether `op` has a schedule a tuner may set (and attn-apply-tuning
/// replaces): it carries an `attn.schedule` that is not `compute = inline`,
/// or it is an attn.chunk (for which inline is one choice).
bool isTunable(Operation *op);
/// What a tuned schedule of `op` applies to: the attn.kernel `op` is a
/// member of, or `op` itself.
Operation *tuningUnit(Operation *op);
/// The key of `op`'s schedule in a tuning database (tune/TuningDb.h): 24
/// hex digits of the SHA-256 of its tuningUnit's ops in order, with their
/// attributes other than schedules and layer names, their static types,
/// and how the ops connect. Ops that compute the same thing on the same
/// static shapes share it, whatever model, function or layer they are in.
std::string tuningSignature(Operation *op);
/// A short description of `op` for people: `attn.dense ?x?x2176 (kernel)`.
std::string tuningLabel(Operation *op);

/// Patterns that rewrite each layer template op into primitive ops.
void populateExpandLayersPatterns(RewritePatternSet &patterns);

/// Patterns that rewrite chunk-masked attention and attn.chunked_linear into
/// the chunk-parallel form (attn-chunk).
void populateChunkPatterns(RewritePatternSet &patterns);

/// The pipeline from imported IR to IR that codegen accepts: expand the
/// layers, rewrite chunked attention into chunk-parallel form, then clean up
/// (canonicalize, CSE).
void buildLowerToPrimitivesPipeline(OpPassManager &pm);

/// Options of the `attn-schedule` pipeline.
struct SchedulePipelineOptions
    : public PassPipelineOptions<SchedulePipelineOptions> {
  Option<std::string> target{
      *this, "target",
      llvm::cl::desc("Target whose budgets the schedules fit: host, generic, "
                     "x86-64-avx2, x86-64-avx512 or cuda"),
      llvm::cl::init("host")};
  Option<std::string> policy{
      *this, "policy",
      llvm::cl::desc("How schedules are chosen: default (attn-fuse, then "
                     "attn-tile's cost model) or naive (attn-tile's naive "
                     "baseline for every op, nothing fused)"),
      llvm::cl::init("default")};
};

/// The pipeline that gives primitive IR its schedules for a target: under
/// the default policy attn-fuse, then attn-tile; under the naive policy
/// attn-tile{policy=naive} alone. `attnc --emit=attn-scheduled` and every
/// compilation run exactly this.
void buildSchedulePipeline(OpPassManager &pm,
                           const SchedulePipelineOptions &options);
/// The same for a target already parsed.
void buildSchedulePipeline(OpPassManager &pm, const TargetModel &target,
                           SchedulePolicy policy = SchedulePolicy::Default);

/// Registers the named pipelines (`attn-lower-to-primitives`,
/// `attn-schedule{target=...}`).
void registerAttnPipelines();

} // namespace mlir::attn

#endif // ATTNC_PASSES_PASSES_H
